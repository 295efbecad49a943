//! A skill proposal as a review card (SPEC S9, S10): a draft the gates passed but whose
//! confidence is below `skills.min_confidence`. It lives beside the fact cards as
//! `review/<id>.md` with TOML front matter saying `kind = "skill"` (fact cards say no kind,
//! see `schema::CardKind`), holds the whole proposed `SKILL.md`, and is decided with
//! `dream skills promote NAME` (activate it) or `dream skills discard NAME`.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::schema::{self, CardKind, Decision, Excerpt, GateResult};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillCard {
    /// Always `skill`.
    pub kind: CardKind,
    pub id: String,
    pub created: DateTime<Utc>,
    pub updated: DateTime<Utc>,
    pub cycle: String,
    /// The proposed skill's name (its folder once promoted).
    pub name: String,
    pub description: String,
    /// The procedure it was drafted from (`s_...`).
    pub procedure: String,
    pub confidence: f64,
    /// Why it was queued rather than drafted.
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub proposer_reason: String,
    pub instances: usize,
    pub days: usize,
    pub sessions: usize,
    /// The tool-call events of every instance.
    pub supporting_event_ids: Vec<String>,
    pub gates: Vec<GateResult>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excerpts: Vec<Excerpt>,
    /// The proposed `SKILL.md`, exactly as promote would write it.
    pub document: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

impl SkillCard {
    pub fn path(&self) -> String {
        schema::card_path(&self.id, self.decision.is_some())
    }

    /// TOML front matter for machines, then a page a person can read.
    pub fn render(&self) -> String {
        let front = toml::to_string(self).expect("cards serialize");
        let mut out = format!("+++\n{front}+++\n\n");
        let _ = writeln!(out, "# Skill proposal: {}\n", self.name);
        schema::write_decision(&mut out, self.decision.as_ref());
        let _ = writeln!(out, "{}\n", self.description);
        let _ = writeln!(
            out,
            "- Seen: {} instances on {} days in {} sessions (procedure `{}`)",
            self.instances, self.days, self.sessions, self.procedure
        );
        let _ = writeln!(out, "- Why queued: {}", self.reason);
        if !self.proposer_reason.is_empty() {
            let _ = writeln!(out, "- Proposer: {}", self.proposer_reason);
        }
        schema::write_gates(&mut out, &self.gates);
        let _ = writeln!(
            out,
            "\n## The proposed SKILL.md\n\n~~~~markdown\n{}~~~~\n",
            self.document
        );
        if !self.excerpts.is_empty() {
            let _ = writeln!(out, "## Tool calls of the most typical instance\n");
            for e in &self.excerpts {
                let _ = writeln!(
                    out,
                    "- {} `{}` session `{}`: {}",
                    e.ts.format("%Y-%m-%d %H:%M"),
                    e.id,
                    if e.session.is_empty() {
                        "-"
                    } else {
                        e.session.as_str()
                    },
                    schema::excerpt(&e.text, 200)
                );
            }
        }
        if self.decision.is_none() {
            let _ = writeln!(
                out,
                "\nDecide with `dream skills promote {name}` (activate it) or `dream skills discard {name} --reason TEXT`.",
                name = self.name
            );
        }
        out
    }

    pub fn parse(text: &str) -> Result<SkillCard, String> {
        let card: SkillCard = toml::from_str(schema::card_front(text)?)
            .map_err(|e| format!("bad skill card front matter: {e}"))?;
        if card.kind != CardKind::Skill {
            return Err("not a skill card".into());
        }
        Ok(card)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Card;

    #[test]
    fn a_skill_card_round_trips_and_is_told_apart_from_fact_cards() {
        let now: DateTime<Utc> = "2026-11-06T21:00:00Z".parse().unwrap();
        let card = SkillCard {
            kind: CardKind::Skill,
            id: "c_1234abcd".into(),
            created: now,
            updated: now,
            cycle: "c".into(),
            name: "run-checks".into(),
            description: "Runs checks. Use when asked.".into(),
            procedure: "s_1".into(),
            confidence: 0.75,
            reason: "confidence 0.750 < skills.min_confidence 0.8".into(),
            proposer_reason: String::new(),
            instances: 3,
            days: 2,
            sessions: 3,
            supporting_event_ids: vec!["e1".into()],
            gates: vec![],
            excerpts: vec![],
            document: "---\nname: \"run-checks\"\n---\n\n```\ncargo test\n```\n".into(),
            decision: None,
        };
        let text = card.render();
        assert_eq!(SkillCard::parse(&text).unwrap(), card);
        assert_eq!(schema::card_kind(&text), CardKind::Skill);
        assert!(Card::parse(&text).unwrap_err().contains("skill proposal"));
        assert!(text.contains("dream skills promote run-checks"));
    }
}
