//! The state database `.dream/state.sqlite`: events, the embedding cache, per-file
//! watermarks, quarantine, cycle records and candidate records.
//!
//! The schema has a version (`PRAGMA user_version`) and a list of forward migrations; a
//! database written by a newer dream is refused rather than guessed at. A cycle does all of
//! its writes inside one transaction that commits only after the git commit succeeded, so a
//! crash leaves the database exactly as the last completed cycle left it. Every query a
//! cycle runs is bounded by the window or by a list of ids, never by the whole history.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::error::{Context, Error, Result};
use crate::event::{Event, Trust};

/// Forward migrations; `MIGRATIONS[n]` takes the schema from version n to n + 1.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE events (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    ts              TEXT NOT NULL,
    ts_epoch        INTEGER NOT NULL,
    kind            TEXT NOT NULL,
    text            TEXT NOT NULL,
    session         TEXT,
    actor           TEXT,
    source          TEXT,
    trust           TEXT NOT NULL,
    recalled        INTEGER NOT NULL DEFAULT 0,
    meta            TEXT,
    hash            TEXT NOT NULL,
    origin          TEXT NOT NULL,
    ingested_cycle  TEXT NOT NULL,
    reflected_cycle TEXT
);
CREATE INDEX events_ts ON events(ts_epoch);
CREATE INDEX events_unreflected ON events(ts_epoch) WHERE reflected_cycle IS NULL;
CREATE TABLE embeddings (
    event_id TEXT NOT NULL,
    model    TEXT NOT NULL,
    vec      BLOB NOT NULL,
    PRIMARY KEY (event_id, model)
) WITHOUT ROWID;
CREATE TABLE watermarks (
    file        TEXT PRIMARY KEY,
    identity    TEXT NOT NULL,
    offset      INTEGER NOT NULL,
    line        INTEGER NOT NULL,
    prefix_hash TEXT NOT NULL,
    updated     TEXT NOT NULL
);
CREATE TABLE quarantine (
    seq     INTEGER PRIMARY KEY,
    file    TEXT NOT NULL,
    line    INTEGER NOT NULL,
    offset  INTEGER NOT NULL,
    reason  TEXT NOT NULL,
    excerpt TEXT NOT NULL,
    hash    TEXT NOT NULL,
    cycle   TEXT NOT NULL,
    at      TEXT NOT NULL,
    UNIQUE (file, offset, hash)
);
CREATE TABLE cycles (
    id       TEXT PRIMARY KEY,
    kind     TEXT NOT NULL,
    started  TEXT NOT NULL,
    finished TEXT NOT NULL,
    now      TEXT NOT NULL,
    report   TEXT NOT NULL
);
CREATE TABLE candidates (
    id     TEXT NOT NULL,
    cycle  TEXT NOT NULL,
    route  TEXT NOT NULL,
    text   TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (id, cycle)
);
"#,
    r#"
CREATE TABLE vetoes (
    id       TEXT PRIMARY KEY,
    kind     TEXT NOT NULL,
    text     TEXT NOT NULL,
    events   TEXT NOT NULL,
    reason   TEXT NOT NULL,
    at       TEXT NOT NULL,
    decision TEXT NOT NULL
);
"#,
];

pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// An open state database.
pub struct State {
    pub conn: Connection,
    pub path: PathBuf,
    /// Keeps a dry run's scratch copy alive.
    _scratch: Option<tempfile::TempDir>,
}

/// The path of the state database in a repo.
pub fn path(root: &Path) -> PathBuf {
    root.join(".dream").join("state.sqlite")
}

