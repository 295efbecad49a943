//! Creating a memory repository (SPEC S3): the layout, the commented `dream.toml` with
//! every default, `.gitignore`, a README for people browsing it, the first commit, the
//! inbox folder, the state database and the lock file.
//!
//! `init` is a writing command like the others, so a kill or an I/O error at any point is
//! finished or forgotten: the git folder is created under a temporary name and renamed
//! into place whole (a killed `git init` never leaves a half `.git`), the first commit
//! goes through the journal under the single-writer lock like any change (its commit
//! point is the branch moving), and everything after it (the inbox folder, the state) is
//! made idempotently. So `dream init` run again after a kill finishes the repository
//! (dream.toml present: the journal is recovered and what is missing made) or starts it
//! again (no dream.toml: what the killed one left is only dream's own `.git`, `.dream`
//! and temporary folders); an error before the first commit removes what this run created
//! and says nothing was changed.

use std::path::Path;

use dream_core::schema::settings::{self, TEMPLATE};
use dream_core::schema::{self, Block};

use chrono::{DateTime, Utc};

use crate::edges::state::State;
use crate::edges::store::{Change, Store, GITIGNORE};
use crate::edges::{crash, fsutil, guard};
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

/// What `create` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    /// A new repository.
    New,
    /// The repository was there but not finished (an interrupted init, or a clone without
    /// its local state): what was missing was made.
    Finished,
    /// A complete repository was already there; nothing was written.
    Already,
}

/// Create the repository at `dir` now; `false` when a complete one is already there.
pub fn create(dir: &Path) -> Result<bool> {
    Ok(create_at(dir, Utc::now())? != Created::Already)
}

