//! What the reflect stage sends, and what it holds back (SPEC S4 step 5, S5).
//!
//! Two decisions, both pure:
//!
//! - **Prompts.** A prompt holds at most `cluster.max_events_per_prompt` events, and only an
//!   event that was in a prompt counts as seen: a cluster with more new events than that is
//!   split into several prompts of balanced size, oldest new events first, each filled up
//!   with the cluster's most recent earlier events as context. A prompt the budget does not
//!   admit leaves its events new for the next cycle. The cycle sends prompts oldest new
//!   event first, across clusters too, so the events that waited longest go out first and
//!   none starves while newer ones are served.
//! - **Held calls.** A call that failed the same way in [`MAX_SAME_FAILURES`] cycles running
//!   (cut off at the token limit, a reply that is not the contract, a timeout) would fail
//!   again and be paid for again, so it is held: not sent, its events left pending, and the
//!   report (and so the digest) says why and what to change. What a call would send is its
//!   [`key`] (the model, `llm.max_tokens`, `llm.timeout_secs` and its events): when any of
//!   them changes, the call is tried again. Failures that say nothing about the call itself
//!   (a server down, 5xx, 429) never hold it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::LlmErrorKind;

/// Cycles running in which a call may fail the same way before it is held.
pub const MAX_SAME_FAILURES: u32 = 2;

/// A cluster member as the planner sees it.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    pub id: &'a str,
    /// When it happened (Unix seconds; only the order matters).
    pub ts: i64,
    /// Already seen by a model in an earlier call.
    pub reflected: bool,
}

/// One prompt of a cluster: positions into the members given to [`prompts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// Every event shown, oldest first.
    pub events: Vec<usize>,
    /// The new events among them: those a successful call marks as seen.
    pub new: Vec<usize>,
}

/// Split a cluster into prompts of at most `cap` events that together show every new
/// event once (see the module). A cluster with no new event needs no prompt.
pub fn prompts(members: &[Member<'_>], cap: usize) -> Vec<Prompt> {
    let cap = cap.max(1);
    let by_time = |a: &usize, b: &usize| {
        members[*a]
            .ts
            .cmp(&members[*b].ts)
            .then_with(|| members[*a].id.cmp(members[*b].id))
    };
    let mut new: Vec<usize> = (0..members.len())
        .filter(|&i| !members[i].reflected)
        .collect();
    new.sort_by(by_time);
    let mut old: Vec<usize> = (0..members.len())
        .filter(|&i| members[i].reflected)
        .collect();
    old.sort_by(|a, b| by_time(b, a));
    if new.is_empty() {
        return Vec::new();
    }
    let parts = new.len().div_ceil(cap);
    (0..parts)
        .map(|p| {
            let chunk = &new[p * new.len() / parts..(p + 1) * new.len() / parts];
            let room = cap - chunk.len();
            let mut events: Vec<usize> =
                chunk.iter().chain(old.iter().take(room)).copied().collect();
            events.sort_by(by_time);
            Prompt {
                events,
                new: chunk.to_vec(),
            }
        })
        .collect()
}

/// A reflect call that failed in a way that would repeat, as a cycle records it (in its
/// report, `window.failures`) for the next cycle to read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// What the call sends (see [`key`]).
    pub key: String,
    /// How it failed ([`way`]).
    pub way: String,
    /// The last failure's message.
    pub reason: String,
    /// Cycles running in which it failed this way.
    pub tries: u32,
    /// Events in the call.
    pub events: usize,
    /// The call was not sent in this cycle: it had failed [`MAX_SAME_FAILURES`] times.
    #[serde(default)]
    pub held: bool,
}

/// What a call sends: the model (with its server), `max_tokens`, the timeout, and the ids
/// of its events in any order.
pub fn key<'a>(
    model: &str,
    max_tokens: u64,
    timeout_secs: u64,
    ids: impl IntoIterator<Item = &'a str>,
) -> String {
    let ids: BTreeSet<&str> = ids.into_iter().collect();
    let mut h = Sha256::new();
    h.update(format!("{model}\n{max_tokens}\n{timeout_secs}\n").as_bytes());
    for id in ids {
        h.update(id.as_bytes());
        h.update(b"\n");
    }
    crate::event::hex(&h.finalize())[..16].to_string()
}

/// How a failure would repeat, or `None` for a failure that says nothing about the call.
pub fn way(kind: LlmErrorKind) -> Option<&'static str> {
    match kind {
        LlmErrorKind::Truncated => Some("cut off at the token limit"),
        LlmErrorKind::Garbled => Some("a reply that is not the contract"),
        LlmErrorKind::Timeout => Some("no reply within the timeout"),
        _ => None,
    }
}

