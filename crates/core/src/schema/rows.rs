//! Durable memory as files (SPEC S3): facts as rows, the blocks, the archive.
//!
//! A fact is one Markdown list item with its metadata in a trailing HTML comment, so an
//! agent or a person reads plain sentences and `git diff` shows one changed line per fact:
//!
//! ```text
//! - I live in Lisbon. <!-- id=f_3a9c1e2b cat=identity by=auto first=2026-11-01 last=2026-11-03 ev=ev_1,ev_2,ev_3 -->
//! ```
//!
//! A block file keeps every line it does not understand exactly where a person put it, so
//! hand edits are never clobbered; a list item without metadata is a hand-written fact.
//! This module parses and renders; it never touches the disk (the engine's `store` does).
//! Review cards are `cards`; the wording of one line is `wording`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::sources::event::hex;
use crate::text::kv::Value as MetaValue;
use crate::text::measures;

/// The agent-facing files under `memory/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Block {
    Persona,
    Human,
    Episodes,
    Scratch,
}

impl Block {
    pub const ALL: [Block; 4] = [
        Block::Persona,
        Block::Human,
        Block::Episodes,
        Block::Scratch,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Block::Persona => "persona",
            Block::Human => "human",
            Block::Episodes => "episodes",
            Block::Scratch => "scratch",
        }
    }

    pub fn parse(s: &str) -> Option<Block> {
        Block::ALL.into_iter().find(|b| b.as_str() == s)
    }

    /// The file of this block, relative to the repo root.
    pub fn path(self) -> String {
        format!("memory/{}.md", self.as_str())
    }

    fn title(self) -> &'static str {
        match self {
            Block::Persona => "Persona",
            Block::Human => "Human",
            Block::Episodes => "Episodes",
            Block::Scratch => "Scratch",
        }
    }

    fn blurb(self) -> &'static str {
        match self {
            Block::Persona => "Durable facts about the assistant itself.",
            Block::Human => "Stable facts about the user: identity, preferences, commitments.",
            Block::Episodes => {
                "What was said once or happened, dated (events anchored in time or place). An \
                 episode said again on enough days moves to its block (`home=`); one not said \
                 again for `episodes.retention_days` days, or the oldest beyond \
                 `episodes.max_facts`, moves to the archive."
            }
            Block::Scratch => "Facts not yet placed in a block.",
        }
    }

    /// The text of a new, empty block file.
    pub fn empty_file(self) -> String {
        format!(
            "# {}\n\n{}\n\n<!-- Maintained by dream: one fact per line; the comment after a fact is its \
             metadata (id, category, supporting events). You may edit this file by hand: new lines \
             become facts you own, and dream never overwrites your edits. -->\n\n",
            self.title(),
            self.blurb()
        )
    }
}

/// Categories with a meaning in routing and retention. Any lower-case word is accepted;
/// these are the ones the offline reflector assigns.
pub const CATEGORIES: &[&str] = &[
    "identity",
    "preferences",
    "commitments",
    "persona",
    "event",
    "project",
    "knowledge",
];

/// The block a fact of this category belongs in, for the categories that name one:
/// identity, preferences and commitments in human, event in episodes, persona in persona.
pub fn block_of_category(category: &str) -> Option<Block> {
    match category {
        "identity" | "preferences" | "commitments" => Some(Block::Human),
        "event" => Some(Block::Episodes),
        "persona" => Some(Block::Persona),
        _ => None,
    }
}

/// Category and block of a fact, by the phrase rules (`text::phrases::category`): a
/// category that names no block (`project`, `knowledge`) is in scratch.
pub fn classify(text: &str) -> (&'static str, Block) {
    let category = crate::text::phrases::category(text);
    (
        category,
        block_of_category(category).unwrap_or(Block::Scratch),
    )
}

