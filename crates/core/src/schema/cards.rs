//! Review cards as files (SPEC S3, S9): a candidate the engine would not promote on its
//! own, written under `review/` as TOML front matter for machines and a page a person can
//! read in any viewer, then moved under `review/decided/` with the decision. Skill
//! proposals share the folder and the front matter's first lines (`CardKind`).

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{excerpt, one_line, Block, GateResult, Measures};

/// A person's decision on a card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// `accepted`, `rejected`, `edited`, or `auto-promoted` (new evidence made it qualify).
    pub verdict: String,
    pub at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fact_id: Option<String>,
}

/// An excerpt of a supporting event, as a card shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Excerpt {
    pub id: String,
    pub ts: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub session: String,
    pub trust: String,
    /// Who wrote it, when the writer said.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub actor: String,
    pub text: String,
}

impl Excerpt {
    /// The first 300 characters of an event, as a card shows its evidence.
    pub fn of(e: &crate::sources::event::Event) -> Excerpt {
        Excerpt {
            id: e.id.clone(),
            ts: e.ts,
            session: e.session.clone().unwrap_or_default(),
            trust: e.trust.as_str().into(),
            actor: e.actor.clone().unwrap_or_default(),
            text: excerpt(&e.text, 300),
        }
    }
}

/// A review card: a candidate the engine would not promote on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Card {
    pub id: String,
    pub created: DateTime<Utc>,
    pub updated: DateTime<Utc>,
    pub cycle: String,
    pub text: String,
    pub block: Block,
    pub category: String,
    pub confidence: f64,
    /// Why it was queued rather than promoted.
    pub reason: String,
    /// The model's (or the offline reflector's) own reason for proposing it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub proposer_reason: String,
    pub judge: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes_text: Option<String>,
    pub supporting_event_ids: Vec<String>,
    pub measures: Measures,
    pub gates: Vec<GateResult>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excerpts: Vec<Excerpt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

/// What a review card proposes. Fact cards ([`Card`]) carry no `kind` in their front matter
/// (the default, so cards written before skills existed still parse); skill proposals
/// (`skills::SkillCard`, SPEC S10) say `kind = "skill"` and are decided with `dream skills`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CardKind {
    #[default]
    Fact,
    Skill,
}

/// The kind of the card in `text`, read from its front matter alone (a card without a
/// `kind`, or one whose front matter does not parse, reads as a fact card).
pub fn card_kind(text: &str) -> CardKind {
    #[derive(Deserialize)]
    struct Peek {
        #[serde(default)]
        kind: CardKind,
    }
    card_front(text)
        .ok()
        .and_then(|front| toml::from_str::<Peek>(front).ok())
        .map_or(CardKind::Fact, |p| p.kind)
}

/// Folder of pending cards; decided ones move to `review/decided/`.
pub const REVIEW_DIR: &str = "review";
pub const DECIDED_DIR: &str = "review/decided";

/// Where a card of either kind lives: pending under `review/`, decided under
/// `review/decided/`.
pub fn card_path(id: &str, decided: bool) -> String {
    if decided {
        format!("{DECIDED_DIR}/{id}.md")
    } else {
        format!("{REVIEW_DIR}/{id}.md")
    }
}

/// The TOML front matter of a card file: the lines between its two `+++` lines.
pub fn card_front(text: &str) -> Result<&str, String> {
    let rest = text
        .strip_prefix("+++\n")
        .ok_or("a card starts with a +++ front matter line")?;
    let end = rest
        .find("\n+++")
        .ok_or("the card's front matter is not closed by +++")?;
    Ok(&rest[..end + 1])
}

/// The readable parts both kinds of card share: the decision, when there is one.
pub fn write_decision(out: &mut String, decision: Option<&Decision>) {
    if let Some(d) = decision {
        let reason = if d.reason.is_empty() {
            String::new()
        } else {
            format!(" ({})", d.reason)
        };
        let _ = writeln!(
            out,
            "**Decided: {}** on {}{reason}\n",
            d.verdict,
            d.at.format("%Y-%m-%d %H:%M UTC")
        );
    }
}

