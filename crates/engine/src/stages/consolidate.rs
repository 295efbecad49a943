//! The consolidation stage (SPEC S4 steps 4 to 8): cluster the window, reflect on every
//! cluster that holds a new event and on each session's new single mentions (the events
//! no cluster holds that may say something: one call per session), gate each proposal,
//! judge what passed, route it, and apply the routes to the in-memory facts, episodes and
//! cards; a restated episode whose support now meets the durable rule moves to its block,
//! and episodes past `episodes.retention_days` or over `episodes.max_facts` expire to the
//! archive. The result is one [`Stage`] (the files to commit) plus candidate records in
//! the state transaction; nothing is written to the repository here.
//!
//! What each candidate does to memory is the core's policy (`dream_core::consolidation`:
//! decide, cap, apply; expiry): this stage reads the state for it (its [`Events`]), calls
//! the model, and stores and commits what the policy returns.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, NaiveDate, Utc};
use rusqlite::Connection;

use crate::edges::state;
use crate::edges::store::Change;
use crate::error::{Error, Result};
use crate::stages::{load_archive, parallel_map, queue, reflect_plan, Ctx, Work};
use dream_core::consolidation::{
    self, decide, expiry, session_cap, CardWrite, Cycle, NotActive, Policy, Routing,
};
use dream_core::llm::budget::CallError;
use dream_core::llm::plan::{self, Failure};
use dream_core::llm::Llm;
use dream_core::memory::episodes;
use dream_core::operations::commit::Message;
use dream_core::operations::report::Degraded;
use dream_core::schema::contract::{
    EventView, FactView, JudgeItem, JudgeRequest, LlmErrorKind, Proposal, ReflectReply, Reply,
    Verdict,
};
use dream_core::schema::settings::Config;
use dream_core::schema::{self, text_id, Card, Memory, Stage};
use dream_core::selection::cluster;
use dream_core::selection::gates::{self, Evidence, Gated};
use dream_core::selection::keep::{self, Scorer};
use dream_core::selection::route;
use dream_core::sources::event::Stored;

/// Judge items per call.
const JUDGE_BATCH: usize = 8;

/// Split `proposals` into parts, each ending once its proposals showed `limit` distinct
/// events (`cluster.route_part_events`), in the order reflect returned them (oldest new
/// event first). `evidence` names what a proposal was shown (the proposals of one prompt
/// share it: an identity and its number of events), which is counted once a part.
///
/// Why parts: a first run's backfill window can hold 40,000 new events. Gating, judging
/// and routing all their proposals at once held every shown event's words and stored
/// record, and every candidate's gate rows and route texts, together: about 130 MiB on
/// top of the window itself, and most of the backfill's peak memory. In parts, each
/// part's working set is let go before the next, so a cycle's memory is bounded whatever
/// its window. What a part changes: the judge of a later part sees the facts the earlier
/// parts added (it is asked about them, as a later cycle's judge would be), and a
/// session's single mentions split between two parts are ranked for the session's cap
/// within each part. A window that shows fewer events (most cycles' own) is one part,
/// routed as before parts existed.
///
/// Why 4,096 by default (docs/BENCHMARKS.md, "A heavy user's year"): smaller parts leave
/// less freed memory scattered in the allocator's heap, whose high-water mark the next
/// windows' clustering stacks on (a year's backfill peaked at 318 MiB with parts of
/// 16,384 events, 274 with 4,096 and 267 with 2,048), but each part's judge and routing
/// compare its candidates with the facts the earlier parts added: the heavy benchmark's
/// 10,000 new events are three parts, its judge and routing about 15% slower than in one
/// and the cycle about 5% (in five parts of 2,048: 60% and 25%).
fn parts<T>(proposals: &[T], limit: usize, evidence: impl Fn(&T) -> (usize, usize)) -> Vec<&[T]> {
    let mut out = Vec::new();
    let (mut start, mut shown) = (0, 0);
    let mut seen: HashSet<usize> = HashSet::new();
    for (i, p) in proposals.iter().enumerate() {
        let (id, events) = evidence(p);
        if seen.insert(id) {
            shown += events.max(1);
        }
        if shown >= limit.max(1) {
            out.push(&proposals[start..=i]);
            (start, shown) = (i + 1, 0);
            seen.clear();
        }
    }
    if start < proposals.len() {
        out.push(&proposals[start..]);
    }
    out
}

