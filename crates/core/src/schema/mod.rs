//! The schema: the shapes every stage shares, and their text forms.
//!
//! In: words and events (`text`, `sources`), nothing else. Out: the types the stage folders
//! speak to one another in, so each of them imports downward only: the settings of
//! `dream.toml` with their defaults and cross-key rules (`settings`); memory as files (facts
//! as Markdown rows with a metadata comment, blocks that keep unknown lines verbatim, the
//! archive: `rows`), the review cards (`cards`), the wording of a memory line (one line, an
//! excerpt, an episode's day and speaker: `wording`); a gate's row, its name and a
//! candidate's measures (`gate_rows`); who made a commit (`stage`); and the JSON contracts
//! of the model calls (`contract` for reflect and judge, `pass_contract`,
//! `skill_contract`). A memory file's pieces are re-exported here, so `schema::Fact` reads
//! as what it is. Nothing here decides what memory keeps: the stages above do.

pub mod contract;
pub mod pass_contract;
pub mod settings;
pub mod skill_contract;

mod cards;
mod gate_rows;
mod rows;
mod stage;
mod wording;

pub use cards::*;
pub use gate_rows::*;
pub use rows::*;
pub use stage::Stage;
pub use wording::*;