/// Every gate's measured value against its threshold, as a Markdown table.
pub fn write_gates(out: &mut String, gates: &[GateResult]) {
    let _ = writeln!(
        out,
        "\n| gate | measured | threshold | result |\n|---|---|---|---|"
    );
    for g in gates {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            g.gate,
            g.value,
            g.threshold,
            if g.passed { "pass" } else { "not met" }
        );
    }
}

impl Card {
    pub fn path(&self) -> String {
        card_path(&self.id, self.decision.is_some())
    }

    /// TOML front matter for machines, then a page a person can read in any viewer.
    pub fn render(&self) -> String {
        let front = toml::to_string(self).expect("cards serialize");
        let mut out = format!("+++\n{front}+++\n\n");
        let _ = writeln!(out, "# Review: {}\n", one_line(&self.text));
        write_decision(&mut out, self.decision.as_ref());
        let _ = writeln!(
            out,
            "- Block: `{}`, category: `{}`",
            self.block.as_str(),
            self.category
        );
        let _ = writeln!(out, "- Why queued: {}", self.reason);
        let _ = writeln!(out, "- Judge: {}", self.judge);
        if let (Some(old), Some(text)) = (&self.supersedes, &self.supersedes_text) {
            let _ = writeln!(out, "- Supersedes `{old}`: {text}");
        }
        if !self.measures.untraceable.is_empty() {
            let _ = writeln!(
                out,
                "- Words not found in the supporting events: {}",
                self.measures.untraceable.join(", ")
            );
        }
        write_gates(&mut out, &self.gates);
        let _ = writeln!(out, "\n## Supporting events\n");
        for e in &self.excerpts {
            let session = if e.session.is_empty() {
                "-"
            } else {
                e.session.as_str()
            };
            let who = if e.actor.is_empty() {
                e.trust.clone()
            } else {
                format!("{}, {}", e.trust, e.actor)
            };
            let _ = writeln!(
                out,
                "- {} `{}` session `{}` ({who}): {}",
                e.ts.format("%Y-%m-%d %H:%M"),
                one_line(&e.id).replace('`', "'"),
                one_line(session).replace('`', "'"),
                excerpt(&e.text, 200)
            );
        }
        if self.decision.is_none() {
            let _ = writeln!(
                out,
                "\nDecide with `dream review`, or `dream review accept {id}` / `dream review reject {id} --reason TEXT`.",
                id = self.id
            );
        }
        out
    }

    pub fn parse(text: &str) -> Result<Card, String> {
        if card_kind(text) == CardKind::Skill {
            return Err("this is a skill proposal, not a fact card: decide it with `dream skills promote|discard`".into());
        }
        toml::from_str(card_front(text)?).map_err(|e| format!("bad card front matter: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_round_trip_through_their_front_matter() {
        let now: DateTime<Utc> = "2026-11-29T20:00:00Z".parse().unwrap();
        let card = Card {
            id: "c_12345678".into(),
            created: now,
            updated: now,
            cycle: "2026-11-29T20:00:00Z-evening".into(),
            text: "I prefer tea.".into(),
            block: Block::Human,
            category: "preferences".into(),
            confidence: 0.6,
            reason: "support 2 < min_support 3".into(),
            proposer_reason: String::new(),
            judge: "no contradiction found".into(),
            supersedes: None,
            supersedes_text: None,
            supporting_event_ids: vec!["ev_1".into()],
            measures: Measures::default(),
            gates: vec![GateResult::new("support", 2, ">= 3", false)],
            excerpts: vec![],
            decision: None,
        };
        let text = card.render();
        assert!(text.contains("| support | 2 | >= 3 | not met |"));
        assert_eq!(Card::parse(&text).unwrap(), card);
    }
}
