//! The recall quiz: proof, after every cycle, that memory still answers what it held.
//!
//! `dream verify` re-audits each mutation against its own rules, but a merge that drops a
//! name, a dedupe that keeps the vaguer twin, or a forget pass that archives a fact an
//! agent still asks for all pass those rules. The quiz asks memory instead: for each fact
//! the cycle kept or changed, and for a standing sample of protected and most-used facts,
//! a cloze question (the fact's other words as the question, one hidden name, number,
//! date or specific word as the answer), asked through the read path an agent uses and
//! scored by token overlap against what came back, so confident nonsense cannot pass: the
//! hidden word has to be in the returned text. For each fact the cycle forgot, the right
//! answer is that it is not recalled.
//!
//! Everything here is pure: which questions to ask ([`select`]), how a question is made
//! ([`cloze`]), how an answer is scored ([`score`], [`judge`]), and the summary the report,
//! the commit trailer, `dream log` and `dream status` show ([`Summary`]). Asking (recall,
//! the context, a model) is the caller's.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::schema::{Archived, Block, Fact, Memory};
use crate::text::measures::{self, EntityKind};

/// What the cloze blank stands in for.
pub const BLANK: &str = "____";

/// A returned text that holds the hidden answer and is at least this similar (S6
/// similarity) to a forgotten fact still recalls it: a fact elsewhere that merely shares
/// the word does not.
pub const RESTATED: f64 = 0.5;

/// What a hidden answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerKind {
    Date,
    Number,
    Name,
    /// A URL, path, e-mail address or identifier.
    Identifier,
    /// The fact's most specific content word (its longest), when it holds no entity.
    Word,
}

/// What the right answer to a question is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    /// Memory must return the hidden answer.
    Recalled,
    /// The fact was forgotten: memory must not return it.
    NotRecalled,
}

/// One question about one fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// The fact asked about (as it was before the cycle, for a changed or removed fact).
    pub fact: String,
    pub block: Block,
    /// The fact's own wording: what the question was made from.
    pub text: String,
    /// The cloze: `text` with the answer replaced by [`BLANK`].
    pub prompt: String,
    /// The hidden answer.
    pub answer: String,
    pub kind: AnswerKind,
    pub expect: Expect,
    /// Why it is asked: `added`, `changed`, `reinforced`, `merged`, `protected`, `used`...
    pub why: String,
    /// The mutation that touched the fact this cycle, in words (empty for a standing
    /// question about a fact the cycle left alone).
    pub mutation: String,
}

