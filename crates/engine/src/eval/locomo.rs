//! LoCoMo ("Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024) as a
//! replay: the conversion of its conversations into dream events, and the quality
//! measures computed over what the replay left in memory. Pure functions: the replay
//! itself (repositories, cycles) is in [`super`].
//!
//! Conversion: one event per turn, id `<sample_id>:<dia_id>`, `ts` the session's date plus
//! 30 seconds per turn, kind `message`, session `<sample_id>:S<n>`, actor the speaker,
//! trust `owner` (both speakers are people), text the turn's text with the shared image's
//! caption on a line of its own when there is one. Sessions are grouped by calendar date:
//! a timer runs one evening cycle per date.
//!
//! Measures (S6 normalisation throughout; none needs a model):
//! - answer retention: questions of categories 1, 2 and 4 whose answer's content tokens
//!   all appear in one durable fact (and, beside it, in one fact or pending card);
//! - memory size: words of the durable facts as a share of the transcript's words;
//! - evidence recall: the share of the questions' evidence turns cited as supporting
//!   events by some fact or card, beside the average number of events a fact cites;
//! - traceability: the share of facts whose content tokens all appear in the events they
//!   cite (must be 1.0).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::LazyLock;

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use regex::Regex;
use serde::Serialize;
use serde_json::Value;

use dream_core::sources::event::{Event, Trust};
use dream_core::text::measures;

/// Seconds between two turns of a session.
const TURN_SECONDS: i64 = 30;
/// Question categories answer retention is measured on (multi-hop, temporal, single-hop).
pub const RETENTION_CATEGORIES: &[u64] = &[1, 2, 4];

/// One conversation, converted.
#[derive(Debug, Clone)]
pub struct Conversation {
    pub sample_id: String,
    /// The two speakers (`speaker_a`, `speaker_b`).
    pub speakers: Vec<String>,
    /// Sessions in time order.
    pub sessions: Vec<Session>,
    pub qa: Vec<Qa>,
    /// Session keys that have a date but no turns, or turns that could not be used.
    pub skipped: Vec<String>,
    /// The authors' observations (one per statement, citing the turns it rests on) and
    /// their session summaries (citing nothing): the anchors memory is measured against
    /// ([`super::grounded`]). Reference material, never input to a replay.
    pub observations: Vec<Anchor>,
    pub summaries: Vec<Anchor>,
}

/// A text of the authors' about a session: an observation or a session summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Anchor {
    pub session: u32,
    pub text: String,
    /// Event ids of the turns it cites (`<sample_id>:D<s>:<t>`).
    pub cites: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Session {
    pub number: u32,
    pub start: DateTime<Utc>,
    pub events: Vec<Event>,
}

#[derive(Debug, Clone)]
pub struct Qa {
    pub question: String,
    /// `None` for adversarial questions (category 5), which have no answer.
    pub answer: Option<String>,
    /// Evidence turn ids as given (some are malformed).
    pub evidence: Vec<String>,
    pub category: u64,
}

impl Conversation {
    /// Every event, oldest first.
    pub fn events(&self) -> impl Iterator<Item = &Event> {
        self.sessions.iter().flat_map(|s| s.events.iter())
    }

    /// Sessions grouped by date, each with the clock of that date's evening cycle: 21:00,
    /// or a minute after the date's last turn when a session runs later.
    pub fn evenings(&self) -> Vec<(DateTime<Utc>, Vec<&Session>)> {
        let mut by_date: BTreeMap<NaiveDate, Vec<&Session>> = BTreeMap::new();
        for s in &self.sessions {
            by_date.entry(s.start.date_naive()).or_default().push(s);
        }
        by_date
            .into_iter()
            .map(|(date, sessions)| {
                let evening = date
                    .and_time(NaiveTime::from_hms_opt(21, 0, 0).expect("a valid time"))
                    .and_utc();
                let last = sessions
                    .iter()
                    .flat_map(|s| s.events.last())
                    .map(|e| e.ts + Duration::minutes(1))
                    .max()
                    .unwrap_or(evening);
                (evening.max(last), sessions)
            })
            .collect()
    }
}

static DATE_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})\s*$")
        .expect("a valid regex")
});

