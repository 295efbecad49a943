//! Sources and events: the pipeline's first stage.
//!
//! In: one line of dream's inbox, or one line (row) of another agent's transcript. Out: the
//! events dream stores, each validated and redacted (`event::parse_line`,
//! `event::from_object`, the one path every event takes), a person's turn split into
//! what they wrote, pasted, and what their harness injected (`turn`), and what ingest read
//! as plain data (`ingested`). `adapters` maps each transcript format; `secrets` (with the
//! vendored gitleaks rules, `secret_rules`) redacts before anything is stored and is the
//! secrets gate later stages reuse.

pub mod adapters;
pub mod event;
pub mod ingested;
pub mod secret_rules;
pub mod secrets;
pub mod turn;
