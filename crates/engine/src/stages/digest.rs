//! The digest stage (SPEC S1, S3): `digests/<date>-<cycle>.md`, a page of what needs a
//! person's attention, written by every cycle whose profile says `digest = true` (the
//! morning cycle by default) and committed like any other change.
//!
//! It lists, most pressing first: the heartbeat's warnings, contradictions awaiting a
//! decision (cards that would supersede a fact), the other pending review cards best
//! first (the most salient) and how many wait for room, commitments whose dates are near, skill drafts awaiting activation, what the last evening cycle did (counts,
//! tokens, degraded stages), and input quarantined lately.
//!
//! The page is a pure function of the repository and the state on the cycle's day: it holds
//! no clock time and nothing about the run that writes it, so a second run on the same day
//! with nothing changed writes the same bytes and `store` makes no commit.
//!
//! [`gather`] reads (the cycle's in-memory facts and cards, the state transaction, the
//! `skills/drafts/` folder); everything else here is pure: [`dates_in`] reads dates out of a
//! commitment's text, [`due_commitments`] picks the near ones, [`Digest::render`] writes
//! the page.

use std::path::Path;

use chrono::Duration;

use crate::edges::state::{self, Connection};
use crate::edges::store::Change;
use crate::error::Result;
use crate::stages::{Ctx, Work};
use dream_core::operations::digest::*;
use dream_core::schema::Card;
use dream_core::schema::Stage;

/// Build the digest from what the cycle holds and add it as a stage (one commit).
pub fn write_digest(ctx: &Ctx<'_>, tx: &Connection, work: &mut Work) -> Result<()> {
    let d = gather(ctx, tx, work)?;
    let rel = path(d.date, &d.kind);
    let mut change = Change::default();
    change.write(rel.clone(), d.render());
    tracing::info!(
        path = %rel,
        contradictions = d.contradictions.len(),
        cards = d.cards_total,
        commitments = d.commitments.len(),
        drafts = d.drafts.len(),
        quarantined = d.quarantine_recent,
        "digest: {}",
        d.summary()
    );
    let lines = d.commit_lines(&rel);
    work.report.digest = Some(rel);
    work.push_stage(ctx, Stage::Digest, change, &d.subject(), &lines, 0);
    work.lap("digest");
    Ok(())
}

/// Read what the digest needs: the cycle's cards and facts as they will be committed, the
/// state, and the drafts folder.
pub fn gather(ctx: &Ctx<'_>, tx: &Connection, work: &Work) -> Result<Digest> {
    let today = ctx.today;
    let kind = ctx.opts.kind.as_str().to_string();
    let cfg = &ctx.config.digest;

    let mut pending: Vec<&Card> = work.cards.iter().filter(|c| c.decision.is_none()).collect();
    pending.sort_by(|a, b| dream_core::selection::keep::card_rank(a, b));
    let (contradictions, others): (Vec<&Card>, Vec<&Card>) = pending
        .iter()
        .copied()
        .partition(|c| c.supersedes.is_some());

    let (commitments, later) = due_commitments(&work.memory, today, cfg.horizon_days);

    // An evening cycle that found nothing new (a second run, or the rerun after a cycle
    // that was interrupted once its work was recorded) describes the last evening cycle
    // that did something, not its own empty run: a rerun never rewrites the digest to say
    // "0 promoted".
    let recorded = if kind == "evening" && work.idle {
        state::last_cycle_of_kind(tx, "evening", ctx.opts.now)?
    } else {
        None
    };
    let last_evening = if let Some(c) = recorded {
        Some(CycleSummary::from_report(&c.id, c.now, &c.report))
    } else if kind == "evening" {
        let mut r = serde_json::to_value(&work.report).unwrap_or_default();
        let spend = ctx.budget.spend();
        r["tokens"] = serde_json::json!({
            "cap": ctx.budget.cap(), "spent": spend.spent, "calls": spend.calls, "refused_calls": spend.refused,
        });
        Some(CycleSummary::from_report(&ctx.cycle_id, ctx.opts.now, &r))
    } else {
        state::last_cycle_of_kind(tx, "evening", ctx.opts.now)?
            .map(|c| CycleSummary::from_report(&c.id, c.now, &c.report))
    };

    // The heartbeat as of this cycle (its report so far stands in for its stored record).
    let current = dream_core::operations::heartbeat::Seen::from_report(
        &ctx.cycle_id,
        &kind,
        ctx.opts.now,
        &serde_json::to_value(&work.report).unwrap_or_default(),
    );
    let warnings =
        crate::edges::heartbeat::warnings(tx, ctx.root, ctx.config, ctx.opts.now, Some(current))?;

    let since = today - Duration::days(i64::from(cfg.quarantine_days));
    let since = since.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc();
    let recent = state::quarantined_since(tx, since, MAX_QUARANTINE)?;
    let quarantine = recent
        .lines
        .into_iter()
        .map(|(q, at)| QuarantineLine {
            file: q.file,
            line: q.line,
            reason: q.reason,
            excerpt: q.excerpt,
            day: at.date_naive(),
        })
        .collect();

    Ok(Digest {
        date: today,
        kind: kind.clone(),
        contradictions: contradictions
            .iter()
            .map(|c| CardLine::from_card(c))
            .collect(),
        cards: others
            .iter()
            .take(MAX_CARDS)
            .map(|c| CardLine::from_card(c))
            .collect(),
        cards_total: pending.len(),
        cards_waiting: state::waiting_count(tx)?,
        commitments,
        later,
        horizon_days: cfg.horizon_days,
        drafts: skill_drafts(ctx.root)?,
        last_evening,
        quarantine,
        quarantine_recent: recent.since,
        quarantine_total: recent.total,
        quarantine_days: cfg.quarantine_days,
        not_read: work.report.ingest.skipped.clone(),
        waiting_events: if kind == "evening" {
            0
        } else {
            // Within the window: older events are past reflecting on anyway.
            let from = ctx.opts.now - Duration::days(i64::from(ctx.config.cluster.window_days));
            state::count_waiting(tx, from)?
        },
        warnings,
    })
}

/// Skills awaiting a decision: every draft (`skills/drafts/<slug>/SKILL.md`) and every
/// skill a review card proposes, by slug, with its description (see `skills`).
pub fn skill_drafts(root: &Path) -> Result<Vec<Draft>> {
    let mut out: Vec<Draft> = crate::stages::skills::awaiting(root)?
        .into_iter()
        .map(|s| Draft {
            slug: s.name,
            description: s.description,
            path: s.path,
        })
        .collect();
    out.sort_by(|a, b| a.slug.cmp(&b.slug));
    Ok(out)
}
