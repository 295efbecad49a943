//! The cycle (SPEC S4): lock, record hand edits, ingest, embed, run the stages of the
//! cycle's profile, commit each stage, then commit the state, report.
//!
//! This is the only place that sequences the pipeline. A stage (see `consolidate`) is a
//! function `(ctx, tx, work)` that reads through the edges, calls the pure core, and
//! leaves its result in [`Work`]: the in-memory facts and cards, report figures, and a
//! [`Stage`] (files plus commit message) to commit. Stages may write rows into the state
//! transaction `tx`, which commits only after every git commit succeeded: a crash anywhere
//! before that leaves the state as the previous cycle left it, and the next run redoes the
//! work with the same result (ids are derived from content, so nothing is doubled).
//! `--dry-run` runs the same code against a scratch copy of the state and skips the
//! commits, so it writes nothing at all.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use rusqlite::Connection;

use crate::config::{Config, CycleKind};
use crate::embed::Embedder;
use crate::error::{Context, Result};
use crate::llm::budget::Budget;
use crate::llm::Llm;
use crate::memory::{Card, Memory};
use crate::report::{CommitRow, Degraded, Report, Tokens};
use crate::state::{self, State};
use crate::store::{Change, Store};
use crate::{consolidate, digest, ingest, lock};

/// How a cycle runs.
#[derive(Debug, Clone)]
pub struct Options {
    pub kind: CycleKind,
    pub dry_run: bool,
    /// The cycle's clock (the wall clock unless `--now` was given).
    pub now: DateTime<Utc>,
}

/// What every stage may read.
pub struct Ctx<'a> {
    pub root: &'a Path,
    pub config: &'a Config,
    pub llm: &'a dyn Llm,
    pub embedder: &'a dyn Embedder,
    pub opts: &'a Options,
    pub cycle_id: String,
    pub today: NaiveDate,
    pub budget: Budget,
}

/// What stages build up: durable memory and cards as they will be committed, the window
/// with its vectors, the report, and the changes to commit in order.
pub struct Work {
    pub memory: Memory,
    /// Pending review cards; loaded only when reflect, the passes or the digest will run
    /// (empty on an idle cycle that runs none of them).
    pub cards: Vec<Card>,
    /// The rolling window (recalled events left out), oldest first: ids, times and one
    /// vector per event, without text (stages fetch the text of the few events they show
    /// a model). Empty when the cycle found nothing new (see [`Work::idle`]).
    pub window: state::Window,
    /// Nothing was ingested and no window event waits to be looked at: the window was not
    /// loaded and there is nothing to cluster.
    pub idle: bool,
    pub report: Report,
    pub stages: Vec<Stage>,
    timer: Instant,
}

impl Work {
    /// Queue `change` as the commit of stage `name`: `subject`, one body line per item,
    /// then the cycle's trailers (`Dream-Stage: name`).
    pub fn push_stage(
        &mut self,
        ctx: &Ctx<'_>,
        name: &'static str,
        mut change: Change,
        subject: &str,
        lines: &[String],
        tokens: u64,
    ) {
        change.message = commit_message(subject, lines, &ctx.cycle_id, name, tokens);
        self.stages.push(Stage { name, change });
    }

    /// Charge the time since the last lap to `stage` in the report.
    pub fn lap(&mut self, stage: &str) {
        let ms = self.timer.elapsed().as_millis() as u64;
        *self.report.timings_ms.entry(stage.into()).or_default() += ms;
        self.timer = Instant::now();
    }
}

/// One commit's worth of changes.
pub struct Stage {
    pub name: &'static str,
    pub change: Change,
}

