//! The heartbeat: warnings about the failures a job nobody watches has quietly.
//!
//! dream runs from a timer while its owner sleeps, so the failures that matter are the
//! ones that do not error: cycles that run green and keep nothing, a gate that refuses
//! everything a model proposes, a model server down night after night, a timer that stopped
//! firing, an agent that stopped writing where dream reads, a budget too small for the
//! backlog, a loss guard holding back a large deletion. Each rule here looks at the record
//! of recent cycles (their stored reports, read back as [`Seen`]), when each cycle kind
//! last ran, and when each source last grew, and says in one [`Warning`] what it saw and
//! what to do. `dream status`, the digest, `dream doctor` and `dream run`'s exit code
//! raise them; the thresholds are `[heartbeat]` in `dream.toml`.
//!
//! The rules, each in one sentence (N is `heartbeat.cycles`):
//!
//! - **failed**: the latest cycle of a kind failed (its error is kept with it).
//! - **quiet**: the last N cycles that reflected each read new events (at least
//!   `quiet_min_events` in all) and kept nothing: no fact promoted, queued for review,
//!   reinforced, added as an episode, no skill drafted.
//! - **gate**: over the last N cycles that reflected, one gate refused at least
//!   `gate_refusal_share` of the candidates, once there were `gate_min_candidates`.
//! - **degraded**: a stage fell back to its conservative default in each of the last N
//!   cycles that ran it.
//! - **missed**: no cycle of a kind that has run before for two periods
//!   (`period_hours`): the timer is not firing.
//! - **source**: the inbox or an `[[inbox.sources]]` entry has not grown for
//!   `source_idle_days` days (the caller leaves out an inbox nobody ever wrote to when
//!   sources feed the memory).
//! - **budget**: the token budget stopped calls in each of the last N cycles that
//!   reflected: the backlog grows.
//! - **loss**: the loss guard held archivals back in the last cycle that ran the passes.
//! - **unreflected**: events older than the window that no cycle has looked at (what the
//!   backfill has not reached yet, or left behind); the edge counts them in the state.
//! - **recall**: the latest cycle's recall quiz scored below every one of the N quizzes
//!   before it (the share of questions answered rightly): memory stopped answering what it
//!   held.
//!
//! Everything here is pure: the caller reads the state and passes the clock in.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::schema::settings::Heartbeat;
use crate::schema::GateName;

/// The rules, in the order their warnings are listed.
pub const RULES: [&str; 10] = [
    "failed",
    "quiet",
    "gate",
    "degraded",
    "missed",
    "source",
    "budget",
    "loss",
    "unreflected",
    "recall",
];

/// Lines of `after` that `before` does not hold (as a multiset; blank lines left out):
/// what a stage added to a file.
pub fn lines_added(before: &str, after: &str) -> usize {
    let mut old: BTreeMap<&str, usize> = BTreeMap::new();
    for l in before.lines().filter(|l| !l.trim().is_empty()) {
        *old.entry(l).or_insert(0) += 1;
    }
    let mut added = 0;
    for l in after.lines().filter(|l| !l.trim().is_empty()) {
        match old.get_mut(l) {
            Some(n) if *n > 0 => *n -= 1,
            _ => added += 1,
        }
    }
    added
}

/// One warning: which rule, what it saw (with the figures), and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    pub rule: String,
    pub cause: String,
    pub fix: String,
}

impl Warning {
    fn new(rule: &str, cause: String, fix: String) -> Warning {
        Warning {
            rule: rule.into(),
            cause,
            fix,
        }
    }
}

/// A finished cycle as the heartbeat sees it, read back from its stored report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Seen {
    pub id: String,
    pub kind: String,
    /// The cycle's clock.
    pub now: DateTime<Utc>,
    /// It clustered and reflected (its profile says so and something was new).
    pub reflected: bool,
    /// It ran the maintenance passes.
    pub passes: bool,
    /// It wrote a digest.
    pub digest: bool,
    /// Events it looked at for the first time.
    pub new_events: u64,
    /// What it kept of them: promoted, queued, reinforced, episodes, skills.
    pub kept: u64,
    pub proposed: u64,
    /// Refused candidates by the gate that refused them.
    pub refused_by_gate: BTreeMap<String, u64>,
    /// Degraded stages, with the first reason given.
    pub degraded: BTreeMap<String, String>,
    /// Calls the token budget did not start.
    pub budget_stopped: u64,
    pub budget_cap: u64,
    pub pending_clusters: u64,
    /// Archivals the loss guard held back.
    pub loss_held: u64,
    /// The cycle failed with this error (and its exit code) instead of finishing.
    pub failed: Option<(String, i64)>,
    /// Its recall quiz: questions answered rightly, and asked (`None`: no quiz ran).
    pub quiz: Option<(u64, u64)>,
}

