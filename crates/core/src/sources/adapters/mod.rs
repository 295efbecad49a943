//! Adapters (SPEC S2): other agents' transcripts turned into dream's events.
//!
//! Each format has a pure mapping from one transcript line (a parsed JSON value) to zero or
//! more events, plus counters of what was skipped and why: `claude_code` for Claude Code's
//! session files, `codex` for Codex's rollout files, `gemini` for Gemini CLI's sessions (both
//! the whole-file JSON form and JSON Lines), `copilot` for GitHub Copilot CLI's
//! `events.jsonl`, `opencode` for the rows of opencode's SQLite database. The mapping tables are written down in
//! `docs/sources.md`. Reading files, watermarks and storing are `sources`' business.
//!
//! Every event an adapter builds goes through [`crate::sources::event::from_object`], the one
//! validation path, so secrets are redacted (S8) before anything else sees the text. Before
//! that, the adapters keep private reasoning out (thinking blocks, signatures, encrypted
//! content), replace images and long base64 runs with short placeholders, and cap long text
//! with a note that says how long it was. Unknown line types, block types and subtypes are
//! counted, never an error: both formats change every few weeks.

pub mod capped;
pub mod claude_code;
pub mod codex;
pub mod copilot;
pub mod gemini;
pub mod opencode;

use std::collections::BTreeMap;

use chrono::DateTime;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::sources::event::{self, hex, Parsed, Trust};

/// The formats dream reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// dream's own events, one JSON object per line (docs/sources.md).
    #[default]
    Jsonl,
    /// Claude Code session files (`~/.claude/projects/<project>/*.jsonl`).
    ClaudeCode,
    /// Codex rollout files (`~/.codex/sessions/YYYY/MM/DD/*.jsonl`).
    Codex,
    /// Gemini CLI sessions (`~/.gemini/tmp/<project>/chats/session-*.json` and `*.jsonl`).
    Gemini,
    /// opencode's SQLite database (`~/.local/share/opencode/opencode.db`).
    Opencode,
    /// GitHub Copilot CLI sessions (`~/.copilot/session-state/<id>/events.jsonl`).
    Copilot,
}

impl Format {
    pub const ALL: [Format; 6] = [
        Format::Jsonl,
        Format::ClaudeCode,
        Format::Codex,
        Format::Gemini,
        Format::Opencode,
        Format::Copilot,
    ];

    /// Everything dream knows about reading this format, in one place.
    pub fn descriptor(self) -> &'static Descriptor {
        match self {
            Format::Jsonl => &JSONL,
            Format::ClaudeCode => &claude_code::DESCRIPTOR,
            Format::Codex => &codex::DESCRIPTOR,
            Format::Gemini => &gemini::DESCRIPTOR,
            Format::Opencode => &opencode::DESCRIPTOR,
            Format::Copilot => &copilot::DESCRIPTOR,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.descriptor().name
    }

    /// The format a name (`jsonl`, `claude-code`, `codex`, `gemini`, `opencode`, `copilot`)
    /// says.
    pub fn parse(s: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// Whether lines are transcripts mapped by an adapter (not dream's own events).
    pub fn is_transcript(self) -> bool {
        self.descriptor().map.is_some()
    }

    /// Whether a file (its path relative to the source folder) is one this format reads;
    /// every other file in a source folder is named as not read.
    pub fn reads(self, rel: &std::path::Path) -> bool {
        (self.descriptor().reads)(rel)
    }

    /// Where the format's files usually are, for help and error messages.
    pub fn default_path(self) -> &'static str {
        self.descriptor().default_path
    }
}

/// How a file of a format is laid out, which decides how the engine reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One JSON value per line, appended to (read after a watermark, a line at a time).
    Lines,
    /// One JSON document rewritten whole (read again when it changed, an item at a time).
    Document,
    /// A SQLite database (read-only, the rows changed since a watermark).
    Database,
}

/// An adapter's mapping of one transcript line (or database row) to drafts of events.
pub type MapFn = fn(Value, &mut FileCtx, &mut Counts) -> Vec<Draft>;

