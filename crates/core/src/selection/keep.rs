//! What salience decides (issue 28): which statements earn a line in memory or a person's
//! time, how many a session may add, and which cards a person is asked about first.
//!
//! The score itself is [`super::salience`]'s; this module says what it is applied to and
//! what follows from it, as pure functions:
//!
//! - [`statement`]: the words a line says, as the person said them: an episode's day, a
//!   speaker's name, the days the gates wrote beside relative dates and a lead-in left
//!   out; and [`statements`], beside a model's paraphrase the owner's sentence it rests on.
//!   The cycle scores a candidate so, and `dream verify` and `dream explain` score a stored
//!   line and its supporting events the same way, so the three agree.
//! - [`Worth`] and [`row`]: the score as a gate row (`salience`, its value beside the
//!   threshold a line asks, [`needed`]: [`KEEP`] however often it was said), with the phrase rules of what is said in passing ([`moment`]:
//!   a feeling, a status right now, a passing opinion) and of a standing instruction. A
//!   candidate that would add a line (a durable fact, an episode, a card for something said
//!   twice) and does not meet it is refused: however often a feeling, a status, a reaction,
//!   a greeting, a question or a passing opinion is said, it is not worth keeping. A
//!   restatement of a fact already kept reinforces it whatever its score (it adds support,
//!   not a line); a card for another reason (words the events do not hold, a
//!   contradiction) is a person's to decide, ranked by its score.
//! - [`session_key`] and [`over_cap`]: a session adds at most `episodes.max_per_session`
//!   new episodes, its most salient (memory grows with sessions, not with words).
//! - [`card_rank`] and [`offer`]: the review queue holds at most `review.max_new_cards`
//!   cards; a cycle tops it up, the most salient first, and the rest wait as candidates in
//!   the state until the queue drains.

use std::cmp::Ordering;

use sha2::{Digest, Sha256};

use crate::schema::GateName;
use crate::schema::{episode_body, is_speaker_name, Card, GateResult};
use crate::selection::salience;
use crate::text::phrases::lead_in;

pub use crate::selection::salience::{KEEP, SEND};

/// Scores one statement's salience: the engine embeds it with the compiled-in `minilm`
/// model and calls [`salience::score`]. `None` when it cannot (the model did not load).
pub trait Scorer {
    fn score(&self, statement: &str) -> Option<f32>;
}

/// The revision of the phrase rules a kept line is judged by beside its score (a standing
/// instruction, a statement said in passing). Raise it when they change what they call an
/// instruction, so `dream verify` checks a line an older binary kept against what its
/// commit recorded, not against rules it did not have. 2: an instruction's words must read
/// as one ("Always good to hear!", "You're the best", "You should come and join me
/// sometime" are not), and a habit ("I drink green tea every morning") is kept like one.
/// 3: a stated preference of one thing over another ("I prefer tabs over spaces") is kept
/// like one too. 4: a statement in a language these rules do not read is not judged, so
/// not kept ([`crate::text::language`]), and "don't use ..." is an instruction.
pub const RULES_REVISION: u32 = 4;

/// The compiled-in salience model's identity: the first 12 hex digits of the SHA-256 of
/// its weights and the phrase rules' revision ([`RULES_REVISION`]). A commit records it
/// beside the scores it made, so `dream verify` knows whether the binary it runs could
/// score and judge the same.
pub fn model_id() -> String {
    let mut hasher = Sha256::new();
    hasher.update(salience::WEIGHTS_JSON.as_bytes());
    hasher.update(format!("rules={RULES_REVISION}").as_bytes());
    let digest = hasher.finalize();
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// The words a line says, as its speaker said them: without an episode's day (`8 May
/// 2023, `), a speaker's name before a colon ([`is_speaker_name`], as episodes write
/// one), the days the gates wrote beside
/// relative dates (`yesterday [7 May 2023]`) and a lead-in (`Hey Mel,`). The salience model
/// was trained on such statements; an added "[7 May 2023]" would count as a date and a
/// number the person never said.
pub fn statement(line: &str) -> String {
    static BRACKETED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r" \[[^\[\]]*\d{4}[^\[\]]*\]").expect("a valid pattern")
    });
    let body = episode_body(line.trim());
    let body = match body.split_once(": ") {
        Some((speaker, rest)) if is_speaker_name(speaker) && !rest.trim().is_empty() => rest,
        _ => body,
    };
    let body = BRACKETED.replace_all(body, "");
    lead_in(&body).to_string()
}

