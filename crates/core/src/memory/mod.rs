//! Memory: the episodic tier, and a person's decisions over memory.
//!
//! In: routed candidates, review decisions, commits to revert. Out: the episodes (`episodes`:
//! the dated tier of single mentions, its pre-filter and its expiry), memory, the archive and
//! the cards after a person's accept, reject, edit or undo (`review`), and a commit undone
//! fact by fact (`revert`). The file format itself (rows, blocks, the archive, cards) is
//! `schema`.

pub mod episodes;
pub mod revert;
pub mod review;
