//! The offline provider `none` (SPEC S7): an extractive reflector and a similarity judge
//! that need no network and give the same answer every time.
//!
//! The reflector never writes a word of its own: every candidate is one sentence the owner
//! wrote, taken verbatim from a supporting event, so it is traceable by construction (the
//! agent's, a tool's or a web page's restatements may add support, never the sentence). It proposes a
//! sentence only when other events in the cluster restate it, and never proposes
//! questions, requests, greetings or other low-content chatter, however often they repeat:
//! repetition alone is not durability. Category and block come from the transparent
//! phrase rules in [`classify`]. The judge flags duplicates by S6 similarity and, as a
//! conservative offline stand-in for a model, possible contradictions between same-subject
//! facts whose polarity, names or numbers differ; anything else is "no contradiction found".

use std::collections::{BTreeSet, HashSet};

use super::{
    EventView, JudgeReply, JudgeRequest, Llm, LlmError, Proposal, ReflectReply, ReflectRequest,
    Reply, Verdict,
};
use crate::config::Config;
use crate::measures::{self, Entity};
use crate::phrases::{classify, not_a_fact, sentences};

/// A sentence supports a candidate when it is at least this similar (and agrees in polarity
/// and names every entity of the candidate).
pub const SUPPORT_SIMILARITY: f64 = 0.6;
/// Two facts this similar are about the same subject (for possible contradictions).
pub const SAME_SUBJECT_SIMILARITY: f64 = 0.6;

pub struct Offline {
    min_points: usize,
    duplicate_similarity: f64,
}

impl Offline {
    pub fn new(config: &Config) -> Offline {
        Offline {
            min_points: config.cluster.min_points,
            duplicate_similarity: config.promote.reinforce_similarity,
        }
    }
}

/// An event's sentences, each tokenised once.
struct Sentence {
    text: String,
    tokens: BTreeSet<String>,
    prepared: measures::Prepared,
}

struct Analysed<'a> {
    event: &'a EventView,
    sentences: Vec<Sentence>,
    /// Every stemmed token of the event, for entity checks.
    vocab: HashSet<String>,
}

fn analyse(e: &EventView) -> Analysed<'_> {
    let sentences = sentences(&e.text)
        .into_iter()
        .map(|text| {
            let prepared = measures::Prepared::new(&text);
            Sentence {
                tokens: prepared.content.clone(),
                prepared,
                text,
            }
        })
        .collect();
    Analysed {
        event: e,
        sentences,
        vocab: measures::vocabulary([e.text.as_str()]),
    }
}

