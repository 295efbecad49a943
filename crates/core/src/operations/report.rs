//! The cycle report (SPEC S4 step 12): one value that says what a cycle did, printed as a
//! table for people or as one JSON object (`--json`), stored with the cycle record, and
//! summarised in commit messages. Every count balances:
//! `proposed = promoted + episodes + queued + reinforced + refused`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::llm::budget::Spend;
use crate::schema::excerpt;
use crate::sources::ingested::Ingested;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub cycle: String,
    pub kind: String,
    pub now: DateTime<Utc>,
    pub dry_run: bool,
    pub provider: String,
    pub embedder: String,
    pub ingest: Ingested,
    pub embedded: usize,
    pub window: Window,
    pub candidates: Counts,
    /// One row per candidate, the first [`MAX_DECISION_ROWS`] of the cycle (add them with
    /// [`Report::decide`]); every candidate's record is in the state database and its line
    /// in the stage's commit message, whatever this list holds.
    pub decisions: Vec<DecisionRow>,
    /// Candidates decided beyond [`MAX_DECISION_ROWS`], not listed in `decisions`.
    #[serde(skip_serializing_if = "is_zero")]
    pub decisions_not_listed: usize,
    /// Refused candidates by the gate that refused them, every one of the cycle's (the
    /// heartbeat's refusal rules read this, not the rows).
    pub refused_by_gate: BTreeMap<String, usize>,
    /// Candidates the cycle added: a cited turn's own words beside a model's wording the
    /// events do not fully hold (counted in `candidates` too).
    pub own_words: usize,
    /// Episodes that expired to the archive (not said again for `episodes.retention_days`,
    /// or the oldest over `episodes.max_facts`).
    pub episodes_expired: usize,
    /// The maintenance passes (dedupe, merge, promote, forget), in the order they ran.
    pub passes: Vec<PassSummary>,
    pub tokens: Tokens,
    /// Stages that fell back to a conservative default, and why.
    pub degraded: Vec<Degraded>,
    pub commits: Vec<CommitRow>,
    pub notes: Vec<String>,
    pub timings_ms: BTreeMap<String, u64>,
    /// Recurring procedures and the skill drafts made of them (SPEC S10).
    pub skills: crate::skills::SkillsReport,
    /// The digest this cycle wrote (or found unchanged), relative to the repo.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Which stages the cycle ran (the heartbeat counts streaks over the cycles that ran a
    /// stage).
    pub plan: Ran,
    /// Lines the cycle's own stages (not the maintenance passes) added to
    /// memory/episodes.md: episodes kept, however they were written.
    pub episodes_lines: usize,
    /// What the heartbeat warns about after this cycle (`heartbeat.rs`); `dream run` exits
    /// with the warning code when there is any.
    pub warnings: Vec<crate::operations::heartbeat::Warning>,
    /// The recall quiz after the cycle (`quiz.rs`); `None` when none ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quiz: Option<crate::recall::quiz::Quiz>,
    /// History older than the window that this cycle consolidated (`None` when there was
    /// none left to do).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backfill: Option<Backfill>,
    /// The review queue after this cycle (`review.max_new_cards`, issue 28).
    pub review: Queue,
}

/// The rows a report lists. A first run's backfill over a year decides hundreds of
/// thousands of candidates; listing each held the whole list in memory twice over (the
/// rows, then their JSON) and gave a table nobody reads. Beyond this, the report counts the
/// rest, and `dream log` and `dream explain` show each.
pub const MAX_DECISION_ROWS: usize = 2000;

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Report {
    /// Record one candidate's decision: its refusal counted by gate, its row listed while
    /// the report lists fewer than [`MAX_DECISION_ROWS`].
    pub fn decide(&mut self, row: DecisionRow) {
        if row.route == "refused" {
            let gate = row.gate.clone().unwrap_or_else(|| "unknown".into());
            *self.refused_by_gate.entry(gate).or_insert(0) += 1;
        }
        if self.decisions.len() < MAX_DECISION_ROWS {
            self.decisions.push(row);
        } else {
            self.decisions_not_listed += 1;
        }
    }
}

/// What a cycle did to the review queue: the cards it queued (new ones and ones that had
/// waited), how many wait for room after it, and how many waiting ones expired.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Queue {
    /// Cards added to `review/` by this cycle.
    pub new_cards: usize,
    /// Cards pending in `review/` after the cycle.
    pub pending: usize,
    /// Cards waiting for room (in the state database), best first when room opens.
    pub waiting: usize,
    /// Waiting cards that expired (the episode rules: `episodes.retention_days`, then the
    /// oldest over `episodes.max_facts`).
    pub expired: usize,
}

