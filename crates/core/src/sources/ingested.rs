//! What ingest read, as plain data: the counts the cycle report shows (per inbox and per
//! `[[inbox.sources]]` entry), and the rows the cycle stores once its commits succeeded
//! (new event ids, per-file watermarks, quarantined lines). `dream`'s `edges::ingest` and
//! `edges::sources` fill it; `report` and the state transaction read it.

use serde::{Deserialize, Serialize};

use crate::sources::adapters::{Counts, Format};

/// What ingest did, for the report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Ingested {
    pub files: usize,
    pub lines: usize,
    pub new_events: usize,
    pub duplicates: usize,
    pub quarantined: usize,
    /// Events that had a secret redacted.
    pub redacted: usize,
    /// Bytes of half-written last lines left for the next run.
    pub partial_bytes: u64,
    /// Files read again from their start, and why.
    pub restarted: Vec<String>,
    /// Inbox entries not read, each `path: why` (a symbolic link, a FIFO, a file that
    /// cannot be read); the other files were read as usual.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// What each `[[inbox.sources]]` entry gave.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceReport>,
    #[serde(skip)]
    pub new_ids: Vec<String>,
    #[serde(skip)]
    pub watermarks: Vec<Watermark>,
    /// The first [`Ingested::KEEP_QUARANTINED`] lines quarantined by this run (all of them
    /// are in the state database; a garbage file of millions of lines is not held here).
    #[serde(skip)]
    pub quarantine: Vec<Quarantined>,
}

impl Ingested {
    pub const KEEP_QUARANTINED: usize = 100;

    /// Count a quarantined line, keeping the first few for the report.
    pub fn quarantined_line(&mut self, q: Quarantined) {
        self.quarantined += 1;
        if self.quarantine.len() < Self::KEEP_QUARANTINED {
            self.quarantine.push(q);
        }
    }

    /// Note an inbox entry that was not read.
    pub fn skip(&mut self, path: &str, why: &str) {
        self.skipped.push(format!("{path}: {why}"));
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SourceReport {
    pub format: Format,
    /// The path as configured.
    pub path: String,
    /// The folder or file does not exist (yet): nothing to read, not an error.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub missing: bool,
    pub files: usize,
    pub new_events: usize,
    pub duplicates: usize,
    pub quarantined: usize,
    /// Lines read, events built, what was skipped and which types were unknown.
    #[serde(flatten)]
    pub counts: Counts,
}

impl SourceReport {
    /// One line for the report table.
    pub fn summary(&self) -> String {
        let head = format!("{} {}:", self.format.as_str(), self.path);
        if self.missing {
            return format!("{head} not there (yet); nothing read");
        }
        let mut s = format!(
            "{head} {} new events from {} lines in {} files ({} seen before, {} quarantined)",
            self.new_events, self.counts.lines, self.files, self.duplicates, self.quarantined
        );
        if !self.counts.unknown.is_empty() {
            let names: Vec<String> = self
                .counts
                .unknown
                .iter()
                .map(|(k, v)| format!("{k} ({v})"))
                .collect();
            s.push_str(&format!("; unknown types ignored: {}", names.join(", ")));
        }
        s
    }
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
