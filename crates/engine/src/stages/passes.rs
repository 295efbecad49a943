//! The maintenance passes (SPEC S4 step 9): Dedupe, Merge, Promote and Forget, in that
//! order, over durable memory, each its own stage and commit when it changed something.
//!
//! Each pass asks the model for mutations in its JSON contract (`schema::pass_contract`), checks
//! every one with the pure gates of [`gates`] against memory as the pass found it and what
//! earlier mutations of the pass consumed, applies those that pass, and records the rest
//! with their reasons. Then the engine applies the rules it can derive from the data alone
//! (its backstops), through the same gates, labelled and counted apart: duplicate pairs the
//! model left, facts of a known category still in scratch, and capacity. With the offline
//! provider the model proposes nothing, so the backstops run alone; a pass call that fails
//! or does not fit in the budget degrades to the backstops and is reported.
//!
//! Nothing leaves memory outright: dropped, merged-away and forgotten facts move to
//! `archive/facts.md` with their reason and policy; merged and kept facts take the union
//! of the supporting events. And not too much at once: every mutation that passed its gates
//! goes through the cycle's [`LossGuard`] (at most `retention.max_loss_share` of the active
//! facts per cycle, no protected fact's words lost without a person); what it holds back is
//! recorded as refused like any other refusal, an engine backstop's with `by=engine`.
//!
//! Applying a mutation and recording it (and putting the loss guard on a removal) is the
//! core's `dream_core::consolidation::pass_apply`: this stage asks the model, gates, and
//! runs the backstops.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::Connection;

use crate::edges::state;
use crate::edges::store::{Change, Store};
use crate::error::Result;
use crate::stages::{load_archive, Ctx, Work};
use dream_core::consolidation::expiry;
use dream_core::consolidation::pass_apply::{
    apply_drop, apply_forget, apply_merge, apply_promote, guard_drop, guard_forget, views_of,
    PassOutcome,
};
use dream_core::llm::budget::CallError;
use dream_core::operations::report::Degraded;
use dream_core::passes::gates::{self, Before, Ledger, DUPLICATE_SIMILARITY, TARGET_BLOCKS};
use dream_core::passes::loss::LossGuard;
use dream_core::passes::record::Line;
use dream_core::passes::{review, Pass};
use dream_core::schema::contract::{LlmError, Reply};
use dream_core::schema::pass_contract::{
    CandidatePair, DedupeRequest, Drop, Forget, ForgetFact, ForgetRequest, MergeRequest, Promote,
    PromoteRequest,
};
use dream_core::schema::{self, one_line, Archive, Block, BlockFile, Fact, Origin};

/// The passes, in the order they run.
pub const PASSES: [Pass; 4] = Pass::ALL;

/// Run the four passes over the durable blocks of `work.memory`, each one stage when it
/// changed something. The episodes are held aside while a pass runs: their own rules
/// (`episodes.rs`: restatement, expiry, a cap) govern them, not the passes'; a pass may
/// still move an event out of scratch into the episodes.
/// The state mark holding the day of the last forget call that was answered (epoch seconds
/// of its midnight): the stale facts it was shown are not shown again.
const FORGET_MARK: &str = "forget_asked";

