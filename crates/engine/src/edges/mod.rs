//! The edges: every read and write of the world a cycle touches. `inbox` reads event
//! files, `sources` reads other agents' transcripts (`opencode` their SQLite database, read-only), `ingest` stores both in `state` (the
//! SQLite database), `store` is the memory repository (git), `lock` the single-writer
//! lock, `fsutil` atomic file writes, `heartbeat` what the heartbeat's rules read from the
//! state, `units` the user's timer units and service manager, `journal` the intent journal
//! that makes a multi-file change all or nothing, `remote` the git command line that
//! reaches another machine (and the membership file), `branches` the shared branches as
//! git objects, `guard` what every writing command does
//! first (the lock, then recovery), `crash` the test-only crash points. Nothing here decides
//! what memory holds.

pub mod branches;
pub mod crash;
pub mod fsutil;
pub mod guard;
pub mod heartbeat;
pub mod inbox;
pub mod ingest;
pub mod journal;
pub mod lock;
pub mod opencode;
pub mod project;
pub mod remote;
pub mod repo;
pub mod sources;
pub mod state;
pub mod store;
pub mod units;
