//! The inbox edge (SPEC S2): find inbox files, read the complete lines written since each
//! file's watermark, and append validated events for `dream ingest`.
//!
//! Reading is bounded in memory whatever the file or line size: a line longer than the
//! limit is counted and skipped to its newline, keeping only its first bytes. A last line
//! without its newline (a writer mid-append) is left for the next run. A file that was
//! replaced (new identity), truncated (shorter than the watermark) or rewritten in place
//! (its first bytes changed) is read again from its start; event-id dedupe makes that
//! idempotent. What the lines mean is `event`'s business, not this module's.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use fs2::FileExt;
use sha2::{Digest, Sha256};

use crate::error::{Context, Result};
use dream_core::sources::event::{hex, Event};
use dream_core::sources::ingested::{Ingested, Quarantined, Watermark};
use dream_core::sources::secrets;

/// The key a file's watermark is stored under: its path relative to the repo when inside it.
pub fn file_key(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

/// How many leading bytes the prefix hash covers.
const PREFIX_BYTES: u64 = 4096;

/// One complete line read from an inbox file.
#[derive(Debug, Clone)]
pub struct RawLine {
    /// 1-based line number in the file.
    pub line: u64,
    /// Byte offset of the line's start.
    pub offset: u64,
    /// The line without its newline; only the first `max` bytes when `truncated`.
    pub bytes: Vec<u8>,
    /// The line's full length in bytes.
    pub len: u64,
    pub truncated: bool,
    /// The file ends inside this line, which is already over the limit: no newline can
    /// make it an event, so it is handed over (and quarantined) instead of waited on.
    pub unterminated: bool,
}

/// Why a line over `inbox.max_event_bytes` is quarantined.
pub fn over_limit(line: &RawLine, max: usize) -> String {
    if line.unterminated {
        format!(
            "the file ends in a line of {} bytes with no newline, over the limit of {} (inbox.max_event_bytes): it can never be an event, so it is quarantined rather than waited on",
            line.len, max
        )
    } else {
        format!(
            "line is {} bytes, over the limit of {} (inbox.max_event_bytes)",
            line.len, max
        )
    }
}

/// What reading one file since its watermark gave.
#[derive(Debug, Clone)]
pub struct Chunk {
    pub lines: Vec<RawLine>,
    /// The watermark to store once the cycle has committed.
    pub watermark: Watermark,
    /// Why the file was read from its start again, if it was.
    pub restarted: Option<String>,
    /// Bytes after the last complete line (a line still being written).
    pub partial_bytes: u64,
}

/// The `*.jsonl` files under a folder and the entries that will not be read.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Regular files, sorted by path.
    pub files: Vec<PathBuf>,
    /// Entries skipped, each with why (a symbolic link, a FIFO, a folder that cannot be
    /// listed), for the report and the digest.
    pub skipped: Vec<(PathBuf, String)>,
}

/// Every `*.jsonl` regular file under a folder (recursively), sorted by path.
///
/// An agent's inbox is read as it is, so it is read defensively: symbolic links are never
/// followed (a link to `/etc/passwd` or `/dev/zero` is not the agent's events: copy the
/// file in, or list its folder under `[[inbox.sources]]`), FIFOs, sockets and devices are
/// never opened, and a folder that cannot be listed is skipped. Each is reported with why;
/// the other files are read as usual.
pub fn scan(dir: &Path) -> Listing {
    if !dir.exists() {
        return Listing::default();
    }
    walk(
        dir,
        |rel| rel.extension().is_some_and(|e| e == "jsonl"),
        "a symbolic link: dream reads only regular files in the inbox (copy the file in, or list its folder under [[inbox.sources]])",
    )
    .0
}

/// The walk under [`scan`] and a source folder's listing: every regular file `wants` (given
/// its path relative to `dir`) listed, sorted; symbolic links never followed and
/// non-regular files never opened (each wanted one, or a linked folder, skipped with why,
/// a link with `link_why`); a folder that cannot be listed skipped. Also returns the
/// regular files not wanted, sorted, for a caller that names them.
pub(crate) fn walk(
    dir: &Path,
    wants: impl Fn(&Path) -> bool,
    link_why: &str,
) -> (Listing, Vec<PathBuf>) {
    let mut out = Listing::default();
    let mut unwanted = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) => {
                out.skipped
                    .push((d.clone(), format!("the folder cannot be listed ({e})")));
                continue;
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(ft) = entry.file_type() else {
                out.skipped.push((path, "its type cannot be read".into()));
                continue;
            };
            let wanted = wants(path.strip_prefix(dir).unwrap_or(&path));
            if ft.is_dir() {
                stack.push(path);
            } else if ft.is_symlink() {
                if wanted || std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
                    out.skipped.push((path, link_why.to_string()));
                }
            } else if !ft.is_file() {
                if wanted {
                    out.skipped.push((
                        path,
                        "not a regular file (a FIFO, socket or device): never opened".into(),
                    ));
                }
            } else if wanted {
                out.files.push(path);
            } else {
                unwanted.push(path);
            }
        }
    }
    out.files.sort();
    out.skipped.sort();
    unwanted.sort();
    (out, unwanted)
}

