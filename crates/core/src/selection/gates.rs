//! Gates for a reflected candidate (SPEC S4 step 5, S8): pure functions that re-derive a
//! model's proposal from the events it cites, before anything touches the store.
//!
//! Each gate records its measured value beside its threshold, passed or not, so a card,
//! a refusal or `dream explain` can show exactly why. A hard gate that fails refuses the
//! candidate with a reason that names the value and the threshold; soft gates (coverage
//! between `min_coverage` and 1.0, support below the floor) let it through, to review or
//! to the episodes. Nothing here does I/O.
//!
//! Evidence knows who and when: a supporting event is its text, who wrote it (its actor),
//! the owner's configured names (`owner.names`), the day it was written and the days its
//! relative dates name ([`context`]), so "Caroline went to a support group on 7 May 2023"
//! traces to Caroline's "I went to a support group yesterday" written on 8 May 2023.
//! Before the gates, a relative date in a proposal that one of its cited events also
//! says is written out against that event's day ([`anchor_dates`]): memory stores "on 7
//! May 2023", never "yesterday".

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use chrono::NaiveDate;

use crate::schema::contract::{EventView, Proposal};
use crate::schema::settings::Config;
use crate::schema::{classify, one_line, Block, GateName, GateResult, Measures};
use crate::selection::keep::{self, Scorer};
use crate::sources::secrets;
use crate::text::measures::{self, round3};

/// Longest fact text accepted, in characters.
pub const MAX_TEXT_CHARS: usize = 500;

/// The events a proposal was made from.
pub struct Evidence<'a> {
    /// The events sent to the model, by id.
    pub sent: HashMap<&'a str, &'a EventView>,
    /// Ids that exist in the state database but were not sent.
    pub elsewhere: &'a HashSet<String>,
    /// The owner's names (`owner.names`): traceable wherever the owner is the subject.
    pub owner_names: Vec<String>,
    /// Events' words prepared by an earlier gating with the same owner's names.
    pub sources: Option<&'a Sources>,
    /// Scores the proposal's statement ([`keep::statement`]); without one, no salience
    /// row is recorded and routing keeps what it kept before salience existed.
    pub scorer: Option<&'a dyn Scorer>,
}

/// Each event's words as the gates read them (its text and its [`context`]), prepared once
/// per event: a cycle gates a pending card's events again each time a candidate joins it,
/// and a card cites dozens. Kept for one owner's names (one stage's config): the context
/// holds them.
#[derive(Debug, Default)]
pub struct Sources(RefCell<HashMap<String, Rc<Source>>>);

/// One event's context line and the vocabulary of its text and context, each word once.
#[derive(Debug)]
pub struct Source {
    context: String,
    words: measures::Vocabulary,
}

impl Source {
    fn of(e: &EventView, owner_names: &[String]) -> Source {
        let context = context(e, owner_names);
        let words = measures::vocabulary([e.text.as_str(), context.as_str()]);
        Source { context, words }
    }
}

impl Sources {
    fn of(&self, e: &EventView, owner_names: &[String]) -> Rc<Source> {
        if let Some(known) = self.0.borrow().get(&e.id) {
            return Rc::clone(known);
        }
        let source = Rc::new(Source::of(e, owner_names));
        self.0.borrow_mut().insert(e.id.clone(), Rc::clone(&source));
        source
    }
}

impl<'a> Evidence<'a> {
    pub fn new(events: &'a [EventView], elsewhere: &'a HashSet<String>) -> Evidence<'a> {
        Evidence {
            sent: events.iter().map(|e| (e.id.as_str(), e)).collect(),
            elsewhere,
            owner_names: Vec::new(),
            sources: None,
            scorer: None,
        }
    }

    /// The same evidence, with each proposal's statement scored by `scorer`.
    pub fn scored_by(mut self, scorer: &'a dyn Scorer) -> Evidence<'a> {
        self.scorer = Some(scorer);
        self
    }

    /// The same evidence, its events' words taken from (and kept in) `sources`.
    pub fn with_sources(mut self, sources: &'a Sources) -> Evidence<'a> {
        self.sources = Some(sources);
        self
    }

    /// The same evidence, with the owner's names traceable too.
    pub fn owned_by(mut self, names: &[String]) -> Evidence<'a> {
        self.owner_names = names.to_vec();
        self
    }
}

/// Who wrote an event and when, as words a fact citing it may use: its actor, the owner's
/// names, its day in the forms a date is written, and the absolute form of each relative
/// date in its text (see [`crate::text::when::words`]).
pub fn context(e: &EventView, owner_names: &[String]) -> String {
    format!(
        "{} {}. {}",
        e.actor,
        owner_names.join(" "),
        crate::text::when::words(&e.text, e.ts.date_naive())
    )
}

