//! Operations: how a cycle is configured, reported, committed and watched.
//!
//! In: the configuration's text, a cycle's outcome, the history of commit messages and
//! recent reports. Out: typed configuration with its defaults and cross-key rules (`config`),
//! the cycle report (`report`), commit messages as values and read back (`commit`, `audit`),
//! the digest page (`digest`), and the heartbeat's warnings about quiet failure
//! (`heartbeat`). Nothing here reads a file or a clock: the engine hands in what it read.

pub mod audit;
pub mod commit;
pub mod config;
pub mod digest;
pub mod heartbeat;
pub mod report;
