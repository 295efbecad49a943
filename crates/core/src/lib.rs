//! dream's pure core: everything that decides, and nothing that touches the world.
//!
//! dream's rule is "the model proposes, the code applies": whatever decides what memory
//! holds is a pure function of its arguments, so it can be tested without a model, a
//! repository or a clock, and re-checked later by `dream verify`. This crate holds those
//! functions. It has no dependency that does I/O (no SQLite, git, HTTP), and its code opens
//! no file, socket or process and reads no clock (clippy's `disallowed_methods`,
//! `disallowed_types` and `disallowed_macros` in `crates/core/clippy.toml` keep that, and
//! `tests/purity.rs` checks the manifest): the `dream-engine` crate reads and writes, then
//! calls in here. Time comes in as an argument.
//!
//! The folders read as the data's path through a cycle:
//!
//! `sources` (lines to events) → `selection` (events to candidates to routes, through
//! clusters and gates) → `memory` (rows of Markdown, episodes, review) → `recall` (what
//! agents are shown, and the quiz that proves it still answers); beside them `passes` (the
//! maintenance passes over memory), `skills` (recurring procedures), `llm` (the model
//! seam: contracts, prompts, the offline provider, the budget) and `operations` (config,
//! report, commits, heartbeat, digest). `text` holds the measures they all use.

#![deny(clippy::print_stdout, clippy::print_stderr, clippy::dbg_macro)]

// The words every stage measures.
pub mod text;

// The shapes every stage shares: settings, memory's files, gate rows, the model contracts.
pub mod schema;

// The pipeline, stage by stage.
pub mod memory;
pub mod recall;
pub mod selection;
pub mod sources;

// Beside the pipeline: maintenance passes, skills, the model seam, operations.
pub mod llm;
pub mod operations;
pub mod passes;
pub mod skills;

// What a cycle does to memory: each candidate's route decided and applied, episodes
// expired, the passes' mutations applied.
pub mod consolidation;
