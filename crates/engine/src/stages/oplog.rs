//! The operational log of a cycle: the info-level lines a timer's journal shows
//! (`journalctl --user -u dream-evening`, or the launchd log file), one per step, with the
//! figures as structured fields so `--log-format json` gives a machine the same facts.
//!
//! Warnings mark what a person should look at: quarantined input, degraded stages, a token
//! budget that stopped calls, and the heartbeat's warnings (`rule` and `fix` as fields).
//! Everything here reads a finished value; nothing decides.

use std::time::Duration;

use dream_core::operations::heartbeat::Warning;
use dream_core::operations::report::Report;
use dream_core::sources::ingested::Ingested;

/// After ingest.
pub fn ingested(i: &Ingested) {
    tracing::info!(
        files = i.files,
        new_events = i.new_events,
        duplicates = i.duplicates,
        quarantined = i.quarantined,
        redacted = i.redacted,
        "ingested {} new events from {} inbox files",
        i.new_events,
        i.files
    );
    if i.quarantined > 0 {
        tracing::warn!(
            quarantined = i.quarantined,
            "quarantined {} input lines (kept with file, line and reason; `dream status` lists them)",
            i.quarantined
        );
    }
    for r in &i.restarted {
        tracing::warn!("inbox file read again from its start: {r}");
    }
}

/// After the commits: what the cycle did, its budget, its degraded stages, its commits.
pub fn finished(r: &Report, elapsed: Duration) {
    let c = &r.candidates;
    if c.proposed > 0 || r.window.reflected > 0 {
        tracing::info!(
            clusters = r.window.clusters,
            reflected = r.window.reflected,
            pending = r.window.pending,
            proposed = c.proposed,
            promoted = c.promoted,
            episodes = c.episodes,
            queued = c.queued,
            reinforced = c.reinforced,
            refused = c.refused,
            "candidates: {} proposed = {} promoted + {} episodes + {} queued + {} reinforced + {} refused",
            c.proposed,
            c.promoted,
            c.episodes,
            c.queued,
            c.reinforced,
            c.refused
        );
    }
    let t = &r.tokens;
    tracing::info!(
        spent = t.spent,
        cap = t.cap,
        calls = t.calls,
        not_started = t.refused_calls,
        "tokens: {} of {} in {} calls",
        t.spent,
        t.cap,
        t.calls
    );
    if t.refused_calls > 0 {
        tracing::warn!(
            not_started = t.refused_calls,
            pending = r.window.pending,
            cap = t.cap,
            "token budget reached: {} calls not started, left for the next cycle",
            t.refused_calls
        );
    }
    for d in &r.degraded {
        tracing::warn!(stage = %d.stage, reason = %d.reason, "stage degraded: {}: {}", d.stage, d.reason);
    }
    for cm in &r.commits {
        tracing::info!(
            stage = %cm.stage,
            commit = %&cm.commit[..cm.commit.len().min(10)],
            "committed: {}",
            cm.subject
        );
    }
    if r.commits.is_empty() {
        if r.dry_run {
            tracing::info!("dry run: nothing was written");
        } else {
            tracing::info!("no commit: nothing in memory changed");
        }
    }
    tracing::info!(
        cycle = %r.cycle,
        kind = %r.kind,
        ms = elapsed.as_millis() as u64,
        commits = r.commits.len(),
        degraded = r.degraded.len(),
        "cycle finished in {} ms",
        elapsed.as_millis()
    );
}

/// The heartbeat's warnings after a cycle, one line each.
pub fn warnings(ws: &[Warning]) {
    for w in ws {
        tracing::warn!(rule = %w.rule, fix = %w.fix, "heartbeat: {}", w.cause);
    }
}