/// The statements a candidate is scored by: its own ([`statement`]), and when a model
/// worded it (it is not one of the cited sentences), the sentence of the owner's cited
/// statements it shares the most content words with (at least one), as the person said it.
/// The model was trained on what people say; a model's third-person paraphrase ("Jon's
/// favourite dance style is contemporary") is not what it learnt from, and the person's
/// own sentence is what the candidate rests on. The candidate scores the higher of the two.
pub fn statements<'a>(text: &str, cited: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let own = statement(text);
    let want = crate::text::measures::content_tokens(&own);
    let mut best: Option<(usize, std::cmp::Reverse<usize>, String)> = None;
    for event in cited {
        for s in crate::text::phrases::sentences(event) {
            let said = lead_in(&s).trim().to_string();
            if said == own {
                return vec![own];
            }
            let shared = crate::text::measures::content_tokens(&said)
                .intersection(&want)
                .count();
            let key = (shared, std::cmp::Reverse(said.len()));
            if shared > 0 && best.as_ref().is_none_or(|b| (b.0, b.1) < key) {
                best = Some((key.0, key.1, said));
            }
        }
    }
    let mut out = vec![own];
    out.extend(best.map(|b| b.2));
    out
}

/// The most sentences of one event [`worth_sending`] scores: a message's opening says
/// whether it is about the person; a pasted log or a long tool output is not scored whole.
pub const MAX_SCORED: usize = 12;

/// Whether a model should read an event (issue 28): one of its first [`MAX_SCORED`]
/// sentences, as the person said it ([`statement`]), scores at least [`SEND`], the
/// recall-side threshold under which about a twentieth of what is worth keeping scores.
/// What scores below it (greetings, reactions, "ok", "thanks", "run it again") could not
/// become a line without being said again, and a model paid to read it proposes nothing
/// the gates would keep. Nor is a sentence in a language the rules do not read
/// ([`crate::text::language`]): it is never kept. An event the scorer cannot score is
/// sent, as before salience.
pub fn worth_sending(text: &str, scorer: &dyn Scorer) -> bool {
    let mut scored = false;
    for s in crate::text::phrases::sentences(text)
        .iter()
        .take(MAX_SCORED)
    {
        let said = statement(s);
        if said.trim().is_empty() {
            continue;
        }
        // What no rule reads is never kept, whatever a model proposes from it.
        if crate::text::language::not_english(&said).is_some() {
            scored = true;
            continue;
        }
        match scorer.score(&said) {
            Some(v) if v >= SEND => return true,
            Some(_) => scored = true,
            None => return true,
        }
    }
    !scored
}

/// The score a statement needs to add a line: [`KEEP`], however many of the owner's
/// statements support it. Repetition is evidence that something matters to the person, but
/// a reaction, a pep talk or a vague remark is said again as easily as a fact ("I love the
/// thought!", "I'm going to keep working hard on it" on five days), and a line a person
/// would delete costs more than one missing: support buys a line its block and its life
/// (durable rather than an episode), not its worth. (Before, two statements lowered the
/// bar to [`SEND`], and on LoCoMo's dev half 14 of the 31 durable facts scored below KEEP,
/// nearly all of them such remarks.)
pub fn needed() -> f32 {
    KEEP
}

/// A statement said in passing: how the speaker feels, what they are doing right now, or
/// what they think of something in passing (phrase rules, where the learned score measures
/// worse: such statements are about the person, or name a film or a dish, and score like
/// facts about a person).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    Feeling,
    Status,
    Opinion,
}

impl Moment {
    pub fn as_str(self) -> &'static str {
        match self {
            Moment::Feeling => "how the speaker feels at the moment",
            Moment::Status => "what the speaker is doing at the moment",
            Moment::Opinion => "a passing opinion of something",
        }
    }
}

