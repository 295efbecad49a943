//! dream's engine: everything a cycle and a person's command do to the world, over the
//! pure core.
//!
//! Agents append episodic events to an inbox; a cycle turns them into a small set of
//! durable, auditable facts in a git repository of Markdown files, queues the doubtful ones
//! as review cards, and exits. Everything that decides is in `dream-core`, which does no
//! I/O; this crate reads and writes, and knows nothing of the terminal (the `dream` binary
//! parses the command line and prints). Its layers only call downwards:
//!
//! - [`edges`]: the inbox, the transcript sources, the state database, the memory
//!   repository, the lock, the timer units on disk;
//! - [`providers`]: the model and embedding backends (HTTP lives here);
//! - [`stages`]: what a cycle does, stage by stage, and [`cycle`], which orders them;
//! - [`machines`]: one memory across machines: init with a remote, join, sync, push;
//! - [`human`]: the person's side: review decisions, undo, explain, log, status, verify,
//!   skills, the schedule's units, the demo;
//! - [`agents`]: what agents load and how it reaches them (context, hooks, use counts, the
//!   quiz's read path);
//! - [`config`], [`doctor`], [`eval`], [`schedule`]: reading `dream.toml`, the installation
//!   checked end to end, the evaluations, the timer units;
//! - [`error`]: the one error type, with the exit code and hint of each kind.

#![deny(clippy::print_stdout, clippy::print_stderr, clippy::dbg_macro)]

pub mod edges;
pub mod providers;

pub mod cycle;
pub mod machines;
pub mod stages;

pub mod human;

pub mod agents;

pub mod config;
pub mod doctor;
pub mod eval;
pub mod schedule;

pub mod error;

pub use error::{Error, Result};
