//! What the reflect stage sends, and what it holds back (SPEC S4 step 5, S5).
//!
//! The decisions, all pure:
//!
//! - **Prompts.** A prompt holds at most `cluster.max_events_per_prompt` events, and only an
//!   event that was in a prompt counts as seen: a cluster with more new events than that is
//!   split into several prompts of balanced size, oldest new events first. A prompt the
//!   budget does not admit leaves its events new for the next cycle. The cycle sends
//!   prompts oldest new event first, across clusters too, so the events that waited
//!   longest go out first and none starves while newer ones are served.
//! - **Each event's text is paid for once** (with a model; the offline reflector, which
//!   charges nothing and counts restatements itself, gets each cluster whole, its earlier
//!   events filled up as context: [`prompts`]). A model is shown a cluster's new events in
//!   full, and what its earlier events came to as [`Known`](super::Known) items: the facts
//!   and pending cards that cite them, by id and one line, with those events' ids
//!   ([`Supports`]); their text is not sent again, but the gates still check a proposal
//!   that cites them against it. Small clusters share a prompt ([`pack`]), since every call
//!   pays the instructions again. A new event that says a fact again word for word
//!   ([`FactIndex`]) needs no call at all: the engine proposes the fact's own text with it,
//!   the gates check that like any proposal, and routing reinforces the fact. And the judge
//!   is not asked about a candidate that merely repeats a fact ([`plain_restatement`]): no
//!   contradiction could be found, and routing reinforces it.
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
use crate::{text::measures, text::phrases};

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

/// A share of one cluster's new events in a packed prompt: positions `from..to` of that
/// cluster's new events (oldest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// The cluster, by position in the list given to [`pack`].
    pub cluster: usize,
    pub from: usize,
    pub to: usize,
}

impl Share {
    pub fn len(&self) -> usize {
        self.to - self.from
    }

    pub fn is_empty(&self) -> bool {
        self.to == self.from
    }
}

/// Reply tokens a prompt part may take: [`REPLY_BASE_TOKENS`] plus
/// [`REPLY_TOKENS_PER_EVENT`] for each of its new events. Parts share a prompt only while
/// their rooms add up to no more than `llm.max_tokens` ([`pack`]), so packing never gets a
/// reply cut off that prompts of their own would not (a part alone always has a prompt).
/// Measured on LoCoMo's conversations with the reference reflector (the dataset's own
/// observations, a stand-in for a good model): 22 reply tokens an event on average, but
/// a part dense with things worth saying takes more, and at 24 an event a third of one
/// batch cycle's prompts over the LoCoMo dev stream were cut off at 1,024 tokens (paid
/// for, their events left pending); 32 leaves room for those. A candidate with its fields
/// is about 60 to 100.
pub fn reply_room(events: usize) -> u64 {
    REPLY_BASE_TOKENS + REPLY_TOKENS_PER_EVENT * events as u64
}

/// The most new events one prompt may show a model: `cluster.max_events_per_prompt`, or
/// fewer when a reply for that many ([`reply_room`]) would not fit in `llm.max_tokens`.
/// Not fewer than [`MIN_EVENTS_PER_PROMPT`]: a `max_tokens` too small for that many
/// events' reply is a setting to raise (the cut-off reply says so), and splitting further
/// would pay the instructions again for every few events without making replies fit.
pub fn events_per_prompt(cap: usize, max_tokens: u64) -> usize {
    let fit = max_tokens.saturating_sub(REPLY_BASE_TOKENS) / REPLY_TOKENS_PER_EVENT;
    let fit = usize::try_from(fit).unwrap_or(usize::MAX);
    if fit < MIN_EVENTS_PER_PROMPT {
        cap.max(1)
    } else {
        cap.min(fit).max(1)
    }
}

/// See [`events_per_prompt`].
pub const MIN_EVENTS_PER_PROMPT: usize = 8;

/// See [`reply_room`]: a part's reply tokens whatever its size (one candidate).
pub const REPLY_BASE_TOKENS: u64 = 64;
/// See [`reply_room`].
pub const REPLY_TOKENS_PER_EVENT: u64 = 32;