/// Run the stage: reflect, then gate, judge, route and apply each part of the proposals
/// ([`parts`]), then expire episodes and settle the review queue.
pub fn consolidate_window(ctx: &Ctx<'_>, tx: &Connection, work: &mut Work) -> Result<()> {
    let proposals = reflect(ctx, tx, work)?;
    work.lap("reflect");

    // Salience (issue 28): every statement is scored by the compiled-in model; a build
    // whose model does not load scores nothing, and routing then keeps what it kept before
    // salience existed, saying so.
    let scorer = crate::providers::salience::scorer();
    if let Err(e) = scorer.embedding("") {
        work.report.degraded.push(Degraded {
            stage: "salience".into(),
            reason: format!("{e}; candidates were routed without their salience"),
        });
    }
    let vetoes = state::vetoes(tx)?;
    let loaded = queue::load(tx, work)?;
    let before = work.memory.clone();
    let mut card_writes: BTreeMap<String, CardWrite> = BTreeMap::new();
    let mut lines = Vec::new();
    let policy = Policy {
        config: ctx.config,
        today: ctx.today,
        now: ctx.opts.now,
        cycle_id: &ctx.cycle_id,
        scorer,
        local_day,
    };
    let mut per_session = session_cap::episodes_per_session(
        &policy,
        &mut Events::new(tx, &gates::Sources::default()),
        &work.memory,
    )?;
    let mut own: HashSet<String> = HashSet::new();
    let mut verdicts: HashMap<String, Verdict> = HashMap::new();
    let mut defaulted = (0, None);
    let limit = ctx.config.cluster.route_part_events;
    let evidence = |(_, sent): &Proposed| (Rc::as_ptr(sent).cast::<()>() as usize, sent.len());
    for part in parts(&proposals, limit, evidence) {
        // Each event's words are prepared once per part, and let go with it.
        let sources = gates::Sources::default();
        let gated = gate_part(ctx, tx, work, part, scorer, &sources, &mut own)?;
        for g in gated.iter().filter(|g| !g.notes.is_empty()) {
            defaulted.0 += 1;
            if defaulted.1.is_none() {
                defaulted.1 = Some(format!(
                    "{:?}: {}",
                    schema::excerpt(&g.text, 60),
                    g.notes.join("; ")
                ));
            }
        }
        let mut texts = route::Texts::default();
        let vectors = meaning_vectors(ctx, &gated, &work.memory, &mut work.report.notes);
        let restating = route::Restating {
            reinforce_similarity: ctx.config.promote.reinforce_similarity,
            vectors: ctx.embedder.restates().zip(vectors.as_ref()),
        };
        let report = &mut work.report;
        judge(
            ctx,
            &gated,
            &work.memory,
            &restating,
            &mut verdicts,
            &mut report.degraded,
            &mut report.notes,
            &mut texts,
        );
        work.lap("judge");

        let mut events = Events::new(tx, &sources);
        let mut routing = Routing {
            vetoes: &vetoes,
            restating: &restating,
            texts: &mut texts,
            per_session: &mut per_session,
        };
        for g in &gated {
            let verdict = verdicts.get(&text_id("k", &g.text));
            let mut cycle = Cycle {
                memory: &mut work.memory,
                cards: &mut work.cards,
                card_writes: &mut card_writes,
                lines: &mut lines,
                report: &mut work.report,
                reinforced: &mut work.reinforced,
            };
            let record = consolidation::consolidate(
                &policy,
                &mut events,
                &mut cycle,
                &mut routing,
                g,
                verdict,
            )?;
            state::put_candidate(
                tx,
                &record.id,
                &ctx.cycle_id,
                record.route,
                &record.text,
                &record.json,
            )?;
        }
        work.lap("route");
    }
    if let (n, Some(first)) = defaulted {
        work.report.notes.push(format!(
            "{n} proposals left out an optional field or gave an unknown one, and took its documented default (for example {first})"
        ));
    }
    let expired = expire(ctx, work, &mut lines)?;
    queue::settle(ctx, tx, work, &loaded, &mut card_writes, &mut lines)?;
    work.lap("route");

    crate::stages::scope::assign(tx, &before, &mut work.memory)?;
    let mut change = Change::blocks(&before, &work.memory);
    if let Some(text) = expired {
        change.write(schema::ARCHIVE, text);
    }
    let pending: HashMap<String, &Card> = work.cards.iter().map(|c| (c.path(), c)).collect();
    for (path, write) in card_writes {
        match write {
            CardWrite::Text(text) => change.write(path, text),
            CardWrite::Pending => match pending.get(&path) {
                Some(card) => change.write(path, card.render()),
                None => {
                    return Err(Error::Other(format!(
                        "{path} was to be written as a pending card, which is no longer pending"
                    )))
                }
            },
            CardWrite::Delete => change.delete(path),
        }
    }
    if !change.is_empty() {
        let c = &work.report.candidates;
        let subject = format!(
            "dream: {} cycle {}: {} promoted, {} episodes, {} queued, {} reinforced, {} refused",
            ctx.opts.kind.as_str(),
            ctx.today,
            c.promoted,
            c.episodes,
            c.queued,
            c.reinforced,
            c.refused
        );
        let tokens = ctx.budget.spend().spent;
        let message = Message::new(subject, lines, &ctx.cycle_id, Stage::Consolidate)
            .tokens(tokens)
            .trailer(
                "Salience",
                format!("model={} keep={}", keep::model_id(), keep::KEEP),
            );
        work.push_commit(change, message);
    }
    Ok(())
}

