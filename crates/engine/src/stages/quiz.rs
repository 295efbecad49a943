//! The recall quiz at the end of an evening cycle: does memory, as the cycle leaves it,
//! still answer what it held?
//!
//! The questions (`dream_core::recall::quiz::select`) come from what the cycle did: memory as the
//! last commit held it against memory as the cycle will commit it, this cycle's archive
//! entries, the facts it reinforced, and the mutation behind each change (the passes'
//! accepted and engine mutations, hand edits), plus a standing sample of protected and
//! most-used facts. They are asked through the agents' read path (`agents::quiz`; a model
//! call goes through [`Ctx::call`], as every stage's does), so a merge that dropped a name
//! or a forget pass that archived a fact still asked for shows up as a failing question
//! naming the fact and the mutation. The score goes into the report, the state's `quiz`
//! table, and the `Dream-Quiz:` trailer of the cycle's last commit. A quiz that cannot run
//! (an embedder failing) degrades; it never fails the cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use dream_core::llm::budget::CallError;
use dream_core::operations::report::Degraded;
use dream_core::passes::gates::protection;
use dream_core::recall::quiz::{self, Pool, Quiz};
use dream_core::schema::contract::{LlmError, Reply};
use dream_core::schema::{Archived, Memory};

use crate::agents::quiz::{ask, Caller, Model};
use crate::edges::state::{self, Connection};
use crate::error::Result;
use crate::stages::{Ctx, Work};

/// What the cycle started from: memory as the last commit held it, and after the
/// person's hand edits (the same when there were none).
pub struct Start<'a> {
    pub committed: &'a Memory,
    pub edited: &'a Memory,
}

/// Quiz memory as the cycle leaves it; the score lands in `work.report.quiz`.
pub fn quiz_cycle(
    ctx: &Ctx<'_>,
    tx: &Connection,
    work: &mut Work,
    start: &Start<'_>,
) -> Result<()> {
    let timer = Instant::now();
    let outcome = quiz_of(ctx, tx, work, start);
    let (asked, failed) = match outcome {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!("the recall quiz could not run: {e}");
            work.report.degraded.push(Degraded {
                stage: "quiz".into(),
                reason: format!("the recall quiz could not run: {e}"),
            });
            return Ok(());
        }
    };
    if let Some(why) = failed {
        work.report.degraded.push(Degraded {
            stage: "quiz".into(),
            reason: format!(
                "a quiz model call failed ({why}); the rest of the questions were answered by recall"
            ),
        });
    }
    let ms = timer.elapsed().as_millis() as u64;
    state::put_quiz(tx, &ctx.cycle_id, ctx.opts.now, &asked.outcomes)?;
    let q = Quiz::of(asked.outcomes, &asked.via, ms);
    if let Some(last) = work.stages.last_mut() {
        last.message.trailers.push(("Quiz", q.summary.trailer()));
    }
    for f in &q.failures {
        tracing::warn!(fact = %f.question.fact, "recall quiz: {}", f.line());
    }
    tracing::info!(
        asked = q.summary.asked,
        answered = q.summary.answered,
        second_attempts = q.summary.second_attempts,
        forgotten = q.summary.forgotten,
        not_recalled = q.summary.not_recalled,
        ms,
        "recall quiz"
    );
    work.report.quiz = Some(q);
    Ok(())
}

type Asked = (crate::agents::quiz::Asked, Option<String>);