/// One transcript format, described once: what the command line calls it and says of it,
/// where its files usually are, which files of a source folder it reads (and which others
/// it knows as companions, so they are not named as unread), the session a file's path
/// says, whether a read from the middle of a file first maps its first line (where the
/// file states its session, folder or model once), how its files are laid out, the prefix
/// of its events' ids, and its mapping. A new format is one descriptor beside its parser
/// (and a `Format` variant naming it for the configuration).
pub struct Descriptor {
    /// The name `--format` and `[[inbox.sources]] format` take.
    pub name: &'static str,
    /// What `dream ingest --help` says of it.
    pub about: &'static str,
    /// Where its files usually are.
    pub default_path: &'static str,
    /// Which files of a source folder it reads (path relative to the folder).
    pub reads: fn(&std::path::Path) -> bool,
    /// The files it reads, in words (for "not read" notes).
    pub reads_what: &'static str,
    /// Files a harness keeps beside its sessions that hold nothing a session file does not.
    pub companion: fn(&std::path::Path) -> bool,
    /// The session a file belongs to, from its path (`None`: the lines say).
    pub session_from_path: fn(&std::path::Path) -> Option<String>,
    /// Whether a read that starts after the first line maps the first line first, to learn
    /// what the file states once.
    pub primes: bool,
    /// How a file (by its path) is laid out.
    pub layout: fn(&std::path::Path) -> Layout,
    /// The prefix of the ids of its events.
    pub id_prefix: &'static str,
    /// The mapping of one line (`None`: dream's own events, parsed by `event::parse_line`).
    pub map: Option<MapFn>,
}

fn jsonl_file(rel: &std::path::Path) -> bool {
    rel.extension().is_some_and(|e| e == "jsonl")
}

/// For descriptors: a format whose folders hold no companion files.
pub fn no_companion(_: &std::path::Path) -> bool {
    false
}

/// For descriptors: a format whose file names say no session.
pub fn no_session(_: &std::path::Path) -> Option<String> {
    None
}

/// For descriptors: a format of appended lines.
pub fn lines(_: &std::path::Path) -> Layout {
    Layout::Lines
}

/// For descriptors: `*.jsonl` files.
pub fn reads_jsonl(rel: &std::path::Path) -> bool {
    jsonl_file(rel)
}

/// dream's own events.
static JSONL: Descriptor = Descriptor {
    name: "jsonl",
    about: "dream's own events, one JSON object per line (docs/sources.md)",
    default_path: "events.jsonl",
    reads: reads_jsonl,
    reads_what: "*.jsonl files",
    companion: no_companion,
    session_from_path: no_session,
    primes: false,
    layout: lines,
    id_prefix: "ev_",
    map: None,
};

/// Longest text kept for a user or assistant message, in bytes.
pub const MESSAGE_MAX: usize = 16 * 1024;
/// Longest text kept for a tool's output.
pub const TOOL_OUTPUT_MAX: usize = 4 * 1024;
/// Longest compact form of a tool call's input.
pub const TOOL_INPUT_MAX: usize = 1024;
/// Longest run of base64-like characters kept as it is; longer runs become a placeholder.
pub const BLOB_MIN: usize = 256;

/// What an adapter learnt about a file so far: the file's own session, the last good
/// timestamp (a line without one borrows it), and format-specific context.
#[derive(Debug, Clone, Default)]
pub struct FileCtx {
    /// The session the file belongs to, when its name or first line says so.
    pub session: Option<String>,
    /// The last valid timestamp seen in this read.
    pub last_ts: Option<String>,
    /// Metadata a file states once and every later event carries (a working folder and
    /// branch, Gemini's project hash).
    pub meta: Map<String, Value>,
    /// The model the file says answers, for its assistant messages.
    pub model: Option<String>,
    /// The file is a sub-agent's thread: its "user" turns are prompts another agent wrote.
    pub subagent: bool,
    /// Whether the file's own header (the line that states its session) has been seen; a
    /// later one belongs to history copied from another session.
    pub seen_header: bool,
}

/// What the adapters did with the lines of a file or a source, for the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Counts {
    /// Transcript lines read.
    pub lines: u64,
    /// Events built (before dedupe against the state).
    pub events: u64,
    /// Lines or parts deliberately not turned into events, by reason
    /// (`line:progress`, `block:thinking`, `mirror:agent_message`, ...).
    pub skipped: BTreeMap<String, u64>,
    /// Line types, block types and subtypes the adapter does not know, by name: ignored, but
    /// worth a look when a harness changes its format.
    pub unknown: BTreeMap<String, u64>,
}

impl Counts {
    pub fn skip(&mut self, reason: impl Into<String>) {
        *self.skipped.entry(reason.into()).or_default() += 1;
    }

    pub fn unknown(&mut self, what: impl Into<String>) {
        *self.unknown.entry(what.into()).or_default() += 1;
    }