pub fn run_passes(ctx: &Ctx<'_>, tx: &Connection, work: &mut Work) -> Result<()> {
    let mut archive = load_archive(ctx, work)?;
    let pinned: BTreeMap<String, String> = work
        .cards
        .iter()
        .filter_map(|c| c.supersedes.clone().map(|f| (f, c.id.clone())))
        .collect();
    // The last day agents used each fact (only the forget pass's unused policy reads it).
    let last_used: BTreeMap<String, chrono::NaiveDate> =
        if ctx.config.retention.unused_after_days.is_some() {
            crate::edges::state::uses(tx, Some(ctx.today))?
                .into_iter()
                .map(|(f, (_, d))| (f, d))
                .collect()
        } else {
            BTreeMap::new()
        };
    // What the merge and promote passes are shown: what this cycle changed, against memory
    // as the cycle found it (the store's, hand edits recorded), unless they cannot know
    // what they reviewed (see `dream_core::passes::review`).
    let start = Store::open(ctx.root)?.load_memory(ctx.today)?;
    let hand_edited = work.report.commits.iter().any(|c| c.stage == "manual");
    let degraded = crate::edges::state::last_degraded_stages(tx)?;
    // The guard's share is of the durable facts: episodes expire by their own rules.
    let durable = work.memory.len() - work.memory.block(Block::Episodes).facts().count();
    let mut guard = LossGuard::new(durable, &ctx.config.retention, ctx.opts.allow_loss);
    for pass in PASSES {
        let all = start.is_empty() || hand_edited || degraded.iter().any(|d| d == pass.as_str());
        // Against the memory this pass finds: a merge just made is new to promote.
        let changed = (!all).then(|| review::changed(&start, &work.memory));
        let memory_before = work.memory.clone();
        let archive_before = archive.text.clone();
        let held = std::mem::replace(
            work.memory.block_mut(Block::Episodes),
            BlockFile::empty(Block::Episodes),
        );
        let before = Before::new(&work.memory, archive.ids.clone(), pinned.clone())
            .with_episodes(held.facts().map(|f| f.id.clone()).collect())
            .with_uses(last_used.clone());
        let spent = ctx.budget.spend().spent;
        let mut out = PassOutcome::new(pass);
        match pass {
            Pass::Dedupe => dedupe(ctx, &before, work, &mut archive, &mut guard, &mut out),
            Pass::Merge => merge(
                ctx,
                &before,
                work,
                &mut archive,
                &mut guard,
                &mut out,
                changed.as_ref(),
            ),
            Pass::Promote => promote(ctx, &before, work, &mut out, changed.as_ref()),
            Pass::Forget => {
                // The stale facts a forget call was answered about are not shown again.
                let asked = if all {
                    None
                } else {
                    state::mark(tx, FORGET_MARK)?
                        .and_then(|d| chrono::DateTime::from_timestamp(d, 0))
                        .map(|t| t.date_naive())
                };
                if forget(
                    ctx,
                    &before,
                    work,
                    &mut archive,
                    &mut guard,
                    &mut out,
                    asked,
                ) {
                    let day = ctx.today.and_time(chrono::NaiveTime::MIN).and_utc();
                    state::put_mark(tx, FORGET_MARK, day.timestamp(), ctx.opts.now)?;
                }
            }
        }
        // The episodes back, with whatever the pass moved into them.
        let moved_in: Vec<Fact> = work
            .memory
            .block(Block::Episodes)
            .facts()
            .cloned()
            .collect();
        *work.memory.block_mut(Block::Episodes) = held;
        let moved = !moved_in.is_empty();
        for f in moved_in {
            work.memory.block_mut(Block::Episodes).push(f);
        }
        // Events moved into the episodes count against their cap at once.
        if moved {
            let due = expiry::expiring(&work.memory, ctx.today, &ctx.config.episodes);
            let expired = expiry::expire(&mut work.memory, &mut archive, ctx.today, due);
            work.report.episodes_expired += expired.len();
        }
        let tokens = ctx.budget.spend().spent.saturating_sub(spent);
        let mut change = Change::blocks(&memory_before, &work.memory);
        if archive.text != archive_before {
            change.write(schema::ARCHIVE, archive.text.clone());
        }
        let c = out.counts;
        tracing::info!(
            pass = pass.as_str(),
            proposed = c.proposed,
            accepted = c.accepted,
            refused = c.refused,
            engine = c.engine,
            "maintenance pass"
        );
        if !change.is_empty() {
            let message = out.message(ctx.today, &ctx.cycle_id, ctx.opts.allow_loss, tokens);
            work.push_commit(change, message);
        }
        work.report.passes.push(out.summary());
        work.lap(pass.as_str());
    }
    work.archive = Some(archive);
    if ctx.opts.allow_loss {
        work.report.notes.push(format!(
            "--allow-loss: the loss guard was lifted; the passes archived {} of {} active facts",
            guard.archived, guard.active
        ));
    }
    Ok(())
}

