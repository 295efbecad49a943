//! Creating a memory repository (SPEC S3): the layout, the commented `dream.toml` with
//! every default, `.gitignore`, a README for people browsing it, the first commit, the
//! inbox folder, the state database and the lock file.

use std::path::Path;

use dream_core::config::{self, TEMPLATE};
use dream_core::memory::{self, Block};

use crate::edges::state::State;
use crate::edges::store::{Change, Store, GITIGNORE};
use crate::error::{Context, Error, Result};

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

/// Create the repository; `false` when one is already there.
pub fn create(dir: &Path) -> Result<bool> {
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
    store.exclude_private()?;
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