/// Gate one part of the proposals: each against the events sent for it (and, when a
/// model's wording is not the events' own, the cited turn's own words too, once per
/// window: `own`), then the single mentions after the rest, the most salient first, so a
/// session keeps its best `episodes.max_per_session` (the sort is stable, so the rest keep
/// their order).
fn gate_part(
    ctx: &Ctx<'_>,
    tx: &Connection,
    work: &mut Work,
    proposals: &[Proposed],
    scorer: &dyn Scorer,
    sources: &gates::Sources,
    own: &mut HashSet<String>,
) -> Result<Vec<Gated>> {
    let mut gated: Vec<Gated> = Vec::with_capacity(proposals.len());
    for (p, sent) in proposals {
        let sent_ids: HashSet<&str> = sent.iter().map(|e| e.id.as_str()).collect();
        let mut elsewhere = HashSet::new();
        for id in &p.supporting_event_ids {
            if !sent_ids.contains(id.as_str()) && state::event_hash(tx, id)?.is_some() {
                elsewhere.insert(id.clone());
            }
        }
        let evidence = Evidence::new(sent, &elsewhere)
            .owned_by(&ctx.config.owner.names)
            .with_sources(sources)
            .scored_by(scorer);
        let g = gates::gate_proposal(p, &evidence, ctx.config);
        // A model's wording the events do not fully hold goes to a person (or is refused
        // below min_coverage); meanwhile the cited turn's own words are proposed too (kept
        // as an episode when specific).
        let paraphrase = match &g.refused {
            None => g.measures.coverage < 1.0,
            Some(r) => r.starts_with("coverage "),
        };
        let cited: Vec<&EventView> = g
            .support
            .iter()
            .filter_map(|id| evidence.sent.get(id.as_str()).copied())
            .collect();
        gated.push(g);
        if paraphrase && !ctx.llm.offline() && ctx.config.episodes.enabled {
            let last = gated.last().expect("just pushed");
            if let Some(words) = dream_core::llm::offline::own_words(
                &last.text,
                &last.category,
                last.block.as_str(),
                &cited,
            ) {
                if own.insert(words.text.clone()) {
                    work.report.own_words += 1;
                    gated.push(gates::gate_proposal(&words, &evidence, ctx.config));
                }
            }
        }
    }
    let single = |g: &Gated| g.refused.is_none() && g.measures.support <= 1;
    gated.sort_by(|a, b| {
        single(a).cmp(&single(b)).then_with(|| {
            if single(a) && single(b) {
                let s = |g: &Gated| g.salience.map_or(f32::NEG_INFINITY, |w| w.score);
                s(b).total_cmp(&s(a))
            } else {
                std::cmp::Ordering::Equal
            }
        })
    });
    Ok(gated)
}

/// Expire the episodes `expiry::expiring` names: each moves to the archive (`why=expired`)
/// with the policy verified. Returns the archive's new text when one did.
fn expire(ctx: &Ctx<'_>, work: &mut Work, lines: &mut Vec<String>) -> Result<Option<String>> {
    let due = expiry::expiring(&work.memory, ctx.today, &ctx.config.episodes);
    if due.is_empty() {
        return Ok(None);
    }
    let mut archive = load_archive(ctx, work)?;
    let expired = expiry::expire(&mut work.memory, &mut archive, ctx.today, due);
    work.report.episodes_expired += expired.len();
    lines.extend(expired);
    let text = archive.text.clone();
    work.archive = Some(archive);
    Ok(Some(text))
}

/// Vectors of the candidates and the active facts, by text, when the embedder has a
/// measured restatement distance (a candidate then reinforces a fact it restates in other
/// words: `route::restates`). Facts promoted in this cycle are candidates, so they have
/// one too. An embedder that fails here costs only that: S6 similarity alone decides, and
/// a note says so.
fn meaning_vectors(
    ctx: &Ctx<'_>,
    gated: &[Gated],
    memory: &Memory,
    notes: &mut Vec<String>,
) -> Option<HashMap<String, Vec<f32>>> {
    ctx.embedder.restates()?;
    let mut wanted: Vec<&str> = memory
        .facts()
        .map(|(_, f)| schema::episode_body(&f.text))
        .collect();
    wanted.extend(
        gated
            .iter()
            .filter(|g| g.refused.is_none())
            .map(|g| g.text.as_str()),
    );
    wanted.sort_unstable();
    wanted.dedup();
    if wanted.is_empty() {
        return None;
    }
    let mut out = HashMap::with_capacity(wanted.len());
    for chunk in wanted.chunks(ctx.config.embed.batch_size.max(1)) {
        match ctx.embedder.embed(chunk) {
            Ok(vectors) if vectors.len() == chunk.len() => {
                out.extend(chunk.iter().map(|t| t.to_string()).zip(vectors));
            }
            Ok(_) | Err(_) => {
                notes.push(
                    "the embedder could not embed the candidates and facts: restatements were found by S6 similarity alone".into(),
                );
                return None;
            }
        }
    }
    Some(out)
}