    pub fn add(&mut self, other: &Counts) {
        self.lines += other.lines;
        self.events += other.events;
        for (k, v) in &other.skipped {
            *self.skipped.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.unknown {
            *self.unknown.entry(k.clone()).or_default() += v;
        }
    }
}

/// Map one transcript line to events (or reasons a part of it was refused).
pub fn map_line(
    format: Format,
    line: Value,
    ctx: &mut FileCtx,
    counts: &mut Counts,
) -> Vec<Result<Parsed, String>> {
    counts.lines += 1;
    let Some(map) = format.descriptor().map else {
        // dream's own lines are parsed by `event::parse_line`, never here.
        return vec![Err(format!(
            "{} lines are dream's own events, not a transcript",
            format.as_str()
        ))];
    };
    let drafts = map(line, ctx, counts);
    // An owner's message is cut into the person's prose and what they pasted or the
    // harness put there (`turn`), each its own event.
    let out: Vec<_> = drafts
        .into_iter()
        .map(Draft::finish)
        .flat_map(|r| match r {
            Ok(p) => crate::sources::turn::split_parsed(p)
                .into_iter()
                .map(Ok)
                .collect(),
            Err(e) => vec![Err(e)],
        })
        .collect();
    counts.events += out.iter().filter(|r| r.is_ok()).count() as u64;
    out
}

/// An event being built by an adapter.
#[derive(Debug, Clone)]
pub struct Draft {
    pub source: &'static str,
    /// Parts of the transcript's own identity (uuid, block index, call id) the id is
    /// derived from; the text is always added, so distinct texts never share an id.
    pub id_parts: Vec<String>,
    pub ts: Result<String, String>,
    pub kind: &'static str,
    pub text: String,
    pub session: Option<String>,
    pub actor: &'static str,
    pub trust: Trust,
    pub recalled: bool,
    pub meta: Map<String, Value>,
}

impl Draft {
    /// Validate and redact through the one event path.
    pub fn finish(self) -> Result<Parsed, String> {
        let ts = self.ts?;
        let mut h = Sha256::new();
        h.update(self.source.as_bytes());
        for part in &self.id_parts {
            h.update([0u8]);
            h.update(part.as_bytes());
        }
        h.update([0u8]);
        h.update(self.text.as_bytes());
        let prefix =
            Format::parse(self.source).map_or(JSONL.id_prefix, |f| f.descriptor().id_prefix);
        let id = format!("{prefix}{}", &hex(&h.finalize())[..20]);
        let mut obj = Map::new();
        obj.insert("id".into(), Value::String(id));
        obj.insert("ts".into(), Value::String(ts));
        obj.insert("kind".into(), Value::String(self.kind.into()));
        obj.insert("text".into(), Value::String(self.text));
        if let Some(s) = self.session {
            obj.insert("session".into(), Value::String(s));
        }
        obj.insert("actor".into(), Value::String(self.actor.into()));
        obj.insert("source".into(), Value::String(self.source.into()));
        obj.insert("trust".into(), Value::String(self.trust.as_str().into()));
        if self.recalled {
            obj.insert("recalled".into(), Value::Bool(true));
        }
        if !self.meta.is_empty() {
            obj.insert("meta".into(), Value::Object(self.meta));
        }
        event::from_object(obj)
    }
}

/// The line's timestamp when it is valid RFC 3339, else the last one seen in the file;
/// remembers a valid one for the lines after it.
pub fn timestamp(raw: Option<&Value>, ctx: &mut FileCtx) -> Result<String, String> {
    if let Some(Value::String(s)) = raw {
        if DateTime::parse_from_rfc3339(s).is_ok() {
            ctx.last_ts = Some(s.clone());
            return Ok(s.clone());
        }
    }
    ctx.last_ts.clone().ok_or_else(|| match raw {
        Some(v) => format!(
            "no usable timestamp ({}) and none earlier in the file",
            excerpt_json(v)
        ),
        None => "no timestamp and none earlier in the file".to_string(),
    })
}

fn excerpt_json(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 60 {
        format!("{}…", &s[..floor_char_boundary(&s, 60)])
    } else {
        s
    }
}

/// A string field of an object, when present and a string.
pub fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Clean a text for an event: long base64 runs become placeholders, then the text is
/// capped at `max` bytes with a note of its full length. Returns the text and, when it was
/// cut, the original length in bytes.
pub fn clean_text(text: &str, max: usize) -> (String, Option<u64>) {
    let (text, carried) = capped::split_note(text);
    let text = strip_blobs(text);
    let (mut out, cut) = cap(&text, max);
    let full = carried.map(|n| n.max(text.len() as u64));
    match (cut, full) {
        (false, None) => (out, None),
        (_, full) => {
            let n = full.unwrap_or(text.len() as u64);
            out.push_str(&format!("\n[truncated: {n} bytes in all]"));
            (out, Some(n))
        }
    }
}

/// Cut a text to at most `max` bytes on a character boundary, dropping a partly cut word
/// at the end (so no fragment of a key survives the cut to slip past the detectors).
pub fn cap(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_string(), false);
    }
    let end = floor_char_boundary(text, max);
    let mid_word = text[end..]
        .chars()
        .next()
        .is_some_and(|c| !c.is_whitespace());
    let head = &text[..end];
    let head = if mid_word {
        drop_partial_word(head)
    } else {
        head
    };
    (head.trim_end().to_string(), true)
}

