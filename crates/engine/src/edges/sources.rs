//! Sources (SPEC S2): other agents' transcript folders, read incrementally every cycle.
//!
//! A `[[inbox.sources]]` entry names a format and a folder (or file). Each cycle lists its
//! `*.jsonl` files, reads each from its watermark with the same per-file rules as the
//! inbox (`inbox::for_each_new`: complete lines only, replaced or rewritten files read
//! again), turns every line into events with the format's adapter, and stores what is new.
//! A transcript line longer than `inbox.max_event_bytes` is not quarantined: it is streamed
//! from the file through a parser that caps string sizes (`adapters::capped`), so even a
//! 50 MB tool output becomes its events without being loaded. `dream ingest --format`
//! reads files the same way, once, through [`map_file`].
//!
//! Transcript events take their ids from the transcript's own uuids, so an id seen before is
//! the same message read again (or copied by a resumed session) and is skipped as a
//! duplicate, never a conflict.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rusqlite::Connection;

use crate::edges::inbox::file_key;
use crate::edges::inbox::{self, RawLine, Scanned};
use crate::edges::state;
use crate::error::{Context, Result};
use dream_core::schema::settings::{Config, Source};
use dream_core::sources::adapters::{self, capped, Counts, FileCtx, Format, Layout};
use dream_core::sources::event::Parsed;
use dream_core::sources::ingested::{Ingested, SourceReport, Watermark};
use dream_core::sources::secrets;
use serde_json::Value;
use sha2::Digest;

/// What one source gave in a cycle, for the report.
/// A configured path made absolute: `~` is the home folder, a relative path is relative to
/// the repo.
pub fn resolve(path: &str, root: &Path, home: Option<&Path>) -> PathBuf {
    let expanded = match (path.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(path),
    };
    if expanded.is_absolute() {
        expanded
    } else {
        root.join(expanded)
    }
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// Where a configured source lives.
pub fn source_path(source: &Source, root: &Path) -> PathBuf {
    resolve(&source.path, root, home().as_deref())
}

/// The files a format reads in a folder (recursively), or the file itself, filtered by the
/// include and exclude globs (matched against the path relative to the folder).
pub fn list(
    path: &Path,
    format: Format,
    include: &[String],
    exclude: &[String],
) -> Result<Vec<PathBuf>> {
    Ok(list_all(path, format, include, exclude).files)
}

/// At most this many unread files of one source are named one by one; the rest are counted.
pub const UNREAD_NAMED: usize = 10;

/// [`list`], with the entries that will not be read: links, FIFOs, folders that cannot be
/// listed (see `inbox::scan`), and every other file no adapter of this format reads (a
/// `.json` file under a `jsonl` source, a Gemini CLI log), so nothing is skipped silently.
pub fn list_all(
    path: &Path,
    format: Format,
    include: &[String],
    exclude: &[String],
) -> inbox::Listing {
    let mut listing = if path.is_file() {
        inbox::Listing {
            files: vec![path.to_path_buf()],
            skipped: Vec::new(),
        }
    } else {
        scan(path, format)
    };
    listing.files = filter(path, std::mem::take(&mut listing.files), include, exclude);
    listing
}

/// Every regular file under a folder: the ones `format` reads, sorted, and the others named
/// as not read (at most [`UNREAD_NAMED`] of them, then a count).
fn scan(dir: &Path, format: Format) -> inbox::Listing {
    let (mut out, unread) = inbox::walk(
        dir,
        |rel| format.reads(rel),
        "a symbolic link: dream reads only regular files in a source folder (list its target under [[inbox.sources]])",
    );
    let mut unread: Vec<PathBuf> = unread
        .into_iter()
        .filter(|p| !is_companion(format, p.strip_prefix(dir).unwrap_or(p)))
        .collect();
    let n = unread.len();
    let why = format!(
        "no {} adapter reads it (a {} source reads {}; see docs/sources.md)",
        format.as_str(),
        format.as_str(),
        reads_what(format)
    );
    for p in unread.drain(..n.min(UNREAD_NAMED)) {
        out.skipped.push((p, why.clone()));
    }
    if n > UNREAD_NAMED {
        out.skipped.push((
            dir.to_path_buf(),
            format!(
                "and {} more files no {} adapter reads",
                n - UNREAD_NAMED,
                format.as_str()
            ),
        ));
    }
    out.skipped.sort();
    out
}

/// Files a harness keeps beside its sessions that hold nothing a session file does not
/// (docs/sources.md lists them; each format's descriptor knows its own). They are known,
/// so they are not named as unread; any other file is.
fn is_companion(format: Format, rel: &Path) -> bool {
    (format.descriptor().companion)(rel)
}

/// The files a format reads, in words.
pub fn reads_what(format: Format) -> &'static str {
    format.descriptor().reads_what
}