/// Run one cycle on the repo at `root`.
pub fn run(
    root: &Path,
    config: &Config,
    llm: &dyn Llm,
    embedder: &dyn Embedder,
    opts: &Options,
) -> Result<Report> {
    let wall = Instant::now();
    let started = Utc::now();
    let _lock = lock::acquire(root, !opts.dry_run, started)?;
    let store = Store::open(root)?;
    let mut state = if opts.dry_run {
        State::open_scratch_copy(root)?
    } else {
        State::open(root)?
    };
    let now = opts.now;
    let ctx = Ctx {
        root,
        config,
        llm,
        embedder,
        opts,
        cycle_id: format!("{}-{}", now.format("%Y%m%dT%H%M%SZ"), opts.kind.as_str()),
        today: now.date_naive(),
        budget: Budget::new(config.budget.tokens_per_cycle),
    };
    let mut report = Report {
        cycle: ctx.cycle_id.clone(),
        kind: opts.kind.as_str().into(),
        now,
        dry_run: opts.dry_run,
        provider: llm.name(),
        embedder: embedder.id(),
        ..Report::default()
    };
    report.window.days = config.cluster.window_days;
    tracing::info!(
        cycle = %ctx.cycle_id,
        kind = opts.kind.as_str(),
        repo = %root.display(),
        dry_run = opts.dry_run,
        provider = %report.provider,
        "{} cycle started",
        opts.kind.as_str()
    );

    // Hand edits first, so they are never clobbered and the audit trail shows them apart.
    let dirty = if opts.dry_run {
        store.is_dirty()?
    } else {
        store.is_dirty_refreshing_index()?
    };
    // Memory as the last commit left it, to see which facts a person reworded by hand.
    let committed = match (dirty, store.head()) {
        (true, Some(head)) => Some(store.memory_at(head, ctx.today)?),
        _ => None,
    };
    if dirty {
        let paths = store.dirty_paths()?;
        if opts.dry_run {
            report.notes.push(format!(
                "would first commit hand edits to {}",
                paths.join(", ")
            ));
        } else if let Some(oid) = store.commit_all(&manual_edit_message(&paths, &ctx.cycle_id))? {
            report.commits.push(CommitRow {
                stage: "manual".into(),
                commit: oid.to_string(),
                subject: "dream: record hand edits".into(),
            });
        }
    }
    let mut work = Work {
        memory: store.load_memory(ctx.today)?,
        cards: Vec::new(),
        window: state::Window::default(),
        idle: false,
        report,
        stages: Vec::new(),
        timer: Instant::now(),
    };
    adopt_hand_written(&ctx, &mut work, committed.as_ref());

    let tx = state
        .conn
        .transaction()
        .context(|| "starting the state transaction".into())?;
    work.report.ingest = ingest::run(&tx, root, config, &ctx.cycle_id, now)?;
    for w in &work.report.ingest.watermarks {
        state::put_watermark(&tx, w, now)?;
    }
    work.lap("ingest");
    crate::oplog::ingested(&work.report.ingest);

    let from = now - Duration::days(i64::from(config.cluster.window_days));
    // Fast path: with nothing ingested and nothing in the window waiting to be looked at,
    // clustering would find exactly what the last cycle found, so the window is not even
    // loaded (a timer's idle run stays a few milliseconds, whatever the history's size).
    work.idle =
        work.report.ingest.new_events == 0 && !state::window_has_unreflected(&tx, from, now)?;
    if work.idle {
        work.report
            .notes
            .push("nothing new since the last cycle: the window was not clustered".into());
    } else {
        work.window = state::window(&tx, from, now, &embedder.id())?;
        work.report.window.events = work.window.len();
        work.lap("window");
        embed_missing(
            &tx,
            embedder,
            &mut work.window,
            config.embed.batch_size,
            &mut work.report.embedded,
        )?;
    }
    work.lap("embed");
    tracing::info!(
        window_events = work.window.len(),
        embedded = work.report.embedded,
        "embedded"
    );

    let profile = config.profile(opts.kind);
    // Durable memory changes only through new events or hand edits, so an idle cycle with
    // no hand edit has nothing for the passes to do.
    let hand_edited = work.report.commits.iter().any(|c| c.stage == "manual");
    let reflect = profile.reflect && !work.idle;
    let passes = profile.passes && (!work.idle || hand_edited);
    // Pending cards are read only when a stage will look at them: an idle evening cycle
    // skips parsing every card's front matter (a busy review queue is megabytes of it).
    if reflect || passes || profile.digest {
        let (cards, problems) = store.pending_cards()?;
        work.cards = cards;
        for p in problems {
            work.report
                .notes
                .push(format!("skipped a card that does not parse: {p}"));
        }
    }
    if reflect {
        let new_tool_calls = crate::skills::procedure::new_tool_call(&work.window.procedure);
        consolidate::run(&ctx, &tx, &mut work)?;
        if new_tool_calls {
            crate::skills::run(&ctx, &tx, &mut work)?;
        }
    }
    if passes {
        crate::passes::run(&ctx, &tx, &mut work)?;
    }
    // The digest comes last, so it shows what this cycle left for a person.
    if profile.digest {
        digest::run(&ctx, &tx, &mut work)?;
    }

    work.report.tokens = Tokens::from_spend(config.budget.tokens_per_cycle, ctx.budget.spend());
    let degraded = work.report.degraded.clone();
    for s in &mut work.stages {
        s.change.message = with_degraded(&s.change.message, &degraded);
    }

    // Commit each stage, then (and only then) the state.
    if opts.dry_run {
        for s in &work.stages {
            work.report.notes.push(format!(
                "would commit ({}): {}",
                s.name,
                s.change.message.lines().next().unwrap_or_default()
            ));
            for (path, contents) in &s.change.writes {
                let verb = if contents.is_some() {
                    "write"
                } else {
                    "remove"
                };
                work.report.notes.push(format!("  would {verb} {path}"));
            }
        }
    } else {
        for s in &work.stages {
            if let Some(oid) = store.apply(&s.change)? {
                work.report.commits.push(CommitRow {
                    stage: s.name.into(),
                    commit: oid.to_string(),
                    subject: s
                        .change
                        .message
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                });
            }
        }
        failpoint("after-commit");
        if !work.report.commits.is_empty() {
            store.settle_index()?;
        }
    }
    work.lap("commit");
    crate::oplog::finished(&work.report, wall.elapsed());
    work.report
        .timings_ms
        .insert("total".into(), wall.elapsed().as_millis() as u64);
    state::put_cycle(
        &tx,
        &state::CycleRecord {
            id: ctx.cycle_id.clone(),
            kind: opts.kind.as_str().into(),
            started,
            finished: Utc::now(),
            now,
            report: serde_json::to_value(&work.report).unwrap_or_default(),
        },
    )?;
    if opts.dry_run {
        tx.rollback()
            .context(|| "discarding the dry run's scratch state".into())?;
    } else {
        tx.commit()
            .context(|| "committing the state transaction".into())?;
    }
    Ok(work.report)
}

