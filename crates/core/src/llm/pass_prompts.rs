//! Prompts of the maintenance passes, and defensive parsing of their replies.
//!
//! Each pass owns its prompt: a system text that states the JSON contract of SPEC S4 step 9
//! and the rules the gates will check (so a model knows what would be refused), the same
//! in every call with the same config (a stable prefix a server's prompt cache holds: what
//! varies, such as how many facts memory holds, is in the request), and the request as
//! compact JSON for the user turn. The provider only carries it (`Llm::chat_json`).
//! Replies are parsed leniently, entry by entry: a reply that is not the contract's object
//! at all is [`LlmErrorKind::Garbled`] (the pass then runs its engine backstops alone);
//! an entry with a missing or mistyped field still becomes a proposal, which the gates
//! refuse with a reason, so nothing a model said is silently lost.

use serde_json::{Map, Value};

use crate::schema::contract::{ChatCall, LlmError, LlmErrorKind};
use crate::schema::pass_contract::{
    DedupeReply, DedupeRequest, Drop, Forget, ForgetReply, ForgetRequest, Merge, MergeReply,
    MergeRequest, Promote, PromoteReply, PromoteRequest,
};

const PREAMBLE: &str = "You maintain the durable memory of an AI agent: short facts, one per line, each with an id, \
a block (persona: about the assistant itself; human: stable facts about the user, such as identity, preferences and \
commitments; episodes: events anchored in time or place; scratch: not yet placed) and a category. You only propose; \
code checks every proposal against the rules below and refuses, with a reason, what breaks one. Reply with exactly \
one JSON object and nothing else. When unsure, propose nothing.";

/// The dedupe call.
pub fn dedupe_call(req: &DedupeRequest) -> ChatCall {
    ChatCall {
        stage: "dedupe".into(),
        system: format!(
            "{PREAMBLE}\n\nTask: find facts that restate another fact (duplicates).\n\
Reply: {{\"drop\":[{{\"itemId\":\"<fact to drop>\",\"duplicateOf\":\"<fact that stays>\",\"reason\":\"<one sentence>\"}}]}}\n\
Rules: both ids are ids of the facts given; a fact is never a duplicate of itself; no chains (a fact that stays is \
never dropped, and nothing points at a dropped fact); the two facts share at least {min} of the smaller one's \
content words; they agree (one does not negate the other); the fact that stays holds the words of the one dropped \
(drop the shorter or vaguer restatement); facts marked by=owner are kept over others; every entry has a reason.\n\
candidatePairs lists the pairs the code measured as duplicates: rule on each. Pairs you leave out are applied by \
the code itself.",
            min = req.min_similarity
        ),
        user: to_json(req),
        max_tokens: req.max_tokens,
    }
}

/// The merge call.
pub fn merge_call(req: &MergeRequest) -> ChatCall {
    ChatCall {
        stage: "merge".into(),
        system: format!(
            "{PREAMBLE}\n\nTask: merge fragments: two or more facts of the same block that each state part of one \
fact, into one sentence.\n\
Reply: {{\"merge\":[{{\"intoId\":\"<fact rewritten>\",\"fromIds\":[\"<facts merged into it>\"],\"mergedText\":\"<the one sentence>\",\"reason\":\"<one sentence>\"}}]}}\n\
Rules: every id is an id of the facts given, listed once, and in at most one merge; all facts of a merge are in \
the same block; facts marked by=owner are never merged; mergedText uses only words that appear in the facts it \
merges (no new word, name, number, date or capitalised word), keeps every name and number and most of their \
words, and does not negate any of them; every entry has a reason. Facts that are merely related stay apart."
        ),
        user: to_json(req),
        max_tokens: req.max_tokens,
    }
}

/// The promote call.
pub fn promote_call(req: &PromoteRequest) -> ChatCall {
    ChatCall {
        stage: "promote".into(),
        system: format!(
            "{PREAMBLE}\n\nTask: move facts that sit in the wrong block, above all those still in scratch, to the \
block where they belong.\n\
Reply: {{\"promote\":[{{\"itemId\":\"<fact>\",\"toBlock\":\"persona|human|episodes\",\"reason\":\"<one sentence>\"}}]}}\n\
Rules: itemId is an id of the facts given, moved at most once; toBlock is one of {} and not the fact's own \
block; every entry has a reason.",
            req.target_blocks.join(", ")
        ),
        user: to_json(req),
        max_tokens: req.max_tokens,
    }
}

