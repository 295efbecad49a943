//! opencode's SQLite database, read for `[[inbox.sources]] format = "opencode"` and
//! `dream ingest --format opencode`: the edge half of the opencode adapter (the row mapping
//! is pure, in `dream_core::sources::adapters::opencode`).
//!
//! opencode has its database open, in WAL mode, whenever it runs, so dream must never
//! disturb it: the database is opened read-only (`mode=ro`, `SQLITE_OPEN_READ_ONLY`,
//! `PRAGMA query_only`), never written, never locked for writing, and no `-wal` or `-shm`
//! file is ever created in opencode's folder. When opencode's `-wal` file is there, the
//! connection reads through it (a WAL reader takes no lock a writer waits on); when it is
//! not (opencode is not running and has checkpointed), the file is opened `immutable=1`,
//! which SQLite reads with no lock and no companion file at all.
//!
//! Reading is incremental: the watermark's `line` holds the newest `time_updated` (in
//! milliseconds) of the rows read, and the next read takes the parts whose row or message
//! changed since then. Ids come from opencode's own part ids, so a row read again is a
//! duplicate, never a second event.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::edges::inbox::{self, RawLine, Scanned};
use crate::edges::sources::FileRead;
use crate::error::{Context, Error, Result};
use dream_core::sources::adapters::{self, Counts, FileCtx};
use dream_core::sources::event::Parsed;
use dream_core::sources::ingested::Watermark;

/// Parts of every message changed at or after the watermark, oldest message first.
const QUERY: &str =
    "SELECT s.id, s.directory, s.parent_id, m.id, m.data, p.id, p.time_created, p.data,
        max(p.time_updated, m.time_updated)
   FROM part p JOIN message m ON m.id = p.message_id JOIN session s ON s.id = m.session_id
  WHERE p.time_updated >= ?1 OR m.time_updated >= ?1
  ORDER BY m.time_created, m.id, p.id";

/// A path as a SQLite URI path (RFC 3986: everything but unreserved bytes and `/` escaped).
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Open opencode's database without ever writing, locking for writing, or creating a file.
pub fn open(path: &Path) -> Result<Connection> {
    let mut wal = path.as_os_str().to_os_string();
    wal.push("-wal");
    let live = Path::new(&wal).exists();
    let uri = format!(
        "file:{}?mode=ro{}",
        uri_path(path),
        if live { "" } else { "&immutable=1" }
    );
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&uri, flags)
        .context(|| format!("opening {} read-only", path.display()))?;
    conn.busy_timeout(std::time::Duration::from_millis(2000))
        .and_then(|_| conn.pragma_update(None, "query_only", true))
        .context(|| format!("opening {} read-only", path.display()))?;
    Ok(conn)
}

/// Map the parts changed since the watermark; returns the new watermark.
pub fn read(
    r: &FileRead<'_>,
    counts: &mut Counts,
    ctx: &mut FileCtx,
    mut sink: impl FnMut(&RawLine, std::result::Result<Parsed, String>) -> Result<()>,
) -> Result<Scanned> {
    let what = || format!("reading {}", r.path.display());
    let meta = std::fs::metadata(r.path).context(what)?;
    let identity = inbox::identity(&meta);
    let (since, restarted) = match r.prev {
        Some(w) if w.identity == identity => (w.line, None),
        Some(_) => (0, Some("the database was replaced".to_string())),
        None => (0, None),
    };
    let conn = open(r.path)?;
    let mut stmt = conn.prepare(QUERY).map_err(|e| {
        Error::Input(format!(
            "{} is not an opencode database this version of dream reads ({e}); see docs/sources.md",
            r.path.display()
        ))
    })?;
    let mut rows = stmt.query([since as i64]).context(what)?;
    let mut newest = since;
    let mut n = 0u64;
    while let Some(row) = rows.next().context(what)? {
        n += 1;
        let text = |i: usize| row.get::<_, Option<String>>(i).ok().flatten();
        let updated = row.get::<_, Option<i64>>(8).ok().flatten().unwrap_or(0);
        newest = newest.max(updated.max(0) as u64);
        let (msg_data, part_data) = (text(4).unwrap_or_default(), text(7).unwrap_or_default());
        let line = RawLine {
            line: n,
            offset: 0,
            len: part_data.len() as u64,
            bytes: format!(
                "part {} of message {}: {}",
                text(5).unwrap_or_default(),
                text(3).unwrap_or_default(),
                &part_data[..adapters::floor_char_boundary(&part_data, 2048)]
            )
            .into_bytes(),
            truncated: false,
            unterminated: false,
        };
        let parse = |s: &str, what: &str| {
            serde_json::from_str::<serde_json::Value>(s)
                .map_err(|e| format!("the {what}'s data is not valid JSON: {e}"))
        };
        let value = parse(&msg_data, "message").and_then(|m| {
            let p = parse(&part_data, "part")?;
            Ok(serde_json::json!({
                "session": {"id": text(0), "directory": text(1), "parent_id": text(2)},
                "message_id": text(3),
                "message": m,
                "part_id": text(5),
                "time_created": row.get::<_, Option<i64>>(6).ok().flatten(),
                "part": p,
            }))
        });
        match value {
            Ok(v) => {
                for parsed in adapters::map_line(r.format, v, ctx, counts) {
                    sink(&line, parsed)?;
                }
            }
            Err(reason) => {
                counts.lines += 1;
                sink(&line, Err(reason))?;
            }
        }
    }
    Ok(Scanned {
        watermark: Watermark {
            file: r.key.to_string(),
            identity,
            offset: meta.len(),
            line: newest,
            prefix_hash: String::new(),
        },
        restarted,
        partial_bytes: 0,
    })
}
