//! `dream init [DIR]`: create a memory repository.

use std::path::Path;

use crate::cli::{Global, InitArgs};
use crate::config::{self, TEMPLATE};
use crate::error::{Context, Error, Result, EXIT_OK};
use crate::memory::{self, Block};
use crate::state::State;
use crate::store::{Change, Store, GITIGNORE};

/// What a person browsing the repository reads first.
const REPO_README: &str = "# Memory

This repository is an AI agent's durable memory, maintained by
`dream` from the events in `events/`.

- `memory/*.md`: what agents load at session start, one fact per line (the comment after a
  fact holds its id, category and supporting events). You may edit these files by hand.
- `review/`: cards dream would not decide alone. Run `dream review`.
- `archive/facts.md`: forgotten and superseded facts, with when and why.
- `digests/`: what needs attention, written by the morning cycle.
- `dream.toml`: configuration. `git log` is the audit trail.
";

pub fn run(g: &Global, a: &InitArgs) -> Result<i32> {
    let cwd = std::env::current_dir().context(|| "reading the current folder".into())?;
    let dir = super::absolute(&cwd, a.dir.as_deref().unwrap_or(Path::new(".")));
    let _ = g;
    match init(&dir)? {
        true => println!("created a dream repository in {}\nnext: point your agent at {}/events/ and run `dream run`", dir.display(), dir.display()),
        false => println!("{} is already a dream repository; nothing changed", dir.display()),
    }
    Ok(EXIT_OK)
}

/// Create the repository; `false` when one is already there.
pub fn init(dir: &Path) -> Result<bool> {
    if dir.join(config::FILE).is_file() {
        return Ok(false);
    }
    if dir.exists() {
        let entries: Vec<String> = std::fs::read_dir(dir)
            .context(|| format!("reading {}", dir.display()))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != ".git")
            .collect();
        if !entries.is_empty() {
            return Err(Error::Usage(format!(
                "{} is not empty and is not a dream repository (it holds {}); choose a new or empty folder",
                dir.display(),
                entries.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    std::fs::create_dir_all(dir).context(|| format!("creating {}", dir.display()))?;
    let store = Store::init_repo(dir)?;
    let mut change = Change::default();
    change.write(config::FILE, TEMPLATE.to_string());
    change.write(".gitignore", GITIGNORE.to_string());
    change.write("README.md", REPO_README.to_string());
    for b in Block::ALL {
        change.write(b.path(), b.empty_file());
    }
    change.write(memory::ARCHIVE, memory::archive_header());
    for keep in [
        "review/decided/.gitkeep",
        "skills/drafts/.gitkeep",
        "digests/.gitkeep",
    ] {
        change.write(keep, String::new());
    }
    change.message = "dream: create memory repository\n\nLayout, configuration with every default, and empty memory blocks.\n".into();
    store.apply(&change)?;
    std::fs::create_dir_all(dir.join("events"))
        .context(|| format!("creating {}/events", dir.display()))?;
    State::open(dir)?;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(".dream").join("lock"))
        .context(|| "creating .dream/lock".into())?;
    Ok(true)
}