fn filter(
    path: &Path,
    files: Vec<PathBuf>,
    include: &[String],
    exclude: &[String],
) -> Vec<PathBuf> {
    let compile = |globs: &[String]| -> Vec<glob::Pattern> {
        globs
            .iter()
            .filter_map(|g| glob::Pattern::new(g).ok())
            .collect()
    };
    let (inc, exc) = (compile(include), compile(exclude));
    if inc.is_empty() && exc.is_empty() {
        return files;
    }
    let opts = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: false,
        require_literal_leading_dot: false,
    };
    files
        .into_iter()
        .filter(|f| {
            let rel = f.strip_prefix(path).unwrap_or(f);
            (inc.is_empty() || inc.iter().any(|p| p.matches_path_with(rel, opts)))
                && !exc.iter().any(|p| p.matches_path_with(rel, opts))
        })
        .collect()
}

/// Whether an inbox file belongs to a configured source (a source inside the inbox folder
/// is read by its adapter, not as dream's own events).
pub fn claims(config: &Config, root: &Path, file: &Path) -> bool {
    config
        .inbox
        .sources
        .iter()
        .any(|s| file.starts_with(source_path(s, root)))
}

/// The session a file belongs to, from its path, as its format's descriptor reads it
/// (Codex puts the session uuid at the end of the rollout's name, Claude Code names a
/// session file after its session).
pub fn session_hint(format: Format, path: &Path) -> Option<String> {
    (format.descriptor().session_from_path)(path)
}

/// One file to read.
#[derive(Debug, Clone, Copy)]
pub struct FileRead<'a> {
    pub path: &'a Path,
    /// The key its watermark is stored under.
    pub key: &'a str,
    pub format: Format,
    /// Where the last read stopped (`None`: from the start).
    pub prev: Option<&'a Watermark>,
    /// Lines longer than this are streamed (transcripts) or quarantined (jsonl).
    pub max_line: usize,
    /// Also read a last line that has no newline yet (a file at rest, read once by
    /// `dream ingest`); a cycle leaves it for the next run instead.
    pub to_end: bool,
}

/// Read the lines of one file after its watermark and hand every event (or the reason a
/// line or a part of it was refused) to `sink`, with the line it came from.
pub fn map_file(
    r: &FileRead<'_>,
    counts: &mut Counts,
    mut sink: impl FnMut(&RawLine, std::result::Result<Parsed, String>) -> Result<()>,
) -> Result<Scanned> {
    let mut ctx = FileCtx {
        session: session_hint(r.format, r.path),
        ..FileCtx::default()
    };
    let descriptor = r.format.descriptor();
    match (descriptor.layout)(r.path) {
        Layout::Database => return crate::edges::opencode::read(r, counts, &mut ctx, sink),
        Layout::Document => return read_document(r, &mut ctx, counts, &mut sink),
        Layout::Lines => {}
    }
    if descriptor.primes && r.prev.is_some_and(|w| w.offset > 0) {
        prime(r.path, r.format, &mut ctx)?;
    }
    let mut scanned = inbox::for_each_new(r.path, r.key, r.prev, r.max_line, |line| {
        map_line(r, &mut ctx, &line, false, counts, &mut sink).map(|_| ())
    })?;
    if r.to_end && scanned.partial_bytes > 0 {
        let offset = scanned.watermark.offset;
        let len = scanned.partial_bytes;
        let mut bytes = Vec::new();
        let mut f = File::open(r.path).context(|| format!("reading {}", r.path.display()))?;
        f.seek(SeekFrom::Start(offset))
            .and_then(|_| f.take(len.min(r.max_line as u64)).read_to_end(&mut bytes))
            .context(|| format!("reading {}", r.path.display()))?;
        let line = RawLine {
            line: scanned.watermark.line + 1,
            offset,
            bytes,
            len,
            truncated: len > r.max_line as u64,
            unterminated: false,
        };
        if map_line(r, &mut ctx, &line, true, counts, &mut sink)? {
            scanned.partial_bytes = 0;
        }
    }
    Ok(scanned)
}

