//! Use counts: which facts agents used, for `retention.unused_after_days`.
//!
//! A fact counts as used when `recall` returns it or an agent cites its id in a transcript
//! (recorded at ingest, see `state::insert_event_hashed`). The MCP server must not write
//! the state database (a cycle may hold its transaction), so it appends one line per use
//! to `.dream/uses.jsonl`, under an exclusive lock on that file; each cycle moves the file
//! aside, counts its lines into the state transaction (one row per fact, day and way of
//! use, so repeating a line is harmless), and deletes it once the state is committed.
//! Counts live in the state only: no agent-facing line shows them, so they cannot shape
//! what an agent reads or writes.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use fs2::FileExt;
use serde::{Deserialize, Serialize};

use crate::edges::state::{self, Connection};
use crate::error::{Context as _, Result};

#[derive(Debug, Serialize, Deserialize)]
struct UseLine {
    ts: DateTime<Utc>,
    fact: String,
    via: String,
}

fn log_path(root: &Path) -> PathBuf {
    root.join(".dream").join("uses.jsonl")
}

fn taken_path(root: &Path) -> PathBuf {
    root.join(".dream").join("uses.taken.jsonl")
}

/// Append one use per fact to `.dream/uses.jsonl` (whole lines, under a file lock).
pub fn append(root: &Path, facts: &[String], via: &str, now: DateTime<Utc>) -> Result<()> {
    if facts.is_empty() {
        return Ok(());
    }
    let path = log_path(root);
    let ctx = || format!("appending to {}", path.display());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).context(|| format!("creating {}", dir.display()))?;
    }
    let mut out = String::new();
    for f in facts {
        let line = UseLine {
            ts: now,
            fact: f.clone(),
            via: via.into(),
        };
        out.push_str(&serde_json::to_string(&line).expect("uses serialize"));
        out.push('\n');
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .context(ctx)?;
    file.lock_exclusive().context(ctx)?;
    file.write_all(out.as_bytes()).context(ctx)?;
    Ok(())
}

/// Move the log aside (a log left aside by a crashed cycle is taken first) and count its
/// lines into `conn`. Returns how many uses were counted; call [`finish`] after the state
/// transaction committed. A dry run reads the log where it is and moves nothing.
pub fn take(conn: &Connection, root: &Path, dry_run: bool) -> Result<usize> {
    let log = log_path(root);
    let mut taken = taken_path(root);
    if dry_run {
        if !taken.exists() {
            taken = log;
        }
    } else if !taken.exists() && log.exists() {
        std::fs::rename(&log, &taken).context(|| format!("moving {} aside", log.display()))?;
    }
    let Ok(file) = std::fs::File::open(&taken) else {
        return Ok(0);
    };
    // Wait for an append that opened the file before it moved.
    let _ = file.lock_exclusive();
    let text =
        std::fs::read_to_string(&taken).context(|| format!("reading {}", taken.display()))?;
    let mut n = 0;
    for line in text.lines() {
        let Ok(u) = serde_json::from_str::<UseLine>(line) else {
            continue; // a torn or foreign line: uses are advisory, never a reason to fail
        };
        state::record_use(conn, &u.fact, u.ts.date_naive(), &u.via)?;
        n += 1;
    }
    Ok(n)
}

/// Delete the log [`take`] counted, once the state that holds its counts is committed.
pub fn finish(root: &Path) {
    let _ = std::fs::remove_file(taken_path(root));
}
