//! The consolidation stage (SPEC S4 steps 4 to 8): cluster the window, reflect on every
//! cluster that holds a new event and on each session's new single mentions (the events
//! no cluster holds that may say something: one call per session), gate each proposal,
//! judge what passed, route it, and apply the routes to the in-memory facts, episodes and
//! cards; a restated episode whose support now meets the durable rule moves to its block,
//! and episodes past `episodes.retention_days` or over `episodes.max_facts` expire to the
//! archive. The result is one [`Stage`] (the files to commit) plus candidate records in
//! the state transaction; nothing is written to the repository here.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, NaiveDate, Utc};
use rusqlite::Connection;

use crate::edges::state::{self, Stored};
use crate::edges::store::Change;
use crate::error::{Error, Result};
use crate::stages::queue::{self, CardWrite};
use crate::stages::{parallel_map, reflect_plan, Archive, Ctx, Work};
use dream_core::llm::budget::CallError;
use dream_core::llm::plan::{self, Failure};
use dream_core::llm::Llm;
use dream_core::memory::episodes;
use dream_core::operations::commit::Message;
use dream_core::operations::report::{DecisionRow, Degraded};
use dream_core::schema::contract::{
    EventView, FactView, JudgeItem, JudgeRequest, LlmErrorKind, Proposal, ReflectReply, Reply,
    Verdict,
};
use dream_core::schema::settings::Config;
use dream_core::schema::{
    self, text_id, unique_id, Archived, Block, Card, Decision, Excerpt, Fact, GateName, GateResult,
    Memory, Origin, Stage,
};
use dream_core::selection::cluster;
use dream_core::selection::gates::{self, Evidence, Gated};
use dream_core::selection::keep::{self, Scorer};
use dream_core::selection::route::{self, Outcome};
use dream_core::selection::veto;