/// Cluster the window and reflect on every cluster with a new event, `llm.concurrency`
/// calls at a time under the budget, one call per prompt of at most
/// `cluster.max_events_per_prompt` events (`llm::plan`). A new event is marked as seen only
/// when a call that showed it succeeded; one whose call was not started (budget, a server
/// found unavailable, a call held for failing the same way) or failed stays new, so a later
/// cycle sends it. Events no cluster holds (and events with no content word) are marked as
/// looked at, since only a new event can ever give them a cluster. Returns each proposal
/// with the events that were sent for it.
fn reflect(
    ctx: &Ctx<'_>,
    tx: &Connection,
    work: &mut Work,
) -> Result<Vec<(Proposal, Rc<[EventView]>)>> {
    let mut looked_at: Vec<i64> = Vec::new();
    let (noise, selected) = cluster_window(ctx, work, &mut looked_at);
    let (calls, mut proposals) = plan_calls(ctx, tx, work, &noise, &selected, &mut looked_at)?;
    let Held {
        previous,
        mut failures,
        held,
        todo,
    } = hold_repeated(tx, calls)?;
    let results = send_calls(ctx, &todo);
    let Pending {
        budget_pending,
        failed,
        skipped,
    } = take_replies(
        work,
        todo,
        results,
        &previous,
        &mut failures,
        &mut proposals,
        &mut looked_at,
    )?;
    report_unsent(ctx, work, failed, skipped, held, budget_pending);
    work.report.window.failures = Some(failures);
    work.report.window.new_events += looked_at.len();
    state::mark_reflected_seq(tx, &looked_at, &ctx.cycle_id)?;
    Ok(proposals)
}

/// The clustering step: the window's rows without a usable vector dropped (a new one is
/// looked at), the rest clustered; returns the noise rows not yet reflected on and the
/// clusters holding a new event, largest first.
fn cluster_window(
    ctx: &Ctx<'_>,
    work: &mut Work,
    looked_at: &mut Vec<i64>,
) -> (Vec<usize>, Vec<Vec<usize>>) {
    let config = ctx.config;
    let w = &mut work.window;
    let dim = w.dim;
    let usable: Vec<bool> = (0..w.len())
        .map(|i| dim > 0 && w.vector(i).iter().any(|x| *x != 0.0))
        .collect();
    for (i, ok) in usable.iter().enumerate() {
        if !ok && !w.reflected[i] {
            looked_at.push(w.seq[i]);
        }
    }
    w.retain(|i| usable[i]);
    let w = &work.window;
    let view2 = ndarray::ArrayView2::from_shape((w.len(), w.dim), &w.vectors)
        .expect("the window holds dim values per row");
    let fresh: Vec<bool> = w.reflected.iter().map(|r| !r).collect();
    let clustering = cluster::dbscan(
        view2,
        config.cluster.min_points,
        crate::providers::embed::eps(config, ctx.embedder),
        Some(&fresh),
    );
    work.report.window.clusters = clustering.clusters.len();
    let noise: Vec<usize> = clustering
        .noise
        .iter()
        .copied()
        .filter(|&i| !w.reflected[i])
        .collect();
    let mut selected: Vec<Vec<usize>> = clustering
        .clusters
        .into_iter()
        .filter(|c| c.iter().any(|&i| !w.reflected[i]))
        .collect();
    selected.sort_by(|a, b| {
        b.len()
            .cmp(&a.len())
            .then_with(|| w.ids[a[0]].cmp(&w.ids[b[0]]))
    });
    work.report.window.with_new = selected.len();
    work.lap("cluster");
    (noise, selected)
}

/// A proposal with the events that were sent for it.
type Proposed = (Proposal, Rc<[EventView]>);