/// Map one line; returns whether it was consumed (a half-written last line of a
/// transcript, read with `to_end`, is not).
fn map_line(
    r: &FileRead<'_>,
    ctx: &mut FileCtx,
    line: &RawLine,
    last: bool,
    counts: &mut Counts,
    sink: &mut impl FnMut(&RawLine, std::result::Result<Parsed, String>) -> Result<()>,
) -> Result<bool> {
    if !r.format.is_transcript() {
        counts.lines += 1;
        let parsed = if line.truncated {
            Err(over_limit(line, r.max_line))
        } else {
            dream_core::sources::turn::parse_line(&line.bytes, r.max_line)
        };
        match parsed {
            Ok(parts) => {
                counts.events += parts.len() as u64;
                for p in parts {
                    sink(line, Ok(p))?;
                }
            }
            Err(reason) => sink(line, Err(reason))?,
        }
        return Ok(true);
    }
    let value = if line.truncated {
        stream_line(r.path, line)?
    } else {
        serde_json::from_slice(&line.bytes).map_err(|e| format!("not valid JSON: {e}"))
    };
    match value {
        Ok(v) => {
            for parsed in adapters::map_line(r.format, v, ctx, counts) {
                sink(line, parsed)?;
            }
            Ok(true)
        }
        Err(_) if last => Ok(false),
        Err(reason) => {
            counts.lines += 1;
            sink(line, Err(reason))?;
            Ok(true)
        }
    }
}

fn over_limit(line: &RawLine, max: usize) -> String {
    inbox::over_limit(line, max)
}

/// Parse a line too long to hold from the file itself, with string sizes capped.
fn stream_line(
    path: &Path,
    line: &RawLine,
) -> Result<std::result::Result<serde_json::Value, String>> {
    let mut f = File::open(path).context(|| format!("reading {}", path.display()))?;
    f.seek(SeekFrom::Start(line.offset))
        .context(|| format!("reading {}", path.display()))?;
    Ok(capped::parse(BufReader::with_capacity(
        64 * 1024,
        f.take(line.len),
    )))
}

/// Learn the session, folder and branch from a file's first line (Codex's `session_meta`,
/// Copilot's `session.start`, Gemini's metadata record), for a read that starts mid-file.
fn prime(path: &Path, format: Format, ctx: &mut FileCtx) -> Result<()> {
    let f = File::open(path).context(|| format!("reading {}", path.display()))?;
    if let Ok(first) = capped::parse_first(BufReader::new(f)) {
        let mut scratch = Counts::default();
        let _ = adapters::map_line(format, first, ctx, &mut scratch);
    }
    Ok(())
}

