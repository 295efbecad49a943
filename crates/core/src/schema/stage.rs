//! Who made a commit: a stage of a cycle, or a person's command. The `Dream-Stage:`
//! trailer names it (`operations::commit` writes it, `operations::audit` reads it back),
//! and the maintenance passes name theirs (`passes::Pass::stage`).

use serde::Serialize;

/// Who made a commit: a stage of a cycle, or a person's command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// Hand edits found in the tree, committed as they are before anything else.
    Manual,
    /// Hand-written facts given ids, reworded facts made the owner's.
    Adopt,
    /// Reflect, gate, judge, route, apply (the evening's main stage).
    Consolidate,
    /// Recurring procedures drafted as skills.
    Skills,
    Dedupe,
    Merge,
    Promote,
    Forget,
    /// The page of what needs a person's attention.
    Digest,
    /// The capped context file agents import (`context.file`).
    Context,
    /// A person's review decision.
    Review,
    /// A person's undo of a fact, a card decision or a whole cycle.
    Undo,
    /// Waiting review cards queued as a person's decisions made room (an evening with
    /// nothing new to reflect on; otherwise `consolidate` settles the queue).
    Queue,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Manual => "manual",
            Stage::Adopt => "adopt",
            Stage::Consolidate => "consolidate",
            Stage::Skills => "skills",
            Stage::Dedupe => "dedupe",
            Stage::Merge => "merge",
            Stage::Promote => "promote",
            Stage::Forget => "forget",
            Stage::Digest => "digest",
            Stage::Context => "context",
            Stage::Review => "review",
            Stage::Undo => "undo",
            Stage::Queue => "queue",
        }
    }

    /// The stage a `Dream-Stage:` trailer names.
    pub fn parse(s: &str) -> Option<Stage> {
        [
            Stage::Manual,
            Stage::Adopt,
            Stage::Consolidate,
            Stage::Skills,
            Stage::Dedupe,
            Stage::Merge,
            Stage::Promote,
            Stage::Forget,
            Stage::Digest,
            Stage::Context,
            Stage::Review,
            Stage::Undo,
            Stage::Queue,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }

    /// True for the four maintenance passes.
    pub fn is_pass(self) -> bool {
        matches!(
            self,
            Stage::Dedupe | Stage::Merge | Stage::Promote | Stage::Forget
        )
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