/// What a person can change so a call that keeps failing this way succeeds.
pub fn advice(way: &str) -> &'static str {
    match way {
        "cut off at the token limit" => {
            "raise llm.max_tokens, or use a bigger model that answers within it"
        }
        "no reply within the timeout" => {
            "raise llm.timeout_secs, or lower llm.max_tokens and cluster.max_events_per_prompt"
        }
        _ => "use a bigger model: this one does not answer in the contract's JSON",
    }
}

/// The earlier failure that holds the call with this key, if it failed the same way in
/// [`MAX_SAME_FAILURES`] cycles running.
pub fn held<'a>(previous: &'a [Failure], key: &str) -> Option<&'a Failure> {
    previous
        .iter()
        .find(|f| f.key == key && f.tries >= MAX_SAME_FAILURES)
}

/// This cycle's record of a failure: one more try when the last cycle saw the same call
/// fail the same way, else the first.
pub fn record(previous: &[Failure], key: &str, way: &str, reason: &str, events: usize) -> Failure {
    let before = previous
        .iter()
        .find(|f| f.key == key && f.way == way)
        .map_or(0, |f| f.tries);
    Failure {
        key: key.into(),
        way: way.into(),
        reason: reason.into(),
        tries: before + 1,
        events,
        held: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(new: usize, old: usize) -> (Vec<String>, Vec<(i64, bool)>) {
        let mut ids = Vec::new();
        let mut rows = Vec::new();
        for i in 0..new + old {
            ids.push(format!("e{i:03}"));
            rows.push((1_790_000_000 + 60 * i as i64, i >= new));
        }
        (ids, rows)
    }

    fn view<'a>(ids: &'a [String], rows: &[(i64, bool)]) -> Vec<Member<'a>> {
        ids.iter()
            .zip(rows)
            .map(|(id, (ts, reflected))| Member {
                id,
                ts: *ts,
                reflected: *reflected,
            })
            .collect()
    }

    #[test]
    fn every_new_event_is_in_exactly_one_prompt_of_at_most_the_cap() {
        for (new, old, cap) in [(162, 0, 40), (41, 5, 40), (3, 10, 2), (5, 0, 1), (0, 4, 40)] {
            let (ids, rows) = members(new, old);
            let m = view(&ids, &rows);
            let ps = prompts(&m, cap);
            assert_eq!(ps.len(), new.div_ceil(cap), "{new} new, cap {cap}");
            let mut seen: Vec<usize> = ps.iter().flat_map(|p| p.new.clone()).collect();
            seen.sort();
            assert_eq!(seen, (0..new).collect::<Vec<_>>(), "each new event once");
            for p in &ps {
                assert!(p.events.len() <= cap);
                assert!(p.new.iter().all(|i| p.events.contains(i)));
                assert!(p
                    .events
                    .iter()
                    .all(|&i| !m[i].reflected || !p.new.contains(&i)));
            }
        }
        // Balanced: 41 new events at a cap of 40 are two prompts of 20 and 21, each with
        // room for the five most recent earlier events as context.
        let (ids, rows) = members(41, 5);
        let ps = prompts(&view(&ids, &rows), 40);
        assert_eq!(
            ps.iter().map(|p| p.new.len()).collect::<Vec<_>>(),
            vec![20, 21]
        );
        assert!(ps.iter().all(|p| p.events.len() == p.new.len() + 5));
        // Oldest new events go first, so a budget that admits one prompt sends them.
        assert_eq!(ps[0].new, (0..20).collect::<Vec<_>>());
    }

    #[test]
    fn a_call_is_held_after_failing_the_same_way_twice_until_what_it_sends_changes() {
        let k = key("openai:m@http://x", 1024, 120, ["b", "a"]);
        assert_eq!(k, key("openai:m@http://x", 1024, 120, ["a", "b"]));
        assert_ne!(k, key("openai:m@http://x", 2048, 120, ["a", "b"]));
        assert_ne!(k, key("openai:m@http://x", 1024, 120, ["a", "b", "c"]));
        let cut = way(LlmErrorKind::Truncated).unwrap();
        let first = record(&[], &k, cut, "cut off", 2);
        assert_eq!(first.tries, 1);
        assert!(held(std::slice::from_ref(&first), &k).is_none());
        let second = record(&[first], &k, cut, "cut off", 2);
        assert_eq!(second.tries, 2);
        assert!(held(std::slice::from_ref(&second), &k).is_some());
        // Failing another way starts again.
        let other = record(&[second], &k, way(LlmErrorKind::Garbled).unwrap(), "x", 2);
        assert_eq!(other.tries, 1);
        assert_eq!(way(LlmErrorKind::Server), None, "a 5xx never holds a call");
        assert_eq!(way(LlmErrorKind::Unreachable), None);
    }
}
