//! The maintenance passes' pure half (SPEC S4 step 9): `gates` checks every dedupe,
//! merge, promote and forget proposal against the pre-pass state, `loss` is the guard on
//! what a cycle's passes take out of memory in all, `record` is the commit-line format
//! those mutations are written in and `dream verify` reads back, and `review` decides which
//! facts the merge and promote passes are shown (what changed).
//! The sequencing (ask the model, gate, apply, commit) is `dream_engine::stages::passes`.

pub mod gates;
pub mod loss;
pub mod record;
pub mod review;

use crate::schema::Stage;

/// The four maintenance passes, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pass {
    Dedupe,
    Merge,
    Promote,
    Forget,
}

impl Pass {
    pub const ALL: [Pass; 4] = [Pass::Dedupe, Pass::Merge, Pass::Promote, Pass::Forget];

    /// The stage whose commit records this pass.
    pub fn stage(self) -> Stage {
        match self {
            Pass::Dedupe => Stage::Dedupe,
            Pass::Merge => Stage::Merge,
            Pass::Promote => Stage::Promote,
            Pass::Forget => Stage::Forget,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.stage().as_str()
    }

    /// What the pass does to a fact, as the commit subject says it.
    pub fn verb(self) -> &'static str {
        match self {
            Pass::Dedupe => "dropped",
            Pass::Merge => "merged",
            Pass::Promote => "moved",
            Pass::Forget => "forgotten",
        }
    }
}

impl std::fmt::Display for Pass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