/// The planning step: the single mentions grouped, and the prompts planned for them and
/// the clusters; returns the calls, oldest new event first, and the proposals the engine
/// made without a model (restatements word for word).
fn plan_calls(
    ctx: &Ctx<'_>,
    tx: &Connection,
    work: &mut Work,
    noise: &[usize],
    selected: &[Vec<usize>],
    looked_at: &mut Vec<i64>,
) -> Result<(Vec<reflect_plan::Call>, Vec<Proposed>)> {
    let config = ctx.config;
    let llm = ctx.llm;
    // The single mentions: new events no cluster holds. Those that cannot say anything
    // (not the owner's, or nothing but chatter) are looked at now; the rest are shown per
    // session (several groups for a session with more than `cluster.max_events_per_prompt`),
    // under the same budget and seen rules: the offline reflector a call per group, a model
    // in the prompts the clusters share.
    // With a model, only what could become a line is paid for (`keep::worth_sending`).
    let scorer: Option<&dyn Scorer> =
        (!llm.offline()).then_some(crate::providers::salience::scorer() as &dyn Scorer);
    let (singles, passed_over, singles_below) = if config.episodes.enabled {
        single_groups(tx, noise, &work.window, config, scorer)?
    } else {
        (
            Vec::new(),
            noise.iter().map(|&i| work.window.seq[i]).collect(),
            Vec::new(),
        )
    };
    looked_at.extend(passed_over);
    work.report.window.singles = singles.iter().map(Vec::len).sum();
    let input = reflect_plan::Input {
        selected,
        singles: &singles,
        window: &work.window,
        memory: &work.memory,
        cards: &work.cards,
    };
    let planned = reflect_plan::plan(tx, &input, config, llm)?;
    let mut calls = planned.calls;
    let proposals: Vec<(Proposal, Rc<[EventView]>)> = planned
        .restated
        .into_iter()
        .map(|(p, sent)| (p, sent.into()))
        .collect();
    if !planned.restated_seen.is_empty() {
        work.report.window.seen += planned.restated_seen.len();
        work.report.notes.push(format!(
            "{} new events said a fact again word for word: the engine proposed the fact with them ({} proposals) and no model read them",
            planned.restated_seen.len(),
            proposals.len()
        ));
        looked_at.extend(planned.restated_seen);
    }
    let mut below_send = planned.below_send;
    below_send.extend(singles_below);
    if !below_send.is_empty() {
        work.report.window.below_send = below_send.len();
        work.report.notes.push(format!(
            "{} new events were not sent to the model: none of their sentences scores salience::SEND ({})",
            below_send.len(),
            keep::SEND
        ));
        looked_at.extend(below_send);
    }
    work.report.window.single_calls = calls
        .iter()
        .filter(|c| c.prompt.parts.iter().all(|p| p.singles))
        .count();
    // Oldest new event first, across clusters and sessions: when the budget admits only
    // some prompts, the events that have waited longest go out, so none starves behind
    // busy clusters.
    calls.sort_by_key(|c| c.oldest);
    work.report.window.prompts = calls.len();
    for call in &calls {
        if tracing::enabled!(tracing::Level::DEBUG) {
            let texts: Vec<String> = call
                .prompt
                .parts
                .iter()
                .flat_map(|p| &p.events)
                .map(|e| schema::excerpt(&e.text, 60))
                .collect();
            tracing::debug!(
                cluster = %call.label,
                events = call.prompt.shown(),
                new = call.new.len(),
                "cluster: {}",
                texts.join(" | ")
            );
        }
    }

    Ok((calls, proposals))
}

/// The calls of a cycle, less those held for failing the same way in the last cycles.
struct Held {
    /// The failures recorded by the last cycles.
    previous: Vec<Failure>,
    /// The failures of this cycle so far (the held calls).
    failures: Vec<Failure>,
    /// The held clusters, by the way their calls failed.
    held: BTreeMap<String, Vec<String>>,
    /// The calls to send.
    todo: Vec<reflect_plan::Call>,
}

/// The holding step: calls that failed the same way in the last cycles are held, not paid
/// for again.
fn hold_repeated(tx: &Connection, calls: Vec<reflect_plan::Call>) -> Result<Held> {
    let previous = state::last_reflect_failures(tx)?;
    let mut failures: Vec<Failure> = Vec::new();
    let mut held: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut todo: Vec<reflect_plan::Call> = Vec::with_capacity(calls.len());
    for call in calls {
        match plan::held(&previous, &call.key) {
            Some(f) => {
                held.entry(f.way.clone())
                    .or_default()
                    .extend(call.label.split('+').map(str::to_string));
                failures.push(Failure {
                    held: true,
                    ..f.clone()
                });
            }
            None => todo.push(call),
        }
    }

    Ok(Held {
        previous,
        failures,
        held,
        todo,
    })
}

/// The sending step: the calls made, `llm.concurrency` at a time under the budget, with
/// progress shown when a model answers them.
fn send_calls(
    ctx: &Ctx<'_>,
    todo: &[reflect_plan::Call],
) -> Vec<std::result::Result<Reply<ReflectReply>, CallError>> {
    let config = ctx.config;
    let llm = ctx.llm;
    let total = todo.len();
    let done = AtomicUsize::new(0);
    let show = !llm.offline();
    if show {
        ctx.progress.stage("reflect");
        ctx.progress
            .calls("reflect", 0, total, ctx.budget.spend().spent);
    }
    parallel_map(todo, workers(llm, config), |call| {
        let result = ctx.call("reflect", llm.estimate_reflect_prompt(&call.prompt), || {
            llm.reflect_prompt(&call.prompt)
        });
        let n = done.fetch_add(1, Ordering::SeqCst) + 1;
        if show {
            let spent = ctx.budget.spend().spent;
            tracing::info!(
                cluster = %call.label,
                done = n,
                total,
                tokens = spent,
                ok = result.is_ok(),
                "reflect call returned"
            );
            ctx.progress.calls("reflect", n, total, spent);
        }
        result
    })
}