impl Question {
    /// The question as a recall query: its other words (the prompt without the blank).
    pub fn query(&self) -> String {
        self.prompt
            .replace(BLANK, " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// One asking of a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// `recall` (the MCP tool's ranking), `model` (a model answering from `dream context`).
    pub via: String,
    /// What was asked: the cloze's other words, or the fact's own wording on a second try.
    pub query: String,
    /// The share of the answer's tokens the returned text holds (see [`score`]).
    pub score: f64,
    /// The fact whose returned line held the answer, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit: Option<String>,
    /// A model's answer, or why the model could not answer.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// A question with its attempts and verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub question: Question,
    pub attempts: Vec<Attempt>,
    pub passed: bool,
}

impl Outcome {
    /// Whether it took a second attempt (a re-ask in the fact's own wording).
    pub fn second_attempt(&self) -> bool {
        self.attempts.len() > 1
    }

    /// One line naming the fact, what was asked, what was expected and the mutation.
    pub fn line(&self) -> String {
        let q = &self.question;
        let verdict = match (q.expect, self.passed) {
            (Expect::Recalled, true) if self.second_attempt() => "answered on a second attempt",
            (Expect::Recalled, true) => "answered",
            (Expect::Recalled, false) => "not answered",
            (Expect::NotRecalled, true) => "forgotten and not recalled",
            (Expect::NotRecalled, false) => "forgotten but still recalled",
        };
        let touched = if q.mutation.is_empty() {
            String::new()
        } else {
            format!("; touched by {}", q.mutation)
        };
        format!(
            "{} {verdict}: {:?} -> {:?} ({}, {}{touched})",
            q.fact,
            crate::schema::one_line(&q.prompt),
            q.answer,
            q.why,
            kind_word(q.kind)
        )
    }
}

fn kind_word(k: AnswerKind) -> &'static str {
    match k {
        AnswerKind::Date => "a date",
        AnswerKind::Number => "a number",
        AnswerKind::Name => "a name",
        AnswerKind::Identifier => "an identifier",
        AnswerKind::Word => "a specific word",
    }
}

/// The tokens an answer is scored by: its normalized, stemmed tokens without stopwords
/// (all its tokens when it is nothing but stopwords).
fn answer_tokens(answer: &str) -> BTreeSet<String> {
    let content = measures::content_tokens(answer);
    if !content.is_empty() {
        return content;
    }
    measures::tokens(answer)
        .iter()
        .map(|t| measures::stem_token(t))
        .collect()
}

/// The share of the answer's tokens that `returned` holds, in `[0, 1]` (0 for an empty
/// answer): token overlap, as the S6 measures normalize and stem.
pub fn score(answer: &str, returned: &str) -> f64 {
    let want = answer_tokens(answer);
    if want.is_empty() {
        return 0.0;
    }
    let have = measures::vocabulary([returned]);
    let found = want.iter().filter(|t| have.contains(t.as_str())).count();
    measures::round3(found as f64 / want.len() as f64)
}

/// Whether a returned line answers a question: it holds every token of the hidden answer.
/// For a forgotten fact it must also restate the fact ([`RESTATED`]) to count as recalling
/// it; a line on another subject that shares the word does not.
pub fn holds(q: &Question, line: &str) -> bool {
    if score(&q.answer, line) < 1.0 {
        return false;
    }
    match q.expect {
        Expect::Recalled => true,
        Expect::NotRecalled => measures::similarity(&q.text, line) >= RESTATED,
    }
}

/// The verdict of one attempt: the index of the first returned line that holds the answer
/// and the attempt's score (the best line's share of the answer's tokens).
pub fn judge(q: &Question, lines: &[&str]) -> (Option<usize>, f64) {
    let hit = lines.iter().position(|l| holds(q, l));
    let best = lines
        .iter()
        .map(|l| score(&q.answer, l))
        .fold(0.0_f64, f64::max);
    (hit, best)
}

/// Whether an attempt passed: for a fact that must be recalled, a line held the answer; for
/// a forgotten one, none did.
pub fn passes(expect: Expect, hit: bool) -> bool {
    match expect {
        Expect::Recalled => hit,
        Expect::NotRecalled => !hit,
    }
}

fn is_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split(['-', '/', '.']).collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// A cloze question from a fact's text: the hidden answer and the text with it blanked.
/// The answer is, in order of preference, a date or number, a name, an identifier (URL,
/// path, e-mail, code identifier), else the longest content word of at least four letters.
/// `None` for a text with nothing specific to hide.
pub fn cloze(text: &str) -> Option<(String, String, AnswerKind)> {
    // An episode's leading date label ("4 November 2026: ...", "8 May 2023, Caroline: ...")
    // says when it was said and by whom, not what (a reinforced episode's label moves to
    // its newer day): it is left as it is, and the answer is hidden in the rest.
    let skip = LEAD_DATE.find(text).map_or(0, |m| m.end());
    let (label, body) = text.split_at(skip);
    if let Some(m) = WRITTEN_DATE.find(body) {
        // A written date is one answer, not a day number.
        let prompt = format!("{label}{}{BLANK}{}", &body[..m.start()], &body[m.end()..]);
        return Some((prompt, m.as_str().to_string(), AnswerKind::Date));
    }
    let (prompt, answer, kind) = cloze_body(body)?;
    Some((format!("{label}{prompt}"), answer, kind))
}

const MONTHS: &str =
    "January|February|March|April|May|June|July|August|September|October|November|December";

static LEAD_DATE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(&format!(
        r"^\s*(?:\d{{1,2}} (?:{MONTHS}) \d{{4}}|(?:{MONTHS}) \d{{1,2}}, \d{{4}}|\d{{4}}-\d{{2}}-\d{{2}})(?:, [^:]{{1,60}})?:\s+"
    ))
    .expect("a valid pattern")
});

static WRITTEN_DATE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(&format!(
        r"\b(?:\d{{1,2}} (?:{MONTHS})(?: \d{{4}})?|(?:{MONTHS}) \d{{1,2}}(?:st|nd|rd|th)?(?:, \d{{4}})?)\b"
    ))
    .expect("a valid pattern")
});

