//! The model seam (SPEC S7): what the cycle asks a model, and what it may answer.
//!
//! The model proposes, the code applies: every method here returns a *proposal* in the
//! JSON contract of SPEC S4 (`schema::contract`), which the gates then re-derive from the data.
//! A provider never sees the store and never decides anything. `none` is the offline
//! provider ([`offline`]: extractive reflector, similarity judge) and the default; the
//! `openai` provider (in `dream-engine`'s `providers/openai.rs`, where HTTP lives)
//! implements the [`Llm::chat_json`] transport and builds the stage calls from [`prompts`]. Token
//! accounting goes through [`budget::Budget`], outside the providers.

pub mod budget;
pub mod offline;
pub mod pass_prompts;
pub mod plan;
pub mod prompts;
pub mod skill;

use serde_json::Value;

use crate::schema::contract::*;
use crate::schema::pass_contract as passes;
use crate::schema::skill_contract;

/// A model provider. Each method is one call; the engine reserves budget before it.
pub trait Llm: Send + Sync {
    /// `none`, or `openai:<model>`: shown in reports and commit trailers.
    fn name(&self) -> String;

    /// True for the offline provider, whose calls cost nothing.
    fn offline(&self) -> bool {
        false
    }

    /// Names the tokenizer this provider's estimates are calibrated for (model and
    /// server), or `None` for a provider that needs no calibration (the offline one).
    fn tokenizer_key(&self) -> Option<String> {
        None
    }

    /// The ratio of reported to plain estimated prompt tokens learnt so far (the largest
    /// seen), or `None` while nothing was reported.
    fn calibration(&self) -> Option<f64> {
        None
    }

    /// Start from a ratio learnt in an earlier cycle (a larger one seen later wins).
    fn set_calibration(&self, _ratio: f64) {}

    /// A conservative estimate of the tokens (prompt plus the most the reply may use) a
    /// reflect call on this request could spend.
    fn estimate_reflect(&self, _req: &ReflectRequest) -> u64 {
        0
    }

    fn reflect(&self, req: &ReflectRequest) -> Result<Reply<ReflectReply>, LlmError>;

    /// As [`Llm::estimate_reflect`], for a prompt of one or more clusters.
    fn estimate_reflect_prompt(&self, prompt: &ReflectPrompt) -> u64 {
        prompt.requests().map(|r| self.estimate_reflect(&r)).sum()
    }

    /// Reflect on a prompt of one or more clusters (see [`ReflectPrompt`]). The default
    /// asks [`Llm::reflect`] once per cluster and joins the answers; a model provider sends
    /// the prompt as one call.
    fn reflect_prompt(&self, prompt: &ReflectPrompt) -> Result<Reply<ReflectReply>, LlmError> {
        let mut out = Reply::free(ReflectReply::default());
        for req in prompt.requests() {
            let reply = self.reflect(&req)?;
            out.value.candidates.extend(reply.value.candidates);
            out.usage.prompt_tokens += reply.usage.prompt_tokens;
            out.usage.completion_tokens += reply.usage.completion_tokens;
            out.usage.cached_tokens += reply.usage.cached_tokens;
            out.usage.reported |= reply.usage.reported;
            for n in reply.notes {
                if !out.notes.contains(&n) {
                    out.notes.push(n);
                }
            }
        }
        Ok(out)
    }

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
    fn estimate_skill(&self, req: &skill_contract::SkillRequest) -> u64 {
        self.estimate_chat(&skill::call(req))
    }

    /// Draft a skill from the instances of one recurring procedure (SPEC S10). The default
    /// builds the prompt and sends it through [`Llm::chat_json`] (see `skill.rs`).
    fn draft_skill(
        &self,
        req: &skill_contract::SkillRequest,
    ) -> Result<Reply<skill_contract::SkillReply>, LlmError> {
        ask(self, &skill::call(req), |v| {
            skill::parse_reply(v).map_err(|message| LlmError {
                kind: LlmErrorKind::Garbled,
                usage: None,
                message: format!("skills: {message}"),
            })
        })
    }

    /// Send one [`ChatCall`] and return the reply parsed as a JSON value. Providers that
    /// take prompts implement this; the stage methods above build on it.
    fn chat_json(&self, call: &ChatCall) -> Result<Reply<serde_json::Value>, LlmError> {
        Err(LlmError {
            kind: LlmErrorKind::Unsupported,
            usage: None,
            message: format!(
                "the {} provider does not take prompts (stage {})",
                self.name(),
                call.stage
            ),
        })
    }

    /// As [`Llm::estimate_reflect`], for the dedupe pass.
    fn estimate_dedupe(&self, req: &passes::DedupeRequest) -> u64 {
        self.estimate_chat(&pass_prompts::dedupe_call(req))
    }

    /// Dedupe (S4 step 9). The default builds the pass's prompt, sends it through
    /// [`Llm::chat_json`] and parses the reply defensively.
    fn dedupe(&self, req: &passes::DedupeRequest) -> Result<Reply<passes::DedupeReply>, LlmError> {
        ask(
            self,
            &pass_prompts::dedupe_call(req),
            pass_prompts::parse_dedupe,
        )
    }

    fn estimate_merge(&self, req: &passes::MergeRequest) -> u64 {
        self.estimate_chat(&pass_prompts::merge_call(req))
    }

    /// Merge (S4 step 9), as [`Llm::dedupe`].
    fn merge(&self, req: &passes::MergeRequest) -> Result<Reply<passes::MergeReply>, LlmError> {
        ask(
            self,
            &pass_prompts::merge_call(req),
            pass_prompts::parse_merge,
        )
    }

    fn estimate_promote(&self, req: &passes::PromoteRequest) -> u64 {
        self.estimate_chat(&pass_prompts::promote_call(req))
    }

    /// Promote (S4 step 9), as [`Llm::dedupe`].
    fn promote(
        &self,
        req: &passes::PromoteRequest,
    ) -> Result<Reply<passes::PromoteReply>, LlmError> {
        ask(
            self,
            &pass_prompts::promote_call(req),
            pass_prompts::parse_promote,
        )
    }

    fn estimate_forget(&self, req: &passes::ForgetRequest) -> u64 {
        self.estimate_chat(&pass_prompts::forget_call(req))
    }

    /// Forget (S4 step 9), as [`Llm::dedupe`].
    fn forget(&self, req: &passes::ForgetRequest) -> Result<Reply<passes::ForgetReply>, LlmError> {
        ask(
            self,
            &pass_prompts::forget_call(req),
            pass_prompts::parse_forget,
        )
    }
}

/// Send a call through the provider's transport and parse the reply with `parse`.
fn ask<L: Llm + ?Sized, T>(
    llm: &L,
    call: &ChatCall,
    parse: impl FnOnce(&Value) -> Result<T, LlmError>,
) -> Result<Reply<T>, LlmError> {
    let reply = llm.chat_json(call)?;
    reply.parsed(parse)
}

impl Reply<Value> {
    /// Parse the reply's JSON into a stage's contract. A reply that is not the contract
    /// keeps the usage the server reported, so the budget charges what it counted.
    pub fn parsed<T>(
        self,
        parse: impl FnOnce(&Value) -> Result<T, LlmError>,
    ) -> Result<Reply<T>, LlmError> {
        match parse(&self.value) {
            Ok(value) => Ok(Reply {
                value,
                usage: self.usage,
                notes: self.notes,
            }),
            Err(e) => Err(e.with_usage(self.usage)),
        }
    }
}