/// What the replies left undone: clusters pending for the budget, failed calls by reason,
/// and calls not started for an unavailable server.
struct Pending {
    budget_pending: usize,
    failed: BTreeMap<String, Vec<String>>,
    skipped: Vec<String>,
}

/// The replies step: each reply's proposals taken with the events sent for them and its
/// new events marked as seen; each failure recorded.
fn take_replies(
    work: &mut Work,
    todo: Vec<reflect_plan::Call>,
    results: Vec<std::result::Result<Reply<ReflectReply>, CallError>>,
    previous: &[Failure],
    failures: &mut Vec<Failure>,
    proposals: &mut Vec<(Proposal, Rc<[EventView]>)>,
    looked_at: &mut Vec<i64>,
) -> Result<Pending> {
    let mut budget_pending = 0;
    let mut failed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut skipped: Vec<String> = Vec::new();
    for (call, result) in todo.into_iter().zip(results) {
        // A prompt may carry several small clusters (`reflect_plan`): counts are of clusters.
        let clusters = call.prompt.parts.len();
        match result {
            Ok(reply) => {
                work.report.window.reflected += clusters;
                work.report.window.shown += call.prompt.shown();
                for note in reply.notes {
                    if !work.report.notes.contains(&note) {
                        work.report.notes.push(note);
                    }
                }
                // Only what a model was shown counts as seen; a cluster's other new events
                // are in its other prompts.
                work.report.window.seen += call.new.len();
                looked_at.extend(call.new);
                // Proposals citing one cluster share its events (one copy per part).
                let mut parts: HashMap<usize, Rc<[EventView]>> = HashMap::new();
                for p in reply.value.candidates {
                    let sent = match call.prompt.evidence_part(&p) {
                        Some(i) => parts
                            .entry(i)
                            .or_insert_with(|| call.prompt.part_evidence(i).into())
                            .clone(),
                        None => Rc::from(Vec::new()),
                    };
                    proposals.push((p, sent));
                }
            }
            Err(CallError::Budget) => budget_pending += clusters,
            // A refused key is configuration: stop before anything is consumed.
            Err(CallError::Failed(e)) if e.kind == LlmErrorKind::Auth => {
                return Err(Error::Auth(e.message))
            }
            Err(CallError::Failed(e)) => {
                work.report.window.pending += clusters;
                let mut reason = e.to_string();
                if let Some(way) = plan::way(e.kind) {
                    let f = plan::record(previous, &call.key, way, &e.message, call.prompt.shown());
                    if f.tries >= plan::MAX_SAME_FAILURES {
                        reason = format!(
                            "{reason} (failed this way {} cycles running, so it is held from now on: {})",
                            f.tries,
                            plan::advice(way)
                        );
                    }
                    failures.push(f);
                }
                failed.entry(reason).or_default().push(call.label);
            }
            Err(CallError::Skipped(_)) => {
                work.report.window.pending += clusters;
                skipped.push(call.label);
            }
        }
    }
    Ok(Pending {
        budget_pending,
        failed,
        skipped,
    })
}

/// The reporting step: failed, skipped and held clusters as degraded stages, and the
/// clusters the budget left pending.
fn report_unsent(
    ctx: &Ctx<'_>,
    work: &mut Work,
    failed: BTreeMap<String, Vec<String>>,
    skipped: Vec<String>,
    held: BTreeMap<String, Vec<String>>,
    budget_pending: usize,
) {
    for (reason, clusters) in failed {
        let (noun, verb) = noun_verb(clusters.len());
        let which = list(&clusters);
        tracing::warn!("reflect failed for {noun} {which}: {reason}");
        work.report.degraded.push(Degraded {
            stage: "reflect".into(),
            reason: format!("{noun} {which} {verb} left pending for the next cycle: {reason}"),
        });
    }
    if !skipped.is_empty() {
        let (noun, verb) = noun_verb(skipped.len());
        work.report.degraded.push(Degraded {
            stage: "reflect".into(),
            reason: format!(
                "{noun} {} {verb} left pending for the next cycle, not tried: an earlier call found the server unavailable, so no further call was started",
                list(&skipped)
            ),
        });
    }
    for (way, clusters) in held {
        let (noun, verb) = noun_verb(clusters.len());
        work.report.window.pending += clusters.len();
        work.report.window.held += clusters.len();
        work.report.degraded.push(Degraded {
            stage: "reflect".into(),
            reason: format!(
                "{noun} {} {verb} held, not sent: {} cycles running the reply was {way}; {}. They are tried again when their events, the model, llm.max_tokens or llm.timeout_secs change",
                list(&clusters),
                plan::MAX_SAME_FAILURES,
                plan::advice(&way)
            ),
        });
    }
    if budget_pending > 0 {
        work.report.window.pending += budget_pending;
        work.report.notes.push(format!(
            "token budget reached: {budget_pending} clusters left pending for the next cycle (budget.tokens_per_cycle = {})",
            ctx.budget.cap()
        ));
        tracing::warn!(
            pending = budget_pending,
            cap = ctx.budget.cap(),
            "token budget reached"
        );
    }
}