/// Judge items per call.
const JUDGE_BATCH: usize = 8;
/// Facts shown to the judge per candidate.
const JUDGE_NEIGHBOURS: usize = 5;

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
    let mut per_session = episodes_per_session(
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
        for g in &gated {
            let verdict = verdicts.get(&text_id("k", &g.text));
            let mut decided = decide(
                ctx,
                &mut events,
                work,
                g,
                verdict,
                &vetoes,
                &restating,
                &mut texts,
            )?;
            cap_session(ctx, &mut decided, &mut per_session);
            apply(ctx, tx, work, decided, &mut card_writes, &mut lines)?;
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

/// The session a kept line counts against (`keep::session_key`): that of its first
/// statement of the owner's (the one its day comes from).
fn session_of(stored: &[Rc<Stored>]) -> Option<String> {
    let owner = |s: &&Rc<Stored>| {
        dream_core::sources::turn::owner_statement(s.event.trust, &s.event.kind, s.event.recalled)
    };
    let first = stored
        .iter()
        .filter(owner)
        .min_by_key(|s| s.event.ts)
        .or_else(|| stored.iter().min_by_key(|s| s.event.ts))?;
    let day = first.event.ts.with_timezone(&chrono::Local).date_naive();
    Some(keep::session_key(&first.event.session_key(), day))
}

/// How many episodes each session already added (`episodes.max_per_session` counts them
/// across cycles: a session resumed the next day does not start again): each episode a
/// cycle kept, by the session of the event it cites first.
fn episodes_per_session(
    events: &mut Events<'_>,
    memory: &Memory,
) -> Result<HashMap<String, usize>> {
    let firsts: Vec<String> = memory
        .block(Block::Episodes)
        .facts()
        .filter(|f| episodes::governed(f.origin))
        .filter_map(|f| f.support.first().cloned())
        .collect();
    let mut out = HashMap::new();
    for s in events.by_ids(&firsts)? {
        if let Some(key) = session_of(&[s]) {
            *out.entry(key).or_insert(0) += 1;
        }
    }
    Ok(out)
}

/// Hold a new episode to its session's cap (`episodes.max_per_session`): candidates come
/// most salient first, so a session keeps its best and the rest are refused with why.
fn cap_session(ctx: &Ctx<'_>, d: &mut Decided, per_session: &mut HashMap<String, usize>) {
    if !matches!(d.outcome, Outcome::Episode { .. }) {
        return;
    }
    let Some(key) = session_of(&d.stored) else {
        return;
    };
    let kept = per_session.entry(key.clone()).or_insert(0);
    let max = ctx.config.episodes.max_per_session;
    match keep::over_cap(&key, *kept, max, d.g.salience.map(|w| w.score)) {
        Some(reason) => {
            if let Some(row) = d
                .gates
                .iter_mut()
                .rev()
                .find(|r| r.gate == GateName::Salience.as_str())
            {
                row.passed = false;
                row.why = reason.clone();
            }
            d.outcome = Outcome::Refuse { reason };
        }
        None => *kept += 1,
    }
}

/// Expire the episodes `episodes::expiring` names: each moves to the archive
/// (`why=expired`) with the policy verified. Returns the archive's new text when one did.
fn expire(ctx: &Ctx<'_>, work: &mut Work, lines: &mut Vec<String>) -> Result<Option<String>> {
    let due = episodes::expiring(&work.memory, ctx.today, &ctx.config.episodes);
    if due.is_empty() {
        return Ok(None);
    }
    let mut archive = Archive::load(ctx, work)?;
    for e in due {
        let Some((block, fact)) = work.memory.remove(&e.id) else {
            continue;
        };
        lines.push(format!(
            "expired    {}  {}  -- {}",
            e.id,
            schema::excerpt(&fact.text, 100),
            e.reason
        ));
        work.report.episodes_expired += 1;
        archive.push(Archived {
            fact,
            block,
            archived: ctx.today,
            why: "expired".into(),
            reason: e.reason,
            policy: e.policy,
        });
    }
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

fn view_of(s: &Stored) -> EventView {
    EventView::of(&s.event, !s.reflected)
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
        let near = route::nearest_cached(memory, &g.text, JUDGE_NEIGHBOURS, restating, texts);
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
}

/// What the cycle knows about one gated candidate once everything it needs is read:
/// the route the pure `route` and `veto` functions chose, and the data applying it takes.
struct Decided {
    /// The candidate, merged into the pending card it restates when there is one.
    g: Gated,
    cand_id: String,
    /// The pending card it restates, by position in `work.cards`.
    matched: Option<usize>,
    outcome: Outcome,
    judge_text: String,
    /// Every gate's row: the proposal's gates, then routing's.
    gates: Vec<dream_core::schema::GateResult>,
    /// The supporting events, and for a reinforcement that must choose which ids to cite,
    /// the events the fact already cites.
    stored: Vec<Rc<Stored>>,
    older: Vec<Rc<Stored>>,
    /// The episode this candidate's restatement moves to its durable block.
    graduate: Option<String>,
}

/// Read what one candidate's route depends on (nearest facts, the card it restates, the
/// person's vetoes, its events) and decide the route; nothing is changed here.
#[allow(clippy::too_many_arguments)]
fn decide(
    ctx: &Ctx<'_>,
    events: &mut Events<'_>,
    work: &Work,
    g: &Gated,
    verdict: Option<&Verdict>,
    vetoes: &[veto::Veto],
    restating: &route::Restating<'_>,
    texts: &mut route::Texts,
) -> Result<Decided> {
    let config = ctx.config;
    let cand_id = text_id("k", &g.text);
    let near = route::nearest_cached(&work.memory, &g.text, JUDGE_NEIGHBOURS, restating, texts);
    let matched = if g.refused.is_none() {
        matching_card(&work.cards, &g.text, config, texts)
    } else {
        None
    };
    let mut g = match matched {
        Some(ci) => merge_into_card(events, &work.cards[ci], g, config)?,
        None => g.clone(),
    };
    // Novelty against durable memory (S4 step 6): 1 - similarity to the nearest fact.
    g.measures.novelty =
        dream_core::text::measures::round3(1.0 - near.first().map_or(0.0, |n| n.similarity));
    g.measures.nearest_fact = near.first().map(|n| n.fact_id.clone());
    let (mut g, hit) = check_vetoes(events, g, vetoes, config)?;
    let (mut outcome, mut judge_text, route_gates) = route::route(&g, &near, verdict, config);
    outcome = veto::cap(outcome, hit.as_ref());
    let mut gates = g.gates.clone();
    gates.extend(route_gates);
    // A restated episode whose support now meets the durable rule moves to its block:
    // the episode's words, with the union of both supports, routed again.
    let mut graduate = None;
    if let Outcome::Reinforce { fact_id } = &outcome {
        if let Some((Block::Episodes, ep)) = work.memory.get(fact_id) {
            if let (Some(home), true) = (ep.home, episodes::governed(ep.origin)) {
                let merged = merge_into_episode(events, ep, home, &g, config)?;
                if let Some((merged, false)) = merged {
                    // Said again by the owner, yet short of the durable rule: more than a
                    // single mention is not an episode, and two statements are not enough
                    // to skip the person. A card proposes its durable block; accepting it
                    // retires the episode.
                    // Salience as well as corroboration: said again below KEEP, it only
                    // reinforces its episode.
                    if merged.refused.is_none()
                        && outcome_allows_card(&outcome)
                        && merged.salience.is_none_or(|w| w.keeps())
                    {
                        outcome = Outcome::Queue {
                            reason: format!(
                                "{fact_id} said again: {} statements of the owner's on {} days, short of the durable rule (min_support {}, min_days {}); a person decides whether it belongs in {}",
                                merged.measures.support,
                                merged.measures.days,
                                config.promote.min_support,
                                config.promote.min_days,
                                home.as_str()
                            ),
                            supersedes: Some(fact_id.clone()),
                        };
                        gates = merged.gates.clone();
                        g = merged;
                    }
                } else if let Some((merged, true)) = merged {
                    let rest: Vec<route::Near> = near
                        .iter()
                        .filter(|n| &n.fact_id != fact_id)
                        .cloned()
                        .collect();
                    let v = verdict.cloned().map(|mut v| {
                        v.contradicts = v.contradicts.filter(|c| c != fact_id);
                        v.duplicate_of = v.duplicate_of.filter(|d| d != fact_id);
                        v
                    });
                    let (o, j, rg) = route::route(&merged, &rest, v.as_ref(), config);
                    if o == Outcome::Promote {
                        graduate = Some(fact_id.clone());
                        gates = merged.gates.clone();
                        gates.extend(rg);
                        g = merged;
                        outcome = o;
                        judge_text = j;
                    }
                }
            }
        }
    }
    let stored = events.by_ids(&g.support)?;
    let older = match &outcome {
        Outcome::Reinforce { fact_id } => match work.memory.get(fact_id) {
            Some((_, fact)) if fact.support.len() + g.support.len() > schema::MAX_CITED => {
                let fresh: HashSet<&str> = g.support.iter().map(String::as_str).collect();
                let older: Vec<String> = fact
                    .support
                    .iter()
                    .filter(|id| !fresh.contains(id.as_str()))
                    .cloned()
                    .collect();
                events.by_ids(&older)?
            }
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    Ok(Decided {
        g,
        cand_id,
        matched,
        outcome,
        judge_text,
        gates,
        stored,
        older,
        graduate,
    })
}

/// An episode said again: its own words (without the day it starts with) as a proposal for
/// its durable block `home`, with the union of both supports, gated again. Its confidence
/// is the higher of the candidate's and what its independent restatements give (`1 -
/// 0.4^k`, as the offline reflector reckons it), and whether its support and days meet the
/// durable rule. `None` when fewer than two statements of the owner's support it (an
/// agent's or a tool's restatement is not the owner saying it again), or, when it meets
/// the rule, when the gates refuse it.
fn merge_into_episode(
    events: &mut Events<'_>,
    ep: &Fact,
    home: Block,
    g: &Gated,
    config: &Config,
) -> Result<Option<(Gated, bool)>> {
    let sources = events.sources;
    let (ids, events) = union_support(events, &ep.support, &g.support)?;
    let refs: Vec<&EventView> = events.iter().filter(|e| !e.recalled).collect();
    let (measured, independent) = gates::support_measures(&refs);
    if measured.support < 2 {
        return Ok(None);
    }
    let proposal = Proposal {
        text: schema::episode_body(&ep.text).to_string(),
        category: ep.category.clone(),
        block: home.as_str().into(),
        supporting_event_ids: ids,
        confidence: g
            .confidence
            .max(dream_core::llm::offline::confidence(independent)),
        reason: format!("{} said again ({})", ep.id, g.reason),
    };
    let merged = gate_merged(&proposal, &events, sources, config);
    // Counted as the gates count: the statements that say it again, not every one cited.
    if merged.measures.support < 2 {
        return Ok(None);
    }
    let meets = merged.measures.support >= config.promote.min_support
        && merged.measures.days >= config.promote.min_days;
    if meets && merged.refused.is_some() {
        return Ok(None);
    }
    Ok(Some((merged, meets)))
}

/// What a kept line's commit line says of its salience (`dream verify` reads it back).
fn salience_note(worth: Option<keep::Worth>) -> String {
    worth.map(|w| format!("; {}", w.note())).unwrap_or_default()
}

/// Whether an episode said again may become a card: not when the person vetoed it, or the
/// restatement was refused.
fn outcome_allows_card(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Reinforce { .. })
}

/// Gate a merged proposal (an episode said again, a card joined) against the union of
/// the events both cite, as the first gating did: the owner's names traceable, each
/// event's words from the stage's `sources`.
fn gate_merged(
    proposal: &Proposal,
    events: &[EventView],
    sources: &gates::Sources,
    config: &Config,
) -> Gated {
    let none = HashSet::new();
    gates::gate_proposal(
        proposal,
        &Evidence::new(events, &none)
            .owned_by(&config.owner.names)
            .with_sources(sources)
            .scored_by(crate::providers::salience::scorer()),
        config,
    )
}

/// Apply a decided route to the in-memory facts and cards, and record it: a commit line,
/// a report row, and the candidate's record in the state transaction.
fn apply(
    ctx: &Ctx<'_>,
    tx: &Connection,
    work: &mut Work,
    d: Decided,
    card_writes: &mut BTreeMap<String, CardWrite>,
    lines: &mut Vec<String>,
) -> Result<()> {
    let now = ctx.opts.now;
    let Decided {
        g,
        cand_id,
        matched,
        outcome,
        judge_text,
        gates: all_gates,
        stored,
        older,
        graduate,
    } = d;
    let events = excerpts(&stored);
    let c = Applying {
        g: &g,
        matched,
        stored: &stored,
        events: &events,
    };
    let (target, reason) = match &outcome {
        Outcome::Promote if graduate.is_some() => {
            apply_graduation(ctx, work, c, &graduate, card_writes, lines)?
        }
        Outcome::Episode { reason } => apply_episode(ctx, work, c, reason, card_writes, lines),
        Outcome::Promote => apply_promotion(ctx, work, c, card_writes, lines),
        Outcome::Queue { reason, supersedes } => {
            let existing = matched.map(|ci| &work.cards[ci]);
            let card = build_card(
                &g,
                existing,
                reason,
                supersedes,
                &work.memory,
                &judge_text,
                all_gates.clone(),
                events,
                &ctx.cycle_id,
                now,
            );
            let unchanged = existing.is_some_and(|old| same_card(old, &card));
            if !unchanged {
                card_writes.insert(card.path(), CardWrite::Pending);
                lines.push(format!(
                    "queued     {}  [{}/{}] {}  -- {}{}",
                    card.id,
                    g.block.as_str(),
                    g.category,
                    g.text,
                    reason,
                    salience_note(g.salience)
                ));
            }
            let id = card.id.clone();
            match matched {
                Some(ci) if !unchanged => work.cards[ci] = card,
                Some(_) => {}
                None => work.cards.push(card),
            }
            (Some(id), reason.clone())
        }
        Outcome::Reinforce { fact_id } => {
            apply_reinforcement(ctx, work, c, fact_id, &older, lines)?
        }
        Outcome::Refuse { reason } => {
            lines.push(format!(
                "refused    {cand_id}  {:?}  -- {reason}",
                schema::excerpt(&g.text, 120)
            ));
            (None, reason.clone())
        }
    };
    let label = outcome.label();
    work.report.candidates.add(label);
    if label == "reinforced" {
        if let Some(t) = &target {
            work.reinforced.insert(t.clone());
        }
    }
    work.report.decide(DecisionRow {
        candidate: cand_id.clone(),
        route: label.into(),
        target: target.clone(),
        text: g.text.clone(),
        block: g.block.as_str().into(),
        category: g.category.clone(),
        reason: reason.clone(),
        proposer: g.reason.clone(),
        gate: match &outcome {
            // Refused by routing, not by a hard gate: by its salience or its session's cap.
            Outcome::Refuse { .. } if g.refused.is_none() => {
                Some(GateName::Salience.as_str().to_string())
            }
            Outcome::Refuse { .. } => all_gates.iter().find(|r| !r.passed).map(|r| r.gate.clone()),
            _ => None,
        },
    });
    let record = serde_json::json!({
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
    });
    state::put_candidate(tx, &cand_id, &ctx.cycle_id, label, &g.text, &record)?;
    Ok(())
}

/// The candidate a route is applied to: its gating, the pending card it restates (by
/// position in `work.cards`), and the events it cites, stored and as excerpts.
#[derive(Clone, Copy)]
struct Applying<'a> {
    g: &'a Gated,
    matched: Option<usize>,
    stored: &'a [Rc<Stored>],
    events: &'a [Excerpt],
}

/// The graduation step of `apply`: an episode said again moves to its block as a fact, and
/// the card that asked about it is closed.
fn apply_graduation(
    ctx: &Ctx<'_>,
    work: &mut Work,
    c: Applying<'_>,
    graduate: &Option<String>,
    card_writes: &mut BTreeMap<String, CardWrite>,
    lines: &mut Vec<String>,
) -> Result<(Option<String>, String)> {
    let now = ctx.opts.now;
    let Applying {
        g,
        matched,
        stored,
        events,
    } = c;
    let id = graduate.clone().unwrap_or_default();
    let (_, old) = work.memory.remove(&id).ok_or_else(|| {
        Error::Other(format!(
            "routing chose to move episode {id}, which is not an active fact"
        ))
    })?;
    let (first, last) = span(events, ctx.today);
    work.memory.block_mut(g.block).push(Fact {
        id: id.clone(),
        text: g.text.clone(),
        category: g.category.clone(),
        origin: Origin::Auto,
        support: cite(&g.text, &g.support, stored),
        first_seen: first.min(old.first_seen),
        last_seen: last.max(old.last_seen),
        valid_from: old.valid_from,
        valid_to: old.valid_to,
        home: None,
        extra: old.extra,
    });
    lines.push(format!(
        "promoted   {id}  [{}/{}] {}  (an episode said again: support {}, days {}, confidence {:.3}{})",
        g.block.as_str(),
        g.category,
        g.text,
        g.measures.support,
        g.measures.days,
        g.confidence,
        salience_note(g.salience)
    ));
    // The card that asked the person about it (said again, short of the rule)
    // is decided by the fact it now is.
    let asked = matched.or_else(|| {
        work.cards
            .iter()
            .position(|c| c.supersedes.as_deref() == Some(id.as_str()))
    });
    if let Some(ci) = asked {
        close_card(
            work,
            ci,
            card_writes,
            "promoted",
            "said again on enough days: it met the durable rule",
            &id,
            &g.support,
            now,
        );
    }
    Ok((
        Some(id.clone()),
        format!("{id} was an episode; said again, it meets the durable rule"),
    ))
}

/// The episode step of `apply`: the candidate kept in the episodes, dated by its first event.
fn apply_episode(
    ctx: &Ctx<'_>,
    work: &mut Work,
    c: Applying<'_>,
    reason: &str,
    card_writes: &mut BTreeMap<String, CardWrite>,
    lines: &mut Vec<String>,
) -> (Option<String>, String) {
    let now = ctx.opts.now;
    let Applying {
        g,
        matched,
        stored,
        events,
    } = c;
    let taken: Vec<String> = work.memory.facts().map(|(_, f)| f.id.clone()).collect();
    let (first, last) = span(events, ctx.today);
    let text = episodes::text(first, &g.text);
    let id = unique_id(text_id("f", &text), &taken);
    let mut support = cite(&g.text, &g.support, stored);
    // The day it starts with traces to its first event: keep citing that one.
    if let Some(e) = stored.iter().min_by_key(|s| s.event.ts) {
        if !support.contains(&e.event.id) {
            support.truncate(schema::MAX_CITED - 1);
            support.insert(0, e.event.id.clone());
        }
    }
    work.memory.block_mut(Block::Episodes).push(Fact {
        id: id.clone(),
        text: text.clone(),
        category: g.category.clone(),
        origin: Origin::Auto,
        support,
        first_seen: first,
        last_seen: last,
        valid_from: None,
        valid_to: None,
        home: (g.block != Block::Episodes).then_some(g.block),
        extra: BTreeMap::new(),
    });
    if let Some(ci) = matched {
        let reason =
            "fully traceable to the owner's own words; it moves to its block when said again";
        close_card(
            work,
            ci,
            card_writes,
            "kept as an episode",
            reason,
            &id,
            &g.support,
            now,
        );
    }
    lines.push(format!(
        "episode    {id}  [episodes/{}] {text}  -- {reason}{}",
        g.category,
        salience_note(g.salience)
    ));
    (Some(id), reason.to_string())
}

/// The promotion step of `apply`: the candidate becomes a fact of its block.
fn apply_promotion(
    ctx: &Ctx<'_>,
    work: &mut Work,
    c: Applying<'_>,
    card_writes: &mut BTreeMap<String, CardWrite>,
    lines: &mut Vec<String>,
) -> (Option<String>, String) {
    let now = ctx.opts.now;
    let Applying {
        g,
        matched,
        stored,
        events,
    } = c;
    let taken: Vec<String> = work.memory.facts().map(|(_, f)| f.id.clone()).collect();
    let id = unique_id(text_id("f", &g.text), &taken);
    let (first, last) = span(events, ctx.today);
    work.memory.block_mut(g.block).push(Fact {
        id: id.clone(),
        text: g.text.clone(),
        category: g.category.clone(),
        origin: Origin::Auto,
        support: cite(&g.text, &g.support, stored),
        first_seen: first,
        last_seen: last,
        valid_from: None,
        valid_to: None,
        home: None,
        extra: BTreeMap::new(),
    });
    if let Some(ci) = matched {
        let reason = "new evidence made it qualify for auto-promotion";
        close_card(
            work,
            ci,
            card_writes,
            "auto-promoted",
            reason,
            &id,
            &g.support,
            now,
        );
    }
    lines.push(format!(
        "promoted   {id}  [{}/{}] {}  (support {}, days {}, confidence {:.3}{})",
        g.block.as_str(),
        g.category,
        g.text,
        g.measures.support,
        g.measures.days,
        g.confidence,
        salience_note(g.salience)
    ));
    (Some(id), String::new())
}

/// The reinforcement step of `apply`: the restated fact cites the new events and is seen
/// as late as they are.
fn apply_reinforcement(
    ctx: &Ctx<'_>,
    work: &mut Work,
    c: Applying<'_>,
    fact_id: &str,
    older: &[Rc<Stored>],
    lines: &mut Vec<String>,
) -> Result<(Option<String>, String)> {
    let Applying {
        g, stored, events, ..
    } = c;
    let fact = work.memory.get_mut(fact_id).ok_or_else(|| {
        Error::Other(format!(
            "routing chose to reinforce {fact_id}, which is not an active fact"
        ))
    })?;
    // What the restatement adds: the owner's statements that say it again, not every
    // event a model cited beside them (those would keep the fact alive, `last_seen`, on
    // talk that only touches it).
    let before = fact.support.len();
    for id in &g.establishing {
        if !fact.support.contains(id) {
            fact.support.push(id.clone());
        }
    }
    let added = fact.support.len() - before;
    if fact.support.len() > schema::MAX_CITED {
        fact.support = cite(&fact.text, &fact.support, stored.iter().chain(older));
    }
    let saying = events.iter().filter(|e| g.establishing.contains(&e.id));
    let (_, last) = if saying.clone().next().is_some() {
        span(saying, ctx.today)
    } else {
        span(events, ctx.today)
    };
    if last > fact.last_seen {
        fact.last_seen = last;
    }
    if added > 0 {
        lines.push(format!(
            "reinforced {fact_id}  +{added} supporting events, last seen {}",
            fact.last_seen
        ));
    }
    Ok((
        Some(fact_id.to_string()),
        format!("restates {fact_id} (+{added} supporting events)"),
    ))
}

/// Hold a candidate that passed the gates against a person's earlier rejections and undos
/// (see `veto`): the veto's gate joins the candidate's, and a refusal refuses it.
fn check_vetoes(
    events: &mut Events<'_>,
    mut g: Gated,
    vetoes: &[veto::Veto],
    config: &Config,
) -> Result<(Gated, Option<veto::Hit>)> {
    if vetoes.is_empty() || g.refused.is_some() {
        return Ok((g, None));
    }
    let events = events.by_ids(&g.support)?;
    let support: Vec<(&str, &str)> = events
        .iter()
        .map(|s| (s.event.id.as_str(), s.event.text.as_str()))
        .collect();
    let hit = veto::check(&g.text, &support, vetoes, config);
    if let Some(h) = &hit {
        g.gates.push(h.gate.clone());
        if let veto::Effect::Refuse(reason) = &h.effect {
            g.refused = Some(reason.clone());
        }
    }
    Ok((g, hit))
}

/// The pending card a candidate restates, if any.
fn matching_card(
    cards: &[Card],
    text: &str,
    config: &Config,
    texts: &mut route::Texts,
) -> Option<usize> {
    route::restated_in_words(
        texts,
        text,
        cards.iter().map(|c| c.text.as_str()),
        config.promote.reinforce_similarity,
    )
}

/// Decide the pending card `ci` by the fact a candidate just became (`fact_id`, cited by
/// `support`): the card leaves `review/` and is written under `review/decided/` with
/// `verdict` and `reason`.
#[allow(clippy::too_many_arguments)]
fn close_card(
    work: &mut Work,
    ci: usize,
    card_writes: &mut BTreeMap<String, CardWrite>,
    verdict: &str,
    reason: &str,
    fact_id: &str,
    support: &[String],
    now: DateTime<Utc>,
) {
    let mut card = work.cards.remove(ci);
    card_writes.insert(card.path(), CardWrite::Delete);
    card.decision = Some(Decision {
        verdict: verdict.into(),
        at: now,
        reason: reason.into(),
        fact_id: Some(fact_id.into()),
    });
    card.supporting_event_ids = support.to_vec();
    card_writes.insert(card.path(), CardWrite::Text(card.render()));
}

/// The union of what an episode or a card already cites (`earlier`) and a candidate's
/// support (`added`), and those events as the gates see them (the added ones new).
fn union_support(
    events: &mut Events<'_>,
    earlier: &[String],
    added: &[String],
) -> Result<(Vec<String>, Vec<EventView>)> {
    let mut ids = earlier.to_vec();
    for id in added {
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    let events = events
        .by_ids(&ids)?
        .iter()
        .map(|s| {
            let mut v = view_of(s);
            v.new = added.contains(&v.id) && !earlier.contains(&v.id);
            v
        })
        .collect();
    Ok((ids, events))
}

/// A candidate that restates a pending card: the card's text with the union of both
/// supports, gated again as one proposal. A restatement that adds no new event leaves
/// the candidate as it was.
fn merge_into_card(
    events: &mut Events<'_>,
    card: &Card,
    g: &Gated,
    config: &Config,
) -> Result<Gated> {
    let sources = events.sources;
    let (ids, events) = union_support(events, &card.supporting_event_ids, &g.support)?;
    let proposal = Proposal {
        text: card.text.clone(),
        category: card.category.clone(),
        block: card.block.as_str().into(),
        supporting_event_ids: ids,
        confidence: card.confidence.max(g.confidence),
        reason: g.reason.clone(),
    };
    let merged = gate_merged(&proposal, &events, sources, config);
    Ok(if merged.refused.is_some() {
        g.clone()
    } else {
        merged
    })
}

/// Two versions of a card say the same thing (ignoring when they were written).
fn same_card(a: &Card, b: &Card) -> bool {
    let strip = |c: &Card| Card {
        updated: c.created,
        cycle: String::new(),
        excerpts: Vec::new(),
        ..c.clone()
    };
    let mut a = strip(a);
    let mut b = strip(b);
    a.supporting_event_ids.sort();
    b.supporting_event_ids.sort();
    a == b
}

fn excerpts(stored: &[Rc<Stored>]) -> Vec<Excerpt> {
    stored.iter().map(|s| Excerpt::of(&s.event)).collect()
}

/// The ids a fact with this text cites out of `ids` (at most [`schema::MAX_CITED`]: those
/// that trace it, then recent ones), from the events in `stored`. An id with no stored
/// event (which verify would report) is kept, so nothing hides it.
fn cite<'a>(
    text: &str,
    ids: &[String],
    stored: impl IntoIterator<Item = &'a Rc<Stored>>,
) -> Vec<String> {
    if ids.len() <= schema::MAX_CITED {
        return ids.to_vec();
    }
    let by_id: HashMap<&str, &Stored> = stored
        .into_iter()
        .map(|s| (s.event.id.as_str(), &**s))
        .collect();
    // Over the cap, the owner's statements are what a fact rests on: context goes first.
    let owners: Vec<String> = ids
        .iter()
        .filter(|id| {
            by_id.get(id.as_str()).is_none_or(|s| {
                dream_core::sources::turn::owner_statement(
                    s.event.trust,
                    &s.event.kind,
                    s.event.recalled,
                )
            })
        })
        .cloned()
        .collect();
    let ids = if owners.is_empty() { ids } else { &owners[..] };
    if ids.len() <= schema::MAX_CITED {
        return ids.to_vec();
    }
    let (found, lost): (Vec<&String>, Vec<&String>) =
        ids.iter().partition(|id| by_id.contains_key(id.as_str()));
    let events: Vec<dream_core::text::measures::Citation> = found
        .iter()
        .map(|id| {
            let e = &by_id[id.as_str()].event;
            dream_core::text::measures::Citation {
                text: &e.text,
                day: e.ts.timestamp().div_euclid(86_400),
            }
        })
        .collect();
    let room = schema::MAX_CITED.saturating_sub(lost.len());
    let keep: HashSet<usize> = dream_core::text::measures::cited(text, &events, room)
        .into_iter()
        .collect();
    let kept: HashSet<&str> = found
        .iter()
        .enumerate()
        .filter(|(i, _)| keep.contains(i))
        .map(|(_, id)| id.as_str())
        .chain(lost.iter().map(|id| id.as_str()))
        .collect();
    ids.iter()
        .filter(|id| kept.contains(id.as_str()))
        .cloned()
        .collect()
}

/// The first and last day of the events, as the person lived them: the local day in the
/// time zone of the machine dream runs on (`TZ`, else the system's zone), not the UTC day,
/// so a session at 00:24 local time is dated that day. (Transcripts give their times in UTC;
/// an event's own offset is not kept once it is parsed.)
fn span<'a>(
    events: impl IntoIterator<Item = &'a Excerpt> + Clone,
    today: NaiveDate,
) -> (NaiveDate, NaiveDate) {
    let local = |ts: DateTime<Utc>| ts.with_timezone(&chrono::Local).date_naive();
    let days = || events.clone().into_iter().map(|e| local(e.ts));
    (days().min().unwrap_or(today), days().max().unwrap_or(today))
}

#[allow(clippy::too_many_arguments)]
fn build_card(
    g: &Gated,
    existing: Option<&Card>,
    reason: &str,
    supersedes: &Option<String>,
    memory: &Memory,
    judge: &str,
    gates: Vec<GateResult>,
    excerpts: Vec<Excerpt>,
    cycle: &str,
    now: DateTime<Utc>,
) -> Card {
    Card {
        id: existing
            .map(|c| c.id.clone())
            .unwrap_or_else(|| text_id("c", &g.text)),
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
