//! Gates for a reflected candidate (SPEC S4 step 5, S8): pure functions that re-derive a
//! model's proposal from the events it cites, before anything touches the store.
//!
//! Each gate records its measured value beside its threshold, passed or not, so a card,
//! a refusal or `dream explain` can show exactly why. A hard gate that fails refuses the
//! candidate with a reason that names the value and the threshold; soft gates (coverage
//! between `min_coverage` and 1.0) let it through to review. Nothing here does I/O.

use std::collections::{BTreeSet, HashMap, HashSet};

use chrono::NaiveDate;

use crate::config::Config;
use crate::event::Trust;
use crate::llm::{EventView, Proposal};
use crate::measures::{self, round3};
use crate::memory::{one_line, Block, GateResult, Measures};
use crate::phrases::classify;
use crate::secrets;

/// Longest fact text accepted, in characters.
pub const MAX_TEXT_CHARS: usize = 500;

/// The events a proposal was made from.
pub struct Evidence<'a> {
    /// The events sent to the model, by id.
    pub sent: HashMap<&'a str, &'a EventView>,
    /// Ids that exist in the state database but were not sent.
    pub elsewhere: &'a HashSet<String>,
}

impl<'a> Evidence<'a> {
    pub fn new(events: &'a [EventView], elsewhere: &'a HashSet<String>) -> Evidence<'a> {
        Evidence {
            sent: events.iter().map(|e| (e.id.as_str(), e)).collect(),
            elsewhere,
        }
    }
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
    pub measures: Measures,
    pub gates: Vec<GateResult>,
    /// `Some(reason)` when a hard gate refused it.
    pub refused: Option<String>,
}

fn gate(
    gates: &mut Vec<GateResult>,
    name: &str,
    value: impl ToString,
    threshold: &str,
    passed: bool,
    detail: String,
) {
    gates.push(GateResult {
        gate: name.into(),
        value: value.to_string(),
        threshold: threshold.into(),
        passed,
        detail,
    });
}

/// Support figures of a set of events (S4 step 6): distinct events, sessions, days, spread,
/// how many the owner wrote, and the independent (session, day) pairs that may establish.
pub fn support_measures(events: &[&EventView]) -> (Measures, usize) {
    let sessions: HashSet<&str> = events.iter().map(|e| e.session.as_str()).collect();
    let days: BTreeSet<NaiveDate> = events.iter().map(|e| e.ts.date_naive()).collect();
    let first = events.iter().map(|e| e.ts).min();
    let last = events.iter().map(|e| e.ts).max();
    let spread = match (first, last) {
        (Some(a), Some(b)) => (b - a).num_minutes() as f64 / 1440.0,
        _ => 0.0,
    };
    let independent: HashSet<(&str, NaiveDate)> = events
        .iter()
        .filter(|e| e.trust.can_establish())
        .map(|e| (e.session.as_str(), e.ts.date_naive()))
        .collect();
    (
        Measures {
            support: events.len(),
            sessions: sessions.len(),
            days: days.len(),
            spread_days: round3(spread),
            owner_support: events.iter().filter(|e| e.trust == Trust::Owner).count(),
            ..Measures::default()
        },
        independent.len(),
    )
}