/// Pack clusters' new events into prompts of at most `cap` events for a model: a cluster
/// with more new events than `cap` is split into balanced parts (as [`prompts`] splits
/// it), then the parts, oldest first, each go into the first prompt with room for their
/// events and their reply ([`reply_room`] within `max_tokens`), else a prompt of their own
/// (first fit). `new[c]` holds cluster `c`'s new events' times, oldest first. Every new
/// event is in exactly one prompt, a part is never split further, and prompts come oldest
/// event first.
pub fn pack(new: &[Vec<i64>], cap: usize, max_tokens: u64) -> Vec<Vec<Share>> {
    let cap = cap.max(1);
    let mut parts: Vec<(i64, Share)> = Vec::new();
    for (c, times) in new.iter().enumerate() {
        let n = times.len();
        let k = n.div_ceil(cap);
        for p in 0..k {
            let share = Share {
                cluster: c,
                from: p * n / k,
                to: (p + 1) * n / k,
            };
            parts.push((times[share.from], share));
        }
    }
    parts.sort_by_key(|(t, s)| (*t, s.cluster, s.from));
    // Each prompt: its events, its reply room, its shares.
    let mut prompts: Vec<(usize, u64, Vec<Share>)> = Vec::new();
    for (_, share) in parts {
        let room = reply_room(share.len());
        match prompts
            .iter_mut()
            .find(|(used, reply, _)| used + share.len() <= cap && reply + room <= max_tokens)
        {
            Some((used, reply, shares)) => {
                *used += share.len();
                *reply += room;
                shares.push(share);
            }
            None => prompts.push((share.len(), room, vec![share])),
        }
    }
    prompts.into_iter().map(|(_, _, s)| s).collect()
}

/// Most known items shown for one cluster (those citing most of its earlier events).
pub const MAX_KNOWN: usize = 10;

/// Which facts and cards cite which events: built once per cycle from every active fact's
/// and pending card's supporting ids, then asked what each cluster's earlier events came to.
pub struct Supports<'a> {
    by_event: std::collections::HashMap<&'a str, Vec<usize>>,
}

impl<'a> Supports<'a> {
    /// `items[i]` is the supporting event ids of item `i` (a fact or a card).
    pub fn new(items: impl IntoIterator<Item = &'a [String]>) -> Supports<'a> {
        let mut by_event: std::collections::HashMap<&str, Vec<usize>> = Default::default();
        for (i, ids) in items.into_iter().enumerate() {
            for id in ids {
                let v = by_event.entry(id.as_str()).or_default();
                if v.last() != Some(&i) {
                    v.push(i);
                }
            }
        }
        Supports { by_event }
    }

    /// The items that cite some of `earlier` (a cluster's earlier events, most recent
    /// first) and that `keep` keeps, each with the positions in `earlier` of those it cites
    /// (at most `max_events`, the most recent): the items citing most of them first, at
    /// most [`MAX_KNOWN`]. An earlier event no item cites is in none: it came to nothing.
    pub fn known(
        &self,
        earlier: &[&str],
        max_events: usize,
        keep: impl Fn(usize) -> bool,
    ) -> Vec<(usize, Vec<usize>)> {
        let mut hits: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for (k, id) in earlier.iter().enumerate() {
            for &item in self.by_event.get(id).into_iter().flatten() {
                hits.entry(item).or_default().push(k);
            }
        }
        let mut out: Vec<(usize, Vec<usize>)> =
            hits.into_iter().filter(|(item, _)| keep(*item)).collect();
        out.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        out.truncate(MAX_KNOWN);
        for (_, events) in &mut out {
            events.truncate(max_events.max(1));
        }
        out
    }
}

/// The least S6 similarity between a known item and one of its cluster's new events for
/// the item to be shown, unless they share [`KNOWN_MIN_SHARED`] content words: a new event
/// that shares neither with an item does not restate it and says nothing more of its
/// subject (a cluster of small talk joins facts about many things through its earlier
/// events), while "The support group was so powerful" shares "support group" with
/// "Caroline went to an LGBTQ support group", which it builds on.
pub const KNOWN_MIN_SIMILARITY: f64 = 0.5;
/// See [`KNOWN_MIN_SIMILARITY`].
pub const KNOWN_MIN_SHARED: usize = 2;

/// Whether a known item bears on a cluster's new events (their content words given): it
/// shares [`KNOWN_MIN_SHARED`] content words with one of them, or is at least
/// [`KNOWN_MIN_SIMILARITY`] similar to it.
pub fn bears_on(item: &str, events: &[BTreeSet<String>]) -> bool {
    let words = measures::content_tokens(item);
    events.iter().any(|e| {
        words.intersection(e).count() >= KNOWN_MIN_SHARED
            || measures::set_similarity(&words, e) >= KNOWN_MIN_SIMILARITY
    })
}

/// Active facts by their content words, to find the new events that say a fact again word
/// for word.
pub struct FactIndex {
    by_words: std::collections::HashMap<Vec<String>, Vec<usize>>,
    texts: Vec<String>,
}

impl FactIndex {
    pub fn new<'a>(facts: impl IntoIterator<Item = &'a str>) -> FactIndex {
        let mut by_words: std::collections::HashMap<Vec<String>, Vec<usize>> = Default::default();
        let mut texts = Vec::new();
        for (i, text) in facts.into_iter().enumerate() {
            let words = measures::content_token_seq(text);
            if !words.is_empty() {
                by_words.entry(words).or_default().push(i);
            }
            texts.push(text.to_string());
        }
        FactIndex { by_words, texts }
    }

