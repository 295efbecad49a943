//! The cycle (SPEC S4): lock, ingest, embed, cluster, reflect, gate, judge, route, commit,
//! advance the watermark, report.
//!
//! The cycle is the only place that sequences the pipeline. It reads through the edges
//! (`inbox`/`ingest`, `state`, `store`, the providers), hands data to the pure core
//! (`gates`, `route`, `measures`), and collects the resulting file changes into one
//! [`Change`] per stage. Only after every stage's commit has succeeded does it commit the
//! state transaction that holds the new events, the watermarks and the cycle record; a
//! crash anywhere before that leaves the state as the previous cycle left it, and the next
//! run redoes the work with the same result (ids are derived from content, so nothing is
//! doubled). `--dry-run` runs the same code against a scratch copy of the state and
//! skips the commits, so it writes nothing at all.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use chrono::{DateTime, Duration, NaiveDate, Utc};

use crate::config::{Config, CycleKind};
use crate::embed::Embedder;
use crate::error::{Context, Result};
use crate::gates::{self, Evidence, Gated};
use crate::llm::budget::Budget;
use crate::llm::{
    EventView, FactView, JudgeItem, JudgeRequest, Llm, Proposal, ReflectRequest, Verdict,
};
use crate::memory::{
    self, text_id, unique_id, Block, Card, Decision, Excerpt, Fact, Memory, Origin,
};
use crate::report::{CommitRow, DecisionRow, Degraded, Report, Tokens};
use crate::route::{self, Outcome};
use crate::state::{self, State, Stored};
use crate::store::{Change, Store};
use crate::{cluster, ingest, lock};

/// How a cycle runs.
#[derive(Debug, Clone)]
pub struct Options {
    pub kind: CycleKind,
    pub dry_run: bool,
    /// The cycle's clock (the wall clock unless `--now` was given).
    pub now: DateTime<Utc>,
}

/// Judge items per call.
const JUDGE_BATCH: usize = 8;
/// Facts shown to the judge per candidate.
const JUDGE_NEIGHBOURS: usize = 5;

/// A stage's change and what it did, to be committed in order.
struct Stage {
    name: &'static str,
    change: Change,
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
    let today = now.date_naive();
    let cycle_id = format!("{}-{}", now.format("%Y%m%dT%H%M%SZ"), opts.kind.as_str());
    let profile = config.profile(opts.kind).clone();
    let budget = Budget::new(config.budget.tokens_per_cycle);
    let mut report = Report {
        cycle: cycle_id.clone(),
        kind: opts.kind.as_str().into(),
        now,
        dry_run: opts.dry_run,
        provider: llm.name(),
        embedder: embedder.id(),
        ..Report::default()
    };
    report.window.days = config.cluster.window_days;
    let mut timer = Timer::new();

    // Hand edits first, so they are never clobbered and the audit trail shows them apart.
    if store.is_dirty()? {
        let paths = store.dirty_paths()?;
        if opts.dry_run {
            report.notes.push(format!(
                "would first commit hand edits to {}",
                paths.join(", ")
            ));
        } else if let Some(oid) = store.commit_all(&manual_edit_message(&paths, &cycle_id))? {
            report.commits.push(CommitRow {
                stage: "manual".into(),
                commit: oid.to_string(),
                subject: "dream: record hand edits".into(),
            });
        }
    }
    let mut memory = store.load_memory(today)?;
    let original = memory.clone();
    let (mut pending_cards, card_problems) = store.pending_cards()?;
    for p in card_problems {
        report
            .notes
            .push(format!("skipped a card that does not parse: {p}"));
    }
    let mut stages: Vec<Stage> = Vec::new();
    let adopted = memory.adopt_hand_written();
    if !adopted.is_empty() {
        let mut change = block_changes(&original, &memory);
        change.message = commit_message(
            &format!("dream: give ids to {} hand-written facts", adopted.len()),
            &adopted
                .iter()
                .map(|id| format!("adopted    {id}  (hand-written, trusted as an owner fact)"))
                .collect::<Vec<_>>(),
            &cycle_id,
            "adopt",
            0,
        );
        stages.push(Stage {
            name: "adopt",
            change,
        });
    }
    let memory_before_consolidate = memory.clone();

