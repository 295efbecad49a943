//! dream's integration tests: one binary, one module per area, each test in a fresh
//! hermetic environment (see `util`). Tests drive the real `dream` binary the way a person
//! or a timer would, and assert on what they would see: exit codes, files, commits.

mod util;

mod agents;
mod backfill;
mod crash;
mod deploy;
mod docs;
mod doctor;
mod embed;
mod episodes;
mod hardening;
mod harnesses;
mod heartbeat;
mod llm;
mod machines;
mod measure;
mod model;
mod ops;
mod owner_words;
mod passes;
mod poison;
mod quiz;
mod recall;
mod review;
mod robust;
mod salience;
mod salience_decides;
mod scope;
mod secrets;
mod skills;
mod sources;
mod spine;
mod streams;
mod verify;
