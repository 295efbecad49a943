//! Procedures (SPEC S10), pure: from `tool_call` events to the instances of a procedure,
//! each normalised into steps, and from instances to recurring procedures.
//!
//! - An **instance** is the run of tool calls that serves one request: within a session, the
//!   tool calls between one owner message and the next, in order.
//! - A **step** is one action of an instance with its one-off values taken out: a shell
//!   command keeps its verb, its subcommands and its flags (`git commit -m`, not the
//!   message); a file tool keeps the kind of file (`Edit *.rs`, not the path); any other
//!   tool keeps its name. Chained commands (`a && b`, `a; b`) are separate steps, pipes into
//!   output filters (`| tail -20`) and `cd` are dropped, and so are the read-only tools an
//!   agent looks around with (Read, Grep, Glob, `ls`, `cat`, ...), since how an agent looks
//!   around differs every time while what it does does not. Consecutive repeats of a step
//!   count once.
//! - Two instances are the **same procedure** when the longest common subsequence of their
//!   steps covers at least `skills.same_procedure` of the longer one ([`similarity`]).
//! - A procedure **recurs** when it has at least `skills.min_instances` instances on at least
//!   `skills.min_days` days in at least `skills.min_sessions` sessions ([`recurring`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;

use crate::sources::event::{Event, Trust};

/// Tools whose input is a shell command (compared in lower case).
const SHELL_TOOLS: &[&str] = &[
    "bash",
    "shell",
    "sh",
    "zsh",
    "exec_command",
    "local_shell",
    "run_command",
    "run_shell_command",
    "execute_command",
    "run_terminal_cmd",
    "terminal",
    "command",
    "powershell",
    "pwsh",
    "container.exec",
];

/// Read-only and planning tools: how an agent looked around, not what it did.
const LOOKING_AROUND_TOOLS: &[&str] = &[
    "read",
    "read_file",
    "view",
    "ls",
    "list_dir",
    "list_files",
    "glob",
    "grep",
    "search",
    "find_files",
    "file_search",
    "grep_search",
    "codebase_search",
    "websearch",
    "web_search",
    "webfetch",
    "web_fetch",
    "todowrite",
    "todoread",
    "update_plan",
];

/// Shell commands that only look around.
const LOOKING_AROUND_COMMANDS: &[&str] = &[
    "ls", "cat", "pwd", "echo", "which", "head", "tail", "less", "more", "wc", "find", "grep",
    "rg", "tree", "file", "stat", "cd", "pushd", "popd", "clear",
];

/// Commands that only filter the output piped into them (`cargo test | tail -20`).
const OUTPUT_FILTERS: &[&str] = &[
    "head", "tail", "grep", "rg", "less", "more", "wc", "sort", "uniq", "cut", "tee", "cat", "jq",
    "awk", "sed", "column", "tr",
];

/// Keys of `key=value` arguments that name a file.
const FILE_KEYS: &[&str] = &[
    "path",
    "file",
    "file_path",
    "filepath",
    "filename",
    "notebook_path",
    "glob",
    "include",
    "target_file",
];

/// What kind of action a step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    /// A shell command.
    Command,
    /// A tool working on a file of some kind.
    File,
    /// Any other tool.
    Tool,
}

/// One normalised action.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Step {
    pub kind: StepKind,
    /// The tool as the harness named it (`Bash`, `Edit`, `bash`).
    pub tool: String,
    /// The stable part: `cargo test --workspace`, `*.rs`, or empty.
    pub sig: String,
    /// For a command: the command with its one-off values as `<arg>`
    /// (`git commit -m <arg>`); for a file step: the kind (`*.rs`); else empty.
    pub shown: String,
    /// For a command: the command exactly as it ran (re-quoted); else empty.
    pub raw: String,
}

impl Step {
    /// What two steps are compared by: the tool (in lower case) and the stable part.
    pub fn key(&self) -> String {
        if self.sig.is_empty() {
            self.tool.to_lowercase()
        } else {
            format!("{} {}", self.tool.to_lowercase(), self.sig)
        }
    }

    /// The command's verb and subcommand (`git commit`), what a skill must name to cover it.
    pub fn command_head(&self) -> Option<String> {
        (self.kind == StepKind::Command).then(|| command_head(&self.sig))
    }
}

/// The verb and, when the second word is a bare word, the subcommand of a normalised
/// command.
pub fn command_head(sig: &str) -> String {
    let mut words = sig.split_whitespace();
    let mut head = words.next().unwrap_or_default().to_string();
    if let Some(w) = words.next() {
        if !w.starts_with('-') {
            head.push(' ');
            head.push_str(w);
        }
    }
    head
}

/// One tool call as it was made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Call {
    pub event_id: String,
    pub ts: DateTime<Utc>,
    pub tool: String,
    pub input: String,
    /// The steps this call made (none for a look-around call).
    pub steps: Vec<Step>,
}

