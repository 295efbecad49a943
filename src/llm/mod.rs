//! The model seam (SPEC S7): what the cycle asks a model, and what it may answer.
//!
//! The model proposes, the code applies: every method here returns a *proposal* in the
//! JSON contract of SPEC S4, which the gates then re-derive from the data. A provider never
//! sees the store and never decides anything. `none` is the offline provider (extractive
//! reflector, similarity judge) and the default; `openai` (any OpenAI-compatible server)
//! implements the [`Llm::chat_json`] transport and builds the stage calls from
//! [`prompts`]. Token accounting goes through [`budget::Budget`], outside the providers.

pub mod budget;
pub mod offline;
pub mod openai;
pub mod passes;
pub mod prompts;
pub mod skill;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::event::Trust;

/// An event as a model sees it.
#[derive(Debug, Clone, Serialize)]
pub struct EventView {
    pub id: String,
    pub ts: DateTime<Utc>,
    pub session: String,
    pub kind: String,
    pub trust: Trust,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub recalled: bool,
    /// Not yet reflected on by an earlier cycle.
    #[serde(skip)]
    pub new: bool,
    pub text: String,
}

impl EventView {
    /// A stored event as a model sees it; `new` says whether a cycle has looked at it yet.
    pub fn of(e: &crate::event::Event, new: bool) -> EventView {
        EventView {
            id: e.id.clone(),
            ts: e.ts,
            session: e.session_key(),
            kind: e.kind.clone(),
            trust: e.trust,
            recalled: e.recalled,
            new,
            text: e.text.clone(),
        }
    }
}

/// A durable fact as a model sees it.
#[derive(Debug, Clone, Serialize)]
pub struct FactView {
    pub id: String,
    pub block: String,
    pub category: String,
    pub text: String,
}

/// Reflect (S4 step 5): one cluster of events.
#[derive(Debug, Clone, Serialize)]
pub struct ReflectRequest {
    pub cluster: usize,
    pub events: Vec<EventView>,
}

/// One proposed candidate fact, exactly as the contract names its fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proposal {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub category: String,
    #[serde(default)]
    pub block: String,
    #[serde(default)]
    pub supporting_event_ids: Vec<String>,
    #[serde(default)]
    pub confidence: f64,
    #[serde(default)]
    pub reason: String,
}

/// `{"candidates":[...]}`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReflectReply {
    #[serde(default)]
    pub candidates: Vec<Proposal>,
}

/// Judge (S4 step 7): candidates with the most similar existing facts.
#[derive(Debug, Clone, Serialize)]
pub struct JudgeRequest {
    pub items: Vec<JudgeItem>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JudgeItem {
    pub candidate_id: String,
    pub text: String,
    pub neighbours: Vec<FactView>,
}

/// `{"verdicts":[{"candidateId","contradicts","duplicateOf","reason"}]}`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeReply {
    #[serde(default)]
    pub verdicts: Vec<Verdict>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    #[serde(default)]
    pub candidate_id: String,
    /// The id of an existing fact this candidate contradicts.
    #[serde(default)]
    pub contradicts: Option<String>,
    /// The id of an existing fact this candidate merely restates.
    #[serde(default)]
    pub duplicate_of: Option<String>,
    #[serde(default)]
    pub reason: String,
}

/// Tokens a call used, as the server reported them (or as estimated when it did not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// False when the server reported no usage and the estimate was charged.
    pub reported: bool,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// A provider's answer: the parsed proposal, what it cost, and anything worth reporting
/// about how it was obtained (for example "json mode unsupported").
#[derive(Debug, Clone)]
pub struct Reply<T> {
    pub value: T,
    pub usage: Usage,
    pub notes: Vec<String>,
}

impl<T> Reply<T> {
    pub fn free(value: T) -> Reply<T> {
        Reply {
            value,
            usage: Usage::default(),
            notes: Vec::new(),
        }
    }
}

/// Why a call failed. The cycle degrades around these (S4 step 7) and reports the message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct LlmError {
    pub kind: LlmErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LlmErrorKind {
    /// Could not connect, or the connection broke.
    Network,
    /// The call took longer than the per-call timeout.
    Timeout,
    /// 429 after every retry.
    RateLimited,
    /// 5xx after every retry, or another unexpected status.
    Server,
    /// 401/403: the key was refused.
    Auth,
    /// The reply was not the JSON the contract asks for.
    Garbled,
    /// This provider does not take prompts (the offline provider).
    Unsupported,
}

