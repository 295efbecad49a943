//! Gates of the maintenance passes (SPEC S4 step 9): pure functions that decide whether a
//! proposed mutation of durable memory may be applied.
//!
//! Every gate looks at two things: [`Before`], durable memory as the pass found it, and the
//! [`Ledger`], what earlier mutations of the same pass already consumed. So a refusal can
//! say which: "f_17 was already removed by an earlier mutation in this pass" is a different
//! reason from "f_99 does not exist". Each check records its measured value beside its
//! threshold ([`GateResult`]), and the first check that fails is the refusal, naming both.
//! The engine's own backstops go through the same gates. Nothing here does I/O or reads a
//! clock: the cycle's day comes in as an argument.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::NaiveDate;

use crate::schema::pass_contract::{Drop, Forget, Merge, Promote};
use crate::schema::settings::Retention;
use crate::schema::{one_line, Block, Fact, GateResult, Memory, Origin};
use crate::sources::secrets;
use crate::text::measures::{self, round3, EntityKind};

/// Two facts at least this similar (S6) are the same fact.
pub const DUPLICATE_SIMILARITY: f64 = 0.9;
/// The fact a duplicate is dropped for must hold at least this share of its content words.
pub const KEPT_COVERAGE: f64 = 0.8;
/// A merged text must keep at least this share of the merged facts' content words.
pub const MERGE_MIN_RETAINED: f64 = 0.8;
/// Longest merged text, in characters.
pub const MAX_TEXT_CHARS: usize = crate::selection::gates::MAX_TEXT_CHARS;
/// The blocks a fact may be promoted to.
pub const TARGET_BLOCKS: [Block; 3] = [Block::Persona, Block::Human, Block::Episodes];

/// Durable memory as a pass found it, before any mutation of its own.
#[derive(Debug, Clone, Default)]
pub struct Before {
    facts: BTreeMap<String, (Block, Fact)>,
    archived: BTreeSet<String>,
    /// Fact id -> the pending review card that proposes to supersede it.
    pinned: BTreeMap<String, String>,
    /// Episodes, which the passes leave to their own rules (see `episodes.rs`).
    episodes: BTreeSet<String>,
    /// Fact id -> the last day an agent used it (`recall`, a cited id).
    last_used: BTreeMap<String, NaiveDate>,
}

impl Before {
    pub fn new(
        memory: &Memory,
        archived: BTreeSet<String>,
        pinned: BTreeMap<String, String>,
    ) -> Before {
        Before {
            facts: memory
                .facts()
                .map(|(b, f)| (f.id.clone(), (b, f.clone())))
                .collect(),
            archived,
            pinned,
            last_used: BTreeMap::new(),
            episodes: BTreeSet::new(),
        }
    }

    /// The same, knowing which ids are episodes held aside from the passes.
    pub fn with_episodes(mut self, ids: BTreeSet<String>) -> Before {
        self.episodes = ids;
        self
    }

    /// The same memory, with the last day an agent used each fact.
    pub fn with_uses(mut self, last_used: BTreeMap<String, NaiveDate>) -> Before {
        self.last_used = last_used;
        self
    }

    /// The last day an agent used `id`, if one did.
    pub fn last_used(&self, id: &str) -> Option<NaiveDate> {
        self.last_used.get(id).copied()
    }

    pub fn get(&self, id: &str) -> Option<&(Block, Fact)> {
        self.facts.get(id)
    }

    pub fn len(&self) -> usize {
        self.facts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }

    pub fn facts(&self) -> impl Iterator<Item = (&Block, &Fact)> {
        self.facts.values().map(|(b, f)| (b, f))
    }
}

/// What earlier mutations of the same pass did.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    /// Id -> (verb, detail): `removed` (dropped as a duplicate of f_2), `changed`, `moved`...
    consumed: BTreeMap<String, (String, String)>,
    /// Survivor of a drop -> the fact dropped in its favour.
    survivors: BTreeMap<String, String>,
    /// Facts that left memory in this pass.
    removed: usize,
}

impl Ledger {
    /// Record that a mutation used `id`; `removed` when the fact left memory.
    pub fn consume(&mut self, id: &str, verb: &str, detail: String, removed: bool) {
        self.consumed
            .insert(id.to_string(), (verb.to_string(), detail));
        if removed {
            self.removed += 1;
        }
    }

    pub fn keep_survivor(&mut self, survivor: &str, dropped: &str) {
        self.survivors
            .entry(survivor.to_string())
            .or_insert_with(|| dropped.to_string());
    }

    pub fn is_consumed(&self, id: &str) -> bool {
        self.consumed.contains_key(id)
    }

    pub fn removed(&self) -> usize {
        self.removed
    }

    fn consumed_reason(&self, id: &str) -> Option<String> {
        self.consumed.get(id).map(|(verb, detail)| {
            format!("{id} was already {verb} by an earlier mutation in this pass ({detail})")
        })
    }
}

/// The gates' verdict on one proposed mutation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checked {
    pub gates: Vec<GateResult>,
    /// The first failed check, naming the measured value and the threshold.
    pub refused: Option<String>,
}

impl Checked {
    pub fn passed(&self) -> bool {
        self.refused.is_none()
    }

    fn refuse(&mut self, reason: String) {
        if self.refused.is_none() {
            self.refused = Some(reason);
        }
    }

    fn measure(
        &mut self,
        gate: &str,
        value: impl ToString,
        threshold: impl ToString,
        passed: bool,
    ) {
        self.gates
            .push(GateResult::new(gate, value, threshold.to_string(), passed));
    }

    /// Add a check made outside these gates (the loss guard): its measured value, and
    /// the refusal when it failed.
    pub fn add(&mut self, gate: GateResult, refusal: Option<String>) {
        self.gates.push(gate);
        if let Some(r) = refusal {
            self.refuse(r);
        }
    }

    /// A measured value by gate name, for commit lines.
    pub fn value(&self, gate: &str) -> Option<&str> {
        self.gates
            .iter()
            .find(|g| g.gate == gate)
            .map(|g| g.value.as_str())
    }

    fn reason_given(&mut self, reason: &str) {
        if reason.trim().is_empty() {
            self.refuse("no reason given: every mutation must say why".into());
        }
    }
}