/// How a fact came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Auto-promoted by a cycle.
    Auto,
    /// Accepted by a person from a review card.
    Review,
    /// Written or edited by a person.
    Owner,
    /// Produced by a maintenance pass (merge).
    Pass,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Auto => "auto",
            Origin::Review => "review",
            Origin::Owner => "owner",
            Origin::Pass => "pass",
        }
    }

    pub fn parse(s: &str) -> Option<Origin> {
        match s {
            "auto" => Some(Origin::Auto),
            "review" => Some(Origin::Review),
            "owner" => Some(Origin::Owner),
            "pass" => Some(Origin::Pass),
            _ => None,
        }
    }
}

/// The most supporting events a fact cites (`ev=`): those that trace its words, then recent
/// ones; see [`crate::text::measures::cited`]. Git history keeps every id it ever cited.
pub const MAX_CITED: usize = 12;

/// One durable fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    pub id: String,
    pub text: String,
    pub category: String,
    pub origin: Origin,
    /// Supporting event ids, in order of first citation (at most [`MAX_CITED`] once a cycle
    /// has touched the fact).
    pub support: Vec<String>,
    pub first_seen: NaiveDate,
    pub last_seen: NaiveDate,
    /// Start of validity, set when this fact superseded another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<NaiveDate>,
    /// End of validity, set when it was superseded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<NaiveDate>,
    /// For an episode, the durable block it moves to once it is said often enough
    /// (`home=`); none for an event, which stays in the episodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home: Option<Block>,
    /// Metadata keys this version of dream does not know, kept verbatim.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, String>,
}

/// The id of a fact, card or candidate with this text: a short hash of its normalized text,
/// so the same candidate found twice (a rerun after a crash) gets the same id.
pub fn text_id(prefix: &str, text: &str) -> String {
    let digest = Sha256::digest(measures::normalize(text).as_bytes());
    format!("{prefix}_{}", &hex(&digest)[..8])
}

fn needs_quoting(v: &str) -> bool {
    v.is_empty()
        || !v
            .chars()
            .all(|c| c.is_alphanumeric() || "_.:/@+-".contains(c))
}

/// A value in JSON quotes, with `<` and `>` escaped too, so no value (an event id that
/// holds `<!--` or `-->`) can open or close a comment inside the metadata comment: the
/// line's last `<!--` is always the metadata's own.
fn quote(v: &str) -> String {
    let json = serde_json::to_string(v).expect("strings serialize");
    escape_angles(&json)
}

fn escape_angles(json: &str) -> String {
    json.replace('<', "\\u003c").replace('>', "\\u003e")
}

fn put(out: &mut String, key: &str, value: &str) {
    out.push(' ');
    out.push_str(key);
    out.push('=');
    if needs_quoting(value) {
        out.push_str(&quote(value));
    } else {
        out.push_str(value);
    }
}

fn put_list(out: &mut String, key: &str, values: &[String]) {
    if values.is_empty() {
        return;
    }
    out.push(' ');
    out.push_str(key);
    out.push('=');
    if values.iter().any(|v| needs_quoting(v) || v.contains(',')) {
        let json = serde_json::to_string(values).expect("lists serialize");
        out.push_str(&escape_angles(&json));
    } else {
        out.push_str(&values.join(","));
    }
}

/// Parse `key=value key="quoted" key=a,b key=["x y"]` pairs.
fn parse_meta(s: &str) -> Option<BTreeMap<String, MetaValue>> {
    crate::text::kv::parse(s, true).map(|pairs| pairs.into_iter().collect())
}

const KNOWN_KEYS: &[&str] = &[
    "id", "cat", "by", "first", "last", "from", "to", "home", "ev",
];

impl Fact {
    /// A new fact: the one way a cycle, a pass, a person's decision or a test makes one.
    /// It has no validity interval, no durable block to move to and no unknown keys; a
    /// caller that needs them sets them on the value returned.
    pub fn new(
        id: String,
        text: String,
        category: String,
        origin: Origin,
        support: Vec<String>,
        first_seen: NaiveDate,
        last_seen: NaiveDate,
    ) -> Fact {
        Fact {
            id,
            text,
            category,
            origin,
            support,
            first_seen,
            last_seen,
            valid_from: None,
            valid_to: None,
            home: None,
            extra: BTreeMap::new(),
        }
    }