fn cloze_body(text: &str) -> Option<(String, String, AnswerKind)> {
    let ents = measures::entities(text);
    let rank = |k: EntityKind| match k {
        EntityKind::Number => 0,
        EntityKind::ProperNoun => 1,
        _ => 2,
    };
    let mut best: Option<(usize, usize, &measures::Entity)> = None;
    for e in &ents {
        let Some(at) = text.find(e.text.as_str()) else {
            continue;
        };
        if e.text.trim().is_empty() {
            continue;
        }
        let key = (rank(e.kind), at);
        if best.is_none_or(|(r, a, _)| key < (r, a)) {
            best = Some((key.0, key.1, e));
        }
    }
    if let Some((_, at, e)) = best {
        let kind = match e.kind {
            EntityKind::Number if is_date(&e.text) => AnswerKind::Date,
            EntityKind::Number => AnswerKind::Number,
            EntityKind::ProperNoun => AnswerKind::Name,
            _ => AnswerKind::Identifier,
        };
        let prompt = format!("{}{BLANK}{}", &text[..at], &text[at + e.text.len()..]);
        return Some((prompt, e.text.clone(), kind));
    }
    // A specific word: the longest content word, the first of equals.
    let mut word: Option<(usize, &str)> = None;
    for (at, w) in text.split_word_bound_indices() {
        let letters = w.chars().filter(|c| c.is_alphabetic()).count();
        if letters < 4 || letters != w.chars().count() || measures::is_stopword(&w.to_lowercase()) {
            continue;
        }
        if word.is_none_or(|(_, best)| letters > best.chars().count()) {
            word = Some((at, w));
        }
    }
    let (at, w) = word?;
    let prompt = format!("{}{BLANK}{}", &text[..at], &text[at + w.len()..]);
    Some((prompt, w.to_string(), AnswerKind::Word))
}

/// Word boundaries of plain text: runs of alphanumeric characters with their byte offsets.
trait WordBounds {
    fn split_word_bound_indices(&self) -> Vec<(usize, &str)>;
}

impl WordBounds for str {
    fn split_word_bound_indices(&self) -> Vec<(usize, &str)> {
        let mut out = Vec::new();
        let mut start: Option<usize> = None;
        for (i, c) in self.char_indices() {
            match (c.is_alphanumeric(), start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    out.push((s, &self[s..i]));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            out.push((s, &self[s..]));
        }
        out
    }
}

/// A question about `fact`, or `None` when its text has nothing specific to hide.
pub fn question(
    fact: &Fact,
    block: Block,
    expect: Expect,
    why: &str,
    mutation: &str,
) -> Option<Question> {
    let (prompt, answer, kind) = cloze(&fact.text)?;
    Some(Question {
        fact: fact.id.clone(),
        block,
        text: fact.text.clone(),
        prompt,
        answer,
        kind,
        expect,
        why: why.into(),
        mutation: mutation.into(),
    })
}

/// What a cycle did to memory, as the quiz chooses from it.
pub struct Pool<'a> {
    /// Memory as the cycle found it (the last commit's, before hand edits).
    pub before: &'a Memory,
    /// Memory as the cycle leaves it.
    pub after: &'a Memory,
    /// What the cycle archived (this cycle's archive entries).
    pub archived: &'a [Archived],
    /// Facts the cycle reinforced (said again), by id.
    pub reinforced: &'a BTreeSet<String>,
    /// The mutation that touched each fact, in words, by id (pass mutations, hand edits).
    pub mutations: &'a BTreeMap<String, String>,
    /// Use counts by fact id (`recall` results and citations).
    pub uses: &'a BTreeMap<String, u64>,
    /// Facts whose protection forbids forgetting them (protected categories, owner facts).
    pub protected: &'a BTreeSet<String>,
    /// The most questions in all.
    pub max_questions: usize,
    /// Of those, at most this many for the standing sample of protected and most-used
    /// facts the cycle left alone.
    pub standing: usize,
}

/// Archive reasons that keep a fact's content in another fact: its words must still be
/// found.
fn folded(why: &str) -> bool {
    matches!(why, "merged" | "duplicate" | "dedupe" | "deduped")
}

/// Archive reasons for a fact the engine or a model let go on its own judgement.
fn let_go(why: &str) -> bool {
    matches!(why, "forgotten" | "expired")
}