/// [`scan`]'s files alone.
pub fn list_files(dir: &Path) -> Result<Vec<PathBuf>> {
    Ok(scan(dir).files)
}

/// Open a file to read it as an inbox file: never through a symbolic link, never blocking
/// (a FIFO put in its place between listing and opening), and only when it is a regular
/// file.
fn open_regular(path: &Path) -> std::io::Result<File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW);
    }
    let file = opts.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// A platform identity for a file: device and inode on Unix.
pub fn identity(meta: &std::fs::Metadata) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        format!("{}:{}", meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        meta.created()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos().to_string())
            .unwrap_or_default()
    }
}

fn prefix_hash(file: &mut File, upto: u64) -> std::io::Result<String> {
    let n = upto.min(PREFIX_BYTES);
    let mut buf = vec![0u8; n as usize];
    file.seek(SeekFrom::Start(0))?;
    file.read_exact(&mut buf)?;
    Ok(hex(&Sha256::digest(&buf))[..16].to_string())
}

/// Bytes of a file not yet consumed (for `dream status`): size minus watermark offset, or
/// the whole size when the file would be read again.
pub fn lag(path: &Path, prev: Option<&Watermark>) -> u64 {
    let Ok(meta) = std::fs::metadata(path) else {
        return 0;
    };
    match prev {
        Some(w) if w.identity == identity(&meta) && meta.len() >= w.offset => meta.len() - w.offset,
        _ => meta.len(),
    }
}

/// Read the complete lines of `path` after its watermark.
pub fn read_new(
    path: &Path,
    key: &str,
    prev: Option<&Watermark>,
    max_line: usize,
) -> Result<Chunk> {
    let mut lines = Vec::new();
    let read = for_each_new(path, key, prev, max_line, |line| {
        lines.push(line);
        Ok(())
    })?;
    Ok(Chunk {
        lines,
        watermark: read.watermark,
        restarted: read.restarted,
        partial_bytes: read.partial_bytes,
    })
}

/// What reading one file since its watermark gave, when its lines went to a callback.
#[derive(Debug, Clone)]
pub struct Scanned {
    /// The watermark to store once the cycle has committed.
    pub watermark: Watermark,
    /// Why the file was read from its start again, if it was.
    pub restarted: Option<String>,
    /// Bytes after the last complete line (a line still being written).
    pub partial_bytes: u64,
}

