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
    ingest_members(conn, root, config, cycle, now, &mut out)?;
    Ok(out)
}

/// The dreamer's side of several machines (issue 45): every member branch fetched into
/// `refs/dream/members/`, read from the commit its mark names, each new commit's event
/// files stored line by line as inbox lines are (the same parse, redaction, dedupe by id
/// and quarantine), and the mark moved to the commit in the same transaction. So a
/// member's events are stored exactly once whatever order fetches, ingests and crashes
/// come in: the events and the mark commit together or not at all.
pub fn ingest_members(
    conn: &Connection,
    root: &Path,
    config: &Config,
    cycle: &str,
    now: DateTime<Utc>,
    out: &mut Ingested,
) -> Result<()> {
    let dreams = crate::edges::remote::membership(root)?
        .is_some_and(|m| m.role == dream_core::operations::machines::Role::Dreamer);
    let Some(repo) = dreams
        .then(|| crate::edges::branches::open(root).ok())
        .flatten()
    else {
        return Ok(());
    };
    for (machine, tip) in crate::edges::branches::fetched_members(&repo)? {
        let mark = state::member_mark(conn, &machine)?;
        let since = mark
            .as_ref()
            .and_then(|m| git2::Oid::from_str(&m.commit).ok());
        let commits = crate::edges::branches::new_commits(&repo, tip, since)?;
        if commits.is_empty() {
            continue;
        }
        let mut mark = mark.unwrap_or(state::MemberMark {
            machine: machine.clone(),
            person: None,
            commit: String::new(),
            events: 0,
            last_event: None,
            updated: String::new(),
        });
        let mut excerpts = secrets::Excerpts::default();
        for c in commits {
            for (path, bytes) in &c.files {
                if path.starts_with(dream_core::operations::machines::DECISIONS_DIR) {
                    // A person's decision on a card, applied after this transaction.
                    for line in bytes.split(|b| *b == b'\n') {
                        if let Ok(d) = serde_json::from_slice(line) {
                            state::put_decision(conn, &d)?;
                        }
                    }
                    continue;
                }
                let key = format!("machines/{machine}/{path}");
                out.files += 1;
                let before = out.new_events;
                for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
                    if line.iter().all(|b| b.is_ascii_whitespace()) {
                        continue;
                    }
                    let raw = inbox::RawLine {
                        line: i as u64 + 1,
                        offset: 0,
                        bytes: line[..line.len().min(config.inbox.max_event_bytes)].to_vec(),
                        len: line.len() as u64,
                        truncated: line.len() > config.inbox.max_event_bytes,
                        unterminated: false,
                    };
                    ingest_line(conn, config, &key, &raw, cycle, now, &mut excerpts, out)?;
                    note_sender(&raw, &mut mark);
                }
                mark.events += (out.new_events - before) as i64;
            }
            mark.commit = c.id.to_string();
            mark.updated = now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            state::put_member_mark(conn, &mark)?;
        }
    }
    Ok(())
}

/// Keep the newest event time and the person a member's line names, for `dream status`.
fn note_sender(line: &inbox::RawLine, mark: &mut state::MemberMark) {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line.bytes) else {
        return;
    };
    if let Some(ts) = v.get("ts").and_then(|t| t.as_str()) {
        if mark.last_event.as_deref().is_none_or(|l| l < ts) {
            mark.last_event = Some(ts.to_string());
        }
    }
    if let Some(p) = v.pointer("/meta/person").and_then(|p| p.as_str()) {
        mark.person = Some(p.to_string());
    }
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
