//! The offline provider `none` (SPEC S7): an extractive reflector and a similarity judge
//! that need no network and give the same answer every time.
//!
//! The reflector never writes a word of its own: every candidate is one sentence the owner
//! wrote, taken verbatim from a supporting event (without its lead-in, and named by its
//! speaker when the speaker is someone other than "user"), so it is traceable by
//! construction (the agent's, a tool's or a web page's restatements may add support, never
//! the sentence). It proposes a sentence its speaker restates (another sentence of theirs
//! holds most of its content words: [`restates`]), and a sentence said once when it is
//! specific (a name, a number, a date; a fact about the speaker, a preference, a plan:
//! [`crate::text::phrases::specific`]); the cycle keeps the latter as an episode until it
//! is said again. It never proposes questions, requests, greetings, thinking aloud,
//! reactions or a thing's passing status ([`crate::text::phrases::chatter`]), nor a sentence
//! whose object is a bare pronoun ([`leans_on_its_object`]: it cannot quote what "it"
//! stands for, which a model can), however often they repeat: repetition alone is not durability. Category and block come from the
//! transparent phrase rules in [`classify`]. The judge flags duplicates by S6 similarity and, as a
//! conservative offline stand-in for a model, possible contradictions between same-subject
//! facts whose polarity, names or numbers differ; anything else is "no contradiction found".

use std::collections::{BTreeSet, HashSet};

use super::{
    EventView, JudgeReply, JudgeRequest, Llm, LlmError, Proposal, ReflectReply, ReflectRequest,
    Reply, Verdict,
};
use crate::schema::classify;
use crate::schema::settings::Config;
use crate::text::measures::{self, Entity};
use crate::text::phrases::{
    about_speaker, lead_in, leans_on_its_object, not_a_fact, sentences, specific,
    worth_keeping_once,
};

/// A sentence supports a candidate when it holds at least this share of the candidate's
/// content words (and agrees in polarity and names every entity of the candidate).
pub const SUPPORT_SIMILARITY: f64 = 0.6;
/// Two facts this similar are about the same subject (for possible contradictions).
pub const SAME_SUBJECT_SIMILARITY: f64 = 0.6;
/// The most sentences of one event the reflector proposes from: the first this many that
/// could be facts. The rest of a long event (a pasted document, a log) still restates and
/// supports; a person's statements are not hundreds to one message, and every sentence
/// proposed is compared with every other candidate of its cluster.
pub const MAX_PROPOSED_PER_EVENT: usize = 32;
/// The most sentences of one event a proposed sentence is compared with, rarest shared
/// words first ([`restated_in`]): what bounds the work of a long event whose sentences
/// all share a few words. A restatement not found among them is not counted.
pub const MAX_COMPARED_PER_EVENT: usize = 256;

#[cfg(test)]
thread_local! {
    /// Work done by this thread's reflector: sentences compared, bytes searched, names
    /// counted. A test holds it to the size of the input (never a clock).
    static WORK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Count `n` steps of work (in tests only).
fn work(n: usize) {
    #[cfg(test)]
    WORK.with(|w| w.set(w.get() + n as u64));
    #[cfg(not(test))]
    let _ = n;
}

pub struct Offline {
    min_points: usize,
    duplicate_similarity: f64,
    /// Propose what was said once (when `episodes.enabled`).
    singles: bool,
}

impl Offline {
    pub fn new(config: &Config) -> Offline {
        Offline {
            min_points: config.cluster.min_points,
            duplicate_similarity: config.promote.reinforce_similarity,
            singles: config.episodes.enabled,
        }
    }
}

/// An event's sentences, each tokenised once.
struct Sentence {
    text: String,
    /// Taken whole: no lead-in was left out ("My sister..." over "[Again,] my sister...").
    whole: bool,
    /// It names a day relative to when it was said ("today", "last week").
    relative: bool,
    tokens: BTreeSet<String>,
    prepared: measures::Prepared,
}

struct Analysed<'a> {
    event: &'a EventView,
    sentences: Vec<Sentence>,
    /// Every stemmed token of the event, for entity checks.
    vocab: measures::Vocabulary,
    /// Its words as written, and the names among them ([`names_of`]), found once.
    words: HashSet<String>,
    names: BTreeSet<String>,
    /// Which sentences hold each content word: a sentence's restatements are looked up,
    /// not searched for ([`restated_in`]).
    index: std::collections::HashMap<String, Vec<usize>>,
}

fn analyse(e: &EventView) -> Analysed<'_> {
    let sentences: Vec<Sentence> = sentences(&e.text)
        .into_iter()
        .map(|text| {
            // Verbatim: the sentence as written, without its lead-in, letter case and all
            // (`yesPool`, `https://...` and `components/...` stay as they are).
            let kept = lead_in(&text);
            let whole = kept.len() == text.trim().len();
            let text = kept.to_string();
            let prepared = measures::Prepared::new(&text);
            Sentence {
                whole,
                relative: !crate::text::when::relatives(
                    &text,
                    chrono::NaiveDate::from_ymd_opt(2001, 1, 10).unwrap_or_default(),
                )
                .is_empty(),
                tokens: prepared.content.clone(),
                prepared,
                text,
            }
        })
        .collect();
    let (words, names) = names_of(&e.text);
    let mut index: std::collections::HashMap<String, Vec<usize>> = Default::default();
    for (i, s) in sentences.iter().enumerate() {
        for t in &s.tokens {
            index.entry(t.clone()).or_default().push(i);
        }
    }
    Analysed {
        event: e,
        sentences,
        vocab: measures::vocabulary([e.text.as_str()]),
        words,
        names,
        index,
    }
}