    let tx = state
        .conn
        .transaction()
        .context(|| "starting the state transaction".into())?;
    report.ingest = ingest::run(&tx, root, config, &cycle_id, now)?;
    timer.lap(&mut report, "ingest");

    // Embed and cluster the window.
    let from = now - Duration::days(i64::from(config.cluster.window_days));
    let window: Vec<Stored> = state::window_events(&tx, from, now)?
        .into_iter()
        .filter(|s| !s.event.recalled)
        .collect();
    report.window.events = window.len();
    let vectors = embed_window(&tx, embedder, &window, config.embed.batch_size, &mut report)?;
    timer.lap(&mut report, "embed");

    let mut reflected_ids: Vec<String> = Vec::new();
    let mut proposals: Vec<(Proposal, Vec<EventView>)> = Vec::new();
    if profile.reflect {
        let usable: Vec<usize> = (0..window.len())
            .filter(|&i| vectors[i].iter().any(|x| *x != 0.0))
            .collect();
        let points: Vec<Vec<f32>> = usable.iter().map(|&i| vectors[i].clone()).collect();
        let clustering = cluster::dbscan(&points, config.cluster.min_points, config.cluster.eps);
        report.window.clusters = clustering.clusters.len();
        let mut selected: Vec<Vec<usize>> = clustering
            .clusters
            .iter()
            .map(|c| c.iter().map(|&k| usable[k]).collect::<Vec<usize>>())
            .filter(|c| c.iter().any(|&i| !window[i].reflected))
            .collect();
        selected.sort_by_key(|c| (std::cmp::Reverse(c.len()), window[c[0]].event.id.clone()));
        for (n, c) in selected.iter().enumerate() {
            let texts: Vec<String> = c
                .iter()
                .map(|&i| memory::excerpt(&window[i].event.text, 60))
                .collect();
            tracing::debug!(
                cluster = n,
                size = c.len(),
                "cluster: {}",
                texts.join(" | ")
            );
        }
        for &k in &clustering.noise {
            tracing::trace!(
                "noise: {}",
                memory::excerpt(&window[usable[k]].event.text, 80)
            );
        }
        report.window.with_new = selected.len();
        timer.lap(&mut report, "cluster");

        let requests: Vec<(ReflectRequest, Vec<String>)> = selected
            .iter()
            .enumerate()
            .map(|(n, c)| reflect_request(n, c, &window, config.cluster.max_events_per_prompt))
            .collect();
        let workers = if llm.offline() {
            1
        } else {
            config.llm.concurrency
        };
        let results = parallel_map(&requests, workers, |(req, _)| {
            let estimate = llm.estimate_reflect(req);
            let Some(reservation) = budget.reserve(estimate) else {
                return Err(None);
            };
            match llm.reflect(req) {
                Ok(reply) => {
                    let used = if reply.usage.reported {
                        reply.usage.total()
                    } else {
                        estimate
                    };
                    budget.settle(reservation, used);
                    Ok(reply)
                }
                Err(e) => {
                    budget.settle(reservation, estimate);
                    Err(Some(e))
                }
            }
        });
        let mut budget_pending = 0;
        for ((req, members), result) in requests.into_iter().zip(results) {
            match result {
                Ok(reply) => {
                    report.window.reflected += 1;
                    for note in reply.notes {
                        if !report.notes.contains(&note) {
                            report.notes.push(note);
                        }
                    }
                    reflected_ids.extend(members);
                    for p in reply.value.candidates {
                        proposals.push((p, req.events.clone()));
                    }
                }
                Err(None) => budget_pending += 1,
                Err(Some(e)) => {
                    report.window.pending += 1;
                    report.degraded.push(Degraded {
                        stage: "reflect".into(),
                        reason: format!(
                            "cluster {} left pending for the next cycle: {e}",
                            req.cluster
                        ),
                    });
                }
            }
        }
        if budget_pending > 0 {
            report.window.pending += budget_pending;
            report.notes.push(format!(
                "token budget reached: {budget_pending} clusters left pending for the next cycle (budget.tokens_per_cycle = {})",
                config.budget.tokens_per_cycle
            ));
            tracing::warn!(
                pending = budget_pending,
                cap = config.budget.tokens_per_cycle,
                "token budget reached"
            );
        }
        timer.lap(&mut report, "reflect");
    }

