//! Ingest (SPEC S4 step 2): new complete inbox lines into the state database.
//!
//! Every line since each file's watermark becomes an event, a no-op (an id seen before with
//! the same content) or a quarantine record with file, line and reason (bad JSON, a missing
//! field, an id seen before with different content). Nothing is dropped silently and a bad
//! line never blocks the lines after it. The new watermarks are returned, not stored: the
//! cycle stores them only after its commit succeeded.

use std::path::Path;

use chrono::{DateTime, Utc};
use rusqlite::Connection;

use crate::edges::inbox::{self, file_key};
use crate::edges::state;
use crate::error::{Error, Result};
use dream_core::schema::settings::Config;

pub use dream_core::sources::ingested::Ingested;
use dream_core::sources::secrets;

/// Read every inbox file since its watermark and store what is new in `conn`. Lines are
/// streamed one at a time, so memory stays flat whatever a file holds. An entry that
/// cannot be read (a symbolic link, a FIFO, a file it may not open) is skipped with why,
/// and the other files are read as usual.
pub fn ingest_inbox(
    conn: &Connection,
    root: &Path,
    config: &Config,
    cycle: &str,
    now: DateTime<Utc>,
) -> Result<Ingested> {
    let dir = root.join(&config.inbox.path);
    let mut out = Ingested::default();
    let listing = inbox::scan(&dir);
    for (path, why) in &listing.skipped {
        inbox::skipped(&mut out, &file_key(root, path), why);
    }
    for path in listing.files {
        if crate::edges::sources::claims(config, root, &path) {
            continue;
        }
        let key = file_key(root, &path);
        let prev = state::watermark(conn, &key)?;
        // A failure of the state (not of the file) stops the cycle; it is kept here.
        let mut failed: Option<Error> = None;
        let mut excerpts = secrets::Excerpts::default();
        let read = inbox::for_each_new(
            &path,
            &key,
            prev.as_ref(),
            config.inbox.max_event_bytes,
            |line| {
                let r = ingest_line(
                    conn,
                    config,
                    &key,
                    &line,
                    cycle,
                    now,
                    &mut excerpts,
                    &mut out,
                );
                r.map_err(|e| {
                    failed = Some(e);
                    Error::Other(String::new())
                })
            },
        );
        if let Some(e) = failed {
            return Err(e);
        }
        let chunk = match read {
            Ok(c) => c,
            Err(e) => {
                inbox::skipped(&mut out, &key, &format!("cannot be read ({e})"));
                continue;
            }
        };
        out.files += 1;
        out.partial_bytes += chunk.partial_bytes;
        if let Some(why) = &chunk.restarted {
            out.restarted
                .push(format!("{key}: {why}; read again from the start"));
        }
        out.watermarks.push(chunk.watermark);
    }
    crate::edges::sources::ingest_sources(conn, root, config, cycle, now, &mut out)?;
    Ok(out)
}

/// Store one line: a new event, a duplicate, or a quarantine record.
#[allow(clippy::too_many_arguments)]
fn ingest_line(
    conn: &Connection,
    config: &Config,
    key: &str,
    line: &inbox::RawLine,
    cycle: &str,
    now: DateTime<Utc>,
    excerpts: &mut secrets::Excerpts,
    out: &mut Ingested,
) -> Result<()> {
    out.lines += 1;
    let parsed = if line.truncated {
        Err(inbox::over_limit(line, config.inbox.max_event_bytes))
    } else {
        dream_core::sources::turn::parse_line(&line.bytes, config.inbox.max_event_bytes)
    };
    // The parts of a line share its time.
    let parsed = parsed.and_then(|parts| match parts.first() {
        Some(p) => dream_core::sources::event::check_time(p.event.ts, now).map(|()| parts),
        None => Ok(parts),
    });
    // A line is one event, or an owner's message cut into its parts (`turn`): a part
    // stored before with other content refuses the whole line, so none is half stored.
    let reason = match parsed {
        Err(reason) => Some(reason),
        Ok(parts) => {
            let mut known = Vec::with_capacity(parts.len());
            let mut conflict = None;
            for p in &parts {
                let hash = p.event.content_hash();
                match state::event_hash(conn, &p.event.id)? {
                    Some(h) if h == hash => known.push((true, hash)),
                    Some(_) => {
                        conflict = Some(format!(
                            "conflict: event id {:?} was already stored with different content",
                            p.event.id
                        ));
                        break;
                    }
                    None => known.push((false, hash)),
                }
            }
            if conflict.is_none() {
                for (p, (stored, hash)) in parts.into_iter().zip(known) {
                    if stored {
                        out.duplicates += 1;
                        continue;
                    }
                    state::insert_event_hashed(
                        conn,
                        &p.event,
                        &hash,
                        &format!("{key}:{}", line.line),
                        cycle,
                    )?;
                    out.new_events += 1;
                    if !p.redacted.is_empty() {
                        out.redacted += 1;
                    }
                    out.new_ids.push(p.event.id);
                }
            }
            conflict
        }
    };
    if let Some(reason) = reason {
        let q = inbox::quarantined(key, line, &reason, excerpts);
        if state::quarantine(conn, &q, cycle, now)? {
            out.quarantined_line(q);
        }
    }
    Ok(())
}
