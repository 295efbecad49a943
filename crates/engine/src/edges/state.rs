//! The state database `.dream/state.sqlite`: events, the embedding cache, per-file
//! watermarks, quarantine, cycle records, candidate records, and when each source of
//! events last grew (for the heartbeat).
//!
//! The schema has a version (`PRAGMA user_version`) and a list of forward migrations; a
//! database written by a newer dream is refused rather than guessed at. A cycle does all of
//! its writes inside one transaction that commits only after the git commit succeeded, so a
//! crash leaves the database exactly as the last completed cycle left it. Every query a
//! cycle runs is bounded by the window or by a list of ids, never by the whole history.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use dream_core::sources::ingested::{Quarantined, Watermark};
use rusqlite::{params, OptionalExtension};

/// A connection to the state database, or a transaction on it (which derefs to one): what
/// stages and commands hand to this module's functions. Only `edges` names the database
/// library (`crates/engine/tests/layers.rs` holds every other module to that).
pub use rusqlite::Connection;
/// The state transaction a cycle or a decision fills and commits at its commit point
/// ([`State::begin`], [`commit`]).
pub use rusqlite::Transaction;
use serde::{Deserialize, Serialize};

use crate::error::{Context, Error, Result};
use dream_core::skills::procedure::ProcedureRow;
pub use dream_core::sources::event::Stored;
use dream_core::sources::event::{Event, Trust};

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
    r#"
CREATE TABLE embedding_models (
    id   INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE vectors (
    key INTEGER PRIMARY KEY,
    vec BLOB NOT NULL
);
INSERT INTO embedding_models (name) SELECT DISTINCT model FROM embeddings ORDER BY model;
INSERT INTO vectors (key, vec)
    SELECT e.seq * 1024 + m.id, x.vec
    FROM embeddings x
    JOIN events e ON e.id = x.event_id
    JOIN embedding_models m ON m.name = x.model;
DROP TABLE embeddings;
"#,
    r#"
CREATE TABLE uses (
    fact  TEXT NOT NULL,
    day   TEXT NOT NULL,
    via   TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (fact, day, via)
) WITHOUT ROWID;
"#,
    r#"
CREATE TABLE sources (
    name       TEXT PRIMARY KEY,
    first_seen TEXT NOT NULL,
    last_grew  TEXT
);
ALTER TABLE cycles ADD COLUMN heartbeat TEXT;
"#,
    // The commits whose publication the state recorded, for `journal` recovery: a change
    // whose commit point is the state happened exactly when its target is listed here.
    r#"
CREATE TABLE applied (
    target TEXT PRIMARY KEY,
    kind   TEXT NOT NULL,
    at     TEXT NOT NULL
);
"#,
    // Named positions of the cycle's own (not a file's): `backfill`, how far the
    // consolidation of history older than the window has come (epoch seconds).
    r#"
CREATE TABLE marks (
    name    TEXT PRIMARY KEY,
    value   INTEGER NOT NULL,
    updated TEXT NOT NULL
);
"#,
    // The project each event was said in (`edges::project`): NULL for events stored
    // before scope, which count as unknown.
    r#"
ALTER TABLE events ADD COLUMN project TEXT;
"#,
    // The recall quiz after each cycle (`dream_core::recall::quiz`): one row per question, the
    // whole outcome (question, attempts) as JSON, so `dream explain` shows a fact's.
    r#"
CREATE TABLE quiz (
    cycle   TEXT NOT NULL,
    fact    TEXT NOT NULL,
    expect  TEXT NOT NULL,
    passed  INTEGER NOT NULL,
    at      TEXT NOT NULL,
    outcome TEXT NOT NULL,
    PRIMARY KEY (cycle, fact, expect)
) WITHOUT ROWID;
CREATE INDEX quiz_by_fact ON quiz (fact);
"#,
    // Review cards waiting for room in the queue (`review.max_new_cards`, issue 28): each
    // card as its file would hold it (JSON), its salience for ranking, and when a cycle
    // last restated it (the episode rules expire them).
    r#"
CREATE TABLE waiting (
    id       TEXT PRIMARY KEY,
    card     TEXT NOT NULL,
    salience REAL,
    updated  TEXT NOT NULL
);
"#,
    // Several machines (issue 45): on the dreamer, how far each member's branch was
    // ingested (its last commit taken in, written in the transaction that stores that
    // commit's events); on every machine, the last fetch and push tried and done.
    r#"
CREATE TABLE members (
    machine    TEXT PRIMARY KEY,
    person     TEXT,
    commit_id  TEXT NOT NULL,
    events     INTEGER NOT NULL,
    last_event TEXT,
    updated    TEXT NOT NULL
);
CREATE TABLE remote_log (
    what     TEXT PRIMARY KEY,
    tried    TEXT NOT NULL,
    done     TEXT,
    problem  TEXT
);
"#,
    // Decisions on review cards made on members (issue 45), as the dreamer took them in
    // (stored with the member's mark, in one transaction), and what became of each:
    // `outcome` NULL until applied, then `applied` (with its commit) or `refused` (why:
    // the card was decided first elsewhere).
    r#"
CREATE TABLE decisions (
    id       TEXT PRIMARY KEY,
    decision TEXT NOT NULL,
    at       TEXT NOT NULL,
    outcome  TEXT,
    note     TEXT,
    updated  TEXT
);
"#,
];

/// Vectors are keyed by `events.seq * MODEL_SLOTS + embedding_models.id` in a rowid table
/// (schema version 3): one lookup by integer key, and a 1 KiB vector stored inline in its
/// row. (Version 1 kept them in a WITHOUT ROWID table keyed by text, whose rows cannot hold
/// more than about 1,000 bytes inline on 4 KiB pages, so every vector spilled into an
/// overflow page of its own: 4 KiB on disk and an extra page read per event.)
const MODEL_SLOTS: i64 = 1024;

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

/// Whether the state database of `root` has its tables (a schema version): an init killed
/// at its first SQLite writes leaves an empty file, which `dream init` must finish.
pub fn has_schema(root: &Path) -> bool {
    let Ok(conn) = Connection::open_with_flags(
        path(root),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) else {
        return false;
    };
    conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))
        .is_ok_and(|v| v > 0)
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

    /// Open (creating it) a state database at another path than the repository's: the
    /// new database `dream rebuild` fills before it takes the real one's name.
    pub fn open_at(path: &Path) -> Result<State> {
        let conn = Connection::open(path).context(|| format!("opening {}", path.display()))?;
        let state = State {
            conn,
            path: path.to_path_buf(),
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
        if check_version(&conn, &path)? == 0 {
            return Err(Error::Other(format!(
                "{} holds no tables yet: a `dream init` was interrupted before it made them; run `dream init` again to finish it",
                path.display()
            )));
        }
        Ok(Some(State {
            conn,
            path,
            _scratch: None,
        }))
    }

    /// Start the state transaction a change fills and [`commit`]s at its commit point.
    pub fn begin(&mut self) -> Result<Transaction<'_>> {
        self.conn
            .transaction()
            .context(|| "starting the state transaction".into())
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

/// Count one use of a fact on a day (`recall`, `cited`): use counts live here, never in the
/// agent-facing lines.
pub fn record_use(conn: &Connection, fact: &str, day: chrono::NaiveDate, via: &str) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO uses (fact, day, via, count) VALUES (?1, ?2, ?3, 1)
         ON CONFLICT (fact, day, via) DO UPDATE SET count = count + 1",
    )
    .and_then(|mut s| s.execute(params![fact, day.to_string(), via]))
    .context(|| format!("recording a use of {fact}"))?;
    Ok(())
}