/// A text cut in the middle of a word, without that word's fragment: the whole fragment
/// when it is short (a key, a token), else its last 64 bytes.
pub fn drop_partial_word(head: &str) -> &str {
    let end = match head.rfind(char::is_whitespace) {
        Some(ws) if head.len() - ws <= 256 => ws,
        _ => floor_char_boundary(head, head.len().saturating_sub(64)),
    };
    &head[..end]
}

/// The largest character boundary at or below `at`.
pub fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    let mut i = at;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn is_blob_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_' | b'=')
}

/// Replace every run of at least [`BLOB_MIN`] base64-like characters (images, archives,
/// encoded payloads) with `[blob: N chars]`.
pub fn strip_blobs(text: &str) -> std::borrow::Cow<'_, str> {
    let bytes = text.as_bytes();
    if bytes.len() < BLOB_MIN {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out: Option<String> = None;
    let mut last = 0;
    let mut i = 0;
    while i < bytes.len() {
        if !is_blob_byte(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_blob_byte(bytes[i]) {
            i += 1;
        }
        if i - start >= BLOB_MIN {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len() / 2));
            o.push_str(&text[last..start]);
            o.push_str(&format!("[blob: {} chars]", i - start));
            last = i;
        }
    }
    match out {
        None => std::borrow::Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(&text[last..]);
            std::borrow::Cow::Owned(o)
        }
    }
}

/// A short placeholder for an image or document block: its media type, never its data.
pub fn placeholder(kind: &str, block: &Value) -> String {
    let media = block
        .get("source")
        .and_then(|s| str_of(s, "media_type"))
        .or_else(|| str_of(block, "mimeType"))
        .or_else(|| str_of(block, "media_type"))
        .filter(|m| m.len() <= 64 && !m.contains(char::is_whitespace));
    match media {
        Some(m) => format!("[{kind}: {m}]"),
        None => format!("[{kind}]"),
    }
}

/// Input keys that say what a tool call does, most telling first.
const SALIENT: &[&str] = &[
    "command",
    "cmd",
    "pattern",
    "query",
    "url",
    "file_path",
    "path",
    "notebook_path",
    "skill",
    "description",
    "prompt",
    "subject",
];

/// A compact, one-line form of a tool call: its name, the most telling argument bare, the
/// others as `key=value`, each value cut short.
pub fn compact_call(name: &str, input: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    match input {
        Value::Null => {}
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => return compact_call(name, &v),
            _ => parts.push(one_line(s, 400)),
        },
        Value::Object(map) => {
            let first = SALIENT
                .iter()
                .find(|k| map.get(**k).is_some_and(|v| !v.is_null()));
            if let Some(k) = first {
                parts.push(value_text(&map[*k], 400));
            }
            for (k, v) in map {
                if Some(&k.as_str()) == first || v.is_null() {
                    continue;
                }
                parts.push(format!("{k}={}", value_text(v, 120)));
            }
        }
        other => parts.push(value_text(other, 400)),
    }
    let body = parts.join(" ");
    let text = if body.is_empty() {
        name.to_string()
    } else {
        format!("{name}: {body}")
    };
    let text = strip_blobs(&text).into_owned();
    let (mut out, cut) = cap(&text, TOOL_INPUT_MAX);
    if cut {
        out.push_str(" …");
    }
    out
}

/// A value as short text: strings bare (a shell `["bash", "-lc", X]` becomes `X`), arrays
/// of strings joined by spaces, anything else as compact JSON.
fn value_text(v: &Value, max: usize) -> String {
    match v {
        Value::String(s) => one_line(s, max),
        Value::Array(items) if items.iter().all(Value::is_string) => {
            let words: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            match words.as_slice() {
                [sh, flag, script] if sh.ends_with("sh") && flag.starts_with('-') => {
                    one_line(script, max)
                }
                _ => one_line(&words.join(" "), max),
            }
        }
        other => one_line(&other.to_string(), max),
    }
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let (mut out, cut) = cap(&flat, max);
    if cut {
        out.push('…');
    }
    out
}