/// Whether a statement only says how its speaker feels, what they are doing at this
/// moment, or what they think of something in passing ([`crate::text::phrases::feeling`],
/// [`crate::text::phrases::right_now`], [`crate::text::phrases::passing_opinion`]).
pub fn moment(statement: &str) -> Option<Moment> {
    if crate::text::phrases::feeling(statement) {
        Some(Moment::Feeling)
    } else if crate::text::phrases::right_now(statement) {
        Some(Moment::Status)
    } else if crate::text::phrases::passing_opinion(statement) {
        Some(Moment::Opinion)
    } else {
        None
    }
}

/// A statement's salience as routing reads it: its score against the threshold a line
/// asks ([`needed`]), whether it is said in passing, and whether it is a standing
/// instruction to the agent. It adds a line when it meets the threshold or is an
/// instruction ("Always run the tests before pushing": how the person wants their work
/// done, which the score, learnt mostly from conversation between people, ranks like a
/// request), and is not said in passing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Worth {
    pub score: f32,
    /// The threshold it is held to ([`needed`]; recorded, so a stored row says what it was
    /// held to when the threshold changes).
    pub needed: f32,
    pub moment: Option<Moment>,
    pub instruction: bool,
    /// What the speaker does habitually ([`crate::text::phrases::routine`]): kept whatever
    /// its score, like an instruction.
    pub habit: bool,
    /// A preference of one thing over another ([`crate::text::phrases::stated_preference`]):
    /// kept whatever its score, like an instruction.
    pub preference: bool,
    /// The language it is written in when the rules and the score cannot read it
    /// ([`crate::text::language::not_english`]): never kept, whatever its score.
    pub language: Option<&'static str>,
}

/// Whether a statement is kept whatever its score: a standing instruction, a habit or a
/// preference of one thing over another (how the person wants their work done, which the
/// score ranks like small talk). [`Worth`] records which; `dream verify` asks this of a
/// line kept below the threshold.
pub fn kept_whatever_its_score(statement: &str) -> bool {
    crate::text::phrases::instruction(statement)
        || crate::text::phrases::routine(statement)
        || crate::text::phrases::stated_preference(statement)
}

impl Worth {
    /// A statement's worth, held to the threshold a line asks.
    pub fn of(score: f32, statement: &str) -> Worth {
        Worth {
            score,
            needed: needed(),
            moment: moment(statement),
            instruction: crate::text::phrases::instruction(statement),
            habit: crate::text::phrases::routine(statement),
            preference: crate::text::phrases::stated_preference(statement),
            language: crate::text::language::not_english(statement),
        }
    }

    pub fn keeps(&self) -> bool {
        (self.score >= self.needed || self.instruction || self.habit || self.preference)
            && self.moment.is_none()
            && self.language.is_none()
    }

    /// Why it adds no line (`None` when it keeps one).
    pub fn refusal(&self) -> Option<String> {
        match self.moment {
            _ if self.keeps() => None,
            _ if self.language.is_some() => Some(format!(
                "not written in English (it reads most like {}), and dream's phrase rules and salience model read English only: not judged, so not kept (its salience {:.3} rests on its names and numbers alone)",
                self.language.unwrap_or_default(),
                self.score
            )),
            Some(m) => Some(format!(
                "said in passing ({}): not worth a line in memory or a person's time however often it is said (salience {:.3})",
                m.as_str(),
                self.score
            )),
            None => Some(format!(
                "salience {:.3} is below {} (salience::KEEP, however often it is said): not worth a line in memory or a person's time",
                self.score, self.needed,
            )),
        }
    }

    /// What the row says its threshold is.
    pub fn threshold(&self) -> String {
        format!(
            ">= {} (salience::KEEP), a standing instruction, a habit or a stated preference, and not said in passing, to add a line; a restatement reinforces whatever its score",
            self.needed
        )
    }

    /// What a kept line's commit line records of it (`dream verify` reads it back).
    pub fn note(&self) -> String {
        if self.score >= self.needed {
            format!("salience {:.3} >= {}", self.score, self.needed)
        } else {
            format!(
                "salience {:.3}, {}",
                self.score,
                if self.instruction {
                    "a standing instruction"
                } else if self.habit {
                    "a habit"
                } else {
                    "a preference"
                }
            )
        }
    }
}

