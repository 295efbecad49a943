//! A person's "no" is remembered (SPEC S9): a rejected card or an undone fact becomes a
//! veto, kept in the state database with the text and the supporting events it had.
//!
//! The consolidation stage checks every candidate that passed the gates against the vetoes
//! ([`check`]). A candidate that restates a vetoed text (S6 similarity at or above
//! `promote.reinforce_similarity`, same polarity) is refused when the events it cites beyond
//! the recorded ones do not restate it themselves (their coverage of the claim is below
//! [`RESTATED_COVERAGE`], or there are none): the same evidence never brings back what a
//! person took out. When there is such new evidence, the candidate is never auto-promoted:
//! it goes to review, saying that a person rejected or undid a similar fact before
//! ([`cap`]). Pure functions; the state edge stores and loads the vetoes.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::schema::settings::Config;
use crate::schema::GateName;
use crate::schema::GateResult;
use crate::selection::route::Outcome;
use crate::text::measures::{self, round3};

/// New events restate a vetoed fact when they hold at least this share of its words: a
/// person's "no" stands against anything less, however much paraphrase a card may show.
pub const RESTATED_COVERAGE: f64 = 0.8;

/// A rejected card (`kind = "rejected"`, id `c_...`) or an undone fact (`kind = "undone"`,
/// id `f_...`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Veto {
    pub id: String,
    pub kind: String,
    pub text: String,
    /// The supporting event ids it had when the person decided.
    pub events: Vec<String>,
    pub reason: String,
    pub at: DateTime<Utc>,
    /// The review or undo that recorded it (its `Dream-Cycle` id).
    pub decision: String,
}

impl Veto {
    /// "rejected" or "undid", for sentences.
    fn verb(&self) -> &'static str {
        if self.kind == "rejected" {
            "rejected"
        } else {
            "undid"
        }
    }

    fn because(&self) -> String {
        if self.reason.trim().is_empty() {
            String::new()
        } else {
            format!(": {}", self.reason.trim())
        }
    }
}

/// What a veto does to a candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Refuse it, with this reason.
    Refuse(String),
    /// Let it through to review at most, with this reason.
    Review(String),
}

/// The veto a candidate runs into, with the gate to show on its card and in `explain`.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub veto_id: String,
    pub gate: GateResult,
    pub effect: Effect,
}

/// Check a candidate (its text, and each supporting event as `(id, text)`) against the
/// vetoes. `None` when it restates none of them.
pub fn check(
    text: &str,
    support: &[(&str, &str)],
    vetoes: &[Veto],
    config: &Config,
) -> Option<Hit> {
    let threshold = config.promote.reinforce_similarity;
    let (sim, v) = vetoes
        .iter()
        .map(|v| (measures::similarity(text, &v.text), v))
        .filter(|(sim, v)| *sim >= threshold && measures::polarity_agrees(text, &v.text))
        .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.at.cmp(&a.1.at)))?;
    let fresh: Vec<&str> = support
        .iter()
        .filter(|(id, _)| !v.events.iter().any(|e| e == id))
        .map(|(_, t)| *t)
        .collect();
    let cov = if fresh.is_empty() {
        0.0
    } else {
        round3(measures::coverage(text, fresh.iter().copied()).value)
    };
    let min = RESTATED_COVERAGE;
    let date = v.at.format("%Y-%m-%d");
    let effect = if fresh.is_empty() {
        Effect::Refuse(format!(
            "restates {} ({:?}), which a person {} on {date}{}; it cites no supporting event beyond the {} it had then",
            v.id,
            measures_excerpt(&v.text),
            v.verb(),
            v.because(),
            v.events.len()
        ))
    } else if cov < min {
        Effect::Refuse(format!(
            "restates {} ({:?}), which a person {} on {date}{}; its {} events beyond the {} it had then do not restate it (coverage by them {cov:.3} < {min})",
            v.id,
            measures_excerpt(&v.text),
            v.verb(),
            v.because(),
            fresh.len(),
            v.events.len()
        ))
    } else {
        Effect::Review(format!(
            "a person {} a similar fact before ({} on {date}{}); {} new supporting events since restate it (coverage by them {cov:.3} >= {min}), so a person decides again",
            v.verb(),
            v.id,
            v.because(),
            fresh.len()
        ))
    };
    Some(Hit {
        veto_id: v.id.clone(),
        gate: GateResult::new(
            GateName::Veto.as_str(),
            format!(
                "{} {} (similarity {sim:.3}); {} new events, coverage by them {cov:.3}",
                v.kind,
                v.id,
                fresh.len()
            ),
            format!("new events restating it (coverage >= {min}); never auto-promoted"),
            false,
        ),
        effect,
    })
}

