//! What every command that writes does before anything else, under the single-writer
//! lock: clear git lock files a crash left, keep dream's own paths out of git, and finish
//! or forget a change a crash interrupted (`journal`). Only then is the working tree read,
//! so a half-applied change of dream's is never mistaken for a person's hand edit.
//!
//! Stale git locks. libgit2 writes `.git/index`, refs and `packed-refs` through `*.lock`
//! files; a process killed in between leaves the lock, and every later commit fails. The
//! rule: under `.dream/lock` no other dream process writes, so a git lock file that
//! already existed when this process took `.dream/lock` was left by a process that is
//! gone, unless a git process is running in the repository right now (a person's `git
//! commit` waiting for its editor holds `index.lock`). Such a lock is removed and the
//! removal logged; when no process list can be read (no `/proc`, no `ps`), it is left,
//! and the error names the file to remove.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use chrono::{DateTime, Utc};

use crate::edges::fsutil;
use crate::edges::lock::{self, Lock};
use crate::edges::state::{self, State};
use crate::edges::store::Store;
use crate::error::Result;

/// The lock, held for as long as this lives, and what was repaired on the way in.
#[derive(Debug)]
pub struct Writer {
    pub lock: Lock,
    /// What was cleared or recovered, one sentence each, for the command's report.
    pub notes: Vec<String>,
}

/// Take the lock for writing, then repair what a crash left (see the module comment).
/// `inbox` is the configured inbox folder, kept out of git with dream's state.
pub fn begin(root: &Path, now: DateTime<Utc>, inbox: Option<&str>) -> Result<Writer> {
    let lock = lock::acquire(root, true, now)?;
    let notes = repair(root, inbox)?;
    Ok(Writer { lock, notes })
}

/// [`begin`]'s repairs, for a caller that already holds the lock for writing.
pub fn repair(root: &Path, inbox: Option<&str>) -> Result<Vec<String>> {
    repair_as(root, inbox, true)
}

/// [`repair`] as if the state database were new and empty (`dream rebuild`, which is about
/// to replace a damaged one): a change whose commit point is the state is forgotten.
pub fn repair_without_state(root: &Path, inbox: Option<&str>) -> Result<Vec<String>> {
    repair_as(root, inbox, false)
}

fn repair_as(root: &Path, inbox: Option<&str>, with_state: bool) -> Result<Vec<String>> {
    let taken = SystemTime::now();
    let mut notes = Vec::new();
    let mut store = Store::open(root)?;
    if let Some(dir) = inbox {
        store.keep_out(dir);
    }
    notes.extend(clear_stale_git_locks(root, taken));
    for dir in [root.join(".dream"), root.join(".git").join("info")] {
        remove_temp_files(&dir);
    }
    store.exclude_private()?;
    let mut applied = |target: git2::Oid| -> Result<bool> {
        if !with_state || !state::path(root).exists() {
            return Ok(false);
        }
        let st = State::open(root)?;
        state::is_applied(&st.conn, &target.to_string())
    };
    if let Some(n) = store.recover(&mut applied)? {
        notes.push(n);
    }
    Ok(notes)
}

/// Remove the temporary files a crash left directly in `dir` (dream's own folders).
fn remove_temp_files(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name()
            .to_string_lossy()
            .starts_with(fsutil::TMP_PREFIX)
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The git lock files present in the repository's git folder.
pub fn git_locks(root: &Path) -> Vec<PathBuf> {
    let git = root.join(".git");
    let mut out: Vec<PathBuf> = ["index.lock", "HEAD.lock", "packed-refs.lock", "config.lock"]
        .iter()
        .map(|n| git.join(n))
        .filter(|p| p.exists())
        .collect();
    let mut stack = vec![git.join("refs")];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "lock") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Remove the git lock files that are stale by the module's rule; returns a note each.
fn clear_stale_git_locks(root: &Path, taken: SystemTime) -> Vec<String> {
    let locks = git_locks(root);
    if locks.is_empty() {
        return Vec::new();
    }
    let mut notes = Vec::new();
    let live = match git_running_in(root) {
        Some(live) => live,
        None => {
            for l in &locks {
                tracing::warn!(lock = %l.display(), "a git lock file is present and no process list can be read: it is left in place");
            }
            return notes;
        }
    };
    for l in locks {
        let Ok(modified) = std::fs::metadata(&l).and_then(|m| m.modified()) else {
            continue;
        };
        let rel = l.strip_prefix(root).unwrap_or(&l).display().to_string();
        if modified > taken {
            continue;
        }
        if let Some(pid) = live {
            tracing::warn!(lock = %rel, pid, "a git lock file is present while git runs in the repository (pid {pid}): it is left in place");
            continue;
        }
        let age = taken
            .duration_since(modified)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        if std::fs::remove_file(&l).is_ok() {
            tracing::warn!(lock = %rel, age_secs = age, "removed a stale git lock file left by a process that is gone");
            notes.push(format!(
                "removed the stale git lock {rel} (left {age} s before this run by a process that is gone; no git process runs in the repository)"
            ));
        }
    }
    notes
}

/// `Some(Some(pid))` when a git process runs with its working folder in the repository,
/// `Some(None)` when none does, `None` when this cannot be told.
fn git_running_in(root: &Path) -> Option<Option<u32>> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let proc = Path::new("/proc");
    if proc.join("self").exists() {
        let me = std::process::id();
        for e in std::fs::read_dir(proc).ok()?.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if pid == me {
                continue;
            }
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            let comm = comm.trim();
            if !(comm == "git" || comm.starts_with("git-")) {
                continue;
            }
            let here = match std::fs::read_link(e.path().join("cwd")) {
                Ok(cwd) => cwd.starts_with(&root),
                // A git process whose folder this user may not see might be in the
                // repository; one that is gone meanwhile is not.
                Err(e) => e.kind() == std::io::ErrorKind::PermissionDenied,
            };
            if here {
                return Some(Some(pid));
            }
        }
        return Some(None);
    }
    // Elsewhere (macOS): any git process at all counts as live.
    let out = std::process::Command::new("ps")
        .args(["-A", "-o", "pid=,comm="])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(pid), Some(comm)) = (it.next(), it.next()) else {
            continue;
        };
        let name = Path::new(comm)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(comm);
        if name == "git" || name.starts_with("git-") {
            return Some(Some(pid.parse().unwrap_or(0)));
        }
    }
    Some(None)
}