/// Run every gate of S4 step 5 and S8 on one proposal.
pub fn gate_proposal(p: &Proposal, evidence: &Evidence<'_>, config: &Config) -> Gated {
    let mut gates = Vec::new();
    let text = one_line(p.text.trim());
    let mut refused: Option<String> = None;
    let refuse = |r: String, refused: &mut Option<String>| {
        if refused.is_none() {
            *refused = Some(r);
        }
    };

    let chars = text.chars().count();
    let text_ok = chars > 0 && chars <= MAX_TEXT_CHARS;
    gate(
        &mut gates,
        "text",
        format!("{chars} chars"),
        &format!("1..={MAX_TEXT_CHARS}"),
        text_ok,
        String::new(),
    );
    if !text_ok {
        refuse(
            if chars == 0 {
                "the proposal has no text".into()
            } else {
                format!("text is {chars} characters, over the limit of {MAX_TEXT_CHARS}")
            },
            &mut refused,
        );
    }

    let block = Block::parse(p.block.trim());
    gate(
        &mut gates,
        "block",
        if p.block.is_empty() {
            "(none)"
        } else {
            p.block.as_str()
        },
        "persona|human|episodes|scratch",
        block.is_some(),
        String::new(),
    );
    if block.is_none() {
        refuse(
            format!(
                "illegal block {:?}: must be one of persona, human, episodes, scratch",
                p.block
            ),
            &mut refused,
        );
    }
    let category = {
        let c = p.category.trim().to_lowercase();
        if c.is_empty() {
            classify(&text).0.to_string()
        } else if c
            .chars()
            .all(|ch| ch.is_ascii_lowercase() || ch == '_' || ch == '-')
            && c.len() <= 32
        {
            c
        } else {
            refuse(
                format!("category {:?} is not a lower-case word", p.category),
                &mut refused,
            );
            c
        }
    };

    // Supporting ids: each must exist and belong to the events that were sent.
    let mut seen = HashSet::new();
    let mut support_events: Vec<&EventView> = Vec::new();
    let mut bad_ids = Vec::new();
    let mut recalled = 0;
    for id in &p.supporting_event_ids {
        if !seen.insert(id.as_str()) {
            continue;
        }
        match evidence.sent.get(id.as_str()) {
            Some(e) if e.recalled => recalled += 1,
            Some(e) => support_events.push(e),
            None if evidence.elsewhere.contains(id) => bad_ids.push(format!(
                "{id} exists but was not among the events sent for this cluster"
            )),
            None => bad_ids.push(format!("{id} does not exist")),
        }
    }
    gate(
        &mut gates,
        "ids",
        format!("{} unknown", bad_ids.len()),
        "0 unknown",
        bad_ids.is_empty() && !seen.is_empty(),
        bad_ids.join("; "),
    );
    if seen.is_empty() {
        refuse("cites no supporting event".into(), &mut refused);
    } else if !bad_ids.is_empty() {
        refuse(
            format!("invented supporting event id: {}", bad_ids.join("; ")),
            &mut refused,
        );
    }
    if recalled > 0 && support_events.is_empty() {
        refuse(
            format!("only recalled events support it ({recalled}); text read back from memory is never new support"),
            &mut refused,
        );
    }

    let (mut m, _independent) = support_measures(&support_events);
    let floor = config.cluster.min_points;
    gate(
        &mut gates,
        "floor",
        m.support,
        &format!(">= {floor}"),
        m.support >= floor,
        String::new(),
    );
    if m.support < floor && refused.is_none() && !support_events.is_empty() {
        refuse(
            format!(
                "support {} is below the floor of {floor} distinct events (cluster.min_points)",
                m.support
            ),
            &mut refused,
        );
    }

    let establishing = support_events
        .iter()
        .filter(|e| e.trust.can_establish())
        .count();
    gate(
        &mut gates,
        "trust",
        format!("{establishing} owner/agent"),
        ">= 1",
        establishing > 0,
        String::new(),
    );
    if establishing == 0 && !support_events.is_empty() {
        refuse(
            "only tool or external events support it; they may support a fact but cannot alone establish one".into(),
            &mut refused,
        );
    }

    let fresh = support_events.iter().filter(|e| e.new).count();
    gate(
        &mut gates,
        "new evidence",
        fresh,
        ">= 1",
        fresh > 0,
        String::new(),
    );
    if fresh == 0 && !support_events.is_empty() {
        refuse(
            "no new evidence: every supporting event was already considered by an earlier cycle"
                .into(),
            &mut refused,
        );
    }

    let secret = secrets::gate(&text);
    gate(
        &mut gates,
        "secret",
        secret.clone().unwrap_or_else(|| "none".into()),
        "none",
        secret.is_none(),
        String::new(),
    );
    if let Some(name) = secret {
        refuse(format!("contains a secret ({name})"), &mut refused);
    }

    let sources: Vec<&str> = support_events.iter().map(|e| e.text.as_str()).collect();
    let vocab = measures::vocabulary(sources.iter().copied());
    let invented: Vec<String> = measures::entities(&text)
        .into_iter()
        .filter(|e| !measures::entity_present(e, &sources, &vocab))
        .map(|e| format!("{} {:?}", e.kind.as_str(), e.text))
        .collect();
    gate(
        &mut gates,
        "entities",
        format!("{} invented", invented.len()),
        "0 invented",
        invented.is_empty(),
        invented.join(", "),
    );
    if !invented.is_empty() {
        refuse(
            format!(
                "invented {} absent from the supporting events",
                invented.join(", ")
            ),
            &mut refused,
        );
    }

    let cov = measures::coverage_in(&text, &vocab);
    m.coverage = round3(cov.value);
    m.untraceable = cov.missing.clone();
    let min_cov = config.promote.min_coverage;
    gate(
        &mut gates,
        "coverage",
        format!("{:.3}", cov.value),
        &format!(">= {min_cov} (1.0 to auto-promote)"),
        cov.value >= min_cov,
        if cov.missing.is_empty() {
            String::new()
        } else {
            format!("untraceable: {}", cov.missing.join(", "))
        },
    );
    if cov.value < min_cov {
        refuse(
            format!(
                "coverage {:.3} is below min_coverage {min_cov} (untraceable: {})",
                cov.value,
                cov.missing.join(", ")
            ),
            &mut refused,
        );
    }

    let confidence = if p.confidence.is_finite() {
        p.confidence.clamp(0.0, 1.0)
    } else {
        0.0
    };
    m.confidence = round3(confidence);
    Gated {
        text,
        block: block.unwrap_or(Block::Scratch),
        category,
        confidence: m.confidence,
        reason: p.reason.trim().to_string(),
        support: support_events.iter().map(|e| e.id.clone()).collect(),
        measures: m,
        gates,
        refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                "cannot alone establish",
            ),
            (
                proposal("I live in Lisbon.", &["e1"]),
                "support 1 is below the floor of 2",
            ),
            (
                proposal("My key is AKIAIOSFODNN7EXAMPLE in Lisbon", &["e1", "e2"]),
                "contains a secret (aws-access-key)",
            ),
            (
                proposal("Lisbon cats adore sardines and fado music", &["e1", "e2"]),
                "coverage 0.333 is below min_coverage 0.8",
            ),
            (
                Proposal {
                    block: "kitchen".into(),
                    ..proposal("I live in Lisbon.", &["e1", "e2"])
                },
                "illegal block \"kitchen\"",
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
