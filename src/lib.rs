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

// The pure core: no I/O, no clock.
pub mod cluster;
pub mod event;
pub mod gates;
pub mod measures;
pub mod memory;
pub mod report;
pub mod route;
pub mod secrets;

// The edges: inbox, state, repository, lock, providers.
pub mod adapters;
pub mod embed;
pub mod fsutil;
pub mod inbox;
pub mod ingest;
pub mod llm;
pub mod lock;
pub mod sources;
pub mod state;
pub mod store;

// The cycle and its stages.
pub mod consolidate;
pub mod cycle;
pub mod digest;
pub mod oplog;
pub mod passes;
pub mod skills;

// The human side: review decisions, undo, explain, log, verify (SPEC S9, S12).
pub mod audit;
pub mod oversight;
pub mod revert;
pub mod review;
pub mod trail;
pub mod verify;
pub mod veto;

// Configuration, the command line, operations.
pub mod cli;
pub mod cmd;
pub mod config;
pub mod error;
pub mod schedule;

// Measurement: synthetic workloads, benchmarks, evaluations, the fake model server.
pub mod bench;
pub mod eval;
pub mod fake_llm;
pub mod synth;

pub use error::{Error, Result};