impl Seen {
    /// Read a stored cycle report (`report::Report` as JSON). Reports written before a
    /// field existed read it from what they have, or as zero.
    pub fn from_report(id: &str, kind: &str, now: DateTime<Utc>, r: &Value) -> Seen {
        let n = |v: &Value| v.as_u64().unwrap_or(0);
        let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
        let c = &r["candidates"];
        let plan = |k: &str, fallback: bool| r["plan"][k].as_bool().unwrap_or(fallback);
        let refused_by_gate = refused_by_gate(r);
        let mut degraded = BTreeMap::new();
        for d in list(&r["degraded"]) {
            let stage = d["stage"].as_str().unwrap_or_default().to_string();
            let reason = d["reason"].as_str().unwrap_or_default().to_string();
            degraded.entry(stage).or_insert(reason);
        }
        // What the cycle kept of its new events. An `episodes` count (candidates routed to
        // memory/episodes.md as episodes) plugs in beside the lines the cycle's own stages
        // added to that file; a fact promoted there is counted as promoted too, which does
        // not matter: the rule only asks whether anything was kept.
        let kept = n(&c["promoted"])
            + n(&c["queued"])
            + n(&c["reinforced"])
            + n(&c["episodes"])
            + n(&r["episodes"])
            + n(&r["episodes_lines"])
            + n(&r["skills"]["drafted"])
            + n(&r["skills"]["queued"]);
        Seen {
            id: id.to_string(),
            kind: kind.to_string(),
            now,
            reflected: plan(
                "reflect",
                n(&r["window"]["reflected"]) > 0 || n(&c["proposed"]) > 0,
            ),
            passes: plan("passes", !list(&r["passes"]).is_empty()),
            digest: plan("digest", r["digest"].is_string()),
            new_events: r["window"]["new_events"]
                .as_u64()
                .unwrap_or_else(|| n(&r["ingest"]["new_events"])),
            kept,
            proposed: n(&c["proposed"]),
            refused_by_gate,
            degraded,
            budget_stopped: n(&r["tokens"]["refused_calls"]),
            budget_cap: n(&r["tokens"]["cap"]),
            pending_clusters: n(&r["window"]["pending"]),
            loss_held: list(&r["passes"]).iter().map(|p| n(&p["held"])).sum(),
            failed: r["failed"]
                .as_str()
                .map(|e| (e.to_string(), r["exit_code"].as_i64().unwrap_or(1))),
            quiz: r["quiz"].is_object().then(|| {
                let q = &r["quiz"];
                (
                    n(&q["answered"]) + n(&q["not_recalled"]),
                    n(&q["asked"]) + n(&q["forgotten"]),
                )
            }),
        }
    }

    /// Whether the cycle ran the stage a degraded entry names.
    fn ran(&self, stage: &str) -> bool {
        match stage {
            "reflect" | "judge" | "skills" | "consolidate" => self.reflected,
            "dedupe" | "merge" | "promote" | "forget" => self.passes,
            "digest" => self.digest,
            _ => true,
        }
    }
}

/// A report's refusals by gate: its `refused_by_gate` counts, or for a report written
/// before that field, counted from its decision rows.
fn refused_by_gate(r: &Value) -> BTreeMap<String, u64> {
    if let Some(counts) = r["refused_by_gate"].as_object() {
        return counts
            .iter()
            .map(|(gate, n)| (gate.clone(), n.as_u64().unwrap_or(0)))
            .collect();
    }
    let mut by_gate = BTreeMap::new();
    for d in r["decisions"].as_array().into_iter().flatten() {
        if d["route"] == "refused" {
            let gate = d["gate"].as_str().unwrap_or("unknown").to_string();
            *by_gate.entry(gate).or_insert(0) += 1;
        }
    }
    by_gate
}

/// The part of a cycle report the rules read ([`Seen::from_report`] gives the same from
/// either): the counts, which stages ran, tokens, degraded stages, what the passes held
/// back, the gates of refused candidates, a failure. Stored beside each report, so the
/// heartbeat of an idle cycle reads a few hundred bytes per cycle, not whole reports.
pub fn essentials(r: &Value) -> Value {
    let held: Vec<Value> = r["passes"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| serde_json::json!({"held": p["held"]}))
                .collect()
        })
        .unwrap_or_default();
    serde_json::json!({
        "plan": r["plan"],
        "window": r["window"],
        "candidates": r["candidates"],
        "tokens": r["tokens"],
        "degraded": r["degraded"],
        "ingest": {"new_events": r["ingest"]["new_events"]},
        "skills": {"drafted": r["skills"]["drafted"], "queued": r["skills"]["queued"]},
        "episodes": r["episodes"],
        "episodes_lines": r["episodes_lines"],
        "digest": r["digest"],
        "passes": held,
        "refused_by_gate": refused_by_gate(r),
        "failed": r["failed"],
        "exit_code": r["exit_code"],
        "quiz": r["quiz"].as_object().map(|q| serde_json::json!({
            "asked": q.get("asked"), "answered": q.get("answered"),
            "forgotten": q.get("forgotten"), "not_recalled": q.get("not_recalled"),
        })),
    })
}

