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
use dream_core::memory::review;
use dream_core::schema;
use dream_core::schema::settings::Config;
use dream_core::selection::veto::Veto;

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

pub fn rebuild(root: &Path, config: &Config, now: DateTime<Utc>, force: bool) -> Result<Rebuilt> {
    let _lock = lock::acquire(root, true, now)?;
    let db = state::path(root);
    let mut out = Rebuilt::default();
    if db.exists() {
        out.damage = state::damage(&db);
        if out.damage.is_none() && !force {
            return Err(Error::Usage(format!(
                "{} opens and checks as sound; nothing to rebuild (use --force to rebuild it anyway)",
                db.display()
            )));
        }
    }
    // A journal a crash left is finished or forgotten against the new, empty state.
    guard::repair_without_state(root, Some(&config.inbox.path))?;
    let store = Store::open(root)?;
    let vetoes = vetoes(&store, now)?;
    // The new database is filled under a temporary name and takes the real one's name in
    // one rename (the commit point): a crash before it leaves the old one in place (the
    // temporary file is swept by the next command), never an empty state without the
    // person's vetoes.
    let dir = db.parent().unwrap_or(root);
    let tmp = dir.join(format!(
        "{}{}-state.sqlite",
        crate::edges::fsutil::TMP_PREFIX,
        std::process::id()
    ));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", tmp.display()));
    }
    let remove_tmp = || {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", tmp.display()));
        }
    };
    // The old file's WAL and index, once moved aside, go back if the swap fails.
    let mut moved: Vec<(PathBuf, PathBuf)> = Vec::new();
    let swapped = swap_in(&db, &tmp, now, &vetoes, &mut out, &mut moved);
    if let Err(e) = swapped {
        remove_tmp();
        for (from, to) in moved.iter().rev() {
            let _ = std::fs::rename(to, from);
        }
        return Err(e);
    }
    if let Err(e) = crate::edges::fsutil::sync_dir(dir) {
        tracing::warn!("{e}; the new state database is in place");
    }
    out.inbox_files = inbox::scan(&root.join(&config.inbox.path)).files.len();
    Ok(out)
}

/// Fill the new database at `tmp` with the vetoes, move the old one's WAL and index aside
/// (recorded in `moved`), keep the old file under a new name by a link, and rename the new
/// one over it: the last step is the commit point.
fn swap_in(
    db: &Path,
    tmp: &Path,
    now: DateTime<Utc>,
    vetoes: &[Veto],
    out: &mut Rebuilt,
    moved: &mut Vec<(PathBuf, PathBuf)>,
) -> Result<()> {
    {
        let mut st = State::open_at(tmp)?;
        let tx = st.begin()?;
        for v in vetoes {
            if v.kind == "rejected" {
                out.rejected += 1;
            } else {
                out.undone += 1;
            }
            state::put_veto(&tx, v)?;
        }
        state::commit(tx, "writing the new state database")?;
        state::checkpoint(&st.conn, "writing the new state database")?;
    }
    let file = std::fs::File::open(tmp).context(|| format!("opening {}", tmp.display()))?;
    crate::edges::crash::sync_file(&file, tmp).context(|| format!("flushing {}", tmp.display()))?;
    drop(file);
    if db.exists() {
        let stamp = now.format("%Y%m%dT%H%M%SZ");
        let aside = PathBuf::from(format!("{}.damaged-{stamp}", db.display()));
        // Its WAL and index first (the new file must not read them), then the file itself
        // is kept under the new name by a link, so the real name is never missing.
        for suffix in ["-wal", "-shm"] {
            let from = PathBuf::from(format!("{}{suffix}", db.display()));
            if from.exists() {
                let to = PathBuf::from(format!("{}{suffix}", aside.display()));
                crate::edges::crash::point(&format!("rename {}", from.display()))
                    .context(|| format!("moving {} aside", from.display()))?;
                std::fs::rename(&from, &to)
                    .context(|| format!("moving {} aside", from.display()))?;
                moved.push((from, to));
            }
        }
        let _ = std::fs::remove_file(&aside);
        crate::edges::crash::point(&format!("link {}", aside.display()))
            .context(|| format!("keeping {}", db.display()))?;
        if std::fs::hard_link(db, &aside).is_err() {
            std::fs::copy(db, &aside).context(|| format!("keeping {} aside", db.display()))?;
        }
        out.moved_to = Some(aside.display().to_string());
    }
    crate::edges::crash::point(&format!("rename over {}", db.display()))
        .context(|| format!("replacing {}", db.display()))?;
    std::fs::rename(tmp, db).context(|| format!("replacing {}", db.display()))?;
    Ok(())
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
    let archive = store.read(schema::ARCHIVE)?;
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
