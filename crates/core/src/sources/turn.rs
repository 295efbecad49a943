//! A person's turn split into what they wrote, what they pasted, and what the harness put
//! there.
//!
//! A coding session's "user" messages are mostly not the person's words: a prompt carries
//! a pasted error log, a file, a spec of forty pages, a table; the harness wraps the turn
//! in its own text (`<ide_opened_file>`, `<system-reminder>`, a slash command, an
//! environment block). Only what the person wrote may become memory in their voice, so
//! every owner message is cut here into parts, each kept as an event of its own kind
//! (nothing is lost, and recall still finds a paste):
//!
//! - [`PartKind::Prose`]: the person's own sentences (kind `message`, trust `owner`);
//! - [`PartKind::Paste`]: material they pasted: fenced or indented code, stack traces and
//!   logs, diffs, tables, headings and the documents under them, JSON/YAML/XML, lines
//!   mostly of symbols, a lone path or URL (kind `paste`, trust `external`);
//! - [`PartKind::Injected`]: text the harness wrote into the turn, in its compound-named
//!   tags (`<ide_selection>`, `<environment_context>`, `<command-args>`...) or its markers
//!   (`[Request interrupted by user]`) (kind `injected`, trust `external`);
//! - [`PartKind::Command`]: a slash command (`/model opus`), an instruction to the harness
//!   (kind `command`, trust `tool`).
//!
//! The rules read the shape of lines, never their words: a line is material when it is
//! built like code, a log, a table or data, and a paragraph is a paste when most of its
//! lines are. They are measured on the labelled turns of `fixtures/devsets/turns-*.txt`
//! (`dream eval turns`; precision and recall in docs/BENCHMARKS.md;
//! `crates/core/tests/turns.rs` holds them). Pure.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use crate::sources::event::{Event, Parsed, Trust};

/// What a part of a turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PartKind {
    Prose,
    Paste,
    Injected,
    Command,
}

