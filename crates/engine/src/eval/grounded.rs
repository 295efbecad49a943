//! Precision beside recall, and memory against its anchors (issue 28). Answer retention
//! alone rewards keeping everything: a line that holds an answer's words by chance counts,
//! and a date prefix alone "answers" every question whose answer is that date. So:
//!
//! - **grounded retention**: a question counts when one text holds every content word of
//!   its answer *and* a content word of the question that is neither a speaker's name nor
//!   part of the answer ("When did Caroline go to the support group?" needs "support" or
//!   "group" beside the date);
//! - **precision**: the share of lines that cite an event labelled worth keeping (a LoCoMo
//!   turn the authors' observations or a question's evidence cite);
//! - the **anchors** measured the same way: the transcript itself (a turn a line), the
//!   authors' observations and their session summaries, each dated as an episode is ("8
//!   May 2023, Caroline: ...", "8 May 2023: ..."), so that a date prefix helps every source
//!   alike. Their size is their words over the transcript's, as memory's is.
//!
//! Pure functions over a converted conversation ([`super::locomo`]); the replay is in
//! [`super`].

use std::collections::{BTreeSet, HashSet};

use serde::Serialize;

use super::locomo::{canonical_dia_ids, Conversation, Item, RETENTION_CATEGORIES};
use dream_core::text::measures;

/// A question as grounded retention asks it.
#[derive(Debug, Clone)]
pub struct Question {
    pub answer: String,
    /// Content words of the question that are neither a speaker's name nor the answer's.
    pub asked: BTreeSet<String>,
}

/// The questions retention counts (categories 1, 2, 4 with an answer that has content
/// words), with the words of each question a text must also hold.
pub fn questions(conv: &Conversation) -> Vec<Question> {
    let names: BTreeSet<String> = conv
        .speakers
        .iter()
        .flat_map(|s| measures::content_tokens(s))
        .collect();
    conv.qa
        .iter()
        .filter(|q| RETENTION_CATEGORIES.contains(&q.category))
        .filter_map(|q| {
            let answer = q.answer.as_deref()?;
            let answer_words = measures::content_tokens(answer);
            if answer_words.is_empty() {
                return None;
            }
            let asked = measures::content_tokens(&q.question)
                .into_iter()
                .filter(|w| !names.contains(w) && !answer_words.contains(w))
                .collect();
            Some(Question {
                answer: answer.to_string(),
                asked,
            })
        })
        .collect()
}

/// The event ids LoCoMo labels worth keeping: turns an observation or a question's
/// evidence cites.
pub fn worth_keeping(conv: &Conversation) -> HashSet<String> {
    let prefix = format!("{}:", conv.sample_id);
    let mut out: HashSet<String> = conv
        .qa
        .iter()
        .flat_map(|q| q.evidence.iter())
        .flat_map(|raw| canonical_dia_ids(raw))
        .map(|id| format!("{prefix}{id}"))
        .collect();
    out.extend(
        conv.observations
            .iter()
            .flat_map(|o| o.cites.iter().cloned()),
    );
    out
}

/// What one source (memory or an anchor) holds, counted.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Source {
    pub lines: usize,
    /// S6 words, stopwords included (as memory size counts them).
    pub words: usize,
    /// Questions whose answer's content words are all in one line.
    pub retained: usize,
    /// ... in one line that also holds a content word of the question.
    pub grounded: usize,
    /// Lines citing an event labelled worth keeping; `None` for a source that cites
    /// nothing (the session summaries).
    pub precise: Option<usize>,
}

impl Source {
    pub fn add(&mut self, o: &Source) {
        self.lines += o.lines;
        self.words += o.words;
        self.retained += o.retained;
        self.grounded += o.grounded;
        self.precise = match (self.precise, o.precise) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
    }
}

/// A line of a source: its text and the events it cites.
pub struct Line<'a> {
    pub text: &'a str,
    pub cites: &'a [String],
}

/// Count what some lines hold against a conversation's questions and labels.
/// `cites_events`: whether the source cites events at all (precision is `None` if not).
pub fn count(
    questions: &[Question],
    labelled: &HashSet<String>,
    lines: &[Line<'_>],
    cites_events: bool,
) -> Source {
    let vocab: Vec<measures::Vocabulary> = lines
        .iter()
        .map(|l| measures::vocabulary([l.text]))
        .collect();
    let mut s = Source {
        lines: lines.len(),
        words: lines.iter().map(|l| measures::tokens(l.text).len()).sum(),
        precise: cites_events.then(|| {
            lines
                .iter()
                .filter(|l| l.cites.iter().any(|c| labelled.contains(c)))
                .count()
        }),
        ..Source::default()
    };
    for q in questions {
        let holding: Vec<&measures::Vocabulary> = vocab
            .iter()
            .filter(|v| measures::coverage_in(&q.answer, v).value >= 1.0)
            .collect();
        if !holding.is_empty() {
            s.retained += 1;
        }
        if holding
            .iter()
            .any(|v| q.asked.iter().any(|w| v.contains(w)))
        {
            s.grounded += 1;
        }
    }
    s
}

/// Memory's facts and episodes as they are (an episode carries its day already).
pub fn memory(conv: &Conversation, facts: &[Item]) -> Source {
    let lines: Vec<Line<'_>> = facts
        .iter()
        .map(|f| Line {
            text: &f.text,
            cites: &f.support,
        })
        .collect();
    count(&questions(conv), &worth_keeping(conv), &lines, true)
}

/// The anchors of one conversation, each line dated as an episode is.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Anchors {
    pub summaries: Source,
    pub observations: Source,
    pub transcript: Source,
}

