//! `dream demo`: a whole cycle on the shipped sample events, in a scratch repository (the
//! engine's `human::demo` makes it and runs the cycle); this file prints the report and
//! where to look.

use crate::cli::{DemoArgs, Global};
use dream_engine::error::{Context, Result, EXIT_OK};
use dream_engine::human::demo;

pub fn run(g: &Global, a: &DemoArgs) -> Result<i32> {
    let keep = match &a.keep {
        Some(d) => {
            let cwd = std::env::current_dir().context(|| "reading the current folder".into())?;
            Some(super::absolute(&cwd, d))
        }
        None => None,
    };
    let dir = demo::scratch(keep)?;
    demo::prepare(&dir)?;
    let now = match &g.now {
        Some(_) => super::now(g)?,
        None => demo::sample_now(),
    };
    let report = demo::cycle(&dir, now)?;
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