impl PartKind {
    /// The event kind a part is stored as.
    pub fn event_kind(self) -> &'static str {
        match self {
            PartKind::Prose => "message",
            PartKind::Paste => "paste",
            PartKind::Injected => "injected",
            PartKind::Command => "command",
        }
    }

    /// The label the dev set uses.
    pub fn as_str(self) -> &'static str {
        match self {
            PartKind::Prose => "prose",
            PartKind::Paste => "paste",
            PartKind::Injected => "injected",
            PartKind::Command => "command",
        }
    }

    pub fn parse(s: &str) -> Option<PartKind> {
        [
            PartKind::Prose,
            PartKind::Paste,
            PartKind::Injected,
            PartKind::Command,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// Event kinds that are parts of a turn but not the owner's words.
pub const NOT_OWNER_WORDS: &[&str] = &["paste", "injected", "command"];

/// An owner's message as the events of its parts: the first keeps the message's id, the
/// others take `<id>.<n>`; each part's meta says which part of how many it is (`part`,
/// `parts`) and of which turn (`turn`). A message that is all prose, and every other
/// event, comes back as it was. Secrets were redacted from the whole text before.
pub fn split_parsed(p: Parsed) -> Vec<Parsed> {
    let e = &p.event;
    if e.kind != "message" || e.trust != Trust::Owner || e.recalled {
        return vec![p];
    }
    let parts = split(&e.text);
    if parts.len() <= 1 && parts.first().is_none_or(|x| x.kind == PartKind::Prose) {
        return vec![p];
    }
    let n = parts.len();
    let Parsed { event, redacted } = p;
    parts
        .into_iter()
        .enumerate()
        .map(|(i, part)| {
            let mut ev: Event = event.clone();
            if i > 0 {
                ev.id = format!("{}.{i}", event.id);
            }
            ev.kind = part.kind.event_kind().to_string();
            ev.text = part.text;
            match part.kind {
                PartKind::Prose => {}
                PartKind::Paste => ev.trust = Trust::External,
                PartKind::Injected => {
                    ev.trust = Trust::External;
                    ev.actor = Some("system".into());
                }
                PartKind::Command => ev.trust = Trust::Tool,
            }
            let mut meta = match ev.meta.take() {
                Some(Value::Object(m)) => m,
                _ => serde_json::Map::new(),
            };
            meta.insert("turn".into(), Value::String(event.id.clone()));
            meta.insert("part".into(), Value::from(i + 1));
            meta.insert("parts".into(), Value::from(n));
            ev.meta = Some(Value::Object(meta));
            Parsed {
                event: ev,
                redacted: if i == 0 { redacted.clone() } else { Vec::new() },
            }
        })
        .collect()
}

/// [`crate::sources::event::parse_line`], then the owner's message cut into its parts
/// ([`split_parsed`]): how every line of dream's own inbox format is read.
pub fn parse_line(bytes: &[u8], max_bytes: usize) -> Result<Vec<Parsed>, String> {
    crate::sources::event::parse_line(bytes, max_bytes).map(split_parsed)
}

/// Whether an event holds the owner's own words: the person's prose, not recalled, not a
/// tool's, not a part of a turn they pasted or the harness wrote. Only such events count
/// as support, sessions and days, and establish a fact.
pub fn owner_statement(trust: Trust, kind: &str, recalled: bool) -> bool {
    trust == Trust::Owner
        && !recalled
        && !kind.starts_with("tool_")
        && !NOT_OWNER_WORDS.contains(&kind)
        && !matches!(kind, "session_summary" | "memory")
}

/// One part of a turn: a run of whole lines of the original text, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub kind: PartKind,
    pub text: String,
}

/// A turn's text cut into parts, in order; adjacent parts of one kind are joined. The
/// parts' texts, joined with newlines, hold every non-blank line of the turn.
pub fn split(text: &str) -> Vec<Part> {
    // Leading blank lines go, not the first line's indentation (an indented paste).
    let start = text
        .char_indices()
        .take_while(|(_, c)| c.is_whitespace())
        .filter(|(_, c)| *c == '\n')
        .map(|(i, _)| i + 1)
        .last()
        .unwrap_or(0);
    let trimmed = text[start..].trim_end();
    if trimmed.trim().is_empty() {
        return Vec::new();
    }
    if is_slash_command(trimmed.trim_start()) {
        return vec![Part {
            kind: PartKind::Command,
            text: trimmed.to_string(),
        }];
    }
    let mut parts: Vec<Part> = Vec::new();
    for (kind, chunk) in tagged(trimmed) {
        match kind {
            Some(k) => push(&mut parts, k, chunk),
            None => {
                for (k, t) in untagged(chunk) {
                    push(&mut parts, k, &t);
                }
            }
        }
    }
    after_a_paste(parts)
}

/// A paragraph after a paste that reads like a page rather than a prompt (two sentences
/// or more, and long) is most often the rest of what was pasted: a search result's
/// summary, an agent's report. The person's own words after a paste are a line or two.
fn after_a_paste(parts: Vec<Part>) -> Vec<Part> {
    let mut out: Vec<Part> = Vec::new();
    let mut pasted = false;
    for p in parts {
        let mut kind = p.kind;
        if kind == PartKind::Paste {
            pasted = true;
        } else if kind == PartKind::Prose && pasted {
            let paragraphs: Vec<&str> = p.text.split("\n\n").collect();
            let mut kept = Vec::new();
            let mut moved = Vec::new();
            for para in paragraphs {
                let sentences = crate::text::phrases::sentences(para).len();
                if para.len() >= PAGE_LIKE_BYTES && sentences >= 2 {
                    moved.push(para);
                } else {
                    kept.push(para);
                }
            }
            if kept.is_empty() && moved.len() == 1 {
                let (page, own) = own_last_line(moved[0]);
                push(&mut out, PartKind::Paste, page);
                push(&mut out, PartKind::Prose, own);
                continue;
            } else if kept.is_empty() {
                kind = PartKind::Paste;
            } else if !moved.is_empty() {
                // Keep order: re-split this part paragraph by paragraph.
                for para in p.text.split("\n\n") {
                    if moved.contains(&para) {
                        let (page, own) = own_last_line(para);
                        push(&mut out, PartKind::Paste, page);
                        push(&mut out, PartKind::Prose, own);
                    } else {
                        push(&mut out, PartKind::Prose, para);
                    }
                }
                continue;
            }
        }
        push(&mut out, kind, &p.text);
    }
    out
}

/// A page-like paragraph and its last line, when that line is short and on its own line
/// (a prompt typed under the paste: "fix it please"); else the paragraph and nothing.
fn own_last_line(para: &str) -> (&str, &str) {
    match para.trim_end().rsplit_once('\n') {
        Some((page, last)) if last.trim().len() < 80 && !last.trim().is_empty() => (page, last),
        _ => (para, ""),
    }
}

/// A paragraph after a paste at least this long (and of two sentences or more) is taken
/// for part of the paste.
const PAGE_LIKE_BYTES: usize = 160;

/// Each line of a turn with the kind of the part it went to: what the dev set's labels
/// are compared with.
pub fn label_lines(text: &str) -> Vec<(PartKind, String)> {
    split(text)
        .into_iter()
        .flat_map(|p| {
            p.text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| (p.kind, l.trim().to_string()))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn push(parts: &mut Vec<Part>, kind: PartKind, text: &str) {
    let text = text.trim_matches('\n');
    if text.trim().is_empty() {
        return;
    }
    match parts.last_mut() {
        Some(last) if last.kind == kind => {
            last.text.push('\n');
            last.text.push_str(text);
        }
        _ => parts.push(Part {
            kind,
            text: text.to_string(),
        }),
    }
}

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("the turn patterns compile"))
}

/// `/name` or `/name args`: a harness command, not a sentence. A path (`/home/me/x is
/// broken`) has a second slash in its first word and is not one.
pub fn is_slash_command(text: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    let first = text.lines().next().unwrap_or("");
    re(&RE, r"^/[A-Za-z][A-Za-z0-9_:.-]{0,40}(\s|$)").is_match(first)
}

/// Markers a harness writes as a whole turn.
fn is_marker(text: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    re(
        &RE,
        r"^\[(Request interrupted by user[^\]]*|Image #\d+[^\]]*)\]$",
    )
    .is_match(text.trim())
}

/// The placeholder an adapter writes for an image or a document (`[image: image/png]`).
fn is_placeholder(t: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    re(&RE, r"^\[(image|document|blob)(: [^\]]*)?\]$").is_match(t)
}

/// The turn cut at harness tags: `<compound-name ...>...</compound-name>` (a tag whose
/// name joins words with `-` or `_`, as harnesses name theirs and HTML never does), each
/// with its body, is injected; the text between them is returned unlabelled.
fn tagged(text: &str) -> Vec<(Option<PartKind>, &str)> {
    static OPEN: OnceLock<Regex> = OnceLock::new();
    let open = re(&OPEN, r"<([a-z][a-z0-9]*(?:[_-][a-z0-9]+)+)(?:\s[^<>]*)?>");
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(m) = open.captures_at(text, at) {
        let whole = m.get(0).expect("a match");
        let name = &m[1];
        let close = format!("</{name}>");
        let end = match text[whole.end()..].find(&close) {
            Some(e) => whole.end() + e + close.len(),
            // An unclosed harness tag runs to the end of its line.
            None => text[whole.end()..]
                .find('\n')
                .map_or(text.len(), |e| whole.end() + e),
        };
        if whole.start() > at {
            out.push((None, &text[at..whole.start()]));
        }
        out.push((Some(PartKind::Injected), &text[whole.start()..end]));
        at = end;
    }
    if at < text.len() {
        out.push((None, &text[at..]));
    }
    out
}

/// Text without harness tags, cut into prose and pastes: fenced blocks are pastes; the
/// rest is read paragraph by paragraph, and line by line inside a paragraph.
fn untagged(text: &str) -> Vec<(PartKind, String)> {
    let mut out: Vec<(PartKind, String)> = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    // Pass 1: fences.
    let mut segments: Vec<(bool, Vec<&str>)> = Vec::new(); // (fenced, lines)
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if let Some(fence) = fence_of(l) {
            let mut block = vec![l];
            i += 1;
            while i < lines.len() {
                block.push(lines[i]);
                let closes = lines[i].trim_start().starts_with(fence);
                i += 1;
                if closes {
                    break;
                }
            }
            segments.push((true, block));
        } else {
            match segments.last_mut() {
                Some((false, block)) => block.push(l),
                _ => segments.push((false, vec![l])),
            }
            i += 1;
        }
    }
    for (fenced, block) in segments {
        if fenced {
            out.push((PartKind::Paste, block.join("\n")));
        } else {
            out.extend(unfenced(&block));
        }
    }
    out
}

