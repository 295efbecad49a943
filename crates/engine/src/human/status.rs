//! `dream status`'s picture of a repository, gathered as one plain value.
//!
//! A person (or a monitor, through `--json`) asks what is waiting: what the cycle holding
//! the lock is doing, how many facts and cards there are, the inbox bytes no cycle has
//! read, the events not yet reflected on, the embedder and its vector cache, quarantined
//! lines, the last cycles (failed ones too) and the heartbeat's warnings. All of it is read
//! here, from the repository, the inbox and transcript folders, the state database (read
//! only) and the failure log; [`Status`] is what the command line renders as text or
//! serialises as JSON, so the two always show the same figures. Nothing is written.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use dream_core::operations::heartbeat::Warning;
use dream_core::recall::quiz;
use dream_core::schema::settings::Config;
use dream_core::schema::Block;
use dream_core::sources::ingested::{Quarantined, Watermark};

use crate::edges::inbox::{self, file_key};
use crate::edges::state::{self, CycleRecord, State};
use crate::edges::store::Store;
use crate::edges::{heartbeat, lock, sources};
use crate::error::Result;

/// How many cycles, and how many quarantined lines, the picture lists.
const RECENT: usize = 5;

/// Everything `dream status` shows. Serialised as it stands for `--json`.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub repo: String,
    /// The cycle (or other writer) holding the lock now: its pid, since when, and stage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running: Option<lock::Running>,
    pub events_stored: u64,
    /// Stored events no cycle has reflected on yet.
    pub events_unreflected: u64,
    /// Inbox bytes not yet read by a cycle, per file with any.
    pub inbox_lag: Vec<Lag>,
    pub inbox_lag_bytes: u64,
    pub review_queue: usize,
    /// Cards waiting for room in the review queue (`review.max_new_cards`), queued best
    /// first as decisions make room.
    pub review_waiting: usize,
    /// Skill drafts and proposals awaiting a decision (`dream skills list`).
    pub skills_awaiting: usize,
    pub quarantined: u64,
    pub recent_quarantine: Vec<Quarantined>,
    pub active_facts: usize,
    /// Of them, in memory/episodes.md.
    pub episodes: usize,
    /// The configured embedder's id (vectors are cached under it).
    pub embedder: String,
    /// Vectors the cache holds, per embedder id.
    pub vector_cache: Vec<CacheLine>,
    pub last_cycles: Vec<CycleLine>,
    /// What the heartbeat warns about now: a quiet failure, with its cause and fix.
    pub warnings: Vec<Warning>,
    /// The shared memory this repository is part of (issue 45): remote, role, last fetch
    /// and push, the machines seen, what waits to be shipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared: Option<crate::machines::Shared>,
}

/// The vectors cached for one embedder.
#[derive(Debug, Clone, Serialize)]
pub struct CacheLine {
    pub embedder: String,
    pub vectors: u64,
}

/// An inbox or transcript file with bytes no cycle has read yet.
#[derive(Debug, Clone, Serialize)]
pub struct Lag {
    pub file: String,
    pub bytes: u64,
}

