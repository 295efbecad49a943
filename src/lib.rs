//! dream: a scheduled batch consolidator for an AI agent's memory.
//!
//! Agents append episodic events to an inbox; `dream run` turns them into a small set of
//! durable, auditable facts in a git repository of Markdown files, queues the doubtful ones
//! as review cards, and exits. The rule behind every design choice: **the model proposes,
//! the code applies.** See `docs/ARCHITECTURE.md` for the map of this crate.
//!
//! Layout: the pure core (`measures`, `secrets`, `event`, `gates`, `route`, `memory`,
//! `cluster`) does no I/O; the edges (`inbox`, `ingest`, `state`, `store`, `lock`, the
//! providers in `llm` and `embed`) do; `cycle` sequences them; `cli` and `cmd` are the
//! command line, and the only code that prints.

pub mod adapters;
pub mod bench;
pub mod cli;
pub mod cluster;
pub mod cmd;
pub mod config;
pub mod consolidate;
pub mod cycle;
pub mod digest;
pub mod embed;
pub mod error;
pub mod eval;
pub mod event;
pub mod fake_llm;
pub mod fsutil;
pub mod gates;
pub mod inbox;
pub mod ingest;
pub mod llm;
pub mod lock;
pub mod measures;
pub mod memory;
pub mod oplog;
pub mod passes;
pub mod report;
pub mod route;
pub mod schedule;
pub mod secrets;
pub mod sources;
pub mod skills;
pub mod state;
pub mod store;
pub mod verify;
// The human side: review decisions, undo, explain and log (SPEC S9).
pub mod audit;
pub mod oversight;
pub mod revert;
pub mod review;
pub mod trail;
pub mod veto;
pub mod synth;

pub use error::{Error, Result};