/// The forget call.
pub fn forget_call(req: &ForgetRequest) -> ChatCall {
    ChatCall {
        stage: "forget".into(),
        system: format!(
            "{PREAMBLE}\n\nTask: choose facts to forget under the retention policy. Forgotten facts move to an \
archive; they are not deleted.\n\
Reply: {{\"forget\":[{{\"itemId\":\"<fact>\",\"reason\":\"<one sentence>\",\"policy\":\"stale|capacity\"}}]}}\n\
Rules: a fact qualifies only if it was last seen more than {stale} days ago (stale), or memory holds more than \
{max} facts (activeFacts says how many it holds) and the fact is among the lowest-salience ones that bring it \
back under (capacity); facts in protected categories ({protected}) are never forgotten and are not shown; each \
fact at most once; every entry has a reason. Forget only what is no longer useful.",
            stale = req.stale_after_days,
            max = req.max_active_facts,
            protected = req.protected_categories.join(", ")
        ),
        user: to_json(req),
        max_tokens: req.max_tokens,
    }
}

/// The request as compact JSON: no indentation, which a tokenizer counts (pretty printing
/// made the merge pass's prompt about a third spaces).
fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("requests serialize")
}

/// The entries of a reply's list: `{"key":[...]}` (or a bare list). An empty object or a
/// null list is an empty proposal; an object without the key (a model answering
/// `{"facts":[...]}` to the merge pass) is off the contract, and garbled like anything else.
fn entries<'a>(value: &'a Value, key: &str) -> Result<Vec<&'a Value>, LlmError> {
    let garbled = |what: String| LlmError {
        kind: LlmErrorKind::Garbled,
        usage: None,
        message: format!("the {key} reply is not the contract's object: {what}"),
    };
    match value {
        Value::Object(m) => match m.get(key) {
            None if m.is_empty() => Ok(Vec::new()),
            None => {
                let keys: Vec<&str> = m.keys().map(String::as_str).take(6).collect();
                Err(garbled(format!(
                    "it has no `{key}` list (it has {})",
                    keys.join(", ")
                )))
            }
            Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(a)) => Ok(a.iter().collect()),
            Some(Value::Object(_)) => Ok(vec![&m[key]]),
            Some(other) => Err(garbled(format!("`{key}` is {}", kind(other)))),
        },
        Value::Array(a) => Ok(a.iter().collect()),
        other => Err(garbled(format!("got {}", kind(other)))),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A field as text, under any of its spellings; numbers become text, anything else empty.
fn text(m: Option<&Map<String, Value>>, keys: &[&str]) -> String {
    let Some(m) = m else { return String::new() };
    for k in keys {
        match m.get(*k) {
            Some(Value::String(s)) => return s.clone(),
            Some(Value::Number(n)) => return n.to_string(),
            _ => {}
        }
    }
    String::new()
}

/// A list field as texts; a single string counts as a list of one.
fn texts(m: Option<&Map<String, Value>>, keys: &[&str]) -> Vec<String> {
    let Some(m) = m else { return Vec::new() };
    for k in keys {
        match m.get(*k) {
            Some(Value::Array(a)) => {
                return a
                    .iter()
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        other => other.to_string(),
                    })
                    .collect()
            }
            Some(Value::String(s)) => return vec![s.clone()],
            _ => {}
        }
    }
    Vec::new()
}

pub fn parse_dedupe(value: &Value) -> Result<DedupeReply, LlmError> {
    let drop = entries(value, "drop")?
        .into_iter()
        .map(|e| {
            let m = e.as_object();
            Drop {
                item_id: text(m, &["itemId", "item_id", "id"]),
                duplicate_of: text(m, &["duplicateOf", "duplicate_of"]),
                reason: text(m, &["reason"]),
            }
        })
        .collect();
    Ok(DedupeReply { drop })
}