/// One budgeted pass call. A call that does not fit in the budget or fails leaves the pass
/// to its engine backstops, and the degradation is reported.
fn ask<T>(
    ctx: &Ctx<'_>,
    work: &mut Work,
    pass: Pass,
    estimate: u64,
    f: impl FnOnce() -> Result<Reply<T>, LlmError>,
) -> Option<T> {
    if !ctx.llm.offline() {
        ctx.progress.stage(pass.as_str());
    }
    match ctx.call(pass.as_str(), estimate, f) {
        Ok(reply) => {
            for note in reply.notes {
                if !work.report.notes.contains(&note) {
                    work.report.notes.push(note);
                }
            }
            Some(reply.value)
        }
        Err(CallError::Budget) => {
            work.report.degraded.push(Degraded {
                stage: pass.as_str().into(),
                reason: format!(
                    "not started: the token budget could be crossed (budget.tokens_per_cycle = {}); engine backstops only",
                    ctx.budget.cap()
                ),
            });
            None
        }
        Err(e) => {
            work.report.degraded.push(Degraded {
                stage: pass.as_str().into(),
                reason: format!("{e}; engine backstops only"),
            });
            None
        }
    }
}

// ---- dedupe ----

fn dedupe(
    ctx: &Ctx<'_>,
    before: &Before,
    work: &mut Work,
    archive: &mut Archive,
    guard: &mut LossGuard,
    out: &mut PassOutcome,
) {
    let pairs = gates::duplicate_pairs(&work.memory);
    let mut ledger = Ledger::default();
    // With no pair at >= 0.9, no drop could pass the gates: the call would be wasted.
    if !pairs.is_empty() {
        let req = DedupeRequest {
            facts: views_of(&work.memory, None),
            candidate_pairs: pairs
                .iter()
                .map(|(a, b, s)| CandidatePair {
                    a: a.clone(),
                    b: b.clone(),
                    similarity: *s,
                })
                .collect(),
            min_similarity: DUPLICATE_SIMILARITY,
            max_tokens: ctx.config.llm.max_tokens,
        };
        let llm = ctx.llm;
        if let Some(reply) = ask(ctx, work, Pass::Dedupe, llm.estimate_dedupe(&req), || {
            llm.dedupe(&req)
        }) {
            for p in reply.drop {
                let mut checked = gates::check_drop(&p, before, &ledger);
                guard_drop(&ctx.config.retention, guard, before, &p, &mut checked);
                apply_drop(
                    ctx.today,
                    &mut work.memory,
                    archive,
                    &mut ledger,
                    out,
                    true,
                    &p,
                    &checked,
                );
                if checked.passed() {
                    guard.archive(1);
                }
            }
        }
    }
    for (a, b, sim) in &pairs {
        let (Some((_, fa)), Some((_, fb))) = (before.get(a), before.get(b)) else {
            continue;
        };
        if ledger.is_consumed(a) || ledger.is_consumed(b) {
            continue;
        }
        let (d, k) = gates::engine_direction(fa, fb);
        for (d, k) in [(d, k), (k, d)] {
            let p = Drop {
                item_id: d.id.clone(),
                duplicate_of: k.id.clone(),
                reason: format!(
                    "engine: a duplicate pair (similarity {sim:.3}) the model did not resolve"
                ),
            };
            let mut checked = gates::check_drop(&p, before, &ledger);
            if checked.passed() {
                // The direction the gates allow first keeps the most words, so a drop the
                // loss guard holds in it is held in the other one too: record it and stop.
                guard_drop(&ctx.config.retention, guard, before, &p, &mut checked);
                apply_drop(
                    ctx.today,
                    &mut work.memory,
                    archive,
                    &mut ledger,
                    out,
                    false,
                    &p,
                    &checked,
                );
                if checked.passed() {
                    guard.archive(1);
                }
                break;
            }
        }
    }
}

// ---- merge ----