/// The tool calls that served one request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Instance {
    pub session: String,
    pub day: NaiveDate,
    pub start: DateTime<Utc>,
    /// The owner message that asked for it (none at the start of a session).
    pub request: Option<(String, String)>,
    pub calls: Vec<Call>,
    /// Step keys in order, consecutive repeats counted once.
    pub seq: Vec<String>,
}

impl Instance {
    /// Every step of the instance in order, consecutive repeats counted once.
    pub fn steps(&self) -> Vec<&Step> {
        let mut out: Vec<&Step> = Vec::new();
        for s in self.calls.iter().flat_map(|c| &c.steps) {
            if out.last().is_none_or(|l| l.key() != s.key()) {
                out.push(s);
            }
        }
        out
    }

    /// Ids of the tool-call events that made a step.
    pub fn event_ids(&self) -> Vec<String> {
        self.calls
            .iter()
            .filter(|c| !c.steps.is_empty())
            .map(|c| c.event_id.clone())
            .collect()
    }

    fn distinct_steps(&self) -> usize {
        self.seq.iter().collect::<BTreeSet<_>>().len()
    }

    fn has_command(&self) -> bool {
        self.calls
            .iter()
            .flat_map(|c| &c.steps)
            .any(|s| s.kind == StepKind::Command)
    }
}

/// The tool a `tool_call` event names and its input: `meta.tool` when present, else the
/// `Name:` prefix of the text (`Bash: cargo test` gives `Bash` and `cargo test`).
pub fn tool_call(e: &Event) -> Option<(String, String)> {
    if e.kind != "tool_call" {
        return None;
    }
    let text = e.text.trim();
    let prefix = text.split_once(':').and_then(|(name, rest)| {
        let name = name.trim();
        let plausible = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        plausible.then(|| (name.to_string(), rest.trim().to_string()))
    });
    let meta_tool = e
        .meta
        .as_ref()
        .and_then(|m| m.get("tool"))
        .and_then(|t| t.as_str())
        .map(str::trim)
        .filter(|t| !t.is_empty());
    match (meta_tool, prefix) {
        (Some(tool), Some((name, rest))) if name.eq_ignore_ascii_case(tool) => {
            Some((tool.to_string(), rest))
        }
        (Some(tool), _) => Some((tool.to_string(), text.to_string())),
        (None, Some((name, rest))) => Some((name, rest)),
        (None, None) => Some(("tool".into(), text.to_string())),
    }
}

pub fn is_shell_tool(tool: &str) -> bool {
    SHELL_TOOLS.contains(&tool.to_lowercase().as_str())
}

/// The steps one tool call makes.
pub fn steps_of(tool: &str, input: &str) -> Vec<Step> {
    let lower = tool.to_lowercase();
    if LOOKING_AROUND_TOOLS.contains(&lower.as_str()) {
        return Vec::new();
    }
    if is_shell_tool(tool) {
        return commands(input)
            .into_iter()
            .map(|c| Step {
                kind: StepKind::Command,
                tool: tool.to_string(),
                sig: c.sig,
                shown: c.shown,
                raw: c.raw,
            })
            .collect();
    }
    match file_kind(tool, input) {
        Some(kind) => vec![Step {
            kind: StepKind::File,
            tool: tool.to_string(),
            sig: kind.clone(),
            shown: kind,
            raw: String::new(),
        }],
        None => vec![Step {
            kind: StepKind::Tool,
            tool: tool.to_string(),
            sig: String::new(),
            shown: String::new(),
            raw: String::new(),
        }],
    }
}

/// Split a command line into words the way a shell would (quotes respected); falls back to
/// white space when the quotes do not balance.
pub fn words(command: &str) -> Vec<String> {
    shell_words::split(command)
        .unwrap_or_else(|_| command.split_whitespace().map(str::to_string).collect())
}

/// One command of a shell input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cmd {
    /// Verb, subcommand and flags: `git commit -m`.
    pub sig: String,
    /// One-off values as `<arg>`: `git commit -m <arg>`.
    pub shown: String,
    /// As it ran: `git commit -m 'fix the parser'`.
    pub raw: String,
}