/// Give hand-written facts ids, as a stage of its own.
/// Give hand-written facts ids, and make facts a person reworded by hand their own (`by=owner`:
/// their new words come from the person, not from the events), as a stage of its own.
fn adopt_hand_written(ctx: &Ctx<'_>, work: &mut Work, committed: Option<&Memory>) {
    let before = work.memory.clone();
    let mut lines = Vec::new();
    if let Some(committed) = committed {
        for bf in &mut work.memory.blocks {
            for f in bf.facts_mut() {
                let reworded = committed
                    .get(&f.id)
                    .is_some_and(|(_, old)| old.text != f.text);
                if reworded && f.origin != crate::memory::Origin::Owner {
                    f.origin = crate::memory::Origin::Owner;
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
    let change = consolidate::block_changes(&before, &work.memory);
    let subject = match (adopted.len(), lines.len() - adopted.len()) {
        (a, 0) => format!("dream: give ids to {a} hand-written facts"),
        (0, o) => format!("dream: {o} facts reworded by hand are now owner facts"),
        (a, o) => format!(
            "dream: give ids to {a} hand-written facts; {o} reworded by hand are now owner facts"
        ),
    };
    work.push_stage(ctx, "adopt", change, &subject, &lines, 0);
}

/// Stop the process at a named point, for crash tests (debug builds only).
fn failpoint(name: &str) {
    if cfg!(debug_assertions) && std::env::var("DREAM_FAILPOINT").is_ok_and(|v| v == name) {
        eprintln!("dream: failpoint {name} reached; aborting");
        std::process::abort();
    }
}

/// Embed (and cache) the window's events that have no cached vector yet, in batches,
/// reading the text of those events only.
fn embed_missing(
    conn: &Connection,
    embedder: &dyn Embedder,
    window: &mut state::Window,
    batch: usize,
    embedded: &mut usize,
) -> Result<()> {
    let missing = std::mem::take(&mut window.missing);
    if missing.is_empty() {
        return Ok(());
    }
    let model = state::model_id(conn, &embedder.id(), true)?.expect("created");
    for chunk in missing.chunks(batch.max(1)) {
        let seqs: Vec<i64> = chunk.iter().map(|&row| window.seq[row]).collect();
        let texts = state::texts_by_seq(conn, &seqs)?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed(&refs)?;
        if vectors.len() != chunk.len() {
            return Err(crate::error::Error::Other(format!(
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
    Ok(())
}

/// Run `f` over `items` with up to `workers` threads; results keep the input order.
pub fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    if workers <= 1 || items.len() <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers.min(items.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= items.len() {
                    break;
                }
                let r = f(&items[i]);
                *slots[i].lock().expect("result slot") = Some(r);
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .expect("result slot")
                .expect("every item ran")
        })
        .collect()
}

/// A commit message: a subject a person can scan, one line per mutation, and trailers.
pub fn commit_message(
    subject: &str,
    lines: &[String],
    cycle: &str,
    stage: &str,
    tokens: u64,
) -> String {
    let mut m = format!("{subject}\n\n");
    for l in lines {
        m.push_str(l);
        m.push('\n');
    }
    if !lines.is_empty() {
        m.push('\n');
    }
    m.push_str(&format!(
        "Dream-Cycle: {cycle}\nDream-Stage: {stage}\nDream-Tokens: {tokens}\n"
    ));
    m
}

/// Add the degraded stages to a commit message, in its body and as trailers.
fn with_degraded(message: &str, degraded: &[Degraded]) -> String {
    if degraded.is_empty() {
        return message.to_string();
    }
    let Some(at) = message.find("\nDream-Cycle:") else {
        return message.to_string();
    };
    let mut m = message[..at].to_string();
    for d in degraded {
        m.push_str(&format!("\ndegraded   {}: {}", d.stage, d.reason));
    }
    m.push('\n');
    m.push_str(&message[at..]);
    for d in degraded {
        m.push_str(&format!("Dream-Degraded: {}\n", d.stage));
    }
    m
}

fn manual_edit_message(paths: &[String], cycle: &str) -> String {
    let lines: Vec<String> = paths.iter().map(|p| format!("edited     {p}")).collect();
    commit_message("dream: record hand edits", &lines, cycle, "manual", 0)
}