/// The questions to ask after a cycle, at most `max_questions`, in this order:
///
/// 1. each fact the cycle removed: one merged or dropped as a duplicate must still be
///    answered (its words live on in the fact that took its place); one forgotten,
///    expired, superseded or undone must not be recalled, unless it was forgotten or
///    expired while in the standing sample (protected or most used): a fact still asked
///    for that was let go fails;
/// 2. each fact whose words changed, asked in its old words;
/// 3. each fact the cycle added (promoted, an episode), then each it reinforced;
/// 4. the standing sample: protected facts, then the most used, up to `standing`.
///
/// Within a group, facts go in id order; a fact is asked about once.
pub fn select(p: &Pool<'_>) -> Vec<Question> {
    let before: BTreeMap<&str, (Block, &Fact)> = p
        .before
        .facts()
        .filter(|(_, f)| !f.id.is_empty())
        .map(|(b, f)| (f.id.as_str(), (b, f)))
        .collect();
    let after: BTreeMap<&str, (Block, &Fact)> = p
        .after
        .facts()
        .filter(|(_, f)| !f.id.is_empty())
        .map(|(b, f)| (f.id.as_str(), (b, f)))
        .collect();
    let archived: BTreeMap<&str, &Archived> =
        p.archived.iter().map(|a| (a.fact.id.as_str(), a)).collect();
    let sample = standing_sample(&before, p);
    let mutation =
        |id: &str, fallback: String| -> String { p.mutations.get(id).cloned().unwrap_or(fallback) };

    let mut removed = Vec::new();
    let mut changed = Vec::new();
    for (id, (block, f)) in &before {
        match after.get(id) {
            None => {
                let (why, m) = match archived.get(id) {
                    Some(a) if a.policy.is_empty() => (a.why.clone(), a.why.clone()),
                    Some(a) => (a.why.clone(), format!("{} ({})", a.why, a.policy)),
                    None => (
                        "removed".to_string(),
                        "a hand edit that removed it".to_string(),
                    ),
                };
                let m = mutation(id, m);
                // A fact the engine or a model let go (forgotten, expired) while agents
                // still ask for it is a loss; one a person undid or a newer fact replaced
                // is meant to be gone.
                let expect = if folded(&why) || (let_go(&why) && sample.contains(id)) {
                    Expect::Recalled
                } else {
                    Expect::NotRecalled
                };
                let why = if expect == Expect::Recalled && !folded(&why) {
                    format!("{why}, but still asked for ({})", standing_why(id, p))
                } else {
                    why
                };
                removed.extend(question(f, *block, expect, &why, &m));
            }
            Some((_, now)) if now.text != f.text => {
                let m = mutation(id, "a change of its words".into());
                changed.extend(question(f, *block, Expect::Recalled, "changed", &m));
            }
            Some(_) => {}
        }
    }
    let mut added = Vec::new();
    let mut reinforced = Vec::new();
    for (id, (block, f)) in &after {
        if !before.contains_key(id) {
            let why = if *block == Block::Episodes {
                "episode added"
            } else {
                "added"
            };
            added.extend(question(
                f,
                *block,
                Expect::Recalled,
                why,
                &mutation(id, String::new()),
            ));
        } else if p.reinforced.contains(*id) && before[id].1.text == f.text {
            reinforced.extend(question(f, *block, Expect::Recalled, "reinforced", ""));
        }
    }
    let mut out: Vec<Question> = Vec::new();
    let mut asked: BTreeSet<String> = BTreeSet::new();
    let cycle: Vec<Question> = removed
        .into_iter()
        .chain(changed)
        .chain(added)
        .chain(reinforced)
        .collect();
    let room_for_cycle = p.max_questions.saturating_sub(p.standing.min(sample.len()));
    let mut rest = Vec::new();
    for q in cycle {
        if out.len() < room_for_cycle {
            if asked.insert(q.fact.clone()) {
                out.push(q);
            }
        } else {
            rest.push(q);
        }
    }
    let mut standing_asked = 0;
    for id in sample.order {
        if out.len() >= p.max_questions || standing_asked >= p.standing {
            break;
        }
        if asked.contains(&id) {
            continue;
        }
        let Some((block, f)) = after.get(id.as_str()) else {
            continue;
        };
        if let Some(q) = question(f, *block, Expect::Recalled, &standing_why(&id, p), "") {
            asked.insert(id.clone());
            out.push(q);
            standing_asked += 1;
        }
    }
    // Room the standing sample did not take goes back to the cycle's questions.
    for q in rest {
        if out.len() >= p.max_questions {
            break;
        }
        if asked.insert(q.fact.clone()) {
            out.push(q);
        }
    }
    out
}

fn standing_why(id: &str, p: &Pool<'_>) -> String {
    if p.protected.contains(id) {
        "protected".into()
    } else {
        format!("used {} times", p.uses.get(id).copied().unwrap_or(0))
    }
}

/// The standing sample: protected facts first, then the most used (at least once), as
/// memory stood before the cycle; `order` is the asking order, and membership is what makes
/// a forgotten fact "still asked for".
struct Sample {
    order: Vec<String>,
    set: BTreeSet<String>,
}

impl Sample {
    fn contains(&self, id: &str) -> bool {
        self.set.contains(id)
    }

    fn len(&self) -> usize {
        self.order.len()
    }
}

