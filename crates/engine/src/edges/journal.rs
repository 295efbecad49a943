//! The intent journal `.dream/journal.json`: what a multi-file change is about to do, so a
//! crash at any point is finished or forgotten by the next run, never half kept.
//!
//! `store` builds every commit of a change inside git first (objects only, nothing in the
//! working tree), then writes this journal (atomically), then passes the change's *commit
//! point*: for a cycle, or a decision that records vetoes, the state transaction that
//! records the target commit; otherwise the branch moving to it. Only then are the
//! working-tree files and the git index brought to the commit, and the journal removed.
//! On start, every command that writes reads the journal first: if the commit point was
//! passed, it rolls forward (moves the branch, writes the files); if not, it discards the
//! journal, and the tree is as the command found it. See `Store::recover`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::edges::fsutil;
use crate::error::{Context, Error, Result};

/// What decides whether a journaled change happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CommitPoint {
    /// The branch reached the target commit.
    Ref,
    /// The state database recorded the target commit (table `applied`).
    State,
}

/// One file the change brings to its new content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct File {
    pub path: String,
    /// The working tree's blob when the change was built (`None`: no file there).
    pub before: Option<String>,
    /// The blob and mode the target commit holds (`None`: the change removes it).
    pub after: Option<String>,
    #[serde(default)]
    pub mode: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    /// What made the change (`cycle`, `review`, `undo`, `skills`, ...), for messages.
    pub kind: String,
    pub commit_point: CommitPoint,
    /// The branch HEAD is on, e.g. `refs/heads/main`.
    pub branch: String,
    /// The branch's commit before the change (`None`: no commit yet).
    pub previous: Option<String>,
    pub target: String,
    pub files: Vec<File>,
}

pub fn path(root: &Path) -> PathBuf {
    root.join(".dream").join("journal.json")
}

pub fn write(root: &Path, j: &Journal) -> Result<()> {
    let text = serde_json::to_vec_pretty(j)
        .map_err(|e| Error::Other(format!("encoding the journal: {e}")))?;
    fsutil::write_atomic(&path(root), &text)
}

/// The journal left by an interrupted change, if any.
pub fn read(root: &Path) -> Result<Option<Journal>> {
    let p = path(root);
    let bytes = match std::fs::read(&p) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).context(|| format!("reading {}", p.display())),
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        Error::Other(format!(
            "{} does not parse ({e}); dream writes it atomically, so it was edited by hand: \
             restore it, or remove it to forget the interrupted change (its commit stays in git)",
            p.display()
        ))
    })
}

/// Remove the journal: the change it records is finished. An error is placed by what
/// happened, read back: once the journal is gone (the unlink happened and only the flush
/// of its folder failed), no later command can see it, so the change is finished and the
/// failed flush is a warning, never a failure of a change that happened (were the journal
/// to come back after a power cut, the next command would find the change already done).
pub fn remove(root: &Path) -> Result<()> {
    let p = path(root);
    match fsutil::remove_file(&p, &root.join(".dream")) {
        Err(e) if !p.exists() => {
            tracing::warn!("{e}; the journal is gone all the same, so the change is finished");
            Ok(())
        }
        done => done,
    }
}
