//! `dream rebuild`: a new state database from the inbox and the repository.

use crate::cli::{Global, RebuildArgs};
use dream_engine::error::{Result, EXIT_OK};
use dream_engine::human::rebuild;

pub fn run(g: &Global, a: &RebuildArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let config = dream_engine::config::load(&root)?;
    let r = rebuild::rebuild(&root, &config, super::now(g)?, a.force)?;
    match &r.moved_to {
        Some(p) => println!("moved the damaged state database to {p}"),
        None => println!("there was no state database; a new one was created"),
    }
    if let Some(why) = &r.damage {
        println!("  it was damaged: {why}");
    }
    println!(
        "a new .dream/state.sqlite holds {} vetoes read back from the repository ({} rejected cards, {} undone facts)",
        r.rejected + r.undone,
        r.rejected,
        r.undone
    );
    println!(
        "the next `dream run` reads the inbox again from the start ({} files) and embeds the window afresh; \
         facts and cards already in memory are reinforced, not doubled",
        r.inbox_files
    );
    Ok(EXIT_OK)
}