/// The proposal with each relative date written out against the day of the first cited
/// event that says it too ("yesterday" in the candidate and in an event of 8 May 2023 is
/// "on 7 May 2023"); relative dates no cited event says are left as they are (and show
/// as untraceable). Returns the rewritten proposal and what was written out.
pub fn anchor_dates(p: &Proposal, evidence: &Evidence<'_>) -> (Proposal, Vec<String>) {
    let any_day = NaiveDate::from_ymd_opt(2001, 1, 10).expect("a valid date");
    let spans = crate::text::when::relatives(&p.text, any_day);
    if spans.is_empty() {
        return (p.clone(), Vec::new());
    }
    let cited: Vec<&EventView> = p
        .supporting_event_ids
        .iter()
        .filter_map(|id| evidence.sent.get(id.as_str()).copied())
        .collect();
    let mut found = Vec::new();
    let mut notes = Vec::new();
    for span in spans {
        let phrase = p.text[span.start..span.end].to_lowercase();
        let Some(e) = cited.iter().find(|e| {
            crate::text::when::relatives(&e.text, any_day)
                .iter()
                .any(|r| r.key == span.key)
        }) else {
            continue;
        };
        let said = e.ts.date_naive();
        if let Some(r) = crate::text::when::relatives(&p.text, said)
            .into_iter()
            .find(|r| r.start == span.start)
        {
            notes.push(format!(
                "{phrase:?} is {} ({} was written {})",
                r.absolute,
                e.id,
                crate::text::when::day(said)
            ));
            found.push(r);
        }
    }
    let mut out = p.clone();
    out.text = crate::text::when::rewrite_with(&p.text, &found);
    (out, notes)
}

/// A proposal after the gates.
#[derive(Debug, Clone)]
pub struct Gated {
    pub text: String,
    pub block: Block,
    pub category: String,
    pub confidence: f64,
    pub reason: String,
    /// Distinct, existing, non-recalled supporting event ids.
    pub support: Vec<String>,
    /// Of those, the owner's statements its support is counted over
    /// ([`Candidate::establishing`]): what a reinforcement adds to the fact it restates.
    pub establishing: Vec<String>,
    pub measures: Measures,
    pub gates: Vec<GateResult>,
    /// `Some(reason)` when a hard gate refused it (the first that failed; every failed
    /// gate's row says why in [`GateResult::why`]).
    pub refused: Option<String>,
    /// Optional fields that took their default ([`defaults`]).
    pub notes: Vec<String>,
    /// The statement's salience ([`keep`]); `None` when nothing scored it.
    pub salience: Option<keep::Worth>,
}

/// Support figures of a set of events (S4 step 6), counted over the owner's statements
/// among them ([`EventView::is_owner_statement`]): distinct statements, their sessions,
/// days and spread, and the independent (session, day) pairs. Agent messages, tool calls
/// and results, pastes and harness text may be cited as context; they never count.
pub fn support_measures(events: &[&EventView]) -> (Measures, usize) {
    let owners: Vec<&&EventView> = events.iter().filter(|e| e.is_owner_statement()).collect();
    let sessions: HashSet<&str> = owners.iter().map(|e| e.session.as_str()).collect();
    let days: BTreeSet<NaiveDate> = owners.iter().map(|e| e.ts.date_naive()).collect();
    let first = owners.iter().map(|e| e.ts).min();
    let last = owners.iter().map(|e| e.ts).max();
    let spread = match (first, last) {
        (Some(a), Some(b)) => (b - a).num_minutes() as f64 / 1440.0,
        _ => 0.0,
    };
    let independent: HashSet<(&str, NaiveDate)> = owners
        .iter()
        .map(|e| (e.session.as_str(), e.ts.date_naive()))
        .collect();
    (
        Measures {
            support: owners.len(),
            sessions: sessions.len(),
            days: days.len(),
            spread_days: round3(spread),
            owner_support: owners.len(),
            ..Measures::default()
        },
        independent.len(),
    )
}

/// The least share of a candidate's content words one statement of the owner's (with who
/// wrote it and when) must hold to say it again: to count toward its support, sessions
/// and days. Citing a statement that shares less is context, as an agent's message is.
pub const RESTATES: f64 = 0.5;

/// A proposal prepared once for the gates: its text on one line, the events its ids
/// resolve to, and the measures every gate reads. Building it decides nothing.
pub struct Candidate<'a> {
    pub proposal: &'a Proposal,
    /// The proposal's text, trimmed, on one line.
    pub text: String,
    /// Distinct ids the proposal cites.
    pub cited: usize,
    /// Cited events that were sent and are not recalled, in citation order.
    pub support: Vec<&'a EventView>,
    /// The owner's statements among them: what the text must be traceable to.
    pub owners: Vec<&'a EventView>,
    /// The owner's statements that say it again on their own ([`RESTATES`]): what the
    /// floor and the durable rule count. A model may cite a cluster's loosely related
    /// statements beside the one that says it ("We got this!" beside "We've got some
    /// cool projects in the works"); citing them makes a remark look said ten times.
    pub restating: Vec<&'a EventView>,
    /// Cited events that were read back from memory (never support).
    pub recalled: usize,
    /// Cited ids that are unknown, or exist but were not sent, each with why.
    pub bad_ids: Vec<String>,
    /// The supporting events' texts, each followed by who wrote it and when
    /// ([`context`]), and their vocabulary (S6 tokens).
    pub sources: Vec<String>,
    pub vocab: measures::Vocabulary,
    pub coverage: measures::Coverage,
    /// The block and category: as proposed, or their documented defaults ([`defaults`]).
    pub block: Block,
    pub category: String,
    /// One note per optional field that was missing or unknown and took its default.
    pub notes: Vec<String>,
    /// The statement it says ([`keep::statement`]) and its salience, when the evidence
    /// came with a scorer that could score it.
    pub salience: Option<(String, keep::Worth)>,
}