/// One recent cycle, as its stored report (or its failure record) tells it.
#[derive(Debug, Clone, Serialize)]
pub struct CycleLine {
    pub id: String,
    pub kind: String,
    pub finished: String,
    pub promoted: u64,
    /// Kept as episodes (memory/episodes.md).
    pub episodes: u64,
    pub reinforced: u64,
    pub queued: u64,
    pub refused: u64,
    pub tokens: u64,
    /// Its recall quiz's score, when one ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quiz: Option<quiz::Summary>,
    /// The error, when the cycle failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

impl Status {
    /// The vectors cached for the embedder `id` (0 when none are).
    pub fn cached(&self, id: &str) -> u64 {
        self.vector_cache
            .iter()
            .find(|c| c.embedder == id)
            .map_or(0, |c| c.vectors)
    }
}

/// Gather the status of the repository at `root`, as of `now` (the heartbeat's clock and
/// the day memory is read on). Reads only; a repository no cycle has run on yet (no state
/// database) shows zero events and no cycles.
pub fn gather(root: &Path, config: &Config, now: DateTime<Utc>) -> Result<Status> {
    let store = Store::open(root)?;
    let state = State::open_read_only(root)?;
    let watermarks = match &state {
        Some(s) => state::watermarks(&s.conn)?,
        None => Vec::new(),
    };
    let inbox_lag = inbox_lag(root, config, &watermarks)?;
    let (cards, _) = store.pending_cards()?;
    let memory = store.load_memory(now.date_naive())?;
    let mut s = Status {
        shared: crate::machines::shared(root)?,
        repo: root.display().to_string(),
        running: lock::running(root),
        events_stored: 0,
        events_unreflected: 0,
        inbox_lag_bytes: inbox_lag.iter().map(|l| l.bytes).sum(),
        inbox_lag,
        review_queue: cards.len(),
        review_waiting: match &state {
            Some(st) => state::waiting_count(&st.conn)?,
            None => 0,
        },
        skills_awaiting: crate::stages::skills::awaiting(root)?.len(),
        quarantined: 0,
        recent_quarantine: Vec::new(),
        active_facts: memory.len(),
        episodes: memory.block(Block::Episodes).facts().count(),
        embedder: crate::providers::embedder(config)
            .map(|e| e.id())
            .unwrap_or_else(|e| format!("{} (not usable: {e})", config.embed.provider)),
        vector_cache: Vec::new(),
        last_cycles: Vec::new(),
        warnings: Vec::new(),
    };
    if let Some(st) = &state {
        read_state(&mut s, st, root, config, now)?;
    }
    Ok(s)
}

/// The files a cycle would read (the inbox's, less those a transcript source claims, and
/// every `[[inbox.sources]]` folder's), each with the bytes past its watermark.
fn inbox_lag(root: &Path, config: &Config, watermarks: &[Watermark]) -> Result<Vec<Lag>> {
    let mut files: Vec<PathBuf> = inbox::list_files(&root.join(&config.inbox.path))?;
    files.retain(|p| !sources::claims(config, root, p));
    for source in &config.inbox.sources {
        let dir = sources::source_path(source, root);
        if dir.exists() {
            files.extend(sources::list(
                &dir,
                source.format,
                &source.include,
                &source.exclude,
            )?);
        }
    }
    let mut lag = Vec::new();
    for path in files {
        let key = file_key(root, &path);
        let prev = watermarks.iter().find(|w| w.file == key);
        let bytes = inbox::lag(&path, prev);
        if bytes > 0 {
            lag.push(Lag { file: key, bytes });
        }
    }
    Ok(lag)
}

/// What the state database adds: event and quarantine counts, the vector cache, the last
/// cycles (with the failed ones from the failure log) and the heartbeat's warnings.
fn read_state(
    s: &mut Status,
    st: &State,
    root: &Path,
    config: &Config,
    now: DateTime<Utc>,
) -> Result<()> {
    s.events_stored = state::events_stored(&st.conn)?;
    s.events_unreflected = state::events_unreflected(&st.conn)?;
    s.quarantined = state::quarantined_count(&st.conn)?;
    s.recent_quarantine = state::quarantined(&st.conn, RECENT)?;
    s.vector_cache = state::vector_cache(&st.conn)?
        .into_iter()
        .map(|(embedder, vectors)| CacheLine { embedder, vectors })
        .collect();
    let mut recent = state::recent_cycles(&st.conn, RECENT)?;
    recent.extend(heartbeat::failures(root)?.into_iter().map(|f| f.record()));
    recent.sort_by_key(|c| std::cmp::Reverse(c.finished));
    recent.truncate(RECENT);
    s.last_cycles = recent.iter().map(cycle_line).collect();
    // A member of a shared memory runs no cycles (its dreamer does): the heartbeat's rules,
    // all about cycles, would only warn that none ran.
    let member = s
        .shared
        .as_ref()
        .is_some_and(|sh| sh.membership.role == dream_core::operations::machines::Role::Member);
    if !member {
        s.warnings = heartbeat::warnings(&st.conn, root, config, now, None)?;
    }
    Ok(())
}

/// One cycle record as a line of the picture: its counts, tokens, quiz and failure read
/// from its report (0 or none for what an older report lacks).
fn cycle_line(c: &CycleRecord) -> CycleLine {
    let n = |k: &str| c.report["candidates"][k].as_u64().unwrap_or(0);
    CycleLine {
        id: c.id.clone(),
        kind: c.kind.clone(),
        finished: c.finished.format("%Y-%m-%d %H:%M UTC").to_string(),
        promoted: n("promoted"),
        episodes: n("episodes"),
        reinforced: n("reinforced"),
        queued: n("queued"),
        refused: n("refused"),
        tokens: c.report["tokens"]["spent"].as_u64().unwrap_or(0),
        quiz: serde_json::from_value(c.report["quiz"].clone()).ok(),
        failed: c.report["failed"].as_str().map(str::to_string),
    }
}