    /// The fact as one Markdown list item with its metadata comment.
    pub fn render(&self) -> String {
        if self.id.is_empty() {
            // A hand-written fact not adopted yet stays as the person wrote it.
            return format!("- {}", self.text);
        }
        let mut meta = String::new();
        put(&mut meta, "id", &self.id);
        put(&mut meta, "cat", &self.category);
        put(&mut meta, "by", self.origin.as_str());
        put(&mut meta, "first", &self.first_seen.to_string());
        put(&mut meta, "last", &self.last_seen.to_string());
        if let Some(d) = self.valid_from {
            put(&mut meta, "from", &d.to_string());
        }
        if let Some(d) = self.valid_to {
            put(&mut meta, "to", &d.to_string());
        }
        if let Some(b) = self.home {
            put(&mut meta, "home", b.as_str());
        }
        for (k, v) in &self.extra {
            put(&mut meta, k, v);
        }
        put_list(&mut meta, "ev", &self.support);
        // The text as written, white space collapsed: a comment a person put in their
        // line (`- Another <!-- -->`) stays as they wrote it (the metadata comment is the
        // last one on the line, which is what parsing reads).
        let text = self.text.split_whitespace().collect::<Vec<_>>().join(" ");
        format!("- {text} <!--{} -->", meta)
    }

    /// Parse a list item; `None` when the line is not a list item. A list item without
    /// dream metadata parses as a hand-written fact with an empty id.
    pub fn parse(line: &str, today: NaiveDate) -> Option<Fact> {
        let trimmed = line.trim_end();
        let body = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix("* "))?;
        let (text, meta) = match body.rfind("<!--") {
            Some(at) if body.ends_with("-->") => {
                let meta = parse_meta(&body[at + 4..body.len() - 3]);
                match meta {
                    Some(m) if m.contains_key("id") => (body[..at].trim_end(), Some(m)),
                    _ => (body, None),
                }
            }
            _ => (body, None),
        };
        let text = text.trim().to_string();
        if text.is_empty() {
            return None;
        }
        let Some(meta) = meta else {
            return Some(Fact {
                id: String::new(),
                text,
                category: "knowledge".into(),
                origin: Origin::Owner,
                support: Vec::new(),
                first_seen: today,
                last_seen: today,
                valid_from: None,
                valid_to: None,
                home: None,
                extra: BTreeMap::new(),
            });
        };
        let get = |k: &str| meta.get(k).map(MetaValue::one);
        let date = |k: &str| get(k).and_then(|v| v.parse::<NaiveDate>().ok());
        let extra = meta
            .iter()
            .filter(|(k, _)| !KNOWN_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.one()))
            .collect();
        Some(Fact {
            id: get("id").unwrap_or_default(),
            text,
            category: get("cat").unwrap_or_else(|| "knowledge".into()),
            origin: get("by")
                .and_then(|b| Origin::parse(&b))
                .unwrap_or(Origin::Owner),
            support: meta.get("ev").map(MetaValue::list).unwrap_or_default(),
            first_seen: date("first").unwrap_or(today),
            last_seen: date("last").or(date("first")).unwrap_or(today),
            valid_from: date("from"),
            valid_to: date("to"),
            home: get("home").and_then(|b| Block::parse(&b)),
            extra,
        })
    }
}

/// One line of a block file: a fact, or anything else kept verbatim.
#[derive(Debug, Clone, PartialEq)]
enum Line {
    Fact(Fact),
    Other(String),
}

/// A block file as lines, so rendering keeps what a person wrote where they wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockFile {
    pub block: Block,
    lines: Vec<Line>,
}

impl BlockFile {
    pub fn empty(block: Block) -> BlockFile {
        BlockFile::parse(block, &block.empty_file(), NaiveDate::MIN)
    }

    pub fn parse(block: Block, text: &str, today: NaiveDate) -> BlockFile {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines = Vec::new();
        let mut in_fence = false;
        for raw in text.lines() {
            if raw.trim_start().starts_with("```") {
                in_fence = !in_fence;
            }
            match (in_fence, Fact::parse(raw, today)) {
                (false, Some(f)) => lines.push(Line::Fact(f)),
                _ => lines.push(Line::Other(raw.to_string())),
            }
        }
        BlockFile { block, lines }
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        for line in &self.lines {
            match line {
                Line::Fact(f) => out.push_str(&f.render()),
                Line::Other(s) => out.push_str(s),
            }
            out.push('\n');
        }
        out
    }