/// The salience row of a statement (never a refusal by itself: routing decides, since a
/// restatement of a kept fact reinforces it whatever its score).
pub fn row(worth: Worth, statement: &str) -> GateResult {
    let r = GateResult::new(
        GateName::Salience.as_str(),
        format!("{:.3}", worth.score),
        worth.threshold(),
        worth.keeps(),
    )
    .detail(format!(
        "scored: {:?}{}",
        crate::schema::excerpt(statement, 120),
        if worth.instruction {
            "; a standing instruction: kept whatever its score"
        } else if worth.habit {
            "; a habit: kept whatever its score"
        } else if worth.preference {
            "; a stated preference: kept whatever its score"
        } else {
            ""
        }
    ));
    match worth.refusal() {
        Some(why) => r.why(why),
        None => r,
    }
}

/// The score a row records, read back (`None`: no salience row, or not a number).
pub fn recorded(gates: &[GateResult]) -> Option<f32> {
    gates
        .iter()
        .rev()
        .find(|g| g.gate == GateName::Salience.as_str())
        .and_then(|g| g.value.parse::<f32>().ok())
        .filter(|s| s.is_finite())
}

/// The session a statement counts against for `episodes.max_per_session`: its session,
/// or for an event that named none (its own pseudo-session `~id`), the day it was said,
/// so statements without a session are capped per day rather than not at all.
pub fn session_key(session: &str, day: chrono::NaiveDate) -> String {
    if session.is_empty() || session.starts_with('~') {
        format!("day {day}")
    } else {
        session.to_string()
    }
}

/// Why a new episode is over its session's cap: `kept` episodes of `session` (new in this
/// cycle or kept by earlier ones) are already in memory, each at least as salient.
pub fn over_cap(session: &str, kept: usize, max: usize, score: Option<f32>) -> Option<String> {
    (kept >= max).then(|| {
        format!(
            "session {} already added {kept} episodes, the most salient first (episodes.max_per_session = {max}){}",
            crate::schema::excerpt(session, 40),
            score.map(|s| format!("; this one scores {s:.3}")).unwrap_or_default()
        )
    })
}

/// How a card ranks for a person's attention, best first: by salience (a card without a
/// score last), then the oldest.
pub fn card_rank(a: &Card, b: &Card) -> Ordering {
    let score = |c: &Card| recorded(&c.gates).unwrap_or(-1.0);
    score(b)
        .total_cmp(&score(a))
        .then(a.created.cmp(&b.created))
        .then(a.id.cmp(&b.id))
}