/// The commands of a shell input, normalised, leaving out those that only look around or
/// filter output. A JSON array input (`["bash","-lc","cargo test"]`) is unwrapped.
pub fn commands(input: &str) -> Vec<Cmd> {
    let script = unwrap_argv(input).unwrap_or_else(|| input.to_string());
    let mut out = Vec::new();
    for line in script.lines() {
        let mut segment: Vec<String> = Vec::new();
        let mut piped = false;
        let flush = |segment: &mut Vec<String>, piped: bool, out: &mut Vec<Cmd>| {
            if let Some(c) = normalise_command(segment, piped) {
                out.push(c);
            }
            segment.clear();
        };
        for w in words(line) {
            match w.as_str() {
                "&&" | "||" | ";" | "&" => {
                    flush(&mut segment, piped, &mut out);
                    piped = false;
                }
                "|" | "|&" => {
                    flush(&mut segment, piped, &mut out);
                    piped = true;
                }
                _ => {
                    if let Some(stripped) = w.strip_suffix(';').filter(|s| !s.is_empty()) {
                        segment.push(stripped.to_string());
                        flush(&mut segment, piped, &mut out);
                        piped = false;
                    } else {
                        segment.push(w);
                    }
                }
            }
        }
        flush(&mut segment, piped, &mut out);
    }
    out
}

fn unwrap_argv(input: &str) -> Option<String> {
    let t = input.trim();
    if !t.starts_with('[') {
        return None;
    }
    let argv: Vec<String> = serde_json::from_str(t).ok()?;
    match argv.as_slice() {
        [sh, flag, script]
            if matches!(sh.rsplit('/').next(), Some("bash" | "sh" | "zsh"))
                && flag.starts_with('-') =>
        {
            Some(script.clone())
        }
        _ => Some(argv.join(" ")),
    }
}

/// One command's signature (verb, subcommand, flags) and its shown form (one-off values
/// as `<arg>`), or `None` for a command that only looks around or filters output.
fn normalise_command(segment: &[String], piped: bool) -> Option<Cmd> {
    let mut ws = segment
        .iter()
        .skip_while(|w| {
            is_assignment(w) || matches!(w.as_str(), "sudo" | "time" | "env" | "nohup" | "command")
        })
        .filter(|w| !is_redirection(w));
    let verb = ws.next()?.clone();
    if verb.starts_with('#') {
        return None;
    }
    let base = verb.rsplit('/').next().unwrap_or(&verb).to_string();
    if LOOKING_AROUND_COMMANDS.contains(&base.as_str())
        || (piped && OUTPUT_FILTERS.contains(&base.as_str()))
    {
        return None;
    }
    let mut sig = vec![verb.clone()];
    let mut shown = vec![verb];
    let rest: Vec<&String> = ws.collect();
    // Up to two leading bare words are subcommands (`git commit`, `npm run build`,
    // `docker compose up`).
    let mut i = 0;
    while i < 2 && rest.get(i).is_some_and(|w| is_bare_word(w)) {
        sig.push(rest[i].to_string());
        shown.push(rest[i].to_string());
        i += 1;
    }
    for w in &rest[i..] {
        if let Some(flag) = flag_name(w) {
            if !sig.contains(&flag) {
                sig.push(flag.clone());
            }
            shown.push(if w.contains('=') {
                format!("{flag}=<arg>")
            } else {
                flag
            });
        } else if shown.last().is_none_or(|l| l != "<arg>") {
            shown.push("<arg>".into());
        }
    }
    let raw: Vec<&str> = segment
        .iter()
        .skip_while(|w| is_assignment(w))
        .filter(|w| !is_redirection(w))
        .map(String::as_str)
        .collect();
    Some(Cmd {
        sig: sig.join(" "),
        shown: shown.join(" "),
        raw: shell_words::join(raw),
    })
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

fn is_redirection(w: &str) -> bool {
    let t = w.trim_start_matches(|c: char| c.is_ascii_digit());
    t.starts_with('>') || t.starts_with('<') || t.starts_with("&>")
}

/// A subcommand-like word: lower-case letters, digits and `-`, `_`, `:`, starting with a
/// letter (`test`, `commit`, `run`), not a path, a number, a version (`v12`) or a value
/// with a dot.
fn is_bare_word(w: &str) -> bool {
    let version = w.starts_with('v') && w[1..].starts_with(|c: char| c.is_ascii_digit());
    w.len() <= 32
        && !version
        && w.starts_with(|c: char| c.is_ascii_lowercase())
        && w.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | ':'))
}

/// `--flag` or `-f` (its `=value` dropped); numbers such as `-5` are values, not flags.
fn flag_name(w: &str) -> Option<String> {
    if !w.starts_with('-') || w == "-" {
        return None;
    }
    let name = w.split_once('=').map_or(w, |(n, _)| n);
    if name.trim_start_matches('-').parse::<f64>().is_ok() {
        return None;
    }
    Some(name.to_string())
}

