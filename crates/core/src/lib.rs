//! dream's pure core: everything that decides, and nothing that touches the world.
//!
//! dream's rule is "the model proposes, the code applies": whatever decides what memory
//! holds (the text measures, the secret detectors, event validation, the gates, routing,
//! the rows of memory files, clustering, the passes' gates, the review decisions, the
//! model contracts and their parsers) is a pure function of its arguments, so it can be
//! tested without a model, a repository or a clock, and re-checked later by `dream
//! verify`. This crate holds those functions. It has no dependency that does I/O (no
//! SQLite, git, HTTP), and its code opens no file, socket or process: the `dream` crate
//! reads and writes, then calls in here. Time comes in as an argument.

// Text and events (SPEC S2, S6, S8).
pub mod adapters;
pub mod event;
pub mod kv;
pub mod measures;
pub mod phrases;
pub mod secret_rules;
pub mod secrets;
pub mod turn;
pub mod when;

// Memory as rows, and the vectors and clusters a cycle reflects on (SPEC S3, S4).
pub mod cluster;
pub mod embed;
pub mod episodes;
pub mod memory;

// What agents load and search: the budgeted context and recall ranking (no echo), and
// the edits `dream hooks` makes to harnesses' files.
pub mod context;
pub mod hooks;
pub mod quiz;
pub mod scope;

// The model seam: contracts, prompts, parsers, the offline provider, the budget (S5, S7).
pub mod llm;

// Decisions: gates, routing, the maintenance passes' gates, skills, review (S4, S9, S10).
pub mod gates;
pub mod passes;
pub mod revert;
pub mod review;
pub mod route;
pub mod salience;
pub mod skills;
pub mod veto;

// What a cycle reports and commits, read back by the audit and the heartbeat (S4, S12).
pub mod audit;
pub mod commit;
pub mod digest;
pub mod heartbeat;
pub mod ingested;
pub mod report;

// Configuration as types, defaults and cross-key rules (S13); `dream` reads the file.
pub mod config;
