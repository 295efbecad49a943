//! `dream undo`: take back a fact, a rejection, or a whole cycle, as a new commit.

use crate::cli::{Global, UndoArgs};
use dream_engine::error::{Result, EXIT_OK};
use dream_engine::human::oversight;

pub fn run(g: &Global, a: &UndoArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    dream_engine::config::load(&root)?;
    let now = super::now(g)?;
    let report = match (&a.cycle, &a.id) {
        (Some(cycle), _) => oversight::undo_cycle(&root, now, cycle, a.dry_run)?,
        (None, Some(id)) => oversight::undo_item(&root, now, id, a.reason.as_deref(), a.dry_run)?,
        (None, None) => unreachable!("clap requires an id or --cycle"),
    };
    if a.json {
        super::print_json(&report)?;
        return Ok(EXIT_OK);
    }
    if report.dry_run {
        println!("dry run: nothing was written. The undo would commit:");
    }
    println!("{}", report.subject);
    for l in &report.lines {
        println!("  {l}");
    }
    if let Some(c) = &report.commit {
        println!(
            "commit {} ({}); to take this undo back: dream undo --cycle {}",
            &c[..7.min(c.len())],
            report.id,
            report.id
        );
    }
    Ok(EXIT_OK)
}