/// Whether event `a` restates the sentence `unit`.
fn supports(a: &Analysed<'_>, unit: &Sentence, entities: &[Entity]) -> bool {
    // The cheap similarity test first: most events of a cluster fail it.
    a.sentences.iter().any(|s| {
        measures::set_similarity(&s.tokens, &unit.tokens) >= SUPPORT_SIMILARITY
            && measures::polarity_agrees_prepared(&s.prepared, &unit.prepared)
    }) && entities
        .iter()
        .all(|en| measures::entity_present(en, &[a.event.text.as_str()], &a.vocab))
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
        }
        let mut units: Vec<Unit> = Vec::new();
        for (i, a) in analysed.iter().enumerate() {
            if a.event.trust != crate::event::Trust::Owner || a.event.kind.starts_with("tool_") {
                continue;
            }
            for (j, unit) in a.sentences.iter().enumerate() {
                if not_a_fact(&unit.text) {
                    continue;
                }
                let entities = measures::entities(&unit.text);
                let support: Vec<usize> = analysed
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| supports(b, unit, &entities))
                    .map(|(k, _)| k)
                    .collect();
                if support.len() >= self.min_points
                    && support.iter().any(|&k| analysed[k].event.new)
                {
                    units.push(Unit {
                        event: i,
                        sentence: j,
                        support,
                    });
                }
            }
        }
        let mut used = vec![false; analysed.len()];
        let mut candidates = Vec::new();
        loop {
            // Most supporting events, then most sessions, then an owner among them, then
            // the shortest sentence (the most atomic statement of the fact: fewest content
            // words, then fewest characters, so "I live in Lisbon." is taken over "Again,
            // as I said, I live in Lisbon.").
            type Score = (
                usize,
                usize,
                bool,
                std::cmp::Reverse<usize>,
                std::cmp::Reverse<usize>,
            );
            let mut best: Option<(usize, usize, Vec<usize>, Score)> = None;
            for u in &units {
                if used[u.event] {
                    continue;
                }
                let unit = &analysed[u.event].sentences[u.sentence];
                let support: Vec<usize> = u.support.iter().copied().filter(|&k| !used[k]).collect();
                if support.len() < self.min_points
                    || !support.iter().any(|&k| analysed[k].event.new)
                {
                    continue;
                }
                let sessions: HashSet<&str> = support
                    .iter()
                    .map(|&k| analysed[k].event.session.as_str())
                    .collect();
                let owner = support
                    .iter()
                    .any(|&k| analysed[k].event.trust == crate::event::Trust::Owner);
                let score = (
                    support.len(),
                    sessions.len(),
                    owner,
                    std::cmp::Reverse(unit.tokens.len()),
                    std::cmp::Reverse(unit.text.chars().count()),
                );
                if best.as_ref().is_none_or(|b| score > b.3) {
                    best = Some((u.event, u.sentence, support, score));
                }
            }
            let Some((i, j, support, _)) = best else {
                break;
            };
            let unit = &analysed[i].sentences[j];
            let independent: HashSet<(String, chrono::NaiveDate)> = support
                .iter()
                .map(|&k| analysed[k].event)
                .filter(|e| e.trust.can_establish())
                .map(|e| (e.session.clone(), e.ts.date_naive()))
                .collect();
            let days: HashSet<chrono::NaiveDate> = support
                .iter()
                .map(|&k| analysed[k].event.ts.date_naive())
                .collect();
            let (category, block) = classify(&unit.text);
            candidates.push(Proposal {
                text: unit.text.clone(),
                category: category.into(),
                block: block.as_str().into(),
                supporting_event_ids: support.iter().map(|&k| analysed[k].event.id.clone()).collect(),
                confidence: confidence(independent.len()),
                reason: format!(
                    "sentence taken verbatim from {}; restated by {} events in {} independent session-days over {} days",
                    analysed[i].event.id,
                    support.len(),
                    independent.len(),
                    days.len()
                ),
            });
            for k in support {
                used[k] = true;
            }
        }
        ReflectReply { candidates }
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
            } else if sim >= SAME_SUBJECT_SIMILARITY && (polarity_differs || names_differ) {
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
        _req: &super::passes::DedupeRequest,
    ) -> Result<Reply<super::passes::DedupeReply>, LlmError> {
        Ok(Reply::free(Default::default()))
    }

    fn merge(
        &self,
        _req: &super::passes::MergeRequest,
    ) -> Result<Reply<super::passes::MergeReply>, LlmError> {
        Ok(Reply::free(Default::default()))
    }

    fn promote(
        &self,
        _req: &super::passes::PromoteRequest,
    ) -> Result<Reply<super::passes::PromoteReply>, LlmError> {
        Ok(Reply::free(Default::default()))
    }

    fn forget(
        &self,
        _req: &super::passes::ForgetRequest,
    ) -> Result<Reply<super::passes::ForgetReply>, LlmError> {
        Ok(Reply::free(Default::default()))
    }

    /// The plain draft of SPEC S10, from the most typical instance.
    fn draft_skill(
        &self,
        req: &super::skill::SkillRequest,
    ) -> Result<Reply<super::skill::SkillReply>, LlmError> {
        Ok(Reply::free(super::skill::offline_draft(req)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Trust;
    use crate::llm::{FactView, JudgeItem};

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
        }
    }

    fn offline() -> Offline {
        Offline::new(&Config::default())
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
    fn nothing_is_proposed_without_a_new_event() {
        let req = ReflectRequest {
            cluster: 0,
            events: vec![
                ev("e1", 1, "s1", "I live in Lisbon with two cats.", false),
                ev("e2", 2, "s2", "I live in Lisbon with two cats.", false),
            ],
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
        };
        assert!(offline().reflect(&req).unwrap().value.candidates.is_empty());
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
}