fn fence_of(line: &str) -> Option<&'static str> {
    let t = line.trim_start();
    if t.starts_with("```") {
        Some("```")
    } else if t.starts_with("~~~") {
        Some("~~~")
    } else {
        None
    }
}

/// How a line of text is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Blank,
    /// A markdown heading, a rule or a title in capitals: a document's structure.
    Heading,
    Material,
    Prose,
}

/// Lines outside fences: a pasted document (a heading, then a long run of text under
/// it) is a paste from its heading on; otherwise paragraph by paragraph, a paragraph
/// mostly of material is a paste, and inside a prose paragraph a run of material lines
/// is cut out as its own paste.
fn unfenced(lines: &[&str]) -> Vec<(PartKind, String)> {
    let shapes: Vec<Shape> = lines.iter().map(|l| shape(l)).collect();
    let mut out = Vec::new();
    // A document pasted whole: from a heading on, when what follows is long, up to its
    // last structured line; a short last paragraph after that is the person's again.
    if let Some(h) = shapes.iter().position(|s| *s == Shape::Heading) {
        let rest: usize = lines[h..].iter().map(|l| l.len() + 1).sum();
        let structured = shapes[h..]
            .iter()
            .filter(|s| matches!(s, Shape::Heading | Shape::Material))
            .count();
        if rest >= DOCUMENT_MIN_BYTES || (structured >= 2 && rest >= 200) {
            // The document ends at its last structured line; up to two short prose lines
            // after it are the person's ("fix it please").
            let mut end = lines.len();
            if let Some(last) = shapes
                .iter()
                .rposition(|s| matches!(s, Shape::Heading | Shape::Material))
            {
                let tail: Vec<&&str> = lines[last + 1..]
                    .iter()
                    .filter(|l| !l.trim().is_empty())
                    .collect();
                if !tail.is_empty() && tail.len() <= 2 && tail.iter().all(|l| l.len() < 200) {
                    end = last + 1;
                }
            }
            out.extend(paragraphs(&lines[..h], &shapes[..h]));
            out.push((PartKind::Paste, lines[h..end].join("\n")));
            out.extend(paragraphs(&lines[end..], &shapes[end..]));
            return out;
        }
    }
    out.extend(paragraphs(lines, &shapes));
    out
}