/// The start of a text that tells what it is, for matching injected context.
pub fn starts_with_tag(text: &str, tag: &str) -> bool {
    let t = text.trim_start();
    t.len() > tag.len() + 1 && t.starts_with('<') && t[1..].starts_with(tag) && {
        let after = t.as_bytes()[1 + tag.len()];
        after == b'>' || after == b' '
    }
}

/// The text between `<tag>` and `</tag>`, if the tag is there.
pub fn tag_body<'a>(text: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&close).map_or(text.len(), |e| start + e);
    Some(&text[start..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_format_is_described_once_under_its_own_name() {
        let mut names = std::collections::BTreeSet::new();
        let mut prefixes = std::collections::BTreeSet::new();
        for f in Format::ALL {
            let d = f.descriptor();
            assert_eq!(
                Format::parse(d.name),
                Some(f),
                "{} names its format",
                d.name
            );
            // The configuration's name for a format is the descriptor's.
            assert_eq!(
                serde_json::to_value(f).unwrap(),
                Value::String(d.name.into())
            );
            assert!(names.insert(d.name), "{} twice", d.name);
            assert!(prefixes.insert(d.id_prefix), "{} twice", d.id_prefix);
            assert_eq!(f.is_transcript(), d.map.is_some());
        }
        let p = std::path::Path::new;
        assert_eq!(
            (Format::Copilot.descriptor().session_from_path)(p("abc/events.jsonl")),
            Some("abc".into())
        );
        assert_eq!(
            (Format::Gemini.descriptor().layout)(p("x/chats/session-1.json")),
            Layout::Document
        );
        assert!((Format::Opencode.descriptor().companion)(p(
            "opencode.db-wal"
        )));
        assert!(!Format::Jsonl.reads(p("notes.txt")));
    }

    #[test]
    fn dream_s_own_lines_are_never_mapped_as_a_transcript() {
        let out = map_line(
            Format::Jsonl,
            json!({"text": "x"}),
            &mut FileCtx::default(),
            &mut Counts::default(),
        );
        assert_eq!(out.len(), 1);
        assert!(out[0]
            .as_ref()
            .is_err_and(|e| e.contains("dream's own events")));
    }

    #[test]
    fn long_text_is_capped_with_a_note_and_no_word_fragment() {
        let text = format!(
            "{} sk-abcdefghijklmnopqrstuvwxyz0123456789",
            "word ".repeat(10)
        );
        let (out, cut) = clean_text(&text, 60);
        assert_eq!(cut, Some(text.len() as u64));
        assert!(out.starts_with("word word"), "{out}");
        assert!(!out.contains("sk-"), "no fragment of the cut word: {out}");
        assert!(
            out.ends_with(&format!("[truncated: {} bytes in all]", text.len())),
            "{out}"
        );
        assert_eq!(clean_text("short", 60), ("short".to_string(), None));
    }

    #[test]
    fn base64_runs_become_placeholders() {
        let blob = "iVBORw0KGgo".repeat(40);
        let text = format!("see data:image/png;base64,{blob} here");
        let out = strip_blobs(&text);
        assert_eq!(
            out,
            format!(
                "see data:image/png;base64,[blob: {} chars] here",
                blob.len()
            )
        );
        let ordinary = "a normal sentence with /some/path-like_things and words".repeat(10);
        assert_eq!(strip_blobs(&ordinary), ordinary);
    }

    #[test]
    fn tool_calls_are_compact() {
        assert_eq!(
            compact_call("Bash", &json!({"command": "ls -la", "timeout": 3000})),
            "Bash: ls -la timeout=3000"
        );
        assert_eq!(
            compact_call(
                "shell",
                &json!("{\"command\":[\"bash\",\"-lc\",\"cargo test\"],\"workdir\":\"/r\"}")
            ),
            "shell: cargo test workdir=/r"
        );
        assert_eq!(compact_call("TodoRead", &json!({})), "TodoRead");
        let long = compact_call(
            "Write",
            &json!({"file_path": "a.txt", "content": "x ".repeat(5000)}),
        );
        assert!(long.len() <= TOOL_INPUT_MAX + 4, "{}", long.len());
    }

    #[test]
    fn tags_are_recognised_only_at_the_start() {
        assert!(starts_with_tag(
            "  <system-reminder>\nx</system-reminder>",
            "system-reminder"
        ));
        assert!(!starts_with_tag(
            "hello <system-reminder>",
            "system-reminder"
        ));
        assert!(!starts_with_tag("<system-reminders>", "system-reminder"));
        assert_eq!(tag_body("<a>in</a> out", "a"), Some("in"));
    }
}
