//! What an agent loads at session start, within a hard token budget, and what `recall`
//! finds: the pure ranking and budgeting behind `dream context`, the file each cycle
//! writes, the hooks and the MCP server.
//!
//! A memory is only useful if an agent reads it, and only affordable if it reads a
//! bounded part of it: harnesses cap what they load (Claude Code reads the first 200 lines
//! or 25 KB of a memory file and drops the rest, newest entries included), so dream picks
//! what goes in itself, by a rule a person can state, and says what it left out:
//!
//! - durable facts (persona, human, scratch) first, by `rank = salience + reinforcement`,
//!   where salience is the forget pass's (block weight + protected bonus + recency) and
//!   reinforcement is the share of [`MAX_CITED`] supporting events the fact cites; ties go
//!   to the fact seen last, then the id;
//! - then recent episodes (the episodes block), last seen first;
//! - then one line on what waits for the person (review cards, skill drafts).
//!
//! With a query, facts relevant to it (lexical overlap plus the embedder's cosine, at
//! least [`RELEVANT`]) come first in each section, most relevant first, the rest by the
//! rule above. Lines are admitted in that order while the whole text stays within the
//! budget, counted as the token budget counts ([`estimate_tokens`]: half the bytes),
//! so the printed context never exceeds it.
//!
//! No echo: everything dream shows an agent starts with [`MARKER`], and an event whose
//! text carries it is stored as recalled (see `event::from_object`), so memory read back
//! never counts as support for itself.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use chrono::NaiveDate;
use serde::Serialize;

use crate::llm::budget::estimate_tokens;
use crate::passes::gates::salience;
use crate::schema::settings::Retention;
use crate::schema::{is_speaker_name, Block, Fact, Memory, MAX_CITED};
use crate::text::measures;

// The marker lives with events, which are stored as recalled when they carry it.
pub use crate::sources::event::{carries_marker, marker_line, MARKER};

/// A query result at least this relevant counts as relevant (see [`relevance`]).
pub const RELEVANT: f64 = 0.2;

/// Where a fact goes in the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Section {
    /// Persona, human and scratch facts.
    Durable,
    /// The episodes block.
    Episodes,
}

impl Section {
    pub fn of(block: Block) -> Section {
        match block {
            Block::Episodes => Section::Episodes,
            _ => Section::Durable,
        }
    }

    fn heading(self) -> &'static str {
        match self {
            Section::Durable => "## Durable facts",
            Section::Episodes => "## Recent episodes",
        }
    }
}

/// `salience + reinforcement`: the order of durable facts.
pub fn rank(block: Block, fact: &Fact, retention: &Retention, today: NaiveDate) -> f64 {
    let reinforcement = fact.support.len().min(MAX_CITED) as f64 / MAX_CITED as f64;
    salience(block, fact, retention, today) + reinforcement
}

/// The content tokens of a query, as [`relevance`] compares them.
pub fn query_tokens(query: &str) -> BTreeSet<String> {
    measures::content_tokens(query)
}

/// How relevant a fact is to a query, in `[0, 1]`: half the share of the query's content
/// words the fact holds, half the embedder's cosine between them (negative counts as 0).
pub fn relevance(query: &BTreeSet<String>, fact_text: &str, cosine: Option<f64>) -> f64 {
    let lexical = if query.is_empty() {
        0.0
    } else {
        let fact = measures::content_tokens(fact_text);
        query.intersection(&fact).count() as f64 / query.len() as f64
    };
    let cosine = cosine.unwrap_or(0.0).clamp(0.0, 1.0);
    round3(0.5 * lexical + 0.5 * cosine)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The words of a memory line its vector is made from (the cosine half of [`relevance`]):
/// what was said, without the day an episode opens with ("8 May 2023, "), the speaker
/// named before it ("Ana: ") and the days written beside relative dates ("yesterday [7
/// May 2023]"). Those say when and by whom, and the lexical half still matches them; in a
/// vector (a mean of word vectors) they are shared by every line of one person or one day
/// and pull all of them towards any question that names that person, most of all the
/// short ones. A line that is nothing but them is kept whole.
pub fn vector_text(text: &str) -> std::borrow::Cow<'_, str> {
    static BRACKETED_DAY: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r" ?\[[^\[\]]*\d{4}[^\[\]]*\]").expect("a valid pattern")
    });
    let body = crate::schema::episode_body(text);
    let body = match body.split_once(": ") {
        Some((speaker, rest)) if is_speaker_name(speaker) => rest,
        _ => body,
    };
    let said = BRACKETED_DAY.replace_all(body, "");
    if said.trim().is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    said
}

