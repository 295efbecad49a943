//! `dream log`: the audit trail, one block per cycle.

use crate::cli::{Global, LogArgs};
use dream_core::operations::audit::CycleLog;
use dream_engine::error::{Error, Result, EXIT_OK};
use dream_engine::human::trail;

pub fn run(g: &Global, a: &LogArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let mut blocks = trail::log(&root)?;
    if let Some(id) = &a.cycle {
        blocks.retain(|b| &b.cycle == id);
        if blocks.is_empty() {
            return Err(Error::Input(format!(
                "no cycle {id:?} in the history or the state database; `dream log` lists them"
            )));
        }
    } else if a.limit > 0 {
        blocks.truncate(a.limit);
    }
    if a.json {
        super::print_json(&blocks)?;
        return Ok(EXIT_OK);
    }
    if blocks.is_empty() {
        println!("No history yet.");
    }
    for b in &blocks {
        print_block(b);
    }
    Ok(EXIT_OK)
}

fn print_block(b: &CycleLog) {
    let mut head = format!(
        "{} {}  {}",
        b.kind,
        b.cycle,
        b.time.format("%Y-%m-%d %H:%M UTC")
    );
    if b.kind != "other" {
        head.push_str(&format!(
            "  ·  {} applied, {} refused, {} engine-enforced, {} tokens",
            b.applied, b.refused, b.engine, b.tokens
        ));
    }
    println!("{head}");
    if !b.degraded.is_empty() {
        println!("  degraded: {}", b.degraded.join(", "));
    }
    if let Some(u) = &b.undone_by {
        println!("  undone by {u}");
    }
    if let Some(q) = &b.quiz {
        println!("  quiz: {}", q.render());
        for f in &b.quiz_failures {
            println!("    failed: {f}");
        }
    }
    if b.no_commit {
        println!("  (no commit: the cycle changed nothing)");
        for m in &b.refusals {
            println!("    {}", m.line());
        }
    } else if !b.refusals.is_empty()
        && !b
            .commits
            .iter()
            .any(|c| c.mutations.iter().any(|m| m.kind == "refused"))
    {
        // Refusals no commit lists (a cycle whose only commit recorded hand edits): from
        // the cycle record.
        println!("  refused (from the cycle record; no commit lists them):");
        for m in &b.refusals {
            println!("    {}", m.line());
        }
    }
    for c in &b.commits {
        println!(
            "  {} {:<12} {}",
            c.head.short,
            c.head.stage.clone().unwrap_or_default(),
            c.head.subject
        );
        for m in &c.mutations {
            println!("      {}", m.line());
        }
        if let Some(u) = &c.undoes {
            if b.kind == "undo" {
                println!("      (undoes {u})");
            }
        }
    }
    println!();
}