fn standing_sample(before: &BTreeMap<&str, (Block, &Fact)>, p: &Pool<'_>) -> Sample {
    let mut order: Vec<String> = before
        .keys()
        .filter(|id| p.protected.contains(**id))
        .map(|id| id.to_string())
        .collect();
    let mut used: Vec<(&str, u64)> = before
        .keys()
        .filter(|id| !p.protected.contains(**id))
        .filter_map(|id| p.uses.get(*id).filter(|n| **n > 0).map(|n| (*id, *n)))
        .collect();
    used.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    order.extend(used.into_iter().map(|(id, _)| id.to_string()));
    order.truncate(p.standing);
    let set = order.iter().cloned().collect();
    Sample { order, set }
}

/// The questions `dream quiz` asks of memory as it stands, at most `max`: the most recent
/// archive entries first (a quarter of `max`, at least one when there are any; a merged or
/// deduplicated fact must still be answered, a forgotten one must not be recalled unless it
/// is still asked for), then the standing sample (protected, then most used), then the
/// other active facts in id order.
pub fn of_store(
    memory: &Memory,
    archive: &[Archived],
    uses: &BTreeMap<String, u64>,
    protected: &BTreeSet<String>,
    max: usize,
) -> Vec<Question> {
    let active: BTreeSet<&str> = memory.facts().map(|(_, f)| f.id.as_str()).collect();
    let mut recent: Vec<&Archived> = archive
        .iter()
        .filter(|a| !a.fact.id.is_empty() && !active.contains(a.fact.id.as_str()))
        .collect();
    // The newest entry of each fact, newest first.
    recent.reverse();
    let mut seen = BTreeSet::new();
    recent.retain(|a| seen.insert(a.fact.id.clone()));
    recent.sort_by_key(|a| std::cmp::Reverse(a.archived));
    let removed_room = if recent.is_empty() {
        0
    } else {
        (max / 4).max(1)
    };
    recent.truncate(removed_room);
    let before_blocks: Vec<crate::schema::BlockFile> = {
        let mut blocks = memory.blocks.clone();
        for a in &recent {
            if let Some(bf) = blocks.iter_mut().find(|b| b.block == a.block) {
                bf.push(a.fact.clone());
            }
        }
        blocks
    };
    let before = Memory::new(before_blocks);
    let entries: Vec<Archived> = recent.iter().map(|a| (*a).clone()).collect();
    let none = BTreeMap::new();
    let pool = Pool {
        before: &before,
        after: memory,
        archived: &entries,
        reinforced: &BTreeSet::new(),
        mutations: &none,
        uses,
        protected,
        max_questions: max,
        standing: max.saturating_sub(removed_room).min(max / 2 + 1),
    };
    let mut out = select(&pool);
    let mut asked: BTreeSet<String> = out.iter().map(|q| q.fact.clone()).collect();
    for (block, f) in memory.facts() {
        if out.len() >= max {
            break;
        }
        if f.id.is_empty() || asked.contains(&f.id) {
            continue;
        }
        if let Some(q) = question(f, block, Expect::Recalled, "in memory", "") {
            asked.insert(f.id.clone());
            out.push(q);
        }
    }
    out
}

/// The quiz's score, as the report, the commit trailer, `dream log` and `dream status`
/// show it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Questions asked whose answer must be recalled.
    pub asked: usize,
    /// Of those, answered (on the first or a second attempt).
    pub answered: usize,
    /// Of the answered, on a second attempt (re-asked in the fact's own wording).
    pub second_attempts: usize,
    /// Questions about forgotten facts.
    pub forgotten: usize,
    /// Of those, not recalled (the right answer).
    pub not_recalled: usize,
    /// Who answered: `recall` offline, or the model's name.
    pub via: String,
}

impl Summary {
    pub fn of(outcomes: &[Outcome], via: &str) -> Summary {
        let mut s = Summary {
            via: via.into(),
            ..Summary::default()
        };
        for o in outcomes {
            match o.question.expect {
                Expect::Recalled => {
                    s.asked += 1;
                    if o.passed {
                        s.answered += 1;
                        if o.second_attempt() {
                            s.second_attempts += 1;
                        }
                    }
                }
                Expect::NotRecalled => {
                    s.forgotten += 1;
                    if o.passed {
                        s.not_recalled += 1;
                    }
                }
            }
        }
        s
    }

    /// Questions that failed.
    pub fn failed(&self) -> usize {
        // Saturating: a stored report edited by hand must not make `dream status` panic.
        self.asked.saturating_sub(self.answered) + self.forgotten.saturating_sub(self.not_recalled)
    }

    /// The share of questions answered rightly, `None` when none was asked.
    pub fn recall(&self) -> Option<f64> {
        let n = self.asked + self.forgotten;
        (n > 0).then(|| measures::round3((self.answered + self.not_recalled) as f64 / n as f64))
    }