/// A heading followed by this much text is a document, not a message.
const DOCUMENT_MIN_BYTES: usize = 400;

fn paragraphs(lines: &[&str], shapes: &[Shape]) -> Vec<(PartKind, String)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < lines.len() {
        if shapes[start] == Shape::Blank {
            start += 1;
            continue;
        }
        let mut end = start;
        while end < lines.len() && shapes[end] != Shape::Blank {
            end += 1;
        }
        out.extend(paragraph(&lines[start..end], &shapes[start..end]));
        start = end;
    }
    out
}

fn paragraph(lines: &[&str], shapes: &[Shape]) -> Vec<(PartKind, String)> {
    let material = shapes
        .iter()
        .filter(|s| matches!(s, Shape::Material | Shape::Heading))
        .count();
    // Indented lines after the first: a code block (a list's continuation is prose and
    // reads as prose line by line).
    let indented = lines.len() >= 2
        && lines
            .iter()
            .all(|l| l.starts_with("    ") || l.starts_with('\t') || l.trim().is_empty())
        && shapes.contains(&Shape::Material);
    if indented || (material == lines.len()) {
        return vec![(PartKind::Paste, lines.join("\n"))];
    }
    // Otherwise line by line: material lines are a paste; prose lines between material
    // lines of the paragraph (a log's messages, comments in code) are too.
    let is_mat = |k: usize| matches!(shapes[k], Shape::Material | Shape::Heading);
    let mut out: Vec<(PartKind, String)> = Vec::new();
    for (k, line) in lines.iter().enumerate() {
        let between = (0..k).any(is_mat) && (k + 1..lines.len()).any(is_mat);
        let kind = if is_mat(k) || between {
            PartKind::Paste
        } else {
            PartKind::Prose
        };
        match out.last_mut() {
            Some((last, text)) if *last == kind => {
                text.push('\n');
                text.push_str(line);
            }
            _ => out.push((kind, line.to_string())),
        }
    }
    out
}

fn shape(line: &str) -> Shape {
    let t = line.trim();
    if t.is_empty() {
        return Shape::Blank;
    }
    if is_heading(t) {
        return Shape::Heading;
    }
    // dream's own placeholder for an attachment stays with the words about it.
    if is_placeholder(t) {
        return Shape::Prose;
    }
    if is_marker(t) || is_material(line, t) {
        Shape::Material
    } else {
        Shape::Prose
    }
}

fn is_heading(t: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    // `# Title`, `## 4. Section`, a rule (`---`, `===`, `***`), or a title in capitals of
    // three words or more (`SECTION 4 — SYSTEM PRECOMPILE DETAILS`).
    if re(&RE, r"^(#{1,6}\s+\S|(-{3,}|={3,}|\*{3,}|_{3,})$)").is_match(t) {
        return true;
    }
    // A line in bold alone, as a report's section title (`**Key Dependencies:**`).
    if t.len() > 4 && t.starts_with("**") && (t.ends_with("**") || t.ends_with("**:")) {
        return true;
    }
    let letters: Vec<char> = t.chars().filter(|c| c.is_alphabetic()).collect();
    letters.len() >= 8
        && t.split_whitespace().count() >= 3
        && letters.iter().all(|c| !c.is_lowercase())
        && letters.iter().any(|c| c.is_uppercase())
}

