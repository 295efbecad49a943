//! Operations: how a cycle is configured, reported, committed and watched.
//!
//! In: a cycle's outcome, the history of commit messages and recent reports. Out: the cycle
//! report (`report`), commit messages as values and read back (`commit`, `audit`), the
//! digest page (`digest`), and the heartbeat's warnings about quiet failure (`heartbeat`).
//! The configuration's types are `schema::settings`. Nothing here reads a file or a clock:
//! the engine hands in what it read. It is the core's top floor: it reports on every stage.

pub mod audit;
pub mod commit;
pub mod digest;
pub mod heartbeat;
pub mod machines;
pub mod report;