    // Gate every proposal against the events it was made from.
    let mut gated: Vec<Gated> = Vec::with_capacity(proposals.len());
    for (p, sent) in &proposals {
        let sent_ids: HashSet<&str> = sent.iter().map(|e| e.id.as_str()).collect();
        let mut elsewhere = HashSet::new();
        for id in &p.supporting_event_ids {
            if !sent_ids.contains(id.as_str()) && state::event_hash(&tx, id)?.is_some() {
                elsewhere.insert(id.clone());
            }
        }
        gated.push(gates::gate_proposal(
            p,
            &Evidence::new(sent, &elsewhere),
            config,
        ));
    }

    // Judge what passed the gates against its nearest active facts.
    let verdicts = judge(llm, &budget, &gated, &memory, config, &mut report);
    timer.lap(&mut report, "judge");

    // Route, in order, applying to memory and cards as we go.
    let mut card_writes: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut consolidate_lines = Vec::new();
    let mut candidate_records = Vec::new();
    for g in gated.iter() {
        let cand_id = text_id("k", &g.text);
        let near = route::nearest(&memory, &g.text, JUDGE_NEIGHBOURS);
        let verdict = verdicts.get(&cand_id);
        let mut g = g.clone();
        let matched = if g.refused.is_none() {
            matching_card(&pending_cards, &g.text, config)
        } else {
            None
        };
        if let Some(ci) = matched {
            g = merge_into_card(&tx, &pending_cards[ci], &g, config)?;
        }
        let (outcome, judge_text, route_gates) = route::route(&g, &near, verdict, config);
        let mut all_gates = g.gates.clone();
        all_gates.extend(route_gates);
        let events = excerpts(&tx, &g.support)?;
        let (target, reason) = match &outcome {
            Outcome::Promote => {
                let taken: Vec<String> = memory.facts().map(|(_, f)| f.id.clone()).collect();
                let id = unique_id(text_id("f", &g.text), &taken);
                let (first, last) = span(&events, today);
                memory.block_mut(g.block).push(Fact {
                    id: id.clone(),
                    text: g.text.clone(),
                    category: g.category.clone(),
                    origin: Origin::Auto,
                    support: g.support.clone(),
                    first_seen: first,
                    last_seen: last,
                    valid_from: None,
                    valid_to: None,
                    extra: BTreeMap::new(),
                });
                if let Some(ci) = matched {
                    let mut card = pending_cards.remove(ci);
                    card_writes.insert(card.path(), None);
                    card.decision = Some(Decision {
                        verdict: "auto-promoted".into(),
                        at: now,
                        reason: "new evidence made it qualify for auto-promotion".into(),
                        fact_id: Some(id.clone()),
                    });
                    card.supporting_event_ids = g.support.clone();
                    card_writes.insert(card.path(), Some(card.render()));
                }
                consolidate_lines.push(format!(
                    "promoted   {id}  [{}/{}] {}  (support {}, days {}, confidence {:.3})",
                    g.block.as_str(),
                    g.category,
                    g.text,
                    g.measures.support,
                    g.measures.days,
                    g.confidence
                ));
                (Some(id), String::new())
            }
            Outcome::Queue { reason, supersedes } => {
                let card = build_card(
                    &g,
                    matched.map(|ci| &pending_cards[ci]),
                    reason,
                    supersedes,
                    &memory,
                    &judge_text,
                    all_gates.clone(),
                    events,
                    &cycle_id,
                    now,
                );
                card_writes.insert(card.path(), Some(card.render()));
                consolidate_lines.push(format!(
                    "queued     {}  [{}/{}] {}  -- {}",
                    card.id,
                    g.block.as_str(),
                    g.category,
                    g.text,
                    reason
                ));
                let id = card.id.clone();
                match matched {
                    Some(ci) => pending_cards[ci] = card,
                    None => pending_cards.push(card),
                }
                (Some(id), reason.clone())
            }
            Outcome::Reinforce { fact_id } => {
                let fact = memory.get_mut(fact_id).expect("nearest facts are active");
                let before = fact.support.len();
                for id in &g.support {
                    if !fact.support.contains(id) {
                        fact.support.push(id.clone());
                    }
                }
                let (_, last) = span(&events, today);
                let added = fact.support.len() - before;
                if last > fact.last_seen {
                    fact.last_seen = last;
                }
                if added > 0 {
                    consolidate_lines.push(format!(
                        "reinforced {fact_id}  +{added} supporting events, last seen {}",
                        fact.last_seen
                    ));
                }
                (
                    Some(fact_id.clone()),
                    format!("restates {fact_id} (+{added} supporting events)"),
                )
            }
            Outcome::Refuse { reason } => {
                consolidate_lines.push(format!(
                    "refused    {cand_id}  {:?}  -- {reason}",
                    memory::excerpt(&g.text, 120)
                ));
                (None, reason.clone())
            }
        };
        let label = outcome.label();
        report.candidates.add(label);
        report.decisions.push(DecisionRow {
            candidate: cand_id.clone(),
            route: label.into(),
            target: target.clone(),
            text: g.text.clone(),
            block: g.block.as_str().into(),
            category: g.category.clone(),
            reason: reason.clone(),
        });
        candidate_records.push((
            cand_id,
            label,
            g.text.clone(),
            serde_json::json!({
                "text": g.text,
                "route": label,
                "target": target,
                "reason": reason,
                "block": g.block.as_str(),
                "category": g.category,
                "confidence": g.confidence,
                "proposerReason": g.reason,
                "supportingEventIds": g.support,
                "measures": g.measures,
                "gates": all_gates,
                "judge": judge_text,
            }),
        ));
    }
    timer.lap(&mut report, "route");