    pub fn facts(&self) -> impl Iterator<Item = &Fact> {
        self.lines.iter().filter_map(|l| match l {
            Line::Fact(f) => Some(f),
            Line::Other(_) => None,
        })
    }

    pub fn facts_mut(&mut self) -> impl Iterator<Item = &mut Fact> {
        self.lines.iter_mut().filter_map(|l| match l {
            Line::Fact(f) => Some(f),
            Line::Other(_) => None,
        })
    }

    pub fn push(&mut self, fact: Fact) {
        // Keep exactly one blank line between the header and the first fact.
        while matches!(self.lines.last(), Some(Line::Other(s)) if s.trim().is_empty())
            && self.facts().next().is_some()
        {
            self.lines.pop();
        }
        self.lines.push(Line::Fact(fact));
    }

    pub fn remove(&mut self, id: &str) -> Option<Fact> {
        let at = self
            .lines
            .iter()
            .position(|l| matches!(l, Line::Fact(f) if f.id == id))?;
        match self.lines.remove(at) {
            Line::Fact(f) => Some(f),
            Line::Other(_) => None,
        }
    }

    /// Remove the first fact for which `pred` holds (archive entries may share an id).
    pub fn remove_where(&mut self, pred: impl Fn(&Fact) -> bool) -> Option<Fact> {
        let at = self
            .lines
            .iter()
            .position(|l| matches!(l, Line::Fact(f) if pred(f)))?;
        match self.lines.remove(at) {
            Line::Fact(f) => Some(f),
            Line::Other(_) => None,
        }
    }
}

/// Every block of durable memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    pub blocks: Vec<BlockFile>,
}

impl Memory {
    pub fn new(blocks: Vec<BlockFile>) -> Memory {
        Memory { blocks }
    }

    pub fn block(&self, b: Block) -> &BlockFile {
        self.blocks
            .iter()
            .find(|f| f.block == b)
            .expect("every block is loaded")
    }

    pub fn block_mut(&mut self, b: Block) -> &mut BlockFile {
        self.blocks
            .iter_mut()
            .find(|f| f.block == b)
            .expect("every block is loaded")
    }

    /// Active facts with their block, in file order.
    pub fn facts(&self) -> impl Iterator<Item = (Block, &Fact)> {
        self.blocks
            .iter()
            .flat_map(|bf| bf.facts().map(move |f| (bf.block, f)))
    }

    pub fn get(&self, id: &str) -> Option<(Block, &Fact)> {
        self.facts().find(|(_, f)| f.id == id)
    }

    pub fn get_mut(&mut self, id: &str) -> Option<&mut Fact> {
        self.blocks
            .iter_mut()
            .flat_map(|bf| bf.facts_mut())
            .find(|f| f.id == id)
    }

    pub fn remove(&mut self, id: &str) -> Option<(Block, Fact)> {
        for bf in &mut self.blocks {
            if let Some(f) = bf.remove(id) {
                return Some((bf.block, f));
            }
        }
        None
    }

    /// Take an active fact out of memory as an archive entry (`why`, in a sentence `reason`,
    /// the verified `policy` or the fact that replaced it): the one way a fact leaves
    /// memory. `None` when no active fact has the id.
    pub fn retire(
        &mut self,
        id: &str,
        on: NaiveDate,
        why: &str,
        reason: String,
        policy: String,
    ) -> Option<Archived> {
        let (block, fact) = self.remove(id)?;
        Some(Archived {
            fact,
            block,
            archived: on,
            why: why.into(),
            reason,
            policy,
        })
    }

