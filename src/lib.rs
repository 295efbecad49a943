//! dream: a scheduled batch consolidator for an AI agent's memory.
//!
//! Agents append episodic events to an inbox; `dream run` turns them into a small set of
//! durable, auditable facts in a git repository of Markdown files, queues the doubtful ones
//! as review cards, and exits. The rule behind every design choice: **the model proposes,
//! the code applies.** See `docs/ARCHITECTURE.md` for the map.
//!
//! Everything that decides is in the `dream-core` crate, which does no I/O. This crate is
//! the rest, in layers that only call downwards:
//!
//! - [`edges`]: the inbox, the state database, the memory repository, the lock;
//! - [`providers`]: the model and embedding backends (HTTP lives here);
//! - [`stages`]: what a cycle does, stage by stage, and [`cycle`], which orders them;
//! - [`human`]: the person's side: review decisions, undo, explain, log, verify, skills;
//! - [`doctor`]: the installation checked end to end; [`schedule`]: the timer units;
//! - [`cli`], [`cmd`], [`error`]: the command line, the only code that prints, and the
//!   one place that maps errors to exit codes.

pub mod edges;
pub mod providers;

pub mod cycle;
pub mod stages;

pub mod human;

pub mod agents;

pub mod config;
pub mod doctor;
pub mod eval;
pub mod schedule;

pub mod cli;
pub mod cmd;
pub mod error;

pub use error::{Error, Result};