/// "1:56 pm on 8 May, 2023" as a UTC time.
pub fn parse_date(s: &str) -> Option<DateTime<Utc>> {
    let c = DATE_RE.captures(s)?;
    let mut hour: u32 = c[1].parse().ok()?;
    let minute: u32 = c[2].parse().ok()?;
    let pm = c[3].eq_ignore_ascii_case("pm");
    if hour == 12 {
        hour = 0;
    }
    if pm {
        hour += 12;
    }
    let text = format!("{} {} {} {hour:02}:{minute:02}", &c[4], &c[5], &c[6]);
    NaiveDateTime::parse_from_str(&text, "%d %B %Y %H:%M")
        .ok()
        .map(|t| t.and_utc())
}

static EVIDENCE_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^D:?0*(\d+):0*(\d+)$").expect("a valid regex"));

/// Evidence or turn ids in one canonical form (`D<session>:<turn>`, no leading zeros);
/// several ids in one string are split. Malformed pieces give nothing.
pub fn canonical_dia_ids(raw: &str) -> Vec<String> {
    raw.split([';', ',', ' '])
        .filter(|p| !p.trim().is_empty())
        .filter_map(|p| {
            EVIDENCE_RE
                .captures(p.trim())
                .map(|c| format!("D{}:{}", &c[1], &c[2]))
        })
        .collect()
}

/// A scalar JSON value as text (answers are strings or numbers).
fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Parse a LoCoMo file (a JSON array of conversations) and convert every conversation.
pub fn parse(text: &str) -> Result<Vec<Conversation>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let items = value
        .as_array()
        .ok_or("not a LoCoMo file: expected a JSON array of conversations")?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| convert(item).map_err(|e| format!("conversation {}: {e}", i + 1)))
        .collect()
}