fn merge(
    ctx: &Ctx<'_>,
    before: &Before,
    work: &mut Work,
    archive: &mut Archive,
    guard: &mut LossGuard,
    out: &mut PassOutcome,
    changed: Option<&BTreeSet<String>>,
) {
    // Only what changed, and the facts of its block it shares a word with (`review`).
    let shown = changed.map(|c| review::merge_scope(&work.memory, c));
    let mut per_block: BTreeMap<Block, usize> = BTreeMap::new();
    for (b, f) in work.memory.facts() {
        if f.origin != Origin::Owner && shown.as_ref().is_none_or(|s| s.contains(&f.id)) {
            *per_block.entry(b).or_default() += 1;
        }
    }
    // A merge needs two facts of one block that a pass may rewrite.
    if per_block.values().all(|n| *n < 2) {
        return;
    }
    let req = MergeRequest {
        facts: views_of(&work.memory, shown.as_ref()),
        max_tokens: ctx.config.llm.max_tokens,
    };
    let llm = ctx.llm;
    let Some(reply) = ask(ctx, work, Pass::Merge, llm.estimate_merge(&req), || {
        llm.merge(&req)
    }) else {
        return;
    };
    let mut ledger = Ledger::default();
    for p in reply.merge {
        let mut checked = gates::check_merge(&p, before, &ledger);
        let into = p.into_id.trim().to_string();
        let from: Vec<String> = p.from_ids.iter().map(|s| s.trim().to_string()).collect();
        let text = one_line(p.merged_text.trim());
        if checked.passed() {
            let parts: Vec<&Fact> = std::iter::once(&into)
                .chain(&from)
                .filter_map(|id| before.get(id).map(|(_, f)| f))
                .collect();
            let (gate, held) = guard.check(from.len(), &parts, &text, &ctx.config.retention);
            checked.add(gate, held);
            if checked.passed() {
                guard.archive(from.len());
            }
        }
        let mut line = Line::new("", "merge")
            .with("item", into.clone())
            .with("from", from.join(","));
        if checked.passed() {
            apply_merge(
                ctx.today,
                &mut work.memory,
                archive,
                &into,
                &from,
                &text,
                &p,
            );
            ledger.consume(
                &into,
                "changed",
                format!("{} merged into it", from.join(", ")),
                false,
            );
            for id in &from {
                ledger.consume(id, "removed", format!("merged into {into}"), true);
            }
            line = line.with("coverage", checked.value("coverage").unwrap_or_default());
        }
        line = line
            .with("reason", one_line(&p.reason))
            .with("text", text.clone());
        let detail = format!(
            "merge {} into {into}: {}",
            from.join(", "),
            schema::excerpt(&text, 60)
        );
        out.record(true, &checked, line, detail, &p.reason);
    }
}

// ---- promote ----

fn promote(
    ctx: &Ctx<'_>,
    before: &Before,
    work: &mut Work,
    out: &mut PassOutcome,
    changed: Option<&BTreeSet<String>>,
) {
    let mut ledger = Ledger::default();
    // Only the durable facts this cycle added, reworded or moved (`review`): none, no call.
    // (The episodes are held out of the passes' memory, so a cycle that changed only
    // episodes has nothing to show; it made a call of instructions alone before.)
    let facts = views_of(&work.memory, changed);
    if !facts.is_empty() {
        let req = PromoteRequest {
            facts,
            target_blocks: TARGET_BLOCKS
                .iter()
                .map(|b| b.as_str().to_string())
                .collect(),
            max_tokens: ctx.config.llm.max_tokens,
        };
        let llm = ctx.llm;
        if let Some(reply) = ask(ctx, work, Pass::Promote, llm.estimate_promote(&req), || {
            llm.promote(&req)
        }) {
            for p in reply.promote {
                let checked = gates::check_promote(&p, before, &ledger);
                apply_promote(&mut work.memory, &mut ledger, out, true, &p, &checked);
            }
        }
    }
    let scratch: Vec<(String, String)> = before
        .facts()
        .filter(|(b, _)| **b == Block::Scratch)
        .map(|(_, f)| (f.id.clone(), f.category.clone()))
        .collect();
    for (id, category) in scratch {
        let Some(to) = gates::engine_target(&category) else {
            continue;
        };
        if ledger.is_consumed(&id) {
            continue;
        }
        let p = Promote {
            item_id: id,
            to_block: to.as_str().into(),
            reason: format!(
                "engine: category {category} belongs in {}, not scratch",
                to.as_str()
            ),
        };
        let checked = gates::check_promote(&p, before, &ledger);
        if checked.passed() {
            apply_promote(&mut work.memory, &mut ledger, out, false, &p, &checked);
        }
    }
}

// ---- forget ----