/// Whether a line is built like code, a log, a table, a trace or data rather than a
/// sentence.
fn is_material(line: &str, t: &str) -> bool {
    static STRUCT: OnceLock<Regex> = OnceLock::new();
    static CODE: OnceLock<Regex> = OnceLock::new();
    static LOG: OnceLock<Regex> = OnceLock::new();
    static KEYVAL: OnceLock<Regex> = OnceLock::new();
    // Tables, diffs, traces, compiler frames, shell prompts, quotes, markup, data.
    let structural = re(
        &STRUCT,
        r#"(?x)
        ^\|.*\|                                  # a table row
        | ^(\+\+\+|---|@@)\s                     # a diff header
        | ^diff\ --git
        | ^at\ \S+.*[(:]\S*\d+(:\d+)?\)?$        # a JavaScript or Java stack frame
        | ^File\ ".*",\ line\ \d+                # a Python frame
        | ^Traceback\ \(most\ recent
        | ^\d+\s*\|                              # a compiler's numbered source line
        | ^-->\s                                 # rustc's location
        | ^\^+\s*$|^[~^\s]*\^[~^]*\s*$           # a caret underline
        | ^(error|warning|note|help)(\[[A-Z]?\d+\])?:  # compiler diagnostics
        | ^\[?[A-Za-z]*(Error|Exception)(:|\]|\s*$)  # an exception line
        | \b(error|warning)\ [A-Z]*\d+:           # a diagnostic code (TS2307, E0308)
        | ^(//|/\*|\*/|\#!)                      # a comment in code
        | [{,]\s*"[^"]+"\s*:                     # JSON inside a line
        | \*\*[^*\s][^*]*\*\*                    # bold markup: formatted text, not typed
        | [\u{2500}-\u{257F}]                    # box drawing: a tree or a table
        | ^[-+]\ \S+\ v?\d+\.\d                  # a package and its version
        | ^[a-z]+:?\ \d+$                        # a label and a count (`total 40`)
        | ^[\u{2713}\u{2714}\u{2717}\u{2718}\u{25B2}\u{26A0}\u{2192}]  # a tool's status glyph
        | ^\$\s                                  # a shell prompt
        | ^>\s?                                  # a quoted line: someone else's words
        | ^</?[A-Za-z][A-Za-z0-9]*(\s[^>]*)?/?>  # markup
        | ^[\[\]{}(),;]+$                        # a bracket alone
        | ^"[^"]+"\s*:                           # a JSON key
        | ^\{\s*"                                # a JSON object
        | ^[-+]?\d[\d.,:/\s-]*([A-Za-z%]{0,6})?$ # a number (with its unit) alone
        "#,
    );
    if structural.is_match(t) {
        return true;
    }
    // ` * text` in a block comment (a list's `* item` is not indented).
    if (line.starts_with(" *") || line.starts_with("\t*")) && !t.starts_with("**") {
        return true;
    }
    let log = re(
        &LOG,
        r"^(\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\[?\d{2}:\d{2}:\d{2}|\[?(INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL)\b|[a-z][\w.-]+:?\s+(warn|WARN|ERR!|error|ERROR|info|INFO|notice)\b|[d-][rwx-]{9}\s)",
    );
    if log.is_match(t) {
        return true;
    }
    let code = re(
        &CODE,
        r#"(?x)
        ^(if|else|elif|for|while|return|def|class|fn|pub|let|const|var|import|from|use|
          function|async|await|export|package|func|struct|impl|match|try|except|catch|
          switch|case|println[!]|print|console|self|this|int|void|static|private|public|
          \#include|\#define|require|module|SELECT|INSERT|UPDATE|CREATE)
          (\s|\(|\.|$).*([{}:;,(]|\)|=>|->|==|!=|::|\s=\s)\s*$
        | (;|\{|\}|\);|=>\s*\{|\)\s*\{)$          # a statement's end
        | ^[}\])]                                 # a closing bracket
        | ^[\w.]+\s*(=|\+=|:=)\s*\S.*[;)\]}"']$  # an assignment
        "#,
    );
    if code.is_match(t) {
        return true;
    }
    // Braces and semicolons together, or a line that ends on an assignment's `=`: code
    // (`const messages: { key: string; value: string }[] =`).
    let punct = t.chars().filter(|c| matches!(c, '{' | '}' | ';')).count();
    if punct >= 3 || (t.ends_with(" =") && t.split_whitespace().count() >= 2) {
        return true;
    }
    // YAML or config: `key: value` with an identifier for a key.
    if re(&KEYVAL, r"^[A-Za-z_][A-Za-z0-9_.-]*\s*[:=]\s*\S+$").is_match(t) && !t.contains(". ") {
        let key_len = t.find([':', '=']).unwrap_or(0);
        if t[..key_len]
            .chars()
            .any(|c| c == '_' || c == '.' || c.is_ascii_digit())
            || t.split_whitespace().count() <= 2
        {
            return true;
        }
    }
    // One identifier alone: camelCase or with separators in it.
    let camel = t.len() >= 4
        && !t.contains(' ')
        && t.chars().next().is_some_and(|c| c.is_lowercase())
        && t.chars().any(|c| c.is_uppercase());
    if camel {
        return true;
    }
    // A lone path, URL or identifier: one "word" with separators in it.
    if !t.contains(' ') && t.len() >= 3 && t.chars().any(|c| "/\\:._()=<>{}[]".contains(c)) {
        return true;
    }
    // A shell command: a well-known program, then flags, paths or names (not a sentence
    // that starts with "make" or "go").
    static SHELL: OnceLock<Regex> = OnceLock::new();
    if re(
        &SHELL,
        r"^(sudo\s+)?(npm|pnpm|yarn|cargo|pip3?|python3?|node|git|docker|kubectl|make|cd|ls|cat|curl|wget|brew|apt(-get)?|go|rustc|npx|uv|mix|bundle|rails|gradle|mvn|dotnet|terraform|helm|ssh|scp|grep|rg|sed|awk|chmod|mkdir|rm|mv|cp|export|source)\s+\S",
    )
    .is_match(t)
    {
        let words: Vec<&str> = t.split_whitespace().collect();
        let technical = words[1..]
            .iter()
            .filter(|w| identifier_like(w) || w.starts_with('-'))
            .count();
        if words.len() <= 3 || technical * 3 >= words.len() - 1 {
            return true;
        }
    }
    // SQL, its keywords in capitals.
    static SQL: OnceLock<Regex> = OnceLock::new();
    if re(
        &SQL,
        r"^(SELECT|FROM|WHERE|ORDER BY|GROUP BY|HAVING|LIMIT|JOIN|LEFT JOIN|INNER JOIN|INSERT INTO|VALUES|UPDATE|SET|DELETE FROM|CREATE TABLE|CREATE INDEX|ALTER TABLE|DROP TABLE|WITH)\s+\S",
    )
    .is_match(t)
    {
        return true;
    }
    // Mostly identifiers: snake_case, paths, versions, `a::b`, calls, dotted names.
    let tokens: Vec<&str> = t.split_whitespace().collect();
    if tokens.len() >= 2 {
        let ident = tokens.iter().filter(|w| identifier_like(w)).count();
        // Two such tokens at least: "explain @fly.toml" is still a sentence.
        if ident >= 2 && ident * 10 >= tokens.len() * 4 {
            return true;
        }
    }
    // Indented code: four spaces or a tab and symbols.
    let indented = line.starts_with("    ") || line.starts_with('\t');
    let total = t.chars().count();
    let wordish = t
        .chars()
        .filter(|c| c.is_alphabetic() || c.is_whitespace() || "'’,.!?-".contains(*c))
        .count();
    if total >= 6 && (wordish as f64) < 0.72 * total as f64 {
        return true;
    }
    indented && (wordish as f64) < 0.9 * total as f64 && !t.starts_with(['-', '*', '•'])
}

