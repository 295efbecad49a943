//! Where a model call's tokens went, part by part: the instructions (the system message
//! and the chat framing, the same in every call of a stage), and for reflect the new
//! events of clusters, the single mentions (one session's events no cluster holds), the
//! known items (what memory holds from a cluster's earlier events), earlier events shown
//! in full, and the rest of the user message (its framing: cluster headers, keys); then
//! the completion. Counted from the requests the fake server recorded, with its own
//! tokenizer: each message a quarter of its characters plus 4, and 3 for the reply's
//! priming; the user message's tokens are shared out over its parts by characters.
//!
//! Two prompt shapes are read: the JSON object of clusters dream sent before (`{"clusters":
//! [...]}`, every event an object with its keys), and the numbered lines it sends now
//! (`dream_testkit::fake_llm::parse_lines`), so a figure taken before a change and one
//! taken after come from the same split.

use std::collections::BTreeMap;

use serde::Serialize;

use dream_testkit::fake_llm::{count_tokens, Recorded};

/// What one stage's calls were sent and cost, as the fake server counted them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StageTokens {
    pub calls: u64,
    /// The system prompt and the chat framing: the same for every call of the stage.
    pub instructions: u64,
    /// Reflect: the new events of clusters (their first showing).
    pub new_events: u64,
    /// Reflect: the new single mentions (events no cluster holds).
    pub single_mentions: u64,
    /// Reflect: the known items (facts and cards a cluster's earlier events support).
    pub known: u64,
    /// Reflect: earlier events shown in full again.
    pub context: u64,
    /// The rest of the user message (for stages other than reflect: all of it).
    pub input: u64,
    pub completion: u64,
    /// Prompt tokens the server reported as cached.
    pub cached: u64,
    pub total: u64,
    /// Reflect calls that held single mentions only.
    pub singles_calls: u64,
}

impl StageTokens {
    pub fn add(&mut self, o: &StageTokens) {
        self.calls += o.calls;
        self.instructions += o.instructions;
        self.new_events += o.new_events;
        self.single_mentions += o.single_mentions;
        self.known += o.known;
        self.context += o.context;
        self.input += o.input;
        self.completion += o.completion;
        self.cached += o.cached;
        self.total += o.total;
        self.singles_calls += o.singles_calls;
    }

    /// Prompt tokens (everything but the completion).
    pub fn prompt(&self) -> u64 {
        self.total - self.completion
    }
}

/// Characters of each part of a reflect user message.
#[derive(Debug, Default, Clone, Copy)]
struct Chars {
    new_events: u64,
    singles: u64,
    known: u64,
    context: u64,
    /// Parts of clusters, and of them those of single mentions.
    parts: u64,
    singles_parts: u64,
}

fn chars(s: &str) -> u64 {
    s.chars().count() as u64
}

/// The parts of a reflect prompt in the JSON shape.
fn json_parts(input: &serde_json::Value) -> Chars {
    let mut c = Chars::default();
    let len = |v: &serde_json::Value| chars(&v.to_string());
    for part in input["clusters"].as_array().into_iter().flatten() {
        let singles = part["singles"] == true;
        c.parts += 1;
        c.singles_parts += u64::from(singles);
        for e in part["events"].as_array().into_iter().flatten() {
            if singles {
                c.singles += len(e);
            } else if e["new"] == true {
                c.new_events += len(e);
            } else {
                c.context += len(e);
            }
        }
        if let Some(k) = part.get("known") {
            c.known += len(k);
        }
    }
    c
}

/// The parts of a reflect prompt in the line shape (`dream_testkit::fake_llm::parse_lines`).
fn line_parts(user: &str) -> Chars {
    let mut c = Chars::default();
    for part in dream_testkit::fake_llm::parse_lines(user) {
        c.parts += 1;
        c.singles_parts += u64::from(part.singles);
        for k in &part.known {
            c.known += chars(&k.line) + 1;
        }
        for e in &part.events {
            let n = chars(&e.line) + 1;
            if part.singles {
                c.singles += n;
            } else if e.new {
                c.new_events += n;
            } else {
                c.context += n;
            }
        }
    }
    c
}

/// One chat request split into what it was spent on.
pub fn split_request(r: &Recorded) -> StageTokens {
    let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
    let user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let user_tokens = count_tokens(user) + 4;
    let mut t = StageTokens {
        calls: 1,
        instructions: r.prompt_tokens.saturating_sub(user_tokens),
        input: user_tokens.min(r.prompt_tokens),
        completion: r.completion_tokens,
        cached: r.cached_tokens,
        total: r.prompt_tokens + r.completion_tokens,
        ..StageTokens::default()
    };
    if r.stage == "reflect" {
        let c = match serde_json::from_str::<serde_json::Value>(user) {
            Ok(v) if v.get("clusters").is_some() => json_parts(&v),
            _ => line_parts(user),
        };
        let all = chars(user).max(1);
        let share = |n: u64| t.input * n / all;
        t.new_events = share(c.new_events);
        t.single_mentions = share(c.singles);
        t.known = share(c.known);
        t.context = share(c.context);
        t.input -= t.new_events + t.single_mentions + t.known + t.context;
        t.singles_calls = u64::from(c.parts > 0 && c.parts == c.singles_parts);
    }
    t
}

/// The fake server's answered chat requests, per stage.
pub fn split_requests(reqs: &[Recorded]) -> BTreeMap<String, StageTokens> {
    let mut out: BTreeMap<String, StageTokens> = BTreeMap::new();
    for r in reqs
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions") && r.status == 200)
    {
        out.entry(r.stage.clone())
            .or_default()
            .add(&split_request(r));
    }
    out
}

/// The stages' rows, then their sum, as a table.
pub fn render(o: &mut String, stages: &BTreeMap<String, StageTokens>) {
    use std::fmt::Write as _;
    let row = |o: &mut String, name: &str, t: &StageTokens| {
        let _ = writeln!(
            o,
            "    {:<10} {:>6} {:>13} {:>11} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9} {:>10}",
            name,
            t.calls,
            t.instructions,
            t.new_events,
            t.single_mentions,
            t.known,
            t.context,
            t.input,
            t.completion,
            t.cached,
            t.total
        );
    };
    let _ = writeln!(
        o,
        "    {:<10} {:>6} {:>13} {:>11} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9} {:>10}",
        "stage",
        "calls",
        "instructions",
        "new events",
        "singles",
        "known",
        "context",
        "input",
        "completion",
        "cached",
        "total"
    );
    let mut sum = StageTokens::default();
    for (stage, t) in stages {
        row(o, if stage.is_empty() { "(none)" } else { stage }, t);
        sum.add(t);
    }
    if stages.len() > 1 {
        row(o, "all", &sum);
    }
    if let Some(r) = stages.get("reflect") {
        let prompt = sum.prompt().max(1);
        let _ = writeln!(
            o,
            "    single mentions: {} of {} prompt tokens ({:.1}%), {} of {} reflect calls hold nothing else",
            r.single_mentions,
            sum.prompt(),
            100.0 * r.single_mentions as f64 / prompt as f64,
            r.singles_calls,
            r.calls
        );
    }
}
