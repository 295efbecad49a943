//! Skills' pure half (SPEC S10): `procedure` finds recurring tool-call procedures,
//! `skillmd` reads and writes the Agent Skills `SKILL.md` format, `gate` re-derives a
//! model's draft from the instances, and `card` is a skill proposal as a review card.
//! The stage that runs them is `dream_engine::stages::skills`. The folders below
//! are where a repository keeps skills; every reader and writer names them from here.

pub mod card;
pub mod gate;
pub mod procedure;
pub mod skillmd;

use serde::Serialize;

/// The repository folder of skill drafts (inert until a person promotes one).
pub const DRAFTS_DIR: &str = "skills/drafts";
/// The repository folder of promoted skills.
pub const ACTIVE_DIR: &str = "skills/active";
/// The repository folder of skills a person said no to.
pub const DISCARDED_DIR: &str = "skills/discarded";
/// The file of a skill in its folder.
pub const SKILL_FILE: &str = "SKILL.md";

/// Where a skill is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// `skills/drafts/`: inert, awaiting a decision.
    Draft,
    /// A review card proposes it (confidence below `skills.min_confidence`).
    Proposed,
    /// `skills/active/`: promoted by a person.
    Active,
    /// `skills/discarded/`: a person said no.
    Discarded,
    /// In a folder of `skills.installed`, outside the repository.
    Installed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Draft => "draft",
            Status::Proposed => "proposed",
            Status::Active => "active",
            Status::Discarded => "discarded",
            Status::Installed => "installed",
        }
    }
}

/// What the skills stage did, in the cycle report. Its counts balance:
/// `proposed = drafted + queued + refused`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SkillsReport {
    /// Instances that could be part of a procedure (enough steps, one a command).
    pub instances: usize,
    /// Groups of two or more instances of the same procedure.
    pub procedures: usize,
    /// Procedures that recur enough (`skills.min_instances`, `min_days`, `min_sessions`).
    pub recurring: usize,
    /// Recurring procedures an existing skill covers.
    pub covered: Vec<Covered>,
    pub proposed: usize,
    pub drafted: usize,
    pub queued: usize,
    pub refused: usize,
    /// Recurring, uncovered procedures left for the next cycle (budget, a failed call, or
    /// `skills.max_per_cycle`).
    pub pending: usize,
    pub decisions: Vec<SkillDecision>,
}

impl SkillsReport {
    pub fn balances(&self) -> bool {
        self.proposed == self.drafted + self.queued + self.refused
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Covered {
    pub procedure: String,
    pub by: String,
    pub status: Status,
    pub why: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SkillDecision {
    pub procedure: String,
    pub route: String,
    pub name: String,
    /// The draft or the card it became.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub confidence: f64,
    pub reason: String,
}