/// Per fact: how many uses, and the last day one was recorded (on or before `until`).
/// Empty when the database predates use counts.
pub fn uses(
    conn: &Connection,
    until: Option<chrono::NaiveDate>,
) -> Result<HashMap<String, (u64, chrono::NaiveDate)>> {
    let has: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'uses'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .context(|| "reading the schema".into())?
        > 0;
    let mut out = HashMap::new();
    if !has {
        return Ok(out);
    }
    let until = until.map_or_else(|| "9999-12-31".to_string(), |d| d.to_string());
    let mut stmt = conn
        .prepare_cached("SELECT fact, SUM(count), MAX(day) FROM uses WHERE day <= ?1 GROUP BY fact")
        .context(|| "reading use counts".into())?;
    let rows = stmt
        .query_map(params![until], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
            ))
        })
        .context(|| "reading use counts".into())?;
    for row in rows {
        let (fact, n, day) = row.context(|| "reading use counts".into())?;
        if let Ok(d) = day.parse() {
            out.insert(fact, (n.max(0) as u64, d));
        }
    }
    Ok(out)
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
    conn.prepare_cached("SELECT hash FROM events WHERE id = ?1")
        .and_then(|mut s| s.query_row([id], |r| r.get(0)).optional())
        .context(|| format!("looking up event {id}"))
}

/// Store a new event.
pub fn insert_event(conn: &Connection, e: &Event, origin: &str, cycle: &str) -> Result<()> {
    insert_event_hashed(conn, e, &e.content_hash(), origin, cycle)
}

/// [`insert_event`] with the content hash already computed (ingest has it from dedupe).
pub fn insert_event_hashed(
    conn: &Connection,
    e: &Event,
    hash: &str,
    origin: &str,
    cycle: &str,
) -> Result<()> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO events (id, ts, ts_epoch, kind, text, session, actor, source, trust, recalled, meta, hash, origin, ingested_cycle, project)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        )
        .context(|| format!("storing event {}", e.id))?;
    stmt.execute(params![
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
        hash,
        origin,
        cycle,
        crate::edges::project::of_meta(e.meta.as_ref()),
    ])
    .context(|| format!("storing event {}", e.id))?;
    // An agent that cites a fact's id used it (ids in recalled text are what dream showed).
    if e.trust == Trust::Agent && !e.recalled && e.text.contains("f_") {
        for id in dream_core::recall::context::cited_ids(&e.text) {
            record_use(conn, &id, e.ts.date_naive(), "cited")?;
        }
    }
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

/// Events by id, in the order asked (unknown ids are left out).
pub fn events_by_ids(conn: &Connection, ids: &[String]) -> Result<Vec<Stored>> {
    events_by(conn, "id", ids)
}

/// Events by row id (`seq`), in the order asked; unknown rows are left out.
pub fn events_by_seq(conn: &Connection, seqs: &[i64]) -> Result<Vec<Stored>> {
    events_by(conn, "seq", seqs)
}

/// Events by a unique key column (`id` or `seq`), one indexed lookup each.
fn events_by<K: rusqlite::ToSql + std::fmt::Display>(
    conn: &Connection,
    column: &str,
    keys: &[K],
) -> Result<Vec<Stored>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE {column} = ?1"
        ))
        .context(|| "reading events".into())?;
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        if let Some(s) = stmt
            .query_row([key], row_to_stored)
            .optional()
            .context(|| format!("reading event {column} {key}"))?
        {
            out.push(s);
        }
    }
    Ok(out)
}

/// The rolling window as clustering sees it: no text, one row per event (recalled events
/// left out), oldest first, each with its cached vector. Built by [`window`]; rows whose
/// vector is not cached yet are zeros and listed in `missing`.
#[derive(Debug, Clone, Default)]
pub struct Window {
    /// Row ids in the events table (for lookups by primary key).
    pub seq: Vec<i64>,
    pub ids: Vec<String>,
    /// Unix seconds.
    pub ts: Vec<i64>,
    /// A cycle has already looked at the event.
    pub reflected: Vec<bool>,
    /// Vector length (0 while no vector is known).
    pub dim: usize,
    /// Row-major, `dim` values per row: one allocation for the whole window.
    pub vectors: Vec<f32>,
    /// Rows whose vector is not in the cache.
    pub missing: Vec<usize>,
    /// The window's tool calls and owner messages, oldest first, as the skills stage needs
    /// them to find procedure instances without reading the window again (untouched by
    /// [`Window::retain`]).
    pub procedure: Vec<ProcedureRow>,
}

impl Window {
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn vector(&self, row: usize) -> &[f32] {
        &self.vectors[row * self.dim..(row + 1) * self.dim]
    }

    /// Put a vector into a row (the first one sets `dim` for a window with none cached).
    pub fn set_vector(&mut self, row: usize, v: &[f32]) -> Result<()> {
        if self.dim == 0 {
            self.dim = v.len();
            self.vectors = vec![0.0; self.len() * self.dim];
        }
        if v.len() != self.dim {
            return Err(Error::Other(format!(
                "the embedder returned a vector of {} values where the window holds {}; clear the embedding cache or fix embed.dim",
                v.len(),
                self.dim
            )));
        }
        self.vectors[row * self.dim..(row + 1) * self.dim].copy_from_slice(v);
        Ok(())
    }

    /// Drop the rows `keep` says no to, in place (no second copy of the vectors).
    pub fn retain(&mut self, keep: impl Fn(usize) -> bool) {
        let mut to = 0;
        for from in 0..self.len() {
            if !keep(from) {
                continue;
            }
            if to != from {
                self.seq[to] = self.seq[from];
                self.ids.swap(to, from);
                self.ts[to] = self.ts[from];
                self.reflected[to] = self.reflected[from];
                if self.dim > 0 {
                    self.vectors
                        .copy_within(from * self.dim..(from + 1) * self.dim, to * self.dim);
                }
            }
            to += 1;
        }
        self.seq.truncate(to);
        self.ids.truncate(to);
        self.ts.truncate(to);
        self.reflected.truncate(to);
        self.vectors.truncate(to * self.dim);
        self.missing.clear();
    }
}

/// The window `from <= ts <= to` with the vectors cached under `model`, in one pass over
/// the time index (no event text is read).
pub fn window(
    conn: &Connection,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    model: &str,
) -> Result<Window> {
    // An embedder with no vector cached yet matches no key.
    let m = model_id(conn, model, false)?.unwrap_or(-1);
    let mut stmt = conn
        .prepare_cached(
            "SELECT e.seq, e.id, e.ts_epoch, e.reflected_cycle IS NOT NULL, v.vec,
                    CASE WHEN e.kind = 'tool_call' THEN 1
                         WHEN e.kind = 'message' AND e.trust = 'owner' THEN 2 ELSE 0 END,
                    CASE WHEN e.kind = 'tool_call' OR (e.kind = 'message' AND e.trust = 'owner')
                         THEN e.session END
             FROM events e LEFT JOIN vectors v ON v.key = e.seq * ?4 + ?3
             WHERE e.ts_epoch BETWEEN ?1 AND ?2 AND e.recalled = 0
             ORDER BY e.ts_epoch, e.seq",
        )
        .context(|| "reading the window".into())?;
    let mut rows = stmt
        .query(params![from.timestamp(), to.timestamp(), m, MODEL_SLOTS])
        .context(|| "reading the window".into())?;
    let mut w = Window::default();
    // Rows met before the first cached vector (while `dim` is unknown).
    let mut before_dim = 0usize;
    while let Some(r) = rows.next().context(|| "reading the window".into())? {
        let row = w.ids.len();
        let seq: i64 = r.get(0).context(|| "reading the window".into())?;
        let reflected: bool = r.get(3).context(|| "reading the window".into())?;
        match r.get::<_, i64>(5).context(|| "reading the window".into())? {
            0 => {}
            code => w.procedure.push(ProcedureRow {
                seq,
                tool_call: code == 1,
                reflected,
                session: r.get(6).context(|| "reading the window".into())?,
            }),
        }
        w.seq.push(seq);
        w.ids
            .push(r.get(1).context(|| "reading the window".into())?);
        w.ts.push(r.get(2).context(|| "reading the window".into())?);
        w.reflected.push(reflected);
        let blob = r.get_ref(4).context(|| "reading the window".into())?;
        match blob.as_blob_or_null().ok().flatten() {
            Some(b)
                if !b.is_empty() && b.len() % 4 == 0 && (w.dim == 0 || b.len() / 4 == w.dim) =>
            {
                if w.dim == 0 {
                    w.dim = b.len() / 4;
                    w.vectors.reserve(w.dim * 1024);
                    w.vectors.resize(before_dim * w.dim, 0.0);
                }
                w.vectors.extend(
                    b.chunks_exact(4)
                        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                );
            }
            _ => {
                w.missing.push(row);
                if w.dim == 0 {
                    before_dim += 1;
                } else {
                    w.vectors.extend(std::iter::repeat_n(0.0, w.dim));
                }
            }
        }
    }
    w.vectors.shrink_to_fit();
    Ok(w)
}