impl<'a> Candidate<'a> {
    pub fn new(p: &'a Proposal, evidence: &Evidence<'a>) -> Candidate<'a> {
        let text = one_line(p.text.trim());
        let mut seen = HashSet::new();
        let mut support: Vec<&EventView> = Vec::new();
        let mut bad_ids = Vec::new();
        let mut recalled = 0;
        for id in &p.supporting_event_ids {
            if !seen.insert(id.as_str()) {
                continue;
            }
            match evidence.sent.get(id.as_str()) {
                Some(e) if e.recalled => recalled += 1,
                Some(e) => support.push(*e),
                None if evidence.elsewhere.contains(id) => bad_ids.push(format!(
                    "{id} exists but was not among the events sent for this cluster"
                )),
                None => bad_ids.push(format!("{id} does not exist")),
            }
        }
        let owners: Vec<&EventView> = support
            .iter()
            .copied()
            .filter(|e| e.is_owner_statement())
            .collect();
        // Only the owner's statements establish the words: a sentence taken from a tool's
        // output or a web page is not established by citing an owner's message beside it.
        let mut sources: Vec<String> = Vec::with_capacity(2 * owners.len());
        let mut vocab = measures::Vocabulary::default();
        let mut restating = Vec::new();
        for e in &owners {
            let source = match evidence.sources {
                Some(known) => known.of(e, &evidence.owner_names),
                None => Rc::new(Source::of(e, &evidence.owner_names)),
            };
            sources.push(e.text.clone());
            sources.push(source.context.clone());
            if measures::coverage_in(&text, &source.words).value >= RESTATES {
                restating.push(*e);
            }
            for w in &source.words {
                if !vocab.contains(w) {
                    vocab.insert(w.clone());
                }
            }
        }
        let coverage = measures::coverage_in(&text, &vocab);
        let (block, category, notes) = defaults(p, &text);
        let salience = evidence.scorer.and_then(|scorer| {
            let own = keep::statement(&text);
            keep::statements(&text, owners.iter().map(|e| e.text.as_str()))
                .into_iter()
                .filter_map(|said| scorer.score(&said).map(|score| (said, score)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
                // A moment is judged in the words that would be kept.
                .map(|(said, score)| (said, keep::Worth::of(score, &own)))
        });
        Candidate {
            proposal: p,
            text,
            cited: seen.len(),
            support,
            owners,
            restating,
            recalled,
            bad_ids,
            sources,
            vocab,
            coverage,
            block,
            category,
            notes,
            salience,
        }
    }
}

impl Candidate<'_> {
    /// The statements its support, sessions and days are counted over: those that say it
    /// again ([`Candidate::restating`]); when none does alone (a model drew it from several
    /// statements), it rests on one, the first cited: said once.
    pub fn establishing(&self) -> Vec<&EventView> {
        if self.restating.is_empty() {
            self.owners.iter().take(1).copied().collect()
        } else {
            self.restating.clone()
        }
    }
}

/// The block and category of a proposal, with a note for each that took its default.
/// These are optional fields, not gates: a missing or malformed category is classified by
/// the phrase rules; a missing or unknown block is the block of the category
/// (identity, preferences, commitments: human; event: episodes; persona: persona), else
/// the phrase rules' block, exactly as the offline reflector sorts its proposals.
pub fn defaults(p: &Proposal, text: &str) -> (Block, String, Vec<String>) {
    let mut notes = Vec::new();
    let given = p.category.trim().to_lowercase();
    let (ruled_category, ruled_block) = classify(text);
    let category = if given.is_empty() {
        notes.push(format!(
            "no category given: {ruled_category}, by the phrase rules"
        ));
        ruled_category.to_string()
    } else if given
        .chars()
        .all(|ch| ch.is_ascii_lowercase() || ch == '_' || ch == '-')
        && given.len() <= 32
    {
        given
    } else {
        notes.push(format!(
            "category {:?} is not a lower-case word: {ruled_category}, by the phrase rules",
            p.category
        ));
        ruled_category.to_string()
    };
    let block = match Block::parse(p.block.trim().to_lowercase().as_str()) {
        Some(b) => b,
        None => {
            let (b, how) = match crate::schema::block_of_category(&category) {
                Some(b) => (b, format!("from category {category}")),
                None => (ruled_block, "by the phrase rules".to_string()),
            };
            notes.push(if p.block.trim().is_empty() {
                format!("no block given: {}, {how}", b.as_str())
            } else {
                format!(
                    "block {:?} is not a memory block: {}, {how}",
                    p.block,
                    b.as_str()
                )
            });
            b
        }
    };
    (block, category, notes)
}

/// One gate's verdict: the row a card and `dream explain` show (the measured value beside
/// the threshold), and the refusal when the gate is hard and failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub result: Option<GateResult>,
    pub refusal: Option<String>,
}

impl Check {
    /// A row: `passed` says whether the measured `value` meets the `threshold`.
    pub fn row(
        name: &str,
        value: impl ToString,
        threshold: &str,
        passed: bool,
        detail: String,
    ) -> Check {
        Check {
            result: Some(GateResult::new(name, value, threshold, passed).detail(detail)),
            refusal: None,
        }
    }

    /// Refuse with `reason` when `refuse` holds.
    pub fn refuse_if(mut self, refuse: bool, reason: impl FnOnce() -> String) -> Check {
        if refuse {
            self.refusal = Some(reason());
        }
        self
    }
}