/// Convert one conversation object.
pub fn convert(item: &Value) -> Result<Conversation, String> {
    let sample_id = item["sample_id"]
        .as_str()
        .ok_or("missing `sample_id`")?
        .to_string();
    let conv = item["conversation"]
        .as_object()
        .ok_or("missing the `conversation` object")?;
    let speakers: Vec<String> = ["speaker_a", "speaker_b"]
        .iter()
        .filter_map(|k| conv.get(*k).and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    let mut sessions = Vec::new();
    let mut skipped = Vec::new();
    for (key, value) in conv {
        let Some(n) = key
            .strip_prefix("session_")
            .and_then(|rest| rest.strip_suffix("_date_time"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Some(turns) = conv.get(&format!("session_{n}")).and_then(Value::as_array) else {
            skipped.push(format!("session_{n} (a date but no turns)"));
            continue;
        };
        let date = value.as_str().unwrap_or_default();
        let start = parse_date(date).ok_or_else(|| {
            format!("session_{n}_date_time {date:?} is not a date like \"1:56 pm on 8 May, 2023\"")
        })?;
        let mut events = Vec::new();
        for (k, turn) in turns.iter().enumerate() {
            let dia = turn["dia_id"].as_str().unwrap_or_default();
            let Some(dia) = canonical_dia_ids(dia).into_iter().next() else {
                skipped.push(format!("session_{n} turn {} (no dia_id)", k + 1));
                continue;
            };
            let mut text = turn["text"].as_str().unwrap_or_default().trim().to_string();
            if let Some(caption) = turn["blip_caption"]
                .as_str()
                .filter(|c| !c.trim().is_empty())
            {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&format!("[shared an image: {}]", caption.trim()));
            }
            if text.is_empty() {
                skipped.push(format!("{dia} (no text)"));
                continue;
            }
            let speaker = turn["speaker"].as_str().unwrap_or("unknown");
            let (text, _) = dream_core::sources::secrets::redact(&text);
            events.push(Event {
                id: format!("{sample_id}:{dia}"),
                ts: start + Duration::seconds(TURN_SECONDS * k as i64),
                kind: "message".into(),
                text,
                session: Some(format!("{sample_id}:S{n}")),
                actor: Some(speaker.to_string()),
                source: Some("locomo".into()),
                trust: Trust::Owner,
                recalled: false,
                meta: None,
            });
        }
        sessions.push(Session {
            number: n,
            start,
            events,
        });
    }
    sessions.sort_by_key(|s| (s.start, s.number));
    let qa = item["qa"]
        .as_array()
        .map(|qs| {
            qs.iter()
                .map(|q| Qa {
                    question: q["question"].as_str().unwrap_or_default().to_string(),
                    answer: as_text(&q["answer"]),
                    evidence: q["evidence"]
                        .as_array()
                        .map(|e| {
                            e.iter()
                                .filter_map(|x| x.as_str().map(str::to_string))
                                .collect()
                        })
                        .unwrap_or_default(),
                    category: q["category"].as_u64().unwrap_or(0),
                })
                .collect()
        })
        .unwrap_or_default();
    let (observations, summaries) = anchors(item, &sample_id);
    Ok(Conversation {
        sample_id,
        speakers,
        sessions,
        qa,
        skipped,
        observations,
        summaries,
    })
}

/// The session number of a key such as `session_3_observation` or `session_3_summary`.
fn session_of(key: &str, suffix: &str) -> Option<u32> {
    key.strip_prefix("session_")?
        .strip_suffix(suffix)?
        .parse()
        .ok()
}

/// The authors' observations and session summaries of one conversation, in session
/// order; an observation's evidence (one id, several, or a list) is read as the turns it
/// cites. Anything not shaped so is left out.
fn anchors(item: &Value, sample_id: &str) -> (Vec<Anchor>, Vec<Anchor>) {
    let mut observations = Vec::new();
    for (key, by_speaker) in item["observation"].as_object().into_iter().flatten() {
        let Some(session) = session_of(key, "_observation") else {
            continue;
        };
        for (_, items) in by_speaker.as_object().into_iter().flatten() {
            for o in items.as_array().into_iter().flatten() {
                let text = o[0].as_str().unwrap_or_default().trim();
                let raw: Vec<&str> = match &o[1] {
                    Value::String(s) => vec![s.as_str()],
                    Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                    _ => Vec::new(),
                };
                if text.is_empty() {
                    continue;
                }
                observations.push(Anchor {
                    session,
                    text: text.to_string(),
                    cites: raw
                        .iter()
                        .flat_map(|r| canonical_dia_ids(r))
                        .map(|d| format!("{sample_id}:{d}"))
                        .collect(),
                });
            }
        }
    }
    let mut summaries = Vec::new();
    for (key, text) in item["session_summary"].as_object().into_iter().flatten() {
        let (Some(session), Some(text)) = (session_of(key, "_summary"), text.as_str()) else {
            continue;
        };
        if !text.trim().is_empty() {
            summaries.push(Anchor {
                session,
                text: text.trim().to_string(),
                cites: Vec::new(),
            });
        }
    }
    observations.sort_by_key(|a| a.session);
    summaries.sort_by_key(|a| a.session);
    (observations, summaries)
}

/// A fact, an episode or a pending card as the measures see it.
#[derive(Debug, Clone)]
pub struct Item {
    pub text: String,
    pub support: Vec<String>,
    /// An episode (memory/episodes.md) rather than a durable fact.
    pub episode: bool,
}

/// The quality figures of one conversation (or, summed, of all).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Counts {
    /// Questions of categories 1, 2, 4 with an answer that has content words.
    pub questions: usize,
    /// ... whose answer is in one durable fact.
    pub retained_in_facts: usize,
    /// ... whose answer is in one durable fact or one episode.
    pub retained_with_episodes: usize,
    /// ... whose answer is in one fact, episode or pending card.
    pub retained_with_cards: usize,
    /// Durable facts (persona, human, scratch).
    pub facts: usize,
    /// Episodes (memory/episodes.md).
    pub episodes: usize,
    pub cards: usize,
    pub memory_words: usize,
    pub transcript_words: usize,
    /// Distinct evidence turns of all questions that point at a turn of the conversation.
    pub evidence_turns: usize,
    /// Evidence ids that are malformed or point at no turn.
    pub evidence_invalid: usize,
    pub evidence_cited_by_facts: usize,
    pub evidence_cited: usize,
    /// Distinct events memory (facts and episodes) cites, and how many of them are
    /// evidence turns (for precision against the base rate).
    pub cited_events: usize,
    pub cited_evidence: usize,
    /// Supporting events cited, summed over facts and episodes (for the average).
    pub fact_support_total: usize,
    pub card_support_total: usize,
    /// Facts and episodes fully traceable to the events they cite.
    pub traceable_facts: usize,
    pub events: usize,
    pub cycles: usize,
    /// Model tokens the replay spent, and in how many calls.
    pub tokens: u64,
    pub calls: u64,
    /// Evidence turns that ended in a cluster with another turn, in a cycle that
    /// reflected on a cluster holding a new turn.
    pub evidence_clustered: usize,
    /// The largest cluster any cycle reflected on (a sign of chaining when large).
    pub largest_cluster: usize,
    /// Questions (those `questions` counts) for which `recall` with limit [`RECALL_K`],
    /// asked the question, returned a line holding the answer.
    pub recall_hits: usize,
    /// Questions whose answer is in one fact or episode that also cites one of the
    /// question's evidence turns: a line that answers it, not one that only shares the
    /// answer's words (the day an episode opens with, a number, "yes").
    pub retained_cited: usize,
    /// Questions for which `recall` returned such a line.
    pub recall_hits_cited: usize,
    /// Questions for which `recall` with a deeper limit (10, 20: `dream mcp`'s default
    /// limit is 10) returned a line holding the answer.
    pub recall_hits_at_10: usize,
    pub recall_hits_at_20: usize,
}

/// How many results the eval's `recall` reads per question (hit@k).
pub const RECALL_K: usize = 5;
/// The deepest limit the eval also reads (hit@10, hit@20), to show how far down the line
/// that answers lies when it is not in the first [`RECALL_K`].
pub const RECALL_DEPTH: usize = 20;

/// Whether one of `lines` holds every content token of `answer` (the retention measure,
/// per returned line).
pub fn answer_in(answer: &str, lines: &[&str]) -> bool {
    lines
        .iter()
        .any(|l| measures::coverage_in(answer, &measures::vocabulary([*l])).value >= 1.0)
}

/// Whether one of `lines` (a text and the events it cites) holds every content token of
/// `answer` and cites one of the `evidence` turns: the line that answers the question.
pub fn answer_cited_in(
    answer: &str,
    evidence: &HashSet<String>,
    lines: &[(&str, &[String])],
) -> bool {
    lines.iter().any(|(text, support)| {
        support.iter().any(|id| evidence.contains(id)) && answer_in(answer, &[*text])
    })
}

/// A question's evidence turns as event ids (`<sample_id>:D<s>:<t>`; malformed ids left
/// out).
pub fn evidence_ids(sample_id: &str, q: &Qa) -> HashSet<String> {
    q.evidence
        .iter()
        .flat_map(|raw| canonical_dia_ids(raw))
        .map(|id| format!("{sample_id}:{id}"))
        .collect()
}

/// One question `recall` is asked: the question, its answer and its evidence turns.
pub struct RecallCase<'a> {
    pub question: &'a str,
    pub answer: &'a str,
    pub evidence: HashSet<String>,
}

