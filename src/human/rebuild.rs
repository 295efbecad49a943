//! `dream rebuild`: the state database is a cache of what the inbox and the repository
//! hold, so a damaged one is rebuilt from them instead of failing every run.
//!
//! Under the lock for writing, the damaged file (and its WAL) is moved aside, never
//! deleted; a new database gets the person's vetoes back from the repository (rejected
//! cards under `review/decided/`, undone facts in `archive/facts.md` that are not active
//! again), so a rebuilt state never lets the same evidence bring back what a person took
//! out. Events, embeddings and watermarks are left to the next cycle, which reads every
//! inbox file from its start (event ids make that idempotent).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::edges::state::{self, State};
use crate::edges::store::Store;
use crate::edges::{guard, inbox, lock};
use crate::error::{Context, Error, Result};
use crate::human::oversight;
use dream_core::config::Config;
use dream_core::memory;
use dream_core::review;
use dream_core::veto::Veto;

#[derive(Debug, Clone, Default)]
pub struct Rebuilt {
    /// Where the old file went (`None`: there was none).
    pub moved_to: Option<String>,
    /// What the check found wrong with it.
    pub damage: Option<String>,
    pub rejected: usize,
    pub undone: usize,
    pub inbox_files: usize,
}

/// What is wrong with the state database at `path`, `None` when it checks as sound.
pub fn damage(path: &Path) -> Option<String> {
    let conn = match rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    ) {
        Ok(c) => c,
        Err(e) => return Some(e.to_string()),
    };
    match conn.query_row("PRAGMA quick_check", [], |r| r.get::<_, String>(0)) {
        Ok(s) if s == "ok" => None,
        Ok(s) => Some(s),
        Err(e) => Some(e.to_string()),
    }
}

pub fn rebuild(root: &Path, config: &Config, now: DateTime<Utc>, force: bool) -> Result<Rebuilt> {
    let _lock = lock::acquire(root, true, now)?;
    let db = state::path(root);
    let mut out = Rebuilt::default();
    if db.exists() {
        out.damage = damage(&db);
        if out.damage.is_none() && !force {
            return Err(Error::Usage(format!(
                "{} opens and checks as sound; nothing to rebuild (use --force to rebuild it anyway)",
                db.display()
            )));
        }
        let stamp = now.format("%Y%m%dT%H%M%SZ");
        let aside = PathBuf::from(format!("{}.damaged-{stamp}", db.display()));
        for suffix in ["-wal", "-shm", ""] {
            let from = PathBuf::from(format!("{}{suffix}", db.display()));
            if from.exists() {
                let to = PathBuf::from(format!("{}{suffix}", aside.display()));
                std::fs::rename(&from, &to)
                    .context(|| format!("moving {} aside", from.display()))?;
            }
        }
        out.moved_to = Some(aside.display().to_string());
    }
    // A journal a crash left is finished or forgotten against the new, empty state.
    guard::repair(root, Some(&config.inbox.path))?;
    let st = State::open(root)?;
    let store = Store::open(root)?;
    for v in vetoes(&store, now)? {
        if v.kind == "rejected" {
            out.rejected += 1;
        } else {
            out.undone += 1;
        }
        state::put_veto(&st.conn, &v)?;
    }
    out.inbox_files = inbox::scan(&root.join(&config.inbox.path)).files.len();
    Ok(out)
}

/// The person's vetoes as the repository records them.
fn vetoes(store: &Store, now: DateTime<Utc>) -> Result<Vec<Veto>> {
    let mut out: Vec<Veto> = Vec::new();
    for c in oversight::decided_cards(store) {
        let Some(d) = c.decision.as_ref().filter(|d| d.verdict == "rejected") else {
            continue;
        };
        let id = c.id.split('-').next().unwrap_or(&c.id).to_string();
        if out.iter().any(|v| v.id == id) {
            continue;
        }
        out.push(Veto {
            id,
            kind: "rejected".into(),
            text: c.text.clone(),
            events: c.supporting_event_ids.clone(),
            reason: d.reason.clone(),
            at: d.at,
            decision: "rebuild".into(),
        });
    }
    let memory = store.load_memory(now.date_naive())?;
    let archive = store.read(memory::ARCHIVE)?;
    for a in review::archived(&review::parse_archive(archive.as_deref())) {
        if a.why != "undone" || memory.get(&a.fact.id).is_some() {
            continue;
        }
        if out.iter().any(|v| v.id == a.fact.id) {
            continue;
        }
        let reason = a
            .reason
            .strip_prefix("undone by a person: ")
            .unwrap_or("")
            .to_string();
        out.push(Veto {
            id: a.fact.id.clone(),
            kind: "undone".into(),
            text: a.fact.text.clone(),
            events: a.fact.support.clone(),
            reason,
            at: a
                .archived
                .and_hms_opt(0, 0, 0)
                .unwrap_or_default()
                .and_utc(),
            decision: "rebuild".into(),
        });
    }
    Ok(out)
}