/// One chat completion whose reply must be a JSON object: the transport that model
/// providers implement. Each stage owns its prompt (system and user text) and parses the
/// reply into its own contract; the provider only carries it.
#[derive(Debug, Clone, Serialize)]
pub struct ChatCall {
    /// The stage asking (`reflect`, `judge`, `dedupe`, ...), for logs, reports and fakes.
    pub stage: String,
    pub system: String,
    pub user: String,
    /// The most tokens the reply may use.
    pub max_tokens: u64,
}

/// A model provider. Each method is one call; the engine reserves budget before it.
pub trait Llm: Send + Sync {
    /// `none`, or `openai:<model>`: shown in reports and commit trailers.
    fn name(&self) -> String;

    /// True for the offline provider, whose calls cost nothing.
    fn offline(&self) -> bool {
        false
    }

    /// A conservative estimate of the tokens (prompt plus the most the reply may use) a
    /// reflect call on this request could spend.
    fn estimate_reflect(&self, _req: &ReflectRequest) -> u64 {
        0
    }

    fn reflect(&self, req: &ReflectRequest) -> Result<Reply<ReflectReply>, LlmError>;

    /// As [`Llm::estimate_reflect`], for a judge batch.
    fn estimate_judge(&self, _req: &JudgeRequest) -> u64 {
        0
    }

    fn judge(&self, req: &JudgeRequest) -> Result<Reply<JudgeReply>, LlmError>;

    /// A conservative token estimate for a [`ChatCall`]: its prompt plus `max_tokens`.
    fn estimate_chat(&self, _call: &ChatCall) -> u64 {
        0
    }

    /// As [`Llm::estimate_reflect`], for drafting a skill.
    fn estimate_skill(&self, req: &skill::SkillRequest) -> u64 {
        self.estimate_chat(&skill::call(req))
    }

    /// Draft a skill from the instances of one recurring procedure (SPEC S10). The default
    /// builds the prompt and sends it through [`Llm::chat_json`] (see `skill.rs`).
    fn draft_skill(&self, req: &skill::SkillRequest) -> Result<Reply<skill::SkillReply>, LlmError> {
        skill::draft_via_chat(self, req)
    }

    /// Send one [`ChatCall`] and return the reply parsed as a JSON value. Providers that
    /// take prompts implement this; the stage methods above build on it.
    fn chat_json(&self, call: &ChatCall) -> Result<Reply<serde_json::Value>, LlmError> {
        Err(LlmError {
            kind: LlmErrorKind::Unsupported,
            message: format!(
                "the {} provider does not take prompts (stage {})",
                self.name(),
                call.stage
            ),
        })
    }

    /// As [`Llm::estimate_reflect`], for the dedupe pass.
    fn estimate_dedupe(&self, req: &passes::DedupeRequest) -> u64 {
        self.estimate_chat(&crate::passes::prompts::dedupe_call(req))
    }

    /// Dedupe (S4 step 9). The default builds the pass's prompt, sends it through
    /// [`Llm::chat_json`] and parses the reply defensively.
    fn dedupe(&self, req: &passes::DedupeRequest) -> Result<Reply<passes::DedupeReply>, LlmError> {
        crate::passes::prompts::dedupe(self, req)
    }

    fn estimate_merge(&self, req: &passes::MergeRequest) -> u64 {
        self.estimate_chat(&crate::passes::prompts::merge_call(req))
    }

    /// Merge (S4 step 9), as [`Llm::dedupe`].
    fn merge(&self, req: &passes::MergeRequest) -> Result<Reply<passes::MergeReply>, LlmError> {
        crate::passes::prompts::merge(self, req)
    }

    fn estimate_promote(&self, req: &passes::PromoteRequest) -> u64 {
        self.estimate_chat(&crate::passes::prompts::promote_call(req))
    }

    /// Promote (S4 step 9), as [`Llm::dedupe`].
    fn promote(
        &self,
        req: &passes::PromoteRequest,
    ) -> Result<Reply<passes::PromoteReply>, LlmError> {
        crate::passes::prompts::promote(self, req)
    }

    fn estimate_forget(&self, req: &passes::ForgetRequest) -> u64 {
        self.estimate_chat(&crate::passes::prompts::forget_call(req))
    }

    /// Forget (S4 step 9), as [`Llm::dedupe`].
    fn forget(&self, req: &passes::ForgetRequest) -> Result<Reply<passes::ForgetReply>, LlmError> {
        crate::passes::prompts::forget(self, req)
    }
}

/// The provider the config asks for.
pub fn from_config(config: &Config) -> Result<Box<dyn Llm>> {
    match config.llm.provider.as_str() {
        "none" => Ok(Box::new(offline::Offline::new(config))),
        "openai" => Ok(Box::new(openai::OpenAi::from_config(config)?)),
        other => Err(Error::Config {
            file: crate::config::FILE.into(),
            message: format!("key `llm.provider`: {other:?} is not available in this build"),
        }),
    }
}