/// The fact `id` as `role` of a mutation: it must be named, exist, be active, and not be
/// consumed by an earlier mutation of this pass.
fn active<'a>(
    before: &'a Before,
    ledger: &Ledger,
    role: &str,
    id: &str,
    c: &mut Checked,
) -> Option<&'a (Block, Fact)> {
    let id = id.trim();
    if id.is_empty() {
        c.refuse(format!("{role} is missing"));
        return None;
    }
    if let Some(reason) = ledger.consumed_reason(id) {
        c.refuse(reason);
        return None;
    }
    match before.facts.get(id) {
        Some(f) => Some(f),
        None if before.archived.contains(id) => {
            c.refuse(format!("{role} {id} is archived, not an active fact"));
            None
        }
        None if before.episodes.contains(id) => {
            c.refuse(format!(
                "{role} {id} is an episode: episodes are kept, moved and expired by their own rules (episodes.retention_days, episodes.max_facts), not by the passes"
            ));
            None
        }
        None => {
            c.refuse(format!("{role} {id} does not exist"));
            None
        }
    }
}

fn not_pinned(before: &Before, id: &str, c: &mut Checked) {
    if let Some(card) = before.pinned.get(id) {
        c.refuse(format!(
            "{id} is the subject of pending review card {card}, which proposes to supersede it; decide the card first"
        ));
    }
}

/// Dedupe: drop `itemId` as a duplicate of `duplicateOf`. Both active and unconsumed, not
/// the same fact, no chains (the fact kept is never itself dropped, and a fact kept for
/// an earlier drop is not dropped), similarity >= 0.9, the same polarity, the kept fact
/// holds the dropped one's words, the owner's words are not dropped for a machine's, and a
/// reason.
pub fn check_drop(p: &Drop, before: &Before, ledger: &Ledger) -> Checked {
    let mut c = Checked::default();
    let (item_id, kept_id) = (p.item_id.trim(), p.duplicate_of.trim());
    if !item_id.is_empty() && item_id == kept_id {
        c.refuse(format!(
            "itemId and duplicateOf are both {item_id}: a fact cannot be a duplicate of itself"
        ));
        return c;
    }
    let item = active(before, ledger, "itemId", item_id, &mut c);
    if item.is_some() {
        if let Some(first) = ledger.survivors.get(item_id) {
            c.refuse(format!(
                "{item_id} is kept as the survivor of an earlier drop in this pass ({first} was dropped as its duplicate); dropping it would make a chain"
            ));
        }
    }
    let kept = if let Some(reason) = ledger.consumed_reason(kept_id) {
        c.refuse(format!(
            "duplicateOf {reason}; a duplicate must point at a fact that stays (no chains)"
        ));
        None
    } else {
        active(before, ledger, "duplicateOf", kept_id, &mut c)
    };
    if let (Some((_, item)), Some((_, kept))) = (item, kept) {
        let sim = measures::similarity(&item.text, &kept.text);
        let ok = sim >= DUPLICATE_SIMILARITY;
        c.measure(
            "similarity",
            format!("{sim:.3}"),
            format!(">= {DUPLICATE_SIMILARITY}"),
            ok,
        );
        if !ok {
            c.refuse(format!(
                "similarity {sim:.3} of {item_id} and {kept_id} is below {DUPLICATE_SIMILARITY}: not the same fact"
            ));
        }
        let numbers = measures::numbers_agree(&item.text, &kept.text);
        c.measure(
            "numbers",
            if numbers { "the same" } else { "differ" },
            "the same",
            numbers,
        );
        if !numbers {
            c.refuse(format!(
                "{item_id} and {kept_id} state different numbers ({} vs {}): not the same fact",
                show_numbers(&item.text),
                show_numbers(&kept.text)
            ));
        }
        let same = measures::polarity_agrees(&item.text, &kept.text);
        c.measure(
            "polarity",
            if same { "agrees" } else { "differs" },
            "agrees",
            same,
        );
        if !same {
            c.refuse(format!(
                "{item_id} and {kept_id} disagree in polarity (one negates what the other states): not duplicates"
            ));
        }
        let cov = measures::coverage(&item.text, [kept.text.as_str()]);
        let ok = cov.value >= KEPT_COVERAGE;
        c.measure(
            "kept_coverage",
            format!("{:.3}", cov.value),
            format!(">= {KEPT_COVERAGE}"),
            ok,
        );
        if !ok {
            c.refuse(format!(
                "dropping {item_id} would lose words {kept_id} lacks: coverage {:.3} is below {KEPT_COVERAGE} (lost: {}); drop {kept_id} instead",
                cov.value,
                cov.missing.join(", ")
            ));
        }
        if item.origin == Origin::Owner && kept.origin != Origin::Owner {
            c.refuse(format!(
                "{item_id} was written by the owner and {kept_id} was not: a pass keeps the owner's words; drop {kept_id} instead"
            ));
        }
        not_pinned(before, item_id, &mut c);
    }
    c.reason_given(&p.reason);
    c
}