/// Create the repository at `dir` (see the module comment); `now` is the lock's clock.
pub fn create_at(dir: &Path, now: DateTime<Utc>) -> Result<Created> {
    if dir.exists() {
        sweep_init_temp(dir);
    }
    if dir.join(settings::FILE).is_file() {
        if complete(dir) {
            // A temporary file a killed command left in `.dream` (its lock note) goes.
            fsutil::sweep_temp(&dir.join(".dream"));
            return Ok(Created::Already);
        }
        let _writer = guard::begin(dir, now, None)?;
        finish_local(dir)?;
        return Ok(Created::Finished);
    }
    let dream_dir = dir.join(".dream");
    // A killed init whose first commit was under way: its journal says what it began, and
    // the recovery below finishes or forgets it, whatever files it had written.
    let interrupted = dir.join(".git").is_dir()
        && crate::edges::journal::path(dir).is_file()
        && is_dreams_own(&dream_dir);
    if dir.exists() && !interrupted {
        let entries: Vec<String> = std::fs::read_dir(dir)
            .context(|| format!("reading {}", dir.display()))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != ".git" && !(n == ".dream" && is_dreams_own(&dream_dir)))
            .collect();
        if !entries.is_empty() {
            return Err(Error::Usage(format!(
                "{} is not empty and is not a dream repository (it holds {}); choose a new or empty folder",
                dir.display(),
                entries.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    // What this run creates, removed again if it fails before the first commit.
    let mut made: Vec<std::path::PathBuf> = Vec::new();
    let undo = |made: &[std::path::PathBuf]| {
        for p in made.iter().rev() {
            let _ = if p.is_dir() {
                std::fs::remove_dir_all(p)
            } else {
                std::fs::remove_file(p)
            };
        }
    };
    let result = (|| -> Result<Created> {
        if !dir.exists() {
            crash::point(&format!("create {}", dir.display()))
                .context(|| format!("creating {}", dir.display()))?;
            std::fs::create_dir_all(dir).context(|| format!("creating {}", dir.display()))?;
            made.push(dir.to_path_buf());
        }
        if !dir.join(".git").exists() {
            let r = init_git(dir);
            if dir.join(".git").exists() {
                made.push(dir.join(".git"));
            }
            r?;
        }
        if !dream_dir.exists() {
            made.push(dream_dir.clone());
        }
        let _writer = guard::begin(dir, now, None)?;
        if dir.join(settings::FILE).is_file() {
            // The interrupted init's first commit was finished by the recovery.
            finish_local(dir)?;
            return Ok(Created::Finished);
        }
        Store::open(dir)?.apply(&first_commit())?;
        finish_local(dir)?;
        Ok(Created::New)
    })();
    match result {
        Ok(c) => Ok(c),
        Err(e @ (Error::Unfinished { .. } | Error::Partial { .. })) => Err(e),
        Err(e) => {
            undo(&made);
            Err(e)
        }
    }
}

/// The files of a new repository, as one change.
fn first_commit() -> Change {
    let mut change = Change::default();
    change.write(settings::FILE, TEMPLATE.to_string());
    change.write(settings::GITIGNORE, GITIGNORE.to_string());
    change.write(settings::README, REPO_README.to_string());
    for b in Block::ALL {
        change.write(b.path(), b.empty_file());
    }
    change.write(schema::ARCHIVE, schema::archive_header());
    for keep in [
        "review/decided/.gitkeep",
        "skills/drafts/.gitkeep",
        "digests/.gitkeep",
    ] {
        change.write(keep, String::new());
    }
    change.message = "dream: create memory repository\n\nLayout, configuration with every default, and empty memory blocks.\n".into();
    change
}

/// Whether the repository's local part is all there and nothing is left to recover.
fn complete(dir: &Path) -> bool {
    dir.join(".git").is_dir()
        && dir.join("events").is_dir()
        && dir.join(".dream").join("lock").is_file()
        && crate::edges::state::path(dir).is_file()
        && crate::edges::state::has_schema(dir)
        && !crate::edges::journal::path(dir).exists()
}

/// Make what a repository holds beside its commits: the ignore rules for dream's own
/// paths, the inbox folder and the state database (each idempotent). An error here comes
/// after the first commit: the repository exists, and `dream init` again finishes it.
fn finish_local(dir: &Path) -> Result<()> {
    let done =
        "the repository was created and committed, but its inbox folder or state is not made yet; \
                `dream init` run again makes them";
    let r = (|| -> Result<()> {
        Store::open(dir)?.exclude_private()?;
        let events = dir.join("events");
        if !events.is_dir() {
            crash::point(&format!("create {}", events.display()))
                .context(|| format!("creating {}", events.display()))?;
            std::fs::create_dir_all(&events)
                .context(|| format!("creating {}", events.display()))?;
            fsutil::sync_dir(dir)?;
        }
        crash::point("create the state").context(|| "creating the state database".into())?;
        State::open(dir)?;
        Ok(())
    })();
    r.map_err(Error::partial(done))
}

/// `git init` under a temporary name inside `dir`, then its `.git` renamed into place.
fn init_git(dir: &Path) -> Result<()> {
    let tmp = dir.join(format!("{}{}-git", fsutil::TMP_PREFIX, std::process::id()));
    let ctx = || format!("creating a git repository in {}", dir.display());
    crash::point(&format!("git init {}", tmp.display())).context(ctx)?;
    let made = (|| -> Result<()> {
        git2::Repository::init(&tmp).context(ctx)?;
        crash::point(&format!("rename {}/.git", tmp.display())).context(ctx)?;
        std::fs::rename(tmp.join(".git"), dir.join(".git")).context(ctx)
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    made?;
    fsutil::sync_dir(dir)
}

/// Whether a `.dream` folder holds only what dream puts there (a killed init's lock,
/// journal, state or temporary files), never a person's folder of that name.
fn is_dreams_own(dream_dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dream_dir) else {
        return false;
    };
    entries.flatten().all(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        n.starts_with(fsutil::TMP_PREFIX)
            || n.starts_with("state.sqlite")
            || matches!(n.as_str(), "lock" | "lock.info" | "journal.json")
    })
}

/// Remove the temporary folders and files a killed init left at the top of `dir` (only
/// those of processes that are gone).
fn sweep_init_temp(dir: &Path) {
    fsutil::sweep_temp(dir);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(fsutil::TMP_PREFIX) else {
            continue;
        };
        let pid = rest
            .split_once('-')
            .and_then(|(p, _)| p.parse::<u32>().ok());
        if e.file_type().is_ok_and(|t| t.is_dir())
            && pid.is_some_and(|p| p != std::process::id() && !fsutil::process_alive(p))
        {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file a new repository holds is one a config may not name for dream to write
    /// (`context.file`): the layout and [`Config::owned`] cannot drift apart.
    #[test]
    fn every_file_of_the_layout_is_owned() {
        let env = Default::default();
        for (path, _) in first_commit().writes {
            let text = format!("[context]\nfile = {path:?}\n");
            let e = dream_core::schema::settings::Config::parse(&text, settings::FILE, &env)
                .expect_err(&path);
            assert!(e.to_string().contains("key `context.file`"), "{path}: {e}");
        }
    }
}
