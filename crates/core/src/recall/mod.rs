//! Recall: what agents are shown of memory, and the proof that it still answers.
//!
//! In: memory as it stands (and a session's project, a question, a budget). Out: the context
//! an agent loads at session start and what `recall` finds (`context`), which facts a
//! project's session sees (`scope`), the edits that make a harness load the context
//! (`hooks`), and the recall quiz that checks after each cycle that memory still answers
//! what it held and no longer answers what it forgot (`quiz`).

pub mod context;
pub mod hooks;
pub mod quiz;
pub mod scope;