/// The questions retention counts, with their answers: what `recall` is asked.
pub fn recall_questions(conv: &Conversation) -> Vec<RecallCase<'_>> {
    conv.qa
        .iter()
        .filter(|q| RETENTION_CATEGORIES.contains(&q.category))
        .filter_map(|q| {
            let answer = q.answer.as_deref()?;
            (!measures::content_tokens(answer).is_empty()).then(|| RecallCase {
                question: q.question.as_str(),
                answer,
                evidence: evidence_ids(&conv.sample_id, q),
            })
        })
        .collect()
}

impl Counts {
    pub fn add(&mut self, o: &Counts) {
        self.questions += o.questions;
        self.retained_in_facts += o.retained_in_facts;
        self.retained_with_episodes += o.retained_with_episodes;
        self.retained_with_cards += o.retained_with_cards;
        self.facts += o.facts;
        self.episodes += o.episodes;
        self.cards += o.cards;
        self.memory_words += o.memory_words;
        self.transcript_words += o.transcript_words;
        self.evidence_turns += o.evidence_turns;
        self.evidence_invalid += o.evidence_invalid;
        self.evidence_cited_by_facts += o.evidence_cited_by_facts;
        self.evidence_cited += o.evidence_cited;
        self.cited_events += o.cited_events;
        self.cited_evidence += o.cited_evidence;
        self.fact_support_total += o.fact_support_total;
        self.card_support_total += o.card_support_total;
        self.traceable_facts += o.traceable_facts;
        self.events += o.events;
        self.cycles += o.cycles;
        self.tokens += o.tokens;
        self.calls += o.calls;
        self.evidence_clustered += o.evidence_clustered;
        self.largest_cluster = self.largest_cluster.max(o.largest_cluster);
        self.recall_hits += o.recall_hits;
        self.retained_cited += o.retained_cited;
        self.recall_hits_cited += o.recall_hits_cited;
        self.recall_hits_at_10 += o.recall_hits_at_10;
        self.recall_hits_at_20 += o.recall_hits_at_20;
    }