/// A place events come from, and when it last grew.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// As a person reads it: `inbox events/`, `claude-code ~/.claude/projects`.
    pub name: String,
    /// When a cycle first read it.
    pub first_seen: DateTime<Utc>,
    /// When a cycle last read a new line from it.
    pub last_grew: Option<DateTime<Utc>>,
}

/// What the heartbeat looks at.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// Recent cycles, newest first (enough for the longest streak: a few times
    /// `heartbeat.cycles`).
    pub cycles: Vec<Seen>,
    /// When each kind of cycle last ran (its clock), for kinds that ever ran.
    pub last_of_kind: Vec<(String, DateTime<Utc>)>,
    pub sources: Vec<Source>,
}

/// Every warning the rules raise at `now`, in [`RULES`] order.
pub fn check(now: DateTime<Utc>, inputs: &Inputs, cfg: &Heartbeat) -> Vec<Warning> {
    let mut out = Vec::new();
    failed(&inputs.cycles, &mut out);
    let done: Vec<Seen> = inputs
        .cycles
        .iter()
        .filter(|c| c.failed.is_none())
        .cloned()
        .collect();
    let inputs = &Inputs {
        cycles: done,
        last_of_kind: inputs.last_of_kind.clone(),
        sources: inputs.sources.clone(),
    };
    let n = cfg.cycles as usize;
    let reflecting: Vec<&Seen> = inputs.cycles.iter().filter(|c| c.reflected).collect();
    if n > 0 {
        quiet(&reflecting, n, u64::from(cfg.quiet_min_events), &mut out);
        gate(&reflecting, n, cfg, &mut out);
        degraded(&inputs.cycles, n, &mut out);
    }
    if cfg.period_hours > 0 {
        missed(now, &inputs.last_of_kind, cfg.period_hours, &mut out);
    }
    if cfg.source_idle_days > 0 {
        sources(now, &inputs.sources, cfg.source_idle_days, &mut out);
    }
    if n > 0 {
        budget(&reflecting, n, &mut out);
    }
    loss(&inputs.cycles, &mut out);
    if n > 0 {
        recall(&inputs.cycles, n, &mut out);
    }
    out
}

fn failed(cycles: &[Seen], out: &mut Vec<Warning>) {
    let mut kinds: BTreeSet<&str> = BTreeSet::new();
    for c in cycles {
        if !kinds.insert(c.kind.as_str()) {
            continue;
        }
        let Some((error, code)) = &c.failed else {
            continue;
        };
        out.push(Warning::new(
            "failed",
            format!(
                "the last {} cycle ({}, clock {}) failed with exit code {code}: {error}",
                c.kind,
                c.id,
                c.now.format("%Y-%m-%d %H:%M UTC")
            ),
            format!(
                "run it by hand to see it again (`dream run --cycle {} -v`); the repository and state are as the last good cycle left them, and the next run redoes the work",
                c.kind
            ),
        ));
    }
}

/// "the last evening cycle", "the last 3 evening cycles", "the last 3 evening and morning
/// cycles".
fn the_last(cycles: &[&Seen]) -> String {
    let set: BTreeSet<&str> = cycles.iter().map(|c| c.kind.as_str()).collect();
    let kinds = set.into_iter().collect::<Vec<_>>().join(" and ");
    match cycles.len() {
        1 => format!("the last {kinds} cycle"),
        n => format!("the last {n} {kinds} cycles"),
    }
}