/// Single mentions grouped for reflect (row id and event), the row ids passed over, and
/// those a model is not sent (below `salience::SEND`).
type Singles = (Vec<Vec<(i64, EventView)>>, Vec<i64>, Vec<i64>);

/// A cycle's new single mentions (`noise`: window rows no cluster holds, not looked at
/// yet) that pass the cheap pre-filter ([`episodes::worth_reflecting_once`]), grouped by
/// session in time order, at most `cluster.max_events_per_prompt` to a group, each with its
/// row id; and the row ids of those that do not pass, to mark as looked at. With a
/// `scorer` (a model reflects), those none of whose sentences scores `salience::SEND` are
/// set apart too.
fn single_groups(
    tx: &Connection,
    noise: &[usize],
    window: &state::Window,
    config: &Config,
    scorer: Option<&dyn Scorer>,
) -> Result<Singles> {
    let cap = config.cluster.max_events_per_prompt;
    let seqs: Vec<i64> = noise.iter().map(|&i| window.seq[i]).collect();
    let by_id: HashMap<&str, i64> = noise
        .iter()
        .map(|&i| (window.ids[i].as_str(), window.seq[i]))
        .collect();
    let mut sessions: BTreeMap<String, Vec<(i64, EventView)>> = BTreeMap::new();
    let mut passed_over = Vec::new();
    let mut below_send = Vec::new();
    for s in state::events_by_seq(tx, &seqs)? {
        let Some(&seq) = by_id.get(s.event.id.as_str()) else {
            continue;
        };
        let v = EventView::of(&s.event, true);
        if !episodes::worth_reflecting_once(&v) {
            passed_over.push(seq);
        } else if scorer.is_some_and(|s| !keep::worth_sending(&v.text, s)) {
            below_send.push(seq);
        } else {
            sessions
                .entry(v.session.clone())
                .or_default()
                .push((seq, v));
        }
    }
    let mut out = Vec::new();
    for (_, mut events) in sessions {
        events.sort_by(|a, b| a.1.ts.cmp(&b.1.ts).then_with(|| a.1.id.cmp(&b.1.id)));
        out.extend(events.chunks(cap.max(1)).map(<[_]>::to_vec));
    }
    Ok((out, passed_over, below_send))
}

/// "cluster 3 is" or "clusters 3, 4 are".
fn noun_verb(n: usize) -> (&'static str, &'static str) {
    if n == 1 {
        ("cluster", "is")
    } else {
        ("clusters", "are")
    }
}

/// At most ten labels, then how many more.
fn list(labels: &[String]) -> String {
    let mut s = labels
        .iter()
        .take(10)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if labels.len() > 10 {
        s.push_str(&format!(" and {} more", labels.len() - 10));
    }
    s
}

/// Calls in flight at once: `llm.concurrency` for a model; for the offline provider, which
/// computes rather than waits, one per core (its answers keep their order either way).
fn workers(llm: &dyn Llm, config: &Config) -> usize {
    if llm.offline() {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(4)
    } else {
        config.llm.concurrency
    }
}