/// The consolidation of history older than the window, window by window, oldest first: what
/// one cycle did of it.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Backfill {
    /// Windows of `cluster.window_days` this cycle finished.
    pub windows: usize,
    /// Events of them looked at for the first time.
    pub new_events: usize,
    /// Prompts reflected on, and left pending (the budget reached, a call failed).
    pub reflected: usize,
    pub pending: usize,
    /// The token budget stopped the backfill: the rest waits for the next cycle.
    pub stopped: bool,
    /// Where the backfill has come to (the start of the first window not yet done), when
    /// history before the window is left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
    /// Events older than the window no cycle has looked at, after this cycle.
    pub left: u64,
}

/// The stages a cycle ran.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Ran {
    pub reflect: bool,
    pub passes: bool,
    pub digest: bool,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Window {
    pub days: u32,
    pub events: usize,
    pub clusters: usize,
    /// Clusters holding at least one event no cycle has reflected on.
    pub with_new: usize,
    /// Reflect prompts: one per cluster with new events, or several for a cluster with more
    /// new events than `cluster.max_events_per_prompt`, plus the single-mention calls.
    pub prompts: usize,
    /// Events this cycle looked at for the first time (clustered, found to be noise, or
    /// passed over by the single-mention pre-filter).
    pub new_events: usize,
    /// New events no cluster holds that may say something (owner messages with a sentence
    /// that is not chatter), shown to the reflector per session, and in how many calls
    /// (counted in `prompts`).
    pub singles: usize,
    pub single_calls: usize,
    /// Events shown to the reflector in the calls that returned (an event shown in two
    /// calls counts twice; earlier events shown beside new ones count too).
    pub shown: usize,
    /// Prompts reflected on (`reflected + pending = prompts`).
    pub reflected: usize,
    /// Prompts left for the next cycle (budget reached, the call failed, was not started
    /// after the server was found unavailable, or was held).
    pub pending: usize,
    /// Of those, held for failing the same way in the last cycles (see `llm::plan`).
    pub held: usize,
    /// New events a model saw in a reflected prompt (marked as seen).
    pub seen: usize,
    /// New events not sent to the model: none of their sentences scores
    /// `salience::SEND` (issue 28; with a model only).
    pub below_send: usize,
    /// Reflect calls that failed in a way that would repeat, and those held for it (see
    /// `llm::plan`); `None` when the cycle did not reflect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failures: Option<Vec<crate::llm::plan::Failure>>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Counts {
    pub proposed: usize,
    pub promoted: usize,
    /// Kept in the episodes (memory/episodes.md).
    pub episodes: usize,
    pub queued: usize,
    pub reinforced: usize,
    pub refused: usize,
}

impl Counts {
    pub fn balances(&self) -> bool {
        self.proposed
            == self.promoted + self.episodes + self.queued + self.reinforced + self.refused
    }

    /// Add another stage's counts to these.
    pub fn merge(&mut self, other: &Counts) {
        self.proposed += other.proposed;
        self.promoted += other.promoted;
        self.episodes += other.episodes;
        self.queued += other.queued;
        self.reinforced += other.reinforced;
        self.refused += other.refused;
    }

    pub fn add(&mut self, route: &str) {
        self.proposed += 1;
        match route {
            "promoted" => self.promoted += 1,
            "episode" => self.episodes += 1,
            "queued" => self.queued += 1,
            "reinforced" => self.reinforced += 1,
            _ => self.refused += 1,
        }
    }
}

/// What happened to one candidate.
#[derive(Debug, Clone, Serialize)]
pub struct DecisionRow {
    /// The candidate id (`k_...`).
    pub candidate: String,
    pub route: String,
    /// The fact or card it became or reinforced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub text: String,
    pub block: String,
    pub category: String,
    pub reason: String,
    /// The proposer's own reason (the model's, or the offline reflector's).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub proposer: String,
    /// For a refused candidate, the gate that refused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
}

