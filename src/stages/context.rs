//! The context stage: each cycle writes what `dream context` would print to
//! `context.file` (CONTEXT.md by default) as memory will be committed, so a harness that
//! imports a file by path (Claude Code's `@` import) loads the same budgeted view, and
//! commits it with the cycle. It runs last, after every stage that changes memory or the
//! review queue; an unchanged view writes nothing.
//!
//! The file is a view, not a source: it sits outside `memory/` (no block parses it, so no
//! cycle adopts its lines as hand-written facts), and its first line carries the
//! `dream:recalled` marker, so a transcript in which an agent read it is stored as
//! recalled and never supports anything.
//!
//! After the commits, [`refresh_codex`] rewrites the body of dream's managed block in
//! Codex's AGENTS.md when `dream hooks install codex` put one there for this repository.

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use dream_core::commit::Stage;
use dream_core::context::Waiting;

use crate::agents::context::{of_memory, waiting, Options};
use crate::edges::store::Change;
use crate::error::Result;
use crate::stages::skills::{DRAFTS_DIR, SKILL_FILE};
use crate::stages::{Ctx, Work};
use dream_core::memory::REVIEW_DIR;

/// The context as this cycle leaves memory and the review queue.
pub fn render(ctx: &Ctx<'_>, work: &Work) -> Result<String> {
    let w = waiting_after(ctx, work)?;
    let c = of_memory(
        &work.memory,
        ctx.config,
        w,
        ctx.today,
        &Options::default(),
        &BTreeMap::new(),
    );
    Ok(c.render_markdown())
}

/// Write `context.file` when its view changed (one commit); returns the view.
pub fn run(ctx: &Ctx<'_>, work: &mut Work) -> Result<String> {
    let text = render(ctx, work)?;
    let rel = ctx.config.context.file.trim().to_string();
    if rel.is_empty() {
        return Ok(text);
    }
    let current = std::fs::read_to_string(ctx.root.join(&rel)).ok();
    if current.as_deref() != Some(text.as_str()) {
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
    work.lap("context");
    Ok(text)
}

/// Pending cards and skill drafts once the queued stages are committed: what is on disk,
/// plus the files the stages write, minus those they remove.
fn waiting_after(ctx: &Ctx<'_>, work: &Work) -> Result<Waiting> {
    let on_disk = waiting(ctx.root)?;
    let mut cards: BTreeSet<String> = BTreeSet::new();
    let mut drafts: BTreeSet<String> = BTreeSet::new();
    let mut card_delta: i64 = 0;
    let mut draft_delta: i64 = 0;
    for s in &work.stages {
        for (path, contents) in &s.change.writes {
            let is_card = path
                .strip_prefix(&format!("{REVIEW_DIR}/"))
                .is_some_and(|rest| !rest.contains('/') && rest.ends_with(".md"));
            let is_draft = path
                .strip_prefix(&format!("{DRAFTS_DIR}/"))
                .is_some_and(|rest| rest.ends_with(&format!("/{SKILL_FILE}")));
            let exists = ctx.root.join(path).is_file();
            let (set, delta) = if is_card {
                (&mut cards, &mut card_delta)
            } else if is_draft {
                (&mut drafts, &mut draft_delta)
            } else {
                continue;
            };
            if !set.insert(path.clone()) {
                continue; // a later write to the same path: counted once
            }
            match (exists, contents.is_some()) {
                (false, true) => *delta += 1,
                (true, false) => *delta -= 1,
                _ => {}
            }
        }
    }
    let add = |n: usize, d: i64| (n as i64 + d).max(0) as usize;
    Ok(Waiting {
        cards: add(on_disk.cards, card_delta),
        skill_drafts: add(on_disk.skill_drafts, draft_delta),
    })
}

/// Rewrite the body of dream's block in Codex's AGENTS.md for this repository, when there
/// is one (`dream hooks install codex`). Outside the repository: never fails the cycle.
pub fn refresh_codex(ctx: &Ctx<'_>, text: &str) {
    if let Err(e) = crate::agents::hooks::refresh_codex_block(ctx.root, text) {
        tracing::warn!("could not refresh the Codex AGENTS.md block: {e}");
    }
}