    let mut change = block_changes(&memory_before_consolidate, &memory);
    for (path, contents) in card_writes {
        match contents {
            Some(text) => change.write(path, text),
            None => change.delete(path),
        }
    }
    if !change.is_empty() {
        let c = &report.candidates;
        change.message = commit_message(
            &format!(
                "dream: {} cycle {}: {} promoted, {} queued, {} reinforced, {} refused",
                opts.kind.as_str(),
                today,
                c.promoted,
                c.queued,
                c.reinforced,
                c.refused
            ),
            &consolidate_lines,
            &cycle_id,
            "consolidate",
            budget.spend().spent,
        );
        stages.push(Stage {
            name: "consolidate",
            change,
        });
    }
    report.tokens = Tokens::from_spend(config.budget.tokens_per_cycle, budget.spend());
    if !report.degraded.is_empty() {
        for s in &mut stages {
            s.change.message = with_degraded(&s.change.message, &report.degraded);
        }
    }

    // Commit each stage, then (and only then) the state.
    if !opts.dry_run {
        for s in &stages {
            if let Some(oid) = store.apply(&s.change)? {
                report.commits.push(CommitRow {
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
    } else {
        for s in &stages {
            report.notes.push(format!(
                "would commit ({}): {}",
                s.name,
                s.change.message.lines().next().unwrap_or_default()
            ));
            for (path, contents) in &s.change.writes {
                report.notes.push(format!(
                    "  would {} {path}",
                    if contents.is_some() {
                        "write"
                    } else {
                        "remove"
                    }
                ));
            }
        }
    }
    timer.lap(&mut report, "commit");

    for w in &report.ingest.watermarks {
        state::put_watermark(&tx, w, now)?;
    }
    state::mark_reflected(&tx, &reflected_ids, &cycle_id)?;
    for (id, route, text, record) in &candidate_records {
        state::put_candidate(&tx, id, &cycle_id, route, text, record)?;
    }
    report
        .timings_ms
        .insert("total".into(), wall.elapsed().as_millis() as u64);
    state::put_cycle(
        &tx,
        &state::CycleRecord {
            id: cycle_id.clone(),
            kind: opts.kind.as_str().into(),
            started,
            finished: Utc::now(),
            now,
            report: serde_json::to_value(&report).unwrap_or_default(),
        },
    )?;
    if opts.dry_run {
        tx.rollback()
            .context(|| "discarding the dry run's scratch state".into())?;
    } else {
        tx.commit()
            .context(|| "committing the state transaction".into())?;
    }
    Ok(report)
}

/// Stop the process at a named point, for crash tests (debug builds only).
fn failpoint(name: &str) {
    if cfg!(debug_assertions) && std::env::var("DREAM_FAILPOINT").is_ok_and(|v| v == name) {
        eprintln!("dream: failpoint {name} reached; aborting");
        std::process::abort();
    }
}

struct Timer(Instant);

impl Timer {
    fn new() -> Timer {
        Timer(Instant::now())
    }

    fn lap(&mut self, report: &mut Report, stage: &str) {
        let ms = self.0.elapsed().as_millis() as u64;
        *report.timings_ms.entry(stage.into()).or_default() += ms;
        self.0 = Instant::now();
    }
}

/// Vectors for every window event, embedding (and caching) only those not cached yet.
fn embed_window(
    conn: &rusqlite::Connection,
    embedder: &dyn Embedder,
    window: &[Stored],
    batch: usize,
    report: &mut Report,
) -> Result<Vec<Vec<f32>>> {
    let model = embedder.id();
    let ids: Vec<&str> = window.iter().map(|s| s.event.id.as_str()).collect();
    let mut cached = state::embeddings(conn, &model, &ids)?;
    let missing: Vec<&Stored> = window
        .iter()
        .filter(|s| !cached.contains_key(&s.event.id))
        .collect();
    for chunk in missing.chunks(batch.max(1)) {
        let texts: Vec<&str> = chunk.iter().map(|s| s.event.text.as_str()).collect();
        let vectors = embedder.embed(&texts)?;
        for (s, v) in chunk.iter().zip(vectors) {
            state::put_embedding(conn, &model, &s.event.id, &v)?;
            cached.insert(s.event.id.clone(), v);
            report.embedded += 1;
        }
    }
    Ok(window
        .iter()
        .map(|s| cached.remove(&s.event.id).unwrap_or_default())
        .collect())
}

fn view(s: &Stored) -> EventView {
    EventView {
        id: s.event.id.clone(),
        ts: s.event.ts,
        session: s.event.session_key(),
        kind: s.event.kind.clone(),
        trust: s.event.trust,
        recalled: s.event.recalled,
        new: !s.reflected,
        text: s.event.text.clone(),
    }
}

/// The request for one cluster: new events first (up to the prompt cap), then the most
/// recent earlier ones, shown oldest first. Returns the ids of every cluster member too.
fn reflect_request(
    n: usize,
    members: &[usize],
    window: &[Stored],
    cap: usize,
) -> (ReflectRequest, Vec<String>) {
    let mut order: Vec<usize> = members.to_vec();
    order.sort_by_key(|&i| (window[i].reflected, std::cmp::Reverse(window[i].event.ts)));
    order.truncate(cap);
    order.sort_by_key(|&i| (window[i].event.ts, window[i].event.id.clone()));
    let events = order.iter().map(|&i| view(&window[i])).collect();
    let ids = members
        .iter()
        .map(|&i| window[i].event.id.clone())
        .collect();
    (ReflectRequest { cluster: n, events }, ids)
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

/// Ask the judge about every candidate that passed the gates, in batches. A batch that
/// fails, or does not fit in the budget, degrades to the conservative default (no
/// contradiction, novel) and the degradation is reported.
fn judge(
    llm: &dyn Llm,
    budget: &Budget,
    gated: &[Gated],
    memory: &Memory,
    config: &Config,
    report: &mut Report,
) -> HashMap<String, Verdict> {
    let mut items = Vec::new();
    let mut seen = HashSet::new();
    for g in gated.iter().filter(|g| g.refused.is_none()) {
        let id = text_id("k", &g.text);
        if !seen.insert(id.clone()) {
            continue;
        }
        let neighbours: Vec<FactView> = route::nearest(memory, &g.text, JUDGE_NEIGHBOURS)
            .into_iter()
            .filter_map(|n| memory.get(&n.fact_id))
            .map(|(b, f)| FactView {
                id: f.id.clone(),
                block: b.as_str().into(),
                category: f.category.clone(),
                text: f.text.clone(),
            })
            .collect();
        if neighbours.is_empty() {
            continue;
        }
        items.push(JudgeItem {
            candidate_id: id,
            text: g.text.clone(),
            neighbours,
        });
    }
    let batches: Vec<JudgeRequest> = items
        .chunks(JUDGE_BATCH)
        .map(|c| JudgeRequest { items: c.to_vec() })
        .collect();
    let workers = if llm.offline() {
        1
    } else {
        config.llm.concurrency
    };
    let results = parallel_map(&batches, workers, |req| {
        let estimate = llm.estimate_judge(req);
        let Some(reservation) = budget.reserve(estimate) else {
            return Err("the token budget was reached before this judge batch".to_string());
        };
        match llm.judge(req) {
            Ok(reply) => {
                let used = if reply.usage.reported {
                    reply.usage.total()
                } else {
                    estimate
                };
                budget.settle(reservation, used);
                Ok(reply.value)
            }
            Err(e) => {
                budget.settle(reservation, estimate);
                Err(e.to_string())
            }
        }
    });
    let mut out = HashMap::new();
    for (req, result) in batches.iter().zip(results) {
        match result {
            Ok(reply) => {
                let asked: HashSet<&str> =
                    req.items.iter().map(|i| i.candidate_id.as_str()).collect();
                for v in reply.verdicts {
                    if asked.contains(v.candidate_id.as_str()) {
                        out.insert(v.candidate_id.clone(), v);
                    }
                }
            }
            Err(reason) => {
                report.degraded.push(Degraded {
                    stage: "judge".into(),
                    reason: format!(
                        "{reason}; {} candidates judged by the conservative default (no contradiction, novel)",
                        req.items.len()
                    ),
                });
                for item in &req.items {
                    out.insert(
                        item.candidate_id.clone(),
                        Verdict {
                            candidate_id: item.candidate_id.clone(),
                            contradicts: None,
                            duplicate_of: None,
                            reason: format!("conservative default (judge failed: {reason})"),
                        },
                    );
                }
            }
        }
    }
    out
}

/// The pending card a candidate restates, if any.
fn matching_card(cards: &[Card], text: &str, config: &Config) -> Option<usize> {
    cards
        .iter()
        .enumerate()
        .map(|(i, c)| {
            (
                i,
                crate::measures::similarity(text, &c.text),
                crate::measures::polarity_agrees(text, &c.text),
            )
        })
        .filter(|(_, sim, same)| *same && *sim >= config.promote.reinforce_similarity)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _, _)| i)
}

/// A candidate that restates a pending card: the card's text with the union of both
/// supports, gated again as one proposal.
fn merge_into_card(
    conn: &rusqlite::Connection,
    card: &Card,
    g: &Gated,
    config: &Config,
) -> Result<Gated> {
    let mut ids = card.supporting_event_ids.clone();
    for id in &g.support {
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    let fresh: HashSet<&String> = g
        .support
        .iter()
        .filter(|id| !card.supporting_event_ids.contains(id))
        .collect();
    let events: Vec<EventView> = state::events_by_ids(conn, &ids)?
        .iter()
        .map(|s| {
            let mut v = view(s);
            v.new = fresh.contains(&v.id);
            v
        })
        .collect();
    let proposal = Proposal {
        text: card.text.clone(),
        category: card.category.clone(),
        block: card.block.as_str().into(),
        supporting_event_ids: ids,
        confidence: card.confidence.max(g.confidence),
        reason: g.reason.clone(),
    };
    let none = HashSet::new();
    let merged = gates::gate_proposal(&proposal, &Evidence::new(&events, &none), config);
    // A restatement that adds no new event leaves the card as it is.
    if merged.refused.is_some() {
        return Ok(g.clone());
    }
    Ok(merged)
}

fn excerpts(conn: &rusqlite::Connection, ids: &[String]) -> Result<Vec<Excerpt>> {
    Ok(state::events_by_ids(conn, ids)?
        .into_iter()
        .map(|s| Excerpt {
            id: s.event.id.clone(),
            ts: s.event.ts,
            session: s.event.session.clone().unwrap_or_default(),
            trust: s.event.trust.as_str().into(),
            text: memory::excerpt(&s.event.text, 300),
        })
        .collect())
}

fn span(events: &[Excerpt], today: NaiveDate) -> (NaiveDate, NaiveDate) {
    let first = events
        .iter()
        .map(|e| e.ts.date_naive())
        .min()
        .unwrap_or(today);
    let last = events
        .iter()
        .map(|e| e.ts.date_naive())
        .max()
        .unwrap_or(today);
    (first, last)
}

#[allow(clippy::too_many_arguments)]
fn build_card(
    g: &Gated,
    existing: Option<&Card>,
    reason: &str,
    supersedes: &Option<String>,
    memory: &Memory,
    judge: &str,
    gates: Vec<memory::GateResult>,
    excerpts: Vec<Excerpt>,
    cycle: &str,
    now: DateTime<Utc>,
) -> Card {
    let id = existing
        .map(|c| c.id.clone())
        .unwrap_or_else(|| text_id("c", &g.text));
    Card {
        id,
        created: existing.map_or(now, |c| c.created),
        updated: now,
        cycle: cycle.into(),
        text: g.text.clone(),
        block: g.block,
        category: g.category.clone(),
        confidence: g.confidence,
        reason: reason.into(),
        proposer_reason: g.reason.clone(),
        judge: judge.into(),
        supersedes: supersedes.clone(),
        supersedes_text: supersedes
            .as_ref()
            .and_then(|id| memory.get(id))
            .map(|(_, f)| f.text.clone()),
        supporting_event_ids: g.support.clone(),
        measures: g.measures.clone(),
        gates,
        excerpts,
        decision: None,
    }
}

/// The block files whose rendering differs between two memories.
fn block_changes(before: &Memory, after: &Memory) -> Change {
    let mut change = Change::default();
    for b in Block::ALL {
        let old = before.block(b).render();
        let new = after.block(b).render();
        if old != new {
            change.write(b.path(), new);
        }
    }
    change
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

fn with_degraded(message: &str, degraded: &[Degraded]) -> String {
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
    commit_message(
        "dream: record hand edits",
        &paths
            .iter()
            .map(|p| format!("edited     {p}"))
            .collect::<Vec<_>>(),
        cycle,
        "manual",
        0,
    )
}