/// True when some event of the window `from <= ts <= to` waits for a cycle to look at it
/// (a cheap probe of the partial index on unreflected events).
pub fn window_has_unreflected(
    conn: &Connection,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<bool> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM events WHERE reflected_cycle IS NULL AND ts_epoch BETWEEN ?1 AND ?2 AND recalled = 0)",
    )
    .and_then(|mut s| s.query_row([from.timestamp(), to.timestamp()], |r| r.get(0)))
    .context(|| "probing the window for unreflected events".into())
}

/// The text of events by row id, in the order asked (for embedding).
pub fn texts_by_seq(conn: &Connection, seqs: &[i64]) -> Result<Vec<String>> {
    let mut stmt = conn
        .prepare_cached("SELECT text FROM events WHERE seq = ?1")
        .context(|| "reading event texts".into())?;
    seqs.iter()
        .map(|seq| {
            stmt.query_row([seq], |r| r.get(0))
                .context(|| format!("reading the text of event row {seq}"))
        })
        .collect()
}

/// Mark events, by row id, as looked at by a cycle.
pub fn mark_reflected_seq(conn: &Connection, seqs: &[i64], cycle: &str) -> Result<()> {
    let mut stmt = conn
        .prepare_cached(
            "UPDATE events SET reflected_cycle = ?2 WHERE seq = ?1 AND reflected_cycle IS NULL",
        )
        .context(|| "marking events reflected".into())?;
    for seq in seqs {
        stmt.execute(params![seq, cycle])
            .context(|| format!("marking event row {seq} reflected"))?;
    }
    Ok(())
}

/// The id of an embedder in the vector cache; `create` adds an unknown one.
pub fn model_id(conn: &Connection, model: &str, create: bool) -> Result<Option<i64>> {
    let found: Option<i64> = conn
        .prepare_cached("SELECT id FROM embedding_models WHERE name = ?1")
        .and_then(|mut s| s.query_row([model], |r| r.get(0)).optional())
        .context(|| format!("looking up embedder {model}"))?;
    if found.is_some() || !create {
        return Ok(found);
    }
    conn.prepare_cached("INSERT INTO embedding_models (name) VALUES (?1)")
        .and_then(|mut s| s.execute([model]))
        .context(|| format!("recording embedder {model}"))?;
    let id = conn.last_insert_rowid();
    if id >= MODEL_SLOTS {
        return Err(Error::Other(format!(
            "the vector cache holds {id} embedders, more than the {MODEL_SLOTS} it can key; this should not happen"
        )));
    }
    Ok(Some(id))
}

/// How many vectors the cache holds per embedder id, most first (embedders with none
/// left out).
pub fn vector_cache(conn: &Connection) -> Result<Vec<(String, u64)>> {
    let mut stmt = conn
        .prepare(
            "SELECT m.name, COUNT(*) FROM vectors v JOIN embedding_models m ON m.id = v.key % ?1
             GROUP BY m.id ORDER BY COUNT(*) DESC, m.name",
        )
        .context(|| "reading the vector cache".into())?;
    let rows = stmt
        .query_map([MODEL_SLOTS], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })
        .context(|| "reading the vector cache".into())?;
    rows.collect::<std::result::Result<_, _>>()
        .context(|| "reading the vector cache".into())
}

/// Cached vectors for these events under an embedder id.
pub fn embeddings(
    conn: &Connection,
    model: &str,
    ids: &[&str],
) -> Result<HashMap<String, Vec<f32>>> {
    let mut out = HashMap::with_capacity(ids.len());
    let Some(m) = model_id(conn, model, false)? else {
        return Ok(out);
    };
    let mut stmt = conn
        .prepare_cached(
            "SELECT v.vec FROM events e JOIN vectors v ON v.key = e.seq * ?3 + ?2 WHERE e.id = ?1",
        )
        .context(|| "reading embeddings".into())?;
    for id in ids {
        let blob: Option<Vec<u8>> = stmt
            .query_row(params![id, m, MODEL_SLOTS], |r| r.get(0))
            .optional()
            .context(|| format!("reading the embedding of {id}"))?;
        if let Some(b) = blob {
            out.insert(id.to_string(), decode_vec(&b));
        }
    }
    Ok(out)
}