/// The kind of file a tool call works on (`*.rs`), from its first argument, a
/// `path=`-like argument, or the files of a patch.
pub fn file_kind(tool: &str, input: &str) -> Option<String> {
    let mut candidates: Vec<String> = Vec::new();
    for line in input.lines() {
        for marker in [
            "*** Update File:",
            "*** Add File:",
            "*** Delete File:",
            "+++ b/",
            "--- a/",
        ] {
            if let Some(p) = line.trim().strip_prefix(marker) {
                candidates.push(p.trim().to_string());
            }
        }
    }
    if candidates.is_empty() {
        let ws = input.split_whitespace().collect::<Vec<_>>();
        if let Some(first) = ws.first() {
            if !first.contains('=') || tool.eq_ignore_ascii_case("apply_patch") {
                candidates.push(first.to_string());
            }
        }
        for w in &ws {
            if let Some((k, v)) = w.split_once('=') {
                if FILE_KEYS.contains(&k.to_lowercase().as_str()) {
                    candidates.push(v.to_string());
                }
            }
        }
    }
    candidates.iter().find_map(|c| extension(c))
}

/// `*.rs` for `src/lib.rs`, `.gitignore` for `.gitignore`; `None` without an extension.
fn extension(path: &str) -> Option<String> {
    let path = path.trim_matches(|c| c == '"' || c == '\'' || c == ',');
    let name = path.rsplit(['/', '\\']).next()?;
    let (stem, ext) = name.rsplit_once('.')?;
    let ext_ok =
        !ext.is_empty() && ext.len() <= 10 && ext.chars().all(|c| c.is_ascii_alphanumeric());
    if !ext_ok {
        return None;
    }
    if stem.is_empty() {
        return Some(name.to_lowercase());
    }
    Some(format!("*.{}", ext.to_lowercase()))
}

/// A tool call or an owner message of the window, without its text (listed by
/// `state::window`, which reads the window anyway).
#[derive(Debug, Clone, PartialEq)]
pub struct ProcedureRow {
    pub seq: i64,
    pub tool_call: bool,
    /// A cycle has already looked at it.
    pub reflected: bool,
    pub session: Option<String>,
}

/// True when a tool call of the window waits for a cycle to look at it: only then can a
/// procedure newly recur.
pub fn new_tool_call(rows: &[ProcedureRow]) -> bool {
    rows.iter().any(|r| r.tool_call && !r.reflected)
}

/// Which of a window's tool calls and owner messages (oldest first) [`instances`] needs
/// read, by row id: every tool call; every row without a session (grouped by source and
/// day, which only the stored event tells); and each owner message whose next row in its
/// session is a tool call (the request that starts an instance). Any other owner message
/// only ends an instance that the next owner message, or the session's end, ends anyway,
/// so leaving it out changes no instance, and most of a window's messages are read no more.
pub fn rows_to_read(rows: &[ProcedureRow]) -> Vec<i64> {
    let mut next_is_tool: HashMap<&str, bool> = HashMap::new();
    let mut out = Vec::new();
    for r in rows.iter().rev() {
        let Some(session) = r.session.as_deref() else {
            out.push(r.seq);
            continue;
        };
        let before = next_is_tool.insert(session, r.tool_call);
        if r.tool_call || before == Some(true) {
            out.push(r.seq);
        }
    }
    out.reverse();
    out
}

/// The instances in a window of events (oldest first): per session, the tool calls between
/// one owner message and the next, in order. Events without a session are grouped by their
/// source and day. Recalled events are never part of an instance.
pub fn instances(window: &[&Event]) -> Vec<Instance> {
    let mut sessions: BTreeMap<String, Vec<&Event>> = BTreeMap::new();
    for e in window.iter().filter(|e| !e.recalled) {
        let key = match &e.session {
            Some(s) => s.clone(),
            None => format!("~{}:{}", e.source.as_deref().unwrap_or("-"), e.day()),
        };
        sessions.entry(key).or_default().push(e);
    }
    let mut out = Vec::new();
    for (session, events) in sessions {
        let mut current: Option<Instance> = None;
        let mut request: Option<(String, String)> = None;
        for e in events {
            if e.kind == "message" && e.trust == Trust::Owner {
                if let Some(i) = current.take() {
                    out.push(i);
                }
                request = Some((e.id.clone(), e.text.clone()));
                continue;
            }
            let Some((tool, input)) = tool_call(e) else {
                continue;
            };
            let steps = steps_of(&tool, &input);
            let inst = current.get_or_insert_with(|| Instance {
                session: session.clone(),
                day: e.day(),
                start: e.ts,
                request: request.clone(),
                calls: Vec::new(),
                seq: Vec::new(),
            });
            for s in &steps {
                let key = s.key();
                if inst.seq.last() != Some(&key) {
                    inst.seq.push(key);
                }
            }
            inst.calls.push(Call {
                event_id: e.id.clone(),
                ts: e.ts,
                tool,
                input,
                steps,
            });
        }
        if let Some(i) = current.take() {
            out.push(i);
        }
    }
    out.sort_by(|a, b| a.start.cmp(&b.start).then(a.session.cmp(&b.session)));
    out
}

