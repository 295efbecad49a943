//! `dream demo`: one whole evening cycle on the shipped sample events, in a scratch
//! repository, so a person can see what dream does before giving it their own events or a
//! model.
//!
//! The sample events (`fixtures/events/`) are built into the binary, so the demo runs
//! anywhere. [`scratch`] picks the folder (the one asked for, else a new temporary folder
//! that is kept for the person to look at), [`prepare`] makes the repository there and
//! puts the sample into its inbox, and [`cycle`] runs the evening cycle with the
//! repository's configured model and embedder (the offline ones by default). The command
//! line prints the report and where to look.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use dream_core::operations::report::Report;
use dream_core::schema::settings::CycleKind;

use crate::cycle::{self, Options};
use crate::edges::fsutil::write_atomic;
use crate::error::{Context, Result};
use crate::providers;

/// The sample events (fixtures/events/): file name and contents.
pub const SAMPLE_EVENTS: &[(&str, &str)] = &[
    (
        "2026-11-02.jsonl",
        include_str!("../../../../fixtures/events/2026-11-02.jsonl"),
    ),
    (
        "2026-11-03.jsonl",
        include_str!("../../../../fixtures/events/2026-11-03.jsonl"),
    ),
    (
        "2026-11-04.jsonl",
        include_str!("../../../../fixtures/events/2026-11-04.jsonl"),
    ),
    (
        "2026-11-05.jsonl",
        include_str!("../../../../fixtures/events/2026-11-05.jsonl"),
    ),
    (
        "2026-11-06.jsonl",
        include_str!("../../../../fixtures/events/2026-11-06.jsonl"),
    ),
];

/// The evening the sample's last day ends.
pub const SAMPLE_NOW: &str = "2026-11-06T21:00:00Z";

/// The clock of the demo's cycle when none is given: the sample's last evening.
pub fn sample_now() -> DateTime<Utc> {
    SAMPLE_NOW.parse().expect("a valid timestamp")
}

/// The folder of the demo repository: `keep` (an absolute path), else a new temporary
/// folder that outlives this process.
pub fn scratch(keep: Option<PathBuf>) -> Result<PathBuf> {
    match keep {
        Some(dir) => Ok(dir),
        None => Ok(tempfile::Builder::new()
            .prefix("dream-demo-")
            .tempdir()
            .context(|| "creating a temporary folder".into())?
            .keep()),
    }
}

/// Make the repository at `dir` (or finish one) and put the sample events into its inbox.
pub fn prepare(dir: &Path) -> Result<()> {
    crate::edges::repo::create(dir)?;
    for (name, text) in SAMPLE_EVENTS {
        write_atomic(&dir.join("events").join(name), text.as_bytes())?;
    }
    Ok(())
}

/// Run the evening cycle at `now` on the repository at `dir`, with the model and embedder
/// its config names; the cycle's report.
pub fn cycle(dir: &Path, now: DateTime<Utc>) -> Result<Report> {
    let config = crate::config::load(dir)?;
    let provider = providers::llm(&config)?;
    let embedder = providers::embedder(&config)?;
    let opts = Options {
        kind: CycleKind::Evening,
        dry_run: false,
        allow_loss: false,
        now,
    };
    cycle::run_cycle(dir, &config, provider.as_ref(), embedder.as_ref(), &opts)
}