/// Merge: rewrite `intoId` as `mergedText` and archive `fromIds`. Every id active,
/// unconsumed and distinct, all in one block, none written by the owner; the merged text
/// traceable word for word to the merged facts (coverage 1.0), with no new proper noun or
/// other entity, the same polarity as each fact, keeping their names, numbers and most of
/// their words; and a reason.
pub fn check_merge(p: &Merge, before: &Before, ledger: &Ledger) -> Checked {
    let mut c = Checked::default();
    let into_id = p.into_id.trim();
    let mut parts: Vec<(&str, &(Block, Fact))> = Vec::new();
    if let Some(f) = active(before, ledger, "intoId", into_id, &mut c) {
        parts.push((into_id, f));
    }
    if p.from_ids.is_empty() {
        c.refuse("fromIds is empty: a merge needs at least one other fact".into());
    }
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for id in &p.from_ids {
        let id = id.trim();
        if id == into_id && !id.is_empty() {
            c.refuse(format!("{id} is both intoId and one of fromIds"));
            continue;
        }
        if !seen.insert(id) {
            c.refuse(format!("fromIds lists {id} twice"));
            continue;
        }
        if let Some(f) = active(before, ledger, "fromIds", id, &mut c) {
            parts.push((id, f));
        }
    }
    if let Some((first_id, (first_block, _))) = parts.first() {
        if let Some((id, (b, _))) = parts.iter().find(|(_, (b, _))| b != first_block) {
            c.refuse(format!(
                "cross-block merge: {first_id} is in {}, {id} is in {}; merge only facts of one block",
                first_block.as_str(),
                b.as_str()
            ));
        }
    }
    for (id, (_, f)) in &parts {
        if f.origin == Origin::Owner {
            c.refuse(format!(
                "{id} was written by the owner: a pass never rewrites the owner's words"
            ));
        }
        not_pinned(before, id, &mut c);
    }

    let text = one_line(p.merged_text.trim());
    let chars = text.chars().count();
    if chars == 0 {
        c.refuse("mergedText is empty".into());
    } else if chars > MAX_TEXT_CHARS {
        c.refuse(format!(
            "mergedText is {chars} characters, over the limit of {MAX_TEXT_CHARS}"
        ));
    }
    let sources: Vec<&str> = parts.iter().map(|(_, (_, f))| f.text.as_str()).collect();
    if chars > 0 && !sources.is_empty() {
        if let Some(name) = secrets::gate(&text) {
            c.refuse(format!("mergedText contains a secret ({name})"));
        }
        let new_names = new_proper_nouns(&text, &sources);
        c.measure(
            "names",
            format!("{} new", new_names.len()),
            "0 new",
            new_names.is_empty(),
        );
        if !new_names.is_empty() {
            c.refuse(format!(
                "mergedText has new proper noun {}: not a name in the merged facts",
                quoted(&new_names)
            ));
        }
        let invented: Vec<String> = measures::invented_entities(&text, &sources)
            .into_iter()
            .filter(|e| e.kind != EntityKind::ProperNoun)
            .map(|e| format!("{} {:?}", e.kind.as_str(), e.text))
            .collect();
        c.measure(
            "entities",
            format!("{} invented", invented.len()),
            "0 invented",
            invented.is_empty(),
        );
        if !invented.is_empty() {
            c.refuse(format!(
                "mergedText invents {} absent from the merged facts",
                invented.join(", ")
            ));
        }
        let cov = measures::coverage(&text, sources.iter().copied());
        let ok = cov.value >= 1.0;
        c.measure("coverage", format!("{:.3}", cov.value), ">= 1.0", ok);
        if !ok {
            c.refuse(format!(
                "mergedText coverage {:.3} is below 1.0 against the merged facts (untraceable: {})",
                cov.value,
                cov.missing.join(", ")
            ));
        }
        for (id, (_, f)) in &parts {
            if !measures::polarity_agrees(&text, &f.text) {
                c.refuse(format!(
                    "mergedText negates what {id} states (polarity differs)"
                ));
            }
        }
        let merged_vocab = measures::vocabulary([text.as_str()]);
        let lost: Vec<String> = sources
            .iter()
            .flat_map(|s| measures::entities(s))
            .filter(|e| !measures::entity_present(e, &[text.as_str()], &merged_vocab))
            .map(|e| format!("{} {:?}", e.kind.as_str(), e.text))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if !lost.is_empty() {
            c.refuse(format!(
                "mergedText loses {} of the merged facts",
                lost.join(", ")
            ));
        }
        let words: BTreeSet<String> = sources
            .iter()
            .flat_map(|s| measures::content_tokens(s))
            .collect();
        let kept_words = measures::content_tokens(&text);
        let retained = if words.is_empty() {
            1.0
        } else {
            words.intersection(&kept_words).count() as f64 / words.len() as f64
        };
        let ok = retained >= MERGE_MIN_RETAINED;
        c.measure(
            "retained",
            format!("{retained:.3}"),
            format!(">= {MERGE_MIN_RETAINED}"),
            ok,
        );
        if !ok {
            let missing: Vec<&String> = words.difference(&kept_words).collect();
            c.refuse(format!(
                "mergedText keeps {retained:.3} of the merged facts' words, below {MERGE_MIN_RETAINED} (lost: {})",
                missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    c.reason_given(&p.reason);
    c
}

/// Proper nouns of `text` that no source writes with the same capitals (a word capitalised
/// at a source's sentence start counts as written).
pub fn new_proper_nouns(text: &str, sources: &[&str]) -> Vec<String> {
    let written: BTreeSet<String> = sources
        .iter()
        .flat_map(|s| s.split_whitespace())
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_string())
        .collect();
    let base = |w: &str| w.split(['\'', '\u{2019}']).next().unwrap_or(w).to_string();
    let written_bases: BTreeSet<String> = written.iter().map(|w| base(w)).collect();
    measures::proper_nouns(text)
        .into_iter()
        .filter(|n| !written.contains(n) && !written_bases.contains(&base(n)))
        .collect()
}

fn show_numbers(text: &str) -> String {
    let n = measures::numbers(text);
    if n.is_empty() {
        "none".into()
    } else {
        n.into_iter().collect::<Vec<_>>().join(", ")
    }
}

fn quoted(items: &[String]) -> String {
    items
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Promote: move `itemId` to `toBlock`. Active and unconsumed, the target one of persona,
/// human or episodes and not the fact's own block, and a reason.
pub fn check_promote(p: &Promote, before: &Before, ledger: &Ledger) -> Checked {
    let mut c = Checked::default();
    let item_id = p.item_id.trim();
    let item = active(before, ledger, "itemId", item_id, &mut c);
    let target = Block::parse(p.to_block.trim().to_lowercase().as_str())
        .filter(|b| TARGET_BLOCKS.contains(b));
    c.measure(
        "target",
        if p.to_block.is_empty() {
            "(none)"
        } else {
            p.to_block.as_str()
        },
        "persona|human|episodes",
        target.is_some(),
    );
    match (target, item) {
        (None, _) => c.refuse(format!(
            "illegal target block {:?}: a fact may be promoted to persona, human or episodes",
            p.to_block
        )),
        (Some(t), Some((b, _))) if t == *b => {
            c.refuse(format!("{item_id} is already in {}", b.as_str()))
        }
        _ => {}
    }
    c.reason_given(&p.reason);
    c
}

/// Why a fact may never be forgotten, if it may not: a protected category, or written by
/// the owner.
pub fn protection(fact: &Fact, retention: &Retention) -> Option<String> {
    if retention.protected.iter().any(|p| p == &fact.category) {
        return Some(format!(
            "in protected category {} (retention.protected)",
            fact.category
        ));
    }
    if fact.origin == Origin::Owner {
        return Some("written by the owner (facts you wrote are never forgotten by a pass)".into());
    }
    None
}

/// Whole days from `last_seen` to `today`.
pub fn days_since(fact: &Fact, today: NaiveDate) -> i64 {
    (today - fact.last_seen).num_days()
}

/// Salience: block weight + protected bonus + recency, where recency falls linearly from 1
/// on the day a fact was last seen to 0 at `stale_after_days` and stays 0 after.
pub fn salience(block: Block, fact: &Fact, retention: &Retention, today: NaiveDate) -> f64 {
    let w = &retention.block_weights;
    let weight = match block {
        Block::Persona => w.persona,
        Block::Human => w.human,
        Block::Episodes => w.episodes,
        Block::Scratch => w.scratch,
    };
    let bonus = if protection(fact, retention).is_some() {
        retention.protected_bonus
    } else {
        0.0
    };
    let age = days_since(fact, today).max(0) as f64;
    let recency = (1.0 - age / f64::from(retention.stale_after_days.max(1))).max(0.0);
    round3(weight + bonus + recency)
}

/// The facts that may be forgotten for capacity, lowest salience first (older last-seen,
/// then id, break ties): active, unconsumed, unprotected and not pinned by a card.
pub fn capacity_order<'a>(
    before: &'a Before,
    ledger: &Ledger,
    retention: &Retention,
    today: NaiveDate,
) -> Vec<(&'a str, f64)> {
    let mut v = capacity_keys(before, ledger, retention, today);
    v.sort_by(capacity_cmp);
    v.into_iter().map(|(id, s, _)| (id, s)).collect()
}

type CapacityKey<'a> = (&'a str, f64, NaiveDate);

fn capacity_keys<'a>(
    before: &'a Before,
    ledger: &Ledger,
    retention: &Retention,
    today: NaiveDate,
) -> Vec<CapacityKey<'a>> {
    before
        .facts
        .iter()
        .filter(|(id, (_, f))| {
            !ledger.is_consumed(id)
                && protection(f, retention).is_none()
                && !before.pinned.contains_key(*id)
        })
        .map(|(id, (b, f))| (id.as_str(), salience(*b, f, retention, today), f.last_seen))
        .collect()
}