/// Similarity of two step sequences: the length of their longest common subsequence over
/// the length of the longer one (1.0 for the same steps in the same order).
pub fn similarity<T: PartialEq>(a: &[T], b: &[T]) -> f64 {
    let longer = a.len().max(b.len());
    if longer == 0 {
        return 0.0;
    }
    lcs(a, b) as f64 / longer as f64
}

fn lcs<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    let mut cur = vec![0usize; b.len() + 1];
    for x in a {
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = if x == y {
                prev[j] + 1
            } else {
                cur[j].max(prev[j + 1])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Thresholds of [`recurring`] (from `[skills]`).
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    pub min_instances: usize,
    pub min_days: usize,
    pub min_sessions: usize,
    pub min_steps: usize,
    pub same_procedure: f64,
}

impl From<&crate::schema::settings::Skills> for Thresholds {
    fn from(c: &crate::schema::settings::Skills) -> Self {
        Thresholds {
            min_instances: c.min_instances,
            min_days: c.min_days,
            min_sessions: c.min_sessions,
            min_steps: c.min_steps,
            same_procedure: c.same_procedure,
        }
    }
}

/// A group of instances of the same procedure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Procedure {
    /// Index (into the instances) of the most typical instance: the one most others are
    /// the same procedure as. Every member is at least `same_procedure` similar to it.
    pub typical: usize,
    /// Indexes of every instance, the typical one first.
    pub members: Vec<usize>,
    pub days: usize,
    pub sessions: usize,
    /// Mean similarity of the other instances to the typical one (1.0 when all agree).
    pub cohesion: f64,
}

impl Procedure {
    /// Whether it recurs enough to become a skill candidate, and if not, why.
    pub fn recurs(&self, t: &Thresholds) -> Result<(), String> {
        let mut missing = Vec::new();
        if self.members.len() < t.min_instances {
            missing.push(format!(
                "instances {} < skills.min_instances {}",
                self.members.len(),
                t.min_instances
            ));
        }
        if self.days < t.min_days {
            missing.push(format!(
                "days {} < skills.min_days {}",
                self.days, t.min_days
            ));
        }
        if self.sessions < t.min_sessions {
            missing.push(format!(
                "sessions {} < skills.min_sessions {}",
                self.sessions, t.min_sessions
            ));
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(missing.join(", "))
        }
    }

    /// A stable id for the procedure: a hash of the typical instance's steps.
    pub fn id(&self, instances: &[Instance]) -> String {
        crate::schema::text_id("s", &instances[self.typical].seq.join(" | "))
    }
}

/// Whether an instance can be part of a procedure at all: at least `min_steps` distinct
/// steps, one of them a shell command.
pub fn eligible(i: &Instance, t: &Thresholds) -> bool {
    i.distinct_steps() >= t.min_steps && i.has_command()
}