fn quiet(reflecting: &[&Seen], n: usize, min_events: u64, out: &mut Vec<Warning>) {
    let streak: Vec<&Seen> = reflecting
        .iter()
        .copied()
        .take_while(|c| c.kept == 0 && c.new_events > 0)
        .collect();
    if streak.len() < n {
        return;
    }
    let streak = &streak[..n];
    let events: u64 = streak.iter().map(|c| c.new_events).sum();
    if events < min_events {
        return;
    }
    let proposed: u64 = streak.iter().map(|c| c.proposed).sum();
    let cause = format!(
        "{} read {events} new events and kept nothing: no fact promoted, queued, \
         reinforced or added as an episode, no skill drafted ({proposed} candidates proposed{}; heartbeat.cycles = {n})",
        the_last(streak),
        if proposed > 0 { ", all refused" } else { "" }
    );
    let fix = if proposed == 0 {
        "nothing was proposed: see whether the events cluster (`dream run --dry-run` shows clusters \
         and candidates; check cluster.eps and cluster.min_points), and whether the model is \
         reached (`dream doctor`)"
            .to_string()
    } else {
        "every candidate was refused: `dream run --dry-run` lists each refusal with its reason, \
         `dream explain k_...` shows one in full; check the promote.* floors and the model"
            .to_string()
    };
    out.push(Warning::new("quiet", cause, fix));
}

/// What to look at when one gate refuses nearly everything. Every gate has its advice:
/// the match is exhaustive, so a new gate cannot be left without one.
fn gate_fix(gate: &str) -> String {
    use crate::schema::GateName as G;
    let what = match G::parse(gate) {
        Some(G::Coverage) => "the model words facts beyond the events (promote.min_coverage sets how far); a model that paraphrases less, or its prompt, is the fix",
        Some(G::Entities) => "the model adds names, numbers or dates the events do not hold",
        Some(G::Ids) => "the model cites event ids that were not sent: it may be too small for the JSON contract",
        Some(G::Floor) => "candidates cite fewer events than cluster.min_points",
        Some(G::NewEvidence) => "candidates restate only events earlier cycles already considered",
        Some(G::Trust) => "only tool or external events support them: an agent's or the owner's own words must too",
        Some(G::Secret) => "candidates hold secrets the redaction did not catch in the events",
        Some(G::Veto) => "candidates restate what a person rejected or undid",
        Some(G::Text | G::Block) => "the model's replies do not follow the contract",
        Some(G::Recalled) => "candidates rest only on text dream showed the agent (its own memory read back)",
        Some(G::Traceable) => "candidates hold words their events do not (promote.min_coverage)",
        Some(G::Owner) => "no statement of the owner's supports them (owner.names, or the sources' trust)",
        Some(G::Judge) => "the judge finds them contradicting or duplicating facts",
        Some(G::Confidence | G::Support | G::Days) => "candidates lack the corroboration the promote.* rules ask for",
        // Never warned of (see `gate`): what was said in passing is refused by design.
        Some(G::Salience) => "what was said scores below the salience threshold or was said in passing (small talk, status, reactions, questions, passing opinions); if statements that matter are refused, `dream explain k_...` shows a refusal's score",
        // Written out against events; never refuses.
        Some(G::Dates) | None => "see the refusals' reasons",
    };
    format!("{what}; `dream run --dry-run` lists each refusal, `dream explain k_...` one in full")
}

fn gate(reflecting: &[&Seen], n: usize, cfg: &Heartbeat, out: &mut Vec<Warning>) {
    let window: Vec<&Seen> = reflecting.iter().copied().take(n).collect();
    let proposed: u64 = window.iter().map(|c| c.proposed).sum();
    if proposed < u64::from(cfg.gate_min_candidates) || proposed == 0 {
        return;
    }
    let mut by_gate: BTreeMap<&str, u64> = BTreeMap::new();
    for c in &window {
        // Salience refusing most of what was said is the filter doing its work when
        // sessions are chatter, not a quiet failure; a scorer that failed outright keeps
        // nothing, which the `quiet` rule warns of.
        for (g, k) in c
            .refused_by_gate
            .iter()
            .filter(|(g, _)| g.as_str() != GateName::Salience.as_str())
        {
            *by_gate.entry(g.as_str()).or_insert(0) += k;
        }
    }
    let Some((gate, refused)) = by_gate
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
    else {
        return;
    };
    let share = refused as f64 / proposed as f64;
    if share < cfg.gate_refusal_share {
        return;
    }
    out.push(Warning::new(
        "gate",
        format!(
            "the {gate} gate refused {refused} of the {proposed} candidates ({:.0}%) of {} \
             (heartbeat.gate_refusal_share = {})",
            share * 100.0,
            the_last(&window),
            cfg.gate_refusal_share
        ),
        gate_fix(gate),
    ));
}