/// The labelled dev set's format and its scores: what `dream eval turns` prints and
/// the tests hold.
pub mod devset {
    use std::collections::BTreeMap;

    use serde::Serialize;

    use super::{label_lines, PartKind};

    /// One labelled turn: its id and its lines, each with the kind it truly is (blank
    /// lines as `None`).
    #[derive(Debug, Clone)]
    pub struct Turn {
        pub id: String,
        pub lines: Vec<(Option<PartKind>, String)>,
    }

    impl Turn {
        /// The turn's text as the person sent it.
        pub fn text(&self) -> String {
            self.lines
                .iter()
                .map(|(_, l)| l.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        }
    }

    /// Parse the dev set's text format (see `fixtures/devsets/turns-handwritten.txt`):
    /// `=== id` opens a turn; each line is `L| text` with L one of P (prose), S (pasted),
    /// I (injected), C (command); `|` alone is a blank line; `#` lines outside a turn
    /// are comments.
    pub fn parse(text: &str) -> Result<Vec<Turn>, String> {
        let mut turns: Vec<Turn> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if let Some(id) = line.strip_prefix("=== ") {
                turns.push(Turn {
                    id: id.split_whitespace().next().unwrap_or("").to_string(),
                    lines: Vec::new(),
                });
                continue;
            }
            if turns.is_empty() && (line.starts_with('#') || line.trim().is_empty()) {
                continue;
            }
            let Some(turn) = turns.last_mut() else {
                return Err(format!(
                    "line {}: a labelled line before the first `=== id`",
                    n + 1
                ));
            };
            if matches!(line.trim(), "|" | "P|" | "S|" | "I|" | "C|") {
                turn.lines.push((None, String::new()));
                continue;
            }
            let (label, rest) = line
                .split_once("| ")
                .ok_or_else(|| format!("line {}: expected `L| text`, found {line:?}", n + 1))?;
            let kind = match label {
                "P" => PartKind::Prose,
                "S" => PartKind::Paste,
                "I" => PartKind::Injected,
                "C" => PartKind::Command,
                other => {
                    return Err(format!(
                        "line {}: label {other:?} is not one of P, S, I, C",
                        n + 1
                    ))
                }
            };
            turn.lines.push((Some(kind), rest.to_string()));
        }
        Ok(turns)
    }