/// Group the eligible instances into procedures, largest first. Repeatedly, the instance
/// with the most not-yet-grouped neighbours (instances at least `same_procedure` similar;
/// among equals the one closest to them) becomes a procedure's typical instance, and those
/// neighbours its other members. Only
/// groups of two or more instances are returned; see [`Procedure::recurs`] for the bar.
pub fn group(instances: &[Instance], t: &Thresholds) -> Vec<Procedure> {
    let idx: Vec<usize> = (0..instances.len())
        .filter(|&i| eligible(&instances[i], t))
        .collect();
    // Steps as small integers, and each distinct sequence once: identical instances are
    // compared once, and most pairs are ruled out by counting shared steps before any LCS.
    let mut ids: HashMap<&str, u32> = HashMap::new();
    let mut distinct: HashMap<Vec<u32>, usize> = HashMap::new();
    let mut seqs: Vec<Vec<u32>> = Vec::new();
    let mut of: Vec<usize> = Vec::with_capacity(idx.len());
    for &i in &idx {
        let seq: Vec<u32> = instances[i]
            .seq
            .iter()
            .map(|k| {
                let n = ids.len() as u32;
                *ids.entry(k.as_str()).or_insert(n)
            })
            .collect();
        let d = *distinct.entry(seq.clone()).or_insert_with(|| {
            seqs.push(seq);
            seqs.len() - 1
        });
        of.push(d);
    }
    let bags: Vec<Vec<u32>> = seqs
        .iter()
        .map(|s| {
            let mut b = s.clone();
            b.sort_unstable();
            b
        })
        .collect();
    let mut close: HashMap<(usize, usize), f64> = HashMap::new();
    for a in 0..seqs.len() {
        close.insert((a, a), 1.0);
        for b in a + 1..seqs.len() {
            let longer = seqs[a].len().max(seqs[b].len()) as f64;
            // The LCS is at most the shorter length, and at most the steps both share.
            if (seqs[a].len().min(seqs[b].len()) as f64) < t.same_procedure * longer
                || (crate::text::measures::sorted_shared(&bags[a], &bags[b]) as f64)
                    < t.same_procedure * longer
            {
                continue;
            }
            let s = similarity(&seqs[a], &seqs[b]);
            if s >= t.same_procedure {
                close.insert((a, b), s);
                close.insert((b, a), s);
            }
        }
    }
    let mut by_seq: Vec<Vec<usize>> = vec![Vec::new(); seqs.len()];
    for (pos, &d) in of.iter().enumerate() {
        by_seq[d].push(pos);
    }
    let mut near: Vec<Vec<usize>> = vec![Vec::new(); seqs.len()];
    for &(a, b) in close.keys() {
        near[a].push(b);
    }
    let sim = |x: usize, y: usize| close.get(&(of[x], of[y])).copied();
    // Positions (into `idx`) of each instance's neighbours, with the running count and sum
    // of similarity over those still free.
    let neighbours = |x: usize| {
        near[of[x]]
            .iter()
            .flat_map(|&d| by_seq[d].iter().copied())
            .filter(move |&y| y != x)
    };
    let mut free = vec![true; idx.len()];
    let mut count: Vec<usize> = (0..idx.len()).map(|x| neighbours(x).count()).collect();
    let mut closeness: Vec<f64> = (0..idx.len())
        .map(|x| neighbours(x).map(|y| sim(x, y).unwrap_or(0.0)).sum())
        .collect();
    let mut out = Vec::new();
    loop {
        // Most free neighbours; among equals, the closest to them (the medoid), then the
        // earliest.
        let best = (0..idx.len()).filter(|&x| free[x]).max_by(|&a, &b| {
            count[a]
                .cmp(&count[b])
                .then(closeness[a].total_cmp(&closeness[b]))
                .then(b.cmp(&a))
        });
        let Some(centre) = best else { break };
        if count[centre] == 0 {
            break;
        }
        let mut members: Vec<usize> = vec![centre];
        let mut others: Vec<usize> = neighbours(centre).filter(|&y| free[y]).collect();
        others.sort_unstable();
        members.extend(others);
        for &m in &members {
            free[m] = false;
        }
        for &m in &members {
            for y in neighbours(m) {
                if free[y] {
                    count[y] -= 1;
                    closeness[y] -= sim(m, y).unwrap_or(0.0);
                }
            }
        }
        let cohesion = members[1..]
            .iter()
            .map(|&m| sim(centre, m).unwrap_or(0.0))
            .sum::<f64>()
            / (members.len() - 1) as f64;
        let members: Vec<usize> = members.into_iter().map(|x| idx[x]).collect();
        let days: BTreeSet<NaiveDate> = members.iter().map(|&m| instances[m].day).collect();
        let sessions: BTreeSet<&str> = members
            .iter()
            .map(|&m| instances[m].session.as_str())
            .collect();
        out.push(Procedure {
            typical: members[0],
            members,
            days: days.len(),
            sessions: sessions.len(),
            cohesion: crate::text::measures::round3(cohesion),
        });
    }
    out.sort_by(|a, b| {
        b.members
            .len()
            .cmp(&a.members.len())
            .then(b.days.cmp(&a.days))
            .then(instances[a.typical].start.cmp(&instances[b.typical].start))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(id: &str, ts: &str, session: &str, kind: &str, text: &str) -> Event {
        let line =
            serde_json::json!({"id": id, "ts": ts, "kind": kind, "session": session, "text": text})
                .to_string();
        crate::sources::event::parse_line(line.as_bytes(), 1 << 20)
            .unwrap()
            .event
    }

    fn sigs(input: &str) -> Vec<String> {
        commands(input).into_iter().map(|c| c.sig).collect()
    }

    #[test]
    fn commands_keep_verb_subcommand_and_flags_only() {
        assert_eq!(
            sigs("cargo test --workspace"),
            vec!["cargo test --workspace"]
        );
        assert_eq!(
            sigs("git commit -m \"fix the parser\""),
            vec!["git commit -m"]
        );
        let commit = &commands("git commit -m \"fix the parser\"")[0];
        assert_eq!(commit.shown, "git commit -m <arg>");
        assert_eq!(commit.raw, "git commit -m 'fix the parser'");
        assert_eq!(sigs("git log --oneline -5"), vec!["git log --oneline"]);
        assert_eq!(
            sigs("cd crates/core && cargo fmt --all && cargo clippy -- -D warnings"),
            vec!["cargo fmt --all", "cargo clippy -- -D"]
        );
        assert_eq!(sigs("cargo test 2>&1 | tail -20"), vec!["cargo test"]);
        assert_eq!(
            sigs("RUST_LOG=debug cargo run --release -- --port=8080"),
            vec!["cargo run --release -- --port"]
        );
        assert_eq!(sigs("ls -la src; cat README.md"), Vec::<String>::new());
        assert_eq!(
            sigs(r#"["bash","-lc","npm run build && npm test"]"#),
            vec!["npm run build", "npm test"]
        );
        assert_eq!(
            sigs("docker compose up -d api"),
            vec!["docker compose up -d"]
        );
        assert_eq!(
            sigs("./scripts/release.sh v1.2.3"),
            vec!["./scripts/release.sh"]
        );
        assert_eq!(sigs("git commit -m 'unbalanced"), vec!["git commit -m"]);
        assert_eq!(sigs("git tag v353"), vec!["git tag"]);
    }

    #[test]
    fn file_tools_keep_the_kind_of_file() {
        assert_eq!(
            file_kind("Edit", "src/lib.rs old_string=a new_string=b"),
            Some("*.rs".into())
        );
        assert_eq!(
            file_kind("Write", "/home/x/notes/Plan.MD content=..."),
            Some("*.md".into())
        );
        assert_eq!(
            file_kind(
                "apply_patch",
                "*** Begin Patch\n*** Update File: src/main.py\n@@"
            ),
            Some("*.py".into())
        );
        assert_eq!(
            file_kind("NotebookEdit", "notebook_path=/a/b.ipynb cell=3"),
            Some("*.ipynb".into())
        );
        assert_eq!(file_kind("Task", "review the diff"), None);
        assert!(
            steps_of("Read", "src/lib.rs").is_empty(),
            "reading is looking around"
        );
        assert_eq!(steps_of("Task", "explore the code")[0].key(), "task");
    }

    #[test]
    fn the_tool_comes_from_meta_or_the_text_prefix() {
        let mut e = ev(
            "e1",
            "2026-11-02T10:00:00Z",
            "s",
            "tool_call",
            "Bash: cargo test",
        );
        assert_eq!(tool_call(&e), Some(("Bash".into(), "cargo test".into())));
        e.meta = Some(serde_json::json!({"tool": "Bash", "call_id": "c1"}));
        assert_eq!(tool_call(&e), Some(("Bash".into(), "cargo test".into())));
        e.text = "cargo build".into();
        assert_eq!(tool_call(&e), Some(("Bash".into(), "cargo build".into())));
        e.kind = "tool_result".into();
        assert_eq!(tool_call(&e), None);
    }

    #[test]
    fn an_instance_is_the_tool_use_between_two_owner_messages() {
        let events = [
            ev(
                "m1",
                "2026-11-02T10:00:00Z",
                "s1",
                "message",
                "please ship it",
            ),
            ev(
                "t1",
                "2026-11-02T10:01:00Z",
                "s1",
                "tool_call",
                "Bash: cargo fmt",
            ),
            ev("r1", "2026-11-02T10:01:30Z", "s1", "tool_result", "ok"),
            ev(
                "t2",
                "2026-11-02T10:02:00Z",
                "s1",
                "tool_call",
                "Read: src/lib.rs",
            ),
            ev(
                "t3",
                "2026-11-02T10:03:00Z",
                "s1",
                "tool_call",
                "Bash: cargo test",
            ),
            ev(
                "t4",
                "2026-11-02T10:03:30Z",
                "s1",
                "tool_call",
                "Bash: cargo test",
            ),
            ev(
                "m2",
                "2026-11-02T10:05:00Z",
                "s1",
                "message",
                "thanks, now something else",
            ),
            ev(
                "t5",
                "2026-11-02T10:06:00Z",
                "s1",
                "tool_call",
                "Edit: README.md old_string=a",
            ),
            ev(
                "t6",
                "2026-11-02T10:06:00Z",
                "s2",
                "tool_call",
                "Bash: make",
            ),
        ];
        let refs: Vec<&Event> = events.iter().collect();
        let got = instances(&refs);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].seq, vec!["bash cargo fmt", "bash cargo test"]);
        assert_eq!(got[0].request.as_ref().unwrap().0, "m1");
        assert_eq!(got[0].event_ids(), vec!["t1", "t3", "t4"]);
        let s1b = got.iter().find(|i| i.seq == vec!["edit *.md"]).unwrap();
        assert_eq!(s1b.request.as_ref().unwrap().0, "m2");
        assert!(got.iter().any(|i| i.session == "s2" && i.request.is_none()));
    }

    #[test]
    fn reading_only_the_rows_instances_need_finds_the_same_instances() {
        // Two interleaved sessions, requests followed by small talk, a session without
        // tool calls, and owner messages back to back.
        let spec = [
            ("s1", "message", "please ship it"),
            ("s2", "message", "hello there"),
            ("s1", "tool_call", "Bash: cargo fmt"),
            ("s2", "message", "just chatting"),
            ("s1", "tool_call", "Bash: cargo test"),
            ("s1", "message", "thanks"),
            ("s1", "message", "also, nice weather"),
            ("s3", "tool_call", "Bash: make"),
            ("s1", "message", "now the docs"),
            ("s1", "tool_call", "Edit: README.md old_string=a"),
            ("s3", "message", "done?"),
            ("s1", "message", "bye"),
            ("s3", "tool_call", "Bash: make install"),
        ];
        let events: Vec<Event> = spec
            .iter()
            .enumerate()
            .map(|(i, (session, kind, text))| {
                ev(
                    &format!("e{i}"),
                    &format!("2026-11-02T10:{i:02}:00Z"),
                    session,
                    kind,
                    text,
                )
            })
            .collect();
        let rows: Vec<ProcedureRow> = events
            .iter()
            .enumerate()
            .map(|(i, e)| ProcedureRow {
                seq: i as i64,
                tool_call: e.kind == "tool_call",
                reflected: false,
                session: e.session.clone(),
            })
            .collect();
        let read = rows_to_read(&rows);
        assert!(read.len() < events.len(), "{read:?}");
        let all: Vec<&Event> = events.iter().collect();
        let some: Vec<&Event> = read.iter().map(|&i| &events[i as usize]).collect();
        let (full, partial) = (instances(&all), instances(&some));
        assert_eq!(full.len(), 4, "{full:#?}");
        assert_eq!(full, partial);
    }

    #[test]
    fn similarity_is_the_shared_steps_in_order_over_the_longer() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(similarity(&s(&["a", "b", "c"]), &s(&["a", "b", "c"])), 1.0);
        assert_eq!(
            similarity(&s(&["a", "b", "c", "d"]), &s(&["a", "c", "d"])),
            0.75
        );
        assert_eq!(similarity(&s(&["a", "b"]), &s(&["b", "a"])), 0.5);
        assert_eq!(similarity(&s(&[]), &s(&[])), 0.0);
    }

    fn inst(session: &str, day: u32, seq: &[&str]) -> Instance {
        let ts: DateTime<Utc> = format!("2026-11-{day:02}T10:00:00Z").parse().unwrap();
        let calls = seq
            .iter()
            .map(|s| Call {
                event_id: format!("{session}-{day}-{s}"),
                ts,
                tool: "Bash".into(),
                input: s.to_string(),
                steps: steps_of("Bash", s),
            })
            .collect();
        Instance {
            session: session.into(),
            day: ts.date_naive(),
            start: ts,
            request: None,
            calls,
            seq: seq.iter().map(|s| format!("bash {s}")).collect(),
        }
    }

    const T: Thresholds = Thresholds {
        min_instances: 3,
        min_days: 2,
        min_sessions: 2,
        min_steps: 2,
        same_procedure: 0.7,
    };

    #[test]
    fn recurrence_needs_instances_days_and_sessions() {
        let p = ["cargo fmt", "cargo clippy", "cargo test"];
        // Three instances on one day: not enough days.
        let one_day = vec![inst("a", 2, &p), inst("b", 2, &p), inst("c", 2, &p)];
        let g = group(&one_day, &T);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].recurs(&T).unwrap_err(), "days 1 < skills.min_days 2");
        // Two instances on two days: not enough instances.
        let two = vec![inst("a", 2, &p), inst("b", 3, &p)];
        assert_eq!(
            group(&two, &T)[0].recurs(&T).unwrap_err(),
            "instances 2 < skills.min_instances 3"
        );
        // Three on two days in one session: not enough sessions.
        let one_session = vec![inst("a", 2, &p), inst("a", 2, &p), inst("a", 3, &p)];
        assert!(group(&one_session, &T)[0]
            .recurs(&T)
            .unwrap_err()
            .contains("sessions 1 < skills.min_sessions 2"));
        // Three on two days in three sessions, one a little different: recurs.
        let ok = vec![
            inst("a", 2, &p),
            inst("b", 3, &p),
            inst(
                "c",
                3,
                &["cargo fmt", "cargo clippy", "cargo build", "cargo test"],
            ),
        ];
        let g = group(&ok, &T);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].members.len(), 3);
        assert_eq!(g[0].cohesion, 0.875);
        assert!(g[0].recurs(&T).is_ok());
    }

    #[test]
    fn different_procedures_are_not_grouped_and_trivial_instances_are_ignored() {
        let a = ["cargo fmt", "cargo clippy", "cargo test"];
        let b = ["npm install", "npm run", "npm publish"];
        let v = vec![
            inst("a", 2, &a),
            inst("b", 3, &b),
            inst("c", 3, &a),
            inst("d", 4, &b),
            inst("e", 5, &["make"]),
        ];
        let g = group(&v, &T);
        assert_eq!(g.len(), 2);
        assert!(g.iter().all(|p| p.members.len() == 2));
        assert!(
            !g.iter().any(|p| p.members.contains(&4)),
            "one step is not a procedure"
        );
    }
}
