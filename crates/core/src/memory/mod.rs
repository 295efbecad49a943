//! Memory: what a cycle keeps, as rows of Markdown, and the person's decisions over it.
//!
//! In: routed candidates, review decisions, commits to revert. Out: the text of the block
//! files, the episodes, the archive and the review cards. `rows` is the file format (facts
//! as Markdown lines with a metadata comment, blocks that keep unknown lines verbatim, the
//! archive, cards), re-exported here so `memory::Fact` reads as what it is; `episodes` is the
//! dated tier of single mentions; `review` applies a person's accept, reject, edit and undo;
//! `revert` undoes a commit fact by fact.

mod rows;
pub use rows::*;

pub mod episodes;
pub mod revert;
pub mod review;