    /// The `Dream-Quiz:` trailer's value (`key=value` words, as the other trailers).
    pub fn trailer(&self) -> String {
        format!(
            "asked={} answered={} second={} forgotten={} not_recalled={} via={}",
            self.asked,
            self.answered,
            self.second_attempts,
            self.forgotten,
            self.not_recalled,
            if self.via.is_empty() {
                "recall"
            } else {
                &self.via
            }
        )
    }

    /// Read a `Dream-Quiz:` trailer back.
    pub fn parse_trailer(value: &str) -> Option<Summary> {
        let mut s = Summary::default();
        let mut seen = 0;
        for word in value.split_whitespace() {
            let (k, v) = word.split_once('=')?;
            let n = || v.parse::<usize>().ok();
            match k {
                "asked" => s.asked = n()?,
                "answered" => s.answered = n()?,
                "second" => s.second_attempts = n()?,
                "forgotten" => s.forgotten = n()?,
                "not_recalled" => s.not_recalled = n()?,
                "via" => {
                    s.via = v.into();
                    continue;
                }
                _ => continue,
            }
            seen += 1;
        }
        (seen == 5 && s.answered <= s.asked && s.not_recalled <= s.forgotten).then_some(s)
    }

    /// One line for people.
    pub fn render(&self) -> String {
        let mut o = format!("{} of {} answered", self.answered, self.asked);
        if self.second_attempts > 0 {
            o.push_str(&format!(" ({} on a second attempt)", self.second_attempts));
        }
        o.push_str(&format!(
            ", {} of {} forgotten facts not recalled",
            self.not_recalled, self.forgotten
        ));
        if !self.via.is_empty() && self.via != "recall" {
            o.push_str(&format!(" (answered by {})", self.via));
        }
        o
    }
}

/// The quiz of one cycle (or one `dream quiz`), as the report holds it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Quiz {
    #[serde(flatten)]
    pub summary: Summary,
    /// Questions that failed, each naming its fact and the mutation that touched it.
    pub failures: Vec<Outcome>,
    /// Every question, passed or not (left out of the stored report; the state's `quiz`
    /// table keeps them).
    #[serde(default, skip_serializing)]
    pub outcomes: Vec<Outcome>,
    /// What the quiz cost.
    pub ms: u64,
}