/// Store an event's vector by row id under an embedder id from [`model_id`].
pub fn put_vector(conn: &Connection, model_id: i64, seq: i64, v: &[f32]) -> Result<()> {
    conn.prepare_cached("INSERT OR REPLACE INTO vectors (key, vec) VALUES (?1, ?2)")
        .and_then(|mut s| s.execute(params![seq * MODEL_SLOTS + model_id, encode_vec(v)]))
        .context(|| format!("storing the vector of event row {seq}"))?;
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

/// Quarantine text as it may be shown: redacted again on the way out, so a row stored by
/// an older dream (whose reasons echoed a bad field's value) never shows a secret.
fn shown(text: String) -> String {
    dream_core::sources::secrets::shown(&text, 500)
}

/// [`shown`] for an excerpt, which also masks random-looking runs.
fn shown_excerpt(text: String) -> String {
    dream_core::sources::secrets::quarantine_excerpt(&text, 500)
}

/// The latest quarantined lines, newest first.
pub fn quarantined(conn: &Connection, limit: usize) -> Result<Vec<Quarantined>> {
    let mut stmt = conn
        .prepare("SELECT file, line, offset, reason, excerpt, hash FROM quarantine ORDER BY seq DESC LIMIT ?1")
        .context(|| "reading quarantine".into())?;
    let rows = stmt
        .query_map([limit as i64], |r| {
            Ok(Quarantined {
                file: shown(r.get(0)?),
                line: r.get::<_, i64>(1)? as u64,
                offset: r.get::<_, i64>(2)? as u64,
                reason: shown(r.get(3)?),
                excerpt: shown_excerpt(r.get(4)?),
                hash: r.get(5)?,
            })
        })
        .context(|| "reading quarantine".into())?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .context(|| "reading quarantine".into())
}

fn count(conn: &Connection, sql: &str) -> Result<u64> {
    conn.query_row(sql, [], |r| r.get::<_, i64>(0))
        .map(|n| n as u64)
        .context(|| "counting rows".into())
}

/// How many events the state holds.
pub fn events_stored(conn: &Connection) -> Result<u64> {
    count(conn, "SELECT COUNT(*) FROM events")
}

/// How many stored events no reflect call has shown yet.
pub fn events_unreflected(conn: &Connection) -> Result<u64> {
    count(
        conn,
        "SELECT COUNT(*) FROM events WHERE reflected_cycle IS NULL",
    )
}

/// How many lines are in quarantine.
pub fn quarantined_count(conn: &Connection) -> Result<u64> {
    count(conn, "SELECT COUNT(*) FROM quarantine")
}

/// Stored events by kind (`message`, `paste`, `tool_result`, ...), counted.
pub fn events_by_kind(conn: &Connection) -> Result<std::collections::BTreeMap<String, usize>> {
    let mut stmt = conn
        .prepare("SELECT kind, COUNT(*) FROM events GROUP BY kind")
        .context(|| "counting events".into())?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .context(|| "counting events".into())?;
    let mut events = std::collections::BTreeMap::new();
    for r in rows {
        let (k, n) = r.context(|| "counting events".into())?;
        events.insert(k, n as usize);
    }
    Ok(events)
}

/// Whether the state holds the `vetoes` table (a state database older than the vetoes
/// does not).
pub fn has_vetoes(conn: &Connection) -> bool {
    conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'vetoes'",
        [],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .unwrap_or(false)
}

/// The schema version the database at hand says (`PRAGMA user_version`; 0 when it cannot
/// be read).
pub fn schema_version(conn: &Connection) -> i64 {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap_or(0)
}

/// SQLite's own integrity check, stopped at the first problem: `ok`, or what is wrong.
pub fn integrity(conn: &Connection) -> String {
    conn.query_row("PRAGMA quick_check(1)", [], |r| r.get(0))
        .unwrap_or_else(|e| e.to_string())
}

/// What is wrong with the state database at `path`, opened read-only and checked whole;
/// `None` when it checks as sound.
pub fn damage(path: &Path) -> Option<String> {
    let conn = match Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) {
        Ok(c) => c,
        Err(e) => return Some(e.to_string()),
    };
    match conn.query_row("PRAGMA quick_check", [], |r| r.get::<_, String>(0)) {
        Ok(s) if s == "ok" => None,
        Ok(s) => Some(s),
        Err(e) => Some(e.to_string()),
    }
}

/// Move everything the write-ahead log holds into the database file and empty the log, so
/// the file alone is the database; `what` names the write for an error.
pub fn checkpoint(conn: &Connection, what: &str) -> Result<()> {
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .context(|| what.into())
}

/// Drop a state transaction's changes (a dry run's); `what` names it for an error.
pub fn rollback(tx: Transaction<'_>, what: &str) -> Result<()> {
    tx.rollback().context(|| what.into())
}

/// Commit a state transaction, the crash point `commit the state` first; `what` names the
/// commit for an error (`committing the vetoes`).
pub fn commit(tx: Transaction<'_>, what: &str) -> Result<()> {
    crate::edges::crash::point("commit the state").context(|| what.into())?;
    tx.commit().context(|| what.into())
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

/// Record a finished cycle: its report, and the report's essentials for the heartbeat
/// (`heartbeat::essentials`).
pub fn put_cycle(conn: &Connection, c: &CycleRecord) -> Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO cycles (id, kind, started, finished, now, report, heartbeat) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            c.id,
            c.kind,
            c.started.to_rfc3339(),
            c.finished.to_rfc3339(),
            c.now.to_rfc3339(),
            c.report.to_string(),
            dream_core::operations::heartbeat::essentials(&c.report).to_string()
        ],
    )
    .context(|| format!("recording cycle {}", c.id))?;
    Ok(())
}

/// A `cycles` row (id, kind, started, finished, now, report) as a record.
fn cycle_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<CycleRecord> {
    let time = |s: String| {
        DateTime::parse_from_rfc3339(&s)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    };
    Ok(CycleRecord {
        id: r.get(0)?,
        kind: r.get(1)?,
        started: time(r.get(2)?),
        finished: time(r.get(3)?),
        now: time(r.get(4)?),
        report: serde_json::from_str(&r.get::<_, String>(5)?).unwrap_or_default(),
    })
}

/// Whether a cycle with this id has been recorded with commits (something `undo --cycle`
/// would revert, so a second run must not share its id).
pub fn cycle_committed(conn: &Connection, id: &str) -> Result<bool> {
    let report: Option<String> = conn
        .query_row("SELECT report FROM cycles WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()
        .context(|| "reading cycles".into())?;
    Ok(report.is_some_and(|r| {
        serde_json::from_str::<serde_json::Value>(&r)
            .map(|v| v["commits"].as_array().is_none_or(|c| !c.is_empty()))
            .unwrap_or(true)
    }))
}

pub fn recent_cycles(conn: &Connection, limit: usize) -> Result<Vec<CycleRecord>> {
    let mut stmt = conn
        .prepare("SELECT id, kind, started, finished, now, report FROM cycles ORDER BY finished DESC LIMIT ?1")
        .context(|| "reading cycles".into())?;
    let rows = stmt
        .query_map([limit as i64], cycle_record)
        .context(|| "reading cycles".into())?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .context(|| "reading cycles".into())
}

/// Cycle records looked back through for what a cycle carries to the next (calibration,
/// failed reflect calls): enough for a model used now and then.
const LOOKBACK_CYCLES: i64 = 60;

/// The tokenizer calibration (ratio of reported to plain estimated prompt tokens) the
/// latest of the recent cycles recorded for this provider key, if any.
pub fn last_calibration(conn: &Connection, key: &str) -> Result<Option<f64>> {
    conn.query_row(
        "SELECT json_extract(report, '$.tokens.calibration.ratio') FROM
           (SELECT report, finished FROM cycles ORDER BY finished DESC LIMIT ?2)
         WHERE json_extract(report, '$.tokens.calibration.model') = ?1
         ORDER BY finished DESC LIMIT 1",
        params![key, LOOKBACK_CYCLES],
        |r| r.get::<_, Option<f64>>(0),
    )
    .optional()
    .map(Option::flatten)
    .context(|| "reading the last token calibration".into())
}

/// The reflect calls the latest cycle that reflected recorded as failing in a way that
/// would repeat (`window.failures` of its report).
pub fn last_reflect_failures(conn: &Connection) -> Result<Vec<dream_core::llm::plan::Failure>> {
    let text: Option<String> = conn
        .query_row(
            "SELECT json_extract(report, '$.window.failures') FROM
               (SELECT report, finished FROM cycles ORDER BY finished DESC LIMIT ?1)
             WHERE json_type(report, '$.window.failures') = 'array'
             ORDER BY finished DESC LIMIT 1",
            params![LOOKBACK_CYCLES],
            |r| r.get(0),
        )
        .optional()
        .context(|| "reading the last cycle's failed reflect calls".into())?;
    Ok(text
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default())
}

/// The stages the last recorded cycle reported degraded (`degraded[].stage`): a pass that
/// degraded reviewed nothing, so the next cycle shows it every fact again.
pub fn last_degraded_stages(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn
        .prepare(
            "SELECT json_extract(d.value, '$.stage') FROM
               (SELECT report FROM cycles ORDER BY finished DESC LIMIT 1) c,
               json_each(c.report, '$.degraded') d",
        )
        .context(|| "reading the last cycle's degraded stages".into())?;
    let rows = stmt
        .query_map([], |r| r.get::<_, Option<String>>(0))
        .context(|| "reading the last cycle's degraded stages".into())?;
    let mut out = Vec::new();
    for r in rows {
        if let Some(s) = r.context(|| "reading the last cycle's degraded stages".into())? {
            out.push(s);
        }
    }
    Ok(out)
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
    // Once per proposal in a cycle (thousands in a heavy one): the statement is kept.
    conn.prepare_cached(
        "INSERT OR REPLACE INTO candidates (id, cycle, route, text, record) VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .and_then(|mut s| s.execute(params![id, cycle, route, text, record.to_string()]))
    .context(|| format!("recording candidate {id}"))?;
    Ok(())
}

/// Candidate records with this id (`k_...`), newest first: (cycle, route, record).
pub fn candidate_records(
    conn: &Connection,
    id: &str,
) -> Result<Vec<(String, String, serde_json::Value)>> {
    candidates_where(conn, "id = ?1", id)
}

/// Candidate records whose route ended at `target` (a fact or card id), newest first.
pub fn candidates_targeting(
    conn: &Connection,
    target: &str,
) -> Result<Vec<(String, String, serde_json::Value)>> {
    candidates_where(conn, "json_extract(record, '$.target') = ?1", target)
}

/// Every candidate record, oldest cycle first: (id, cycle, route, record).
pub fn all_candidates(
    conn: &Connection,
) -> Result<Vec<(String, String, String, serde_json::Value)>> {
    let mut stmt = conn
        .prepare("SELECT id, cycle, route, record FROM candidates ORDER BY cycle, id")
        .context(|| "reading the candidate records".into())?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                serde_json::from_str(&r.get::<_, String>(3)?).unwrap_or_default(),
            ))
        })
        .context(|| "reading the candidate records".into())?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .context(|| "reading the candidate records".into())
}

