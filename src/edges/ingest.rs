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
use sha2::{Digest, Sha256};

use crate::edges::inbox::{self, file_key};
use crate::edges::state;
use crate::error::Result;
use dream_core::config::Config;
use dream_core::event::{self, hex};
pub use dream_core::ingested::Ingested;
use dream_core::ingested::Quarantined;
use dream_core::memory::excerpt;
use dream_core::secrets;

/// Read every inbox file since its watermark and store what is new in `conn`.
pub fn run(
    conn: &Connection,
    root: &Path,
    config: &Config,
    cycle: &str,
    now: DateTime<Utc>,
) -> Result<Ingested> {
    let dir = root.join(&config.inbox.path);
    let mut out = Ingested::default();
    for path in inbox::list_files(&dir)? {
        if crate::edges::sources::claims(config, root, &path) {
            continue;
        }
        let key = file_key(root, &path);
        let prev = state::watermark(conn, &key)?;
        let chunk = inbox::read_new(&path, &key, prev.as_ref(), config.inbox.max_event_bytes)?;
        out.files += 1;
        out.partial_bytes += chunk.partial_bytes;
        if let Some(why) = &chunk.restarted {
            out.restarted
                .push(format!("{key}: {why}; read again from the start"));
        }
        for line in &chunk.lines {
            out.lines += 1;
            let parsed = if line.truncated {
                Err(format!(
                    "line is {} bytes, over the limit of {} (inbox.max_event_bytes)",
                    line.len, config.inbox.max_event_bytes
                ))
            } else {
                event::parse_line(&line.bytes, config.inbox.max_event_bytes)
            };
            let reason = match parsed {
                Err(reason) => Some(reason),
                Ok(p) => {
                    let hash = p.event.content_hash();
                    match state::event_hash(conn, &p.event.id)? {
                        Some(h) if h == hash => {
                            out.duplicates += 1;
                            None
                        }
                        Some(_) => Some(format!(
                            "conflict: event id {:?} was already stored with different content",
                            p.event.id
                        )),
                        None => {
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
                            None
                        }
                    }
                }
            };
            if let Some(reason) = reason {
                let q = Quarantined {
                    file: key.clone(),
                    line: line.line,
                    offset: line.offset,
                    reason,
                    excerpt: secrets::redact(&excerpt(&String::from_utf8_lossy(&line.bytes), 200))
                        .0,
                    hash: hex(&Sha256::digest(&line.bytes))[..16].to_string(),
                };
                if state::quarantine(conn, &q, cycle, now)? {
                    out.quarantined += 1;
                    out.quarantine.push(q);
                }
            }
        }
        out.watermarks.push(chunk.watermark);
    }
    crate::edges::sources::run(conn, root, config, cycle, now, &mut out)?;
    Ok(out)
}