impl State {
    /// Open (creating and migrating as needed) the state database of a repo.
    pub fn open(root: &Path) -> Result<State> {
        let path = path(root);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).context(|| format!("creating {}", dir.display()))?;
        }
        let conn = Connection::open(&path).context(|| format!("opening {}", path.display()))?;
        let state = State {
            conn,
            path,
            _scratch: None,
        };
        state.prepare()?;
        Ok(state)
    }

    /// Open a scratch copy of the state database, for a dry run that must leave every
    /// byte of the real one unchanged. A repo without state yet gets an empty scratch one.
    pub fn open_scratch_copy(root: &Path) -> Result<State> {
        let real = path(root);
        let dir =
            tempfile::tempdir().context(|| "creating a scratch folder for the dry run".into())?;
        let copy = dir.path().join("state.sqlite");
        for suffix in ["", "-wal"] {
            let from = PathBuf::from(format!("{}{suffix}", real.display()));
            if from.exists() {
                let to = PathBuf::from(format!("{}{suffix}", copy.display()));
                std::fs::copy(&from, &to).context(|| format!("copying {}", from.display()))?;
            }
        }
        let conn = Connection::open(&copy).context(|| format!("opening {}", copy.display()))?;
        let state = State {
            conn,
            path: copy,
            _scratch: Some(dir),
        };
        state.prepare()?;
        Ok(state)
    }

    /// Open an existing state database for reading only (status, explain, log).
    pub fn open_read_only(root: &Path) -> Result<Option<State>> {
        let path = path(root);
        if !path.exists() {
            return Ok(None);
        }
        let conn = Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .context(|| format!("opening {}", path.display()))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .context(|| "setting the busy timeout".into())?;
        check_version(&conn, &path)?;
        Ok(Some(State {
            conn,
            path,
            _scratch: None,
        }))
    }

    fn prepare(&self) -> Result<()> {
        let conn = &self.conn;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .context(|| "setting the busy timeout".into())?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .context(|| format!("switching {} to WAL mode", self.path.display()))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .context(|| "setting synchronous mode".into())?;
        migrate(conn, &self.path)
    }
}

fn check_version(conn: &Connection, path: &Path) -> Result<i64> {
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .context(|| format!("reading the schema version of {}", path.display()))?;
    if version > SCHEMA_VERSION {
        return Err(Error::Other(format!(
            "{} has schema version {version}, newer than this dream understands ({SCHEMA_VERSION}); upgrade dream",
            path.display()
        )));
    }
    Ok(version)
}

fn migrate(conn: &Connection, path: &Path) -> Result<()> {
    let version = check_version(conn, path)?;
    for (n, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let next = n as i64 + 1;
        conn.execute_batch(&format!(
            "BEGIN;\n{sql}\nPRAGMA user_version = {next};\nCOMMIT;"
        ))
        .context(|| format!("migrating {} to schema version {next}", path.display()))?;
    }
    Ok(())
}

/// An event as stored, with whether a cycle has already reflected on it.
#[derive(Debug, Clone)]
pub struct Stored {
    pub event: Event,
    pub reflected: bool,
}

const EVENT_COLUMNS: &str =
    "id, ts, kind, text, session, actor, source, trust, recalled, meta, reflected_cycle";

fn row_to_stored(row: &rusqlite::Row<'_>) -> rusqlite::Result<Stored> {
    let ts: String = row.get(1)?;
    let trust: String = row.get(7)?;
    let meta: Option<String> = row.get(9)?;
    let reflected: Option<String> = row.get(10)?;
    Ok(Stored {
        event: Event {
            id: row.get(0)?,
            ts: DateTime::parse_from_rfc3339(&ts)
                .map(|t| t.with_timezone(&Utc))
                .unwrap_or_default(),
            kind: row.get(2)?,
            text: row.get(3)?,
            session: row.get(4)?,
            actor: row.get(5)?,
            source: row.get(6)?,
            trust: Trust::parse(&trust).unwrap_or(Trust::External),
            recalled: row.get::<_, i64>(8)? != 0,
            meta: meta.and_then(|m| serde_json::from_str(&m).ok()),
        },
        reflected: reflected.is_some(),
    })
}

/// The content hash stored for an event id, if the id is known.
pub fn event_hash(conn: &Connection, id: &str) -> Result<Option<String>> {
    conn.query_row("SELECT hash FROM events WHERE id = ?1", [id], |r| r.get(0))
        .optional()
        .context(|| format!("looking up event {id}"))
}