fn capacity_cmp(a: &CapacityKey<'_>, b: &CapacityKey<'_>) -> std::cmp::Ordering {
    a.1.total_cmp(&b.1).then(a.2.cmp(&b.2)).then(a.0.cmp(b.0))
}

/// Where `id` stands in [`capacity_order`] (0 = forgotten first) and how many facts the
/// order holds; `None` when it may not be forgotten for capacity. Linear: no sort.
fn capacity_rank(
    before: &Before,
    ledger: &Ledger,
    retention: &Retention,
    today: NaiveDate,
    id: &str,
) -> (Option<usize>, usize) {
    let keys = capacity_keys(before, ledger, retention, today);
    let Some(mine) = keys.iter().find(|k| k.0 == id) else {
        return (None, keys.len());
    };
    let rank = keys
        .iter()
        .filter(|k| capacity_cmp(k, mine) == std::cmp::Ordering::Less)
        .count();
    (Some(rank), keys.len())
}

/// Days since a fact was last of any use: the later of its last sighting (a restating
/// event) and its last use by an agent, and that day.
pub fn days_unused(
    fact: &Fact,
    last_used: Option<NaiveDate>,
    today: NaiveDate,
) -> (i64, NaiveDate) {
    let last = last_used.map_or(fact.last_seen, |u| u.max(fact.last_seen));
    ((today - last).num_days(), last)
}

/// The policy under which a fact was verified forgettable.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// `stale_after_days=60` or `max_active_facts=200`: what the archive records.
    pub policy: String,
    /// The figures, in a sentence.
    pub detail: String,
}

/// Forget: archive `itemId`. Active and unconsumed, not protected, not pinned by a card,
/// and it qualifies: last seen more than `stale_after_days` ago, or memory is over
/// `max_active_facts` and it is among the lowest-salience facts that bring it back under.
/// The policy returned is one the code verified, whatever the model claimed (the claimed
/// one when both hold).
pub fn check_forget(
    p: &Forget,
    before: &Before,
    ledger: &Ledger,
    retention: &Retention,
    today: NaiveDate,
) -> (Checked, Option<Verified>) {
    let mut c = Checked::default();
    let item_id = p.item_id.trim();
    let Some((block, fact)) = active(before, ledger, "itemId", item_id, &mut c) else {
        c.reason_given(&p.reason);
        return (c, None);
    };
    let why_protected = protection(fact, retention);
    c.measure(
        "protected",
        if why_protected.is_some() { "yes" } else { "no" },
        "no",
        why_protected.is_none(),
    );
    if let Some(why) = why_protected {
        c.refuse(format!("{item_id} is {why}; it is never forgotten"));
    }
    not_pinned(before, item_id, &mut c);

    let age = days_since(fact, today);
    let stale_after = i64::from(retention.stale_after_days);
    let stale = age > stale_after;
    c.measure("days_since_seen", age, format!("> {stale_after}"), stale);
    let active_now = before.len() - ledger.removed();
    let max = retention.max_active_facts;
    let over = active_now.saturating_sub(max);
    let (rank, eligible) = capacity_rank(before, ledger, retention, today, item_id);
    let sal = salience(*block, fact, retention, today);
    let lowest = rank.is_some_and(|r| r < over);
    c.measure("active_facts", active_now, format!("> {max}"), over > 0);
    c.measure(
        "salience",
        format!("{sal:.3}"),
        "among the lowest over capacity",
        lowest,
    );
    let as_stale = || Verified {
        policy: format!("stale_after_days={stale_after}"),
        detail: format!(
            "last seen {}, {age} days ago, over stale_after_days {stale_after}",
            fact.last_seen
        ),
    };
    let unused = retention.unused_after_days.map(|n| {
        let (idle, last) = days_unused(fact, before.last_used(item_id), today);
        (i64::from(n), idle, last)
    });
    let is_unused = unused.is_some_and(|(n, idle, _)| idle > n);
    if let Some((n, idle, _)) = unused {
        c.measure("days_unused", idle, format!("> {n}"), is_unused);
    }
    let as_unused = || {
        let (n, idle, last) = unused.expect("checked");
        Verified {
            policy: format!("unused_after_days={n}"),
            detail: format!(
                "neither used by an agent nor seen since {last}, {idle} days ago, over unused_after_days {n}"
            ),
        }
    };
    let as_capacity = || {
        Verified {
        policy: format!("max_active_facts={max}"),
        detail: format!("{active_now} active facts, {over} over max_active_facts {max}; salience {sal:.3} is among the {over} lowest"),
    }
    };
    // When several hold, the one claimed is recorded; otherwise the one that holds.
    let claims_capacity = p.policy.contains("capacity") || p.policy.contains("max_active");
    let claims_unused = p.policy.contains("unused");
    let verified = if lowest && (claims_capacity || !(stale || is_unused)) {
        Some(as_capacity())
    } else if is_unused && (claims_unused || !stale) {
        Some(as_unused())
    } else if stale {
        Some(as_stale())
    } else if lowest {
        Some(as_capacity())
    } else {
        let capacity = if over == 0 {
            format!("{active_now} active facts <= max_active_facts {max}")
        } else {
            let r = rank
                .map(|r| format!("rank {} of {eligible}", r + 1))
                .unwrap_or_else(|| "not eligible".into());
            format!("{active_now} active facts, {over} over max_active_facts {max}, but its salience {sal:.3} ({r}) is not among the {over} lowest")
        };
        let unused_text = match unused {
            Some((n, idle, _)) => format!(", unused for {idle} days (unused_after_days {n})"),
            None => String::new(),
        };
        c.refuse(format!(
            "{item_id} qualifies under no policy: last seen {age} days ago (stale_after_days {stale_after}){unused_text} and {capacity}"
        ));
        None
    };
    c.reason_given(&p.reason);
    let verified = if c.passed() { verified } else { None };
    (c, verified)
}