/// What waits for the person, for the closing line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Waiting {
    /// Pending review cards (facts and skill proposals).
    pub cards: usize,
    /// Skill drafts awaiting `dream skills promote`.
    pub skill_drafts: usize,
}

/// What to build a context from.
pub struct Request<'a> {
    pub memory: &'a Memory,
    pub retention: &'a Retention,
    pub today: NaiveDate,
    /// The most tokens the markdown may take; `None`: every fact (`--all`).
    pub budget: Option<u64>,
    /// Ranks by relevance to this text first, when given.
    pub query: Option<&'a str>,
    /// The embedder's cosine between the query and each fact, by fact id (missing: 0).
    pub cosines: &'a BTreeMap<String, f64>,
    pub waiting: Waiting,
    /// A line saying which facts the view holds (which project's), shown under the
    /// marker and counted within the budget.
    pub scope: Option<String>,
}

/// One fact as the context shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    pub id: String,
    pub text: String,
    pub section: Section,
    pub block: Block,
    pub category: String,
    pub first_seen: NaiveDate,
    pub last_seen: NaiveDate,
    pub rank: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relevance: Option<f64>,
}

impl Entry {
    fn line(&self) -> String {
        match self.section {
            Section::Durable => format!("- {} [{}]", self.text, self.id),
            // An episode kept by the episodic tier names its own day ("8 May 2023, Ana:
            // ..."); any other is shown with the day it was last seen.
            Section::Episodes if crate::schema::episode_body(&self.text) != self.text => {
                format!("- {} [{}]", self.text, self.id)
            }
            Section::Episodes => format!("- {}: {} [{}]", self.last_seen, self.text, self.id),
        }
    }
}

/// How many facts of each section did not fit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    pub facts: usize,
    pub episodes: usize,
}

/// The context: what fits, in order, and what was left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Context {
    pub marker: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<u64>,
    /// The markdown's size by [`estimate_tokens`].
    pub tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    pub facts: Vec<Entry>,
    pub left_out: LeftOut,
    pub waiting: Waiting,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

const HEADER: &str =
    "# Memory (dream)\n\nWhat you know from earlier sessions, most important first. \
Cite a fact's id when it shapes what you do.\n";

fn left_out_line(left: LeftOut, budget: Option<u64>) -> Option<String> {
    if left.facts + left.episodes == 0 {
        return None;
    }
    let budget = budget.map_or(String::new(), |b| format!(" to stay within {b} tokens"));
    Some(format!(
        "_{} more facts and {} more episodes left out{budget}: `dream context --all` lists them, `recall` searches them._",
        left.facts, left.episodes
    ))
}

fn waiting_line(w: Waiting) -> Option<String> {
    let plural = |n: usize, one: &str| match n {
        0 => None,
        1 => Some(format!("1 {one}")),
        n => Some(format!("{n} {one}s")),
    };
    let parts: Vec<String> = [
        plural(w.cards, "review card"),
        plural(w.skill_drafts, "skill draft"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "Waiting for the person: {} (`dream review`, `dream skills list`).",
        parts.join(" and ")
    ))
}

