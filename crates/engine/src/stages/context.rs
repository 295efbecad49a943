//! The context stage: each cycle writes what `dream context` would print to
//! `context.file` (CONTEXT.md by default) as memory will be committed, so a harness that
//! imports a file by path (Claude Code's `@` import) loads the same budgeted view, and
//! commits it with the cycle's last commit. It runs last, after every stage that changes
//! memory or the review queue; an unchanged view writes nothing. The file is ranked as of
//! the day memory was last seen, not the clock, so it is a function of memory and the
//! queue: an idle day commits nothing. (Review decisions, undos and skill decisions keep it
//! true in their own commits: `agents::context::refresh_file`.)
//!
//! The file is a view, not a source: it sits outside `memory/` (no block parses it, so no
//! cycle adopts its lines as hand-written facts), and its first line carries the
//! `dream:recalled` marker, so a transcript in which an agent read it is stored as
//! recalled and never supports anything.
//!
//! After the commits, [`refresh_codex`] rewrites the body of dream's managed block in
//! Codex's AGENTS.md when `dream hooks install codex` put one there for this repository.

use dream_core::schema::Stage;

use crate::agents::context::{file_view, waiting_after};
use crate::edges::store::Change;
use crate::error::Result;
use crate::stages::{Ctx, Work};

/// The view as this cycle leaves memory and the review queue.
pub fn render(ctx: &Ctx<'_>, work: &Work) -> Result<String> {
    let built = work.committed.iter().map(|(p, e)| (p.as_str(), *e));
    let queued = work
        .stages
        .iter()
        .flat_map(|s| s.change.writes.iter())
        .map(|(p, c)| (p.as_str(), c.is_some()));
    let w = waiting_after(ctx.root, built.chain(queued))?;
    Ok(file_view(&work.memory, ctx.config, w))
}

/// Write `context.file` when its view changed: with the cycle's last commit, or as a
/// commit of its own when no other stage changed anything. Returns the view.
pub fn refresh_context(ctx: &Ctx<'_>, work: &mut Work) -> Result<String> {
    let text = render(ctx, work)?;
    let rel = ctx.config.context.file.trim().to_string();
    if rel.is_empty() {
        return Ok(text);
    }
    let current = std::fs::read_to_string(ctx.root.join(&rel)).ok();
    if current.as_deref() != Some(text.as_str()) {
        match work.stages.last_mut() {
            Some(last) => last.change.write(rel.clone(), text.clone()),
            None => {
                let mut change = Change::default();
                change.write(rel.clone(), text.clone());
                let tokens = dream_core::llm::budget::estimate_tokens(&text);
                let lines = vec![format!(
                    "wrote      {rel}  ({tokens} of {} tokens; what `dream context` prints)",
                    ctx.config.context.budget_tokens
                )];
                work.push_stage(
                    ctx,
                    Stage::Context,
                    change,
                    &format!("dream: context for agents ({tokens} tokens)"),
                    &lines,
                    0,
                );
            }
        }
    }
    work.lap("context");
    Ok(text)
}

/// Rewrite the body of dream's block in Codex's AGENTS.md for this repository, when there
/// is one (`dream hooks install codex`). Outside the repository: never fails the cycle.
pub fn refresh_codex(ctx: &Ctx<'_>, text: &str) {
    if let Err(e) = crate::agents::hooks::refresh_codex_block(ctx.root, text) {
        tracing::warn!("could not refresh the Codex AGENTS.md block: {e}");
    }
}
