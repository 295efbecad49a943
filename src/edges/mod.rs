//! The edges: every read and write of the world a cycle touches. `inbox` reads event
//! files, `sources` reads other agents' transcripts, `ingest` stores both in `state` (the
//! SQLite database), `store` is the memory repository (git), `lock` the single-writer
//! lock, `fsutil` atomic file writes, `heartbeat` what the heartbeat's rules read from the
//! state, `units` the user's timer units and service manager. Nothing here decides what
//! memory holds.

pub mod fsutil;
pub mod heartbeat;
pub mod inbox;
pub mod ingest;
pub mod lock;
pub mod repo;
pub mod sources;
pub mod state;
pub mod store;
pub mod units;