/// The most duplicate partners the engine lists per fact: enough to drop every copy of a
/// line pasted many times onto its first occurrence, without listing the n² pairs of n
/// copies (2,000 copies of a line made two million pairs and minutes of checks).
pub const MAX_PARTNERS: usize = 3;

/// Pairs of active facts the engine measures as duplicates: similarity >= 0.9, the same
/// polarity and the same numbers ("Hand note 17" and "Hand note 18" are two facts), each
/// pair once, most similar first; each fact keeps its [`MAX_PARTNERS`] most similar
/// partners (the earliest in file order on ties).
pub fn duplicate_pairs(memory: &Memory) -> Vec<(String, String, f64)> {
    let all: Vec<&Fact> = memory.facts().map(|(_, f)| f).collect();
    let mut pairs = Vec::new();
    // Copies first: facts with the same normalised text pair with the first of them
    // (similarity 1, the same polarity and numbers), so a line pasted n times costs n,
    // not n² comparisons; only the first of each text is compared with the others.
    let mut copies: HashMap<String, Vec<usize>> = HashMap::new();
    let mut order = Vec::new();
    for (i, f) in all.iter().enumerate() {
        let key = measures::normalize(&f.text);
        let entry = copies.entry(key.clone()).or_default();
        if entry.is_empty() {
            order.push(key);
        }
        entry.push(i);
    }
    let mut reps = Vec::new();
    for key in &order {
        let group = &copies[key];
        // The copy the engine keeps of any pair of them (see [`engine_direction`]).
        let keep = *group
            .iter()
            .max_by_key(|&&i| keep_rank(all[i]))
            .expect("a group has a member");
        for &i in group.iter().filter(|&&i| i != keep) {
            let (a, b) = (all[keep].id.clone(), all[i].id.clone());
            pairs.push(if a < b { (a, b, 1.0) } else { (b, a, 1.0) });
        }
        reps.push(keep);
    }
    reps.sort_unstable();
    // Facts that state different numbers are never duplicates: only facts with the same
    // numbers are compared (one group per set of numbers).
    let mut groups: BTreeMap<BTreeSet<String>, Vec<usize>> = BTreeMap::new();
    for &i in &reps {
        groups
            .entry(measures::numbers(&all[i].text))
            .or_default()
            .push(i);
    }
    for members in groups.values().filter(|m| m.len() > 1) {
        similar_pairs(&all, members, &mut pairs);
    }
    pairs.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
    pairs
}

/// The pairs at >= 0.9 among `members` (indexes into `all`), each member keeping its
/// [`MAX_PARTNERS`] best.
fn similar_pairs(all: &[&Fact], members: &[usize], pairs: &mut Vec<(String, String, f64)>) {
    // Each text tokenised once (a pair is compared by counts, then polarity).
    let facts: Vec<(&Fact, BTreeSet<String>, measures::Prepared)> = members
        .iter()
        .map(|&i| {
            let f = all[i];
            (
                f,
                measures::content_tokens(&f.text),
                measures::Prepared::new(&f.text),
            )
        })
        .collect();
    // Shared-token counts through an inverted index: only pairs that share a word are
    // ever looked at.
    let mut index: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (_, tokens, _)) in facts.iter().enumerate() {
        for t in tokens {
            index.entry(t.as_str()).or_default().push(i);
        }
    }
    // Each fact's best partners so far: (similarity, partner), best first.
    let mut best: Vec<Vec<(f64, usize)>> = vec![Vec::new(); facts.len()];
    let offer = |list: &mut Vec<(f64, usize)>, sim: f64, other: usize| {
        let at = list
            .iter()
            .position(|(s, o)| sim > *s || (sim == *s && other < *o))
            .unwrap_or(list.len());
        if at < MAX_PARTNERS {
            list.insert(at, (sim, other));
            list.truncate(MAX_PARTNERS);
        }
    };
    let mut shared = vec![0usize; facts.len()];
    for i in 0..facts.len() {
        let mut touched = Vec::new();
        for t in &facts[i].1 {
            for &j in &index[t.as_str()] {
                if j > i {
                    if shared[j] == 0 {
                        touched.push(j);
                    }
                    shared[j] += 1;
                }
            }
        }
        touched.sort_unstable();
        for j in touched {
            let smaller = facts[i].1.len().min(facts[j].1.len());
            let sim = round3(shared[j] as f64 / smaller as f64);
            shared[j] = 0;
            if sim >= DUPLICATE_SIMILARITY
                && measures::polarity_agrees_prepared(&facts[i].2, &facts[j].2)
            {
                offer(&mut best[i], sim, j);
                offer(&mut best[j], sim, i);
            }
        }
    }
    let mut seen = BTreeSet::new();
    for (i, list) in best.iter().enumerate() {
        for &(sim, j) in list {
            let (a, b) = (i.min(j), i.max(j));
            if seen.insert((a, b)) {
                pairs.push((facts[a].0.id.clone(), facts[b].0.id.clone(), sim));
            }
        }
    }
}

/// Which fact of a duplicate pair the engine keeps: the one that holds more of the other's
/// words, then the owner's, then the one with more support, then the older, then the
/// smaller id. Returns (drop, keep).
pub fn engine_direction<'a>(a: &'a Fact, b: &'a Fact) -> (&'a Fact, &'a Fact) {
    let a_by_b = measures::coverage(&a.text, [b.text.as_str()]).value;
    let b_by_a = measures::coverage(&b.text, [a.text.as_str()]).value;
    let key = |f: &Fact, covers_other: f64| ((covers_other * 1000.0).round() as i64, keep_rank(f));
    if key(a, b_by_a) >= key(b, a_by_b) {
        (b, a)
    } else {
        (a, b)
    }
}

