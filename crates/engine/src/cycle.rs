//! The cycle (SPEC S4): lock, record hand edits, ingest, embed, run the stages of the
//! cycle's profile, commit each stage, then commit the state, report.
//!
//! This is the only place that orders the pipeline. A stage (see `stages`) reads through
//! the edges, calls the pure core, and leaves its result in [`Work`]; this file builds the
//! commits the stages queued, one each, inside git (nothing in the working tree yet), then
//! publishes them with the state transaction as their commit point (`store`, `journal`):
//! the state records the last commit, then the branch moves, then the files are written.
//! A crash before the state commit leaves repo and state as the previous cycle left them,
//! and the rerun does the same work with the same result; a crash after it is finished by
//! the next command, before it reads anything. `--dry-run` runs the same code against a
//! scratch copy of the state and publishes nothing, so it writes nothing at all.
//!
//! Which stages run is decided by the pure [`plan`]; `run` only carries it out.

use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration as Elapsed, Instant};

use chrono::{DateTime, Duration, Utc};

use dream_core::llm::budget::Budget;
use dream_core::llm::Llm;
use dream_core::operations::heartbeat::Seen;
use dream_core::operations::report::{Calibration, CommitRow, Degraded, Ran, Report, Tokens};
use dream_core::schema::settings::{Config, Profile};
use dream_core::schema::Stage;
use dream_core::schema::{Block, Memory};

use crate::edges::state::{self, Connection, State};
use crate::edges::store::{Batch, Change, Point, Store};
use crate::edges::{guard, heartbeat, ingest, lock};
use crate::error::{Error, Result};
use crate::providers::embed::Embedder;
use crate::stages::{
    consolidate, context, digest, oplog, passes, quiz, skills, Ctx, Progress, Silent, StageCommit,
    Work,
};

/// How a cycle runs (defined beside [`Ctx`], which every stage reads).
pub use crate::stages::Options;

/// Which stages a cycle runs, decided from the profile and what the cycle found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Cluster, reflect, gate, judge, route (and skills, when a tool call is new).
    pub reflect: bool,
    /// The maintenance passes.
    pub passes: bool,
    pub digest: bool,
}

impl Plan {
    /// Whether any stage will read the pending review cards.
    pub fn reads_cards(&self) -> bool {
        self.reflect || self.passes || self.digest
    }
}

/// The stages to run: reflect only when something is new; the passes when something is new
/// or a person edited memory by hand (durable memory changes only through those); the
/// digest whenever the profile asks for it.
pub fn plan(profile: &Profile, idle: bool, hand_edited: bool) -> Plan {
    Plan {
        reflect: profile.reflect && !idle,
        passes: profile.passes && (!idle || hand_edited),
        digest: profile.digest,
    }
}

/// Run one cycle on the repo at `root`. A cycle that fails (after taking the lock) is
/// recorded as failed, with its error, so `dream status` and the heartbeat see it. (A run
/// that finds the lock held did nothing and records nothing.)
pub fn run_cycle(
    root: &Path,
    config: &Config,
    llm: &dyn Llm,
    embedder: &dyn Embedder,
    opts: &Options,
) -> Result<Report> {
    run_with(root, config, llm, embedder, opts, &Silent)
}

/// The progress a cycle shows: every stage into the lock note (for `dream status`), and,
/// when a model is called, to `outer` (a terminal or the journal) too.
struct Tracked<'a> {
    lock: &'a lock::Lock,
    outer: &'a dyn Progress,
    model: bool,
}

impl Progress for Tracked<'_> {
    fn stage(&self, stage: &str) {
        self.lock.note(stage);
        // The backfill's windows are shown whatever the provider: a first run on months of
        // history takes a while even offline.
        if self.model || stage.starts_with("backfill") {
            self.outer.stage(stage);
        }
    }

    fn calls(&self, stage: &str, done: usize, total: usize, tokens: u64) {
        self.lock.note(&format!(
            "{stage} ({done} of {total} calls, {tokens} tokens)"
        ));
        if self.model {
            self.outer.calls(stage, done, total, tokens);
        }
    }
}