/// Ask the judge about every candidate that passed the gates and has neighbours and was
/// not judged in an earlier part of the window (`out` holds the verdicts so far), in
/// batches. A batch that fails, or does not fit in the budget, degrades to the
/// conservative default (no contradiction, novel), and the degradation is reported.
#[allow(clippy::too_many_arguments)]
fn judge(
    ctx: &Ctx<'_>,
    gated: &[Gated],
    memory: &Memory,
    restating: &route::Restating<'_>,
    out: &mut HashMap<String, Verdict>,
    degraded: &mut Vec<Degraded>,
    notes: &mut Vec<String>,
    texts: &mut route::Texts,
) {
    let (llm, config) = (ctx.llm, ctx.config);
    let mut items = Vec::new();
    let mut seen = HashSet::new();
    for g in gated.iter().filter(|g| g.refused.is_none()) {
        let id = text_id("k", &g.text);
        if out.contains_key(&id) || !seen.insert(id.clone()) {
            continue;
        }
        let near = route::nearest_cached(memory, &g.text, decide::NEIGHBOURS, restating, texts);
        let shown = plan::judge_neighbours(&near);
        let within = restating.vectors.map(|(w, _)| w);
        let neighbours: Vec<FactView> = near
            .into_iter()
            .take(shown)
            .filter(|n| plan::judge_shows(n, within))
            .filter_map(|n| memory.get(&n.fact_id))
            .map(|(b, f)| FactView {
                id: f.id.clone(),
                block: b.as_str().into(),
                category: f.category.clone(),
                text: f.text.clone(),
            })
            .collect();
        // Only what changed: a candidate that merely says its nearest fact again cannot
        // contradict it, and routing reinforces that fact.
        let restates = neighbours
            .first()
            .is_some_and(|f| plan::plain_restatement(&g.text, &f.text));
        if !neighbours.is_empty() && !restates {
            items.push(JudgeItem {
                candidate_id: id,
                text: g.text.clone(),
                neighbours,
            });
        }
    }
    let batches: Vec<JudgeRequest> = items
        .chunks(JUDGE_BATCH)
        .map(|c| JudgeRequest { items: c.to_vec() })
        .collect();
    if !batches.is_empty() && !llm.offline() {
        ctx.progress.stage("judge");
    }
    let results = parallel_map(&batches, workers(llm, config), |req| {
        ctx.call("judge", llm.estimate_judge(req), || llm.judge(req))
    });
    for (req, result) in batches.iter().zip(results) {
        match result {
            Ok(reply) => {
                for note in reply.notes {
                    if !notes.contains(&note) {
                        notes.push(note);
                    }
                }
                let asked: HashSet<&str> =
                    req.items.iter().map(|i| i.candidate_id.as_str()).collect();
                for v in reply.value.verdicts {
                    if asked.contains(v.candidate_id.as_str()) {
                        out.insert(v.candidate_id.clone(), v);
                    }
                }
            }
            Err(e) => {
                let reason = e.to_string();
                degraded.push(Degraded {
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
}

/// The events routing reads, each read from the state once per stage. A candidate's route
/// reads its support, and an episode or card restated reads the whole support it already
/// has; one episode is often restated many times in a cycle. Events do not change while
/// candidates are routed (reflect marked them before), so a read is never stale.
struct Events<'t> {
    tx: &'t Connection,
    read: HashMap<String, Option<Rc<Stored>>>,
    /// Their words as the gates read them, prepared once.
    sources: &'t gates::Sources,
}

impl<'t> Events<'t> {
    fn new(tx: &'t Connection, sources: &'t gates::Sources) -> Events<'t> {
        Events {
            tx,
            read: HashMap::new(),
            sources,
        }
    }
}

impl consolidation::Events for Events<'_> {
    type Error = Error;

    /// The events with these ids, in the order asked; unknown ids are left out (as
    /// [`state::events_by_ids`] does). Shared, not copied: a card's whole support is asked
    /// for again each time it is restated.
    fn by_ids(&mut self, ids: &[String]) -> Result<Vec<Rc<Stored>>> {
        let missing: Vec<String> = ids
            .iter()
            .filter(|id| !self.read.contains_key(id.as_str()))
            .cloned()
            .collect();
        if !missing.is_empty() {
            for s in state::events_by_ids(self.tx, &missing)? {
                self.read.insert(s.event.id.clone(), Some(Rc::new(s)));
            }
            for id in missing {
                self.read.entry(id).or_insert(None);
            }
        }
        Ok(ids
            .iter()
            .filter_map(|id| self.read.get(id.as_str()).cloned().flatten())
            .collect())
    }

    fn sources(&self) -> &gates::Sources {
        self.sources
    }
}

/// Routing chose a fact that is not active: a fault of the code, reported as one.
impl From<NotActive> for Error {
    fn from(e: NotActive) -> Error {
        Error::Other(e.0)
    }
}

/// The day of a moment as the person lived it: the local day in the time zone of the
/// machine dream runs on (`TZ`, else the system's zone), not the UTC day, so a session at
/// 00:24 local time is dated that day.
fn local_day(ts: DateTime<Utc>) -> NaiveDate {
    ts.with_timezone(&chrono::Local).date_naive()
}

#[cfg(test)]
mod tests {
    use super::parts;

    #[test]
    fn parts_end_once_they_showed_the_limit_and_keep_the_order() {
        // (what the proposal was shown, how many events that holds)
        let shown = [(1, 3), (2, 3), (3, 3), (4, 10), (5, 1), (6, 0), (7, 2)];
        let got: Vec<Vec<(usize, usize)>> = parts(&shown, 6, |p| *p)
            .into_iter()
            .map(<[(usize, usize)]>::to_vec)
            .collect();
        // A proposal shown nothing still counts one; one past the limit ends its part.
        assert_eq!(
            got,
            vec![
                shown[..2].to_vec(),
                shown[2..4].to_vec(),
                shown[4..].to_vec()
            ]
        );
        // Under the limit: one part, the whole window.
        assert_eq!(parts(&shown, 10_000, |p| *p), vec![&shown[..]]);
        // A limit of 0 is read as 1 (the config refuses it anyway): a part per proposal.
        assert_eq!(parts(&shown, 0, |p| *p).len(), shown.len());
        assert!(parts(&[] as &[(usize, usize)], 6, |p| *p).is_empty());
        // Proposals of one prompt share what they were shown: it counts once a part.
        let shared = [(1, 4), (1, 4), (1, 4), (2, 4), (2, 4), (3, 4)];
        let got: Vec<usize> = parts(&shared, 8, |p| *p).iter().map(|p| p.len()).collect();
        assert_eq!(got, vec![4, 2]);
    }
}