/// Hand each complete line of `path` after its watermark to `f`, one at a time, so memory
/// holds one line (at most `max_line + 1` bytes of it) whatever the file size. A longer
/// line arrives `truncated` with its full `len` and `offset`, for a caller that wants to
/// stream it from the file itself.
pub fn for_each_new(
    path: &Path,
    key: &str,
    prev: Option<&Watermark>,
    max_line: usize,
    mut f: impl FnMut(RawLine) -> Result<()>,
) -> Result<Scanned> {
    let ctx = || format!("reading {}", path.display());
    let mut file = open_regular(path).context(ctx)?;
    let meta = file.metadata().context(ctx)?;
    let ident = identity(&meta);
    let size = meta.len();
    let (start, mut line_no, restarted) =
        match resume(&mut file, prev, &ident, size).context(ctx)? {
            Resume::Unchanged(w) => {
                // Nothing new: skip the read and the second prefix hash.
                return Ok(Scanned {
                    watermark: w.clone(),
                    restarted: None,
                    partial_bytes: 0,
                });
            }
            Resume::At { offset, line } => (offset, line, None),
            Resume::Again(why) => (0, 0, Some(why)),
        };

    file.seek(SeekFrom::Start(start)).context(ctx)?;
    // Read no further than the size seen at open: bytes a writer appends meanwhile wait
    // for the next run, and no file can make this read go on for ever.
    let mut reader = BufReader::with_capacity(64 * 1024, (&mut file).take(size - start));
    let mut offset = start;
    let partial_bytes;
    loop {
        let (mut bytes, mut len, complete) = next_line(&mut reader, max_line).context(ctx)?;
        if !complete {
            if len as usize > max_line {
                // An endless last line (a 100 MB paste, a sparse file of zeros): waiting for
                // its newline would re-read it every run and report nothing.
                line_no += 1;
                bytes.truncate(max_line);
                f(RawLine {
                    line: line_no,
                    offset,
                    bytes,
                    len,
                    truncated: true,
                    unterminated: true,
                })?;
                offset += len;
                partial_bytes = 0;
            } else {
                partial_bytes = len;
            }
            break;
        }
        line_no += 1;
        let this_offset = offset;
        offset += len + 1;
        // A UTF-8 byte order mark at the start of a file (some editors write one) is not
        // part of the first event.
        if this_offset == 0 && bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
            bytes.drain(..3);
            len -= 3;
        }
        if bytes.last() == Some(&b'\r') && len as usize <= max_line + 1 {
            bytes.pop();
            len -= 1;
        }
        let truncated = len as usize > max_line;
        bytes.truncate(max_line);
        if !truncated && bytes.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        f(RawLine {
            line: line_no,
            offset: this_offset,
            bytes,
            len,
            truncated,
            unterminated: false,
        })?;
    }
    let consumed = offset;
    drop(reader);
    let prefix = if consumed > 0 {
        prefix_hash(&mut file, consumed).context(ctx)?
    } else {
        String::new()
    };
    Ok(Scanned {
        watermark: Watermark {
            file: key.to_string(),
            identity: ident,
            offset: consumed,
            line: line_no,
            prefix_hash: prefix,
        },
        restarted,
        partial_bytes,
    })
}

/// Where a read of a file resumes, from its watermark.
enum Resume<'a> {
    /// Nothing was added since the watermark.
    Unchanged(&'a Watermark),
    /// After the watermark's line, at its offset.
    At { offset: u64, line: u64 },
    /// From the start, and why (the file was replaced, shrank or was rewritten).
    Again(String),
}

/// Where to read `file` (of identity `ident` and `size` bytes at open) from, given its
/// watermark `prev` (none: the start).
fn resume<'a>(
    file: &mut File,
    prev: Option<&'a Watermark>,
    ident: &str,
    size: u64,
) -> std::io::Result<Resume<'a>> {
    let Some(w) = prev else {
        return Ok(Resume::At { offset: 0, line: 0 });
    };
    Ok(if w.identity != ident {
        Resume::Again("the file was replaced".to_string())
    } else if size < w.offset {
        Resume::Again(format!(
            "the file shrank below its watermark ({} < {} bytes)",
            size, w.offset
        ))
    } else if w.offset > 0 && prefix_hash(file, w.offset)? != w.prefix_hash {
        Resume::Again("the file was rewritten in place".to_string())
    } else if w.offset == size {
        Resume::Unchanged(w)
    } else {
        Resume::At {
            offset: w.offset,
            line: w.line,
        }
    })
}

/// The next line of `reader`: its first `max_line + 1` bytes (without the newline), its
/// whole length, and whether a newline ended it (`false`: the read reached the end first).
fn next_line(reader: &mut impl BufRead, max_line: usize) -> std::io::Result<(Vec<u8>, u64, bool)> {
    let mut bytes = Vec::new();
    let mut len = 0u64;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok((bytes, len, false));
        }
        let (take, found) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let content = if found {
            &buf[..take - 1]
        } else {
            &buf[..take]
        };
        let room = (max_line + 1).saturating_sub(bytes.len());
        bytes.extend_from_slice(&content[..content.len().min(room)]);
        len += content.len() as u64;
        reader.consume(take);
        if found {
            return Ok((bytes, len, true));
        }
    }
}

/// Append events to a file in the inbox as JSON Lines, under an exclusive lock on that file
/// so concurrent `dream ingest` calls never interleave. If the file ends in a half-written
/// line (a writer that crashed), a newline is written first so that our lines stay whole.
pub fn append(path: &Path, events: &[Event]) -> Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let ctx = || format!("appending to {}", path.display());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).context(|| format!("creating {}", dir.display()))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)
        .context(ctx)?;
    file.lock_exclusive().context(ctx)?;
    let len = file.metadata().context(ctx)?.len();
    let mut out = String::new();
    if len > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1)).context(ctx)?;
        file.read_exact(&mut last).context(ctx)?;
        if last[0] != b'\n' {
            out.push('\n');
        }
    }
    for e in events {
        out.push_str(&e.to_line());
        out.push('\n');
    }
    file.write_all(out.as_bytes())
        .and_then(|_| file.sync_data())
        .context(ctx)?;
    let _ = FileExt::unlock(&file);
    Ok(())
}