/// A route capped by a veto: a promotion becomes a review card, a card says why too.
pub fn cap(outcome: Outcome, hit: Option<&Hit>) -> Outcome {
    let Some(Hit {
        effect: Effect::Review(why),
        ..
    }) = hit
    else {
        return outcome;
    };
    match outcome {
        Outcome::Promote | Outcome::Episode { .. } => Outcome::Queue {
            reason: why.clone(),
            supersedes: None,
        },
        Outcome::Queue { reason, supersedes } => Outcome::Queue {
            reason: format!("{reason}; {why}"),
            supersedes,
        },
        other => other,
    }
}

fn measures_excerpt(text: &str) -> String {
    crate::schema::excerpt(text, 80)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn veto(kind: &str) -> Veto {
        Veto {
            id: "f_12345678".into(),
            kind: kind.into(),
            text: "I live in Lisbon with my two cats.".into(),
            events: vec!["e1".into(), "e2".into(), "e3".into()],
            reason: "moved away".into(),
            at: "2026-11-03T10:00:00Z".parse().unwrap(),
            decision: "undo-x".into(),
        }
    }

    #[test]
    fn the_same_evidence_is_refused_with_a_reason() {
        let c = Config::default();
        let hit = check(
            "I live in Lisbon with my two cats.",
            &[("e1", "I live in Lisbon with my two cats."), ("e2", "x")],
            &[veto("undone")],
            &c,
        )
        .unwrap();
        match hit.effect {
            Effect::Refuse(r) => {
                assert!(
                    r.contains("which a person undid on 2026-11-03: moved away"),
                    "{r}"
                );
                assert!(r.contains("no supporting event beyond the 3"), "{r}");
            }
            e => panic!("{e:?}"),
        }
        assert!(!hit.gate.passed);
    }

    #[test]
    fn new_events_that_do_not_restate_it_are_not_new_evidence() {
        let c = Config::default();
        let hit = check(
            "I live in Lisbon with my two cats.",
            &[
                ("e1", "I live in Lisbon with my two cats."),
                ("e9", "the weather is nice"),
            ],
            &[veto("rejected")],
            &c,
        )
        .unwrap();
        assert!(
            matches!(&hit.effect, Effect::Refuse(r) if r.contains("coverage by them 0.000 < 0.8")),
            "{:?}",
            hit.effect
        );
    }

    #[test]
    fn new_evidence_goes_to_review_never_to_promotion() {
        let c = Config::default();
        let hit = check(
            "I live in Lisbon with my two cats.",
            &[("e9", "Yes, I live in Lisbon with my two cats.")],
            &[veto("rejected")],
            &c,
        )
        .unwrap();
        assert!(
            matches!(&hit.effect, Effect::Review(r) if r.contains("a person rejected a similar fact before"))
        );
        assert!(matches!(
            cap(Outcome::Promote, Some(&hit)),
            Outcome::Queue { .. }
        ));
    }

    #[test]
    fn unrelated_or_opposite_candidates_are_untouched() {
        let c = Config::default();
        assert!(check(
            "I prefer tea over coffee.",
            &[("e9", "tea")],
            &[veto("undone")],
            &c
        )
        .is_none());
        assert!(check(
            "I do not live in Lisbon with my two cats.",
            &[("e9", "I do not live in Lisbon with my two cats.")],
            &[veto("undone")],
            &c
        )
        .is_none());
    }
}
