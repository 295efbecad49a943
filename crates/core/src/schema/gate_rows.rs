//! A gate's row (SPEC S4 steps 5 to 8): the measured value beside its threshold, which
//! every gate, veto and route records and a card, a report and `dream explain` show; the
//! name of every row ([`GateName`]); and the figures measured for a candidate
//! ([`Measures`]). Plain data the stages share: selection writes the rows, memory and the
//! passes keep them, operations reads them back.

use serde::{Deserialize, Serialize};

/// One gate's measured value against its threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateResult {
    pub gate: String,
    pub value: String,
    pub threshold: String,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// For a gate that failed, why, in words (what `dream explain` prints).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

impl GateResult {
    /// A gate's row: `passed` says whether the measured `value` meets the `threshold`.
    pub fn new(
        gate: impl Into<String>,
        value: impl ToString,
        threshold: impl Into<String>,
        passed: bool,
    ) -> GateResult {
        GateResult {
            gate: gate.into(),
            value: value.to_string(),
            threshold: threshold.into(),
            passed,
            detail: String::new(),
            why: String::new(),
        }
    }

    /// The same row with the words that say why it failed.
    pub fn why(mut self, why: impl Into<String>) -> GateResult {
        self.why = why.into();
        self
    }

    /// The same row with a detail (untraceable words, the nearest fact, ...).
    pub fn detail(mut self, detail: impl Into<String>) -> GateResult {
        self.detail = detail.into();
        self
    }
}

/// Figures measured for a candidate (SPEC S4 step 6).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Measures {
    pub support: usize,
    pub sessions: usize,
    pub days: usize,
    pub spread_days: f64,
    pub confidence: f64,
    pub coverage: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untraceable: Vec<String>,
    pub novelty: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nearest_fact: Option<String>,
    pub owner_support: usize,
}

/// The name of every row selection records for a candidate, as the cycle report, the
/// heartbeat's `gate` warning and `dream explain` write it: the gates of `selection::gates::GATES` and
/// `defaults`, a person's veto (`selection::veto`), and routing's rows (`selection::route`). Code that
/// reads a row by its name matches on this exhaustively, so a new gate cannot be passed
/// over silently (the heartbeat's advice for it, explain's re-measure of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GateName {
    Text,
    Ids,
    Recalled,
    Floor,
    Trust,
    NewEvidence,
    Secret,
    Entities,
    Coverage,
    Block,
    Dates,
    Veto,
    Confidence,
    Support,
    Days,
    Traceable,
    Owner,
    Judge,
    Salience,
}

impl GateName {
    pub const ALL: [GateName; 19] = [
        GateName::Text,
        GateName::Ids,
        GateName::Recalled,
        GateName::Floor,
        GateName::Trust,
        GateName::NewEvidence,
        GateName::Secret,
        GateName::Entities,
        GateName::Coverage,
        GateName::Block,
        GateName::Dates,
        GateName::Veto,
        GateName::Confidence,
        GateName::Support,
        GateName::Days,
        GateName::Traceable,
        GateName::Owner,
        GateName::Judge,
        GateName::Salience,
    ];

    /// The name as rows, reports and cards store it.
    pub fn as_str(self) -> &'static str {
        match self {
            GateName::Text => "text",
            GateName::Ids => "ids",
            GateName::Recalled => "recalled",
            GateName::Floor => "floor",
            GateName::Trust => "trust",
            GateName::NewEvidence => "new evidence",
            GateName::Secret => "secret",
            GateName::Entities => "entities",
            GateName::Coverage => "coverage",
            GateName::Block => "block",
            GateName::Dates => "dates",
            GateName::Veto => "veto",
            GateName::Confidence => "confidence",
            GateName::Support => "support",
            GateName::Days => "days",
            GateName::Traceable => "traceable",
            GateName::Owner => "owner",
            GateName::Judge => "judge",
            GateName::Salience => "salience",
        }
    }

    /// The gate a stored name says (`None`: a name from an older or newer dream).
    pub fn parse(name: &str) -> Option<GateName> {
        GateName::ALL.into_iter().find(|g| g.as_str() == name)
    }
}

impl std::fmt::Display for GateName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
