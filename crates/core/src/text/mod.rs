//! The words: what every stage measures a text with.
//!
//! In: a text (an event's, a candidate's, a fact's). Out: measures and judgements about it,
//! each explainable in one sentence: the S6 tokens, similarity, coverage and entities
//! (`measures`), the phrase rules about one sentence (`phrases`: where sentences end, what
//! is chatter, what is specific, which block a fact belongs to), relative dates read
//! against the day they were written (`when`), whether a statement is in a language these
//! rules read (`language`), the `key=value` words of metadata and commit lines (`kv`), and
//! whether two sentences in any language may be joined as one fact beside their embedding
//! distance (`agreement`).
//! Nothing here knows about events, memory or models; every later
//! stage builds on it.

pub mod agreement;
pub mod kv;
pub mod language;
pub mod measures;
pub mod phrases;
pub mod when;