impl Anchors {
    pub fn add(&mut self, o: &Anchors) {
        self.summaries.add(&o.summaries);
        self.observations.add(&o.observations);
        self.transcript.add(&o.transcript);
    }
}

/// Measure the transcript, the observations and the session summaries of a conversation.
pub fn anchors(conv: &Conversation) -> Anchors {
    let qs = questions(conv);
    let labelled = worth_keeping(conv);
    let day = |session: u32| {
        conv.sessions
            .iter()
            .find(|s| s.number == session)
            .map(|s| s.start.date_naive())
    };
    let transcript: Vec<(String, Vec<String>)> = conv
        .sessions
        .iter()
        .flat_map(|s| {
            s.events.iter().map(|e| {
                let said = format!("{}: {}", e.actor.as_deref().unwrap_or("someone"), e.text);
                (
                    dream_core::memory::episodes::text(s.start.date_naive(), &said),
                    vec![e.id.clone()],
                )
            })
        })
        .collect();
    let dated = |a: &super::locomo::Anchor| match day(a.session) {
        Some(d) => dream_core::memory::episodes::text(d, &a.text),
        None => a.text.clone(),
    };
    let observations: Vec<(String, Vec<String>)> = conv
        .observations
        .iter()
        .map(|o| (dated(o), o.cites.clone()))
        .collect();
    let summaries: Vec<(String, Vec<String>)> = conv
        .summaries
        .iter()
        .map(|o| (dated(o), Vec::new()))
        .collect();
    let measure = |rows: &[(String, Vec<String>)], cites: bool| {
        let lines: Vec<Line<'_>> = rows
            .iter()
            .map(|(t, c)| Line { text: t, cites: c })
            .collect();
        count(&qs, &labelled, &lines, cites)
    };
    Anchors {
        summaries: measure(&summaries, false),
        observations: measure(&observations, true),
        transcript: measure(&transcript, true),
    }
}

/// The precision measures of a replay (one conversation or, summed, all): memory and its
/// anchors, with what a figure needs to be a share.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Measures {
    pub questions: usize,
    pub transcript_words: usize,
    pub events: usize,
    pub cycles: usize,
    /// New cards the cycles queued (candidates routed to review).
    pub queued: usize,
    pub tokens: u64,
    pub memory: Source,
    pub anchors: Anchors,
}

impl Measures {
    pub fn add(&mut self, o: &Measures) {
        self.questions += o.questions;
        self.transcript_words += o.transcript_words;
        self.events += o.events;
        self.cycles += o.cycles;
        self.queued += o.queued;
        self.tokens += o.tokens;
        self.memory.add(&o.memory);
        self.anchors.add(&o.anchors);
    }

    /// One row per source: memory first, then the anchors.
    pub fn rows(&self) -> Vec<Row> {
        let ratio = |a: usize, b: usize| {
            if b == 0 {
                0.0
            } else {
                measures::round3(a as f64 / b as f64)
            }
        };
        let row = |source: &'static str, s: &Source, memory: bool| Row {
            source,
            lines: s.lines,
            grounded_retention: ratio(s.grounded, self.questions),
            retention: ratio(s.retained, self.questions),
            size: ratio(s.words, self.transcript_words),
            precision: s.precise.map(|p| ratio(p, s.lines)),
            cards_per_cycle: memory.then(|| {
                if self.cycles == 0 {
                    0.0
                } else {
                    (self.queued as f64 / self.cycles as f64 * 100.0).round() / 100.0
                }
            }),
            tokens_per_event: memory.then(|| {
                if self.events == 0 {
                    0.0
                } else {
                    (self.tokens as f64 / self.events as f64 * 10.0).round() / 10.0
                }
            }),
        };
        vec![
            row("dream", &self.memory, true),
            row("session summaries", &self.anchors.summaries, false),
            row("observations", &self.anchors.observations, false),
            row("transcript", &self.anchors.transcript, false),
        ]
    }
}