    pub fn len(&self) -> usize {
        self.facts().count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Give every hand-written fact (no id yet) an id; returns the ids given. Linear in the
    /// number of facts, however many lines a person pasted (the same line pasted a
    /// thousand times included).
    pub fn adopt_hand_written(&mut self) -> Vec<String> {
        let mut ids = Ids::new(self.facts().map(|(_, f)| f.id.clone()));
        let mut adopted = Vec::new();
        for bf in &mut self.blocks {
            let category = guess_category_for_block(bf.block);
            for f in bf.facts_mut() {
                if f.id.is_empty() {
                    f.id = ids.fresh(text_id("f", &f.text));
                    f.category = category.to_string();
                    adopted.push(f.id.clone());
                }
            }
        }
        adopted
    }

    /// Two active lines with the same id (a line copied by hand, a merge): the first keeps
    /// the id; a later copy with the same text is removed, a later one with other text is
    /// the person's own fact and gets an id of its own (`by=owner`). Returns what was done,
    /// one sentence each, for the commit.
    pub fn resolve_duplicate_ids(&mut self) -> Vec<String> {
        let mut seen: HashMap<String, String> = HashMap::new();
        let mut dups = false;
        for (_, f) in self.facts() {
            if !f.id.is_empty() && seen.insert(f.id.clone(), f.text.clone()).is_some() {
                dups = true;
            }
        }
        if !dups {
            return Vec::new();
        }
        let mut ids = Ids::new(self.facts().map(|(_, f)| f.id.clone()));
        let mut first: HashMap<String, String> = HashMap::new();
        let mut lines = Vec::new();
        for bf in &mut self.blocks {
            let mut keep = Vec::with_capacity(bf.lines.len());
            for line in std::mem::take(&mut bf.lines) {
                let Line::Fact(mut f) = line else {
                    keep.push(line);
                    continue;
                };
                if f.id.is_empty() {
                    keep.push(Line::Fact(f));
                    continue;
                }
                match first.get(&f.id) {
                    None => {
                        first.insert(f.id.clone(), f.text.clone());
                        keep.push(Line::Fact(f));
                    }
                    Some(text) if measures::normalize(text) == measures::normalize(&f.text) => {
                        lines.push(format!(
                            "removed    a second line with id {} and the same text (a copy)",
                            f.id
                        ));
                    }
                    Some(_) => {
                        let old = f.id.clone();
                        f.id = ids.fresh(text_id("f", &f.text));
                        f.origin = Origin::Owner;
                        lines.push(format!(
                            "re-id      {}  a second line with id {old} says something else: it is the person's own fact",
                            f.id
                        ));
                        keep.push(Line::Fact(f));
                    }
                }
            }
            bf.lines = keep;
        }
        lines
    }
}

/// Ids in use, handing out fresh ones (`id`, `id-2`, `id-3`, ...) in constant time each.
struct Ids {
    taken: HashSet<String>,
    next: HashMap<String, usize>,
}

impl Ids {
    fn new(ids: impl Iterator<Item = String>) -> Ids {
        Ids {
            taken: ids.filter(|i| !i.is_empty()).collect(),
            next: HashMap::new(),
        }
    }

    fn fresh(&mut self, id: String) -> String {
        let chosen = if !self.taken.contains(&id) {
            id
        } else {
            let n = self.next.entry(id.clone()).or_insert(2);
            loop {
                let c = format!("{id}-{n}");
                *n += 1;
                if !self.taken.contains(&c) {
                    break c;
                }
            }
        };
        self.taken.insert(chosen.clone());
        chosen
    }
}

/// The first line of a text that is a git merge-conflict marker (1-based), if any: a
/// memory file in the middle of a merge is not read as memory.
pub fn conflict_marker(text: &str) -> Option<(usize, String)> {
    text.lines().enumerate().find_map(|(i, l)| {
        let marker = l.starts_with("<<<<<<< ")
            || l == "<<<<<<<"
            || l == "======="
            || l.starts_with(">>>>>>> ")
            || l == ">>>>>>>";
        marker.then(|| (i + 1, l.chars().take(40).collect()))
    })
}

fn guess_category_for_block(block: Block) -> &'static str {
    match block {
        Block::Persona => "persona",
        Block::Episodes => "event",
        _ => "knowledge",
    }
}

