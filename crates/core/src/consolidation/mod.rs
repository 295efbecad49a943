//! Consolidation: what a cycle does to memory, decided and applied (SPEC S4 steps 6 to 9).
//!
//! In: a gated candidate with the judge's verdict, the person's vetoes, memory and the
//! pending cards as the cycle holds them, and the events the candidate cites, read through
//! [`Events`] (the engine implements it over the state database). Out: memory and the cards
//! as the cycle will commit them, what becomes of each card's file, the commit's lines, the
//! report's rows, and the candidate's record for the state. The episodes that expire and
//! the maintenance passes' mutations that passed their gates are applied here too. Nothing
//! here reads the state, a file or a clock: the engine reads, calls in here, and stores and
//! commits what comes back.
//!
//! One candidate goes through [`consolidate`], three steps, one module each:
//!
//! 1. [`decide`]: read what its route depends on and choose it: the pending card it
//!    restates (joined with it, [`merge`]), its novelty against durable memory, the
//!    person's vetoes, `selection::route`, and an episode said again (a card that asks a
//!    person, or the move to its durable block).
//! 2. [`session_cap`]: hold a new episode to its session's cap
//!    (`episodes.max_per_session`).
//! 3. [`apply`]: promote, keep as an episode, queue, reinforce or refuse, in memory and the
//!    cards, and record it.
//!
//! After a window is routed, [`expiry`] moves the episodes past `episodes.retention_days`,
//! or the oldest over `episodes.max_facts`, to the archive. The maintenance passes ask,
//! gate and guard in the engine's `stages::passes`; [`pass_apply`] applies each mutation
//! that passed and records it.

pub mod apply;
pub mod decide;
pub mod expiry;
pub mod merge;
pub mod pass_apply;
pub mod session_cap;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

use chrono::{DateTime, NaiveDate, Utc};

use crate::operations::report::Report;
use crate::schema::contract::Verdict;
use crate::schema::settings::Config;
use crate::schema::{Card, Memory};
use crate::selection::gates::{Gated, Sources};
use crate::selection::keep::Scorer;
use crate::selection::route::{Restating, Texts};
use crate::selection::veto::Veto;
use crate::sources::event::Stored;

/// What the policy needs from the state: the events a candidate cites. The engine reads
/// each from the state database once a part of the window and shares it (a card's whole
/// support is asked for again each time it is restated).
pub trait Events {
    /// What reading the state may fail with. It also says when routing chose a fact that
    /// is not active ([`NotActive`]), which would be a fault of this code.
    type Error: From<NotActive>;

    /// The events with these ids, in the order asked; unknown ids are left out.
    fn by_ids(&mut self, ids: &[String]) -> Result<Vec<Rc<Stored>>, Self::Error>;

    /// The events' words as the gates read them, prepared once a part.
    fn sources(&self) -> &Sources;
}

/// Routing chose a fact that is not active: the message says which and what for.
#[derive(Debug, Clone, PartialEq)]
pub struct NotActive(pub String);

/// What the policy reads besides memory: the configuration, the cycle's day, clock and id,
/// the salience scorer the gates used, and the day a moment was lived.
pub struct Policy<'a> {
    pub config: &'a Config,
    pub today: NaiveDate,
    pub now: DateTime<Utc>,
    pub cycle_id: &'a str,
    pub scorer: &'a dyn Scorer,
    /// The day of a moment as the person lived it: the local day in the time zone of the
    /// machine dream runs on (the engine knows it; the core reads no zone or clock).
    pub local_day: fn(DateTime<Utc>) -> NaiveDate,
}

/// What routing one part of the window reads and keeps between its candidates: the
/// person's vetoes, how a restatement is found (and the texts prepared for it), and how
/// many episodes each session has added so far.
pub struct Routing<'a> {
    pub vetoes: &'a [Veto],
    pub restating: &'a Restating<'a>,
    pub texts: &'a mut Texts,
    pub per_session: &'a mut HashMap<String, usize>,
}

/// What applying a route changes: memory and the cards as the cycle will commit them, what
/// each card's file becomes, the consolidation commit's lines, the report, and the facts
/// candidates reinforced.
pub struct Cycle<'a> {
    pub memory: &'a mut Memory,
    pub cards: &'a mut Vec<Card>,
    pub card_writes: &'a mut BTreeMap<String, CardWrite>,
    pub lines: &'a mut Vec<String>,
    pub report: &'a mut Report,
    pub reinforced: &'a mut BTreeSet<String>,
}

/// What a cycle's routing does to a card's file. A pending card changed by several
/// candidates in a cycle is rendered once, as it stands at the end.
pub enum CardWrite {
    /// The pending card with this path in the cycle's cards.
    Pending,
    Text(String),
    Delete,
}

/// A candidate's record, for the state's `candidates` table: its id, the route it took,
/// its text, and everything measured about it.
pub struct Record {
    pub id: String,
    pub route: &'static str,
    pub text: String,
    pub json: serde_json::Value,
}

/// Route one gated candidate and apply its route: the policy's entry point.
pub fn consolidate<E: Events>(
    p: &Policy<'_>,
    events: &mut E,
    cycle: &mut Cycle<'_>,
    routing: &mut Routing<'_>,
    g: &Gated,
    verdict: Option<&Verdict>,
) -> Result<Record, E::Error> {
    // 1. Decide the route from what it depends on.
    let mut decided = decide::decide(p, events, cycle.memory, cycle.cards, routing, g, verdict)?;
    // 2. Hold a new episode to its session's cap.
    session_cap::cap(p, &mut decided, routing.per_session);
    // 3. Apply it to memory and the cards, and record it.
    Ok(apply::apply(p, cycle, decided)?)
}