/// Every active fact with a non-empty id, ranked for the context.
fn ranked(req: &Request<'_>) -> Vec<Entry> {
    let q = req.query.map(query_tokens);
    let mut entries: Vec<Entry> = req
        .memory
        .facts()
        .filter(|(_, f)| !f.id.is_empty())
        .map(|(block, f)| Entry {
            id: f.id.clone(),
            text: crate::schema::one_line(&f.text),
            section: Section::of(block),
            block,
            category: f.category.clone(),
            first_seen: f.first_seen,
            last_seen: f.last_seen,
            rank: round3(rank(block, f, req.retention, req.today)),
            relevance: q
                .as_ref()
                .map(|q| relevance(q, &f.text, req.cosines.get(&f.id).copied())),
        })
        .collect();
    entries.sort_by(|a, b| {
        let relevant = |e: &Entry| e.relevance.filter(|r| *r >= RELEVANT);
        (a.section == Section::Episodes)
            .cmp(&(b.section == Section::Episodes))
            .then_with(|| match (relevant(a), relevant(b)) {
                (Some(x), Some(y)) => y.total_cmp(&x),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            })
            .then_with(|| match a.section {
                Section::Durable => b
                    .rank
                    .total_cmp(&a.rank)
                    .then(b.last_seen.cmp(&a.last_seen)),
                Section::Episodes => b
                    .last_seen
                    .cmp(&a.last_seen)
                    .then(b.rank.total_cmp(&a.rank)),
            })
            .then_with(|| a.id.cmp(&b.id))
    });
    entries
}

/// Build the context: ranked facts admitted in order while the markdown fits the budget.
pub fn build(req: &Request<'_>) -> Context {
    let all = ranked(req);
    let totals = LeftOut {
        facts: all.iter().filter(|e| e.section == Section::Durable).count(),
        episodes: all
            .iter()
            .filter(|e| e.section == Section::Episodes)
            .count(),
    };
    let mut ctx = Context {
        marker: MARKER,
        budget: req.budget,
        tokens: 0,
        query: req.query.map(str::to_string),
        facts: Vec::new(),
        left_out: LeftOut::default(),
        waiting: req.waiting,
        scope: req.scope.clone(),
    };
    match req.budget {
        None => ctx.facts = all,
        Some(budget) => {
            // Bytes the fixed parts take, with the left-out line at its longest.
            let bytes_max = budget.saturating_mul(crate::llm::budget::BYTES_PER_TOKEN);
            let mut used = (render(&ctx, Some(totals)).len()) as u64;
            let mut headed = BTreeSet::new();
            for e in all {
                let mut cost = e.line().len() as u64 + 1;
                if !headed.contains(&(e.section as u8)) {
                    cost += e.section.heading().len() as u64 + 2;
                }
                if used + cost <= bytes_max {
                    used += cost;
                    headed.insert(e.section as u8);
                    ctx.facts.push(e);
                } else {
                    match e.section {
                        Section::Durable => ctx.left_out.facts += 1,
                        Section::Episodes => ctx.left_out.episodes += 1,
                    }
                }
            }
            // The estimate above is exact for the bytes; keep the promise even if the
            // rendering and the estimate ever drift apart.
            while estimate_tokens(&ctx.render_markdown()) > budget {
                let Some(e) = ctx.facts.pop() else { break };
                match e.section {
                    Section::Durable => ctx.left_out.facts += 1,
                    Section::Episodes => ctx.left_out.episodes += 1,
                }
            }
        }
    }
    ctx.tokens = estimate_tokens(&ctx.render_markdown());
    ctx
}