    /// The facts an event says again and says nothing beyond: each of its sentences has
    /// exactly the content words of a fact, in the same order (so a reversed preference is
    /// not a restatement), and agrees with it in polarity,
    /// and every name and number of those facts is in the event. Empty when any sentence
    /// says something else (a lead-in, a new detail, small talk): a model reads that event.
    pub fn restated(&self, event: &str) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for sentence in phrases::sentences(event) {
            let words = measures::content_token_seq(&sentence);
            let fact = self.by_words.get(&words).and_then(|facts| {
                facts
                    .iter()
                    .copied()
                    .find(|&f| measures::polarity_agrees(&sentence, &self.texts[f]))
            });
            match fact {
                Some(f) => {
                    if !out.contains(&f) {
                        out.push(f);
                    }
                }
                None => return Vec::new(),
            }
        }
        if out
            .iter()
            .any(|&f| !measures::invented_entities(&self.texts[f], &[event]).is_empty())
        {
            return Vec::new();
        }
        out
    }
}

/// Whether a candidate only says a fact again: the same content words in the same order,
/// the same polarity, the same names and numbers. No judge could find the two in conflict
/// (a reversed order, an added "used to", a changed number or a negation all fail this),
/// so the judge is not asked, and routing reinforces the fact.
pub fn plain_restatement(candidate: &str, fact: &str) -> bool {
    let words = measures::content_token_seq(candidate);
    !words.is_empty()
        && words == measures::content_token_seq(fact)
        && measures::polarity_agrees(candidate, fact)
        && same_entities(candidate, fact)
}

/// How many of a candidate's nearest facts (restatements first, then most similar) the
/// judge is shown: only the first when routing reinforces it unless the judge finds the two
/// in conflict (the candidate restates it: `route::restates`), since a verdict about any
/// other fact changes nothing then; else all of them.
pub fn judge_neighbours(near: &[crate::selection::route::Near]) -> usize {
    match near.first() {
        Some(top) if top.restates => 1,
        _ => near.len(),
    }
}

/// The least S6 similarity at which a near fact is shown to the judge beside a candidate,
/// unless the candidate restates it, takes it back, or lies within the embedder's
/// restatement distance of it: a fact that shares fewer than half the content words of the
/// shorter of the two is about something else, and a verdict about it would change nothing.
pub const JUDGE_MIN_SIMILARITY: f64 = 0.5;

/// Whether the judge is shown this near fact (see [`JUDGE_MIN_SIMILARITY`]); `within` is the
/// embedder's restatement distance, when its vectors are used.
pub fn judge_shows(near: &crate::selection::route::Near, within: Option<f64>) -> bool {
    near.restates
        || near.retracts.is_some()
        || near.similarity >= JUDGE_MIN_SIMILARITY
        || near.distance.zip(within).is_some_and(|(d, w)| d <= w)
}