/// Store a new event.
pub fn insert_event(conn: &Connection, e: &Event, origin: &str, cycle: &str) -> Result<()> {
    conn.execute(
        "INSERT INTO events (id, ts, ts_epoch, kind, text, session, actor, source, trust, recalled, meta, hash, origin, ingested_cycle)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        params![
            e.id,
            e.ts.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
            e.ts.timestamp(),
            e.kind,
            e.text,
            e.session,
            e.actor,
            e.source,
            e.trust.as_str(),
            e.recalled as i64,
            e.meta.as_ref().map(|m| m.to_string()),
            e.content_hash(),
            origin,
            cycle,
        ],
    )
    .context(|| format!("storing event {}", e.id))?;
    Ok(())
}

/// Events with `from <= ts <= to` (the rolling window), oldest first.
pub fn window_events(
    conn: &Connection,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<Stored>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE ts_epoch BETWEEN ?1 AND ?2 ORDER BY ts_epoch, seq"
        ))
        .context(|| "reading the window".into())?;
    let rows = stmt
        .query_map([from.timestamp(), to.timestamp()], row_to_stored)
        .context(|| "reading the window".into())?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .context(|| "reading the window".into())
}

/// Events by id (unknown ids are left out).
pub fn events_by_ids(conn: &Connection, ids: &[String]) -> Result<Vec<Stored>> {
    let mut stmt = conn
        .prepare_cached(&format!("SELECT {EVENT_COLUMNS} FROM events WHERE id = ?1"))
        .context(|| "reading events".into())?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(s) = stmt
            .query_row([id], row_to_stored)
            .optional()
            .context(|| format!("reading event {id}"))?
        {
            out.push(s);
        }
    }
    Ok(out)
}

/// Mark events as reflected on by a cycle.
pub fn mark_reflected(conn: &Connection, ids: &[String], cycle: &str) -> Result<()> {
    let mut stmt = conn
        .prepare_cached(
            "UPDATE events SET reflected_cycle = ?2 WHERE id = ?1 AND reflected_cycle IS NULL",
        )
        .context(|| "marking events reflected".into())?;
    for id in ids {
        stmt.execute(params![id, cycle])
            .context(|| format!("marking event {id} reflected"))?;
    }
    Ok(())
}

/// Cached vectors for these events under an embedder id.
pub fn embeddings(
    conn: &Connection,
    model: &str,
    ids: &[&str],
) -> Result<HashMap<String, Vec<f32>>> {
    let mut stmt = conn
        .prepare_cached("SELECT vec FROM embeddings WHERE event_id = ?1 AND model = ?2")
        .context(|| "reading embeddings".into())?;
    let mut out = HashMap::with_capacity(ids.len());
    for id in ids {
        let blob: Option<Vec<u8>> = stmt
            .query_row(params![id, model], |r| r.get(0))
            .optional()
            .context(|| format!("reading the embedding of {id}"))?;
        if let Some(b) = blob {
            out.insert(id.to_string(), decode_vec(&b));
        }
    }
    Ok(out)
}

pub fn put_embedding(conn: &Connection, model: &str, id: &str, v: &[f32]) -> Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO embeddings (event_id, model, vec) VALUES (?1, ?2, ?3)",
    )
    .and_then(|mut s| s.execute(params![id, model, encode_vec(v)]))
    .context(|| format!("storing the embedding of {id}"))?;
    Ok(())
}

fn encode_vec(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode_vec(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Where reading an inbox file stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watermark {
    pub file: String,
    /// Device and inode (or another identity the platform gives).
    pub identity: String,
    pub offset: u64,
    /// Lines consumed up to the offset (for line numbers in quarantine records).
    pub line: u64,
    /// Hash of the file's first bytes up to the offset (at most 4 KiB): a file rewritten in
    /// place is detected even when it keeps its inode.
    pub prefix_hash: String,
}

pub fn watermark(conn: &Connection, file: &str) -> Result<Option<Watermark>> {
    conn.query_row(
        "SELECT file, identity, offset, line, prefix_hash FROM watermarks WHERE file = ?1",
        [file],
        |r| {
            Ok(Watermark {
                file: r.get(0)?,
                identity: r.get(1)?,
                offset: r.get::<_, i64>(2)? as u64,
                line: r.get::<_, i64>(3)? as u64,
                prefix_hash: r.get(4)?,
            })
        },
    )
    .optional()
    .context(|| format!("reading the watermark of {file}"))
}

pub fn put_watermark(conn: &Connection, w: &Watermark, now: DateTime<Utc>) -> Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO watermarks (file, identity, offset, line, prefix_hash, updated) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![w.file, w.identity, w.offset as i64, w.line as i64, w.prefix_hash, now.to_rfc3339()],
    )
    .context(|| format!("storing the watermark of {}", w.file))?;
    Ok(())
}

