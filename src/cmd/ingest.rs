//! `dream ingest [--format jsonl|claude-code|codex] [--dry-run] [PATH|-]...`: validate
//! events, or turn an agent's transcripts into events, and append them to the inbox.
//!
//! Files and folders (searched for `*.jsonl`) are read line by line through
//! `sources::map_file`, the same path a cycle reads `[[inbox.sources]]` with, so memory
//! stays flat whatever their size; events are appended in batches.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::cli::{Global, IngestArgs};
use dream_core::sources::adapters::{Counts, Format};
use dream_core::sources::event::{Event, Parsed};
use dream_engine::edges::inbox;
use dream_engine::edges::sources::{self, FileRead};
use dream_engine::error::{Context, Error, Result, EXIT_FAILURE, EXIT_OK};

/// Events are appended in batches of this many.
const BATCH: usize = 2000;

/// Where accepted events go: the inbox file, in batches, or nowhere in a dry run.
struct Out {
    file: PathBuf,
    dry_run: bool,
    batch: Vec<Event>,
    appended: usize,
    redacted: usize,
    /// Hashes of the ids accepted in this run (8 bytes each, whatever the input size): a
    /// transcript repeats some (memory files loaded every turn), and the inbox would take a
    /// repeat with another timestamp for a conflict.
    seen: HashSet<u64>,
    repeated: usize,
}

impl Out {
    fn push(&mut self, p: Parsed) -> Result<()> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        p.event.id.hash(&mut h);
        if !self.seen.insert(h.finish()) {
            self.repeated += 1;
            return Ok(());
        }
        if !p.redacted.is_empty() {
            self.redacted += 1;
        }
        self.batch.push(p.event);
        if self.batch.len() >= BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if !self.dry_run {
            inbox::append(&self.file, &self.batch)?;
        }
        self.appended += self.batch.len();
        self.batch.clear();
        Ok(())
    }
}

pub fn run(g: &Global, a: &IngestArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let config = dream_engine::config::load(&root)?;
    let now = super::now(g)?;
    let max = config.inbox.max_event_bytes;
    let mut out = Out {
        file: root
            .join(&config.inbox.path)
            .join(format!("ingest-{}.jsonl", now.format("%Y-%m-%d"))),
        dry_run: a.dry_run,
        batch: Vec::new(),
        appended: 0,
        redacted: 0,
        seen: HashSet::new(),
        repeated: 0,
    };
    let inputs: Vec<PathBuf> = if a.files.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        a.files.clone()
    };
    let mut refused = 0usize;
    let mut files = 0usize;
    let mut partial = 0usize;
    let mut unread = 0usize;
    let mut counts = Counts::default();
    for input in &inputs {
        if input.as_os_str() == "-" {
            if a.format.is_transcript() {
                return Err(Error::Usage(format!(
                    "--format {} reads files or folders, not standard input; for example: dream ingest --format {} {}",
                    a.format.as_str(),
                    a.format.as_str(),
                    default_folder(a.format)
                )));
            }
            refused += read_stdin(max, &mut out)?;
            continue;
        }
        if !input.exists() {
            return Err(Error::Usage(format!(
                "{} does not exist; give files or folders to read",
                input.display()
            )));
        }
        let listing = sources::list_all(input, a.format, &[], &[]);
        for (path, why) in &listing.skipped {
            unread += 1;
            eprintln!("not read: {}: {why}", path.display());
        }
        for file in listing.files {
            files += 1;
            let key = file.display().to_string();
            let read = FileRead {
                path: &file,
                key: &key,
                format: a.format,
                prev: None,
                max_line: max,
                to_end: true,
            };
            let scanned = sources::map_file(&read, &mut counts, |line, parsed| {
                match parsed {
                    Ok(p) => out.push(p)?,
                    Err(reason) => {
                        refused += 1;
                        eprintln!("{key}:{}: {reason}", line.line);
                    }
                }
                Ok(())
            })?;
            if scanned.partial_bytes > 0 {
                partial += 1;
                eprintln!(
                    "{key}: left a half-written last line ({} bytes) unread",
                    scanned.partial_bytes
                );
            }
        }
    }
    out.flush()?;
    print_summary(a, &out, files, refused, partial, &counts);
    if unread > 0 {
        eprintln!(
            "not read: {unread} entries no {} adapter reads (listed above)",
            a.format.as_str()
        );
    }
    if refused > 0 && out.appended == 0 {
        return Err(Error::Input(format!(
            "no valid event in {refused} refused lines; see the reasons above"
        )));
    }
    Ok(if refused > 0 { EXIT_FAILURE } else { EXIT_OK })
}

/// dream's own events from standard input; returns how many lines were refused.
fn read_stdin(max: usize, out: &mut Out) -> Result<usize> {
    let mut reader = BufReader::new(std::io::stdin().lock());
    let mut refused = 0;
    let mut line_no = 0u64;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .context(|| "reading standard input".into())?;
        if n == 0 {
            break;
        }
        line_no += 1;
        while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            buf.pop();
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match dream_core::sources::turn::parse_line(&buf, max) {
            Ok(parts) => {
                for p in parts {
                    out.push(p)?;
                }
            }
            Err(reason) => {
                refused += 1;
                eprintln!("-:{line_no}: {reason}");
            }
        }
    }
    Ok(refused)
}

fn default_folder(format: Format) -> &'static str {
    format.default_path()
}

fn print_summary(
    a: &IngestArgs,
    out: &Out,
    files: usize,
    refused: usize,
    partial: usize,
    counts: &Counts,
) {
    let verb = if a.dry_run {
        "would append"
    } else {
        "appended"
    };
    let mut line = format!("{verb} {} events to {}", out.appended, display(&out.file));
    if out.redacted > 0 {
        line.push_str(&format!(" ({} with secrets redacted)", out.redacted));
    }
    if out.repeated > 0 {
        line.push_str(&format!("; skipped {} repeated ids", out.repeated));
    }
    if refused > 0 {
        line.push_str(&format!("; refused {refused} lines (listed above)"));
    }
    eprintln!("{line}");
    if a.format.is_transcript() {
        eprintln!(
            "read {} {} transcript lines from {files} files{}",
            counts.lines,
            a.format.as_str(),
            if partial > 0 {
                format!(" ({partial} half-written last lines left)")
            } else {
                String::new()
            }
        );
        if !counts.skipped.is_empty() {
            eprintln!("skipped (by design): {}", tally(&counts.skipped));
        }
        if !counts.unknown.is_empty() {
            eprintln!(
                "unknown types, ignored: {} (a newer {} format? see docs/sources.md)",
                tally(&counts.unknown),
                a.format.as_str()
            );
        }
    }
}

fn tally(map: &std::collections::BTreeMap<String, u64>) -> String {
    let mut items: Vec<_> = map.iter().collect();
    items.sort_by(|x, y| y.1.cmp(x.1).then(x.0.cmp(y.0)));
    let mut shown: Vec<String> = items
        .iter()
        .take(12)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if items.len() > 12 {
        shown.push(format!("and {} more kinds", items.len() - 12));
    }
    shown.join(", ")
}

fn display(p: &Path) -> String {
    p.display().to_string()
}