/// `id`, or `id-2`, `id-3`... when taken (one call; [`Memory::adopt_hand_written`] hands
/// out many in constant time each).
pub fn unique_id(id: String, taken: &[String]) -> String {
    let taken: HashSet<&str> = taken.iter().map(String::as_str).collect();
    if !taken.contains(id.as_str()) {
        return id;
    }
    (2..)
        .map(|n| format!("{id}-{n}"))
        .find(|c| !taken.contains(c.as_str()))
        .expect("some suffix is free")
}

/// A fact that left the agent-facing files, with when and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Archived {
    pub fact: Fact,
    pub block: Block,
    pub archived: NaiveDate,
    /// `forgotten`, `superseded`, `merged`, `duplicate`, `undone`, ...
    pub why: String,
    /// The reason, in a sentence.
    pub reason: String,
    /// The policy the code verified (forget), or the fact that replaced it.
    pub policy: String,
}

impl Archived {
    pub fn render(&self) -> String {
        let mut fact = self.fact.clone();
        fact.extra
            .insert("block".into(), self.block.as_str().into());
        fact.extra
            .insert("archived".into(), self.archived.to_string());
        fact.extra.insert("why".into(), self.why.clone());
        fact.extra.insert("reason".into(), self.reason.clone());
        if !self.policy.is_empty() {
            fact.extra.insert("policy".into(), self.policy.clone());
        }
        fact.render()
    }

    pub fn parse(line: &str) -> Option<Archived> {
        let mut fact = Fact::parse(line, NaiveDate::MIN)?;
        if fact.id.is_empty() {
            return None;
        }
        let mut take = |k: &str| fact.extra.remove(k).unwrap_or_default();
        let block = Block::parse(&take("block")).unwrap_or(Block::Scratch);
        let archived = take("archived").parse().unwrap_or(NaiveDate::MIN);
        let why = take("why");
        let reason = take("reason");
        let policy = take("policy");
        Some(Archived {
            fact,
            block,
            archived,
            why,
            reason,
            policy,
        })
    }
}

/// The path of the archive file.
pub const ARCHIVE: &str = "archive/facts.md";

pub fn archive_header() -> String {
    "# Archive\n\nForgotten, superseded and merged facts, with when and why. Agents do not load \
     this file; git keeps every earlier version.\n\n"
        .to_string()
}

/// The archive file as a cycle will commit it, and the ids it holds: entries are appended
/// as whole lines, every other byte of the file kept.
#[derive(Debug, Clone)]
pub struct Archive {
    pub text: String,
    pub ids: BTreeSet<String>,
}

impl Archive {
    /// The archive whose file holds `text`.
    pub fn of(text: String) -> Archive {
        let ids = text
            .lines()
            .filter_map(Archived::parse)
            .map(|a| a.fact.id)
            .collect();
        Archive { text, ids }
    }