/// The forget pass. The model is shown only what the gates could let go, and a stale fact
/// once (`review::forget_scope`, against `asked`, the day its last call was answered).
/// Returns whether the model was asked and answered, or had nothing to be asked.
#[allow(clippy::too_many_arguments)]
fn forget(
    ctx: &Ctx<'_>,
    before: &Before,
    work: &mut Work,
    archive: &mut Archive,
    guard: &mut LossGuard,
    out: &mut PassOutcome,
    asked: Option<chrono::NaiveDate>,
) -> bool {
    let retention = &ctx.config.retention;
    let today = ctx.today;
    let mut ledger = Ledger::default();
    let scope = review::forget_scope(before, retention, today, asked);
    let mut answered = scope.is_empty();
    let forgettable: Vec<ForgetFact> = work
        .memory
        .facts()
        .filter(|(_, f)| scope.contains(&f.id))
        .map(|(b, f)| ForgetFact {
            id: f.id.clone(),
            block: b.as_str().into(),
            category: f.category.clone(),
            text: f.text.clone(),
            last_seen: f.last_seen.to_string(),
            days_since_seen: gates::days_since(f, today),
            salience: gates::salience(b, f, retention, today),
        })
        .collect();
    // Only a stale fact or an over-full memory can pass the gates: otherwise do not ask.
    if !forgettable.is_empty() {
        let req = ForgetRequest {
            facts: forgettable,
            active_facts: before.len(),
            max_active_facts: retention.max_active_facts,
            stale_after_days: retention.stale_after_days,
            protected_categories: retention.protected.clone(),
            max_tokens: ctx.config.llm.max_tokens,
        };
        let llm = ctx.llm;
        if let Some(reply) = ask(ctx, work, Pass::Forget, llm.estimate_forget(&req), || {
            llm.forget(&req)
        }) {
            answered = true;
            for p in reply.forget {
                let (mut checked, verified) =
                    gates::check_forget(&p, before, &ledger, retention, today);
                guard_forget(retention, guard, before, &p, &mut checked);
                apply_forget(
                    today,
                    &mut work.memory,
                    archive,
                    &mut ledger,
                    out,
                    true,
                    &p,
                    &checked,
                    verified,
                );
            }
        }
    }
    // Unused for retention.unused_after_days (when set): the person opted into this rule,
    // so the engine applies it itself, through the same gate.
    if let Some(n) = retention.unused_after_days {
        let idle: Vec<String> = before
            .facts()
            .filter(|(_, f)| {
                !ledger.is_consumed(&f.id)
                    && gates::protection(f, retention).is_none()
                    && gates::days_unused(f, before.last_used(&f.id), today).0 > i64::from(n)
            })
            .map(|(_, f)| f.id.clone())
            .collect();
        for id in idle {
            let p = Forget {
                item_id: id,
                reason: format!(
                    "engine: no agent used it and no event restated it in over {n} days"
                ),
                policy: "unused".into(),
            };
            let (mut checked, verified) =
                gates::check_forget(&p, before, &ledger, retention, today);
            if !checked.passed() {
                continue; // pinned by a card, or consumed: the gate says why, nothing to do
            }
            guard_forget(retention, guard, before, &p, &mut checked);
            apply_forget(
                today,
                &mut work.memory,
                archive,
                &mut ledger,
                out,
                false,
                &p,
                &checked,
                verified,
            );
        }
    }
    // Capacity, lowest salience first; what the loss guard holds back waits for the next
    // cycle (it is still over capacity then).
    let order: Vec<(String, f64)> = gates::capacity_order(before, &ledger, retention, today)
        .into_iter()
        .map(|(id, s)| (id.to_string(), s))
        .collect();
    let mut next = order.into_iter();
    let mut held = 0;
    loop {
        let active = before.len() - ledger.removed();
        if active.saturating_sub(held) <= retention.max_active_facts {
            break;
        }
        let Some((id, sal)) = next.next() else {
            work.report.notes.push(format!(
                "{active} active facts exceed retention.max_active_facts {}, but the rest are protected (or pinned by a review card); nothing more was forgotten for capacity",
                retention.max_active_facts
            ));
            break;
        };
        let p = Forget {
            item_id: id,
            reason: format!(
                "engine: {active} active facts > max_active_facts {}; lowest salience {sal:.3}",
                retention.max_active_facts
            ),
            policy: "capacity".into(),
        };
        let (mut checked, verified) = gates::check_forget(&p, before, &ledger, retention, today);
        if !checked.passed() {
            tracing::warn!(reason = ?checked.refused, "capacity enforcement stopped");
            break;
        }
        guard_forget(retention, guard, before, &p, &mut checked);
        if !checked.passed() {
            held += 1;
        }
        apply_forget(
            today,
            &mut work.memory,
            archive,
            &mut ledger,
            out,
            false,
            &p,
            &checked,
            verified,
        );
    }
    answered
}
