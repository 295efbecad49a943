//! What the heartbeat (`dream_core::operations::heartbeat`) looks at: the recent cycles' stored
//! reports and when each cycle kind last finished (the state database), when each
//! configured source of events last grew (also the state: a cycle records it right after
//! ingest, inside its transaction, so a dry run records nothing), and the cycles that
//! failed (`.dream/failures.jsonl`, beside the state rather than in it, so a failure leaves
//! the state exactly as the last good cycle left it). `dream status`, `dream doctor`, the
//! digest and the end of a cycle read them here and call the pure rules.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use dream_core::operations::heartbeat::{self, Inputs, Seen, Source, Warning};
use dream_core::schema::settings::{Config, CycleKind};
use dream_core::sources::ingested::Ingested;

use crate::edges::state;
use crate::error::{Context, Result};

/// Failed cycles kept, newest last.
const MAX_FAILURES: usize = 100;

/// A cycle that failed after taking the lock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub id: String,
    pub kind: String,
    /// The cycle's clock.
    pub now: DateTime<Utc>,
    pub started: DateTime<Utc>,
    pub error: String,
    pub exit_code: i32,
}

impl Failure {
    /// As a cycle record (for listings next to the successful ones).
    pub fn record(&self) -> state::CycleRecord {
        state::CycleRecord {
            id: self.id.clone(),
            kind: self.kind.clone(),
            started: self.started,
            finished: self.started,
            now: self.now,
            report: self.report(),
        }
    }

    fn report(&self) -> serde_json::Value {
        serde_json::json!({ "failed": self.error, "exit_code": self.exit_code })
    }
}

fn failures_path(root: &Path) -> PathBuf {
    root.join(".dream").join("failures.jsonl")
}

/// The failed cycles recorded in the repo at `root`, oldest first (lines that do not parse
/// are skipped).
pub fn failures(root: &Path) -> Result<Vec<Failure>> {
    let path = failures_path(root);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).context(|| format!("reading {}", path.display())),
    };
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// Add a failed cycle to `.dream/failures.jsonl` (the last hundred are kept).
pub fn record_failure(root: &Path, f: &Failure) -> Result<()> {
    let mut all = failures(root)?;
    all.push(f.clone());
    let skip = all.len().saturating_sub(MAX_FAILURES);
    let mut text = String::new();
    for f in &all[skip..] {
        text.push_str(&serde_json::to_string(f).unwrap_or_default());
        text.push('\n');
    }
    crate::edges::fsutil::write_atomic(&failures_path(root), text.as_bytes())
}

/// How a source of events is named in warnings: `inbox events/`, or a source's format and
/// path as configured.
pub fn source_names(config: &Config) -> Vec<String> {
    let mut names = vec![format!(
        "inbox {}/",
        config.inbox.path.trim_end_matches('/')
    )];
    for s in &config.inbox.sources {
        names.push(format!("{} {}", s.format.as_str(), s.path));
    }
    names
}

/// Record which sources the cycle read and which grew (a new line, events or not).
pub fn record_growth(
    conn: &Connection,
    config: &Config,
    ingest: &Ingested,
    now: DateTime<Utc>,
) -> Result<()> {
    let names = source_names(config);
    let from_sources: u64 = ingest.sources.iter().map(|s| s.counts.lines).sum();
    let inbox_lines = (ingest.lines as u64).saturating_sub(from_sources);
    state::put_source_growth(conn, &names[0], now, inbox_lines > 0)?;
    for (name, rep) in names[1..].iter().zip(&ingest.sources) {
        state::put_source_growth(conn, name, now, rep.counts.lines > 0)?;
    }
    Ok(())
}

/// The heartbeat's inputs at `now`; `current` is a cycle not stored yet (the one running).
pub fn inputs(
    conn: &Connection,
    root: &Path,
    config: &Config,
    now: DateTime<Utc>,
    current: Option<Seen>,
) -> Result<Inputs> {
    let limit = (config.heartbeat.cycles as usize * 4).max(8);
    // (clock, when it ended, the cycle): newest first, failures among the rest.
    let mut all: Vec<(DateTime<Utc>, DateTime<Utc>, Seen)> = Vec::new();
    for c in state::cycles_until(conn, now, limit)? {
        if current.as_ref().is_some_and(|s| s.id == c.id) {
            continue;
        }
        all.push((
            c.now,
            c.finished,
            Seen::from_report(&c.id, &c.kind, c.now, &c.report),
        ));
    }
    for f in failures(root)? {
        if f.now <= now && current.as_ref().is_none_or(|s| s.id != f.id) {
            all.push((
                f.now,
                f.started,
                Seen::from_report(&f.id, &f.kind, f.now, &f.report()),
            ));
        }
    }
    all.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    all.truncate(limit);
    let mut cycles: Vec<Seen> = current.iter().cloned().collect();
    cycles.extend(all.into_iter().map(|(_, _, s)| s));
    let mut last_of_kind = Vec::new();
    for kind in CycleKind::ALL {
        let k = kind.as_str();
        let stored = state::last_clock_of_kind(conn, k, now)?;
        let running = current.as_ref().filter(|s| s.kind == k).map(|s| s.now);
        if let Some(at) = running.max(stored) {
            last_of_kind.push((k.to_string(), at));
        }
    }
    let seen = state::sources_seen(conn)?;
    let sources = source_names(config)
        .into_iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let (_, first_seen, last_grew) = seen.iter().find(|(n, _, _)| *n == name)?;
            // With [[inbox.sources]] the inbox is optional: it is watched once it grew.
            if i == 0 && !config.inbox.sources.is_empty() && last_grew.is_none() {
                return None;
            }
            Some(Source {
                name,
                first_seen: *first_seen,
                last_grew: *last_grew,
            })
        })
        .collect();
    Ok(Inputs {
        cycles,
        last_of_kind,
        sources,
    })
}

/// The heartbeat's warnings at `now`.
pub fn warnings(
    conn: &Connection,
    root: &Path,
    config: &Config,
    now: DateTime<Utc>,
    current: Option<Seen>,
) -> Result<Vec<Warning>> {
    let i = inputs(conn, root, config, now, current)?;
    let mut out = heartbeat::check(now, &i, &config.heartbeat);
    let from = now - chrono::Duration::days(i64::from(config.cluster.window_days));
    let (count, oldest) = state::unreflected_before(conn, from.timestamp())?;
    let oldest = oldest.and_then(|t| DateTime::<Utc>::from_timestamp(t, 0));
    out.extend(heartbeat::unreflected(
        count,
        oldest,
        config.cluster.window_days,
    ));
    Ok(out)
}