pub fn watermarks(conn: &Connection) -> Result<Vec<Watermark>> {
    let mut stmt = conn
        .prepare("SELECT file, identity, offset, line, prefix_hash FROM watermarks ORDER BY file")
        .context(|| "reading watermarks".into())?;
    let rows = stmt
        .query_map([], |r| {
            Ok(Watermark {
                file: r.get(0)?,
                identity: r.get(1)?,
                offset: r.get::<_, i64>(2)? as u64,
                line: r.get::<_, i64>(3)? as u64,
                prefix_hash: r.get(4)?,
            })
        })
        .context(|| "reading watermarks".into())?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .context(|| "reading watermarks".into())
}

/// A line that could not become an event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Quarantined {
    pub file: String,
    pub line: u64,
    pub offset: u64,
    pub reason: String,
    /// The start of the line, secrets redacted.
    pub excerpt: String,
    pub hash: String,
}

/// Record a quarantined line; returns false when the same line was already recorded.
pub fn quarantine(
    conn: &Connection,
    q: &Quarantined,
    cycle: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let n = conn
        .execute(
            "INSERT OR IGNORE INTO quarantine (file, line, offset, reason, excerpt, hash, cycle, at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![q.file, q.line as i64, q.offset as i64, q.reason, q.excerpt, q.hash, cycle, now.to_rfc3339()],
        )
        .context(|| format!("quarantining {}:{}", q.file, q.line))?;
    Ok(n > 0)
}

pub fn quarantined(conn: &Connection, limit: usize) -> Result<Vec<Quarantined>> {
    let mut stmt = conn
        .prepare("SELECT file, line, offset, reason, excerpt, hash FROM quarantine ORDER BY seq DESC LIMIT ?1")
        .context(|| "reading quarantine".into())?;
    let rows = stmt
        .query_map([limit as i64], |r| {
            Ok(Quarantined {
                file: r.get(0)?,
                line: r.get::<_, i64>(1)? as u64,
                offset: r.get::<_, i64>(2)? as u64,
                reason: r.get(3)?,
                excerpt: r.get(4)?,
                hash: r.get(5)?,
            })
        })
        .context(|| "reading quarantine".into())?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .context(|| "reading quarantine".into())
}

pub fn count(conn: &Connection, sql: &str) -> Result<u64> {
    conn.query_row(sql, [], |r| r.get::<_, i64>(0))
        .map(|n| n as u64)
        .context(|| "counting rows".into())
}

/// A finished cycle.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CycleRecord {
    pub id: String,
    pub kind: String,
    pub started: DateTime<Utc>,
    pub finished: DateTime<Utc>,
    pub now: DateTime<Utc>,
    pub report: serde_json::Value,
}

pub fn put_cycle(conn: &Connection, c: &CycleRecord) -> Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO cycles (id, kind, started, finished, now, report) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            c.id,
            c.kind,
            c.started.to_rfc3339(),
            c.finished.to_rfc3339(),
            c.now.to_rfc3339(),
            c.report.to_string()
        ],
    )
    .context(|| format!("recording cycle {}", c.id))?;
    Ok(())
}

