//! The maintenance passes' apply half (SPEC S4 step 9): a dedupe, merge, promote or forget
//! mutation that passed its gates (`passes::gates`) and the loss guard (`passes::loss`),
//! applied to memory and the archive and recorded (a commit line, a report row, the
//! pass's counts), and one that did not, recorded with its refusal. The engine's
//! `stages::passes` asks the model, gates, guards and runs the backstops; nothing here
//! asks or reads anything.

use std::collections::BTreeSet;

use chrono::NaiveDate;

use crate::operations::commit::Message;
use crate::operations::report::{MutationRow, PassSummary};
use crate::passes::gates::{Before, Checked, Ledger, Verified};
use crate::passes::loss::{self, LossGuard};
use crate::passes::record::{Counts, Line};
use crate::passes::Pass;
use crate::schema::pass_contract::{Drop, Forget, Merge, PassFact, Promote};
use crate::schema::settings::Retention;
use crate::schema::{excerpt, one_line, Archive, Archived, Block, Memory, Origin};

/// What one pass did: its commit lines and report rows.
pub struct PassOutcome {
    pub pass: Pass,
    pub counts: Counts,
    /// Mutations the loss guard held back (the model's and the engine's).
    pub held: usize,
    pub lines: Vec<Line>,
    pub rows: Vec<MutationRow>,
}