fn quiz_of(ctx: &Ctx<'_>, tx: &Connection, work: &Work, start: &Start<'_>) -> Result<Asked> {
    let cfg = &ctx.config.quiz;
    let archived: Vec<Archived> = work
        .archive
        .as_ref()
        .map(|a| a.text.lines().filter_map(Archived::parse).collect())
        .unwrap_or_default();
    let reinforced: &BTreeSet<String> = &work.reinforced;
    let uses: BTreeMap<String, u64> = state::uses(tx, Some(ctx.today))?
        .into_iter()
        .map(|(id, (n, _))| (id, n))
        .collect();
    let protected: BTreeSet<String> = start
        .committed
        .facts()
        .chain(work.memory.facts())
        .filter(|(_, f)| protection(f, &ctx.config.retention).is_some())
        .map(|(_, f)| f.id.clone())
        .collect();
    let mutations = mutations(work, start);
    let before = baseline(start);
    let questions = quiz::select(&Pool {
        before: &before,
        after: &work.memory,
        archived: &archived,
        reinforced,
        mutations: &mutations,
        uses: &uses,
        protected: &protected,
        max_questions: cfg.max_questions,
        standing: cfg.standing,
    });
    let model = (cfg.model && !ctx.llm.offline()).then_some(Model {
        llm: ctx.llm,
        calls: ctx,
    });
    // Offline means offline: with an embedding server configured, the cycle's quiz ranks
    // with the builtin embedder instead of sending every fact to the server each evening
    // (`dream quiz` uses the configured one).
    let builtin = dream_core::selection::embed::Builtin::new(ctx.config.embed.dim);
    let embedder: &dyn crate::providers::embed::Embedder = if ctx.config.embed.provider == "openai"
    {
        &builtin
    } else {
        ctx.embedder
    };
    let asked = ask(
        &work.memory,
        ctx.config,
        embedder,
        ctx.today,
        questions,
        model,
    )?;
    let failed = asked.model_failed.clone();
    Ok((asked, failed))
}

/// The cycle's quiz calls the model as every stage does: through [`Ctx::call`], so no call
/// starts once an earlier call of the cycle found the server unavailable.
impl Caller for Ctx<'_> {
    fn call(
        &self,
        stage: &str,
        estimate: u64,
        send: &dyn Fn() -> std::result::Result<Reply<serde_json::Value>, LlmError>,
    ) -> std::result::Result<Reply<serde_json::Value>, CallError> {
        Ctx::call(self, stage, estimate, send)
    }
}

/// Memory as the quiz's questions see it before the cycle: as the person left it (their
/// hand edits included, so a fact they wrote today is asked about if a pass changes it),
/// plus, in their last committed words, the facts a hand edit removed or reworded.
fn baseline(start: &Start<'_>) -> Memory {
    let mut before = start.edited.clone();
    for (block, f) in start.committed.facts() {
        if f.id.is_empty() {
            continue;
        }
        match start.edited.get(&f.id) {
            None => {
                if let Some(bf) = before.blocks.iter_mut().find(|b| b.block == block) {
                    bf.push(f.clone());
                }
            }
            Some((_, e)) if e.text != f.text => {
                for bf in &mut before.blocks {
                    for g in bf.facts_mut() {
                        if g.id == f.id {
                            g.text = f.text.clone();
                        }
                    }
                }
            }
            Some(_) => {}
        }
    }
    before
}

/// The mutation that touched each fact this cycle, in words: a hand edit, else the first
/// pass mutation (accepted or engine-enforced) naming it.
fn mutations(work: &Work, start: &Start<'_>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for p in &work.report.passes {
        for m in p.mutations.iter().filter(|m| m.verdict != "refused") {
            let mut ids = vec![m.item.clone()];
            ids.extend(dream_core::recall::context::cited_ids(&m.detail));
            let label = format!(
                "the {} pass ({} {}: {})",
                p.pass,
                m.op,
                m.item,
                dream_core::schema::excerpt(&m.detail, 120)
            );
            for id in ids {
                out.entry(id).or_insert_with(|| label.clone());
            }
        }
    }
    for (_, f) in start.committed.facts() {
        let edited = start.edited.get(&f.id);
        let label = match edited {
            None => "a hand edit that removed it (dream: record hand edits)",
            Some((_, e)) if e.text != f.text => {
                "a hand edit of its words (dream: record hand edits)"
            }
            Some(_) => continue,
        };
        out.insert(f.id.clone(), label.to_string());
    }
    out
}