pub fn recent_cycles(conn: &Connection, limit: usize) -> Result<Vec<CycleRecord>> {
    let mut stmt = conn
        .prepare("SELECT id, kind, started, finished, now, report FROM cycles ORDER BY finished DESC LIMIT ?1")
        .context(|| "reading cycles".into())?;
    let parse = |s: String| {
        DateTime::parse_from_rfc3339(&s)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    };
    let rows = stmt
        .query_map([limit as i64], |r| {
            Ok(CycleRecord {
                id: r.get(0)?,
                kind: r.get(1)?,
                started: parse(r.get(2)?),
                finished: parse(r.get(3)?),
                now: parse(r.get(4)?),
                report: serde_json::from_str(&r.get::<_, String>(5)?).unwrap_or_default(),
            })
        })
        .context(|| "reading cycles".into())?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .context(|| "reading cycles".into())
}

/// Record what happened to a candidate in a cycle (for `dream explain`).
pub fn put_candidate(
    conn: &Connection,
    id: &str,
    cycle: &str,
    route: &str,
    text: &str,
    record: &serde_json::Value,
) -> Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO candidates (id, cycle, route, text, record) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, cycle, route, text, record.to_string()],
    )
    .context(|| format!("recording candidate {id}"))?;
    Ok(())
}

/// Every record of a candidate id, newest cycle first.
pub fn candidate_records(
    conn: &Connection,
    id: &str,
) -> Result<Vec<(String, String, serde_json::Value)>> {
    let mut stmt = conn
        .prepare("SELECT cycle, route, record FROM candidates WHERE id = ?1 ORDER BY cycle DESC")
        .context(|| "reading candidates".into())?;
    let rows = stmt
        .query_map([id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                serde_json::from_str(&r.get::<_, String>(2)?).unwrap_or_default(),
            ))
        })
        .context(|| "reading candidates".into())?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .context(|| "reading candidates".into())
}

/// The latest cycle of a kind whose clock was at or before `at` (for the digest: "what the
/// last evening cycle did"). Replays with `--now` keep their own order: a cycle replayed at
/// an earlier clock is not "last" for a later one. (`now` is stored as UTC RFC 3339 text,
/// which sorts as time.)
pub fn last_cycle_of_kind(
    conn: &Connection,
    kind: &str,
    at: DateTime<Utc>,
) -> Result<Option<CycleRecord>> {
    let parse = |s: String| {
        DateTime::parse_from_rfc3339(&s)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    };
    conn.query_row(
        "SELECT id, kind, started, finished, now, report FROM cycles WHERE kind = ?1 AND now <= ?2
         ORDER BY now DESC, finished DESC LIMIT 1",
        params![kind, at.to_rfc3339()],
        |r| {
            Ok(CycleRecord {
                id: r.get(0)?,
                kind: r.get(1)?,
                started: parse(r.get(2)?),
                finished: parse(r.get(3)?),
                now: parse(r.get(4)?),
                report: serde_json::from_str(&r.get::<_, String>(5)?).unwrap_or_default(),
            })
        },
    )
    .optional()
    .context(|| format!("reading the last {kind} cycle"))
}

/// Events with `ts >= from` that no cycle has reflected on and that were ingested by a cycle
/// other than an evening one (for the digest: what waits for the next evening). Bounded by
/// `from` through the index of unreflected events.
pub fn count_waiting(conn: &Connection, from: DateTime<Utc>) -> Result<u64> {
    conn.query_row(
        "SELECT COUNT(*) FROM events WHERE reflected_cycle IS NULL AND ts_epoch >= ?1
         AND ingested_cycle NOT IN (SELECT id FROM cycles WHERE kind = 'evening')",
        [from.timestamp()],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n as u64)
    .context(|| "counting events waiting for the evening cycle".into())
}

/// Quarantined lines recorded lately (for the digest).
#[derive(Debug, Clone, Default)]
pub struct RecentQuarantine {
    /// The first lines recorded since then, oldest first, with when they were recorded.
    pub lines: Vec<(Quarantined, DateTime<Utc>)>,
    /// How many lines were recorded since then.
    pub since: u64,
    /// How many lines are in quarantine in all.
    pub total: u64,
}