    /// Append an entry.
    pub fn push(&mut self, entry: Archived) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
        self.text.push_str(&entry.render());
        self.text.push('\n');
        self.ids.insert(entry.fact.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    fn fact() -> Fact {
        Fact::new(
            "f_12345678".into(),
            "I live in Lisbon.".into(),
            "identity".into(),
            Origin::Auto,
            vec!["ev_1".into(), "ev_2".into()],
            day("2026-11-01"),
            day("2026-11-03"),
        )
    }

    #[test]
    fn a_fact_line_round_trips() {
        let f = fact();
        let line = f.render();
        assert_eq!(
            line,
            "- I live in Lisbon. <!-- id=f_12345678 cat=identity by=auto first=2026-11-01 last=2026-11-03 ev=ev_1,ev_2 -->"
        );
        assert_eq!(Fact::parse(&line, day("2027-01-01")).unwrap(), f);
    }

    #[test]
    fn odd_ids_and_reasons_are_quoted_and_round_trip() {
        let mut f = fact();
        f.support = vec!["conv-26:D1:3".into(), "a b,c".into(), "x<!--y".into()];
        f.extra.insert("reason".into(), "stale --> \"gone\"".into());
        f.extra
            .insert("note".into(), "<!-- id=f_evil by=owner -->".into());
        let line = f.render();
        assert!(!line[..line.len() - 3].contains("-->"), "{line}");
        assert_eq!(line.matches("<!--").count(), 1, "{line}");
        assert_eq!(Fact::parse(&line, day("2027-01-01")).unwrap(), f);
    }

    #[test]
    fn hand_written_lines_are_facts_without_ids_and_other_lines_survive() {
        let text = "# Human\n\nSome intro a person wrote.\n\n- I have two cats\n- Old <!-- id=f_1 cat=identity by=owner first=2026-01-01 last=2026-01-01 -->\n\n```\n- not a fact\n```\n";
        let mut bf = BlockFile::parse(Block::Human, text, day("2026-11-29"));
        assert_eq!(bf.render(), text, "an untouched file renders byte for byte");
        let facts: Vec<_> = bf.facts().map(|f| f.text.clone()).collect();
        assert_eq!(facts, vec!["I have two cats", "Old"]);
        let mut mem = Memory::new(vec![bf.clone()]);
        let adopted = mem.adopt_hand_written();
        assert_eq!(adopted.len(), 1);
        bf = mem.blocks.remove(0);
        assert!(bf.render().contains("Some intro a person wrote."));
        assert!(bf.render().contains("- not a fact"));
    }

    #[test]
    fn a_comment_in_a_hand_written_line_is_kept_as_written() {
        let bf = BlockFile::parse(Block::Human, "- Another <!-- -->\n", day("2026-11-29"));
        let mut mem = Memory::new(vec![bf]);
        mem.adopt_hand_written();
        let line = mem.blocks[0].render();
        assert!(line.starts_with("- Another <!-- --> <!-- id=f_"), "{line}");
        let again = BlockFile::parse(Block::Human, &line, day("2026-11-29"));
        assert_eq!(again.facts().next().unwrap().text, "Another <!-- -->");
        assert_eq!(again.render(), line);
    }

    #[test]
    fn the_same_line_pasted_many_times_gets_ids_in_linear_time() {
        let text: String = (0..20_000).map(|_| "- Water the plants.\n").collect();
        let mut mem = Memory::new(vec![BlockFile::parse(
            Block::Human,
            &text,
            day("2026-11-29"),
        )]);
        let ids = mem.adopt_hand_written();
        assert_eq!(ids.len(), 20_000);
        let unique: HashSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), 20_000);
        assert_eq!(ids[2], format!("{}-3", ids[0]));
    }

    #[test]
    fn duplicate_ids_keep_the_first_drop_copies_and_re_id_the_rest() {
        let line = |t: &str| {
            format!("- {t} <!-- id=f_1 cat=identity by=auto first=2026-01-01 last=2026-01-01 -->\n")
        };
        let text = format!(
            "{}{}{}",
            line("I live in Lisbon."),
            line("I live in Lisbon."),
            line("I live in Porto.")
        );
        let mut mem = Memory::new(vec![BlockFile::parse(
            Block::Human,
            &text,
            day("2026-11-29"),
        )]);
        let lines = mem.resolve_duplicate_ids();
        assert_eq!(lines.len(), 2, "{lines:?}");
        let facts: Vec<&Fact> = mem.blocks[0].facts().collect();
        assert_eq!(facts.len(), 2);
        assert_eq!(facts[0].id, "f_1");
        assert_ne!(facts[1].id, "f_1");
        assert_eq!(facts[1].origin, Origin::Owner);
        assert!(mem.resolve_duplicate_ids().is_empty());
    }

    #[test]
    fn merge_conflict_markers_are_found() {
        assert_eq!(conflict_marker("# Human\n- a\n"), None);
        let t = "# Human\n<<<<<<< HEAD\n- a\n=======\n- b\n>>>>>>> other\n";
        assert_eq!(conflict_marker(t).unwrap().0, 2);
    }

    #[test]
    fn archived_entries_round_trip() {
        let a = Archived {
            fact: fact(),
            block: Block::Human,
            archived: day("2026-11-29"),
            why: "forgotten".into(),
            reason: "last seen 70 days ago".into(),
            policy: "stale_after_days=60".into(),
        };
        assert_eq!(Archived::parse(&a.render()).unwrap(), a);
    }
}