/// Between two facts that hold each other's words equally, the one kept: the owner's,
/// then the one with more support, then the older, then the smaller id.
#[allow(clippy::type_complexity)]
fn keep_rank(
    f: &Fact,
) -> (
    bool,
    usize,
    std::cmp::Reverse<chrono::NaiveDate>,
    std::cmp::Reverse<String>,
) {
    (
        f.origin == Origin::Owner,
        f.support.len(),
        std::cmp::Reverse(f.first_seen),
        std::cmp::Reverse(f.id.clone()),
    )
}

/// The block the engine moves a scratch fact to, by category: identity, preferences and
/// commitments to human, events to episodes, facts about the assistant to persona.
pub fn engine_target(category: &str) -> Option<Block> {
    crate::schema::block_of_category(category)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::BlockFile;

    fn day(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    const TODAY: &str = "2026-11-29";

    fn fact(id: &str, text: &str, category: &str, last: &str) -> Fact {
        Fact::new(
            id.into(),
            text.into(),
            category.into(),
            Origin::Auto,
            vec![format!("ev_{id}")],
            day(last),
            day(last),
        )
    }

    fn memory(rows: &[(Block, Fact)]) -> Memory {
        let mut blocks: Vec<BlockFile> = Block::ALL.iter().map(|b| BlockFile::empty(*b)).collect();
        for (b, f) in rows {
            blocks
                .iter_mut()
                .find(|bf| bf.block == *b)
                .unwrap()
                .push(f.clone());
        }
        Memory::new(blocks)
    }

    /// A memory with duplicates, fragments, scratch facts and stale facts.
    fn seeded() -> Memory {
        memory(&[
            (
                Block::Human,
                fact(
                    "f_lis",
                    "I live in Lisbon and work best in the morning.",
                    "identity",
                    "2026-11-20",
                ),
            ),
            (
                Block::Human,
                fact(
                    "f_lis2",
                    "User lives in Lisbon and works best in the morning.",
                    "identity",
                    "2026-11-21",
                ),
            ),
            (
                Block::Human,
                fact(
                    "f_por",
                    "I live in Porto and work best in the morning.",
                    "knowledge",
                    "2026-11-21",
                ),
            ),
            (
                Block::Scratch,
                fact("f_air", "My stack is Airflow.", "project", "2026-11-25"),
            ),
            (
                Block::Scratch,
                fact(
                    "f_pg",
                    "My stack includes Postgres.",
                    "project",
                    "2026-11-25",
                ),
            ),
            (
                Block::Human,
                fact(
                    "f_kit",
                    "I cook dinner in the kitchen.",
                    "knowledge",
                    "2026-11-25",
                ),
            ),
            (
                Block::Scratch,
                fact(
                    "f_tea",
                    "I prefer green tea in the afternoon.",
                    "preferences",
                    "2026-11-25",
                ),
            ),
            (
                Block::Scratch,
                fact(
                    "f_old",
                    "The office printer jams on Mondays.",
                    "knowledge",
                    "2026-08-01",
                ),
            ),
            (
                Block::Human,
                fact("f_oldid", "My name is Ana Silva.", "identity", "2026-08-01"),
            ),
        ])
    }

    fn before() -> Before {
        let mut archived = BTreeSet::new();
        archived.insert("f_gone".to_string());
        Before::new(&seeded(), archived, BTreeMap::new())
    }

    fn drop(item: &str, of: &str) -> Drop {
        Drop {
            item_id: item.into(),
            duplicate_of: of.into(),
            reason: "same fact".into(),
        }
    }

    fn merge(into: &str, from: &[&str], text: &str) -> Merge {
        Merge {
            into_id: into.into(),
            from_ids: from.iter().map(|s| s.to_string()).collect(),
            merged_text: text.into(),
            reason: "fragments of one fact".into(),
        }
    }

    fn refusal(c: &Checked) -> String {
        c.refused.clone().unwrap_or_default()
    }

    fn assert_refused(c: &Checked, want: &str) {
        let got = refusal(c);
        assert!(
            got.contains(want),
            "want a refusal containing {want:?}, got {got:?}"
        );
    }

    fn retention(max: usize) -> Retention {
        Retention {
            max_active_facts: max,
            ..Retention::default()
        }
    }

    #[test]
    fn a_true_duplicate_passes_with_its_measures() {
        let c = check_drop(&drop("f_lis2", "f_lis"), &before(), &Ledger::default());
        assert!(c.passed(), "{c:?}");
        assert_eq!(c.value("similarity"), Some("1.000"));
        assert_eq!(
            c.value("kept_coverage"),
            Some("0.833"),
            "\"user\" is the one word f_lis lacks"
        );
    }

    #[test]
    fn dedupe_refuses_ghosts_self_pairs_chains_and_dissimilar_pairs_each_for_its_reason() {
        let b = before();
        let none = Ledger::default();
        assert_refused(
            &check_drop(&drop("f_99", "f_lis"), &b, &none),
            "itemId f_99 does not exist",
        );
        assert_refused(
            &check_drop(&drop("f_lis2", "f_98"), &b, &none),
            "duplicateOf f_98 does not exist",
        );
        assert_refused(
            &check_drop(&drop("f_gone", "f_lis"), &b, &none),
            "itemId f_gone is archived, not an active fact",
        );
        assert_refused(
            &check_drop(&drop("f_lis", "f_lis"), &b, &none),
            "a fact cannot be a duplicate of itself",
        );
        // Lisbon/Porto: similarity 0.8.
        assert_refused(
            &check_drop(&drop("f_por", "f_lis"), &b, &none),
            "similarity 0.800 of f_por and f_lis is below 0.9",
        );
        assert_refused(
            &check_drop(
                &Drop {
                    reason: " ".into(),
                    ..drop("f_lis2", "f_lis")
                },
                &b,
                &none,
            ),
            "no reason given",
        );

        // Chains: after f_lis2 -> f_lis, neither may f_lis be dropped nor may anything point at f_lis2.
        let mut ledger = Ledger::default();
        ledger.consume(
            "f_lis2",
            "removed",
            "dropped as a duplicate of f_lis".into(),
            true,
        );
        ledger.keep_survivor("f_lis", "f_lis2");
        assert_refused(
            &check_drop(&drop("f_lis2", "f_lis"), &b, &ledger),
            "f_lis2 was already removed by an earlier mutation in this pass (dropped as a duplicate of f_lis)",
        );
        let chain = check_drop(&drop("f_lis", "f_lis2"), &b, &ledger);
        assert_refused(
            &chain,
            "f_lis is kept as the survivor of an earlier drop in this pass",
        );
        assert_refused(&chain, "would make a chain");
        assert_refused(
            &check_drop(&drop("f_por", "f_lis2"), &b, &ledger),
            "duplicateOf f_lis2 was already removed",
        );
        let mut only_target = Ledger::default();
        only_target.consume(
            "f_lis",
            "removed",
            "dropped as a duplicate of f_x".into(),
            true,
        );
        assert_refused(
            &check_drop(&drop("f_lis2", "f_lis"), &b, &only_target),
            "duplicateOf f_lis was already removed by an earlier mutation in this pass (dropped as a duplicate of f_x); a duplicate must point at a fact that stays (no chains)",
        );
    }

    #[test]
    fn dedupe_keeps_the_more_complete_fact_and_the_owners_words() {
        let short = fact("f_s", "I live in Lisbon.", "identity", "2026-11-20");
        let long = fact(
            "f_l",
            "I live in Lisbon near the river with my cats.",
            "identity",
            "2026-11-20",
        );
        let mut owner = fact("f_o", "I live in Lisbon!", "identity", "2026-11-20");
        owner.origin = Origin::Owner;
        let m = memory(&[
            (Block::Human, short.clone()),
            (Block::Human, long.clone()),
            (Block::Human, owner),
        ]);
        let b = Before::new(&m, BTreeSet::new(), BTreeMap::new());
        let none = Ledger::default();
        assert_refused(
            &check_drop(&drop("f_l", "f_s"), &b, &none),
            "dropping f_l would lose words f_s lacks",
        );
        assert!(check_drop(&drop("f_s", "f_l"), &b, &none).passed());
        assert_refused(
            &check_drop(&drop("f_o", "f_s"), &b, &none),
            "f_o was written by the owner",
        );
        assert_eq!(
            engine_direction(&short, &long).0.id,
            "f_s",
            "the engine drops the less complete one"
        );
        assert_eq!(engine_direction(&long, &short).0.id, "f_s");
    }

    #[test]
    fn merge_refuses_invented_tokens_new_names_cross_block_and_consumed_items() {
        let b = before();
        let none = Ledger::default();
        let ok = check_merge(
            &merge(
                "f_air",
                &["f_pg"],
                "My stack includes Airflow and Postgres.",
            ),
            &b,
            &none,
        );
        assert!(ok.passed(), "{ok:?}");
        assert_eq!(ok.value("coverage"), Some("1.000"));

        assert_refused(
            &check_merge(
                &merge(
                    "f_air",
                    &["f_pg"],
                    "My stack includes Airflow and Postgres on Kubernetes clusters.",
                ),
                &b,
                &none,
            ),
            "mergedText has new proper noun \"Kubernetes\"",
        );
        assert_refused(
            &check_merge(
                &merge(
                    "f_air",
                    &["f_pg"],
                    "My data stack includes Airflow and Postgres.",
                ),
                &b,
                &none,
            ),
            "mergedText coverage 0.800 is below 1.0 against the merged facts (untraceable: data)",
        );
        // "kitchen" is in the facts, but only as a common noun: "the Kitchen" is a new name.
        let kitchen = memory(&[
            (
                Block::Human,
                fact(
                    "f_k1",
                    "I cook dinner in the kitchen.",
                    "knowledge",
                    "2026-11-25",
                ),
            ),
            (
                Block::Human,
                fact("f_k2", "Dinner is at seven.", "knowledge", "2026-11-25"),
            ),
        ]);
        let kb = Before::new(&kitchen, BTreeSet::new(), BTreeMap::new());
        assert_refused(
            &check_merge(
                &merge("f_k1", &["f_k2"], "I cook dinner at seven in the Kitchen."),
                &kb,
                &none,
            ),
            "mergedText has new proper noun \"Kitchen\"",
        );
        assert!(check_merge(
            &merge("f_k1", &["f_k2"], "I cook dinner at seven in the kitchen."),
            &kb,
            &none
        )
        .passed());

        assert_refused(
            &check_merge(
                &merge(
                    "f_air",
                    &["f_kit"],
                    "My stack is Airflow and I cook dinner in the kitchen.",
                ),
                &b,
                &none,
            ),
            "cross-block merge: f_air is in scratch, f_kit is in human",
        );
        assert_refused(
            &check_merge(
                &merge("f_air", &["f_99"], "My stack is Airflow."),
                &b,
                &none,
            ),
            "fromIds f_99 does not exist",
        );
        assert_refused(
            &check_merge(&merge("f_air", &[], "My stack is Airflow."), &b, &none),
            "fromIds is empty",
        );
        assert_refused(
            &check_merge(
                &merge("f_air", &["f_air"], "My stack is Airflow."),
                &b,
                &none,
            ),
            "f_air is both intoId and one of fromIds",
        );
        assert_refused(
            &check_merge(
                &merge("f_air", &["f_pg"], "My stack is Airflow."),
                &b,
                &none,
            ),
            "mergedText loses name \"Postgres\"",
        );

        let mut ledger = Ledger::default();
        ledger.consume("f_pg", "removed", "merged into f_x".into(), true);
        assert_refused(
            &check_merge(
                &merge(
                    "f_air",
                    &["f_pg"],
                    "My stack includes Airflow and Postgres.",
                ),
                &b,
                &ledger,
            ),
            "f_pg was already removed by an earlier mutation in this pass (merged into f_x)",
        );
    }

    #[test]
    fn promote_refuses_illegal_targets() {
        let b = before();
        let none = Ledger::default();
        let p = |item: &str, to: &str| Promote {
            item_id: item.into(),
            to_block: to.into(),
            reason: "placed".into(),
        };
        assert!(check_promote(&p("f_tea", "human"), &b, &none).passed());
        assert_refused(
            &check_promote(&p("f_tea", "kitchen"), &b, &none),
            "illegal target block \"kitchen\"",
        );
        assert_refused(
            &check_promote(&p("f_tea", "scratch"), &b, &none),
            "illegal target block \"scratch\"",
        );
        assert_refused(
            &check_promote(&p("f_lis", "human"), &b, &none),
            "f_lis is already in human",
        );
        let mut ledger = Ledger::default();
        ledger.consume("f_tea", "moved", "to human".into(), false);
        assert_refused(
            &check_promote(&p("f_tea", "episodes"), &b, &ledger),
            "f_tea was already moved by an earlier mutation in this pass (to human)",
        );
    }

    #[test]
    fn forget_refuses_protected_and_fresh_facts_and_records_the_verified_policy() {
        let b = before();
        let none = Ledger::default();
        let today = day(TODAY);
        let f = |item: &str, policy: &str| Forget {
            item_id: item.into(),
            reason: "no longer useful".into(),
            policy: policy.into(),
        };
        let r = retention(200);

        // Stale but protected: identity, last seen 120 days ago.
        let (c, v) = check_forget(&f("f_oldid", "stale"), &b, &none, &r, today);
        assert_refused(&c, "f_oldid is in protected category identity (retention.protected); it is never forgotten");
        assert!(v.is_none());

        // Fresh, under capacity.
        let (c, _) = check_forget(&f("f_air", "stale"), &b, &none, &r, today);
        assert_refused(&c, "f_air qualifies under no policy: last seen 4 days ago (stale_after_days 60) and 9 active facts <= max_active_facts 200");

        // Stale and unprotected: the policy is the verified one, whatever was claimed.
        let (c, v) = check_forget(&f("f_old", "capacity"), &b, &none, &r, today);
        assert!(c.passed(), "{c:?}");
        assert_eq!(v.unwrap().policy, "stale_after_days=60");

        // Over capacity, only the lowest-salience facts qualify.
        let tight = retention(8);
        let (c, v) = check_forget(&f("f_kit", "capacity"), &b, &none, &tight, today);
        assert_refused(&c, "is not among the 1 lowest");
        assert!(v.is_none());
        let lowest = capacity_order(&b, &none, &tight, today)[0].0.to_string();
        assert_eq!(
            lowest, "f_old",
            "the stale scratch fact has the lowest salience"
        );

        // A second mutation of an item consumed earlier in the pass.
        let mut ledger = Ledger::default();
        ledger.consume("f_old", "removed", "forgotten".into(), true);
        let (c, _) = check_forget(&f("f_old", "stale"), &b, &ledger, &r, today);
        assert_refused(
            &c,
            "f_old was already removed by an earlier mutation in this pass (forgotten)",
        );
    }

    #[test]
    fn unused_facts_qualify_only_under_their_own_policy_and_a_use_defers_it() {
        let today = day(TODAY);
        let none = Ledger::default();
        let f = Forget {
            item_id: "f_air".into(),
            reason: "never used".into(),
            policy: "unused".into(),
        };
        // Off by default: f_air (seen 4 days ago) qualifies under nothing.
        let (c, v) = check_forget(&f, &before(), &none, &retention(200), today);
        assert!(!c.passed() && v.is_none());
        // With unused_after_days = 3 it qualifies, and the policy recorded is its own.
        let mut r = retention(200);
        r.unused_after_days = Some(3);
        let (c, v) = check_forget(&f, &before(), &none, &r, today);
        assert!(c.passed(), "{c:?}");
        let v = v.unwrap();
        assert_eq!(v.policy, "unused_after_days=3");
        assert!(v.detail.contains("4 days ago"), "{}", v.detail);
        // An agent used it two days ago: not unused any more.
        let mut uses = BTreeMap::new();
        uses.insert("f_air".to_string(), today - chrono::Duration::days(2));
        let (c, v) = check_forget(&f, &before().with_uses(uses), &none, &r, today);
        assert!(v.is_none());
        assert_refused(&c, "unused for 2 days (unused_after_days 3)");
    }

    #[test]
    fn salience_is_block_weight_plus_protected_bonus_plus_recency() {
        let r = Retention::default();
        let today = day(TODAY);
        let fresh = fact("a", "x y z", "knowledge", TODAY);
        let half = fact("b", "x y z", "identity", "2026-10-30");
        let stale = fact("c", "x y z", "knowledge", "2026-01-01");
        assert_eq!(
            salience(Block::Scratch, &fresh, &r, today),
            r.block_weights.scratch + 1.0
        );
        assert_eq!(
            salience(Block::Human, &half, &r, today),
            r.block_weights.human + r.protected_bonus + 0.5
        );
        assert_eq!(
            salience(Block::Episodes, &stale, &r, today),
            r.block_weights.episodes
        );
    }

    /// The policy changes the outcome measurably: the same memory under two capacities
    /// forgets different numbers of facts, and never a protected one.
    #[test]
    fn capacity_decides_how_many_facts_are_forgotten_and_never_a_protected_one() {
        let today = day(TODAY);
        let m = seeded();
        let forget_all = |max: usize| -> Vec<String> {
            let r = retention(max);
            let b = Before::new(&m, BTreeSet::new(), BTreeMap::new());
            let mut ledger = Ledger::default();
            let mut gone = Vec::new();
            loop {
                let order = capacity_order(&b, &ledger, &r, today);
                let Some((id, _)) = order.first() else { break };
                let p = Forget {
                    item_id: id.to_string(),
                    reason: "over capacity".into(),
                    policy: "capacity".into(),
                };
                let (c, v) = check_forget(&p, &b, &ledger, &r, today);
                if !c.passed() {
                    break;
                }
                assert!(v.is_some(), "an accepted forget names its verified policy");
                ledger.consume(id, "removed", "forgotten".into(), true);
                gone.push(id.to_string());
            }
            gone
        };
        let loose = forget_all(7);
        let tight = forget_all(3);
        assert_eq!(loose.len(), 2, "{loose:?}");
        assert!(tight.len() > loose.len(), "{tight:?} vs {loose:?}");
        let protected: Vec<&str> = m
            .facts()
            .filter(|(_, f)| Retention::default().protected.contains(&f.category))
            .map(|(_, f)| f.id.as_str())
            .collect();
        for id in tight.iter().chain(&loose) {
            assert!(!protected.contains(&id.as_str()), "{id} is protected");
        }
        assert_eq!(
            tight.len(),
            9 - protected.len(),
            "every unprotected fact goes under a capacity of 3"
        );
    }

    #[test]
    fn the_engine_finds_duplicate_pairs_but_not_negations_or_other_cities() {
        let m = memory(&[
            (
                Block::Human,
                fact(
                    "a",
                    "I live in Lisbon and work best in the morning.",
                    "identity",
                    TODAY,
                ),
            ),
            (
                Block::Human,
                fact(
                    "b",
                    "User lives in Lisbon and works best in the morning.",
                    "identity",
                    TODAY,
                ),
            ),
            (
                Block::Human,
                fact(
                    "c",
                    "I live in Porto and work best in the morning.",
                    "identity",
                    TODAY,
                ),
            ),
            (
                Block::Human,
                fact(
                    "d",
                    "I don't live in Lisbon and work best in the morning.",
                    "identity",
                    TODAY,
                ),
            ),
        ]);
        let pairs = duplicate_pairs(&m);
        assert_eq!(pairs, vec![("a".to_string(), "b".to_string(), 1.0)]);
        assert_eq!(engine_target("preferences"), Some(Block::Human));
        assert_eq!(engine_target("event"), Some(Block::Episodes));
        assert_eq!(engine_target("knowledge"), None);
    }
}