/// Quarantined lines recorded at or after `since` (at most `limit` listed; `at` is stored as
/// UTC RFC 3339 text, which sorts as time).
pub fn quarantined_since(
    conn: &Connection,
    since: DateTime<Utc>,
    limit: usize,
) -> Result<RecentQuarantine> {
    let mut stmt = conn
        .prepare(
            "SELECT file, line, offset, reason, excerpt, hash, at FROM quarantine WHERE at >= ?1 ORDER BY seq LIMIT ?2",
        )
        .context(|| "reading quarantine".into())?;
    let rows = stmt
        .query_map(params![since.to_rfc3339(), limit as i64], |r| {
            let at: String = r.get(6)?;
            Ok((
                Quarantined {
                    file: r.get(0)?,
                    line: r.get::<_, i64>(1)? as u64,
                    offset: r.get::<_, i64>(2)? as u64,
                    reason: r.get(3)?,
                    excerpt: r.get(4)?,
                    hash: r.get(5)?,
                },
                DateTime::parse_from_rfc3339(&at)
                    .map(|t| t.with_timezone(&Utc))
                    .unwrap_or_default(),
            ))
        })
        .context(|| "reading quarantine".into())?;
    let recent = rows
        .collect::<rusqlite::Result<Vec<_>>>()
        .context(|| "reading quarantine".into())?;
    let since_count: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM quarantine WHERE at >= ?1",
            [since.to_rfc3339()],
            |r| r.get(0),
        )
        .context(|| "counting quarantine".into())?;
    let total = count(conn, "SELECT COUNT(*) FROM quarantine")?;
    Ok(RecentQuarantine {
        lines: recent,
        since: since_count as u64,
        total,
    })
}

/// Record a person's veto (a rejected card or an undone fact) with the events it had.
pub fn put_veto(conn: &Connection, v: &crate::veto::Veto) -> Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO vetoes (id, kind, text, events, reason, at, decision) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            v.id,
            v.kind,
            v.text,
            serde_json::to_string(&v.events).unwrap_or_default(),
            v.reason,
            v.at.to_rfc3339(),
            v.decision
        ],
    )
    .context(|| format!("recording the veto on {}", v.id))?;
    Ok(())
}

/// Forget a veto (its decision was undone); returns whether there was one.
pub fn delete_veto(conn: &Connection, id: &str) -> Result<bool> {
    let n = conn
        .execute("DELETE FROM vetoes WHERE id = ?1", [id])
        .context(|| format!("removing the veto on {id}"))?;
    Ok(n > 0)
}

/// Every veto, oldest first. Vetoes are a person's decisions, so there are few of them:
/// the cycle reads them whole, as it reads durable memory whole.
pub fn vetoes(conn: &Connection) -> Result<Vec<crate::veto::Veto>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, kind, text, events, reason, at, decision FROM vetoes ORDER BY at, id",
        )
        .context(|| "reading vetoes".into())?;
    let rows = stmt
        .query_map([], |r| {
            Ok(crate::veto::Veto {
                id: r.get(0)?,
                kind: r.get(1)?,
                text: r.get(2)?,
                events: serde_json::from_str(&r.get::<_, String>(3)?).unwrap_or_default(),
                reason: r.get(4)?,
                at: DateTime::parse_from_rfc3339(&r.get::<_, String>(5)?)
                    .map(|t| t.with_timezone(&Utc))
                    .unwrap_or_default(),
                decision: r.get(6)?,
            })
        })
        .context(|| "reading vetoes".into())?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .context(|| "reading vetoes".into())
}

/// Candidate records whose route ended at `target` (a fact or card id), newest first.
pub fn candidates_targeting(
    conn: &Connection,
    target: &str,
) -> Result<Vec<(String, String, serde_json::Value)>> {
    let mut stmt = conn
        .prepare(
            "SELECT cycle, route, record FROM candidates WHERE json_extract(record, '$.target') = ?1 ORDER BY cycle DESC",
        )
        .context(|| "reading candidates".into())?;
    let rows = stmt
        .query_map([target], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                serde_json::from_str(&r.get::<_, String>(2)?).unwrap_or_default(),
            ))
        })
        .context(|| "reading candidates".into())?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .context(|| "reading candidates".into())
}
