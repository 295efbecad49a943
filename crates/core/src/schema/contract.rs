//! The JSON contracts between dream and a model (SPEC S4): what each stage sends and what
//! it may answer, what a call cost, and why a call failed. Plain data; the `Llm` trait
//! in `mod.rs` carries it, `prompts` and `pass_prompts` turn it into text and back.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::sources::event::Trust;

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
    /// Who wrote it (`user`, `assistant`, a person's name); empty when the writer gave
    /// none.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub actor: String,
}

impl EventView {
    /// Whether it holds the owner's own words ([`crate::sources::turn::owner_statement`]): only
    /// such events count as support, sessions and days, and establish a fact.
    pub fn is_owner_statement(&self) -> bool {
        crate::sources::turn::owner_statement(self.trust, &self.kind, self.recalled)
    }

    /// A stored event as a model sees it; `new` says whether a cycle has looked at it yet.
    pub fn of(e: &crate::sources::event::Event, new: bool) -> EventView {
        EventView {
            id: e.id.clone(),
            ts: e.ts,
            session: e.session_key(),
            kind: e.kind.clone(),
            trust: e.trust,
            recalled: e.recalled,
            new,
            text: e.text.clone(),
            actor: e.actor.clone().unwrap_or_default(),
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

/// Reflect (S4 step 5): one cluster of events, or one session's single mentions (events
/// no cluster holds that may say something worth keeping).
#[derive(Debug, Clone, Serialize)]
pub struct ReflectRequest {
    pub cluster: usize,
    pub events: Vec<EventView>,
    /// The events are one session's single mentions, unrelated to each other.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub singles: bool,
}

/// What one reflect call sends: one cluster or several. A model charges every call its
/// instructions, so the clusters a cycle reflects on share prompts of at most
/// `cluster.max_events_per_prompt` events (see `plan::pack`); the offline reflector, which
/// charges nothing, gets one cluster per call.
#[derive(Debug, Clone, Serialize)]
pub struct ReflectPrompt {
    pub parts: Vec<ReflectPart>,
}

/// One cluster's share of a reflect prompt.
#[derive(Debug, Clone, Serialize)]
pub struct ReflectPart {
    pub cluster: usize,
    /// What the cluster's earlier events came to: facts and pending cards, shown by id and
    /// text with the ids of those events (their text is not sent again).
    pub known: Vec<Known>,
    /// Events shown in full, oldest first: a model's only the new ones; the offline
    /// reflector's the earlier ones too.
    pub events: Vec<EventView>,
    /// The events are one session's single mentions (no cluster holds them), unrelated
    /// to each other.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub singles: bool,
}

/// A fact or a pending card that a cluster's earlier events support, as context.
#[derive(Debug, Clone, Serialize)]
pub struct Known {
    pub id: String,
    pub text: String,
    /// A candidate waiting for a person's review, not yet a fact.
    pub pending: bool,
    /// The cluster's earlier events it cites: a model sees their ids only; their full text
    /// is kept so the gates check a proposal that cites them against it.
    pub events: Vec<EventView>,
}

impl ReflectPrompt {
    /// A prompt of one cluster.
    pub fn single(req: &ReflectRequest) -> ReflectPrompt {
        ReflectPrompt {
            parts: vec![ReflectPart {
                cluster: req.cluster,
                known: Vec::new(),
                events: req.events.clone(),
                singles: req.singles,
            }],
        }
    }

    /// Each cluster as a request of its own: the events shown in full (what the offline
    /// reflector reads).
    pub fn requests(&self) -> impl Iterator<Item = ReflectRequest> + '_ {
        self.parts.iter().map(|p| ReflectRequest {
            cluster: p.cluster,
            events: p.events.clone(),
            singles: p.singles,
        })
    }

    /// Events shown in full, over every cluster.
    pub fn shown(&self) -> usize {
        self.parts.iter().map(|p| p.events.len()).sum()
    }

    /// Every event a proposal from this prompt may cite: shown in full or listed under a
    /// known item, over every cluster (for the held-call key).
    pub fn ids(&self) -> impl Iterator<Item = &str> + '_ {
        self.parts.iter().flat_map(|p| {
            p.events
                .iter()
                .chain(p.known.iter().flat_map(|k| &k.events))
                .map(|e| e.id.as_str())
        })
    }

    /// The part whose events the gates check a proposal from this prompt against
    /// ([`Self::part_evidence`]; `None` when the prompt has no part): the one cluster it
    /// cites, the part holding most of its cited ids (the first on a tie or when it cites
    /// none). An id of another cluster is then not among them, and the ids gate refuses it:
    /// a candidate is made of one cluster's events, as with a prompt per cluster. The same
    /// for every proposal citing the same cluster, so a caller keeps each part's events once.
    pub fn evidence_part(&self, p: &Proposal) -> Option<usize> {
        let cited: std::collections::HashSet<&str> =
            p.supporting_event_ids.iter().map(String::as_str).collect();
        let mut best: Option<(usize, usize)> = None;
        for (i, part) in self.parts.iter().enumerate() {
            let hits = part_events(part)
                .filter(|e| cited.contains(e.id.as_str()))
                .count();
            if best.is_none_or(|(_, b)| hits > b) {
                best = Some((i, hits));
            }
        }
        best.map(|(i, _)| i)
    }

    /// The events of part `i` a proposal citing it is checked against, each once: shown in
    /// full or listed under a known item.
    pub fn part_evidence(&self, i: usize) -> Vec<EventView> {
        let mut seen = std::collections::HashSet::new();
        self.parts
            .get(i)
            .map(|part| {
                part_events(part)
                    .filter(|e| seen.insert(e.id.as_str()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn part_events(p: &ReflectPart) -> impl Iterator<Item = &EventView> {
    p.events
        .iter()
        .chain(p.known.iter().flat_map(|k| &k.events))
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
    /// Of the prompt tokens, those the server reported it took from its prompt cache (0
    /// when it reported none): OpenAI's `usage.prompt_tokens_details.cached_tokens`,
    /// llama.cpp's `timings.cache_n` or `tokens_cached`. They are counted in the prompt and
    /// charged like any other token; a server may bill them for less.
    #[serde(default)]
    pub cached_tokens: u64,
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
    /// What the server reported the call used, when it answered with usage and the reply
    /// was still of no use (not JSON, cut off, the wrong shape): the budget charges it.
    pub usage: Option<Usage>,
}

impl LlmError {
    pub fn new(kind: LlmErrorKind, message: impl Into<String>) -> LlmError {
        LlmError {
            kind,
            message: message.into(),
            usage: None,
        }
    }

    /// The same error, carrying the usage the server reported for the call (if it did).
    pub fn with_usage(mut self, usage: Usage) -> LlmError {
        if usage.reported && self.usage.is_none() {
            self.usage = Some(usage);
        }
        self
    }

    /// The tokens the budget charges for a call that failed this way, whose reservation
    /// was `estimate` (see `budget`): the reported usage when there is any; else the
    /// estimate when the server may have done the work (a reply that was no use, a
    /// timeout, a connection that broke after the request went out); else nothing (an
    /// error status, or a server that never answered).
    pub fn charge(&self, estimate: u64) -> u64 {
        if let Some(u) = self.usage {
            return u.total();
        }
        match self.kind {
            LlmErrorKind::Garbled
            | LlmErrorKind::Truncated
            | LlmErrorKind::Timeout
            | LlmErrorKind::Network => estimate,
            LlmErrorKind::Unreachable
            | LlmErrorKind::RateLimited
            | LlmErrorKind::Server
            | LlmErrorKind::Auth
            | LlmErrorKind::Unsupported => 0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LlmErrorKind {
    /// Could not connect: nothing was sent, so nothing was spent.
    Unreachable,
    /// The connection broke after the request was sent.
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
    /// The reply stopped at `max_tokens` before its JSON closed.
    Truncated,
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
