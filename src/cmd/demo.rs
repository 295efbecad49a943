//! `dream demo`: a whole cycle on the shipped sample events, in a scratch repository.

use crate::cli::{DemoArgs, Global};
use dream_core::operations::config::CycleKind;
use dream_engine::cycle::{self, Options};
use dream_engine::edges::fsutil::write_atomic;
use dream_engine::error::{Context, Result, EXIT_OK};
use dream_engine::providers::{self};

/// The sample events (fixtures/events/), built into the binary so the demo runs anywhere.
pub const SAMPLE_EVENTS: &[(&str, &str)] = &[
    (
        "2026-11-02.jsonl",
        include_str!("../../fixtures/events/2026-11-02.jsonl"),
    ),
    (
        "2026-11-03.jsonl",
        include_str!("../../fixtures/events/2026-11-03.jsonl"),
    ),
    (
        "2026-11-04.jsonl",
        include_str!("../../fixtures/events/2026-11-04.jsonl"),
    ),
    (
        "2026-11-05.jsonl",
        include_str!("../../fixtures/events/2026-11-05.jsonl"),
    ),
    (
        "2026-11-06.jsonl",
        include_str!("../../fixtures/events/2026-11-06.jsonl"),
    ),
];

/// The evening the sample's last day ends.
pub const SAMPLE_NOW: &str = "2026-11-06T21:00:00Z";

pub fn run(g: &Global, a: &DemoArgs) -> Result<i32> {
    let dir = match &a.keep {
        Some(d) => {
            let cwd = std::env::current_dir().context(|| "reading the current folder".into())?;
            super::absolute(&cwd, d)
        }
        None => tempfile::Builder::new()
            .prefix("dream-demo-")
            .tempdir()
            .context(|| "creating a temporary folder".into())?
            .keep(),
    };
    dream_engine::edges::repo::create(&dir)?;
    for (name, text) in SAMPLE_EVENTS {
        write_atomic(&dir.join("events").join(name), text.as_bytes())?;
    }
    let config = dream_engine::config::load(&dir)?;
    let provider = providers::llm(&config)?;
    let embedder = providers::embedder(&config)?;
    let now = match &g.now {
        Some(_) => super::now(g)?,
        None => SAMPLE_NOW.parse().expect("a valid timestamp"),
    };
    let opts = Options {
        kind: CycleKind::Evening,
        dry_run: false,
        allow_loss: false,
        now,
    };
    let report = cycle::run_cycle(&dir, &config, provider.as_ref(), embedder.as_ref(), &opts)?;
    if a.json {
        super::print_json(&report)?;
        return Ok(EXIT_OK);
    }
    print!("{}", report.render());
    let d = dir.display();
    let mut look = format!(
        "\nThe demo repository is {d}. Look at:\n  {d}/memory/human.md     the facts an agent would load\n  dream --repo {d} context   what an agent is shown at the start of a session\n"
    );
    // Point at the review queue only when the cycle queued something there.
    match report.candidates.queued {
        0 => look.push_str(
            "  (no card was queued for review: every candidate was decided by the gates)\n",
        ),
        n => look.push_str(&format!(
            "  {d}/review/             {n} cards waiting for a person (dream --repo {d} review)\n"
        )),
    }
    look.push_str(&format!(
        "  git -C {d} log          what the cycle did and why\n  dream --repo {d} status"
    ));
    println!("{look}");
    Ok(EXIT_OK)
}