/// What one maintenance pass did. Model proposals balance
/// (`proposed = accepted + refused`); engine-enforced mutations are counted apart.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PassSummary {
    pub pass: String,
    /// Mutations the model proposed.
    pub proposed: usize,
    /// Model proposals that passed the gates and were applied.
    pub accepted: usize,
    /// Model proposals the gates refused, each with its reason.
    pub refused: usize,
    /// Mutations the engine applied on its own (backstops).
    pub engine: usize,
    /// Engine backstops the loss guard held back (counted apart from the model's).
    pub engine_refused: usize,
    /// Mutations, the model's and the engine's, the loss guard held back: over
    /// `retention.max_loss_share`, or a protected fact's words lost.
    pub held: usize,
    pub mutations: Vec<MutationRow>,
}

impl PassSummary {
    pub fn balances(&self) -> bool {
        self.proposed == self.accepted + self.refused
    }
}

/// One mutation of a pass, as the report lists it.
#[derive(Debug, Clone, Serialize)]
pub struct MutationRow {
    /// `accepted`, `engine` or `refused`.
    pub verdict: String,
    /// `drop`, `merge`, `promote` or `forget`.
    pub op: String,
    pub item: String,
    /// What the mutation does, with its measured values.
    pub detail: String,
    /// The proposer's reason, and for a refusal why it was refused.
    pub reason: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Tokens {
    pub cap: u64,
    /// Tokens charged: the usage servers reported, else the estimate (see `llm::budget`).
    pub spent: u64,
    /// Calls a server answered (or may have: timeouts).
    pub calls: u64,
    /// Calls that never reached a server (connection refused): not charged.
    pub unanswered: u64,
    /// Calls not started because they could have crossed the cap.
    pub refused_calls: u64,
    /// Prompt tokens the server reported as cached (see `Usage`): charged in full unless
    /// `llm.cached_discount` waives a share of them.
    pub cached: u64,
    /// Of the cached tokens, those `llm.cached_discount` waived (not in `spent`).
    pub waived: u64,
    /// Where the tokens went: each stage's calls and charge (reflect, judge, the passes,
    /// skills), with the prompt, completion and cached tokens servers reported.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub stages: BTreeMap<String, crate::llm::budget::StageSpend>,
    /// What the cycle learnt about the model's tokenizer, for the next cycle's estimates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
}

/// The ratio of reported to plain estimated prompt tokens a model showed (the largest).
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    /// The provider's tokenizer key (model and server).
    pub model: String,
    pub ratio: f64,
}

