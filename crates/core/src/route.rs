//! Score and route (SPEC S4 steps 6 and 8): where a gated candidate goes.
//!
//! Five routes, and every proposal takes exactly one, so the cycle's counts balance
//! (`proposed = promoted + episodes + queued + reinforced + refused`):
//! - **reinforce** an active fact or episode it restates (S6 similarity >=
//!   `reinforce_similarity`, same polarity): add support, refresh last-seen, no new fact;
//! - **promote** into its durable block (persona, human, scratch) when confidence,
//!   support, days, traceability, an owner's own words and the judge all allow it;
//! - **episode**: kept in `memory/episodes.md` when it is fully traceable, the owner's own
//!   words establish it and the judge finds no conflict, but it lacks the corroboration a
//!   durable block needs (confidence, support, days), or it is an event to begin with;
//! - **queue** a review card for what a person should decide: words the events do not
//!   hold, no owner's word for it, a contradiction (a card proposing to supersede the old
//!   fact) or a duplicate the judge named;
//! - **refuse** what a hard gate refused.
//!
//! Pure functions over the gated candidate, the active facts and the judge's verdict.

use crate::config::Config;
use crate::gates::Gated;
use crate::llm::Verdict;
use crate::measures::{self, round3};
use crate::memory::{episode_body, Block, GateResult, Memory};

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Promote,
    /// Kept in the episodes; the reason says what a durable block would need.
    Episode {
        reason: String,
    },
    Queue {
        reason: String,
        /// The active fact this candidate would replace, for a contradiction.
        supersedes: Option<String>,
    },
    Reinforce {
        fact_id: String,
    },
    Refuse {
        reason: String,
    },
}

impl Outcome {
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Promote => "promoted",
            Outcome::Episode { .. } => "episode",
            Outcome::Queue { .. } => "queued",
            Outcome::Reinforce { .. } => "reinforced",
            Outcome::Refuse { .. } => "refused",
        }
    }
}

/// An active fact near a candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Near {
    pub fact_id: String,
    pub similarity: f64,
    pub same_polarity: bool,
}

/// The `k` active facts most similar to `text` (S6 similarity, an episode by what it says
/// without its day), most similar first.
pub fn nearest(memory: &Memory, text: &str, k: usize) -> Vec<Near> {
    nearest_cached(memory, text, k, &mut measures::PreparedCache::default())
}