/// Run one cycle on the repo at `root`, showing its progress to `progress`. A cycle that
/// fails (after taking the lock) is recorded as failed, with its error, so `dream status`
/// and the heartbeat see it. (A run that finds the lock held did nothing and records
/// nothing.)
pub fn run_with(
    root: &Path,
    config: &Config,
    llm: &dyn Llm,
    embedder: &dyn Embedder,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<Report> {
    run_from(root, config, llm, embedder, opts, progress, false)
}

/// `dream backfill`: one cycle, like [`run_with`], whose backfill starts again at the oldest
/// event older than the window that no cycle has looked at (the watermark forgotten), so
/// windows left behind by failed calls are tried again.
pub fn backfill_with(
    root: &Path,
    config: &Config,
    llm: &dyn Llm,
    embedder: &dyn Embedder,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<Report> {
    run_from(root, config, llm, embedder, opts, progress, true)
}

/// A cycle; `restart`: the backfill starts over at the oldest unreflected event.
fn run_from(
    root: &Path,
    config: &Config,
    llm: &dyn Llm,
    embedder: &dyn Embedder,
    opts: &Options,
    progress: &dyn Progress,
    restart: bool,
) -> Result<Report> {
    let started = Utc::now();
    // A journal left by a killed cycle, or the lock's note left by a killed holder: this
    // run finishes or repeats that one, and is its retry.
    let resuming = crate::edges::journal::read(root)
        .ok()
        .flatten()
        .is_some_and(|j| j.kind == "cycle")
        || lock::left_by_a_killed_holder(root);
    let (lock, repaired) = if opts.dry_run {
        let mut notes = Vec::new();
        if let Some(j) = crate::edges::journal::read(root)? {
            notes.push(format!(
                "an interrupted {} (commit {}) is pending: the next run finishes or forgets it; this dry run sees the repository as the interruption left it",
                j.kind,
                &j.target[..10.min(j.target.len())]
            ));
        }
        (lock::acquire(root, false, started)?, notes)
    } else {
        let w = guard::begin(root, started, Some(&config.inbox.path))?;
        (w.lock, w.notes)
    };
    let tracked = Tracked {
        lock: &lock,
        outer: progress,
        model: !llm.offline(),
    };
    let result = run_locked(
        root, config, llm, embedder, opts, &tracked, started, repaired, restart, resuming,
    );
    if let Err(e) = &result {
        if !opts.dry_run {
            record_failure(root, opts, started, e);
        }
    }
    result
}

/// The id of the cycle `opts` describes.
pub fn cycle_id(opts: &Options) -> String {
    format!(
        "{}-{}",
        opts.now.format("%Y%m%dT%H%M%SZ"),
        opts.kind.as_str()
    )
}

/// The cycle's id, made unique: a second run with the same `--now` and kind, after one
/// that committed, gets `<time>-2-<kind>` (then `-3`, ...), so its report does not replace
/// the first one's and `undo --cycle` names one run, not both. The kind stays last, where
/// readers look for it. The id is shared only where nothing tells the runs apart: an earlier
/// run that committed nothing (its report is replaced), or a run that finishes an
/// interrupted one (`resuming`: the retry of a killed command is that command).
fn unique_cycle_id(conn: &Connection, opts: &Options, resuming: bool) -> Result<String> {
    let mut id = cycle_id(opts);
    if resuming {
        return Ok(id);
    }
    let mut n = 1;
    while state::cycle_committed(conn, &id)? {
        n += 1;
        id = format!(
            "{}-{n}-{}",
            opts.now.format("%Y%m%dT%H%M%SZ"),
            opts.kind.as_str()
        );
    }
    Ok(id)
}

/// Keep a failed cycle's outcome beside the state (`.dream/failures.jsonl`), not in it:
/// the state stays exactly as the last good cycle left it.
fn record_failure(root: &Path, opts: &Options, started: DateTime<Utc>, e: &Error) {
    let f = heartbeat::Failure {
        id: cycle_id(opts),
        kind: opts.kind.as_str().into(),
        now: opts.now,
        started,
        error: e.to_string(),
        exit_code: e.exit_code(),
    };
    if let Err(why) = heartbeat::record_failure(root, &f) {
        tracing::warn!("could not record the failed cycle: {why}");
    }
}

/// The cycle under the lock; `repaired` says what the way in cleared or recovered.
#[allow(clippy::too_many_arguments)]
fn run_locked(
    root: &Path,
    config: &Config,
    llm: &dyn Llm,
    embedder: &dyn Embedder,
    opts: &Options,
    tracked: &dyn Progress,
    started: DateTime<Utc>,
    repaired: Vec<String>,
    restart: bool,
    resuming: bool,
) -> Result<Report> {
    let wall = Instant::now();
    let mut store = Store::open(root)?;
    store.keep_out(&config.inbox.path);
    let mut batch = store.batch()?;
    store.refuse_conflicts()?;
    let mut state = if opts.dry_run {
        State::open_scratch_copy(root)?
    } else {
        State::open(root)?
    };
    let ctx = Ctx {
        root,
        config,
        llm,
        embedder,
        opts,
        cycle_id: unique_cycle_id(&state.conn, opts, resuming)?,
        today: opts.now.date_naive(),
        budget: Budget::new(config.budget.tokens_per_cycle)
            .with_cached_discount(config.llm.cached_discount),
        progress: tracked,
        unavailable: OnceLock::new(),
    };
    let mut report = start_report(&ctx, repaired);

    // Hand edits first, so they are never clobbered and the audit trail shows them apart.
    let committed = record_hand_edits(&ctx, &store, &mut batch, &mut report)?;
    let mut work = Work {
        memory: store.load_memory(ctx.today)?,
        cards: Vec::new(),
        window: state::Window::default(),
        idle: false,
        report,
        stages: Vec::new(),
        timer: Instant::now(),
        archive: None,
        reinforced: Default::default(),
        committed: Default::default(),
        episodes_text: None,
    };
    adopt_hand_written(&ctx, &mut work, committed.as_ref());
    // What the quiz compares the cycle's memory with: the last commit's, and after the
    // person's hand edits.
    let edited = work.memory.clone();
    let start = quiz::Start {
        committed: committed.as_ref().unwrap_or(&edited),
        edited: &edited,
    };

    let tx = state.begin()?;
    take_in(&ctx, &tx, &mut work, restart)?;
    let view = run_stages(&ctx, &tx, &mut work, &store, &mut batch, restart, &start)?;
    count_tokens(&ctx, &mut work);
    ctx.progress.stage("commit");
    commit_stages(&ctx, &store, &mut batch, &mut work, Keep::None)?;
    work.lap("commit");
    raise_warnings(&ctx, &tx, &mut work)?;
    work.lap("heartbeat");
    finish(&ctx, &tx, &mut work, started, wall.elapsed())?;
    if opts.dry_run {
        state::rollback(tx, "discarding the dry run's scratch state")?;
        return Ok(work.report);
    }
    // The commit point: the state transaction records the last commit, then the branch
    // moves and the files are written (see `journal`).
    let published = !batch.is_empty();
    let cycle_id = ctx.cycle_id.clone();
    let now = opts.now;
    store.publish(
        batch,
        "cycle",
        Point::State(Box::new(move |target| {
            if let Some(t) = target {
                state::put_applied(&tx, &t.to_string(), &cycle_id, now)?;
            }
            state::commit(tx, "committing the state transaction")
        })),
    )?;
    crate::agents::uses::finish(root);
    context::refresh_codex(&ctx, &view);
    if published {
        store.settle_index();
    }
    Ok(work.report)
}

/// The report a cycle starts with (what it is, what it runs with, what the way in
/// repaired), and the journal's line that it started.
fn start_report(ctx: &Ctx<'_>, repaired: Vec<String>) -> Report {
    let opts = ctx.opts;
    let mut report = Report {
        cycle: ctx.cycle_id.clone(),
        kind: opts.kind.as_str().into(),
        now: opts.now,
        dry_run: opts.dry_run,
        provider: ctx.llm.name(),
        embedder: ctx.embedder.id(),
        ..Report::default()
    };
    report.window.days = ctx.config.cluster.window_days;
    report.notes.extend(repaired);
    tracing::info!(
        cycle = %ctx.cycle_id,
        kind = opts.kind.as_str(),
        repo = %ctx.root.display(),
        dry_run = opts.dry_run,
        provider = %report.provider,
        "{} cycle started",
        opts.kind.as_str()
    );
    report
}

/// What the cycle takes in before any stage: the model's calibration from earlier cycles,
/// the new inbox and source lines (embedded), and the agents' uses of facts.
fn take_in(ctx: &Ctx<'_>, tx: &Connection, work: &mut Work, restart: bool) -> Result<()> {
    // Estimates start from what this model's server counted in earlier cycles.
    if let Some(key) = ctx.llm.tokenizer_key() {
        if let Some(ratio) = state::last_calibration(tx, &key)? {
            ctx.llm.set_calibration(ratio);
        }
    }
    ingest_and_embed(ctx, tx, work, restart)?;
    let uses = crate::agents::uses::take(tx, ctx.root, ctx.opts.dry_run)?;
    if uses > 0 {
        tracing::info!(uses, "counted uses of facts by agents");
    }
    Ok(())
}

/// The stages `plan` picks, in the cycle's order: backfill and consolidate (then skills),
/// or the waiting cards offered; the passes; the digest; the agents' view; the recall quiz.
/// Returns the agents' view, which the cycle refreshes in a harness's file once committed.
fn run_stages(
    ctx: &Ctx<'_>,
    tx: &Connection,
    work: &mut Work,
    store: &Store,
    batch: &mut Batch,
    restart: bool,
    start: &quiz::Start<'_>,
) -> Result<String> {
    let config = ctx.config;
    let kind = ctx.opts.kind;
    let hand_edited = work.report.commits.iter().any(|c| c.stage == "manual");
    let plan = plan(config.profile(kind), work.idle, hand_edited);
    work.report.plan = Ran {
        reflect: plan.reflect,
        passes: plan.passes,
        digest: plan.digest,
    };
    // Pending cards are read only when a stage will look at them: an idle evening cycle
    // skips parsing every card's front matter (a busy review queue is megabytes of it).
    if plan.reads_cards() {
        let (cards, problems) = store.pending_cards()?;
        work.cards = cards;
        for p in problems {
            work.report
                .notes
                .push(format!("skipped a card that does not parse: {p}"));
        }
    }
    if plan.reflect {
        let new_tool_calls = dream_core::skills::procedure::new_tool_call(&work.window.procedure);
        backfill(ctx, tx, work, restart, store, batch)?;
        ctx.progress.stage("consolidate");
        consolidate_counted(ctx, tx, work, None)?;
        if new_tool_calls {
            ctx.progress.stage("skills");
            skills::draft_skills(ctx, tx, work)?;
        }
    }
    // An evening with nothing new still fills the room a person's decisions made in the
    // review queue from the cards waiting for it.
    if config.profile(kind).reflect && !plan.reflect {
        crate::stages::queue::offer_waiting(ctx, tx, work, store)?;
    }
    if plan.passes {
        ctx.progress.stage("passes");
        passes::run_passes(ctx, tx, work)?;
    }
    // The digest comes last, so it shows what this cycle left for a person.
    if plan.digest {
        ctx.progress.stage("digest");
        digest::write_digest(ctx, tx, work)?;
    }
    // The agents' view last, so it shows memory and the queue as this cycle leaves them.
    let view = context::refresh_context(ctx, work)?;
    // Then the recall quiz: does memory, as this cycle leaves it, still answer what it held?
    // Not after an idle cycle with no hand edit: memory is what the last quiz asked, and
    // the idle run stays a few milliseconds.
    let changed = plan.reflect || plan.passes;
    if config.quiz.enabled && kind == dream_core::schema::settings::CycleKind::Evening && changed {
        ctx.progress.stage("quiz");
        quiz::quiz_cycle(ctx, tx, work, start)?;
        work.lap("quiz");
    }
    Ok(view)
}

/// The cycle's spend into the report: tokens against the cap, by stage, and the model's
/// calibration (a warning when the server counted more than the budget reserved).
fn count_tokens(ctx: &Ctx<'_>, work: &mut Work) {
    let spend = ctx.budget.spend();
    if spend.overrun {
        tracing::warn!(
            spent = spend.spent,
            cap = ctx.config.budget.tokens_per_cycle,
            "token budget overrun: the server counted more tokens than estimated; later estimates are scaled up"
        );
    }
    work.report.tokens = Tokens::from_spend(ctx.config.budget.tokens_per_cycle, spend);
    work.report.tokens.stages = ctx.budget.stages();
    work.report.tokens.calibration = ctx
        .llm
        .tokenizer_key()
        .zip(ctx.llm.calibration())
        .map(|(model, ratio)| Calibration { model, ratio });
}

/// Commit a dirty tree as the person's hand edits, the first commit of the cycle's batch
/// (a dry run only notes it). Returns memory as the last commit left it, to see which
/// facts a person reworded by hand.
fn record_hand_edits(
    ctx: &Ctx<'_>,
    store: &Store,
    batch: &mut Batch,
    report: &mut Report,
) -> Result<Option<Memory>> {
    let head = store.head();
    if ctx.opts.dry_run {
        if !store.is_dirty()? {
            return Ok(None);
        }
        let paths = store.dirty_paths()?;
        report.notes.push(format!(
            "would first commit hand edits to {}",
            paths.join(", ")
        ));
        return head.map(|h| store.memory_at(h, ctx.today)).transpose();
    }
    let staged = store.stage_hand_edits(batch, true, |paths| {
        dream_core::operations::commit::hand_edits(paths, &ctx.cycle_id).render()
    })?;
    let Some((oid, _)) = staged else {
        return Ok(None);
    };
    report.commits.push(CommitRow {
        stage: Stage::Manual.as_str().into(),
        commit: oid.to_string(),
        subject: "dream: record hand edits".into(),
    });
    head.map(|h| store.memory_at(h, ctx.today)).transpose()
}

/// Ingest new inbox and source lines into the transaction, then load the window and embed
/// what has no vector yet, unless nothing is new (the idle fast path).
fn ingest_and_embed(ctx: &Ctx<'_>, tx: &Connection, work: &mut Work, restart: bool) -> Result<()> {
    let (config, now) = (ctx.config, ctx.opts.now);
    ctx.progress.stage("ingest");
    work.report.ingest = ingest::ingest_inbox(tx, ctx.root, config, &ctx.cycle_id, now)?;
    for w in &work.report.ingest.watermarks {
        state::put_watermark(tx, w, now)?;
    }
    work.lap("ingest");
    oplog::ingested(&work.report.ingest);
    heartbeat::record_growth(tx, config, &work.report.ingest, now)?;

    let from = now - Duration::days(i64::from(config.cluster.window_days));
    // Fast path: with nothing ingested and nothing in the window waiting to be looked at,
    // clustering would find exactly what the last cycle found, so the window is not even
    // loaded (a timer's idle run stays a few milliseconds, whatever the history's size).
    let backfill_due = config.profile(ctx.opts.kind).reflect
        && backfill_start(tx, from, restart, i64::MIN)?.is_some();
    work.idle = work.report.ingest.new_events == 0
        && !backfill_due
        && !state::window_has_unreflected(tx, from, now)?;
    if work.idle {
        work.report
            .notes
            .push("nothing new since the last cycle: the window was not clustered".into());
    } else {
        work.window = state::window(tx, from, now, &ctx.embedder.id())?;
        work.report.window.events = work.window.len();
        work.lap("window");
        let remote = ctx.embedder.id() != builtin_id(config);
        if remote {
            ctx.progress.stage("embed");
        }
        let embedded = embed_missing(
            tx,
            ctx.embedder,
            &mut work.window,
            config.embed.batch_size,
            &mut work.report.embedded,
            if remote { ctx.progress } else { &Silent },
        );
        match embedded {
            Ok(()) => {}
            // An embedding server that fails degrades the cycle as a chat model's does: this
            // cycle clusters with the builtin embedder (vectors cached apart), and the next
            // tries the server again.
            Err(Error::Provider(why)) if remote => {
                let builtin = dream_core::selection::embed::Builtin::new(config.embed.dim);
                tracing::warn!("embedding failed, clustering with the builtin embedder: {why}");
                work.report.degraded.push(Degraded {
                    stage: "embed".into(),
                    reason: format!(
                        "{why}; this cycle clusters with the builtin embedder instead, and the next tries {} again",
                        ctx.embedder.id()
                    ),
                });
                work.report.embedder =
                    format!("{} (fallback from {})", builtin.id(), ctx.embedder.id());
                work.window = state::window(tx, from, now, &builtin.id())?;
                work.report.window.events = work.window.len();
                embed_missing(
                    tx,
                    &builtin,
                    &mut work.window,
                    config.embed.batch_size,
                    &mut work.report.embedded,
                    &Silent,
                )?;
            }
            Err(e) => return Err(e),
        }
    }
    work.lap("embed");
    tracing::info!(
        window_events = work.window.len(),
        embedded = work.report.embedded,
        "embedded"
    );
    Ok(())
}

/// The state mark saying how far the backfill has come: history before it was
/// consolidated window by window (epoch seconds, the end of the last window done).
const BACKFILL_MARK: &str = "backfill";

/// Where the backfill starts: the oldest event older than the window (`ts < from`) that no
/// cycle has looked at, at or after the mark (all of them when `restart`) and `after`.
fn backfill_start(
    tx: &Connection,
    from: DateTime<Utc>,
    restart: bool,
    after: i64,
) -> Result<Option<i64>> {
    let mark = if restart {
        None
    } else {
        state::mark(tx, BACKFILL_MARK)?
    };
    let lower = mark.unwrap_or(i64::MIN).max(after);
    state::oldest_unreflected(tx, lower, from.timestamp())
}

/// Consolidate the history older than the window, oldest first, one window of
/// `cluster.window_days` at a time, each its own commit, under the cycle's budget, before
/// the current window (so what was said later meets what was said before, in order). After
/// each window finished, the mark moves past it; when the budget stops a call (or the
/// server is found unavailable) the backfill stops and the mark stays, so the next cycle
/// goes on from that window. A kill rolls the whole cycle back with the state transaction:
/// the rerun does the same windows again. Events left behind (a call that failed, a
/// budget stop) are counted in the report and are the heartbeat's `unreflected` warning.
fn backfill(
    ctx: &Ctx<'_>,
    tx: &Connection,
    work: &mut Work,
    restart: bool,
    store: &Store,
    batch: &mut Batch,
) -> Result<()> {
    let config = ctx.config;
    let from = ctx.opts.now - Duration::days(i64::from(config.cluster.window_days));
    let until = from.timestamp();
    let span = i64::from(config.cluster.window_days.max(1)) * 86_400;
    let Some(mut start) = backfill_start(tx, from, restart, i64::MIN)? else {
        return Ok(());
    };
    let main_window = std::mem::take(&mut work.window);
    let main_report = std::mem::take(&mut work.report.window);
    let mut done = dream_core::operations::report::Backfill::default();
    let at = |t: i64| DateTime::<Utc>::from_timestamp(t, 0).unwrap_or(from);
    let mut stopped_at = None;
    loop {
        let end = start.saturating_add(span).min(until);
        let left = ((until - start + span - 1) / span).max(1);
        ctx.progress.stage(&format!(
            "backfill {} to {} (about {left} windows of history left)",
            at(start).date_naive(),
            at(end - 1).date_naive()
        ));
        let refused = ctx.budget.spend().refused;
        work.report.window = dream_core::operations::report::Window {
            days: config.cluster.window_days,
            ..Default::default()
        };
        work.window = state::window(tx, at(start), at(end - 1), &ctx.embedder.id())?;
        let mut embedded = 0;
        if let Err(e) = embed_missing(
            tx,
            ctx.embedder,
            &mut work.window,
            config.embed.batch_size,
            &mut embedded,
            &Silent,
        ) {
            // The current window's embedding decides how the cycle degrades; the backfill
            // just waits for the next cycle.
            work.report.notes.push(format!(
                "the backfill stopped at {}: embedding failed: {e}",
                at(start).date_naive()
            ));
            stopped_at = Some(start);
            break;
        }
        work.report.embedded += embedded;
        let label = format!(
            "backfill {} to {}",
            at(start).date_naive(),
            at(end - 1).date_naive()
        );
        consolidate_counted(ctx, tx, work, Some(&label))?;
        // The window's commits go into the batch now and their texts are let go: held to
        // the end, a year of windows held every window's copy of memory, the archive and
        // a line per candidate (hundreds of MiB). The last stage stays queued, for the
        // stages after the backfill that add to the last commit.
        commit_stages(ctx, store, batch, work, Keep::Last)?;
        let w = &work.report.window;
        done.new_events += w.new_events;
        done.reflected += w.reflected;
        done.pending += w.pending;
        if ctx.budget.spend().refused > refused || ctx.unavailable.get().is_some() {
            done.stopped = ctx.budget.spend().refused > refused;
            stopped_at = Some(start);
            break;
        }
        state::put_mark(tx, BACKFILL_MARK, end, ctx.opts.now)?;
        done.windows += 1;
        match backfill_start(tx, from, false, end)? {
            Some(next) => start = next,
            None => break,
        }
    }
    work.window = main_window;
    work.report.window = main_report;
    done.until = stopped_at.map(at);
    done.left = state::unreflected_before(tx, until)?.0;
    work.lap("backfill");
    work.report.backfill = Some(done);
    Ok(())
}

/// Run the consolidation stage on `work.window`, and give its commit its own counts and
/// tokens (the stage's subject counts what it decided; `Dream-Tokens:` is its own spend,
/// not the cycle's so far), with `label` (a backfill window) before the subject's counts.
fn consolidate_counted(
    ctx: &Ctx<'_>,
    tx: &Connection,
    work: &mut Work,
    label: Option<&str>,
) -> Result<()> {
    let stages = work.stages.len();
    let spent = ctx.budget.spend().spent;
    let counts = std::mem::take(&mut work.report.candidates);
    let result = consolidate::consolidate_window(ctx, tx, work);
    let mine = std::mem::replace(&mut work.report.candidates, counts);
    work.report.candidates.merge(&mine);
    result?;
    let own = ctx.budget.spend().spent.saturating_sub(spent);
    for s in &mut work.stages[stages..] {
        s.message.tokens = own;
        if let Some(label) = label {
            if let Some(rest) = s.message.subject.strip_prefix("dream: ") {
                s.message.subject = format!("dream: {label}: {rest}");
            }
        }
    }
    Ok(())
}

/// Which queued stages [`commit_stages`] leaves queued.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    None,
    /// The last one: a later stage (the agents' view, the quiz) may still add to it.
    Last,
}

/// Build queued stages' commits into the batch, oldest first, each message rendered once
/// with the stages degraded so far (a dry run lists what it would commit), and let their
/// texts go: `work.committed` keeps which paths they leave, and the report counts the
/// episode lines they added.
fn commit_stages(
    ctx: &Ctx<'_>,
    store: &Store,
    batch: &mut Batch,
    work: &mut Work,
    keep: Keep,
) -> Result<()> {
    let n = match keep {
        Keep::None => work.stages.len(),
        Keep::Last => work.stages.len().saturating_sub(1),
    };
    let stages: Vec<StageCommit> = work.stages.drain(..n).collect();
    for mut s in stages {
        s.message.degraded = work.report.degraded.clone();
        s.change.message = s.message.render();
        count_episode_lines(store, work, &s)?;
        if ctx.opts.dry_run {
            work.report.notes.push(format!(
                "would commit ({}): {}",
                s.stage(),
                s.message.subject()
            ));
            for (path, contents) in &s.change.writes {
                let verb = if contents.is_some() {
                    "write"
                } else {
                    "remove"
                };
                work.report.notes.push(format!("  would {verb} {path}"));
            }
        } else if let Some(oid) = store.stage(batch, &s.change)? {
            work.report.commits.push(CommitRow {
                stage: s.stage().as_str().into(),
                commit: oid.to_string(),
                subject: s.message.subject().to_string(),
            });
        }
        for (path, contents) in s.change.writes {
            work.committed.insert(path, contents.is_some());
        }
    }
    Ok(())
}

/// Count the lines a stage of the cycle's own (not a maintenance pass, hand edits or the
/// digest) adds to memory/episodes.md, for the heartbeat, against the file as the stages
/// before it left it.
fn count_episode_lines(store: &Store, work: &mut Work, s: &StageCommit) -> Result<()> {
    let path = Block::Episodes.path();
    let Some((_, Some(text))) = s.change.writes.iter().find(|(p, _)| *p == path) else {
        return Ok(());
    };
    let current = match work.episodes_text.take() {
        Some(t) => t,
        None => store.read(&path)?.unwrap_or_default(),
    };
    let own =
        !(s.stage().is_pass() || matches!(s.stage(), Stage::Manual | Stage::Adopt | Stage::Digest));
    if own {
        work.report.episodes_lines +=
            dream_core::operations::heartbeat::lines_added(&current, text);
    }
    work.episodes_text = Some(text.to_string());
    Ok(())
}

/// The heartbeat's warnings after this cycle (it counts as the newest), into the report
/// and the journal.
fn raise_warnings(ctx: &Ctx<'_>, tx: &Connection, work: &mut Work) -> Result<()> {
    let current = Seen::from_report(
        &ctx.cycle_id,
        ctx.opts.kind.as_str(),
        ctx.opts.now,
        &serde_json::to_value(&work.report).unwrap_or_default(),
    );
    work.report.warnings =
        heartbeat::warnings(tx, ctx.root, ctx.config, ctx.opts.now, Some(current))?;
    Ok(())
}

/// Log the outcome and record the cycle in the state transaction.
fn finish(
    ctx: &Ctx<'_>,
    tx: &Connection,
    work: &mut Work,
    started: DateTime<Utc>,
    elapsed: Elapsed,
) -> Result<()> {
    oplog::finished(&work.report, elapsed);
    oplog::warnings(&work.report.warnings);
    work.report
        .timings_ms
        .insert("total".into(), elapsed.as_millis() as u64);
    state::put_cycle(
        tx,
        &state::CycleRecord {
            id: ctx.cycle_id.clone(),
            kind: ctx.opts.kind.as_str().into(),
            started,
            finished: Utc::now(),
            now: ctx.opts.now,
            report: serde_json::to_value(&work.report).unwrap_or_default(),
        },
    )
}

/// Give hand-written facts ids, and make facts a person reworded by hand their own (`by=owner`:
/// their new words come from the person, not from the events), as a stage of its own.
fn adopt_hand_written(ctx: &Ctx<'_>, work: &mut Work, committed: Option<&Memory>) {
    let before = work.memory.clone();
    let mut lines = work.memory.resolve_duplicate_ids();
    let duplicates = lines.len();
    if let Some(committed) = committed {
        for bf in &mut work.memory.blocks {
            for f in bf.facts_mut() {
                let reworded = committed
                    .get(&f.id)
                    .is_some_and(|(_, old)| old.text != f.text);
                if reworded && f.origin != dream_core::schema::Origin::Owner {
                    f.origin = dream_core::schema::Origin::Owner;
                    lines.push(format!(
                        "owned      {}  (reworded by hand: now trusted as an owner fact)",
                        f.id
                    ));
                }
            }
        }
    }
    let adopted = work.memory.adopt_hand_written();
    lines.extend(
        adopted
            .iter()
            .map(|id| format!("adopted    {id}  (hand-written, trusted as an owner fact)")),
    );
    if lines.is_empty() {
        return;
    }
    let change = Change::blocks(&before, &work.memory);
    let owned = lines.len() - adopted.len() - duplicates;
    let mut subject = match (adopted.len(), owned) {
        (0, 0) => String::new(),
        (a, 0) => format!("give ids to {a} hand-written facts"),
        (0, o) => format!("{o} facts reworded by hand are now owner facts"),
        (a, o) => {
            format!("give ids to {a} hand-written facts; {o} reworded by hand are now owner facts")
        }
    };
    if duplicates > 0 {
        let d = format!("{duplicates} lines with a repeated id resolved");
        subject = if subject.is_empty() {
            d
        } else {
            format!("{subject}; {d}")
        };
    }
    let subject = format!("dream: {subject}");
    work.push_stage(ctx, Stage::Adopt, change, &subject, &lines, 0);
}

/// The id the builtin embedder has under this config.
fn builtin_id(config: &Config) -> String {
    dream_core::selection::embed::Builtin::new(config.embed.dim).id()
}

/// Embed (and cache) the window's events that have no cached vector yet, in batches,
/// reading the text of those events only.
fn embed_missing(
    conn: &Connection,
    embedder: &dyn Embedder,
    window: &mut state::Window,
    batch: usize,
    embedded: &mut usize,
    progress: &dyn Progress,
) -> Result<()> {
    let missing = std::mem::take(&mut window.missing);
    if missing.is_empty() {
        return Ok(());
    }
    let model = state::model_id(conn, &embedder.id(), true)?.expect("created");
    let batches = missing.len().div_ceil(batch.max(1));
    for (n, chunk) in missing.chunks(batch.max(1)).enumerate() {
        if batches > 1 {
            progress.calls("embed", n, batches, 0);
        }
        let seqs: Vec<i64> = chunk.iter().map(|&row| window.seq[row]).collect();
        let texts = state::texts_by_seq(conn, &seqs)?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed(&refs)?;
        if vectors.len() != chunk.len() {
            return Err(Error::Other(format!(
                "the embedder returned {} vectors for {} texts",
                vectors.len(),
                chunk.len()
            )));
        }
        for (&row, v) in chunk.iter().zip(&vectors) {
            state::put_vector(conn, model, window.seq[row], v)?;
            window.set_vector(row, v)?;
            *embedded += 1;
        }
    }
    if batches > 1 {
        progress.calls("embed", batches, batches, 0);
    }
    Ok(())
}