/// Read a whole-file JSON session (Gemini CLI's older form, rewritten whole after every
/// message) as one document, a message at a time (`capped::for_each_item`), when it
/// changed since its watermark. Every message is mapped again; the ones read before keep
/// their ids and are skipped as duplicates, so only new messages become events. The
/// watermark is the file's identity, size and first bytes; `line` counts its messages.
fn read_document(
    r: &FileRead<'_>,
    ctx: &mut FileCtx,
    counts: &mut Counts,
    sink: &mut impl FnMut(&RawLine, std::result::Result<Parsed, String>) -> Result<()>,
) -> Result<Scanned> {
    let what = || format!("reading {}", r.path.display());
    let mut file = File::open(r.path).context(what)?;
    let meta = file.metadata().context(what)?;
    let size = meta.len();
    let mut head = vec![0u8; size.min(4096) as usize];
    file.read_exact(&mut head).context(what)?;
    file.seek(SeekFrom::Start(0)).context(what)?;
    let watermark = Watermark {
        file: r.key.to_string(),
        identity: inbox::identity(&meta),
        offset: size,
        line: 0,
        prefix_hash: dream_core::sources::event::hex(&sha2::Sha256::digest(&head))[..16]
            .to_string(),
    };
    if let Some(w) = r.prev {
        if w.identity == watermark.identity
            && w.offset == watermark.offset
            && w.prefix_hash == watermark.prefix_hash
        {
            return Ok(Scanned {
                watermark: w.clone(),
                restarted: None,
                partial_bytes: 0,
            });
        }
    }
    let mut failed: Option<crate::error::Error> = None;
    let mut n = 0u64;
    // First the metadata (the session, the project), wherever the document keeps it: the
    // messages' ids depend on it. Then the messages, one at a time.
    let first = BufReader::with_capacity(64 * 1024, (&mut file).take(size));
    let meta_only = capped::for_each_item(first, "messages", false, |_, _| {});
    let headed = meta_only.is_ok();
    if let Ok(head) = meta_only {
        let mut scratch = Counts::default();
        let _ = adapters::map_line(r.format, Value::Object(head), ctx, &mut scratch);
    }
    file.seek(SeekFrom::Start(0)).context(what)?;
    let reader = BufReader::with_capacity(64 * 1024, (&mut file).take(size));
    let parsed = capped::for_each_item(reader, "messages", true, |index, item| {
        let Some(i) = index else {
            return;
        };
        n = i as u64 + 1;
        if failed.is_some() {
            return;
        }
        let excerpt = item.to_string();
        let line = RawLine {
            line: n,
            offset: 0,
            len: excerpt.len() as u64,
            bytes: excerpt.into_bytes(),
            truncated: false,
            unterminated: false,
        };
        for p in adapters::map_line(r.format, item, ctx, counts) {
            if let Err(e) = sink(&line, p) {
                failed = Some(e);
                return;
            }
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    match parsed {
        Ok(_) if headed && n == 0 => {
            // A document without messages: its metadata alone (counted, skipped).
            counts.lines += 1;
            counts.skip("line:metadata");
        }
        Ok(_) => {}
        Err(reason) if r.to_end => {
            counts.lines += 1;
            let line = RawLine {
                line: n + 1,
                offset: 0,
                len: head.len() as u64,
                bytes: head.clone(),
                truncated: false,
                unterminated: false,
            };
            sink(
                &line,
                Err(format!("the session document cannot be read: {reason}")),
            )?;
        }
        Err(_) => {
            // Half-written (the CLI rewrites it whole): the messages read so far are kept,
            // and the file is read again once it changes.
            return Ok(Scanned {
                watermark: Watermark {
                    offset: 0,
                    ..watermark
                },
                restarted: None,
                partial_bytes: size,
            });
        }
    }
    Ok(Scanned {
        watermark: Watermark {
            line: n,
            ..watermark
        },
        restarted: None,
        partial_bytes: 0,
    })
}

/// Read every configured source since its files' watermarks and store what is new, adding
/// to `out` (new events, watermarks to store after the commit, quarantine, the report).
pub fn ingest_sources(
    conn: &Connection,
    root: &Path,
    config: &Config,
    cycle: &str,
    now: DateTime<Utc>,
    out: &mut Ingested,
) -> Result<()> {
    for source in &config.inbox.sources {
        let dir = source_path(source, root);
        let mut rep = SourceReport {
            format: source.format,
            path: source.path.clone(),
            ..SourceReport::default()
        };
        if !dir.exists() {
            rep.missing = true;
            out.sources.push(rep);
            continue;
        }
        let listing = list_all(&dir, source.format, &source.include, &source.exclude);
        for (path, why) in &listing.skipped {
            inbox::skipped(out, &file_key(root, path), why);
        }
        for path in listing.files {
            let key = file_key(root, &path);
            let mut excerpts = secrets::Excerpts::default();
            let mut failed: Option<crate::error::Error> = None;
            let prev = state::watermark(conn, &key)?;
            let mut counts = Counts::default();
            let conflicts = !source.format.is_transcript();
            let read = FileRead {
                path: &path,
                key: &key,
                format: source.format,
                prev: prev.as_ref(),
                max_line: config.inbox.max_event_bytes,
                to_end: false,
            };
            let mapped = map_file(&read, &mut counts, |line, parsed| {
                let one = || -> Result<()> {
                    let parsed = parsed.and_then(|p| {
                        dream_core::sources::event::check_time(p.event.ts, now).map(|()| p)
                    });
                    let reason = match parsed {
                        Ok(p) => store(conn, p, &key, line, cycle, conflicts, out, &mut rep)?,
                        Err(reason) => Some(reason),
                    };
                    if let Some(reason) = reason {
                        let q = inbox::quarantined(&key, line, &reason, &mut excerpts);
                        if state::quarantine(conn, &q, cycle, now)? {
                            rep.quarantined += 1;
                            out.quarantined_line(q);
                        }
                    }
                    Ok(())
                };
                // A failure of the state (not of the file) stops the cycle; it is kept.
                one().map_err(|e| {
                    failed = Some(e);
                    crate::error::Error::Other(String::new())
                })
            });
            if let Some(e) = failed {
                return Err(e);
            }
            let scanned = match mapped {
                Ok(s) => s,
                Err(e) => {
                    inbox::skipped(out, &key, &format!("cannot be read ({e})"));
                    continue;
                }
            };
            rep.files += 1;
            rep.counts.add(&counts);
            out.files += 1;
            out.lines += counts.lines as usize;
            out.partial_bytes += scanned.partial_bytes;
            if let Some(why) = &scanned.restarted {
                out.restarted
                    .push(format!("{key}: {why}; read again from the start"));
            }
            out.watermarks.push(scanned.watermark);
        }
        out.sources.push(rep);
    }
    Ok(())
}

/// Store one event unless its id is known: a no-op for a transcript (the same message read
/// again), a conflict for dream's own events when the content differs.
#[allow(clippy::too_many_arguments)]
fn store(
    conn: &Connection,
    p: Parsed,
    key: &str,
    line: &RawLine,
    cycle: &str,
    conflicts: bool,
    out: &mut Ingested,
    rep: &mut SourceReport,
) -> Result<Option<String>> {
    match state::event_hash(conn, &p.event.id)? {
        Some(h) if conflicts && h != p.event.content_hash() => Ok(Some(format!(
            "conflict: event id {:?} was already stored with different content",
            p.event.id
        ))),
        Some(_) => {
            out.duplicates += 1;
            rep.duplicates += 1;
            Ok(None)
        }
        None => {
            state::insert_event(conn, &p.event, &format!("{key}:{}", line.line), cycle)?;
            out.new_events += 1;
            rep.new_events += 1;
            if !p.redacted.is_empty() {
                out.redacted += 1;
            }
            out.new_ids.push(p.event.id);
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_expand_home_and_stay_relative_to_the_repo() {
        let root = Path::new("/repo");
        let home = Path::new("/home/ada");
        assert_eq!(
            resolve("~/.codex/sessions", root, Some(home)),
            home.join(".codex/sessions")
        );
        assert_eq!(resolve("~", root, Some(home)), home.to_path_buf());
        assert_eq!(
            resolve("logs/agent", root, Some(home)),
            root.join("logs/agent")
        );
        assert_eq!(resolve("/abs", root, Some(home)), PathBuf::from("/abs"));
        assert_eq!(resolve("~bob/x", root, Some(home)), root.join("~bob/x"));
    }

    #[test]
    fn globs_filter_relative_paths() {
        let dir = tempfile::tempdir().unwrap();
        for p in [
            "p1/s1.jsonl",
            "p1/s1/subagents/agent-a.jsonl",
            "p2/s2.jsonl",
            "p2/notes.txt",
        ] {
            let f = dir.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, "").unwrap();
        }
        let names = |inc: &[&str], exc: &[&str]| -> Vec<String> {
            let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
            list(dir.path(), Format::Jsonl, &s(inc), &s(exc))
                .unwrap()
                .iter()
                .map(|f| f.strip_prefix(dir.path()).unwrap().display().to_string())
                .collect()
        };
        assert_eq!(names(&[], &[]).len(), 3);
        assert_eq!(
            names(&[], &["*/subagents/*"]),
            vec!["p1/s1.jsonl", "p2/s2.jsonl"]
        );
        assert_eq!(names(&["p2/*"], &[]), vec!["p2/s2.jsonl"]);
    }
}