fn degraded(cycles: &[Seen], n: usize, out: &mut Vec<Warning>) {
    let mut stages: BTreeSet<&str> = BTreeSet::new();
    for c in cycles {
        stages.extend(c.degraded.keys().map(String::as_str));
    }
    for stage in stages {
        let ran: Vec<&Seen> = cycles.iter().filter(|c| c.ran(stage)).take(n).collect();
        if ran.len() < n || !ran.iter().all(|c| c.degraded.contains_key(stage)) {
            continue;
        }
        let reason = ran[0].degraded[stage].clone();
        let fix = match stage {
            "reflect" | "judge" | "dedupe" | "merge" | "promote" | "forget" | "skills" => {
                "the model server: `dream doctor` calls it once and names what fails (llm.base_url, \
                 the key in the variable llm.api_key_env names, llm.timeout_secs); nothing was lost, \
                 the stage fell back to its conservative default"
            }
            _ => "`dream log` shows each degraded cycle and why",
        };
        out.push(Warning::new(
            "degraded",
            format!(
                "stage {stage} degraded in each of the last {n} cycles that ran it; the latest: {reason}"
            ),
            fix.to_string(),
        ));
    }
}

fn missed(
    now: DateTime<Utc>,
    last: &[(String, DateTime<Utc>)],
    period_hours: u32,
    out: &mut Vec<Warning>,
) {
    let limit = Duration::hours(2 * i64::from(period_hours));
    for (kind, at) in last {
        let gap = now - *at;
        if gap <= limit {
            continue;
        }
        out.push(Warning::new(
            "missed",
            format!(
                "no {kind} cycle has finished since {} ({} days; two periods of heartbeat.period_hours = \
                 {period_hours} would be {} hours): the timer is not firing, or its runs fail",
                at.format("%Y-%m-%d %H:%M UTC"),
                gap.num_days(),
                2 * period_hours
            ),
            "`dream schedule status` and `dream doctor` show whether the timers are installed and \
             enabled (`systemctl --user list-timers 'dream-*'`, or `launchctl print`); a machine \
             that was off catches up at the next boot"
                .into(),
        ));
    }
}

fn sources(now: DateTime<Utc>, sources: &[Source], days: u32, out: &mut Vec<Warning>) {
    let limit = Duration::days(i64::from(days));
    for s in sources {
        let since = s.last_grew.unwrap_or(s.first_seen);
        let gap = now - since;
        if gap <= limit {
            continue;
        }
        let when = if s.last_grew.is_some() {
            format!("has not grown since {}", since.format("%Y-%m-%d"))
        } else {
            format!(
                "has given nothing since dream first read it on {}",
                since.format("%Y-%m-%d")
            )
        };
        out.push(Warning::new(
            "source",
            format!(
                "{} {when} ({} days; heartbeat.source_idle_days = {days})",
                s.name,
                gap.num_days()
            ),
            "is the agent still writing there? Check the path (inbox.path or [[inbox.sources]] in \
             dream.toml; `dream doctor` checks each one), or remove a source you no longer use"
                .into(),
        ));
    }
}

fn budget(reflecting: &[&Seen], n: usize, out: &mut Vec<Warning>) {
    let window: Vec<&Seen> = reflecting.iter().copied().take(n).collect();
    if window.len() < n || !window.iter().all(|c| c.budget_stopped > 0) {
        return;
    }
    let latest = window[0];
    out.push(Warning::new(
        "budget",
        format!(
            "the token budget stopped calls in each of {} (budget.tokens_per_cycle = {}; \
             {} clusters left pending in the latest): the backlog grows faster than it is consolidated",
            the_last(&window),
            latest.budget_cap,
            latest.pending_clusters
        ),
        "raise budget.tokens_per_cycle (the report's tokens line shows the spend), or lower \
         cluster.max_events_per_prompt; pending clusters are not lost, they wait"
            .into(),
    ));
}

/// The `unreflected` rule: events older than the window that no cycle has looked at
/// (`count`, the oldest at `oldest`). A cycle consolidates such history window by window
/// before the current one (the backfill); what is still left after it (the budget stopped
/// it, a call failed, a profile that never reflects) is never consolidated by the rolling
/// window, so it is said, with the fix.
pub fn unreflected(count: u64, oldest: Option<DateTime<Utc>>, window_days: u32) -> Option<Warning> {
    if count == 0 {
        return None;
    }
    let since = oldest
        .map(|t| format!(" (the oldest from {})", t.date_naive()))
        .unwrap_or_default();
    Some(Warning::new(
        "unreflected",
        format!(
            "{count} events older than the {window_days}-day window are not yet reflected on{since}: \
             the rolling window never reaches them again"
        ),
        "run `dream backfill` (it consolidates them window by window, oldest first, within \
         the budget; `--budget TOKENS` for more room), or let the next evening cycle go on \
         with them; nothing is lost meanwhile"
            .into(),
    ))
}