impl Quiz {
    pub fn of(outcomes: Vec<Outcome>, via: &str, ms: u64) -> Quiz {
        Quiz {
            summary: Summary::of(&outcomes, via),
            failures: outcomes.iter().filter(|o| !o.passed).cloned().collect(),
            outcomes,
            ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::BlockFile;
    use chrono::NaiveDate;

    fn fact(id: &str, text: &str) -> Fact {
        let line = format!(
            "- {text} <!-- id={id} cat=knowledge by=auto first=2026-10-01 last=2026-10-01 ev=e_1 -->"
        );
        Fact::parse(&line, NaiveDate::MIN).unwrap()
    }

    fn memory(facts: &[(&str, &str)]) -> Memory {
        let lines: String = facts
            .iter()
            .map(|(id, t)| {
                format!(
                    "- {t} <!-- id={id} cat=knowledge by=auto first=2026-10-01 last=2026-10-01 ev=e_1 -->\n"
                )
            })
            .collect();
        let mut blocks = vec![BlockFile::parse(
            Block::Human,
            &format!("# human\n\n{lines}"),
            NaiveDate::MIN,
        )];
        for b in Block::ALL {
            if b != Block::Human {
                blocks.push(BlockFile::empty(b));
            }
        }
        Memory::new(blocks)
    }

    #[test]
    fn a_cloze_hides_a_date_or_number_first_then_a_name_then_a_specific_word() {
        let (p, a, k) = cloze("The release ships on 2026-11-04 from Lisbon.").unwrap();
        assert_eq!((a.as_str(), k), ("2026-11-04", AnswerKind::Date));
        assert_eq!(p, "The release ships on ____ from Lisbon.");
        let (p, a, k) = cloze("My daughter Mia plays 3 instruments.").unwrap();
        assert_eq!((a.as_str(), k), ("3", AnswerKind::Number), "{p}");
        let (p, a, k) = cloze("I live in Lisbon and work best in the morning.").unwrap();
        assert_eq!((a.as_str(), k), ("Lisbon", AnswerKind::Name));
        assert_eq!(p, "I live in ____ and work best in the morning.");
        let (p, a, k) = cloze("The office printer jams often.").unwrap();
        assert_eq!((a.as_str(), k), ("printer", AnswerKind::Word));
        assert_eq!(p, "The office ____ jams often.");
        assert_eq!(cloze("I am ok."), None, "nothing specific to hide");
        let (p, a, k) = cloze("4 November 2026: I am allergic to peanuts and shellfish.").unwrap();
        assert_eq!(
            (a.as_str(), k),
            ("shellfish", AnswerKind::Word),
            "the label stays: {p}"
        );
        assert!(p.starts_with("4 November 2026: I am allergic"), "{p}");
        let (p, a, _) = cloze("11 November 2023, John: Finding the right balance is key.").unwrap();
        assert_eq!(
            a, "Finding",
            "the label is left whole, the speaker too: {p}"
        );
        assert!(
            p.starts_with("11 November 2023, John: ____ the right balance"),
            "{p}"
        );
        let (p, a, k) = cloze("I will present the quarterly roadmap on December 3.").unwrap();
        assert_eq!((a.as_str(), k), ("December 3", AnswerKind::Date));
        assert_eq!(p, "I will present the quarterly roadmap on ____.");
        let (_, a, k) = cloze("Deploys go through deploy/run.sh on the build box.").unwrap();
        assert_eq!((a.as_str(), k), ("deploy/run.sh", AnswerKind::Identifier));
    }

    #[test]
    fn the_query_is_the_other_words() {
        let q = question(
            &fact("f_1", "I live in Lisbon now."),
            Block::Human,
            Expect::Recalled,
            "added",
            "",
        )
        .unwrap();
        assert_eq!(q.query(), "I live in now.");
        assert!(!q.query().contains("Lisbon"));
    }

    #[test]
    fn scoring_is_token_overlap_so_confident_nonsense_scores_nothing() {
        assert_eq!(
            score("Lisbon", "- I live in Lisbon and work best [f_1]"),
            1.0
        );
        assert_eq!(score("Lisbon", "I live in Porto, definitely."), 0.0);
        assert_eq!(score("2026-11-04", "ships on 2026-11-04"), 1.0);
        assert_eq!(
            score("2026-11-04", "ships on 2026-11-05"),
            0.667,
            "a near date is a miss"
        );
        assert_eq!(
            score("printers", "the printer jams"),
            1.0,
            "stemmed as S6 stems"
        );
        assert_eq!(score("", "anything"), 0.0);
    }

    #[test]
    fn a_forgotten_fact_counts_as_recalled_only_by_a_line_that_restates_it() {
        let q = question(
            &fact("f_p", "The office printer jams often."),
            Block::Scratch,
            Expect::NotRecalled,
            "forgotten",
            "forgotten (stale_after_days=60)",
        )
        .unwrap();
        let (hit, _) = judge(&q, &["I bought a printer for home."]);
        assert_eq!(
            hit, None,
            "another fact sharing the word does not recall it"
        );
        assert!(passes(q.expect, hit.is_some()));
        let (hit, best) = judge(&q, &["x", "The office printer jams often."]);
        assert_eq!((hit, best), (Some(1), 1.0));
        assert!(!passes(q.expect, hit.is_some()));
    }

    fn pool<'a>(
        before: &'a Memory,
        after: &'a Memory,
        archived: &'a [Archived],
        mutations: &'a BTreeMap<String, String>,
        uses: &'a BTreeMap<String, u64>,
        protected: &'a BTreeSet<String>,
        reinforced: &'a BTreeSet<String>,
    ) -> Pool<'a> {
        Pool {
            before,
            after,
            archived,
            reinforced,
            mutations,
            uses,
            protected,
            max_questions: 10,
            standing: 2,
        }
    }

    fn archived(f: &Fact, why: &str, policy: &str) -> Archived {
        Archived {
            fact: f.clone(),
            block: Block::Human,
            archived: NaiveDate::from_ymd_opt(2026, 11, 6).unwrap(),
            why: why.into(),
            reason: String::new(),
            policy: policy.into(),
        }
    }

