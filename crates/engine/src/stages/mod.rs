//! The stages of a cycle (SPEC S4) and what they share. Each stage is a function
//! `(ctx, tx, work)` that reads through the edges, calls the pure core, and leaves its
//! result in [`Work`]: the in-memory facts and cards, report figures, and a
//! [`StageCommit`] (files plus commit message) for `cycle` to commit. Stages may write rows
//! into the state transaction `tx`, which `cycle` commits only after every git commit.
//!
//! `consolidate` is the evening's main stage (cluster, reflect, gate, judge, route, apply;
//! `reflect_plan` builds its reflect calls),
//! `passes` the maintenance passes, `skills` recurring procedures, `digest` the page for a
//! person, `context` the capped file agents import, `oplog` the journal lines a cycle
//! leaves. `cycle` orders them.

pub mod consolidate;
pub mod context;
pub mod digest;
pub mod oplog;
pub mod passes;
pub mod queue;
pub mod quiz;
pub mod reflect_plan;
pub mod scope;
pub mod skills;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use chrono::{DateTime, NaiveDate, Utc};

use dream_core::llm::budget::{Budget, CallError};
use dream_core::llm::Llm;
use dream_core::operations::commit::Message;
use dream_core::operations::report::Report;
use dream_core::schema::contract::{LlmError, LlmErrorKind, Reply};
use dream_core::schema::settings::{Config, CycleKind};
use dream_core::schema::{self, Archive, Card, Memory, Stage};

use crate::edges::state;
use crate::edges::store::{Change, Store};
use crate::error::Result;
use crate::providers::embed::Embedder;

/// How a cycle runs.
#[derive(Debug, Clone)]
pub struct Options {
    pub kind: CycleKind,
    pub dry_run: bool,
    /// The cycle's clock (the wall clock unless `--now` was given).
    pub now: DateTime<Utc>,
    /// `dream run --allow-loss`: the loss guard (`passes::loss`) holds nothing back.
    pub allow_loss: bool,
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
    /// Where the cycle shows how far it got (a terminal, the journal, the lock note).
    pub progress: &'a dyn Progress,
    /// Set once a call found the server unavailable: no later call of the cycle starts.
    pub unavailable: OnceLock<String>,
}

impl Ctx<'_> {
    /// Make one model call of `stage` under the budget ([`Budget::call`], which books it to
    /// the stage), unless an earlier call of this cycle found the server unavailable: one
    /// that could not be reached, or did not answer within `llm.timeout_secs` (a local
    /// server is then still busy with the abandoned request, so the next call would only
    /// queue behind it).
    pub fn call<T>(
        &self,
        stage: &str,
        estimate: u64,
        f: impl FnOnce() -> Result<Reply<T>, LlmError>,
    ) -> Result<Reply<T>, CallError> {
        if let Some(why) = self.unavailable.get() {
            return Err(CallError::Skipped(why.clone()));
        }
        let result = self.budget.call(stage, estimate, f);
        if let Err(CallError::Failed(e)) = &result {
            if matches!(e.kind, LlmErrorKind::Unreachable | LlmErrorKind::Timeout) {
                let _ = self.unavailable.set(e.message.clone());
            }
        }
        result
    }
}

/// How far a cycle got, for a person watching (`dream run` on a terminal, or the journal)
/// and for `dream status` (the lock note). Every method has a silent default.
pub trait Progress: Sync {
    /// A stage of the cycle started.
    fn stage(&self, _stage: &str) {}
    /// `done` of the `total` model calls `stage` makes have returned; `tokens` is the
    /// cycle's spend so far.
    fn calls(&self, _stage: &str, _done: usize, _total: usize, _tokens: u64) {}
}

/// Shows nothing.
pub struct Silent;

impl Progress for Silent {}

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
    pub stages: Vec<StageCommit>,
    pub timer: Instant,
    /// `archive/facts.md` as this cycle will commit it, once a stage added to it (the next
    /// stage adds to that, not to the file on disk).
    pub archive: Option<Archive>,
    /// The facts this cycle's candidates reinforced (the quiz asks about them; the
    /// report's rows may not list every one).
    pub reinforced: std::collections::BTreeSet<String>,
    /// Paths the stages already built into the batch leave, and whether each exists
    /// after them (their texts are let go once built: see `cycle::commit_stages`).
    pub committed: std::collections::BTreeMap<String, bool>,
    /// memory/episodes.md as the stages already built left it, when one wrote it.
    pub episodes_text: Option<String>,
}

/// The archive as the cycle's earlier stages left it, else as the repository holds it.
pub fn load_archive(ctx: &Ctx<'_>, work: &Work) -> Result<Archive> {
    if let Some(a) = &work.archive {
        return Ok(a.clone());
    }
    let text = Store::open(ctx.root)?
        .read(schema::ARCHIVE)?
        .unwrap_or_else(schema::archive_header);
    Ok(Archive::of(text))
}

impl Work {
    /// Queue `change` as the commit of `stage`: `subject`, one body line per item, then
    /// the cycle's trailers; `tokens` is what this stage spent (`Dream-Tokens:`).
    pub fn push_stage(
        &mut self,
        ctx: &Ctx<'_>,
        stage: Stage,
        change: Change,
        subject: &str,
        lines: &[String],
        tokens: u64,
    ) {
        let message = Message::new(subject, lines.to_vec(), &ctx.cycle_id, stage).tokens(tokens);
        self.push_commit(change, message);
    }

    /// Queue `change` with a message the stage built itself (extra trailers).
    pub fn push_commit(&mut self, change: Change, message: Message) {
        self.stages.push(StageCommit { change, message });
    }

    /// Charge the time since the last lap to `stage` in the report.
    pub fn lap(&mut self, stage: &str) {
        let ms = self.timer.elapsed().as_millis() as u64;
        *self.report.timings_ms.entry(stage.into()).or_default() += ms;
        self.timer = Instant::now();
    }
}

/// One commit's worth of changes and its message, rendered when it is committed (with
/// the cycle's degraded stages, known only then).
pub struct StageCommit {
    pub change: Change,
    pub message: Message,
}

impl StageCommit {
    pub fn stage(&self) -> Stage {
        self.message.stage
    }
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