/// [`nearest`], with the facts' texts tokenised once per `cache` (a stage compares every
/// candidate with every active fact).
pub fn nearest_cached(
    memory: &Memory,
    text: &str,
    k: usize,
    cache: &mut measures::PreparedCache,
) -> Vec<Near> {
    let query = measures::Prepared::new(text);
    let mut out: Vec<Near> = memory
        .facts()
        .filter_map(|(_, f)| {
            let fact = cache.get(episode_body(&f.text));
            let similarity = round3(measures::set_similarity(&query.content, &fact.content));
            (similarity > 0.0).then(|| Near {
                fact_id: f.id.clone(),
                similarity,
                same_polarity: measures::polarity_agrees_prepared(&query, fact),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.similarity
            .total_cmp(&a.similarity)
            .then(a.fact_id.cmp(&b.fact_id))
    });
    out.truncate(k);
    out
}

/// Decide the route of one gated candidate. `near` are the facts sent to the judge (most
/// similar first); `verdict` is the judge's answer for this candidate, if any. Returns the
/// outcome, the judge's verdict as shown on cards, and the routing gates.
pub fn route(
    g: &Gated,
    near: &[Near],
    verdict: Option<&Verdict>,
    config: &Config,
) -> (Outcome, String, Vec<GateResult>) {
    let mut gates = Vec::new();
    if let Some(reason) = &g.refused {
        return (
            Outcome::Refuse {
                reason: reason.clone(),
            },
            "not judged (refused by a gate)".into(),
            gates,
        );
    }
    let p = &config.promote;
    let sent = |id: &Option<String>| -> Option<String> {
        id.as_ref()
            .filter(|id| near.iter().any(|n| &n.fact_id == *id))
            .cloned()
    };
    let mut judge = verdict
        .map(|v| v.reason.clone())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| "no contradiction found".into());
    let mut notes = Vec::new();
    let contradicts = verdict.and_then(|v| {
        let valid = sent(&v.contradicts);
        if v.contradicts.is_some() && valid.is_none() {
            notes.push(format!(
                "the judge named {} as contradicted, but it was not among the facts sent (ignored)",
                v.contradicts.as_deref().unwrap_or_default()
            ));
        }
        valid
    });
    let duplicate_of = verdict.and_then(|v| {
        let valid = sent(&v.duplicate_of);
        if v.duplicate_of.is_some() && valid.is_none() {
            notes.push(format!(
                "the judge named {} as a duplicate, but it was not among the facts sent (ignored)",
                v.duplicate_of.as_deref().unwrap_or_default()
            ));
        }
        valid
    });
    if !notes.is_empty() {
        judge = format!("{judge}; {}", notes.join("; "));
    }

    let top = near.first();
    let top_sim = top.map_or(0.0, |n| n.similarity);
    gates.push(
        GateResult::new(
            "novelty",
            format!("{:.3}", 1.0 - top_sim),
            format!("> {:.3} (else reinforce)", 1.0 - p.reinforce_similarity),
            top_sim < p.reinforce_similarity,
        )
        .detail(
            top.map(|n| format!("nearest {} at similarity {:.3}", n.fact_id, n.similarity))
                .unwrap_or_default(),
        ),
    );

    if let Some(n) = top.filter(|n| {
        n.similarity >= p.reinforce_similarity
            && n.same_polarity
            && contradicts.as_deref() != Some(n.fact_id.as_str())
    }) {
        return (
            Outcome::Reinforce {
                fact_id: n.fact_id.clone(),
            },
            judge,
            gates,
        );
    }

    // What a durable block needs beyond what an episode does (corroboration), and what
    // a person must decide (review).
    let mut unmet: Vec<(bool, String)> = Vec::new();
    let mut check = |gates: &mut Vec<GateResult>,
                     name: &str,
                     value: String,
                     threshold: String,
                     ok: bool,
                     why: String| {
        gates.push(GateResult::new(name, value, threshold, ok));
        if !ok {
            let corroboration = matches!(name, "confidence" | "support" | "days");
            unmet.push((corroboration, why));
        }
    };
    let m = &g.measures;
    check(
        &mut gates,
        "confidence",
        format!("{:.3}", g.confidence),
        format!(">= {}", p.min_confidence),
        g.confidence >= p.min_confidence,
        format!(
            "confidence {:.3} < min_confidence {}",
            g.confidence, p.min_confidence
        ),
    );
    check(
        &mut gates,
        "support",
        m.support.to_string(),
        format!(">= {}", p.min_support),
        m.support >= p.min_support,
        format!("support {} < min_support {}", m.support, p.min_support),
    );
    check(
        &mut gates,
        "days",
        m.days.to_string(),
        format!(">= {}", p.min_days),
        m.days >= p.min_days,
        format!("days {} < min_days {}", m.days, p.min_days),
    );
    check(
        &mut gates,
        "traceable",
        format!("{:.3}", m.coverage),
        "1.0".into(),
        m.coverage >= 1.0,
        format!(
            "coverage {:.3} < 1.0 (untraceable: {})",
            m.coverage,
            m.untraceable.join(", ")
        ),
    );
    check(
        &mut gates,
        "owner",
        m.owner_support.to_string(),
        ">= 1".into(),
        m.owner_support >= 1,
        "no event from the owner supports it (the agent's own statements need a person's confirmation)".into(),
    );
    let judge_ok = contradicts.is_none() && duplicate_of.is_none();
    check(
        &mut gates,
        "judge",
        if let Some(c) = &contradicts {
            format!("contradicts {c}")
        } else if let Some(d) = &duplicate_of {
            format!("duplicate of {d}")
        } else {
            "no contradiction".into()
        },
        "no contradiction".into(),
        judge_ok,
        match (&contradicts, &duplicate_of) {
            (Some(c), _) => format!("the judge found a possible contradiction with {c}"),
            (None, Some(d)) => {
                let sim = near
                    .iter()
                    .find(|n| &n.fact_id == d)
                    .map_or(0.0, |n| n.similarity);
                format!(
                    "the judge called it a duplicate of {d}, but similarity {sim:.3} < {}",
                    p.reinforce_similarity
                )
            }
            _ => String::new(),
        },
    );
    let review: Vec<&str> = unmet
        .iter()
        .filter(|(c, _)| !c)
        .map(|(_, w)| w.as_str())
        .collect();
    let all: Vec<&str> = unmet.iter().map(|(_, w)| w.as_str()).collect();
    if !review.is_empty() {
        (
            Outcome::Queue {
                reason: all.join("; "),
                supersedes: contradicts,
            },
            judge,
            gates,
        )
    } else if !all.is_empty() && !config.episodes.enabled {
        // The episodic tier is off: a person decides what lacks corroboration.
        (
            Outcome::Queue {
                reason: all.join("; "),
                supersedes: contradicts,
            },
            judge,
            gates,
        )
    } else if !all.is_empty() {
        (
            Outcome::Episode {
                reason: format!(
                    "kept as an episode until it is said again: {}",
                    all.join("; ")
                ),
            },
            judge,
            gates,
        )
    } else if g.block == Block::Episodes && config.episodes.enabled {
        (
            Outcome::Episode {
                reason: "an event: kept in the episodes".into(),
            },
            judge,
            gates,
        )
    } else {
        (Outcome::Promote, judge, gates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Measures;

    fn gated(support: usize, days: usize, confidence: f64, coverage: f64) -> Gated {
        Gated {
            text: "I live in Lisbon.".into(),
            block: Block::Human,
            category: "identity".into(),
            confidence,
            reason: String::new(),
            support: (0..support).map(|i| format!("e{i}")).collect(),
            measures: Measures {
                support,
                sessions: support,
                days,
                coverage,
                owner_support: support,
                confidence,
                ..Measures::default()
            },
            gates: vec![],
            refused: None,
        }
    }

    fn near(id: &str, sim: f64) -> Near {
        Near {
            fact_id: id.into(),
            similarity: sim,
            same_polarity: true,
        }
    }

    #[test]
    fn routes_follow_the_spec() {
        let c = Config::default();
        assert_eq!(
            route(&gated(3, 2, 0.9, 1.0), &[], None, &c).0,
            Outcome::Promote
        );
        let (o, _, _) = route(&gated(2, 1, 0.9, 1.0), &[], None, &c);
        assert_eq!(
            o,
            Outcome::Episode {
                reason: "kept as an episode until it is said again: support 2 < min_support 3; days 1 < min_days 2".into(),
            }
        );
        // A single mention, at the confidence one event gives.
        let (o, _, _) = route(&gated(1, 1, 0.6, 1.0), &[], None, &c);
        assert!(matches!(o, Outcome::Episode { .. }), "{o:?}");
        // Untraceable words go to a person, with everything else that is missing.
        let (o, _, _) = route(&gated(3, 2, 0.9, 0.9), &[], None, &c);
        assert!(
            matches!(o, Outcome::Queue { ref reason, .. } if reason.starts_with("coverage 0.900 < 1.0"))
        );
        let (o, _, _) = route(&gated(1, 1, 0.6, 0.9), &[], None, &c);
        assert!(
            matches!(o, Outcome::Queue { ref reason, .. } if reason.contains("coverage 0.900 < 1.0") && reason.contains("support 1 < min_support 3")),
            "{o:?}"
        );
        // An agent's own statement needs a person, however often it is made.
        let mut agent = gated(3, 2, 0.9, 1.0);
        agent.measures.owner_support = 0;
        assert!(matches!(
            route(&agent, &[], None, &c).0,
            Outcome::Queue { .. }
        ));
        // An event fully corroborated is still an episode: episodes hold events.
        let mut event = gated(3, 2, 0.9, 1.0);
        event.block = Block::Episodes;
        assert_eq!(
            route(&event, &[], None, &c).0,
            Outcome::Episode {
                reason: "an event: kept in the episodes".into()
            }
        );
        let (o, _, _) = route(&gated(3, 2, 0.9, 1.0), &[near("f_1", 0.95)], None, &c);
        assert_eq!(
            o,
            Outcome::Reinforce {
                fact_id: "f_1".into()
            }
        );
    }

    #[test]
    fn with_the_episodic_tier_off_a_person_decides_what_lacks_corroboration() {
        let mut c = Config::default();
        c.episodes.enabled = false;
        let (o, _, _) = route(&gated(2, 1, 0.9, 1.0), &[], None, &c);
        assert_eq!(
            o,
            Outcome::Queue {
                reason: "support 2 < min_support 3; days 1 < min_days 2".into(),
                supersedes: None
            }
        );
        let mut event = gated(3, 2, 0.9, 1.0);
        event.block = Block::Episodes;
        assert_eq!(route(&event, &[], None, &c).0, Outcome::Promote);
    }

    #[test]
    fn the_judge_can_only_name_facts_it_was_shown() {
        let c = Config::default();
        let v = Verdict {
            candidate_id: "k".into(),
            contradicts: Some("f_ghost".into()),
            duplicate_of: None,
            reason: "contradicts".into(),
        };
        let (o, judge, _) = route(&gated(3, 2, 0.9, 1.0), &[near("f_1", 0.5)], Some(&v), &c);
        assert_eq!(o, Outcome::Promote);
        assert!(judge.contains("f_ghost as contradicted, but it was not among the facts sent"));
        let v = Verdict {
            contradicts: Some("f_1".into()),
            ..v
        };
        let (o, _, _) = route(&gated(3, 2, 0.9, 1.0), &[near("f_1", 0.5)], Some(&v), &c);
        assert!(matches!(o, Outcome::Queue { supersedes: Some(ref f), .. } if f == "f_1"));
    }
}
