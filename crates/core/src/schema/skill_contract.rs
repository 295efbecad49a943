//! The skills stage's contract with a model (SPEC S10): what it shows of one recurring
//! procedure (its instances, their calls, the normalised steps of the most typical one)
//! and the draft a model may answer. Plain data; the prompt and the defensive parse of the
//! reply are `llm::skill`, and `skills::gate` re-derives every draft from the instances.
//!
//! Contract: `{"name","description","steps":[{"text","tool","command"}],"confidence","reason"}`.

use serde::{Deserialize, Serialize};

/// One tool call of an instance, as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallView {
    pub event_id: String,
    pub tool: String,
    pub input: String,
}

/// One instance of the procedure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstanceView {
    pub session: String,
    pub day: String,
    /// The owner's request that started it, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    pub calls: Vec<CallView>,
}

/// One normalised step of the most typical instance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepView {
    pub tool: String,
    /// A command with its one-off values as `<arg>`, or a kind of file (`*.rs`), or empty.
    pub shown: String,
    /// The command exactly as the most typical instance ran it (empty for other tools).
    pub example: String,
    /// True when a command step ran exactly like this in most instances.
    pub stable: bool,
    /// True when most instances have this step (a step only some have is left out).
    pub common: bool,
}

/// Draft a skill from the instances of one procedure (the most typical first).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillRequest {
    /// The procedure's id (`s_...`).
    pub procedure: String,
    pub instances: Vec<InstanceView>,
    /// The steps of the most typical instance, in order.
    pub steps: Vec<StepView>,
    /// How many instances there are in all (the request may show fewer).
    pub total_instances: usize,
    pub days: usize,
    pub sessions: usize,
    /// The most tokens the reply may use (`llm.max_tokens`).
    #[serde(skip)]
    pub max_tokens: u64,
}

/// One proposed step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkillStep {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub tool: String,
    #[serde(default)]
    pub command: String,
}

/// The proposed skill.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkillReply {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub steps: Vec<SkillStep>,
    /// The model's own confidence (0..1), when it gives one; it can only lower the
    /// measured one.
    #[serde(default)]
    pub confidence: Option<f64>,
    #[serde(default)]
    pub reason: String,
}