fn loss(cycles: &[Seen], out: &mut Vec<Warning>) {
    let Some(latest) = cycles.iter().find(|c| c.passes) else {
        return;
    };
    if latest.loss_held == 0 {
        return;
    }
    out.push(Warning::new(
        "loss",
        format!(
            "the loss guard held back {} archivals in cycle {} (more than retention.max_loss_share of \
             memory at once, or a protected fact's words lost)",
            latest.loss_held, latest.id
        ),
        "`dream log` lists each one and why. If memory is too small for what arrives (cycle after \
         cycle of this), raise retention.max_active_facts; if so much should go at once (you \
         lowered it), run `dream run --allow-loss` once; otherwise it waits for later cycles"
            .into(),
    ));
}

fn recall(cycles: &[Seen], n: usize, out: &mut Vec<Warning>) {
    let quizzed: Vec<(&Seen, u64, u64)> = cycles
        .iter()
        .filter_map(|c| {
            c.quiz
                .filter(|(_, asked)| *asked > 0)
                .map(|(r, a)| (c, r, a))
        })
        .take(n + 1)
        .collect();
    let Some(((latest, right, asked), earlier)) = quizzed.split_first() else {
        return;
    };
    if earlier.is_empty() {
        return;
    }
    let share = |r: u64, a: u64| r as f64 / a as f64;
    let now = share(*right, *asked);
    let floor = earlier
        .iter()
        .map(|(_, r, a)| share(*r, *a))
        .fold(f64::INFINITY, f64::min);
    if now >= floor {
        return;
    }
    out.push(Warning::new(
        "recall",
        format!(
            "the recall quiz of cycle {} answered {right} of {asked} questions rightly ({:.0}%), \
             below each of the {} quizzes before it (lowest {:.0}%): memory no longer answers \
             what it held",
            latest.id,
            now * 100.0,
            earlier.len(),
            floor * 100.0
        ),
        "`dream log` shows the failing questions, each naming its fact and the mutation that \
         touched it, and `dream explain <fact>` shows them for one fact; if a mutation lost \
         words, `dream undo <fact>` (or `dream undo --cycle <id>`) brings the fact back; \
         `dream quiz` asks again"
            .into(),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_recall_quiz_below_the_last_ones_warns_with_the_fix() {
        let quizzed = |day: u32, right: u64, asked: u64| {
            evening(
                day,
                json!({"plan": {"reflect": false}, "quiz": {"asked": asked, "answered": right,
                       "forgotten": 0, "not_recalled": 0}}),
            )
        };
        let cfg = Heartbeat::default();
        let warned = |cycles: Vec<Seen>| {
            let w = check(at("2026-11-06T22:30:00Z"), &inputs(cycles), &cfg);
            w.into_iter()
                .filter(|w| w.rule == "recall")
                .collect::<Vec<_>>()
        };
        let w = warned(vec![
            quizzed(6, 7, 10),
            quizzed(5, 10, 10),
            quizzed(4, 9, 10),
        ]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].cause.contains("7 of 10") && w[0].cause.contains("lowest 90%"),
            "{}",
            w[0].cause
        );
        assert!(w[0].fix.contains("dream explain <fact>"), "{}", w[0].fix);
        assert!(warned(vec![
            quizzed(6, 9, 10),
            quizzed(5, 10, 10),
            quizzed(4, 9, 10)
        ])
        .is_empty());
        assert!(
            warned(vec![quizzed(6, 1, 10)]).is_empty(),
            "nothing to compare with yet"
        );
        // An older report without a quiz reads as none, and a round trip through the
        // essentials keeps the counts.
        let e = essentials(
            &json!({"quiz": {"asked": 4, "answered": 3, "forgotten": 1, "not_recalled": 1, "failures": []}}),
        );
        assert_eq!(
            Seen::from_report("c", "evening", at("2026-11-06T22:00:00Z"), &e).quiz,
            Some((4, 5))
        );
        assert_eq!(
            Seen::from_report("c", "evening", at("2026-11-06T22:00:00Z"), &json!({})).quiz,
            None
        );
    }

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn evening(day: u32, r: Value) -> Seen {
        let now = at(&format!("2026-11-{day:02}T22:00:00Z"));
        Seen::from_report(&format!("c{day}"), "evening", now, &r)
    }

    fn reflected(new: u64, promoted: u64) -> Value {
        json!({"plan": {"reflect": true, "passes": true, "digest": false},
               "window": {"new_events": new, "reflected": 2},
               "candidates": {"proposed": promoted, "promoted": promoted}})
    }

    fn inputs(cycles: Vec<Seen>) -> Inputs {
        Inputs {
            cycles,
            ..Inputs::default()
        }
    }

    fn rules(w: &[Warning]) -> Vec<&str> {
        w.iter().map(|w| w.rule.as_str()).collect()
    }

    #[test]
    fn quiet_needs_n_reflecting_cycles_in_a_row_with_new_events_and_nothing_kept() {
        let cfg = Heartbeat::default();
        let now = at("2026-11-06T23:00:00Z");
        let quiet3 = vec![
            evening(6, reflected(40, 0)),
            evening(5, reflected(30, 0)),
            evening(4, reflected(20, 0)),
            evening(3, reflected(20, 2)),
        ];
        let w = check(now, &inputs(quiet3.clone()), &cfg);
        assert_eq!(rules(&w), ["quiet"]);
        assert!(
            w[0].cause.contains("read 90 new events and kept nothing"),
            "{}",
            w[0].cause
        );
        // Broken by a cycle that kept something, and not counted by one with nothing new.
        let mut two = quiet3.clone();
        two[1] = evening(5, reflected(30, 1));
        assert!(check(now, &inputs(two), &cfg).is_empty());
        let mut idle = quiet3.clone();
        idle[0] = evening(6, reflected(0, 0));
        assert!(check(now, &inputs(idle), &cfg).is_empty());
        let thin = Heartbeat {
            quiet_min_events: 91,
            ..cfg
        };
        assert!(
            check(now, &inputs(quiet3), &thin).is_empty(),
            "a trickle is not a failure"
        );
    }

    #[test]
    fn an_episodes_count_counts_as_kept() {
        let cfg = Heartbeat::default();
        let mut r = reflected(40, 0);
        r["candidates"]["episodes"] = json!(1);
        let cycles = vec![
            evening(6, r),
            evening(5, reflected(30, 0)),
            evening(4, reflected(20, 0)),
        ];
        assert!(check(at("2026-11-06T23:00:00Z"), &inputs(cycles), &cfg).is_empty());
        let mut r = reflected(40, 0);
        r["episodes_lines"] = json!(2);
        assert_eq!(
            Seen::from_report("c", "evening", at("2026-11-06T23:00:00Z"), &r).kept,
            2
        );
    }

    #[test]
    fn a_gate_refusing_nearly_everything_is_named() {
        let cfg = Heartbeat::default();
        let refused = |promoted: u64| {
            let mut r = reflected(50, promoted);
            r["candidates"]["proposed"] = json!(10);
            r["decisions"] = json!((promoted..10)
                .map(|_| json!({"route": "refused", "gate": "coverage"}))
                .collect::<Vec<_>>());
            r
        };
        // One cycle kept a fact, so this is not "quiet", yet coverage refused 29 of 30.
        let cycles = vec![
            evening(6, refused(0)),
            evening(5, refused(1)),
            evening(4, refused(0)),
        ];
        let w = check(at("2026-11-06T23:00:00Z"), &inputs(cycles.clone()), &cfg);
        assert_eq!(rules(&w), ["gate"]);
        assert!(
            w[0].cause.starts_with("the coverage gate refused 29 of the 30 candidates (97%) of the last 3 evening cycles"),
            "{}",
            w[0].cause
        );
        assert!(w[0].fix.contains("paraphrases"), "{}", w[0].fix);
        let strict = Heartbeat {
            gate_min_candidates: 31,
            ..cfg
        };
        assert!(check(at("2026-11-06T23:00:00Z"), &inputs(cycles), &strict).is_empty());
    }

    #[test]
    fn a_stage_degraded_only_counts_cycles_that_ran_it() {
        let cfg = Heartbeat::default();
        let judge = |day| {
            let mut r = reflected(5, 1);
            r["degraded"] =
                json!([{"stage": "judge", "reason": "the server refused the connection"}]);
            evening(day, r)
        };
        let morning = Seen::from_report(
            "m",
            "morning",
            at("2026-11-06T07:00:00Z"),
            &json!({"plan": {"reflect": false, "passes": false, "digest": true}}),
        );
        let cycles = vec![judge(6), morning, judge(5), judge(4)];
        let w = check(at("2026-11-06T23:00:00Z"), &inputs(cycles.clone()), &cfg);
        assert_eq!(rules(&w), ["degraded"]);
        assert!(w[0]
            .cause
            .contains("stage judge degraded in each of the last 3"));
        assert!(check(
            at("2026-11-06T23:00:00Z"),
            &inputs(cycles[..3].to_vec()),
            &cfg
        )
        .is_empty());
    }

    #[test]
    fn a_kind_not_run_for_two_periods_and_a_source_not_grown_warn() {
        let cfg = Heartbeat::default();
        let i = Inputs {
            last_of_kind: vec![
                ("evening".into(), at("2026-11-03T22:00:00Z")),
                ("morning".into(), at("2026-11-06T07:00:00Z")),
            ],
            sources: vec![
                Source {
                    name: "inbox events/".into(),
                    first_seen: at("2026-10-01T22:00:00Z"),
                    last_grew: Some(at("2026-11-05T22:00:00Z")),
                },
                Source {
                    name: "codex ~/.codex/sessions".into(),
                    first_seen: at("2026-10-01T22:00:00Z"),
                    last_grew: Some(at("2026-10-20T22:00:00Z")),
                },
            ],
            ..Inputs::default()
        };
        let w = check(at("2026-11-06T23:00:00Z"), &i, &cfg);
        assert_eq!(rules(&w), ["missed", "source"]);
        assert!(
            w[0].cause
                .starts_with("no evening cycle has finished since 2026-11-03 22:00 UTC (3 days"),
            "{}",
            w[0].cause
        );
        assert!(w[1]
            .cause
            .starts_with("codex ~/.codex/sessions has not grown since 2026-10-20 (17 days"));
        let off = Heartbeat {
            period_hours: 0,
            source_idle_days: 0,
            ..cfg
        };
        assert!(check(at("2026-11-06T23:00:00Z"), &i, &off).is_empty());
    }

    #[test]
    fn the_essentials_of_a_report_are_seen_as_the_report() {
        let mut r = reflected(40, 2);
        r["decisions"] = json!([{"route": "refused", "gate": "coverage", "text": "long"},
                                {"route": "promoted", "text": "kept"}]);
        r["degraded"] = json!([{"stage": "judge", "reason": "down"}]);
        r["tokens"] = json!({"cap": 10, "refused_calls": 1, "spent": 9});
        r["passes"] = json!([{"pass": "forget", "held": 2, "mutations": [1, 2, 3]}]);
        r["skills"] = json!({"drafted": 1, "queued": 0, "decisions": []});
        let now = at("2026-11-06T22:00:00Z");
        let e = essentials(&r);
        assert_eq!(
            Seen::from_report("c", "evening", now, &e),
            Seen::from_report("c", "evening", now, &r)
        );
        assert!(e.get("decisions").is_none(), "no row is stored twice");
        assert_eq!(e["refused_by_gate"], json!({"coverage": 1}));
        // A report that counts its refusals (and lists only some rows) is read by its
        // counts, not its rows.
        let mut counted = r.clone();
        counted["refused_by_gate"] = json!({"coverage": 7, "salience": 2});
        counted["decisions"] = json!([]);
        let seen = Seen::from_report("c", "evening", now, &counted);
        assert_eq!(seen.refused_by_gate.get("coverage"), Some(&7));
        assert_eq!(
            seen,
            Seen::from_report("c", "evening", now, &essentials(&counted))
        );
    }

    #[test]
    fn a_failed_cycle_warns_until_one_of_its_kind_finishes() {
        let cfg = Heartbeat::default();
        let failed = Seen::from_report(
            "f",
            "evening",
            at("2026-11-06T22:00:00Z"),
            &json!({"failed": "opening the state: disk I/O error", "exit_code": 1}),
        );
        let w = check(
            at("2026-11-06T23:00:00Z"),
            &inputs(vec![failed.clone(), evening(5, reflected(5, 1))]),
            &cfg,
        );
        assert_eq!(rules(&w), ["failed"]);
        assert!(w[0]
            .cause
            .contains("failed with exit code 1: opening the state"));
        let w = check(
            at("2026-11-06T23:00:00Z"),
            &inputs(vec![evening(6, reflected(5, 1)), failed]),
            &cfg,
        );
        assert!(w.is_empty());
        assert_eq!(lines_added("a\nb\n", "a\nb\nc\nb\n"), 2);
    }

    #[test]
    fn a_budget_stopping_calls_every_cycle_and_a_loss_guard_hold_warn() {
        let cfg = Heartbeat::default();
        let stopped = |day| {
            let mut r = reflected(50, 1);
            r["tokens"] = json!({"cap": 1000, "refused_calls": 4});
            r["window"]["pending"] = json!(4);
            evening(day, r)
        };
        let w = check(
            at("2026-11-06T23:00:00Z"),
            &inputs(vec![stopped(6), stopped(5), stopped(4)]),
            &cfg,
        );
        assert_eq!(rules(&w), ["budget"]);
        assert!(w[0]
            .cause
            .contains("budget.tokens_per_cycle = 1000; 4 clusters left pending"));
        let mut r = reflected(5, 1);
        r["passes"] = json!([{"pass": "forget", "held": 2}]);
        let w = check(
            at("2026-11-06T23:00:00Z"),
            &inputs(vec![evening(6, r)]),
            &cfg,
        );
        assert_eq!(rules(&w), ["loss"]);
        assert!(w[0].cause.contains("held back 2 archivals"));
    }
}