    /// The ratios a person reads.
    pub fn figures(&self) -> Figures {
        let ratio = |a: usize, b: usize| {
            if b == 0 {
                0.0
            } else {
                measures::round3(a as f64 / b as f64)
            }
        };
        let memory = self.facts + self.episodes;
        Figures {
            answer_retention: ratio(self.retained_in_facts, self.questions),
            answer_retention_with_episodes: ratio(self.retained_with_episodes, self.questions),
            answer_retention_with_cards: ratio(self.retained_with_cards, self.questions),
            memory_size: measures::round3(if self.transcript_words == 0 {
                0.0
            } else {
                self.memory_words as f64 / self.transcript_words as f64
            }),
            evidence_recall: ratio(self.evidence_cited, self.evidence_turns),
            evidence_recall_facts_only: ratio(self.evidence_cited_by_facts, self.evidence_turns),
            evidence_precision: ratio(self.cited_evidence, self.cited_events),
            evidence_base_rate: ratio(self.evidence_turns, self.events),
            average_support: ratio(self.fact_support_total, memory),
            evidence_clustered: ratio(self.evidence_clustered, self.evidence_turns),
            average_card_support: ratio(self.card_support_total, self.cards),
            traceability: if memory == 0 {
                1.0
            } else {
                ratio(self.traceable_facts, memory)
            },
            recall_hit_at_k: ratio(self.recall_hits, self.questions),
            recall_of_held: ratio(self.recall_hits, self.retained_with_episodes),
            recall_of_cited: ratio(self.recall_hits_cited, self.retained_cited),
            tokens_per_event: if self.events == 0 {
                0.0
            } else {
                (self.tokens as f64 / self.events as f64 * 10.0).round() / 10.0
            },
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Figures {
    /// In durable facts.
    pub answer_retention: f64,
    /// In durable facts or episodes.
    pub answer_retention_with_episodes: f64,
    /// In facts, episodes or pending cards.
    pub answer_retention_with_cards: f64,
    /// Words of facts and episodes / words of the transcript.
    pub memory_size: f64,
    /// Evidence turns cited by memory or a card.
    pub evidence_recall: f64,
    /// Evidence turns cited by memory (facts and episodes).
    pub evidence_recall_facts_only: f64,
    /// Events memory cites that are evidence turns.
    pub evidence_precision: f64,
    /// Evidence turns among all events: the precision citing at random would have.
    pub evidence_base_rate: f64,
    /// Share of evidence turns that ended in a cluster with another turn.
    pub evidence_clustered: f64,
    pub average_support: f64,
    pub average_card_support: f64,
    pub traceability: f64,
    /// Questions whose answer a `recall` of the question returned within [`RECALL_K`].
    pub recall_hit_at_k: f64,
    /// ... of those whose answer memory holds at all (facts and episodes).
    pub recall_of_held: f64,
    /// Questions `recall` returned a line for that holds the answer and cites one of the
    /// question's evidence turns, of those memory holds such a line for.
    pub recall_of_cited: f64,
    pub tokens_per_event: f64,
}

/// The conversation's evidence turns that point at a turn, as event ids.
pub fn evidence_events(conv: &Conversation) -> HashSet<String> {
    let prefix = format!("{}:", conv.sample_id);
    let turns: HashSet<&str> = conv.events().map(|e| e.id.as_str()).collect();
    conv.qa
        .iter()
        .flat_map(|q| q.evidence.iter())
        .flat_map(|raw| canonical_dia_ids(raw))
        .map(|id| format!("{prefix}{id}"))
        .filter(|id| turns.contains(id.as_str()))
        .collect()
}

/// The clustering each evening cycle of a replay did, redone from the vectors the replay
/// cached: the window of `window_days` before each evening, DBSCAN focused on that
/// evening's turns (as a cycle runs it: turns with an all-zero vector left out). Returns
/// the turns that were in a cluster holding a new turn, and the largest such cluster.
pub fn clustered_turns(
    conv: &Conversation,
    vectors: &HashMap<String, Vec<f32>>,
    window_days: u32,
    min_points: usize,
    eps: f64,
) -> (HashSet<String>, usize) {
    let mut out = HashSet::new();
    let mut largest = 0;
    let events: Vec<&Event> = conv.events().collect();
    for (now, sessions) in conv.evenings() {
        let fresh: HashSet<&str> = sessions
            .iter()
            .flat_map(|s| s.events.iter().map(|e| e.id.as_str()))
            .collect();
        let from = now - Duration::days(i64::from(window_days));
        let rows: Vec<(&str, &Vec<f32>)> = events
            .iter()
            .filter(|e| e.ts >= from && e.ts <= now)
            .filter_map(|e| Some((e.id.as_str(), vectors.get(&e.id)?)))
            .filter(|(_, v)| v.iter().any(|x| *x != 0.0))
            .collect();
        let Some(dim) = rows.first().map(|(_, v)| v.len()) else {
            continue;
        };
        let rows: Vec<_> = rows.into_iter().filter(|(_, v)| v.len() == dim).collect();
        let flat: Vec<f32> = rows.iter().flat_map(|(_, v)| v.iter().copied()).collect();
        let data =
            ndarray::ArrayView2::from_shape((rows.len(), dim), &flat).expect("rows of one length");
        let focus: Vec<bool> = rows.iter().map(|(id, _)| fresh.contains(id)).collect();
        let c = dream_core::selection::cluster::dbscan(data, min_points, eps, Some(&focus));
        for cluster in c.clusters.iter().filter(|c| c.iter().any(|&i| focus[i])) {
            largest = largest.max(cluster.len());
            out.extend(cluster.iter().map(|&i| rows[i].0.to_string()));
        }
    }
    (out, largest)
}

/// Words of a text: its S6-normalised tokens, stopwords included.
fn words(text: &str) -> usize {
    measures::tokens(text).len()
}

/// Measure what a replay left: `facts` (durable facts and episodes) and `cards` (pending)
/// of one conversation. A fact traces to its events' texts and to who wrote them and when,
/// as `dream verify` reads them (the speaker, `owner_names`, the day, relative dates).
pub fn measure(
    conv: &Conversation,
    facts: &[Item],
    cards: &[Item],
    owner_names: &[String],
) -> Counts {
    let texts: HashMap<&str, &str> = conv
        .events()
        .map(|e| (e.id.as_str(), e.text.as_str()))
        .collect();
    let traced: HashMap<&str, String> = conv
        .events()
        .map(|e| {
            (
                e.id.as_str(),
                format!(
                    "{}\n{}",
                    e.text,
                    crate::human::verify::who_and_when(e, owner_names)
                ),
            )
        })
        .collect();
    let mut c = Counts {
        facts: facts.iter().filter(|f| !f.episode).count(),
        episodes: facts.iter().filter(|f| f.episode).count(),
        cards: cards.len(),
        events: texts.len(),
        ..Counts::default()
    };
    count_retention(conv, facts, cards, &mut c);
    c.memory_words = facts.iter().map(|f| words(&f.text)).sum();
    c.transcript_words = conv.events().map(|e| words(&e.text)).sum();
    count_evidence(conv, facts, cards, &mut c);
    c.fact_support_total = facts.iter().map(|f| f.support.len()).sum();
    c.card_support_total = cards.iter().map(|f| f.support.len()).sum();
    c.traceable_facts = facts
        .iter()
        .filter(|f| {
            let sources: Option<Vec<&str>> = f
                .support
                .iter()
                .map(|id| traced.get(id.as_str()).map(String::as_str))
                .collect();
            match sources {
                Some(s) if !s.is_empty() => measures::coverage(&f.text, s).value >= 1.0,
                _ => false,
            }
        })
        .count();
    c
}

/// Answer retention: the questions of [`RETENTION_CATEGORIES`] whose answer memory (the
/// durable facts; with episodes; with cards) holds in one line, and holds in a line citing
/// one of the question's evidence turns.
fn count_retention(conv: &Conversation, facts: &[Item], cards: &[Item], c: &mut Counts) {
    let vocab = |t: &str| measures::vocabulary([t]);
    let fact_vocab: Vec<_> = facts
        .iter()
        .filter(|f| !f.episode)
        .map(|f| vocab(&f.text))
        .collect();
    let episode_vocab: Vec<_> = facts
        .iter()
        .filter(|f| f.episode)
        .map(|f| vocab(&f.text))
        .collect();
    let card_vocab: Vec<_> = cards.iter().map(|f| vocab(&f.text)).collect();
    for q in &conv.qa {
        if !RETENTION_CATEGORIES.contains(&q.category) {
            continue;
        }
        let Some(answer) = &q.answer else { continue };
        if measures::content_tokens(answer).is_empty() {
            continue;
        }
        c.questions += 1;
        let held = |v: &measures::Vocabulary| measures::coverage_in(answer, v).value >= 1.0;
        let in_facts = fact_vocab.iter().any(held);
        let in_memory = in_facts || episode_vocab.iter().any(held);
        if in_facts {
            c.retained_in_facts += 1;
        }
        if in_memory {
            c.retained_with_episodes += 1;
        }
        if in_memory || card_vocab.iter().any(held) {
            c.retained_with_cards += 1;
        }
        let evidence = evidence_ids(&conv.sample_id, q);
        let lines: Vec<(&str, &[String])> = facts
            .iter()
            .map(|f| (f.text.as_str(), f.support.as_slice()))
            .collect();
        if in_memory && answer_cited_in(answer, &evidence, &lines) {
            c.retained_cited += 1;
        }
    }
}

/// Evidence recall and precision: the questions' evidence turns (invalid ids counted), and
/// which of them the facts (and the cards) cite.
fn count_evidence(conv: &Conversation, facts: &[Item], cards: &[Item], c: &mut Counts) {
    let prefix = format!("{}:", conv.sample_id);
    let turns: HashSet<String> = conv
        .events()
        .filter_map(|e| e.id.strip_prefix(&prefix).map(str::to_string))
        .collect();
    let mut evidence: HashSet<String> = HashSet::new();
    for q in &conv.qa {
        for raw in &q.evidence {
            let ids = canonical_dia_ids(raw);
            if ids.is_empty() {
                c.evidence_invalid += 1;
            }
            for id in ids {
                if turns.contains(&id) {
                    evidence.insert(id);
                } else {
                    c.evidence_invalid += 1;
                }
            }
        }
    }
    let cited = |items: &[Item]| -> HashSet<String> {
        items
            .iter()
            .flat_map(|i| i.support.iter())
            .filter_map(|id| id.strip_prefix(&prefix).map(str::to_string))
            .collect()
    };
    let by_facts = cited(facts);
    let by_cards = cited(cards);
    c.evidence_turns = evidence.len();
    c.evidence_cited_by_facts = evidence.iter().filter(|e| by_facts.contains(*e)).count();
    c.evidence_cited = evidence
        .iter()
        .filter(|e| by_facts.contains(*e) || by_cards.contains(*e))
        .count();
    c.cited_events = by_facts.len();
    c.cited_evidence = by_facts.iter().filter(|e| evidence.contains(*e)).count();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny LoCoMo-shaped file: two sessions on two dates, an image turn, an empty
    /// session date, and questions of every kind (one with malformed evidence).
    pub const TINY: &str = r#"[{
      "sample_id": "conv-x",
      "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
          {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat named Pixel last week."},
          {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely!", "img_url": ["x"], "blip_caption": "a photo of a grey cat on a sofa"}
        ],
        "session_2_date_time": "12:10 am on 9 May, 2023",
        "session_2": [
          {"speaker": "Ana", "dia_id": "D2:1", "text": "Pixel the grey cat sleeps all day."}
        ],
        "session_3_date_time": "3:00 pm on 20 May, 2023"
      },
      "qa": [
        {"question": "What is the cat called?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
        {"question": "When?", "answer": 2023, "evidence": ["D1:1; D2:1"], "category": 2},
        {"question": "Unanswerable", "adversarial_answer": "x", "evidence": ["D:1:2", "D9:9"], "category": 5},
        {"question": "Open", "answer": "a cat", "evidence": ["D"], "category": 3}
      ]
    }]"#;

    #[test]
    fn dates_parse_including_noon_and_midnight() {
        let t = |s: &str| parse_date(s).map(|d| d.to_rfc3339());
        assert_eq!(
            t("1:56 pm on 8 May, 2023").as_deref(),
            Some("2023-05-08T13:56:00+00:00")
        );
        assert_eq!(
            t("12:10 am on 9 May, 2023").as_deref(),
            Some("2023-05-09T00:10:00+00:00")
        );
        assert_eq!(
            t("12:30 pm on 1 June, 2022").as_deref(),
            Some("2022-06-01T12:30:00+00:00")
        );
        assert_eq!(t("yesterday"), None);
    }

    #[test]
    fn evidence_ids_are_split_and_canonical() {
        assert_eq!(canonical_dia_ids("D8:6; D9:17"), vec!["D8:6", "D9:17"]);
        assert_eq!(canonical_dia_ids("D:11:26"), vec!["D11:26"]);
        assert_eq!(canonical_dia_ids("D30:05"), vec!["D30:5"]);
        assert!(canonical_dia_ids("D").is_empty());
    }

    #[test]
    fn turns_become_owner_events_with_captions_one_evening_per_date() {
        let convs = parse(TINY).unwrap();
        let c = &convs[0];
        let events: Vec<&Event> = c.events().collect();
        assert_eq!(events.len(), 3);
        assert_eq!(events[0].id, "conv-x:D1:1");
        assert_eq!(events[0].session.as_deref(), Some("conv-x:S1"));
        assert_eq!(events[0].actor.as_deref(), Some("Ana"));
        assert_eq!(events[0].trust, Trust::Owner);
        assert_eq!(events[1].ts - events[0].ts, Duration::seconds(30));
        assert_eq!(
            events[1].text,
            "Lovely!\n[shared an image: a photo of a grey cat on a sofa]"
        );
        assert_eq!(c.skipped, vec!["session_3 (a date but no turns)"]);
        let evenings = c.evenings();
        assert_eq!(evenings.len(), 2);
        assert_eq!(evenings[0].0.to_rfc3339(), "2023-05-08T21:00:00+00:00");
        assert_eq!(evenings[1].0.to_rfc3339(), "2023-05-09T21:00:00+00:00");
        // Every event is one dream accepts as it is written to the inbox.
        for e in events {
            dream_core::sources::event::parse_line(e.to_line().as_bytes(), 1 << 20).unwrap();
        }
    }

    #[test]
    fn measures_count_retention_size_evidence_and_traceability() {
        let c = &parse(TINY).unwrap()[0];
        let facts = vec![
            Item {
                text: "I adopted a grey cat named Pixel last week.".into(),
                support: vec!["conv-x:D1:1".into(), "conv-x:D2:1".into()],
                episode: false,
            },
            Item {
                // Not traceable: "dog" is in no cited event.
                text: "Pixel is a dog.".into(),
                support: vec!["conv-x:D2:1".into()],
                episode: false,
            },
        ];
        let cards = vec![Item {
            text: "It happened in 2023.".into(),
            support: vec!["conv-x:D1:2".into()],
            episode: false,
        }];
        let m = measure(c, &facts, &cards, &[]);
        // Category 4 "Pixel" is in a fact; category 2 "2023" only in a card; 3 and 5 do not count.
        assert_eq!(
            (m.questions, m.retained_in_facts, m.retained_with_cards),
            (2, 1, 2)
        );
        // Evidence: D1:1 and D2:1 are valid (D9:9, "D" are not; "D:1:2" is D1:2).
        assert_eq!(m.evidence_turns, 3);
        assert_eq!(m.evidence_invalid, 2);
        assert_eq!((m.evidence_cited_by_facts, m.evidence_cited), (2, 3));
        assert_eq!(m.traceable_facts, 1);
        let f = m.figures();
        assert_eq!(f.answer_retention, 0.5);
        assert_eq!(f.traceability, 0.5);
        assert_eq!(f.average_support, 1.5);
        assert_eq!(m.memory_words, 9 + 4);
        assert!(f.memory_size > 0.0 && f.memory_size < 1.0);
        // "Pixel" is held by a fact citing the question's evidence turn D1:1: cited.
        assert_eq!(m.retained_cited, 1);
    }

    #[test]
    fn a_line_that_only_shares_the_answers_words_is_not_cited() {
        let c = &parse(TINY).unwrap()[0];
        // The answer "Pixel" is in an episode, but one that cites no evidence turn of the
        // question (D1:1): it holds the word, not the answer.
        let facts = vec![Item {
            text: "9 May 2023, Ana: Pixel the grey cat sleeps all day.".into(),
            support: vec!["conv-x:D2:1".into()],
            episode: true,
        }];
        let m = measure(c, &facts, &[], &[]);
        // Held: "Pixel" and "2023" (the day the episode opens with). Cited: only "2023",
        // whose question cites D2:1 among its evidence, as the episode does.
        assert_eq!((m.retained_with_episodes, m.retained_cited), (2, 1));
        let cases = recall_questions(c);
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[0].question, "What is the cat called?");
        let evidence = &cases[0].evidence;
        assert!(evidence.contains("conv-x:D1:1"), "{evidence:?}");
        let cited = ["conv-x:D2:1".to_string()];
        let other = ["conv-x:D1:1".to_string()];
        let line = "9 May 2023, Ana: Pixel the grey cat sleeps all day.";
        assert!(answer_in("Pixel", &[line]));
        assert!(!answer_cited_in("Pixel", evidence, &[(line, &cited)]));
        assert!(answer_cited_in("Pixel", evidence, &[(line, &other)]));
        assert!(!answer_cited_in("Felix", evidence, &[(line, &other)]));
    }
}