fn same_entities(a: &str, b: &str) -> bool {
    let key = |t: &str| -> BTreeSet<String> {
        measures::entities(t)
            .into_iter()
            .map(|e| e.text.to_lowercase())
            .collect()
    };
    key(a) == key(b)
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
    crate::sources::event::hex(&h.finalize())[..16].to_string()
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

    #[test]
    fn packing_puts_every_new_event_in_one_prompt_within_both_limits() {
        // Five small clusters, one large one; cap 8 events, reply room for 3 small parts.
        let t = |n: usize, start: i64| (0..n as i64).map(|i| start + i).collect::<Vec<_>>();
        let new = vec![t(2, 10), t(3, 5), t(1, 30), t(19, 0), t(2, 40), t(1, 20)];
        let max_tokens = 3 * reply_room(3);
        let prompts = pack(&new, 8, max_tokens);
        let mut seen: Vec<Vec<bool>> = new.iter().map(|c| vec![false; c.len()]).collect();
        for p in &prompts {
            assert!(p.iter().map(Share::len).sum::<usize>() <= 8);
            let room: u64 = p.iter().map(|s| reply_room(s.len())).sum();
            assert!(p.len() == 1 || room <= max_tokens, "{p:?}");
            for s in p {
                for x in &mut seen[s.cluster][s.from..s.to] {
                    assert!(!*x, "an event in two prompts");
                    *x = true;
                }
            }
        }
        assert!(seen.iter().flatten().all(|x| *x), "every new event is sent");
        // The 19-event cluster is split in three balanced parts (7, 6, 6 or so), and the
        // small clusters share prompts: fewer calls than one per cluster part.
        let parts_of_big: Vec<usize> = prompts
            .iter()
            .flatten()
            .filter(|s| s.cluster == 3)
            .map(Share::len)
            .collect();
        assert_eq!(parts_of_big.len(), 3);
        assert!(parts_of_big.iter().all(|n| (6..=7).contains(n)));
        assert!(prompts.len() < 3 + 5, "{prompts:?}");
        // One part a prompt when max_tokens leaves room for one reply only; a part alone
        // always has a prompt, whatever its size.
        let tight = pack(&new, 8, reply_room(1));
        assert!(tight.iter().all(|p| p.len() == 1), "{tight:?}");
        assert!(tight.iter().flatten().any(|s| s.len() > 1), "{tight:?}");
        // Many small clusters share a prompt when the reply has room for them all.
        let small: Vec<Vec<i64>> = (0..9).map(|c| t(2, c * 10)).collect();
        assert_eq!(pack(&small, 40, 9 * reply_room(2)).len(), 1);
        assert_eq!(pack(&small, 40, 3 * reply_room(2)).len(), 3);
    }

    #[test]
    fn a_prompt_shows_no_more_events_than_a_reply_has_room_for() {
        assert_eq!(events_per_prompt(40, 1024), 30);
        assert!(reply_room(events_per_prompt(40, 1024)) <= 1024);
        assert_eq!(events_per_prompt(8, 1024), 8);
        // Too small a max_tokens is a setting to raise, not a reason to split further.
        assert_eq!(events_per_prompt(40, 200), 40);
        assert_eq!(events_per_prompt(40, reply_room(MIN_EVENTS_PER_PROMPT)), 8);
        assert_eq!(events_per_prompt(0, 1024), 1);
    }

    #[test]
    fn a_restatement_is_the_same_words_in_order_and_nothing_more() {
        let idx = FactIndex::new([
            "I prefer tabs over spaces.",
            "The staging server is db-7 in Frankfurt.",
        ]);
        assert_eq!(idx.restated("I prefer tabs over spaces."), vec![0]);
        assert_eq!(idx.restated("i prefer TABS over spaces"), vec![0]);
        // A reversed preference, a negation, a new detail or a lead-in is not one.
        assert!(idx.restated("I prefer spaces over tabs.").is_empty());
        assert!(idx
            .restated("I no longer prefer tabs over spaces.")
            .is_empty());
        assert!(idx
            .restated("I prefer tabs over spaces. Also my cat is called Miso.")
            .is_empty());
        assert!(idx
            .restated("The staging server is db-8 in Frankfurt.")
            .is_empty());
        assert_eq!(
            idx.restated("The staging server is db-7 in Frankfurt."),
            vec![1]
        );

        assert!(plain_restatement(
            "I prefer tabs over spaces",
            "I prefer tabs over spaces."
        ));
        assert!(!plain_restatement(
            "I used to prefer tabs over spaces.",
            "I prefer tabs over spaces."
        ));
        assert!(!plain_restatement(
            "I don't prefer tabs over spaces.",
            "I prefer tabs over spaces."
        ));
    }

    #[test]
    fn a_known_item_bears_on_new_events_that_share_half_its_words() {
        let events: Vec<BTreeSet<String>> = [
            "My sister Ana moved to Porto last week.",
            "Great to hear, really great!",
            "The support group was so powerful, I'm going again.",
        ]
        .iter()
        .map(|t| measures::content_tokens(t))
        .collect();
        assert!(bears_on("Ana lives in Porto.", &events));
        assert!(bears_on("My sister Ana is a nurse.", &events));
        assert!(!bears_on("The build uses cargo nextest.", &events));
        assert!(!bears_on(
            "I had a great time hiking the Alps with my cousins in July.",
            &events
        ));
        assert!(!bears_on("Ana lives in Porto.", &[]));
        // Two words of its subject: what the new event builds on.
        assert!(bears_on(
            "Caroline went to an LGBTQ support group on 7 May 2023.",
            &events
        ));
    }

    #[test]
    fn known_items_are_the_facts_citing_a_clusters_earlier_events() {
        let f1 = vec!["e1".to_string(), "e2".to_string(), "e3".to_string()];
        let f2 = vec!["e9".to_string()];
        let card = vec!["e3".to_string(), "e4".to_string()];
        let s = Supports::new([f1.as_slice(), f2.as_slice(), card.as_slice()]);
        // Earlier events most recent first; e5 came to nothing.
        let k = s.known(&["e5", "e4", "e3", "e2", "e1"], 2, |_| true);
        // f1 cites three of them (capped at the two most recent), the card two; f2 none.
        assert_eq!(k, vec![(0, vec![2, 3]), (2, vec![1, 2])]);
        assert!(s.known(&["e5"], 10, |_| true).is_empty());
        // Only the items kept (those bearing on the new events).
        let k = s.known(&["e5", "e4", "e3", "e2", "e1"], 2, |i| i != 0);
        assert_eq!(k, vec![(2, vec![1, 2])]);
    }
}