/// The markdown, with `left_out` standing in for the real counts (to measure its longest).
fn render(ctx: &Context, left_out: Option<LeftOut>) -> String {
    let mut out = String::new();
    out.push_str(&marker_line());
    out.push('\n');
    if let Some(scope) = &ctx.scope {
        out.push_str(scope);
        out.push('\n');
    }
    out.push_str(HEADER);
    if let Some(q) = &ctx.query {
        let _ = writeln!(out, "Ranked for: {}", crate::schema::one_line(q));
    }
    let mut section = None;
    for e in &ctx.facts {
        if section != Some(e.section) {
            let _ = write!(out, "\n{}\n", e.section.heading());
            section = Some(e.section);
        }
        out.push_str(&e.line());
        out.push('\n');
    }
    if ctx.facts.is_empty() && left_out.is_none_or(|l| l.facts + l.episodes == 0) {
        out.push_str("\nNo facts yet: dream learns them from your sessions, twice a day.\n");
    }
    let lines: Vec<String> = [
        left_out_line(left_out.unwrap_or(ctx.left_out), ctx.budget),
        waiting_line(ctx.waiting),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !lines.is_empty() {
        out.push('\n');
        for l in lines {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

impl Context {
    /// The context as Markdown an agent reads; it starts with [`marker_line`].
    pub fn render_markdown(&self) -> String {
        render(self, None)
    }
}

/// One `recall` result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub id: String,
    pub text: String,
    pub block: Block,
    pub category: String,
    pub first_seen: NaiveDate,
    pub last_seen: NaiveDate,
    /// [`relevance`] to the query.
    pub score: f64,
}

/// The facts and episodes relevant to `query` (at least [`RELEVANT`]), most relevant first
/// (then by [`rank`]), at most `limit`.
pub fn recall(
    memory: &Memory,
    retention: &Retention,
    today: NaiveDate,
    query: &str,
    cosines: &BTreeMap<String, f64>,
    limit: usize,
) -> Vec<Hit> {
    let q = query_tokens(query);
    let mut hits: Vec<(Hit, f64)> = memory
        .facts()
        .filter(|(_, f)| !f.id.is_empty())
        .filter_map(|(block, f)| {
            let score = relevance(&q, &f.text, cosines.get(&f.id).copied());
            (score >= RELEVANT).then(|| {
                (
                    Hit {
                        id: f.id.clone(),
                        text: f.text.clone(),
                        block,
                        category: f.category.clone(),
                        first_seen: f.first_seen,
                        last_seen: f.last_seen,
                        score,
                    },
                    rank(block, f, retention, today),
                )
            })
        })
        .collect();
    hits.sort_by(|(a, ra), (b, rb)| {
        b.score
            .total_cmp(&a.score)
            .then(rb.total_cmp(ra))
            .then(a.id.cmp(&b.id))
    });
    hits.into_iter().take(limit).map(|(h, _)| h).collect()
}

/// Recall results as the text an agent reads: the marker, then one line per hit.
pub fn render_hits(query: &str, hits: &[Hit]) -> String {
    let mut out = marker_line();
    out.push('\n');
    if hits.is_empty() {
        let _ = writeln!(
            out,
            "No fact in memory matches {:?}.",
            crate::schema::one_line(query)
        );
        return out;
    }
    for h in hits {
        let _ = writeln!(
            out,
            "- {} [{}] ({}, {}, last seen {}, score {:.2})",
            crate::schema::one_line(&h.text),
            h.id,
            h.block.as_str(),
            h.category,
            h.last_seen,
            h.score
        );
    }
    out
}

/// The fact ids a text cites (`f_` and 8 hex digits, with an optional `-N` suffix), each
/// once, in order. Whether they exist is the caller's business.
pub fn cited_ids(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("f_") {
        let start = i + at;
        i = start + 2;
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let hex_end = start + 2 + 8;
        if hex_end > bytes.len()
            || !bytes[start + 2..hex_end]
                .iter()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        {
            continue;
        }
        let mut end = hex_end;
        if end + 1 < bytes.len() && bytes[end] == b'-' && bytes[end + 1].is_ascii_digit() {
            end += 1;
            while end < bytes.len() && bytes[end].is_ascii_digit() {
                end += 1;
            }
        }
        if end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
            continue;
        }
        let id = text[start..end].to_string();
        if !out.contains(&id) {
            out.push(id);
        }
        i = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{BlockFile, Origin};

    fn day(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    fn fact(id: &str, text: &str, cat: &str, last: &str, support: usize) -> Fact {
        Fact::new(
            id.into(),
            text.into(),
            cat.into(),
            Origin::Auto,
            (0..support).map(|i| format!("ev_{i}")).collect(),
            day("2026-01-01"),
            day(last),
        )
    }

    fn memory(facts: &[(Block, Fact)]) -> Memory {
        let mut blocks: Vec<BlockFile> = Block::ALL.iter().map(|b| BlockFile::empty(*b)).collect();
        for (b, f) in facts {
            blocks
                .iter_mut()
                .find(|bf| bf.block == *b)
                .unwrap()
                .push(f.clone());
        }
        Memory::new(blocks)
    }

    fn req<'a>(
        m: &'a Memory,
        r: &'a Retention,
        budget: Option<u64>,
        cos: &'a BTreeMap<String, f64>,
    ) -> Request<'a> {
        Request {
            memory: m,
            retention: r,
            today: day("2026-11-29"),
            budget,
            query: None,
            cosines: cos,
            waiting: Waiting::default(),
            scope: None,
        }
    }

    fn sample() -> Memory {
        memory(&[
            (
                Block::Scratch,
                fact(
                    "f_00000001",
                    "The build uses cargo nextest.",
                    "knowledge",
                    "2026-11-28",
                    3,
                ),
            ),
            (
                Block::Human,
                fact(
                    "f_00000002",
                    "I live in Lisbon.",
                    "identity",
                    "2026-10-01",
                    2,
                ),
            ),
            (
                Block::Human,
                fact(
                    "f_00000003",
                    "I like long walks by the river.",
                    "knowledge",
                    "2026-11-29",
                    12,
                ),
            ),
            (
                Block::Episodes,
                fact(
                    "f_00000004",
                    "Moved the office to Porto.",
                    "event",
                    "2026-11-20",
                    3,
                ),
            ),
            (
                Block::Episodes,
                fact(
                    "f_00000005",
                    "Gave a talk at RustConf.",
                    "event",
                    "2026-11-25",
                    3,
                ),
            ),
        ])
    }

    #[test]
    fn durable_facts_come_by_rank_then_episodes_newest_first() {
        let m = sample();
        let r = Retention::default();
        let cos = BTreeMap::new();
        let c = build(&req(&m, &r, None, &cos));
        let ids: Vec<&str> = c.facts.iter().map(|e| e.id.as_str()).collect();
        // f_2: human 1 + protected 1 + recency ~0.03 + 2/12; f_3: human 1 + recency 1 + 1;
        // f_1: scratch 0.25 + recency ~0.98 + 0.25.
        assert_eq!(
            ids,
            [
                "f_00000003",
                "f_00000002",
                "f_00000001",
                "f_00000005",
                "f_00000004"
            ]
        );
        let md = c.render_markdown();
        assert!(md.starts_with(&marker_line()), "{md}");
        assert!(md.contains("## Durable facts\n- I like long walks by the river. [f_00000003]\n"));
        assert!(md
            .contains("## Recent episodes\n- 2026-11-25: Gave a talk at RustConf. [f_00000005]\n"));
        assert!(!md.contains("left out"), "{md}");
    }

    #[test]
    fn an_episode_that_names_its_day_is_shown_without_a_second_one() {
        let m = memory(&[(
            Block::Episodes,
            fact(
                "f_00000009",
                "8 May 2023, Ana: I sold my bike.",
                "event",
                "2026-11-25",
                1,
            ),
        )]);
        let r = Retention::default();
        let cos = BTreeMap::new();
        let md = build(&req(&m, &r, None, &cos)).render_markdown();
        assert!(
            md.contains("## Recent episodes\n- 8 May 2023, Ana: I sold my bike. [f_00000009]\n"),
            "{md}"
        );
    }

    #[test]
    fn the_budget_is_never_exceeded_and_what_is_left_out_is_said() {
        let facts: Vec<(Block, Fact)> = (0..300)
            .map(|i| {
                (
                    if i % 5 == 0 {
                        Block::Episodes
                    } else {
                        Block::Human
                    },
                    fact(
                        &format!("f_{i:08x}"),
                        &format!("Fact number {i} says something about topic {}.", i % 17),
                        "knowledge",
                        "2026-11-01",
                        i % 13,
                    ),
                )
            })
            .collect();
        let m = memory(&facts);
        let r = Retention::default();
        let cos = BTreeMap::new();
        for budget in [300, 337, 500, 2000, 5000] {
            let mut rq = req(&m, &r, Some(budget), &cos);
            rq.waiting = Waiting {
                cards: 3,
                skill_drafts: 1,
            };
            let c = build(&rq);
            let md = c.render_markdown();
            assert!(
                estimate_tokens(&md) <= budget,
                "{budget}: {}",
                estimate_tokens(&md)
            );
            assert_eq!(c.tokens, estimate_tokens(&md));
            assert_eq!(c.facts.len() + c.left_out.facts + c.left_out.episodes, 300);
            assert!(md.contains(&format!(
                "_{} more facts and {} more episodes left out to stay within {budget} tokens",
                c.left_out.facts, c.left_out.episodes
            )));
            assert!(md.contains("Waiting for the person: 3 review cards and 1 skill draft"));
        }
        // A bigger budget admits more, and the small one is a prefix of the big one's
        // durable facts when every line has the same length class.
        let small = build(&req(&m, &r, Some(500), &cos));
        let big = build(&req(&m, &r, Some(2000), &cos));
        assert!(big.facts.len() > small.facts.len());
    }

    #[test]
    fn a_query_puts_relevant_facts_first_in_each_section() {
        let m = sample();
        let r = Retention::default();
        let cos = BTreeMap::new();
        let mut rq = req(&m, &r, None, &cos);
        rq.query = Some("where do I live? Lisbon");
        let c = build(&rq);
        assert_eq!(c.facts[0].id, "f_00000002");
        assert!(c.facts[0].relevance.unwrap() >= RELEVANT);
        assert!(c
            .render_markdown()
            .contains("Ranked for: where do I live? Lisbon"));
        let hits = recall(&m, &r, day("2026-11-29"), "Porto office", &cos, 5);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].id, "f_00000004");
        let mut cos = BTreeMap::new();
        cos.insert("f_00000005".to_string(), 0.9);
        let hits = recall(&m, &r, day("2026-11-29"), "conference", &cos, 5);
        assert_eq!(
            hits[0].id, "f_00000005",
            "the vector side finds what words miss"
        );
        assert!(render_hits("conference", &hits).starts_with(&marker_line()));
    }

    #[test]
    fn a_lines_vector_is_made_of_what_was_said() {
        let v = |t: &str| vector_text(t).into_owned();
        assert_eq!(
            v("8 May 2023, Ana: I went to a support group yesterday [7 May 2023]."),
            "I went to a support group yesterday."
        );
        assert_eq!(
            v("8 May 2023: Fixed the flaky test."),
            "Fixed the flaky test."
        );
        assert_eq!(
            v("Ana: I've always loved horses!"),
            "I've always loved horses!"
        );
        assert_eq!(v("Mary Ann Lee: Hi."), "Hi.");
        // Not a speaker: lower case, a number, more than three words.
        assert_eq!(
            v("note: the build uses nextest"),
            "note: the build uses nextest"
        );
        assert_eq!(v("Port 8443: the shop"), "Port 8443: the shop");
        assert_eq!(
            v("The Big Old Red Barn: sold"),
            "The Big Old Red Barn: sold"
        );
        // Brackets that hold no day stay; a line with nothing else is kept whole.
        assert_eq!(v("Use the [release] branch."), "Use the [release] branch.");
        assert_eq!(
            v("8 May 2023, Ana: [7 May 2023]"),
            "8 May 2023, Ana: [7 May 2023]"
        );
        assert_eq!(v(""), "");
        assert_eq!(v("é: ü [ 2023 ]"), "é: ü");
    }

    #[test]
    fn cited_ids_are_found_once_and_only_whole() {
        assert_eq!(
            cited_ids("used f_1a2b3c4d and [f_00000002-2], again f_1a2b3c4d; not xf_12345678 or f_1234567 or f_1a2b3c4dz"),
            vec!["f_1a2b3c4d".to_string(), "f_00000002-2".to_string()]
        );
        assert!(cited_ids("").is_empty());
        assert!(cited_ids("f_").is_empty());
    }

    #[test]
    fn the_marker_makes_an_event_recalled() {
        let line = format!(
            r#"{{"ts":"2026-11-29T10:00:00Z","kind":"message","text":"{}\n- I live in Lisbon. [f_00000002]","trust":"owner"}}"#,
            marker_line()
        );
        let ev = crate::sources::event::parse_line(line.as_bytes(), 1 << 20)
            .unwrap()
            .event;
        assert!(ev.recalled);
        let plain = r#"{"ts":"2026-11-29T10:00:00Z","kind":"message","text":"I live in Lisbon."}"#;
        assert!(
            !crate::sources::event::parse_line(plain.as_bytes(), 1 << 20)
                .unwrap()
                .event
                .recalled
        );
    }
}