fn candidates_where(
    conn: &Connection,
    condition: &str,
    arg: &str,
) -> Result<Vec<(String, String, serde_json::Value)>> {
    let mut stmt = conn
        .prepare(&format!(
            "SELECT cycle, route, record FROM candidates WHERE {condition} ORDER BY cycle DESC"
        ))
        .context(|| "reading candidates".into())?;
    let rows = stmt
        .query_map([arg], |r| {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: &str, ts: &str, text: &str) -> Event {
        dream_core::sources::event::parse_line(
            serde_json::json!({"id": id, "ts": ts, "kind": "message", "text": text})
                .to_string()
                .as_bytes(),
            1 << 20,
        )
        .unwrap()
        .event
    }

    #[test]
    fn a_database_from_before_scope_and_backfill_migrates_and_its_events_have_no_project() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.sqlite");
        let conn = Connection::open(&path).unwrap();
        // The schema as it was before the backfill's marks and the events' projects.
        let before = MIGRATIONS.len() - 2;
        for (n, sql) in MIGRATIONS[..before].iter().enumerate() {
            conn.execute_batch(&format!(
                "BEGIN;\n{sql}\nPRAGMA user_version = {};\nCOMMIT;",
                n + 1
            ))
            .unwrap();
        }
        conn.execute(
            "INSERT INTO events (id, ts, ts_epoch, kind, text, trust, hash, origin, ingested_cycle)
             VALUES ('old', '2026-11-02T09:00:00Z', 1793610000, 'message', 'x', 'owner', 'h', 'test', 'c1')",
            [],
        )
        .unwrap();
        migrate(&conn, &path).unwrap();
        let e = serde_json::json!({"id": "new", "ts": "2026-11-03T09:00:00Z", "kind": "message",
            "text": "y", "meta": {"cwd": "/no/such/project/"}});
        let e = dream_core::sources::event::parse_line(e.to_string().as_bytes(), 1 << 20)
            .unwrap()
            .event;
        insert_event(&conn, &e, "test", "c2").unwrap();
        let got = projects_of(&conn, &["old".into(), "new".into()]).unwrap();
        assert_eq!(got.len(), 1, "the old event's project is unknown: {got:?}");
        assert_eq!(got["new"], "/no/such/project");
        assert_eq!(mark(&conn, "backfill").unwrap(), None);
        put_mark(&conn, "backfill", 42, Utc::now()).unwrap();
        assert_eq!(mark(&conn, "backfill").unwrap(), Some(42));
    }

    #[test]
    fn version_one_embeddings_move_to_the_vector_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "BEGIN;\n{}\nPRAGMA user_version = 1;\nCOMMIT;",
            MIGRATIONS[0]
        ))
        .unwrap();
        let e = event("e1", "2026-11-02T09:00:00Z", "I live in Lisbon.");
        // The row as version 1 stored it (today's insert names later columns).
        conn.execute(
            "INSERT INTO events (id, ts, ts_epoch, kind, text, trust, hash, origin, ingested_cycle)
             VALUES (?1, ?2, ?3, 'message', ?4, 'owner', 'h', 'test', 'c1')",
            params![e.id, "2026-11-02T09:00:00Z", e.ts.timestamp(), e.text],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO embeddings (event_id, model, vec) VALUES ('e1', 'builtin-v1-4', ?1)",
            [encode_vec(&[0.5, 0.5, 0.5, 0.5])],
        )
        .unwrap();
        migrate(&conn, &path).unwrap();
        let got = embeddings(&conn, "builtin-v1-4", &["e1", "nope"]).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got["e1"], vec![0.5, 0.5, 0.5, 0.5]);
        let from = "2026-11-01T00:00:00Z".parse().unwrap();
        let to = "2026-11-03T00:00:00Z".parse().unwrap();
        let w = window(&conn, from, to, "builtin-v1-4").unwrap();
        assert_eq!((w.len(), w.dim, w.missing.len()), (1, 4, 0));
        assert_eq!(w.vector(0), &[0.5, 0.5, 0.5, 0.5]);
        let other = window(&conn, from, to, "another-model").unwrap();
        assert_eq!((other.dim, other.missing), (0, vec![0]));
    }

    #[test]
    fn the_window_reads_vectors_in_time_order_and_lists_the_missing() {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("s.sqlite")).unwrap();
        migrate(&conn, &dir.path().join("s.sqlite")).unwrap();
        for (id, ts) in [
            ("b", "2026-11-02T10:00:00Z"),
            ("a", "2026-11-02T09:00:00Z"),
            ("old", "2026-10-01T09:00:00Z"),
        ] {
            insert_event(&conn, &event(id, ts, "text"), "test", "c1").unwrap();
        }
        let m = model_id(&conn, "m", true).unwrap().unwrap();
        let seq: i64 = conn
            .query_row("SELECT seq FROM events WHERE id = 'b'", [], |r| r.get(0))
            .unwrap();
        put_vector(&conn, m, seq, &[1.0, 0.0]).unwrap();
        let w = window(
            &conn,
            "2026-11-01T00:00:00Z".parse().unwrap(),
            "2026-11-03T00:00:00Z".parse().unwrap(),
            "m",
        )
        .unwrap();
        assert_eq!(
            w.ids,
            vec!["a", "b"],
            "oldest first, the old event left out"
        );
        assert_eq!(w.missing, vec![0]);
        assert_eq!(w.vector(1), &[1.0, 0.0]);
        assert_eq!(
            w.vector(0),
            &[0.0, 0.0],
            "a missing vector reads as zeros until embedded"
        );
        let mut w = w;
        w.retain(|i| i == 1);
        assert_eq!(
            (w.ids.clone(), w.vectors.clone()),
            (vec!["b".to_string()], vec![1.0, 0.0])
        );
    }
}