/// One source's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    pub source: &'static str,
    pub lines: usize,
    /// Questions grounded in one line, of those retention counts.
    pub grounded_retention: f64,
    /// Questions whose answer's words are in one line (no question word needed).
    pub retention: f64,
    /// Words of the lines (dated) over the words of the transcript.
    pub size: f64,
    /// Lines citing an event labelled worth keeping; none for a source citing nothing.
    pub precision: Option<f64>,
    /// New review cards per cycle (memory only).
    pub cards_per_cycle: Option<f64>,
    /// Model tokens per event of the transcript (memory only).
    pub tokens_per_event: Option<f64>,
}

/// The precision measures, counted and as figures.
#[derive(Debug, Clone, Serialize)]
pub struct Precision {
    pub figures: Vec<Row>,
    pub counts: Measures,
}

impl From<Measures> for Precision {
    fn from(counts: Measures) -> Precision {
        Precision {
            figures: counts.rows(),
            counts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::locomo::parse;

    /// Two sessions; a temporal question whose answer is a session's date, so a date
    /// prefix alone would hold it.
    const CONV: &str = r#"[{
      "sample_id": "conv-g",
      "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
          {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben!"},
          {"speaker": "Ana", "dia_id": "D1:2", "text": "I adopted a grey cat named Pixel."}
        ],
        "session_2_date_time": "3:00 pm on 9 May, 2023",
        "session_2": [
          {"speaker": "Ben", "dia_id": "D2:1", "text": "I sold my bike."}
        ]
      },
      "observation": {
        "session_1_observation": {"Ana": [["Ana adopted a grey cat named Pixel.", "D1:2"]]},
        "session_2_observation": {"Ben": [["Ben sold his bike.", ["D2:1"]]]}
      },
      "session_summary": {"session_1_summary": "Ana told Ben about her new cat."},
      "qa": [
        {"question": "What is the name of Ana's cat?", "answer": "Pixel", "evidence": ["D1:2"], "category": 4},
        {"question": "When did Ana adopt the cat?", "answer": "8 May 2023", "evidence": ["D1:2"], "category": 2},
        {"question": "When did Ben sell his bike?", "answer": "9 May 2023", "evidence": ["D2:1"], "category": 2}
      ]
    }]"#;

    fn item(text: &str, cites: &[&str]) -> Item {
        Item {
            text: text.into(),
            support: cites.iter().map(|c| c.to_string()).collect(),
            episode: true,
        }
    }

    #[test]
    fn a_date_prefix_alone_answers_nothing() {
        let c = &parse(CONV).unwrap()[0];
        // Holds "8 May 2023" by its prefix but no word of the question: retained, not
        // grounded. "Pixel" with "name"/"cat": grounded.
        let m = memory(
            c,
            &[
                item("8 May 2023, Ana: Hi Ben!", &["conv-g:D1:1"]),
                item("Ana: My cat is Pixel.", &["conv-g:D1:2"]),
            ],
        );
        assert_eq!((m.lines, m.retained, m.grounded), (2, 2, 1));
        // Precision: one of the two lines cites a labelled turn (D1:1 is cited by nothing).
        assert_eq!(m.precise, Some(1));
        let m = memory(
            c,
            &[item(
                "8 May 2023, Ana: I adopted a grey cat named Pixel.",
                &["conv-g:D1:2"],
            )],
        );
        assert_eq!((m.retained, m.grounded, m.precise), (2, 2, Some(1)));
    }

    #[test]
    fn the_anchors_are_dated_and_measured_the_same_way() {
        let c = &parse(CONV).unwrap()[0];
        assert_eq!(c.observations.len(), 2);
        assert_eq!(c.observations[1].cites, vec!["conv-g:D2:1"]);
        assert_eq!(c.summaries.len(), 1);
        let a = anchors(c);
        // The transcript: every turn, dated; all three questions grounded.
        assert_eq!((a.transcript.lines, a.transcript.grounded), (3, 3));
        assert_eq!(a.transcript.precise, Some(2));
        // Observations cite labelled turns by construction; both dated questions hold.
        assert_eq!(
            (a.observations.grounded, a.observations.precise),
            (3, Some(2))
        );
        // The summary names no cat's name and cites nothing: the date question only.
        assert_eq!(a.summaries.precise, None);
        assert_eq!((a.summaries.retained, a.summaries.grounded), (1, 1));
        let mut sum = Anchors::default();
        sum.add(&a);
        sum.add(&a);
        assert_eq!(sum.summaries.precise, None);
        assert_eq!(sum.transcript.precise, Some(4));
    }

    #[test]
    fn speakers_names_and_the_answers_words_do_not_ground() {
        let c = &parse(CONV).unwrap()[0];
        let q = questions(c);
        assert_eq!(q.len(), 3);
        assert!(!q[0].asked.contains("ana"), "{:?}", q[0].asked);
        assert!(q[0].asked.contains("cat") && q[0].asked.contains("name"));
        // "Ana: Pixel" holds the answer and a speaker's name only.
        let m = memory(c, &[item("Ana: Pixel.", &[])]);
        assert_eq!((m.retained, m.grounded), (1, 0));
    }
}