/// A gate: a pure function of the prepared candidate and the configuration.
pub type Gate = fn(&Candidate<'_>, &Config) -> Check;

/// Every gate of S4 step 5 and S8, in the order a refusal is reported (the first hard gate
/// that fails names the refusal; every gate's row is recorded either way, and every failed
/// row says in words why it failed). Adding a gate is adding a function here, with its row
/// in the table test below. Block and category are not gates: see [`defaults`].
pub const GATES: &[Gate] = &[
    text_gate,
    ids_gate,
    recalled_gate,
    floor_gate,
    trust_gate,
    new_evidence_gate,
    secret_gate,
    entities_gate,
    coverage_gate,
    salience_gate,
];

/// The text is one line of 1..=500 characters.
pub fn text_gate(c: &Candidate<'_>, _: &Config) -> Check {
    let chars = c.text.chars().count();
    let ok = chars > 0 && chars <= MAX_TEXT_CHARS;
    Check::row(
        GateName::Text.as_str(),
        format!("{chars} chars"),
        &format!("1..={MAX_TEXT_CHARS}"),
        ok,
        String::new(),
    )
    .refuse_if(!ok, || {
        if chars == 0 {
            "the proposal has no text".into()
        } else {
            format!("text is {chars} characters, over the limit of {MAX_TEXT_CHARS}")
        }
    })
}

/// Every cited id exists and was among the events sent; at least one is cited.
pub fn ids_gate(c: &Candidate<'_>, _: &Config) -> Check {
    let ok = c.bad_ids.is_empty() && c.cited > 0;
    let value = if c.cited == 0 {
        "none cited".to_string()
    } else {
        format!("{} of {} cited unknown", c.bad_ids.len(), c.cited)
    };
    let check = Check::row(
        GateName::Ids.as_str(),
        value,
        ">= 1 cited, 0 unknown",
        ok,
        c.bad_ids.join("; "),
    );
    if c.cited == 0 {
        check.refuse_if(true, || "cites no supporting event".into())
    } else {
        check.refuse_if(!c.bad_ids.is_empty(), || {
            format!("invented supporting event id: {}", c.bad_ids.join("; "))
        })
    }
}

/// Text read back from memory is never new support (no row: it shows in `support`).
pub fn recalled_gate(c: &Candidate<'_>, _: &Config) -> Check {
    let only_recalled = c.recalled > 0 && c.support.is_empty();
    Check {
        result: only_recalled.then(|| {
            GateResult::new(
                GateName::Recalled.as_str(),
                format!("{} recalled, 0 not", c.recalled),
                ">= 1 not recalled",
                false,
            )
        }),
        refusal: None,
    }
    .refuse_if(only_recalled, || {
        format!(
            "only recalled events support it ({}); text read back from memory is never new support",
            c.recalled
        )
    })
}

/// At least `cluster.min_points` distinct supporting events for a durable block. Soft:
/// below the floor a candidate may still be kept as an episode (a single mention is
/// where an episode starts), never promoted.
pub fn floor_gate(c: &Candidate<'_>, config: &Config) -> Check {
    let floor = config.cluster.min_points;
    let support = c.restating.len();
    let row = Check::row(
        GateName::Floor.as_str(),
        support,
        &format!(">= {floor} for a durable block (else an episode at most)"),
        support >= floor,
        String::new(),
    );
    // Soft: the row says why, and nothing is refused for it.
    Check {
        result: row.result.map(|r| {
            if support < floor {
                r.why(format!(
                    "support {support} is below the floor of {floor} distinct owner statements that say it (cluster.min_points; a statement says it when it holds at least half its content words): an episode at most, never a durable block"
                ))
            } else {
                r
            }
        }),
        refusal: None,
    }
}

/// A statement of the owner's establishes it: agent messages, tool output, web pages,
/// pastes and harness text may be cited beside it as context, never alone.
pub fn trust_gate(c: &Candidate<'_>, _: &Config) -> Check {
    let establishing = c.owners.len();
    Check::row(
        GateName::Trust.as_str(),
        format!("{establishing} owner statements"),
        ">= 1",
        establishing > 0,
        String::new(),
    )
    .refuse_if(establishing == 0, || {
        if c.support.is_empty() {
            "no statement of the owner's supports it".into()
        } else {
            "no statement of the owner's supports it: agent messages, tool output, pastes and harness text are context, never the owner's words".into()
        }
    })
}

/// At least one supporting event is new to this cycle.
pub fn new_evidence_gate(c: &Candidate<'_>, _: &Config) -> Check {
    let fresh = c.owners.iter().filter(|e| e.new).count();
    Check::row(GateName::NewEvidence.as_str(), fresh, ">= 1", fresh > 0, String::new()).refuse_if(
        fresh == 0,
        || {
            if c.support.is_empty() {
                "no new evidence: no supporting event was sent".into()
            } else {
                "no new evidence: every supporting statement of the owner's was already considered by an earlier cycle"
                    .into()
            }
        },
    )
}

/// No secret detector fires on the text (S8).
pub fn secret_gate(c: &Candidate<'_>, _: &Config) -> Check {
    let secret = secrets::gate(&c.text);
    Check::row(
        GateName::Secret.as_str(),
        secret.clone().unwrap_or_else(|| "none".into()),
        "none",
        secret.is_none(),
        String::new(),
    )
    .refuse_if(secret.is_some(), || {
        format!("contains a secret ({})", secret.clone().unwrap_or_default())
    })
}

/// Every name, number, date, path, URL and identifier appears in the supporting events.
///
/// A number found only in who-and-when (an event's day, a relative date written out)
/// traces to it only as part of a date in the candidate ([`date_numbers`]): "on 3 November
/// 2026" may cite an event of that day, "3 cats" may not.
pub fn entities_gate(c: &Candidate<'_>, _: &Config) -> Check {
    let sources: Vec<&str> = c.sources.iter().map(String::as_str).collect();
    // `sources` alternates an event's text and its who-and-when (see `Candidate::new`).
    let texts: Vec<&str> = sources.iter().step_by(2).copied().collect();
    let dates = date_numbers(&c.text);
    let invented: Vec<String> = measures::entities(&c.text)
        .into_iter()
        .filter(|e| {
            if e.kind == measures::EntityKind::Number && !dates.contains(e.text.as_str()) {
                !measures::entity_present(e, &texts, &c.vocab)
            } else {
                !measures::entity_present(e, &sources, &c.vocab)
            }
        })
        .map(|e| format!("{} {:?}", e.kind.as_str(), e.text))
        .collect();
    Check::row(
        GateName::Entities.as_str(),
        format!("{} invented", invented.len()),
        "0 invented",
        invented.is_empty(),
        invented.join(", "),
    )
    .refuse_if(!invented.is_empty(), || {
        format!(
            "invented {} absent from the supporting events",
            invented.join(", ")
        )
    })
}

/// The numbers of `text` that are part of a date: a day beside a month's name ("3
/// November", "November 3rd", "the 3rd of November"), a year after one ("November
/// 2026", "November 3, 2026"), and a year alone in the brackets a relative date is
/// written out in ("last year [2022]").
pub fn date_numbers(text: &str) -> HashSet<&str> {
    static DATE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        let month = "(?:january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)";
        regex::Regex::new(&format!(
            r"(?i)\b(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{month}\b(?:\s+(?P<y1>\d{{4}}))?|\b{month}\.?\s+(?:(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\b,?\s*)?(?P<y2>\d{{4}})?|\[(?P<y3>\d{{4}})\]"
        ))
        .expect("a valid pattern")
    });
    let mut out = HashSet::new();
    for caps in DATE.captures_iter(text) {
        for name in ["d1", "y1", "d2", "y2", "y3"] {
            if let Some(m) = caps.name(name) {
                out.insert(m.as_str());
            }
        }
    }
    out
}