impl Tokens {
    pub fn from_spend(cap: u64, s: Spend) -> Tokens {
        Tokens {
            cap,
            spent: s.spent,
            calls: s.calls,
            unanswered: s.unanswered,
            refused_calls: s.refused,
            cached: s.cached,
            waived: s.waived,
            stages: BTreeMap::new(),
            calibration: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Degraded {
    pub stage: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CommitRow {
    pub stage: String,
    pub commit: String,
    pub subject: String,
}

fn held(n: usize) -> String {
    if n > 0 {
        format!(" ({n} held: see degraded stages)")
    } else {
        String::new()
    }
}

impl Report {
    /// The report as a table a person can scan.
    pub fn render(&self) -> String {
        let mut o = String::new();
        self.render_header(&mut o);
        self.render_ingest(&mut o);
        self.render_embed(&mut o);
        self.render_window(&mut o);
        self.render_candidates(&mut o);
        self.render_review(&mut o);
        self.render_passes(&mut o);
        self.render_skills(&mut o);
        self.render_tokens(&mut o);
        self.render_quiz(&mut o);
        self.render_decisions(&mut o);
        self.render_mutations(&mut o);
        self.render_degraded(&mut o);
        self.render_digest_and_notes(&mut o);
        self.render_warnings(&mut o);
        self.render_commits(&mut o);
        o
    }

    /// The header section: the cycle, then the provider and embedder.
    fn render_header(&self, o: &mut String) {
        let _ = writeln!(
            o,
            "dream {} cycle {}{}",
            self.kind,
            self.cycle,
            if self.dry_run {
                " (dry run: nothing was written)"
            } else {
                ""
            }
        );
        let _ = writeln!(
            o,
            "  provider {}, embedder {}",
            self.provider, self.embedder
        );
    }

    /// The ingest section: what was read, and what was held back or skipped.
    fn render_ingest(&self, o: &mut String) {
        let i = &self.ingest;
        let _ = writeln!(
            o,
            "  ingest      {} new events from {} files ({} duplicates, {} quarantined, {} with secrets redacted)",
            i.new_events, i.files, i.duplicates, i.quarantined, i.redacted
        );
        if i.partial_bytes > 0 {
            let _ = writeln!(
                o,
                "              {} bytes of a half-written line left for the next run",
                i.partial_bytes
            );
        }
        // Lines that can never be events whatever is appended (an endless last line) are
        // named, not only counted: otherwise the file looks merely slow.
        for q in i
            .quarantine
            .iter()
            .filter(|q| q.reason.contains("no newline"))
        {
            let _ = writeln!(
                o,
                "              quarantined {}:{}: {}",
                q.file, q.line, q.reason
            );
        }
        for r in &i.restarted {
            let _ = writeln!(o, "              {r}");
        }
        for r in &i.skipped {
            let _ = writeln!(o, "              not read: {r}");
        }
        for s in &i.sources {
            let _ = writeln!(o, "              {}", s.summary());
        }
    }

    /// The embed section, with the backfill line when older windows were done.
    fn render_embed(&self, o: &mut String) {
        let _ = writeln!(o, "  embed       {} new vectors", self.embedded);
        if let Some(b) = &self.backfill {
            let _ = writeln!(
                o,
                "  backfill    {} older windows done ({} events looked at, {} prompts reflected, {} left pending){}",
                b.windows,
                b.new_events,
                b.reflected,
                b.pending,
                match (b.left, b.until) {
                    (0, _) => String::from(": all history before the window is consolidated"),
                    (n, Some(u)) if b.stopped => format!(
                        "; the token budget stopped it at {}: {n} older events wait for the next cycle",
                        u.date_naive()
                    ),
                    (n, _) => format!("; {n} older events not yet reflected on"),
                }
            );
        }
    }

    /// The cluster, reflect and salience section of the window.
    fn render_window(&self, o: &mut String) {
        let w = &self.window;
        let _ = writeln!(
            o,
            "  cluster     {} events in the {}-day window, {} clusters, {} with new events",
            w.events, w.days, w.clusters, w.with_new
        );
        let cluster_prompts = w.prompts.saturating_sub(w.single_calls);
        if cluster_prompts > w.with_new || w.single_calls > 0 {
            let _ = writeln!(
                o,
                "  reflect     {} prompts ({} for {} clusters, {} for {} single mentions): {} reflected ({} new events seen), {} left pending{}",
                w.prompts,
                cluster_prompts,
                w.with_new,
                w.single_calls,
                w.singles,
                w.reflected,
                w.seen,
                w.pending,
                held(w.held)
            );
        } else {
            let _ = writeln!(
                o,
                "  reflect     {} clusters reflected, {} left pending{}",
                w.reflected,
                w.pending,
                held(w.held)
            );
        }
        if w.below_send > 0 {
            let _ = writeln!(
                o,
                "  salience    {} new events not sent to the model (no sentence scores salience::SEND)",
                w.below_send
            );
        }
    }

    /// The candidates section, with the episodes that expired.
    fn render_candidates(&self, o: &mut String) {
        let c = &self.candidates;
        let _ = writeln!(
            o,
            "  candidates  {} proposed = {} promoted + {} episodes + {} queued + {} reinforced + {} refused",
            c.proposed, c.promoted, c.episodes, c.queued, c.reinforced, c.refused
        );
        if self.episodes_expired > 0 {
            let _ = writeln!(
                o,
                "  episodes    {} expired to the archive",
                self.episodes_expired
            );
        }
    }

    /// The review section: new, pending and waiting cards.
    fn render_review(&self, o: &mut String) {
        let q = &self.review;
        if q.new_cards > 0 || q.waiting > 0 || q.expired > 0 {
            let _ = writeln!(
                o,
                "  review      {} new cards queued, {} pending, {} waiting for room{}",
                q.new_cards,
                q.pending,
                q.waiting,
                if q.expired > 0 {
                    format!(" ({} waiting ones expired)", q.expired)
                } else {
                    String::new()
                }
            );
        }
    }

    /// The passes section: idle in one line, or a line per pass.
    fn render_passes(&self, o: &mut String) {
        let idle = self
            .passes
            .iter()
            .all(|p| p.proposed == 0 && p.engine == 0 && p.engine_refused == 0);
        if idle && !self.passes.is_empty() {
            let names: Vec<&str> = self.passes.iter().map(|p| p.pass.as_str()).collect();
            let failed: Vec<&str> = names
                .iter()
                .copied()
                .filter(|n| self.degraded.iter().any(|d| d.stage == *n))
                .collect();
            if failed.is_empty() {
                let _ = writeln!(o, "  passes      nothing to do ({})", names.join(", "));
            } else {
                let _ = writeln!(
                    o,
                    "  passes      nothing applied; {} degraded (see degraded stages)",
                    failed.join(", ")
                );
            }
        }
        for (n, p) in self.passes.iter().enumerate().filter(|_| !idle) {
            let _ = writeln!(
                o,
                "  {:<10}  {:<8} {} proposed = {} accepted + {} refused; {} engine-enforced{}",
                if n == 0 { "passes" } else { "" },
                p.pass,
                p.proposed,
                p.accepted,
                p.refused,
                p.engine,
                if p.held > 0 {
                    format!("; {} held by the loss guard", p.held)
                } else {
                    String::new()
                }
            );
        }
    }

    /// The skills section: recurring procedures and what became of each.
    fn render_skills(&self, o: &mut String) {
        let sk = &self.skills;
        if sk.recurring > 0 {
            let _ = writeln!(
                o,
                "  skills      {} recurring procedures: {} covered, {} drafted, {} queued, {} refused, {} pending",
                sk.recurring,
                sk.covered.len(),
                sk.drafted,
                sk.queued,
                sk.refused,
                sk.pending
            );
            for d in &sk.decisions {
                let target = d.target.as_deref().unwrap_or(&d.procedure);
                let why = if d.reason.is_empty() {
                    String::new()
                } else {
                    format!(" -> {}", d.reason)
                };
                let _ = writeln!(o, "              {} {target}{why}", d.route);
            }
        }
    }

    /// The tokens section: spent against the cap, by stage, and any overrun.
    fn render_tokens(&self, o: &mut String) {
        let t = &self.tokens;
        let _ = writeln!(
            o,
            "  tokens      {} of {} ({} calls{}{})",
            t.spent,
            t.cap,
            t.calls,
            if t.unanswered > 0 {
                format!(", {} unanswered: server not reached", t.unanswered)
            } else {
                String::new()
            },
            if t.refused_calls > 0 {
                format!(", {} not started: budget reached", t.refused_calls)
            } else {
                String::new()
            }
        );
        if !t.stages.is_empty() {
            let by: Vec<String> = t
                .stages
                .iter()
                .map(|(stage, s)| format!("{stage} {} ({} calls)", s.spent, s.calls))
                .collect();
            let cached = match (t.cached, t.waived) {
                (0, _) => String::new(),
                (c, 0) => format!("; {c} of the prompt tokens were cached by the server"),
                (c, w) => format!(
                    "; {c} of the prompt tokens were cached by the server, {w} of them not charged (llm.cached_discount)"
                ),
            };
            let _ = writeln!(o, "              {}{cached}", by.join(", "));
        }
        if t.spent > t.cap {
            let _ = writeln!(
                o,
                "              over the cap by {}: the server counted more tokens than estimated",
                t.spent - t.cap
            );
        }
    }

    /// The quiz section and its failures.
    fn render_quiz(&self, o: &mut String) {
        if let Some(q) = &self.quiz {
            let _ = writeln!(o, "  quiz        {} ({} ms)", q.summary.render(), q.ms);
            for f in &q.failures {
                let _ = writeln!(o, "              failed: {}", f.line());
            }
        }
    }

    /// The decisions table: one row per candidate and its reason.
    fn render_decisions(&self, o: &mut String) {
        if !self.decisions.is_empty() {
            let _ = writeln!(
                o,
                "\n  {:<10}  {:<11}  {:<22}  text / reason",
                "route", "id", "block/category"
            );
            for d in &self.decisions {
                let id = d.target.as_deref().unwrap_or(&d.candidate);
                let _ = writeln!(
                    o,
                    "  {:<10}  {:<11}  {:<22}  {}",
                    d.route,
                    id,
                    format!("{}/{}", d.block, d.category),
                    excerpt(&d.text, 70)
                );
                if !d.reason.is_empty() {
                    let _ = writeln!(o, "  {:<10}  {:<11}  {:<22}  -> {}", "", "", "", d.reason);
                }
            }
            if self.decisions_not_listed > 0 {
                let _ = writeln!(
                    o,
                    "  ... and {} more candidates, counted above and not listed here: `dream log` shows each with its reason",
                    self.decisions_not_listed
                );
            }
        }
    }

    /// The mutations table: one row per pass mutation and its reason.
    fn render_mutations(&self, o: &mut String) {
        let rows: Vec<(&str, &MutationRow)> = self
            .passes
            .iter()
            .flat_map(|p| p.mutations.iter().map(move |m| (p.pass.as_str(), m)))
            .collect();
        if !rows.is_empty() {
            let _ = writeln!(
                o,
                "\n  {:<8}  {:<8}  {:<11}  what / reason",
                "pass", "verdict", "id"
            );
            for (pass, m) in rows {
                let _ = writeln!(
                    o,
                    "  {:<8}  {:<8}  {:<11}  {}",
                    pass,
                    m.verdict,
                    m.item,
                    excerpt(&m.detail, 90)
                );
                if !m.reason.is_empty() {
                    let _ = writeln!(
                        o,
                        "  {:<8}  {:<8}  {:<11}  -> {}",
                        "",
                        "",
                        "",
                        excerpt(&m.reason, 140)
                    );
                }
            }
        }
    }

    /// The degraded stages section.
    fn render_degraded(&self, o: &mut String) {
        if !self.degraded.is_empty() {
            let _ = writeln!(o, "\n  degraded stages:");
            for d in &self.degraded {
                let _ = writeln!(o, "    {}: {}", d.stage, d.reason);
            }
        }
    }

    /// The digest line and the notes.
    fn render_digest_and_notes(&self, o: &mut String) {
        if let Some(d) = &self.digest {
            let _ = writeln!(o, "  digest      {d}");
        }
        for n in &self.notes {
            let _ = writeln!(o, "  note: {n}");
        }
    }

    /// The heartbeat warnings section.
    fn render_warnings(&self, o: &mut String) {
        if !self.warnings.is_empty() {
            let _ = writeln!(o, "\n  heartbeat warnings (dream status shows them too):");
            for w in &self.warnings {
                let _ = writeln!(o, "    [{}] {}", w.rule, w.cause);
                let _ = writeln!(o, "      fix: {}", w.fix);
            }
        }
    }

    /// The commits section, or why there was none.
    fn render_commits(&self, o: &mut String) {
        if !self.commits.is_empty() {
            let _ = writeln!(o, "\n  commits:");
            for cm in &self.commits {
                let _ = writeln!(
                    o,
                    "    {} {}",
                    &cm.commit[..cm.commit.len().min(10)],
                    cm.subject
                );
            }
        } else if !self.dry_run {
            let _ = writeln!(o, "\n  no commit: nothing in memory changed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: usize, route: &str, gate: Option<&str>) -> DecisionRow {
        DecisionRow {
            candidate: format!("k_{i:08x}"),
            route: route.into(),
            target: None,
            text: format!("Statement number {i}."),
            block: "human".into(),
            category: "identity".into(),
            reason: String::new(),
            proposer: String::new(),
            gate: gate.map(str::to_string),
        }
    }

    #[test]
    fn a_report_lists_the_first_rows_and_counts_every_refusal() {
        let mut r = Report::default();
        let n = MAX_DECISION_ROWS + 500;
        for i in 0..n {
            match i % 3 {
                0 => r.decide(row(i, "refused", Some("salience"))),
                1 => r.decide(row(i, "refused", None)),
                _ => r.decide(row(i, "episode", None)),
            }
        }
        assert_eq!(r.decisions.len(), MAX_DECISION_ROWS);
        assert_eq!(r.decisions_not_listed, 500);
        assert_eq!(
            r.decisions[0].candidate, "k_00000000",
            "the first rows, in order"
        );
        let refused: usize = r.refused_by_gate.values().sum();
        assert_eq!(refused, (0..n).filter(|i| i % 3 != 2).count());
        assert_eq!(
            r.refused_by_gate["salience"],
            (0..n).filter(|i| i % 3 == 0).count()
        );
        assert_eq!(
            r.refused_by_gate["unknown"],
            (0..n).filter(|i| i % 3 == 1).count()
        );
        let text = r.render();
        assert!(
            text.contains("... and 500 more candidates, counted above and not listed here: `dream log` shows each"),
            "{text}"
        );
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["decisions_not_listed"], 500);
    }

    #[test]
    fn a_report_under_the_limit_lists_every_row_and_says_nothing_more() {
        let mut r = Report::default();
        r.decide(row(1, "promoted", None));
        assert_eq!(r.decisions.len(), 1);
        assert!(!r.render().contains("more candidates"));
        let json = serde_json::to_value(&r).unwrap();
        assert!(json.get("decisions_not_listed").is_none());
        assert_eq!(json["refused_by_gate"], serde_json::json!({}));
    }
}
