//! The agent side: what agents load and search, and how it reaches them.
//!
//! dream writes a memory; agents must read it. [`context`] loads the repository and hands
//! it to the pure ranking in `dream_core::recall::context` (`dream context`, the file each cycle
//! writes); [`hooks`] installs that context into Claude Code and Codex for the current user
//! (and takes it out again, byte for byte), for the binary's `dream hooks`; [`quiz`] asks
//! the quiz's questions through the read path an agent uses; [`uses`] records which facts agents used,
//! for the optional `retention.unused_after_days` policy. The Model Context Protocol front
//! door (`dream mcp`) is the binary's `mcp` module, over these. None of it writes durable
//! memory: the cycle decides.

pub mod context;
pub mod hooks;
pub mod quiz;
pub mod uses;