/// The latest cycle of a kind whose clock was at or before `at` (for the digest: "what the
/// last evening cycle did"; for the heartbeat: when it last finished). Replays with `--now` keep their own order: a cycle replayed at
/// an earlier clock is not "last" for a later one. (`now` is stored as UTC RFC 3339 text,
/// which sorts as time.)
pub fn last_cycle_of_kind(
    conn: &Connection,
    kind: &str,
    at: DateTime<Utc>,
) -> Result<Option<CycleRecord>> {
    conn.query_row(
        "SELECT id, kind, started, finished, now, report FROM cycles WHERE kind = ?1 AND now <= ?2
         ORDER BY now DESC, finished DESC LIMIT 1",
        params![kind, at.to_rfc3339()],
        cycle_record,
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
                    file: shown(r.get(0)?),
                    line: r.get::<_, i64>(1)? as u64,
                    offset: r.get::<_, i64>(2)? as u64,
                    reason: shown(r.get(3)?),
                    excerpt: shown_excerpt(r.get(4)?),
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

/// Replace `needle` with `replacement` in every text the state holds (events, quarantine,
/// candidates, cycle records, vetoes), then rewrite the file so no free page keeps the old
/// bytes (`dream purge`). Returns the rows changed.
pub fn purge(conn: &mut Connection, needle: &str, replacement: &str) -> Result<usize> {
    const COLUMNS: &[(&str, &[&str])] = &[
        (
            "events",
            &["text", "session", "actor", "source", "meta", "origin"],
        ),
        ("quarantine", &["file", "reason", "excerpt"]),
        ("candidates", &["text", "record"]),
        ("cycles", &["report"]),
        ("vetoes", &["text", "reason", "events"]),
        ("watermarks", &["file"]),
        ("quiz", &["outcome"]),
    ];
    let tx = conn
        .transaction()
        .context(|| "starting the state transaction".into())?;
    let mut changed = 0;
    for (table, cols) in COLUMNS {
        for col in *cols {
            changed += tx
                .execute(
                    &format!("UPDATE {table} SET {col} = replace({col}, ?1, ?2) WHERE instr({col}, ?1) > 0"),
                    params![needle, replacement],
                )
                .context(|| format!("purging {table}.{col}"))?;
        }
    }
    crate::edges::crash::point("commit the state").context(|| "purging the state".into())?;
    tx.commit().context(|| "purging the state".into())?;
    conn.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
        .context(|| "compacting the state after the purge".into())
        .map_err(Error::partial(format!(
            "the state's rows were purged ({changed}), but its file still has free pages that may hold the old bytes"
        )))?;
    Ok(changed)
}

/// How many state rows hold `needle` (what a purge would change).
pub fn count_containing(conn: &Connection, needle: &str) -> Result<usize> {
    let mut n = 0;
    for (table, cols) in [
        ("events", "text || coalesce(session,'') || coalesce(actor,'') || coalesce(source,'') || coalesce(meta,'')"),
        ("quarantine", "file || reason || excerpt"),
        ("candidates", "text || record"),
        ("cycles", "report"),
        ("vetoes", "text || reason || events"),
        ("quiz", "outcome"),
    ] {
        let c: i64 = conn
            .query_row(
                &format!("SELECT COUNT(*) FROM {table} WHERE instr({cols}, ?1) > 0"),
                [needle],
                |r| r.get(0),
            )
            .context(|| format!("reading {table}"))?;
        n += c as usize;
    }
    Ok(n)
}

/// Record in the transaction that the commit `target` is published (the commit point of a
/// journaled change); only the latest hundred are kept (recovery needs the last one).
pub fn put_applied(conn: &Connection, target: &str, kind: &str, at: DateTime<Utc>) -> Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO applied (target, kind, at) VALUES (?1, ?2, ?3)",
        params![target, kind, at.to_rfc3339()],
    )
    .and_then(|_| {
        conn.execute(
            "DELETE FROM applied WHERE rowid NOT IN (SELECT rowid FROM applied ORDER BY rowid DESC LIMIT 100)",
            [],
        )
    })
    .context(|| format!("recording commit {target}"))?;
    Ok(())
}

/// Whether the state recorded the commit `target` as published.
pub fn is_applied(conn: &Connection, target: &str) -> Result<bool> {
    conn.query_row("SELECT 1 FROM applied WHERE target = ?1", [target], |_| {
        Ok(())
    })
    .optional()
    .map(|r| r.is_some())
    .context(|| format!("looking up commit {target}"))
}

/// Record a person's veto (a rejected card or an undone fact) with the events it had.
pub fn put_veto(conn: &Connection, v: &dream_core::selection::veto::Veto) -> Result<()> {
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
pub fn vetoes(conn: &Connection) -> Result<Vec<dream_core::selection::veto::Veto>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, kind, text, events, reason, at, decision FROM vetoes ORDER BY at, id",
        )
        .context(|| "reading vetoes".into())?;
    let rows = stmt
        .query_map([], |r| {
            Ok(dream_core::selection::veto::Veto {
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

/// Cards waiting for room in the review queue, best first (the most salient, then the
/// oldest). A row that no longer parses as a card (written by another version) is left out
/// and named in the second list.
pub fn waiting(conn: &Connection) -> Result<(Vec<dream_core::schema::Card>, Vec<String>)> {
    let mut stmt = conn
        .prepare_cached("SELECT id, card FROM waiting ORDER BY salience DESC, updated, id")
        .context(|| "reading the waiting cards".into())?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .context(|| "reading the waiting cards".into())?;
    let mut cards = Vec::new();
    let mut bad = Vec::new();
    for row in rows {
        let (id, text) = row.context(|| "reading the waiting cards".into())?;
        match serde_json::from_str(&text) {
            Ok(c) => cards.push(c),
            Err(e) => bad.push(format!("{id}: {e}")),
        }
    }
    Ok((cards, bad))
}

/// How many cards wait for room in the review queue (0 for a database no cycle of this
/// version has migrated yet).
pub fn waiting_count(conn: &Connection) -> Result<usize> {
    let exists: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'waiting')",
            [],
            |r| r.get(0),
        )
        .context(|| "looking for the waiting cards".into())?;
    if !exists {
        return Ok(0);
    }
    conn.query_row("SELECT COUNT(*) FROM waiting", [], |r| r.get::<_, i64>(0))
        .map(|n| n as usize)
        .context(|| "counting the waiting cards".into())
}

/// Keep a card waiting (or update the one waiting with its id).
pub fn put_waiting(conn: &Connection, card: &dream_core::schema::Card) -> Result<()> {
    let salience = dream_core::selection::keep::recorded(&card.gates).map(f64::from);
    conn.prepare_cached(
        "INSERT OR REPLACE INTO waiting (id, card, salience, updated) VALUES (?1, ?2, ?3, ?4)",
    )
    .and_then(|mut st| {
        st.execute(params![
            card.id,
            serde_json::to_string(card).unwrap_or_default(),
            salience,
            card.updated.to_rfc3339()
        ])
    })
    .context(|| format!("keeping card {} waiting", card.id))?;
    Ok(())
}

/// A card no longer waits (it was queued, decided by the facts, or expired).
pub fn delete_waiting(conn: &Connection, id: &str) -> Result<()> {
    conn.prepare_cached("DELETE FROM waiting WHERE id = ?1")
        .and_then(|mut st| st.execute([id]))
        .context(|| format!("removing waiting card {id}"))?;
    Ok(())
}

/// Record that a cycle at `now` read `source`, and whether it grew (a new line was read).
/// A replay at an earlier clock never moves the dates back.
pub fn put_source_growth(
    conn: &Connection,
    name: &str,
    now: DateTime<Utc>,
    grew: bool,
) -> Result<()> {
    let at = now.to_rfc3339();
    conn.execute(
        "INSERT INTO sources (name, first_seen, last_grew) VALUES (?1, ?2, NULL)
         ON CONFLICT(name) DO UPDATE SET first_seen = MIN(first_seen, excluded.first_seen)",
        params![name, at],
    )
    .context(|| format!("recording source {name}"))?;
    if grew {
        conn.execute(
            "UPDATE sources SET last_grew = ?2 WHERE name = ?1 AND (last_grew IS NULL OR last_grew < ?2)",
            params![name, at],
        )
        .context(|| format!("recording source {name}"))?;
    }
    Ok(())
}

/// A source as recorded: its name, when a cycle first read it, when one last read a line.
pub type SourceSeen = (String, DateTime<Utc>, Option<DateTime<Utc>>);

/// Every source a cycle has read. A database no cycle of this version has migrated yet
/// (read only, by `dream status`) has none.
pub fn sources_seen(conn: &Connection) -> Result<Vec<SourceSeen>> {
    let exists: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sources')",
            [],
            |r| r.get(0),
        )
        .context(|| "reading sources".into())?;
    if !exists {
        return Ok(Vec::new());
    }
    let parse = |s: String| {
        DateTime::parse_from_rfc3339(&s)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    };
    let mut stmt = conn
        .prepare("SELECT name, first_seen, last_grew FROM sources ORDER BY name")
        .context(|| "reading sources".into())?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                parse(r.get(1)?),
                r.get::<_, Option<String>>(2)?.map(parse),
            ))
        })
        .context(|| "reading sources".into())?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .context(|| "reading sources".into())
}