pub fn parse_merge(value: &Value) -> Result<MergeReply, LlmError> {
    let merge = entries(value, "merge")?
        .into_iter()
        .map(|e| {
            let m = e.as_object();
            Merge {
                into_id: text(m, &["intoId", "into_id"]),
                from_ids: texts(m, &["fromIds", "from_ids"]),
                merged_text: text(m, &["mergedText", "merged_text", "text"]),
                reason: text(m, &["reason"]),
            }
        })
        .collect();
    Ok(MergeReply { merge })
}

pub fn parse_promote(value: &Value) -> Result<PromoteReply, LlmError> {
    let promote = entries(value, "promote")?
        .into_iter()
        .map(|e| {
            let m = e.as_object();
            Promote {
                item_id: text(m, &["itemId", "item_id", "id"]),
                to_block: text(m, &["toBlock", "to_block", "block"]),
                reason: text(m, &["reason"]),
            }
        })
        .collect();
    Ok(PromoteReply { promote })
}

pub fn parse_forget(value: &Value) -> Result<ForgetReply, LlmError> {
    let forget = entries(value, "forget")?
        .into_iter()
        .map(|e| {
            let m = e.as_object();
            Forget {
                item_id: text(m, &["itemId", "item_id", "id"]),
                reason: text(m, &["reason"]),
                policy: text(m, &["policy"]),
            }
        })
        .collect();
    Ok(ForgetReply { forget })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::pass_contract::PassFact;
    use serde_json::json;

    #[test]
    fn replies_parse_leniently_entry_by_entry() {
        let v = json!({"drop": [
            {"itemId": "f_1", "duplicateOf": "f_2", "reason": "same"},
            {"item_id": 7, "duplicate_of": "f_3"},
            "nonsense"
        ]});
        let r = parse_dedupe(&v).unwrap();
        assert_eq!(r.drop.len(), 3);
        assert_eq!(r.drop[1].item_id, "7");
        assert_eq!(
            r.drop[2],
            Drop::default(),
            "an unreadable entry is kept, for the gates to refuse"
        );
        let m = parse_merge(&json!({"merge": {"intoId": "f_1", "fromIds": "f_2", "mergedText": "x", "reason": "r"}})).unwrap();
        assert_eq!(m.merge[0].from_ids, vec!["f_2"]);
        assert!(parse_forget(&json!({})).unwrap().forget.is_empty());
        assert!(parse_promote(&json!([])).unwrap().promote.is_empty());
    }

    #[test]
    fn a_reply_that_is_not_the_contract_is_garbled() {
        let e = parse_dedupe(&json!({"drop": "everything"})).unwrap_err();
        assert_eq!(e.kind, LlmErrorKind::Garbled);
        assert!(e.message.contains("`drop` is a string"), "{}", e.message);
        assert!(parse_forget(&json!("no")).is_err());
        let e = parse_merge(&json!({"facts": [{"text": "x"}]})).unwrap_err();
        assert_eq!(e.kind, LlmErrorKind::Garbled);
        assert!(
            e.message.contains("no `merge` list (it has facts)"),
            "{}",
            e.message
        );
        assert!(parse_promote(&json!({})).unwrap().promote.is_empty());
    }

    #[test]
    fn prompts_state_the_contract_and_carry_the_request() {
        let req = DedupeRequest {
            facts: vec![PassFact {
                id: "f_1".into(),
                block: "human".into(),
                category: "identity".into(),
                by: "auto".into(),
                text: "I live in Lisbon.".into(),
            }],
            candidate_pairs: vec![],
            min_similarity: 0.9,
            max_tokens: 300,
        };
        let call = dedupe_call(&req);
        assert_eq!(call.stage, "dedupe");
        assert_eq!(call.max_tokens, 300);
        assert!(call.system.contains("\"duplicateOf\""));
        assert!(call.user.contains("I live in Lisbon."));
        assert!(call.user.contains("candidatePairs"));
        assert!(!call.user.contains("maxTokens"));
    }
}