    #[test]
    fn selection_asks_changed_removed_added_and_the_standing_sample_with_the_right_expectation() {
        let before = memory(&[
            ("f_air", "My stack is Airflow."),
            ("f_pg", "My stack includes Postgres."),
            ("f_printer", "The office printer jams often."),
            ("f_vpn", "The old VPN needs a restart every week."),
            ("f_tea", "I prefer green tea in the afternoon."),
            ("f_cat", "My cat is called Tom."),
        ]);
        let after = memory(&[
            ("f_air", "My stack includes Postgres."),
            ("f_tea", "I prefer green tea in the afternoon."),
            ("f_cat", "My cat is called Tom."),
            ("f_new", "The team meets on Tuesday."),
        ]);
        let arch = vec![
            archived(
                &fact("f_pg", "My stack includes Postgres."),
                "merged",
                "f_air",
            ),
            archived(
                &fact("f_printer", "The office printer jams often."),
                "forgotten",
                "stale_after_days=60",
            ),
            archived(
                &fact("f_vpn", "The old VPN needs a restart every week."),
                "forgotten",
                "stale_after_days=60",
            ),
        ];
        let mutations = BTreeMap::from([
            (
                "f_air".to_string(),
                "merge f_pg into f_air (merge pass)".to_string(),
            ),
            (
                "f_pg".to_string(),
                "merge f_pg into f_air (merge pass)".to_string(),
            ),
        ]);
        let uses = BTreeMap::from([("f_vpn".to_string(), 7), ("f_tea".to_string(), 2)]);
        let protected = BTreeSet::from(["f_cat".to_string()]);
        let reinforced = BTreeSet::new();
        let qs = select(&pool(
            &before,
            &after,
            &arch,
            &mutations,
            &uses,
            &protected,
            &reinforced,
        ));
        let by: BTreeMap<&str, &Question> = qs.iter().map(|q| (q.fact.as_str(), q)).collect();
        assert_eq!(by["f_air"].answer, "Airflow", "asked in its old words");
        assert_eq!(by["f_air"].mutation, "merge f_pg into f_air (merge pass)");
        assert_eq!(
            by["f_pg"].expect,
            Expect::Recalled,
            "a merged fact's words must survive"
        );
        assert_eq!(by["f_printer"].expect, Expect::NotRecalled);
        assert_eq!(by["f_printer"].mutation, "forgotten (stale_after_days=60)");
        assert_eq!(
            by["f_vpn"].expect,
            Expect::Recalled,
            "the most-used fact was forgotten while still asked for"
        );
        assert!(
            by["f_vpn"].why.contains("still asked for (used 7 times)"),
            "{}",
            by["f_vpn"].why
        );
        assert_eq!(by["f_new"].why, "added");
        assert_eq!(by["f_cat"].why, "protected", "the standing sample");
        assert!(
            !by.contains_key("f_tea"),
            "standing = 2: the protected fact and the most used"
        );
        // The bound holds, and the standing sample keeps its room.
        let mut p = pool(
            &before,
            &after,
            &arch,
            &mutations,
            &uses,
            &protected,
            &reinforced,
        );
        p.max_questions = 3;
        let qs = select(&p);
        assert_eq!(qs.len(), 3);
        assert_eq!(qs[1].fact, "f_cat", "the standing sample keeps its room");
    }

    #[test]
    fn the_summary_counts_and_its_trailer_parses_back() {
        let q = |id: &str, expect| Question {
            fact: id.into(),
            block: Block::Human,
            text: "t".into(),
            prompt: "p ____".into(),
            answer: "a".into(),
            kind: AnswerKind::Word,
            expect,
            why: "added".into(),
            mutation: String::new(),
        };
        let att = |n: usize| {
            vec![
                Attempt {
                    via: "recall".into(),
                    query: "p".into(),
                    score: 1.0,
                    hit: None,
                    note: String::new()
                };
                n
            ]
        };
        let outcomes = vec![
            Outcome {
                question: q("f_1", Expect::Recalled),
                attempts: att(1),
                passed: true,
            },
            Outcome {
                question: q("f_2", Expect::Recalled),
                attempts: att(2),
                passed: true,
            },
            Outcome {
                question: q("f_3", Expect::Recalled),
                attempts: att(2),
                passed: false,
            },
            Outcome {
                question: q("f_4", Expect::NotRecalled),
                attempts: att(1),
                passed: true,
            },
        ];
        let quiz = Quiz::of(outcomes, "recall", 3);
        let s = &quiz.summary;
        assert_eq!(
            (
                s.asked,
                s.answered,
                s.second_attempts,
                s.forgotten,
                s.not_recalled
            ),
            (3, 2, 1, 1, 1)
        );
        assert_eq!(s.failed(), 1);
        assert_eq!(s.recall(), Some(0.75));
        assert_eq!(quiz.failures.len(), 1);
        assert!(quiz.failures[0].line().starts_with("f_3 not answered"));
        assert_eq!(
            s.trailer(),
            "asked=3 answered=2 second=1 forgotten=1 not_recalled=1 via=recall"
        );
        assert_eq!(Summary::parse_trailer(&s.trailer()).as_ref(), Some(s));
        assert_eq!(
            Summary::parse_trailer("asked=1 answered=2 second=0 forgotten=0 not_recalled=0"),
            None
        );
        assert_eq!(Summary::parse_trailer("garbage"), None);
        assert_eq!(Summary::default().recall(), None);
    }
}