/// Whether event `a` restates the sentence `unit` (whose entities are `entities`, found in
/// `a`'s text or not as `found` says).
fn supports(
    a: &Analysed<'_>,
    unit: &Sentence,
    day: chrono::NaiveDate,
    entities: &[Entity],
    (finder, found): (&measures::EntityFinder, &measures::Found),
) -> bool {
    // "Today" said on another day names another day: statements said on different days
    // are different happenings unless their words say otherwise.
    if unit.relative && a.event.ts.date_naive() != day {
        return false;
    }
    restated_in(a, unit)
        && entities.iter().all(|en| {
            work(1);
            finder.present(en, found, &a.vocab)
        })
}

/// Whether a sentence of event `a` restates `unit`. A restatement holds most of the unit's
/// content words; it is not enough that the unit holds a short sentence's ("We got this!"
/// does not restate "We've got some cool projects in the works", and counting it so made a
/// vague remark look said ten times). A sentence that takes the unit back ("spaces over
/// tabs" for "tabs over spaces") is its opposite.
///
/// Only sentences that share one of the unit's rarest words in `a` can hold enough of them
/// (of `m` words a restatement shares `k`, so it holds one of any `m - k + 1`), and they
/// are found in `a`'s index, at most [`MAX_COMPARED_PER_EVENT`] of them: the work is not
/// the event's length.
fn restated_in(a: &Analysed<'_>, unit: &Sentence) -> bool {
    let m = unit.tokens.len();
    let Some(k) = (1..=m).find(|&k| k as f64 / m as f64 >= SUPPORT_SIMILARITY) else {
        return false;
    };
    let mut postings: Vec<&[usize]> = unit
        .tokens
        .iter()
        .map(|t| a.index.get(t).map_or(&[][..], Vec::as_slice))
        .collect();
    postings.sort_by_key(|p| p.len());
    let mut seen = HashSet::new();
    let mut compared = 0;
    for &i in postings[..m - k + 1].iter().copied().flatten() {
        if !seen.insert(i) {
            continue;
        }
        if compared == MAX_COMPARED_PER_EVENT {
            return false;
        }
        compared += 1;
        work(1);
        let s = &a.sentences[i];
        if restates(&s.tokens, &unit.tokens)
            && measures::polarity_agrees_prepared(&s.prepared, &unit.prepared)
            && measures::retracts(&s.prepared, &unit.prepared).is_none()
            && measures::retracts(&unit.prepared, &s.prepared).is_none()
        {
            return true;
        }
    }
    false
}

/// Whether a sentence of content words `said` restates `unit`: it holds at least
/// [`SUPPORT_SIMILARITY`] of the unit's words. (Not the share of the smaller of the two:
/// then any short sentence inside a long one would restate it.)
fn restates(said: &BTreeSet<String>, unit: &BTreeSet<String>) -> bool {
    !unit.is_empty()
        && said.intersection(unit).count() as f64 / unit.len() as f64 >= SUPPORT_SIMILARITY
}

/// A text's words as written, and its names: capitalised words after its first word ("my
/// brother Tom"), never "I". A name a text opens with ("Tom started ...") counts when
/// another text says it inside, which the union over a unit's supporters gives.
fn names_of(text: &str) -> (HashSet<String>, BTreeSet<String>) {
    let mut words = HashSet::new();
    let mut names = BTreeSet::new();
    for (i, w) in text
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .enumerate()
    {
        if i > 0 && w.chars().count() >= 2 && w.chars().next().is_some_and(char::is_uppercase) {
            names.insert(w.to_string());
        }
        words.insert(w.to_string());
    }
    (words, names)
}