/// Which of the cards a cycle would add (`candidates`: new cards and those waiting from
/// earlier cycles) are queued now: the review queue holds at most `max` cards, `pending`
/// are in it, and the best candidates ([`card_rank`]) fill the room left. Returns the
/// indices to queue and those that wait, each best first.
pub fn offer(candidates: &[&Card], pending: usize, max: usize) -> (Vec<usize>, Vec<usize>) {
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| card_rank(candidates[a], candidates[b]));
    let room = max.saturating_sub(pending);
    let wait = order.split_off(room.min(order.len()));
    (order, wait)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Block, Measures};
    use chrono::TimeZone;

    #[test]
    fn the_statement_is_what_the_person_said() {
        assert_eq!(
            statement("8 May 2023, Caroline: I went to a support group yesterday [7 May 2023]."),
            "I went to a support group yesterday."
        );
        assert_eq!(
            statement(
                "8 May 2023: Hey Mel, I sold my bike last week [the week before 8 May 2023]."
            ),
            "I sold my bike last week."
        );
        assert_eq!(
            statement("Ana Lima: I moved to Porto."),
            "I moved to Porto."
        );
        // Not a name before the colon: the line as it is.
        assert_eq!(
            statement("The build: 3 minutes on the new runner."),
            "The build: 3 minutes on the new runner."
        );
        // A model's paraphrase with no day or speaker is scored as written.
        assert_eq!(
            statement("Caroline attended a support group."),
            "Caroline attended a support group."
        );
        // The cycle scores the anchored text; the same words as before anchoring.
        assert_eq!(
            statement("Yesterday [7 May 2023] I adopted a cat."),
            statement("Yesterday I adopted a cat.")
        );
    }

    #[test]
    fn a_paraphrase_is_scored_beside_the_sentence_it_rests_on() {
        let cited = ["Hi Jon! I love contemporary dance the most. What about you?"];
        assert_eq!(
            statements("Jon's favourite dance style is contemporary.", cited),
            [
                "Jon's favourite dance style is contemporary.",
                "I love contemporary dance the most."
            ]
        );
        // A verbatim sentence is its own statement, once.
        assert_eq!(
            statements(
                "Caroline: I love contemporary dance the most.",
                ["Oh, I love contemporary dance the most."]
            ),
            ["I love contemporary dance the most."]
        );
        // Nothing shared: the candidate's own words alone.
        assert_eq!(
            statements("A walk in Porto.", ["Good morning!"]),
            ["A walk in Porto."]
        );
    }

    #[test]
    fn a_row_says_the_value_and_the_threshold_and_why_it_failed() {
        let r = row(Worth::of(0.3, "Good morning!"), "Good morning!");
        assert_eq!(
            (r.gate.as_str(), r.value.as_str(), r.passed),
            ("salience", "0.300", false)
        );
        assert!(r.threshold.contains(&KEEP.to_string()), "{r:?}");
        assert!(r.why.contains("below"), "{r:?}");
        assert_eq!(recorded(&[r]), Some(0.3));
        let r = row(
            Worth::of(KEEP, "I moved to Porto in 2021."),
            "I moved to Porto in 2021.",
        );
        assert!(r.passed && r.why.is_empty());
        // Said again, the same threshold: repetition buys a block, not worth.
        let said = "I review every pull request myself.";
        assert!(!row(Worth::of(SEND + 0.1, said), said).passed);
        assert!(!row(Worth::of(KEEP - 0.01, said), said).passed);
        assert!(row(Worth::of(KEEP, said), said).passed);
        // A standing instruction keeps whatever its score.
        let said = "Always run the test suite before pushing to main.";
        assert!(row(Worth::of(0.01, said), said).passed);
        // However well it scores, a present moment adds no line.
        let said = "I'm on the train heading home right now.";
        let r = row(Worth::of(0.9, said), said);
        assert!(!r.passed && r.why.contains("in passing"), "{r:?}");
        assert_eq!(recorded(&[r]), Some(0.9));
        assert_eq!(recorded(&[]), None);
    }

    #[test]
    fn a_feeling_a_status_right_now_or_a_passing_opinion_is_said_in_passing() {
        for (said, want) in [
            ("I'm so tired.", Some(Moment::Feeling)),
            (
                "I feel so relaxed after a long weekend.",
                Some(Moment::Feeling),
            ),
            ("Feeling a bit grumpy this evening.", Some(Moment::Feeling)),
            (
                "I'm at my desk going through emails right now.",
                Some(Moment::Status),
            ),
            ("I'm working from home today.", Some(Moment::Status)),
            (
                "I think the pasta at Luigi's was a bit salty.",
                Some(Moment::Opinion),
            ),
            ("The film was kind of long, I guess.", Some(Moment::Opinion)),
            (
                "I believe if it was Tai Lung vs Goku, then surely Goku would win",
                Some(Moment::Opinion),
            ),
            ("I bet the new series will flop.", Some(Moment::Opinion)),
            (
                "I reckon they win the league this year",
                Some(Moment::Opinion),
            ),
            ("I think the concert was last Friday.", None),
            ("I found it a bit long.", Some(Moment::Opinion)),
            (
                "I found out recently I'm allergic to cockroaches as well.",
                None,
            ),
            (
                "I found this opportunity on a fantasy lit forum and thought it'd be perfect.",
                None,
            ),
            ("I believe in second chances.", None),
            ("I think I'll move to Berlin.", None),
            ("I think my sister moves to Berlin on 3 May.", None),
            // Names, numbers, dates, intentions and news are not moments.
            ("I'm at the Lisbon office today.", None),
            ("I'm thrilled to announce I got the job.", None),
            ("I'm so excited about the trip next month.", None),
            ("I'm allergic to peanuts.", None),
            ("I'm learning to play the cello.", None),
            ("Today I signed the lease for my new flat.", None),
            ("I moved to Porto in 2021.", None),
        ] {
            assert_eq!(moment(said), want, "{said}");
        }
    }

    #[test]
    fn statements_without_a_session_are_capped_per_day() {
        let day = chrono::NaiveDate::from_ymd_opt(2026, 11, 3).unwrap();
        assert_eq!(session_key("s1", day), "s1");
        assert_eq!(session_key("~e_1", day), "day 2026-11-03");
        assert_eq!(session_key("", day), "day 2026-11-03");
        assert!(over_cap("s1", 3, 4, None).is_none());
        let why = over_cap("s1", 4, 4, Some(0.7)).unwrap();
        assert!(
            why.contains("episodes.max_per_session = 4") && why.contains("0.700"),
            "{why}"
        );
    }

    fn card(id: &str, score: Option<f32>, supersedes: bool, minute: u32) -> Card {
        let at = chrono::Utc
            .with_ymd_and_hms(2026, 11, 3, 10, minute, 0)
            .unwrap();
        Card {
            id: id.into(),
            created: at,
            updated: at,
            cycle: String::new(),
            text: id.into(),
            block: Block::Human,
            category: "identity".into(),
            confidence: 0.6,
            reason: String::new(),
            proposer_reason: String::new(),
            judge: String::new(),
            supersedes: supersedes.then(|| "f_old".to_string()),
            supersedes_text: None,
            supporting_event_ids: vec![],
            measures: Measures::default(),
            gates: score
                .map(|s| vec![row(Worth::of(s, id), id)])
                .unwrap_or_default(),
            excerpts: vec![],
            decision: None,
        }
    }

    #[test]
    fn the_queue_is_topped_up_best_first_and_the_rest_wait() {
        let cards = [
            card("c_low", Some(0.61), false, 1),
            card("c_high", Some(0.93), false, 2),
            card("c_contra", Some(0.40), true, 3),
            card("c_none", None, false, 0),
            card("c_mid", Some(0.75), false, 4),
        ];
        let refs: Vec<&Card> = cards.iter().collect();
        let (queued, waiting) = offer(&refs, 1, 4);
        let ids = |v: &[usize]| v.iter().map(|&i| cards[i].id.as_str()).collect::<Vec<_>>();
        assert_eq!(ids(&queued), ["c_high", "c_mid", "c_low"]);
        assert_eq!(ids(&waiting), ["c_contra", "c_none"]);
        // A full queue takes nothing; an empty budget neither.
        assert!(offer(&refs, 4, 4).0.is_empty());
        assert!(offer(&refs, 9, 4).0.is_empty());
        assert_eq!(offer(&refs, 0, 0).1.len(), 5);
    }

    /// Scores by keyword: a statement naming Porto is salient, "ok" scores nothing.
    struct Words;

    impl Scorer for Words {
        fn score(&self, s: &str) -> Option<f32> {
            match s {
                s if s.contains("broken") => None,
                s if s.contains("Porto") => Some(0.9),
                _ => Some(SEND / 2.0),
            }
        }
    }

    #[test]
    fn an_event_is_sent_when_one_of_its_sentences_scores_send() {
        assert!(!worth_sending("Ok thanks! Sounds good.", &Words));
        assert!(worth_sending(
            "Ok thanks! I moved to Porto in 2021.",
            &Words
        ));
        // Nothing to score, or a scorer that fails: sent, as before salience.
        assert!(worth_sending("", &Words));
        assert!(worth_sending("Ok. This is broken.", &Words));
        // A sentence in another language is never kept, so never worth a model's reading.
        assert!(!worth_sending(
            "Ok. Me mudo a Porto en marzo con mi novia y nuestros dos gatos.",
            &Words
        ));
        // Only the first sentences are scored.
        let long = format!("{}I moved to Porto.", "Ok. ".repeat(MAX_SCORED));
        assert!(!worth_sending(&long, &Words));
    }

    #[test]
    fn the_model_id_is_stable_hex() {
        let id = model_id();
        assert_eq!(id.len(), 12);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(id, model_id());
    }
}