/// Note an entry that was not read, in the report and the log.
pub fn skipped(out: &mut Ingested, key: &str, why: &str) {
    let key = secrets::shown(key, 200);
    tracing::warn!(file = %key, "an inbox entry was not read: {why}");
    out.skip(&key, why);
}

/// The quarantine record of a line: its reason and excerpt never show a secret (S8).
pub fn quarantined(
    key: &str,
    line: &RawLine,
    reason: &str,
    excerpts: &mut secrets::Excerpts,
) -> Quarantined {
    let head = &line.bytes[..line.bytes.len().min(4096)];
    Quarantined {
        file: secrets::shown(key, 500),
        line: line.line,
        offset: line.offset,
        reason: secrets::shown(reason, 500),
        excerpt: excerpts.of(&String::from_utf8_lossy(head), 200),
        hash: hex(&Sha256::digest(&line.bytes))[..16].to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, s: &str) {
        std::fs::write(path, s).unwrap();
    }

    #[test]
    fn reads_complete_lines_and_leaves_a_partial_one() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.jsonl");
        write(&p, "one\ntwo\r\n\nthr");
        let c = read_new(&p, "a", None, 100).unwrap();
        let texts: Vec<_> = c
            .lines
            .iter()
            .map(|l| String::from_utf8(l.bytes.clone()).unwrap())
            .collect();
        assert_eq!(texts, vec!["one", "two"]);
        assert_eq!(c.lines[1].line, 2);
        assert_eq!(c.partial_bytes, 3);
        assert_eq!(c.watermark.offset, 10);
        write(&p, "one\ntwo\r\n\nthree\nfour\n");
        let c2 = read_new(&p, "a", Some(&c.watermark), 100).unwrap();
        let texts: Vec<_> = c2
            .lines
            .iter()
            .map(|l| String::from_utf8(l.bytes.clone()).unwrap())
            .collect();
        assert_eq!(texts, vec!["three", "four"]);
        assert_eq!(c2.lines[0].line, 4);
        assert!(c2.restarted.is_none());
    }

    #[cfg(unix)]
    #[test]
    fn only_regular_files_are_opened_and_never_through_a_link_or_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f.jsonl");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        // A FIFO with no writer: a blocking open would never return.
        let err = for_each_new(&fifo, "f", None, 100, |_| Ok(())).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let real = dir.path().join("real");
        write(&real, "{}\n");
        let link = dir.path().join("l.jsonl");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(for_each_new(&link, "l", None, 100, |_| Ok(())).is_err());
        let zero = dir.path().join("z.jsonl");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(for_each_new(&zero, "z", None, 100, |_| Ok(())).is_err());
        let listed = scan(dir.path());
        assert_eq!(listed.files, Vec::<PathBuf>::new());
        assert_eq!(listed.skipped.len(), 3, "{:?}", listed.skipped);
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.jsonl");
        std::fs::write(&p, b"\xEF\xBB\xBFone\ntwo\n").unwrap();
        let c = read_new(&p, "a", None, 100).unwrap();
        assert_eq!(c.lines[0].bytes, b"one");
        assert_eq!(c.lines[1].bytes, b"two");
        assert_eq!(c.watermark.offset, 11);
    }

    #[test]
    fn long_lines_are_truncated_not_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.jsonl");
        write(&p, &format!("{}\nok\n", "x".repeat(300_000)));
        let c = read_new(&p, "a", None, 1000).unwrap();
        assert_eq!(c.lines.len(), 2);
        assert!(c.lines[0].truncated);
        assert_eq!(c.lines[0].bytes.len(), 1000);
        assert_eq!(c.lines[0].len, 300_000);
        assert_eq!(c.lines[1].bytes, b"ok");
    }

    #[test]
    fn truncated_and_rewritten_files_are_read_from_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.jsonl");
        write(&p, "one\ntwo\n");
        let c = read_new(&p, "a", None, 100).unwrap();
        write(&p, "x\n");
        let c2 = read_new(&p, "a", Some(&c.watermark), 100).unwrap();
        assert!(c2.restarted.unwrap().contains("shrank"));
        assert_eq!(c2.lines.len(), 1);
        write(&p, "ONE\ntwo\nmore\n");
        let c3 = read_new(&p, "a", Some(&c.watermark), 100).unwrap();
        assert!(c3.restarted.unwrap().contains("rewritten"));
        assert_eq!(c3.lines.len(), 3);
    }
}