/// Content-word coverage against the supporting events is at least `promote.min_coverage`
/// (below 1.0 the candidate may still go to review, with the untraceable words shown).
pub fn coverage_gate(c: &Candidate<'_>, config: &Config) -> Check {
    let cov = &c.coverage;
    let min_cov = config.promote.min_coverage;
    Check::row(
        GateName::Coverage.as_str(),
        format!("{:.3}", cov.value),
        &format!(">= {min_cov} (1.0 to auto-promote)"),
        cov.value >= min_cov,
        if cov.missing.is_empty() {
            String::new()
        } else {
            format!("untraceable: {}", cov.missing.join(", "))
        },
    )
    .refuse_if(cov.value < min_cov, || {
        format!(
            "coverage {:.3} is below min_coverage {min_cov} (untraceable: {})",
            cov.value,
            cov.missing.join(", ")
        )
    })
}

/// The statement's salience beside [`keep::KEEP`] (issue 28). Soft: routing refuses what
/// would add a line below it, while a restatement of a kept fact reinforces it whatever its
/// score. No row when nothing scored it.
pub fn salience_gate(c: &Candidate<'_>, _: &Config) -> Check {
    Check {
        result: c
            .salience
            .as_ref()
            .map(|(said, worth)| keep::row(*worth, said)),
        refusal: None,
    }
}

