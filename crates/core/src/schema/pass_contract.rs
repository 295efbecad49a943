//! The JSON contracts of the four maintenance passes (SPEC S4 step 9): what the engine
//! shows a model about durable memory, and the mutations a model may propose.
//!
//! Replies are proposals only. Every field defaults, so a reply with a missing or mistyped
//! field still parses and the gates (`passes::gates`) refuse the mutation with a reason,
//! rather than the whole reply being lost.

use serde::{Deserialize, Serialize};

/// A durable fact as a pass shows it to a model.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PassFact {
    pub id: String,
    pub block: String,
    pub category: String,
    /// `auto`, `review`, `owner` or `pass`: how the fact came to be.
    pub by: String,
    pub text: String,
}

/// A pair of facts the engine measured as likely duplicates.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CandidatePair {
    pub a: String,
    pub b: String,
    /// S6 similarity, rounded to three decimals.
    pub similarity: f64,
}

/// Dedupe: the active facts and the engine's own candidate pairs (similarity >= 0.9).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DedupeRequest {
    pub facts: Vec<PassFact>,
    pub candidate_pairs: Vec<CandidatePair>,
    pub min_similarity: f64,
    #[serde(skip)]
    pub max_tokens: u64,
}

/// `{"drop":[{"itemId","duplicateOf","reason"}]}`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DedupeReply {
    #[serde(default)]
    pub drop: Vec<Drop>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Drop {
    pub item_id: String,
    pub duplicate_of: String,
    pub reason: String,
}

/// Merge: the active facts, by block.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MergeRequest {
    pub facts: Vec<PassFact>,
    #[serde(skip)]
    pub max_tokens: u64,
}

/// `{"merge":[{"intoId","fromIds","mergedText","reason"}]}`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MergeReply {
    #[serde(default)]
    pub merge: Vec<Merge>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Merge {
    pub into_id: String,
    pub from_ids: Vec<String>,
    pub merged_text: String,
    pub reason: String,
}

/// Promote: the active facts with their blocks, and the blocks a fact may move to.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromoteRequest {
    pub facts: Vec<PassFact>,
    pub target_blocks: Vec<String>,
    #[serde(skip)]
    pub max_tokens: u64,
}

/// `{"promote":[{"itemId","toBlock","reason"}]}`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PromoteReply {
    #[serde(default)]
    pub promote: Vec<Promote>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Promote {
    pub item_id: String,
    pub to_block: String,
    pub reason: String,
}

/// A fact as the forget pass shows it: with its age and salience.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ForgetFact {
    pub id: String,
    pub block: String,
    pub category: String,
    pub text: String,
    pub last_seen: String,
    pub days_since_seen: i64,
    pub salience: f64,
}

/// Forget: the facts that may be forgotten (protected ones are left out) and the policy.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ForgetRequest {
    pub facts: Vec<ForgetFact>,
    pub active_facts: usize,
    pub max_active_facts: usize,
    pub stale_after_days: u32,
    pub protected_categories: Vec<String>,
    #[serde(skip)]
    pub max_tokens: u64,
}

/// `{"forget":[{"itemId","reason","policy"}]}`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ForgetReply {
    #[serde(default)]
    pub forget: Vec<Forget>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Forget {
    pub item_id: String,
    pub reason: String,
    /// The policy the model claims (`stale`, `capacity`, ...); the code records the one it
    /// verified instead.
    pub policy: String,
}