/// The names at least half of a unit's supporting events say, by their lowercased form
/// (with how many spellings of it there are): what [`names_dropped`] counts from. It
/// depends on the supporters alone, so it is found once per set of them.
fn names_said(supporters: &[&Analysed<'_>]) -> std::collections::HashMap<String, usize> {
    let names: BTreeSet<&String> = supporters.iter().flat_map(|a| &a.names).collect();
    work(names.len() * supporters.len());
    let mut out = std::collections::HashMap::new();
    for n in names {
        let said = supporters.iter().filter(|a| a.words.contains(n)).count();
        if 2 * said >= supporters.len() {
            *out.entry(n.to_lowercase()).or_insert(0) += 1;
        }
    }
    out
}

/// How many names at least half of a unit's supporting events say (`said`, from
/// [`names_said`]) that the unit does not: a candidate that would lose them ranks after one
/// that keeps them.
fn names_dropped(unit: &str, said: &std::collections::HashMap<String, usize>) -> usize {
    let unit_words: HashSet<String> = unit
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(str::to_lowercase)
        .collect();
    work(unit_words.len());
    let kept: usize = unit_words.iter().filter_map(|w| said.get(w)).sum();
    said.values().sum::<usize>() - kept
}

/// Actors that are the person the memory belongs to: their sentences are quoted as they
/// are ("I live in Porto."); anyone else's are named ("Caroline: I went there.").
pub const OWNER_ACTORS: &[&str] = &["", "user", "human", "owner"];

/// The sentence as the candidate's text: named by its speaker unless that is the owner.
pub fn quoted(actor: &str, sentence: &str) -> String {
    if OWNER_ACTORS.contains(&actor.to_ascii_lowercase().as_str()) {
        sentence.to_string()
    } else {
        format!("{actor}: {sentence}")
    }
}

/// The owner's own words for a candidate whose wording is not fully theirs: the sentence
/// of a cited owner event that shares the most content words with it (at least two), if
/// that sentence is worth keeping on its own (specific, not chatter), named by its speaker
/// and supported by its event alone. A model's paraphrase goes to a person; this keeps
/// what the events themselves say meanwhile.
pub fn own_words(
    candidate: &str,
    category: &str,
    block: &str,
    cited: &[&EventView],
) -> Option<Proposal> {
    let want = measures::content_tokens(candidate);
    let mut best: Option<(usize, std::cmp::Reverse<usize>, Proposal)> = None;
    for e in cited {
        if !e.is_owner_statement() {
            continue;
        }
        for s in sentences(&e.text) {
            let s = lead_in(&s).to_string();
            if !worth_keeping_once(&s) || leans_on_its_object(&s) {
                continue;
            }
            let shared = measures::content_tokens(&s).intersection(&want).count();
            if shared < 2 {
                continue;
            }
            let key = (shared, std::cmp::Reverse(s.chars().count()));
            if best.as_ref().is_none_or(|b| (b.0, b.1) < key) {
                best = Some((
                    key.0,
                    key.1,
                    Proposal {
                        text: quoted(&e.actor, &s),
                        category: category.into(),
                        block: block.into(),
                        supporting_event_ids: vec![e.id.clone()],
                        confidence: confidence(1),
                        reason: format!(
                            "the words of {} for a candidate whose own words are not all in the events",
                            e.id
                        ),
                    },
                ));
            }
        }
    }
    best.map(|b| b.2)
}

/// `1 - 0.4^k`, k the number of distinct (session, day) pairs among supporting events that
/// can establish a fact: one restatement 0.6, two independent ones 0.84, three 0.94.
pub fn confidence(independent: usize) -> f64 {
    measures::round3(1.0 - 0.4f64.powi(independent as i32))
}

impl Offline {
    fn extract(&self, req: &ReflectRequest) -> ReflectReply {
        let analysed: Vec<Analysed<'_>> = req
            .events
            .iter()
            .filter(|e| !e.recalled)
            .map(analyse)
            .collect();
        // Every sentence the owner could be quoted on, with every event that restates it:
        // computed once per cluster (the cluster is capped by cluster.max_events_per_prompt),
        // then each round only filters out events an earlier candidate already used.
        struct Unit {
            event: usize,
            sentence: usize,
            support: Vec<usize>,
            /// Specific enough to keep when said once.
            once: bool,
        }
        // The sentences that may be proposed ([`MAX_PROPOSED_PER_EVENT`] of an event at
        // most), with their entities, then every event's text read once for all of them.
        let mut proposable: Vec<(usize, usize, Vec<Entity>)> = Vec::new();
        for (i, a) in analysed.iter().enumerate() {
            if !a.event.is_owner_statement() {
                continue;
            }
            let mut taken_here = 0;
            for (j, unit) in a.sentences.iter().enumerate() {
                if taken_here == MAX_PROPOSED_PER_EVENT {
                    break;
                }
                // Repetition is not durability: a restated sentence must be as specific as
                // one said once (a name, number or date, a habit, a preference, a plan, an
                // event, the project) or be about its speaker, never a general remark. A
                // sentence whose object is a bare pronoun ("I had a blast there") cannot be
                // quoted alone: what it is about was said before.
                if not_a_fact(&unit.text)
                    || leans_on_its_object(&unit.text)
                    || !(specific(&unit.text) || about_speaker(&unit.text))
                {
                    continue;
                }
                taken_here += 1;
                proposable.push((i, j, measures::entities(&unit.text)));
            }
        }
        let finder = measures::EntityFinder::new(proposable.iter().flat_map(|p| &p.2));
        let found: Vec<measures::Found> = analysed
            .iter()
            .map(|a| {
                work(a.event.text.len());
                finder.scan(&a.event.text)
            })
            .collect();
        let mut units: Vec<Unit> = Vec::new();
        for (i, j, entities) in proposable {
            let a = &analysed[i];
            let unit = &a.sentences[j];
            let support: Vec<usize> = analysed
                .iter()
                .enumerate()
                .filter(|(k, b)| {
                    // A person's own words are restated by that person: another
                    // speaker's "I" is someone else (an agent's or a tool's restatement
                    // is context, whoever wrote it).
                    (!b.event.is_owner_statement() || b.event.actor == a.event.actor)
                        && supports(
                            b,
                            unit,
                            a.event.ts.date_naive(),
                            &entities,
                            (&finder, &found[*k]),
                        )
                })
                .map(|(k, _)| k)
                .collect();
            let once = self.singles && a.event.new && worth_keeping_once(&unit.text);
            // Only the owner's statements count toward the cluster's floor; agents' and
            // tools' restatements are cited as context.
            let owners = support
                .iter()
                .filter(|&&k| analysed[k].event.is_owner_statement())
                .count();
            if (owners >= self.min_points || once) && support.iter().any(|&k| analysed[k].event.new)
            {
                units.push(Unit {
                    event: i,
                    sentence: j,
                    support,
                    once,
                });
            }
        }
        let mut used = vec![false; analysed.len()];
        let mut candidates: Vec<Proposal> = Vec::new();
        let mut taken: Vec<BTreeSet<String>> = Vec::new();
        let mut days_taken: HashSet<(BTreeSet<String>, chrono::NaiveDate)> = HashSet::new();
        let mut said_by: std::collections::HashMap<
            Vec<usize>,
            std::collections::HashMap<String, usize>,
        > = Default::default();
        // Restated sentences first, most supported first; each event supports one.
        loop {
            // Most supporting events, then most sessions, then an owner among them, then
            // the shortest sentence (the most atomic statement of the fact: fewest content
            // words, then fewest characters, so "I live in Lisbon." is taken over "Again,
            // as I said, I live in Lisbon.").
            type Score = (
                std::cmp::Reverse<usize>,
                usize,
                usize,
                bool,
                std::cmp::Reverse<usize>,
                std::cmp::Reverse<usize>,
                bool,
            );
            let mut best: Option<(usize, usize, Vec<usize>, Score)> = None;
            for u in &units {
                if used[u.event] {
                    continue;
                }
                let unit = &analysed[u.event].sentences[u.sentence];
                let support: Vec<usize> = u.support.iter().copied().filter(|&k| !used[k]).collect();
                let owners = support
                    .iter()
                    .filter(|&&k| analysed[k].event.is_owner_statement())
                    .count();
                if owners < self.min_points || !support.iter().any(|&k| analysed[k].event.new) {
                    continue;
                }
                let sessions: HashSet<&str> = support
                    .iter()
                    .map(|&k| analysed[k].event.session.as_str())
                    .collect();
                let owner = owners > 0;
                // A sentence that keeps the names its restatements say comes first: "Tom
                // started a new job" over "my brother started a new job".
                let said = said_by.entry(support.clone()).or_insert_with(|| {
                    let said: Vec<&Analysed<'_>> = support.iter().map(|&k| &analysed[k]).collect();
                    names_said(&said)
                });
                let score = (
                    std::cmp::Reverse(names_dropped(&unit.text, said)),
                    owners,
                    sessions.len(),
                    owner,
                    std::cmp::Reverse(unit.tokens.len()),
                    std::cmp::Reverse(unit.text.chars().count()),
                    unit.whole,
                );
                if best.as_ref().is_none_or(|b| score > b.3) {
                    best = Some((u.event, u.sentence, support, score));
                }
            }
            let Some((i, j, support, _)) = best else {
                break;
            };
            let unit = &analysed[i].sentences[j];
            candidates.push(self.proposal(&analysed, i, j, &support));
            taken.push(unit.tokens.clone());
            for k in support {
                used[k] = true;
            }
        }
        // Then what was said once and is specific: its own event is its support, unless a
        // restated candidate already says the same, or its event supports one by this very
        // sentence (it is a restatement of that candidate, not news of its own).
        for u in units.iter().filter(|u| u.once) {
            let unit = &analysed[u.event].sentences[u.sentence];
            let day = analysed[u.event].event.ts.date_naive();
            // A sentence that names a day relative to its own ("today") said on another
            // day is another happening, not the same one again.
            if unit.relative && !days_taken.insert((unit.tokens.clone(), day)) {
                continue;
            }
            if !unit.relative
                && taken.iter().any(|t| {
                    work(1);
                    let similarity = measures::set_similarity(t, &unit.tokens);
                    similarity >= self.duplicate_similarity
                        || (used[u.event] && similarity >= SUPPORT_SIMILARITY)
                })
            {
                continue;
            }
            candidates.push(self.proposal(&analysed, u.event, u.sentence, &[u.event]));
            taken.push(unit.tokens.clone());
        }
        ReflectReply { candidates }
    }

    /// The candidate of sentence `j` of event `i`, supported by `support`.
    fn proposal(
        &self,
        analysed: &[Analysed<'_>],
        i: usize,
        j: usize,
        support: &[usize],
    ) -> Proposal {
        let unit = &analysed[i].sentences[j];
        let independent: HashSet<(String, chrono::NaiveDate)> = support
            .iter()
            .map(|&k| analysed[k].event)
            .filter(|e| e.is_owner_statement())
            .map(|e| (e.session.clone(), e.ts.date_naive()))
            .collect();
        let days: HashSet<chrono::NaiveDate> = support
            .iter()
            .map(|&k| analysed[k].event)
            .filter(|e| e.is_owner_statement())
            .map(|e| e.ts.date_naive())
            .collect();
        let (category, block) = classify(&unit.text);
        let reason = if support.len() == 1 {
            format!(
                "sentence taken verbatim from {}; said once, and specific (a name, number or date, or a fact about the speaker, a preference or a plan)",
                analysed[i].event.id
            )
        } else {
            format!(
                "sentence taken verbatim from {}; restated by {} statements of the owner's in {} independent session-days over {} days",
                analysed[i].event.id,
                support
                    .iter()
                    .filter(|&&k| analysed[k].event.is_owner_statement())
                    .count(),
                independent.len(),
                days.len()
            )
        };
        Proposal {
            text: quoted(&analysed[i].event.actor, &unit.text),
            category: category.into(),
            block: block.as_str().into(),
            supporting_event_ids: support
                .iter()
                .map(|&k| analysed[k].event.id.clone())
                .collect(),
            confidence: confidence(independent.len()),
            reason,
        }
    }

    fn verdict(&self, candidate_id: &str, text: &str, neighbours: &[super::FactView]) -> Verdict {
        let tokens = measures::content_tokens(text);
        let names = measures::names_and_numbers(text);
        let mut best_dup: Option<(f64, &super::FactView)> = None;
        let mut conflict: Option<(f64, &super::FactView, String)> = None;
        for n in neighbours {
            let sim = measures::set_similarity(&tokens, &measures::content_tokens(&n.text));
            let polarity_differs = !measures::polarity_agrees(text, &n.text);
            let other_names = measures::names_and_numbers(&n.text);
            let names_differ = measures::names_differ(&names, &other_names);
            if sim >= self.duplicate_similarity && !polarity_differs && !names_differ {
                if best_dup.is_none_or(|(s, _)| sim > s) {
                    best_dup = Some((sim, n));
                }
            } else if sim >= SAME_SUBJECT_SIMILARITY
                && (polarity_differs || names_differ)
                && n.block != crate::schema::Block::Episodes.as_str()
            {
                // An episode is what was said on its day ("I won my first tournament last
                // week"): another happening of the same kind, with other names or numbers
                // ("I won my fourth tournament on Friday"), is news beside it, not a
                // contradiction for a person to settle.
                let why = if polarity_differs {
                    "one of the two is negated".to_string()
                } else {
                    let only_new: Vec<_> = names.difference(&other_names).cloned().collect();
                    let only_old: Vec<_> = other_names.difference(&names).cloned().collect();
                    format!("{} instead of {}", only_new.join(", "), only_old.join(", "))
                };
                if conflict.as_ref().is_none_or(|(s, _, _)| sim > *s) {
                    conflict = Some((sim, n, why));
                }
            }
        }
        if let Some((sim, n, why)) = conflict {
            return Verdict {
                candidate_id: candidate_id.into(),
                contradicts: Some(n.id.clone()),
                duplicate_of: None,
                reason: format!(
                    "possible contradiction with {} (same subject, similarity {:.3}; {why})",
                    n.id, sim
                ),
            };
        }
        if let Some((sim, n)) = best_dup {
            return Verdict {
                candidate_id: candidate_id.into(),
                contradicts: None,
                duplicate_of: Some(n.id.clone()),
                reason: format!("restates {} (similarity {:.3})", n.id, sim),
            };
        }
        Verdict {
            candidate_id: candidate_id.into(),
            contradicts: None,
            duplicate_of: None,
            reason: "no contradiction found (offline judge: conservative default)".into(),
        }
    }
}

impl Llm for Offline {
    fn name(&self) -> String {
        "none".into()
    }

    fn offline(&self) -> bool {
        true
    }

    fn reflect(&self, req: &ReflectRequest) -> Result<Reply<ReflectReply>, LlmError> {
        Ok(Reply::free(self.extract(req)))
    }

    fn judge(&self, req: &JudgeRequest) -> Result<Reply<JudgeReply>, LlmError> {
        let verdicts = req
            .items
            .iter()
            .map(|item| self.verdict(&item.candidate_id, &item.text, &item.neighbours))
            .collect();
        Ok(Reply::free(JudgeReply { verdicts }))
    }

    // The maintenance passes: the offline provider proposes nothing, so the passes run
    // their engine backstops alone.

    fn dedupe(
        &self,
        _req: &crate::schema::pass_contract::DedupeRequest,
    ) -> Result<Reply<crate::schema::pass_contract::DedupeReply>, LlmError> {
        Ok(Reply::free(Default::default()))
    }

    fn merge(
        &self,
        _req: &crate::schema::pass_contract::MergeRequest,
    ) -> Result<Reply<crate::schema::pass_contract::MergeReply>, LlmError> {
        Ok(Reply::free(Default::default()))
    }

    fn promote(
        &self,
        _req: &crate::schema::pass_contract::PromoteRequest,
    ) -> Result<Reply<crate::schema::pass_contract::PromoteReply>, LlmError> {
        Ok(Reply::free(Default::default()))
    }

    fn forget(
        &self,
        _req: &crate::schema::pass_contract::ForgetRequest,
    ) -> Result<Reply<crate::schema::pass_contract::ForgetReply>, LlmError> {
        Ok(Reply::free(Default::default()))
    }

    /// The plain draft of SPEC S10, from the most typical instance.
    fn draft_skill(
        &self,
        req: &crate::schema::skill_contract::SkillRequest,
    ) -> Result<Reply<crate::schema::skill_contract::SkillReply>, LlmError> {
        Ok(Reply::free(super::skill::offline_draft(req)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::contract::{FactView, JudgeItem};
    use crate::sources::event::Trust;

    fn ev(id: &str, day: u32, session: &str, text: &str, new: bool) -> EventView {
        EventView {
            id: id.into(),
            ts: format!("2026-11-{day:02}T10:00:00Z").parse().unwrap(),
            session: session.into(),
            kind: "message".into(),
            trust: Trust::Owner,
            recalled: false,
            new,
            text: text.into(),
            actor: "user".into(),
        }
    }

    fn offline() -> Offline {
        Offline::new(&Config::default())
    }

    /// What the offline reflector proposes from one cluster of these events.
    fn reflect_on(events: Vec<EventView>, singles: bool) -> ReflectReply {
        let req = ReflectRequest {
            cluster: 0,
            events,
            singles,
        };
        offline().reflect(&req).unwrap().value
    }

    #[test]
    fn restated_facts_are_extracted_verbatim_and_chatter_is_not() {
        let req = ReflectRequest {
            cluster: 0,
            events: vec![
                ev(
                    "e1",
                    1,
                    "s1",
                    "Hi! I live in Lisbon and work best in the morning.",
                    false,
                ),
                ev(
                    "e2",
                    2,
                    "s2",
                    "As I said, I live in Lisbon and work best in the morning.",
                    true,
                ),
                ev(
                    "e3",
                    3,
                    "s3",
                    "User note: I live in Lisbon, and I work best in the morning.",
                    true,
                ),
                ev("e4", 3, "s3", "Can you check the build?", true),
                ev("e5", 3, "s3", "Can you check the build?", true),
            ],
            singles: false,
        };
        let reply = offline().reflect(&req).unwrap().value;
        assert_eq!(reply.candidates.len(), 1, "{reply:?}");
        let c = &reply.candidates[0];
        assert_eq!(c.text, "I live in Lisbon and work best in the morning.");
        assert_eq!(c.supporting_event_ids, vec!["e1", "e2", "e3"]);
        assert_eq!(c.category, "preferences");
        assert_eq!(c.confidence, 0.936);
    }

    #[test]
    fn the_plainest_wording_of_a_restated_fact_is_taken() {
        let req = ReflectRequest {
            cluster: 0,
            events: vec![
                ev("e1", 1, "s1", "Again, my sister Ana lives in Porto.", false),
                ev(
                    "e2",
                    2,
                    "s2",
                    "As I said, my sister Ana lives in Porto.",
                    true,
                ),
                ev("e3", 3, "s3", "My sister Ana lives in Porto.", true),
            ],
            singles: false,
        };
        let reply = offline().reflect(&req).unwrap().value;
        assert_eq!(reply.candidates.len(), 1, "{reply:?}");
        assert_eq!(reply.candidates[0].text, "My sister Ana lives in Porto.");
        assert_eq!(
            reply.candidates[0].supporting_event_ids,
            vec!["e1", "e2", "e3"]
        );
    }

    #[test]
    fn a_short_remark_inside_a_sentence_does_not_restate_it() {
        // Each later remark's words are all in the first sentence ("got", "cool",
        // "project"), but none says it again: the sentence was said once.
        let events = vec![
            ev(
                "e1",
                1,
                "s1",
                "We've got some cool projects in the works.",
                true,
            ),
            ev("e2", 2, "s2", "We got this!", true),
            ev("e3", 3, "s3", "So cool!", true),
            ev("e4", 4, "s4", "Projects, projects.", true),
        ];
        let reply = reflect_on(events, false);
        assert!(reply.candidates.is_empty(), "{reply:?}");
    }

    #[test]
    fn another_speaker_saying_the_same_words_is_someone_else() {
        let said = "I play chess at the Lisbon club on Fridays.";
        let mut events: Vec<EventView> = (1..=3)
            .map(|d| ev(&format!("e{d}"), d, &format!("s{d}"), said, true))
            .collect();
        events[1].actor = "Ana".into();
        events[2].actor = "Rui".into();
        // Each said it once: three people, none of them restated (what is proposed, said
        // once, rests on its own event alone).
        let reply = reflect_on(events.clone(), false);
        assert!(
            reply
                .candidates
                .iter()
                .all(|c| c.supporting_event_ids.len() == 1),
            "{reply:?}"
        );
        // Said by the same person three times, it is a restated fact.
        for e in &mut events {
            e.actor = "Ana".into();
        }
        let reply = reflect_on(events, false);
        assert_eq!(reply.candidates.len(), 1, "{reply:?}");
        assert_eq!(reply.candidates[0].supporting_event_ids.len(), 3);
    }

    #[test]
    fn a_sentence_whose_object_is_a_bare_pronoun_is_not_quoted() {
        let said = "I had a blast there last month. I sold my old bike to Marta yesterday.";
        let reply = reflect_on(vec![ev("e1", 1, "s1", said, true)], true);
        let texts: Vec<&str> = reply.candidates.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            texts,
            ["I sold my old bike to Marta yesterday."],
            "{reply:?}"
        );
    }

    #[test]
    fn nothing_is_proposed_without_a_new_event() {
        let req = ReflectRequest {
            cluster: 0,
            events: vec![
                ev("e1", 1, "s1", "I live in Lisbon with two cats.", false),
                ev("e2", 2, "s2", "I live in Lisbon with two cats.", false),
            ],
            singles: false,
        };
        assert!(offline().reflect(&req).unwrap().value.candidates.is_empty());
    }

    #[test]
    fn a_different_city_does_not_support_the_fact() {
        let req = ReflectRequest {
            cluster: 0,
            events: vec![
                ev(
                    "e1",
                    1,
                    "s1",
                    "I live in Lisbon and work best in the morning.",
                    true,
                ),
                ev(
                    "e2",
                    2,
                    "s2",
                    "I live in Porto and work best in the morning.",
                    true,
                ),
            ],
            singles: false,
        };
        // Each is said once (and is specific), so each is proposed on its own event alone.
        let c = offline().reflect(&req).unwrap().value.candidates;
        let got: Vec<(&str, Vec<String>)> = c
            .iter()
            .map(|c| (c.text.as_str(), c.supporting_event_ids.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "I live in Lisbon and work best in the morning.",
                    vec!["e1".to_string()]
                ),
                (
                    "I live in Porto and work best in the morning.",
                    vec!["e2".to_string()]
                ),
            ]
        );
    }

    #[test]
    fn chatter_is_never_proposed_however_often_it_is_said() {
        let noise = [
            "hmm let me think about lunch",
            "The build finished in 3 minutes.",
            "They really are a lot of fun.",
            "Can't wait to see you perform.",
            "hey, good morning!",
            "What does this error mean?",
            "I wonder if the cache is warm already.",
            "Tests passed on the second try.",
        ];
        let mut events = Vec::new();
        for (n, text) in noise.iter().enumerate() {
            for day in 1..=6 {
                events.push(ev(
                    &format!("n{n}-{day}"),
                    day,
                    &format!("s{}", day % 4),
                    text,
                    true,
                ));
            }
        }
        let req = ReflectRequest {
            cluster: 0,
            events,
            singles: false,
        };
        let c = offline().reflect(&req).unwrap().value.candidates;
        assert!(c.is_empty(), "{c:#?}");
    }

    #[test]
    fn a_specific_sentence_said_once_is_proposed_on_its_own_event_and_its_speaker_named() {
        let mut friend = ev(
            "e1",
            1,
            "s1",
            "Hey Mel! I went to a LGBTQ support group yesterday. It was so powerful.",
            true,
        );
        friend.actor = "Caroline".into();
        let mine = ev("e2", 1, "s1", "Yeah, I sold my old bike to Marta.", true);
        let vague = ev(
            "e3",
            1,
            "s1",
            "I had a long meeting that went nowhere.",
            true,
        );
        let req = ReflectRequest {
            cluster: 0,
            events: vec![friend, mine, vague],
            singles: true,
        };
        let c = offline().reflect(&req).unwrap().value.candidates;
        let got: Vec<(&str, Vec<String>, f64)> = c
            .iter()
            .map(|c| {
                (
                    c.text.as_str(),
                    c.supporting_event_ids.clone(),
                    c.confidence,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "Caroline: I went to a LGBTQ support group yesterday.",
                    vec!["e1".to_string()],
                    0.6
                ),
                ("I sold my old bike to Marta.", vec!["e2".to_string()], 0.6),
            ]
        );
    }

    #[test]
    fn classify_uses_phrase_rules() {
        let table = [
            ("I live in Lisbon.", "identity"),
            ("I prefer tabs over spaces.", "preferences"),
            ("Always run the tests before pushing.", "preferences"),
            ("I will send the report by Friday.", "commitments"),
            ("I went to the dentist yesterday.", "event"),
            ("Your name is Ada.", "persona"),
            ("My stack is Airflow and Postgres.", "project"),
            ("Rust has no garbage collector at all.", "knowledge"),
        ];
        for (text, want) in table {
            assert_eq!(classify(text).0, want, "{text}");
        }
    }

    #[test]
    fn questions_requests_and_chatter_are_not_facts() {
        for s in [
            "Where do I live?",
            "Can you fix the build",
            "thanks a lot!",
            "Please run the tests now.",
            "ok cool",
            "ok, sounds good",
            "hmm, let me think",
            "What's the plan for today",
        ] {
            assert!(not_a_fact(s), "{s}");
        }
        assert!(!not_a_fact("I live in Lisbon with my two cats."));
    }

    #[test]
    fn another_happening_of_the_same_kind_does_not_contradict_an_episode() {
        let episode = FactView {
            id: "f_1".into(),
            block: "episodes".into(),
            category: "event".into(),
            text: "21 January 2022, Nate: I won my first video game tournament last week.".into(),
        };
        let durable = FactView {
            block: "human".into(),
            ..episode.clone()
        };
        let item = |neighbour: &FactView| JudgeItem {
            candidate_id: "a".into(),
            text: "Nate: I won my fourth video game tournament on Friday!".into(),
            neighbours: vec![neighbour.clone()],
        };
        let req = JudgeRequest {
            items: vec![item(&episode), item(&durable)],
        };
        let v = offline().judge(&req).unwrap().value.verdicts;
        // Beside the episode: news, not a question for a person.
        assert_eq!(v[0].contradicts, None, "{:?}", v[0]);
        // The same words held as a lasting fact still differ in a number: a person decides.
        assert_eq!(v[1].contradicts.as_deref(), Some("f_1"), "{:?}", v[1]);
    }

    #[test]
    fn the_judge_finds_duplicates_and_possible_contradictions() {
        let facts = vec![
            FactView {
                id: "f_1".into(),
                block: "human".into(),
                category: "identity".into(),
                text: "I live in Lisbon and work best in the morning.".into(),
            },
            FactView {
                id: "f_2".into(),
                block: "scratch".into(),
                category: "project".into(),
                text: "My stack is Airflow and Postgres.".into(),
            },
        ];
        let req = JudgeRequest {
            items: vec![
                JudgeItem {
                    candidate_id: "a".into(),
                    text: "User lives in Lisbon and works best in the morning.".into(),
                    neighbours: facts.clone(),
                },
                JudgeItem {
                    candidate_id: "b".into(),
                    text: "I live in Porto and work best in the morning.".into(),
                    neighbours: facts.clone(),
                },
                JudgeItem {
                    candidate_id: "c".into(),
                    text: "I like green tea in the afternoon.".into(),
                    neighbours: facts,
                },
            ],
        };
        let v = offline().judge(&req).unwrap().value.verdicts;
        assert_eq!(v[0].duplicate_of.as_deref(), Some("f_1"));
        assert_eq!(v[1].contradicts.as_deref(), Some("f_1"), "{:?}", v[1]);
        assert!(
            v[1].reason.contains("porto instead of lisbon"),
            "{}",
            v[1].reason
        );
        assert_eq!(
            (v[2].contradicts.as_ref(), v[2].duplicate_of.as_ref()),
            (None, None)
        );
    }

    #[test]
    fn the_offline_provider_takes_no_prompts_and_drafts_a_skill_plainly() {
        use crate::schema::skill_contract::{SkillRequest, StepView};
        let offline = Offline::new(&Config::default());
        let req = SkillRequest {
            procedure: "s_1".into(),
            instances: Vec::new(),
            steps: vec![StepView {
                tool: "Bash".into(),
                shown: "cargo test".into(),
                example: "cargo test".into(),
                stable: true,
                common: true,
            }],
            total_instances: 3,
            days: 2,
            sessions: 3,
            max_tokens: 512,
        };
        assert!(
            offline.chat_json(&crate::llm::skill::call(&req)).is_err(),
            "the offline provider takes no prompts"
        );
        let draft = offline.draft_skill(&req).unwrap().value;
        assert_eq!(draft, crate::llm::skill::offline_draft(&req));
        assert_eq!(draft.name, "cargo-test");
    }

    /// A name of its own for each `i` ("Bakelo", "Dimaru"...), never a dictionary word.
    fn made_up_name(mut i: usize) -> String {
        const SYLLABLES: &[&str] = &["ba", "ke", "lo", "di", "ma", "ru", "so", "ni", "te", "vu"];
        let mut name = String::new();
        for _ in 0..4 {
            name.push_str(SYLLABLES[i % SYLLABLES.len()]);
            i /= SYLLABLES.len();
        }
        let mut c = name.chars();
        c.next()
            .map(|f| f.to_uppercase().chain(c).collect())
            .unwrap_or_default()
    }

    /// The work one reflect call does on three restatements of a document of `n`
    /// specific sentences (each names someone of its own and a year, and all share words),
    /// and the document's size in bytes.
    fn work_on_a_document(n: usize) -> (u64, usize) {
        let doc: String = (0..n)
            .map(|i| {
                format!(
                    "My colleague {} moved to Lisbon in {}. ",
                    made_up_name(i),
                    1000 + i
                )
            })
            .collect();
        let events = (1..=3)
            .map(|d| ev(&format!("e{d}"), d, &format!("s{d}"), &doc, true))
            .collect();
        WORK.with(|w| w.set(0));
        let reply = reflect_on(events, true);
        assert!(!reply.candidates.is_empty());
        (WORK.with(|w| w.get()), 3 * doc.len())
    }

    /// Issue 46: one long event held the lock for hours, every sentence of it compared
    /// with every other and its whole text searched again for each sentence's names and
    /// numbers. The work is counted, not timed: ten times the document may cost at most
    /// about ten times the work (a quadratic cost would be a hundred times), and never more
    /// than a few steps a byte.
    #[test]
    fn a_long_event_costs_work_in_proportion_to_its_size() {
        let (small, small_bytes) = work_on_a_document(150);
        let (large, large_bytes) = work_on_a_document(1500);
        assert!(
            large <= 15 * small.max(1),
            "ten times the document took {large} steps against {small}"
        );
        for (w, bytes) in [(small, small_bytes), (large, large_bytes)] {
            assert!(w <= 4 * bytes as u64, "{w} steps for {bytes} bytes");
        }
    }
}
