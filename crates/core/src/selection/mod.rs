//! Selection: from events to the candidates memory may keep, and where each goes.
//!
//! In: the window's events (their vectors and text) and the memory as it stands. Out: one
//! route per candidate (promote, episode, queue, reinforce, refuse), each with the measured
//! reasons. `embed` and `cluster` group events that restate something; `gates` re-derives a
//! proposal from the events it cites; `route` sends a gated candidate to one place; `veto`
//! keeps a person's earlier "no"; `salience` scores how worth keeping one statement is,
//! and `keep` says what that score decides (a line, a session's cap, the review queue).
//! Everything here is a pure function of its arguments: the model proposes, this code
//! decides.

pub mod cluster;
pub mod embed;
pub mod gates;
pub mod keep;
pub mod route;
pub mod salience;
pub mod veto;