    /// Precision and recall of one kind, over lines.
    #[derive(Debug, Clone, Default, Serialize, PartialEq)]
    pub struct Score {
        /// Lines that are of the kind.
        pub truth: usize,
        /// Lines the splitter gave the kind.
        pub predicted: usize,
        /// Lines that are of the kind and were given it.
        pub correct: usize,
    }

    impl Score {
        pub fn precision(&self) -> f64 {
            if self.predicted == 0 {
                1.0
            } else {
                self.correct as f64 / self.predicted as f64
            }
        }
        pub fn recall(&self) -> f64 {
            if self.truth == 0 {
                1.0
            } else {
                self.correct as f64 / self.truth as f64
            }
        }
    }

    /// A dev set's scores: per kind, and the lines the splitter got wrong.
    #[derive(Debug, Clone, Default, Serialize)]
    pub struct Scores {
        pub turns: usize,
        pub lines: usize,
        pub by_kind: BTreeMap<&'static str, Score>,
        /// `(turn id, truth, predicted, line)` for each line labelled wrong.
        pub wrong: Vec<(String, &'static str, &'static str, String)>,
    }

    /// Split every turn and compare each non-blank line's kind with its label.
    pub fn score(turns: &[Turn]) -> Scores {
        let mut s = Scores {
            turns: turns.len(),
            ..Scores::default()
        };
        for t in turns {
            let truth: Vec<(PartKind, String)> = t
                .lines
                .iter()
                .filter_map(|(k, l)| k.map(|k| (k, l.trim().to_string())))
                .filter(|(_, l)| !l.is_empty())
                .collect();
            let predicted = label_lines(&t.text());
            let mut j = 0;
            for (kind, line) in predicted {
                // A line the splitter cut in two (a tag inside it) is judged by the line
                // that holds it.
                let at = (j..truth.len())
                    .find(|&k| truth[k].1 == line)
                    .or_else(|| (j..truth.len()).find(|&k| truth[k].1.contains(&line)));
                let Some(k) = at else { continue };
                let (want, text) = &truth[k];
                if truth[k].1 == line {
                    j = k + 1;
                }
                s.lines += 1;
                s.by_kind.entry(want.as_str()).or_default().truth += 1;
                s.by_kind.entry(kind.as_str()).or_default().predicted += 1;
                if *want == kind {
                    s.by_kind.entry(kind.as_str()).or_default().correct += 1;
                } else {
                    s.wrong
                        .push((t.id.clone(), want.as_str(), kind.as_str(), text.clone()));
                }
            }
        }
        s
    }
}

