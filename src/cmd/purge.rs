//! `dream purge`: take a leaked string out of the repository, its history and the state.

use std::io::Read;

use crate::cli::{Global, PurgeArgs};
use dream_engine::error::{Context, Error, Result, EXIT_OK};
use dream_engine::human::purge;

pub fn run(g: &Global, a: &PurgeArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let config = dream_engine::config::load(&root)?;
    let needle = match &a.text {
        Some(t) => t.clone(),
        None => {
            let mut s = String::new();
            std::io::stdin()
                .take(1 << 20)
                .read_to_string(&mut s)
                .context(|| "reading the string from stdin".into())?;
            s.strip_suffix('\n')
                .map(|t| t.strip_suffix('\r').unwrap_or(t))
                .unwrap_or(&s)
                .to_string()
        }
    };
    if needle.trim().is_empty() {
        return Err(Error::Usage("the string to purge is empty".into()));
    }
    let r = purge::purge(&root, &config, &needle, super::now(g)?, a.yes)?;
    if a.json {
        super::print_json(&r)?;
        return Ok(EXIT_OK);
    }
    let h = &r.history;
    if !r.applied {
        println!("dry run: nothing was written (add --yes to purge).");
        println!(
            "  history     {} of {} commits hold the string, in {} files: {}",
            h.rewritten,
            h.commits,
            h.files.len(),
            h.files.join(", ")
        );
        println!("  state       {} rows hold it", r.state_rows);
    } else {
        println!(
            "purged: {} of {} commits rewritten ({} files held the string); {} state rows rewritten",
            h.rewritten,
            h.commits,
            h.files.len(),
            r.state_rows
        );
        if let Some(b) = &h.backup {
            println!();
            println!("WARNING: the history was rewritten; commit ids changed from the first commit that held the string.");
            println!("  The old history is kept under {b} (the string is still in it).");
            println!("  Once you have checked the result, drop that last copy:");
            println!("    git update-ref -d {b}");
            println!("    git reflog expire --expire=now --all && git gc --prune=now");
            println!(
                "  If this repository was ever pushed or cloned, the secret is out: revoke it and"
            );
            println!("  make a new one, then force-push the rewritten branch.");
        }
    }
    if !r.inbox_files.is_empty() {
        println!(
            "  inbox       still holds it in {} files (dream never rewrites the agents' files): {}",
            r.inbox_files.len(),
            r.inbox_files.join(", ")
        );
    }
    Ok(EXIT_OK)
}