/// Run every gate of [`GATES`] on one proposal, its relative dates written out first.
pub fn gate_proposal(p: &Proposal, evidence: &Evidence<'_>, config: &Config) -> Gated {
    let (anchored, dates) = anchor_dates(p, evidence);
    let p = &anchored;
    let c = Candidate::new(p, evidence);
    let given = p.block.trim().to_lowercase();
    let block_value = if given == c.block.as_str() {
        given
    } else {
        format!("{} (default)", c.block.as_str())
    };
    let mut gates = vec![GateResult::new(
        GateName::Block.as_str(),
        block_value,
        "persona|human|episodes|scratch",
        true,
    )
    .detail(c.notes.join("; "))];
    if !dates.is_empty() {
        gates.push(
            GateResult::new(
                GateName::Dates.as_str(),
                format!("{} written out", dates.len()),
                "relative dates as absolute ones",
                true,
            )
            .detail(dates.join("; ")),
        );
    }
    let mut refused = None;
    for gate in GATES {
        let check = gate(&c, config);
        match (check.result, &check.refusal) {
            (Some(row), Some(why)) => gates.push(row.why(why.clone())),
            (Some(row), None) => gates.push(row),
            (None, _) => {}
        }
        if refused.is_none() {
            refused = check.refusal;
        }
    }
    let establishing = c.establishing();
    let (mut m, _independent) = support_measures(&establishing);
    m.coverage = round3(c.coverage.value);
    m.untraceable = c.coverage.missing.clone();
    let confidence = if p.confidence.is_finite() {
        p.confidence.clamp(0.0, 1.0)
    } else {
        0.0
    };
    m.confidence = round3(confidence);
    Gated {
        block: c.block,
        category: c.category.clone(),
        notes: c.notes.clone(),
        confidence: m.confidence,
        reason: p.reason.trim().to_string(),
        support: c.support.iter().map(|e| e.id.clone()).collect(),
        establishing: establishing.iter().map(|e| e.id.clone()).collect(),
        text: c.text,
        measures: m,
        gates,
        refused,
        salience: c.salience.map(|(_, s)| s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::event::Trust;

    fn ev(id: &str, day: u32, session: &str, trust: Trust, new: bool, text: &str) -> EventView {
        EventView {
            id: id.into(),
            ts: format!("2026-11-{day:02}T10:00:00Z").parse().unwrap(),
            session: session.into(),
            kind: "message".into(),
            trust,
            recalled: false,
            new,
            text: text.into(),
            actor: "user".into(),
        }
    }

    fn proposal(text: &str, ids: &[&str]) -> Proposal {
        Proposal {
            text: text.into(),
            category: "identity".into(),
            block: "human".into(),
            supporting_event_ids: ids.iter().map(|s| s.to_string()).collect(),
            confidence: 0.9,
            reason: "r".into(),
        }
    }

    fn events() -> Vec<EventView> {
        vec![
            ev(
                "e1",
                1,
                "s1",
                Trust::Owner,
                false,
                "I live in Lisbon with 2 cats.",
            ),
            ev(
                "e2",
                2,
                "s2",
                Trust::Owner,
                true,
                "Still in Lisbon, still 2 cats.",
            ),
            ev(
                "e3",
                2,
                "s2",
                Trust::External,
                true,
                "Lisbon weather: sunny",
            ),
            ev("e4", 2, "s3", Trust::Tool, true, "Lisbon 2 cats"),
        ]
    }

    /// A stand-in for the engine's scorer: a statement about where the owner lives is
    /// salient, anything else is not.
    struct Keyword;

    impl Scorer for Keyword {
        fn score(&self, statement: &str) -> Option<f32> {
            Some(if statement.starts_with("I live") {
                0.9
            } else {
                0.1
            })
        }
    }

    #[test]
    fn the_salience_row_scores_the_statement_not_the_line() {
        let evs = events();
        let none = HashSet::new();
        let evidence = Evidence::new(&evs, &none).scored_by(&Keyword);
        let g = gate_proposal(
            &proposal("Hey Ana, I live in Lisbon with 2 cats.", &["e1"]),
            &evidence,
            &Config::default(),
        );
        assert_eq!(g.salience.map(|w| w.score), Some(0.9));
        let row = g.gates.iter().find(|r| r.gate == "salience").unwrap();
        assert!(row.passed && row.value == "0.900", "{row:?}");
        // Without a scorer: no row, no score.
        let g = run(proposal("I live in Lisbon.", &["e1"]));
        assert_eq!(g.salience, None);
        assert!(!g.gates.iter().any(|r| r.gate == "salience"));
    }

    fn run(p: Proposal) -> Gated {
        let evs = events();
        let mut elsewhere = HashSet::new();
        elsewhere.insert("e9".to_string());
        gate_proposal(&p, &Evidence::new(&evs, &elsewhere), &Config::default())
    }

    #[test]
    fn a_traceable_proposal_passes_with_its_measures() {
        let g = run(proposal("I live in Lisbon with 2 cats.", &["e1", "e2"]));
        assert_eq!(g.refused, None);
        assert_eq!(
            (g.measures.support, g.measures.sessions, g.measures.days),
            (2, 2, 2)
        );
        assert_eq!(g.measures.coverage, 1.0);
    }

    #[test]
    fn each_hard_gate_refuses_for_its_own_reason() {
        let table: Vec<(Proposal, &str)> = vec![
            (
                proposal("I live in Lisbon.", &["e1", "ghost"]),
                "ghost does not exist",
            ),
            (
                proposal("I live in Lisbon.", &["e1", "e9"]),
                "e9 exists but was not among the events sent",
            ),
            (
                proposal("I live in Porto.", &["e1", "e2"]),
                "invented name \"Porto\"",
            ),
            (
                proposal("I live in Lisbon with 3 cats.", &["e1", "e2"]),
                "invented number \"3\"",
            ),
            (
                proposal("Lisbon weather is sunny", &["e3", "e4"]),
                "never the owner's words",
            ),
            (
                proposal("My key is AKIAIOSFODNN7EXAMPLE in Lisbon", &["e1", "e2"]),
                "contains a secret (aws-access-key)",
            ),
            (
                proposal("Lisbon cats adore sardines and fado music", &["e1", "e2"]),
                "coverage 0.333 is below min_coverage 0.5",
            ),
            (
                proposal("I live in Lisbon.", &[]),
                "cites no supporting event",
            ),
        ];
        for (p, want) in table {
            let g = run(p.clone());
            let reason = g.refused.unwrap_or_default();
            assert!(
                reason.contains(want),
                "{:?}: got {reason:?}, want {want:?}",
                p.text
            );
        }
    }

    /// One row per gate function: a proposal it passes, one it refuses, and the refusal.
    #[test]
    fn every_gate_function_passes_and_refuses_on_its_own() {
        let table: Vec<(&str, Gate, Proposal, Proposal, &str)> = vec![
            (
                "text",
                text_gate,
                proposal("I live in Lisbon.", &["e1"]),
                proposal("  ", &["e1"]),
                "has no text",
            ),
            (
                "ids",
                ids_gate,
                proposal("I live in Lisbon.", &["e1"]),
                proposal("I live in Lisbon.", &["e1", "nope"]),
                "nope does not exist",
            ),
            (
                "recalled",
                recalled_gate,
                proposal("I live in Lisbon.", &["e1"]),
                proposal("I live in Lisbon.", &["r1"]),
                "only recalled events",
            ),
            (
                "floor",
                floor_gate,
                proposal("I live in Lisbon.", &["e1", "e2"]),
                proposal("I live in Lisbon.", &["e1"]),
                "", // soft: below the floor is an episode at most, not a refusal
            ),
            (
                "trust",
                trust_gate,
                proposal("I live in Lisbon.", &["e1", "e3"]),
                proposal("Lisbon weather", &["e3", "e4"]),
                "never the owner's words",
            ),
            (
                "new evidence",
                new_evidence_gate,
                proposal("I live in Lisbon.", &["e1", "e2"]),
                proposal("I live in Lisbon.", &["e1"]),
                "no new evidence",
            ),
            (
                "secret",
                secret_gate,
                proposal("I live in Lisbon.", &["e1"]),
                proposal("key AKIAIOSFODNN7EXAMPLE", &["e1"]),
                "contains a secret",
            ),
            (
                "entities",
                entities_gate,
                proposal("I live in Lisbon.", &["e1"]),
                proposal("I live in Porto.", &["e1"]),
                "invented name \"Porto\"",
            ),
            (
                "coverage",
                coverage_gate,
                proposal("I live in Lisbon.", &["e1"]),
                proposal("Lisbon cats adore sardines and fado", &["e1"]),
                "below min_coverage",
            ),
            (
                "salience",
                salience_gate,
                proposal("I live in Lisbon.", &["e1"]),
                proposal("Still in Lisbon, still 2 cats.", &["e2"]),
                "", // soft: routing refuses what would add a line below KEEP
            ),
        ];
        assert_eq!(table.len(), GATES.len(), "a row for every gate in GATES");
        let mut evs = events();
        evs.push(EventView {
            recalled: true,
            ..ev("r1", 2, "s9", Trust::Owner, true, "I live in Lisbon.")
        });
        let none = HashSet::new();
        let scorer = Keyword;
        let evidence = Evidence::new(&evs, &none).scored_by(&scorer);
        let config = Config::default();
        for (name, gate, good, bad, want) in table {
            let pass = gate(&Candidate::new(&good, &evidence), &config);
            assert_eq!(pass.refusal, None, "{name} refused {:?}", good.text);
            if let Some(row) = &pass.result {
                assert!(row.passed, "{name}: {row:?}");
            }
            let fail = gate(&Candidate::new(&bad, &evidence), &config);
            if want.is_empty() {
                assert_eq!(fail.refusal, None, "{name} is soft");
                assert!(fail.result.as_ref().is_some_and(|r| !r.passed), "{name}");
                continue;
            }
            let reason = fail.refusal.unwrap_or_default();
            assert!(
                reason.contains(want),
                "{name}: got {reason:?}, want {want:?}"
            );
            if let Some(row) = &fail.result {
                assert!(!row.passed, "{name}: {row:?}");
                // The heartbeat and explain read a row by its typed name.
                assert_eq!(
                    GateName::parse(&row.gate).map(GateName::as_str),
                    Some(name),
                    "{name} is a GateName"
                );
            }
        }
    }

    #[test]
    fn a_missing_or_unknown_block_or_category_takes_its_default_with_a_note() {
        let bare = Proposal {
            block: String::new(),
            category: String::new(),
            ..proposal("I live in Lisbon with 2 cats.", &["e1", "e2"])
        };
        let g = run(bare);
        assert_eq!(
            g.refused, None,
            "a good verbatim fact is not refused for its block"
        );
        assert_eq!((g.block, g.category.as_str()), (Block::Human, "identity"));
        assert_eq!(
            g.notes,
            vec![
                "no category given: identity, by the phrase rules",
                "no block given: human, from category identity"
            ]
        );
        let row = &g.gates[0];
        assert_eq!(
            (row.gate.as_str(), row.value.as_str()),
            ("block", "human (default)")
        );
        assert!(row.detail.contains("no block given"), "{row:?}");

        let odd = Proposal {
            block: "kitchen".into(),
            category: "event".into(),
            ..proposal("I live in Lisbon.", &["e1", "e2"])
        };
        let g = run(odd);
        assert_eq!((g.refused, g.block), (None, Block::Episodes));
        assert_eq!(
            g.notes,
            vec!["block \"kitchen\" is not a memory block: episodes, from category event"]
        );
        let g = run(Proposal {
            category: "Where I Live!".into(),
            block: "HUMAN".into(),
            ..proposal("I live in Lisbon.", &["e1", "e2"])
        });
        assert_eq!((g.block, g.category.as_str()), (Block::Human, "identity"));
        assert!(
            g.notes[0].contains("is not a lower-case word: identity"),
            "{:?}",
            g.notes
        );
        assert_eq!(
            g.gates[0].value, "human",
            "a block given in capitals is that block"
        );
    }

    #[test]
    fn every_failed_gate_says_why_in_words() {
        let g = run(proposal("I live in Porto with 3 cats.", &[]));
        assert_eq!(g.refused.as_deref(), Some("cites no supporting event"));
        let failed: Vec<(&str, &str)> = g
            .gates
            .iter()
            .filter(|r| !r.passed)
            .map(|r| (r.gate.as_str(), r.why.as_str()))
            .collect();
        let names: Vec<&str> = failed.iter().map(|f| f.0).collect();
        assert_eq!(
            names,
            vec![
                "ids",
                "floor",
                "trust",
                "new evidence",
                "entities",
                "coverage"
            ]
        );
        assert!(failed.iter().all(|(_, why)| !why.is_empty()), "{failed:?}");
        let ids = g.gates.iter().find(|r| r.gate == "ids").unwrap();
        assert_eq!(ids.value, "none cited");
        assert!(failed[1].1.contains("support 0 is below the floor of 2"));
        assert!(
            failed[4].1.contains("invented name \"Porto\""),
            "{failed:?}"
        );
    }

    #[test]
    fn old_evidence_alone_is_refused() {
        let evs = vec![
            ev("e1", 1, "s1", Trust::Owner, false, "I live in Lisbon."),
            ev("e2", 2, "s2", Trust::Owner, false, "I live in Lisbon."),
        ];
        let none = HashSet::new();
        let g = gate_proposal(
            &proposal("I live in Lisbon.", &["e1", "e2"]),
            &Evidence::new(&evs, &none),
            &Config::default(),
        );
        assert!(g.refused.unwrap().starts_with("no new evidence"));
    }

    #[test]
    fn the_speaker_the_owner_s_names_and_the_day_are_traceable() {
        let mut said = ev(
            "e1",
            8,
            "s1",
            Trust::Owner,
            true,
            "I went to a support group yesterday and met Andrew there.",
        );
        said.actor = "Caroline".into();
        said.ts = "2023-05-08T13:56:00Z".parse().unwrap();
        let evs = vec![said];
        let none = HashSet::new();
        let names = vec!["Melanie".to_string()];
        let evidence = Evidence::new(&evs, &none).owned_by(&names);
        let config = Config::default();
        // The speaker's name, the day it was said, and a relative date written out.
        let g = gate_proposal(
            &proposal(
                "Caroline went to a support group yesterday and met Andrew there.",
                &["e1"],
            ),
            &evidence,
            &config,
        );
        assert_eq!(g.refused, None, "{:?}", g.gates);
        assert_eq!(
            g.text,
            "Caroline went to a support group yesterday [7 May 2023] and met Andrew there."
        );
        assert_eq!(g.measures.coverage, 1.0, "{:?}", g.measures.untraceable);
        assert!(g
            .gates
            .iter()
            .any(|r| r.gate == "dates" && r.detail.contains("on 7 May 2023")));
        let g = gate_proposal(
            &proposal(
                "On Monday 8 May 2023 Caroline told Melanie she met Andrew.",
                &["e1"],
            ),
            &evidence,
            &config,
        );
        assert_eq!(g.refused, None, "{:?}", g.gates);
        // A name that is neither said, the speaker, nor the owner's is still invented; so
        // is a day no event names.
        let g = gate_proposal(
            &proposal("Caroline met Audrey at the support group.", &["e1"]),
            &evidence,
            &config,
        );
        assert!(g.refused.unwrap().contains("invented name \"Audrey\""));
        let g = gate_proposal(
            &proposal("Caroline went to a support group on 3 May 2023.", &["e1"]),
            &evidence,
            &config,
        );
        assert!(g.refused.unwrap().contains("invented number \"3\""));
        // "last year" is written out as the year alone, and traces to the day it was said;
        // a year in brackets that no relative date gives is still invented.
        let mut last_year = ev(
            "e2",
            8,
            "s1",
            Trust::Owner,
            true,
            "I painted that lake sunrise last year!",
        );
        last_year.actor = "Caroline".into();
        last_year.ts = "2023-05-08T13:56:00Z".parse().unwrap();
        let evs2 = vec![last_year];
        let evidence2 = Evidence::new(&evs2, &none).owned_by(&names);
        let g = gate_proposal(
            &proposal("Caroline: I painted that lake sunrise last year!", &["e2"]),
            &evidence2,
            &config,
        );
        assert_eq!(g.refused, None, "{:?}", g.gates);
        assert_eq!(
            g.text,
            "Caroline: I painted that lake sunrise last year [2022]!"
        );
        let g = gate_proposal(
            &proposal("Caroline: I painted that lake sunrise [2019]!", &["e2"]),
            &evidence2,
            &config,
        );
        assert!(
            g.refused
                .as_deref()
                .is_some_and(|r| r.contains("invented number \"2019\"")),
            "{:?}",
            g.refused
        );
        // The day's number traces only as part of a date: 8 cats are not 8 May.
        let g = gate_proposal(
            &proposal("Caroline met Andrew and his 8 cats.", &["e1"]),
            &evidence,
            &config,
        );
        assert!(
            g.refused
                .as_deref()
                .is_some_and(|r| r.contains("invented number \"8\"")),
            "{:?}",
            g.refused
        );
        assert_eq!(
            date_numbers("on 8 May 2023, May 9th, the 10th of May and May 2024; 8 cats")
                .into_iter()
                .collect::<BTreeSet<_>>(),
            BTreeSet::from(["8", "2023", "9", "10", "2024"])
        );
    }

    #[test]
    fn partial_coverage_passes_with_the_untraceable_words_named() {
        let g = run(proposal(
            "I live in Lisbon with 2 cats and a garden.",
            &["e1", "e2"],
        ));
        assert_eq!(g.refused, None);
        assert_eq!(g.measures.untraceable, vec!["garden"]);
        assert_eq!(g.measures.coverage, 0.8);
    }
}