/// A token built like code rather than a word: a path, a version, `snake_case`,
/// `a::b`, `call()`, `dotted.name` inside (not a sentence's full stop), `--flag`.
fn identifier_like(w: &str) -> bool {
    let w = w.trim_matches(|c: char| matches!(c, ',' | ';' | '"' | '\'' | '`' | '!' | '?'));
    let w = w.strip_suffix('.').unwrap_or(w);
    // A number, a time or a size: `64`, `09:47`, `1.5.0`.
    if w.chars().any(|c| c.is_ascii_digit())
        && w.chars()
            .all(|c| c.is_ascii_digit() || ".:,-/%".contains(c))
    {
        return true;
    }
    if w.len() < 3 {
        return false;
    }
    let inner_dot = w
        .char_indices()
        .any(|(i, c)| c == '.' && i > 0 && i + 1 < w.len());
    w.contains('_')
        || w.contains("::")
        || w.contains('/')
        || w.contains('\\')
        || w.contains("()")
        || w.contains('=')
        || w.starts_with("--")
        || (inner_dot && !w.contains("..."))
        || (w.chars().any(|c| c.is_ascii_digit()) && w.chars().any(|c| c.is_alphabetic()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(PartKind, String)> {
        split(text).into_iter().map(|p| (p.kind, p.text)).collect()
    }

    #[test]
    fn prose_stays_one_part() {
        let t = "I deploy with Nomad, never by hand.\nWe use pnpm in this repo.";
        assert_eq!(kinds(t), vec![(PartKind::Prose, t.to_string())]);
    }

    #[test]
    fn a_fenced_block_is_a_paste_and_the_words_around_it_stay() {
        let t = "This fails on CI:\n```\nerror[E0308]: mismatched types\n```\nI think the cast is wrong.";
        let k = kinds(t);
        assert_eq!(k.len(), 3, "{k:?}");
        assert_eq!(k[0], (PartKind::Prose, "This fails on CI:".into()));
        assert_eq!(k[1].0, PartKind::Paste);
        assert_eq!(k[2], (PartKind::Prose, "I think the cast is wrong.".into()));
    }

    #[test]
    fn an_unfenced_log_and_trace_are_pastes() {
        let t = "the server crashes on start\n\nTraceback (most recent call last):\n  File \"app.py\", line 12, in <module>\n    main()\nValueError: bad port\n\ncan you fix it?";
        let k = kinds(t);
        assert_eq!(k[0].0, PartKind::Prose);
        assert_eq!(k[1].0, PartKind::Paste, "{k:?}");
        assert!(k[1].1.contains("ValueError"));
        assert_eq!(k[2], (PartKind::Prose, "can you fix it?".into()));
    }

    #[test]
    fn code_lines_without_fences_are_a_paste() {
        let t = "look at this\n\nif self.image is not None:\n    self.draw(self.image)\nreturn x;";
        let k = kinds(t);
        assert_eq!(k[0], (PartKind::Prose, "look at this".into()));
        assert_eq!(k[1].0, PartKind::Paste, "{k:?}");
    }

    #[test]
    fn harness_tags_are_injected_and_slash_commands_are_commands() {
        let t = "<ide_opened_file>The user opened the file /x/.env in the IDE.</ide_opened_file>\nwhy is the port wrong?";
        let k = kinds(t);
        assert_eq!(k[0].0, PartKind::Injected);
        assert_eq!(k[1], (PartKind::Prose, "why is the port wrong?".into()));
        assert_eq!(
            kinds("/model claude-opus-4-6-thinking"),
            vec![(PartKind::Command, "/model claude-opus-4-6-thinking".into())]
        );
        assert_eq!(
            kinds("/home/me/app is where it lives")[0].0,
            PartKind::Prose
        );
    }

    #[test]
    fn a_pasted_document_is_a_paste_from_its_heading_on() {
        let mut t = String::from(
            "Here is the spec, build it:\n\n## SECTION 4 — SYSTEM PRECOMPILE DETAILS\n",
        );
        for i in 0..20 {
            t.push_str(&format!(
                "Deadline (uint256) — unix timestamp when betting closes, field {i}\n"
            ));
        }
        let k = kinds(&t);
        assert_eq!(
            k[0],
            (PartKind::Prose, "Here is the spec, build it:".into())
        );
        assert_eq!(k[1].0, PartKind::Paste);
        assert!(k[1].1.contains("Deadline"));
    }

    #[test]
    fn tables_json_and_numbers_alone_are_material() {
        for line in [
            "| name | value |",
            "{\"a\": 1}",
            "\"key\": \"value\",",
            "234 | if (!res.ok) {",
            "0.00 USDC",
            "https://example.com/x/y",
            "components/employer/Form.tsx",
            "2024-01-01 12:00:01 INFO started",
            "npm install --save-dev vitest",
            "const messages: { key: string; value: string; name: string }[] =",
        ] {
            assert!(matches!(shape(line), Shape::Material), "{line}");
        }
        for line in [
            "I prefer tabs over spaces in Rust files.",
            "my sister Ana lives in Porto, and I visit her every May.",
            "use `cargo nextest` for the tests, not cargo test",
            "Thanks! Please update CLAUDE.md for current changes",
        ] {
            assert!(matches!(shape(line), Shape::Prose), "{line}");
        }
    }

    #[test]
    fn every_line_is_kept_in_some_part() {
        let t = "a\n\n```\nx = 1;\n```\n<system-reminder>r</system-reminder>\nb";
        let joined: String = split(t)
            .iter()
            .map(|p| p.text.clone())
            .collect::<Vec<_>>()
            .join("\n");
        for l in t.lines().filter(|l| !l.trim().is_empty()) {
            assert!(joined.contains(l), "{l}");
        }
    }
}