/// The clock of the latest cycle of a kind at or before `at` (for the heartbeat: when it
/// last finished), without reading its report.
pub fn last_clock_of_kind(
    conn: &Connection,
    kind: &str,
    at: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>> {
    let s: Option<String> = conn
        .query_row(
            "SELECT MAX(now) FROM cycles WHERE kind = ?1 AND now <= ?2",
            params![kind, at.to_rfc3339()],
            |r| r.get(0),
        )
        .context(|| format!("reading the last {kind} cycle"))?;
    Ok(s.and_then(|s| DateTime::parse_from_rfc3339(&s).ok())
        .map(|t| t.with_timezone(&Utc)))
}

/// The latest cycles whose clock was at or before `at`, newest first, each with the part
/// of its report the heartbeat reads (`heartbeat::essentials`), stored with it; for cycles
/// recorded before that column existed, SQLite cuts the report down the same way.
pub fn cycles_until(
    conn: &Connection,
    at: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<CycleRecord>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, kind, started, finished, now, COALESCE(heartbeat, json_object(
                'plan', json_extract(report, '$.plan'),
                'window', json_extract(report, '$.window'),
                'candidates', json_extract(report, '$.candidates'),
                'tokens', json_extract(report, '$.tokens'),
                'degraded', json_extract(report, '$.degraded'),
                'ingest', json_object('new_events', json_extract(report, '$.ingest.new_events')),
                'skills', json_object('drafted', json_extract(report, '$.skills.drafted'),
                                      'queued', json_extract(report, '$.skills.queued')),
                'episodes', json_extract(report, '$.episodes'),
                'episodes_lines', json_extract(report, '$.episodes_lines'),
                'digest', json_extract(report, '$.digest'),
                'passes', (SELECT json_group_array(json_object('held', json_extract(p.value, '$.held')))
                           FROM json_each(report, '$.passes') AS p),
                'decisions', (SELECT json_group_array(json_object('route', 'refused',
                                                                  'gate', json_extract(d.value, '$.gate')))
                              FROM json_each(report, '$.decisions') AS d
                              WHERE json_extract(d.value, '$.route') = 'refused')))
             FROM cycles WHERE now <= ?1 ORDER BY now DESC, finished DESC LIMIT ?2",
        )
        .context(|| "reading cycles".into())?;
    let rows = stmt
        .query_map(params![at.to_rfc3339(), limit as i64], cycle_record)
        .context(|| "reading cycles".into())?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .context(|| "reading cycles".into())
}

/// A named position the cycle keeps (`marks`), if set.
pub fn mark(conn: &Connection, name: &str) -> Result<Option<i64>> {
    conn.query_row("SELECT value FROM marks WHERE name = ?1", [name], |r| {
        r.get(0)
    })
    .optional()
    .context(|| format!("reading the {name} mark"))
}

/// Set a named position (in the cycle's transaction).
pub fn put_mark(conn: &Connection, name: &str, value: i64, now: DateTime<Utc>) -> Result<()> {
    conn.execute(
        "INSERT INTO marks (name, value, updated) VALUES (?1, ?2, ?3)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated = excluded.updated",
        params![name, value, now.to_rfc3339()],
    )
    .map(|_| ())
    .context(|| format!("recording the {name} mark"))
}

/// Forget a named position.
pub fn delete_mark(conn: &Connection, name: &str) -> Result<()> {
    conn.execute("DELETE FROM marks WHERE name = ?1", [name])
        .map(|_| ())
        .context(|| format!("clearing the {name} mark"))
}

/// The time (epoch seconds) of the oldest event with `from <= ts < before` that no cycle has
/// looked at (recalled text aside), through the index of unreflected events.
pub fn oldest_unreflected(conn: &Connection, from: i64, before: i64) -> Result<Option<i64>> {
    conn.query_row(
        "SELECT MIN(ts_epoch) FROM events WHERE reflected_cycle IS NULL AND recalled = 0
         AND ts_epoch >= ?1 AND ts_epoch < ?2",
        [from, before],
        |r| r.get(0),
    )
    .context(|| "finding the oldest event not yet reflected on".into())
}

/// How many events with `ts < before` no cycle has looked at (recalled text aside), and
/// the oldest one's time (epoch seconds).
pub fn unreflected_before(conn: &Connection, before: i64) -> Result<(u64, Option<i64>)> {
    conn.query_row(
        "SELECT COUNT(*), MIN(ts_epoch) FROM events WHERE reflected_cycle IS NULL
         AND recalled = 0 AND ts_epoch < ?1",
        [before],
        |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)),
    )
    .context(|| "counting events older than the window not yet reflected on".into())
}

/// The project each of these events was said in, where it is known (events stored before
/// project scope, and events with no working folder, have none).
pub fn projects_of(conn: &Connection, ids: &[String]) -> Result<HashMap<String, String>> {
    let mut stmt = conn
        .prepare_cached("SELECT project FROM events WHERE id = ?1 AND project IS NOT NULL")
        .context(|| "reading events' projects".into())?;
    let mut out = HashMap::new();
    for id in ids {
        let p: Option<String> = stmt
            .query_row([id], |r| r.get(0))
            .optional()
            .context(|| format!("reading the project of event {id}"))?;
        if let Some(p) = p {
            out.insert(id.clone(), p);
        }
    }
    Ok(out)
}

/// Record a cycle's quiz, one row per question (a rerun of the same cycle replaces them).
pub fn put_quiz(
    conn: &Connection,
    cycle: &str,
    at: DateTime<Utc>,
    outcomes: &[dream_core::recall::quiz::Outcome],
) -> Result<()> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT OR REPLACE INTO quiz (cycle, fact, expect, passed, at, outcome) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .context(|| "recording the quiz".into())?;
    for o in outcomes {
        let expect = serde_json::to_value(o.question.expect).unwrap_or_default();
        stmt.execute(params![
            cycle,
            o.question.fact,
            expect.as_str().unwrap_or_default(),
            o.passed,
            at.to_rfc3339(),
            serde_json::to_string(o).unwrap_or_default()
        ])
        .context(|| "recording the quiz".into())?;
    }
    Ok(())
}