impl PassOutcome {
    pub fn new(pass: Pass) -> PassOutcome {
        PassOutcome {
            pass,
            counts: Counts::default(),
            held: 0,
            lines: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Record a mutation. `by_model` says who proposed it; `line` holds its fields.
    pub fn record(
        &mut self,
        by_model: bool,
        checked: &Checked,
        mut line: Line,
        detail: String,
        reason: &str,
    ) {
        let verdict = match (by_model, checked.passed()) {
            (true, false) => {
                self.counts.proposed += 1;
                self.counts.refused += 1;
                "refused"
            }
            // Engine backstops are applied only when their gates pass, so an engine
            // refusal is the loss guard's: counted apart from the model's proposals.
            (false, false) => {
                self.counts.engine_refused += 1;
                line = line.with("by", "engine");
                "refused"
            }
            (true, true) => {
                self.counts.proposed += 1;
                self.counts.accepted += 1;
                "accepted"
            }
            (false, true) => {
                self.counts.engine += 1;
                "engine"
            }
        };
        line.verdict = verdict.into();
        let mut why = one_line(reason);
        if let Some(r) = &checked.refused {
            if r.starts_with("loss guard:") {
                self.held += 1;
            }
            line = line.with("refusal", r.clone());
            why = format!(
                "refused: {r} (proposed because: {})",
                if why.is_empty() {
                    "no reason given"
                } else {
                    &why
                }
            );
        }
        let item = line.get("item").unwrap_or_default().to_string();
        self.rows.push(MutationRow {
            verdict: verdict.into(),
            op: line.op.clone(),
            item,
            detail,
            reason: why,
        });
        self.lines.push(line);
    }

    /// The pass's commit message: its counts in the subject, a line per mutation, and the
    /// loss guard's state (`allow_loss`: `--allow-loss` lifted it).
    pub fn message(
        &self,
        today: NaiveDate,
        cycle_id: &str,
        allow_loss: bool,
        tokens: u64,
    ) -> Message {
        let c = &self.counts;
        let mut subject = format!(
            "dream: {} pass {}: {} {} ({} by the model, {} engine-enforced), {} refused",
            self.pass,
            today,
            c.accepted + c.engine,
            self.pass.verb(),
            c.accepted,
            c.engine,
            c.refused
        );
        if self.held > 0 {
            subject.push_str(&format!(", {} held by the loss guard", self.held));
        }
        let lines: Vec<String> = self.lines.iter().map(Line::render).collect();
        Message::new(subject, lines, cycle_id, self.pass.stage())
            .tokens(tokens)
            .trailer("Counts", c.trailer_value())
            .trailer(
                loss::TRAILER,
                if allow_loss { loss::LIFTED } else { loss::ON },
            )
    }

    pub fn summary(self) -> PassSummary {
        PassSummary {
            pass: self.pass.as_str().into(),
            proposed: self.counts.proposed,
            accepted: self.counts.accepted,
            refused: self.counts.refused,
            engine: self.counts.engine,
            engine_refused: self.counts.engine_refused,
            held: self.held,
            mutations: self.rows,
        }
    }
}

/// The facts a pass is shown: those of `only` when given, else all.
pub fn views_of(memory: &Memory, only: Option<&BTreeSet<String>>) -> Vec<PassFact> {
    memory
        .facts()
        .filter(|(_, f)| only.is_none_or(|o| o.contains(&f.id)))
        .map(|(b, f)| PassFact {
            id: f.id.clone(),
            block: b.as_str().into(),
            category: f.category.clone(),
            by: f.origin.as_str().into(),
            text: f.text.clone(),
        })
        .collect()
}

/// The loss guard on a drop that passed its gates: the fact kept must hold a protected
/// fact's words, and the cycle's share must allow one more.
pub fn guard_drop(
    retention: &Retention,
    guard: &LossGuard,
    before: &Before,
    p: &Drop,
    c: &mut Checked,
) {
    if !c.passed() {
        return;
    }
    if let (Some((_, item)), Some((_, kept))) = (
        before.get(p.item_id.trim()),
        before.get(p.duplicate_of.trim()),
    ) {
        let (gate, held) = guard.check(1, &[item], &kept.text, retention);
        c.add(gate, held);
    }
}

/// The loss guard on a forget that passed its gates; counts it when it goes through.
pub fn guard_forget(
    retention: &Retention,
    guard: &mut LossGuard,
    before: &Before,
    p: &Forget,
    c: &mut Checked,
) {
    if !c.passed() {
        return;
    }
    if let Some((_, f)) = before.get(p.item_id.trim()) {
        let (gate, held) = guard.check(1, &[f], "", retention);
        c.add(gate, held);
        if c.passed() {
            guard.archive(1);
        }
    }
}

fn union(into: &mut Vec<String>, more: &[String]) {
    for id in more {
        if !into.contains(id) {
            into.push(id.clone());
        }
    }
}

/// Apply a drop that passed (the dropped fact to the archive as a duplicate, its support
/// and days joined to the fact kept), and record it either way.
#[allow(clippy::too_many_arguments)]
pub fn apply_drop(
    today: NaiveDate,
    memory: &mut Memory,
    archive: &mut Archive,
    ledger: &mut Ledger,
    out: &mut PassOutcome,
    by_model: bool,
    p: &Drop,
    checked: &Checked,
) {
    let (item, kept) = (p.item_id.trim(), p.duplicate_of.trim());
    let sim = checked.value("similarity").unwrap_or_default().to_string();
    let mut line = Line::new("", "drop")
        .with("item", item)
        .with("duplicate_of", kept);
    let mut text = String::new();
    if checked.passed() {
        let reason = format!(
            "duplicate of {kept}, similarity {sim}: {}",
            one_line(&p.reason)
        );
        let dropped = memory
            .retire(item, today, "duplicate", reason, kept.into())
            .expect("the gates checked it is active");
        if let Some(k) = memory.get_mut(kept) {
            union(&mut k.support, &dropped.fact.support);
            k.first_seen = k.first_seen.min(dropped.fact.first_seen);
            k.last_seen = k.last_seen.max(dropped.fact.last_seen);
        }
        ledger.consume(
            item,
            "removed",
            format!("dropped as a duplicate of {kept}"),
            true,
        );
        ledger.keep_survivor(kept, item);
        text = dropped.fact.text.clone();
        archive.push(dropped);
        line = line.with("similarity", sim.clone()).with(
            "kept_coverage",
            checked.value("kept_coverage").unwrap_or_default(),
        );
    }
    line = line
        .with("reason", one_line(&p.reason))
        .with("text", text.clone());
    let detail = if checked.passed() {
        format!(
            "drop as a duplicate of {kept} (similarity {sim}): {}",
            excerpt(&text, 60)
        )
    } else {
        format!("drop as a duplicate of {kept}")
    };
    out.record(by_model, checked, line, detail, &p.reason);
}

/// Apply a merge that passed: `into` rewritten as `text` (its earlier words archived), the
/// facts of `from` archived as merged into it, their support and days joined to it.
pub fn apply_merge(
    today: NaiveDate,
    memory: &mut Memory,
    archive: &mut Archive,
    into: &str,
    from: &[String],
    text: &str,
    p: &Merge,
) {
    let (block, old) = memory
        .get(into)
        .map(|(b, f)| (b, f.clone()))
        .expect("the gates checked it is active");
    let reason = one_line(&p.reason);
    let mut merged = old.clone();
    archive.push(Archived {
        fact: old,
        block,
        archived: today,
        why: "merged".into(),
        reason: format!(
            "rewritten as the merge of {into} and {}: {reason}",
            from.join(", ")
        ),
        policy: into.into(),
    });
    for id in from {
        let gone = memory
            .retire(
                id,
                today,
                "merged",
                format!("merged into {into}: {reason}"),
                into.into(),
            )
            .expect("the gates checked it is active");
        union(&mut merged.support, &gone.fact.support);
        merged.first_seen = merged.first_seen.min(gone.fact.first_seen);
        merged.last_seen = merged.last_seen.max(gone.fact.last_seen);
        archive.push(gone);
    }
    merged.text = text.to_string();
    merged.origin = Origin::Pass;
    *memory.get_mut(into).expect("still active") = merged;
}

/// Apply a move that passed (the fact to its target block), and record it either way.
pub fn apply_promote(
    memory: &mut Memory,
    ledger: &mut Ledger,
    out: &mut PassOutcome,
    by_model: bool,
    p: &Promote,
    checked: &Checked,
) {
    let item = p.item_id.trim();
    let to = p.to_block.trim().to_lowercase();
    let mut line = Line::new("", "promote").with("item", item);
    let mut text = String::new();
    let mut from = String::new();
    if checked.passed() {
        let target = Block::parse(&to).expect("the gates checked the target");
        let (b, fact) = memory.remove(item).expect("the gates checked it is active");
        from = b.as_str().into();
        text = fact.text.clone();
        memory.block_mut(target).push(fact);
        ledger.consume(item, "moved", format!("to {to}"), false);
    }
    line = line
        .with("from", from.clone())
        .with(
            "to",
            if checked.passed() {
                to.clone()
            } else {
                p.to_block.trim().to_string()
            },
        )
        .with("reason", one_line(&p.reason))
        .with("text", text.clone());
    let detail = if checked.passed() {
        format!("move {from} -> {to}: {}", excerpt(&text, 60))
    } else {
        format!("move to {:?}", p.to_block)
    };
    out.record(by_model, checked, line, detail, &p.reason);
}

/// Apply a forget that passed, under the policy its gate `verified` (the fact to the
/// archive as forgotten), and record it either way.
#[allow(clippy::too_many_arguments)]
pub fn apply_forget(
    today: NaiveDate,
    memory: &mut Memory,
    archive: &mut Archive,
    ledger: &mut Ledger,
    out: &mut PassOutcome,
    by_model: bool,
    p: &Forget,
    checked: &Checked,
    verified: Option<Verified>,
) {
    let item = p.item_id.trim();
    let mut line = Line::new("", "forget").with("item", item);
    let mut text = String::new();
    let mut detail = "forget".to_string();
    if let (true, Some(v)) = (checked.passed(), verified) {
        let reason = format!("{}; verified: {}", one_line(&p.reason), v.detail);
        let gone = memory
            .retire(item, today, "forgotten", reason, v.policy.clone())
            .expect("the gates checked it is active");
        ledger.consume(item, "removed", "forgotten".into(), true);
        text = gone.fact.text.clone();
        detail = format!(
            "forget under {} ({}): {}",
            v.policy,
            v.detail,
            excerpt(&text, 50)
        );
        line = line
            .with("policy", v.policy.clone())
            .with(
                "days_since_seen",
                checked.value("days_since_seen").unwrap_or_default(),
            )
            .with("salience", checked.value("salience").unwrap_or_default());
        if let Some(idle) = checked.value("days_unused") {
            line = line.with("days_unused", idle);
        }
        archive.push(gone);
    }
    if by_model {
        line = line.with("claimed", one_line(&p.policy));
    }
    line = line.with("reason", one_line(&p.reason)).with("text", text);
    out.record(by_model, checked, line, detail, &p.reason);
}