/// The quiz questions asked about `fact`, newest first, at most `limit`: (cycle, when,
/// outcome). Empty when the database predates the quiz.
pub fn quiz_of_fact(
    conn: &Connection,
    fact: &str,
    limit: usize,
) -> Result<Vec<(String, String, dream_core::recall::quiz::Outcome)>> {
    let has: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'quiz'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .context(|| "reading the schema".into())?
        > 0;
    if !has {
        return Ok(Vec::new());
    }
    let mut stmt = conn
        .prepare("SELECT cycle, at, outcome FROM quiz WHERE fact = ?1 ORDER BY at DESC, cycle DESC LIMIT ?2")
        .context(|| "reading the quiz".into())?;
    let rows = stmt
        .query_map(params![fact, limit as i64], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })
        .context(|| "reading the quiz".into())?;
    let mut out = Vec::new();
    for row in rows {
        let (cycle, at, json) = row.context(|| "reading the quiz".into())?;
        if let Ok(o) = serde_json::from_str(&json) {
            out.push((cycle, at, o));
        }
    }
    Ok(out)
}

/// How far the dreamer ingested one member's branch (`members`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberMark {
    pub machine: String,
    pub person: Option<String>,
    /// The last commit of the member's branch whose events are stored.
    pub commit: String,
    /// Events taken in from this member, all told.
    pub events: i64,
    /// The time of the newest event it shipped (RFC 3339).
    pub last_event: Option<String>,
    pub updated: String,
}

/// One member's mark, if its branch was ever ingested.
pub fn member_mark(conn: &Connection, machine: &str) -> Result<Option<MemberMark>> {
    Ok(member_marks(conn)?
        .into_iter()
        .find(|m| m.machine == machine))
}

/// Every member's mark, by machine.
pub fn member_marks(conn: &Connection) -> Result<Vec<MemberMark>> {
    let ctx = || "reading the members' marks".to_string();
    let mut stmt = conn
        .prepare_cached(
            "SELECT machine, person, commit_id, events, last_event, updated FROM members ORDER BY machine",
        )
        .context(ctx)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(MemberMark {
                machine: r.get(0)?,
                person: r.get(1)?,
                commit: r.get(2)?,
                events: r.get(3)?,
                last_event: r.get(4)?,
                updated: r.get(5)?,
            })
        })
        .context(ctx)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().context(ctx)
}

/// Record a member's mark (in the transaction that stored its events).
pub fn put_member_mark(conn: &Connection, m: &MemberMark) -> Result<()> {
    conn.execute(
        "INSERT INTO members (machine, person, commit_id, events, last_event, updated)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (machine) DO UPDATE SET person = excluded.person, commit_id = excluded.commit_id,
           events = excluded.events, last_event = excluded.last_event, updated = excluded.updated",
        params![m.machine, m.person, m.commit, m.events, m.last_event, m.updated],
    )
    .map(|_| ())
    .context(|| format!("recording how far {}'s events were taken in", m.machine))
}

/// The last fetch or push: when it was tried, when it last got through, and what stopped
/// the last try (none when it got through).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemoteLog {
    pub what: String,
    pub tried: String,
    pub done: Option<String>,
    pub problem: Option<String>,
}

/// Record a fetch or push tried now (`problem`: none when it got through).
pub fn put_remote_log(
    conn: &Connection,
    what: &str,
    problem: Option<&str>,
    now: DateTime<Utc>,
) -> Result<()> {
    let now = now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    conn.execute(
        "INSERT INTO remote_log (what, tried, done, problem) VALUES (?1, ?2, CASE WHEN ?3 IS NULL THEN ?2 END, ?3)
         ON CONFLICT (what) DO UPDATE SET tried = excluded.tried,
           done = COALESCE(excluded.done, remote_log.done), problem = excluded.problem",
        params![what, now, problem],
    )
    .map(|_| ())
    .context(|| format!("recording the last {what}"))
}

/// The last fetch and push, if any was tried.
pub fn remote_logs(conn: &Connection) -> Result<Vec<RemoteLog>> {
    let ctx = || "reading the last fetch and push".to_string();
    let mut stmt = conn
        .prepare_cached("SELECT what, tried, done, problem FROM remote_log ORDER BY what")
        .context(ctx)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(RemoteLog {
                what: r.get(0)?,
                tried: r.get(1)?,
                done: r.get(2)?,
                problem: r.get(3)?,
            })
        })
        .context(ctx)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().context(ctx)
}

/// Up to `limit` events stored after sequence number `after`, oldest first, each with its
/// sequence number and project: what a member ships next.
pub fn events_after(
    conn: &Connection,
    after: i64,
    limit: usize,
) -> Result<Vec<(i64, Event, Option<String>)>> {
    let ctx = || "reading the events to ship".to_string();
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {EVENT_COLUMNS}, seq, project FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2"
        ))
        .context(ctx)?;
    let rows = stmt
        .query_map(params![after, limit as i64], |r| {
            Ok((r.get::<_, i64>(11)?, row_to_stored(r)?.event, r.get(12)?))
        })
        .context(ctx)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().context(ctx)
}

/// How many events are stored after sequence number `after` (what waits to be shipped).
pub fn count_after(conn: &Connection, after: i64) -> Result<i64> {
    conn.query_row("SELECT COUNT(*) FROM events WHERE seq > ?1", [after], |r| {
        r.get(0)
    })
    .context(|| "counting the events to ship".into())
}

/// Store a member's decision as taken in (a decision seen before is left as it is).
pub fn put_decision(
    conn: &Connection,
    d: &dream_core::operations::machines::Decision,
) -> Result<()> {
    let json = serde_json::to_string(d).unwrap_or_default();
    conn.execute(
        "INSERT OR IGNORE INTO decisions (id, decision, at) VALUES (?1, ?2, ?3)",
        params![d.id, json, d.at],
    )
    .map(|_| ())
    .context(|| format!("storing decision {}", d.id))
}

/// The members' decisions not yet applied, oldest first.
pub fn pending_decisions(
    conn: &Connection,
) -> Result<Vec<dream_core::operations::machines::Decision>> {
    let ctx = || "reading the members' decisions".to_string();
    let mut stmt = conn
        .prepare_cached("SELECT decision FROM decisions WHERE outcome IS NULL ORDER BY at, id")
        .context(ctx)?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0)).context(ctx)?;
    let mut out = Vec::new();
    for row in rows {
        if let Ok(d) = serde_json::from_str(&row.context(ctx)?) {
            out.push(d);
        }
    }
    Ok(out)
}

/// Record what became of a member's decision (`applied` or `refused`) and why.
pub fn decision_outcome(
    conn: &Connection,
    id: &str,
    outcome: &str,
    note: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    conn.execute(
        "UPDATE decisions SET outcome = ?2, note = ?3, updated = ?4 WHERE id = ?1",
        params![id, outcome, note, now.to_rfc3339()],
    )
    .map(|_| ())
    .context(|| format!("recording what became of decision {id}"))
}

/// Members' decisions that were not applied (a card decided first elsewhere): id, what
/// was decided, why not.
pub fn refused_decisions(conn: &Connection) -> Result<Vec<(String, String)>> {
    let ctx = || "reading the members' decisions".to_string();
    let mut stmt = conn
        .prepare_cached(
            "SELECT decision, note FROM decisions WHERE outcome = 'refused' ORDER BY at",
        )
        .context(ctx)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
        })
        .context(ctx)?;
    rows.map(|r| r.map(|(d, n)| (d, n.unwrap_or_default())))
        .collect::<rusqlite::Result<Vec<_>>>()
        .context(ctx)
}
