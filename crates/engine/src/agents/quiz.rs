//! Asking the recall quiz's questions through the read path an agent uses.
//!
//! A quiz only proves something if it reads memory the way an agent does: offline, each
//! question goes to `dream_core::recall::context::recall` (what the MCP `recall` tool answers,
//! with the configured embedder's cosine and `quiz.recall_limit` results) and is scored
//! against the lines it returns; with a model (`quiz.model`), the model answers from
//! `dream context` (the budgeted view, ranked for the question), under the token budget,
//! scored the same way. A question missed on the first try is re-asked once in the fact's
//! own wording (recall's query, or the context's ranking, is the fact's text; what is
//! scored is still only what memory returned, or what the model answered), and the second
//! attempt is recorded as such. A model call that fails is never the quiz's failure: the
//! question is answered by recall instead, the reason kept, and no later question of the
//! quiz calls the model. Every model call goes out through a [`Caller`]: in a cycle,
//! `stages::Ctx::call` (the budget, and no call once an earlier call of the cycle found the
//! server unavailable); for `dream quiz`, its own [`Budget`].
//!
//! Read-only: no use is counted (the quiz is not an agent), nothing is written.

use chrono::NaiveDate;
use serde_json::json;

use dream_core::llm::budget::{Budget, CallError};
use dream_core::llm::Llm;
use dream_core::recall::context::{self, Waiting};
use dream_core::recall::quiz::{self, Attempt, Expect, Outcome, Question};
use dream_core::schema::contract::ChatCall;
use dream_core::schema::contract::{LlmError, Reply};
use dream_core::schema::settings::Config;
use dream_core::schema::Memory;

use crate::agents::context::{of_memory, Options, VectorCache};
use crate::error::Result;
use crate::providers::embed::Embedder;

/// The stage name model calls are booked under.
pub const STAGE: &str = "quiz";

/// Most tokens a model's answer may take: one short JSON object.
const ANSWER_TOKENS: u64 = 64;

const SYSTEM: &str = "You are taking a memory quiz. The user's memory is given as Markdown, \
then a sentence with a blank (____). Fill the blank using only the memory; do not guess. \
Reply with one JSON object: {\"answer\": \"<the words for the blank>\"}, or \
{\"answer\": \"not recalled\"} when the memory does not hold it.";

/// The model the quiz may ask, and the way its calls go out.
pub struct Model<'a> {
    pub llm: &'a dyn Llm,
    pub calls: &'a dyn Caller,
}

/// How the quiz's model calls are made: each one booked to `stage` under a budget, or not
/// started (`CallError`) when the caller says so.
pub trait Caller {
    fn call(
        &self,
        stage: &str,
        estimate: u64,
        send: &dyn Fn() -> std::result::Result<Reply<serde_json::Value>, LlmError>,
    ) -> std::result::Result<Reply<serde_json::Value>, CallError>;
}

/// Outside a cycle (`dream quiz`): under this budget alone.
impl Caller for Budget {
    fn call(
        &self,
        stage: &str,
        estimate: u64,
        send: &dyn Fn() -> std::result::Result<Reply<serde_json::Value>, LlmError>,
    ) -> std::result::Result<Reply<serde_json::Value>, CallError> {
        Budget::call(self, stage, estimate, send)
    }
}

/// What asking the questions gave.
pub struct Asked {
    pub outcomes: Vec<Outcome>,
    /// Who answered: `recall`, or the model's name when it answered any question.
    pub via: String,
    /// Why the model stopped answering, when a call failed (the rest went to recall).
    pub model_failed: Option<String>,
}

struct Asker<'a> {
    memory: &'a Memory,
    config: &'a Config,
    embedder: &'a dyn Embedder,
    today: NaiveDate,
    cache: VectorCache,
    model: Option<Model<'a>>,
    model_failed: Option<String>,
    model_answered: bool,
}

/// Ask every question against `memory` (as the cycle leaves it, or as the repository
/// holds it), offline or with `model`.
pub fn ask(
    memory: &Memory,
    config: &Config,
    embedder: &dyn Embedder,
    today: NaiveDate,
    questions: Vec<Question>,
    model: Option<Model<'_>>,
) -> Result<Asked> {
    let via_model = model.as_ref().map(|m| m.llm.name());
    let mut a = Asker {
        memory,
        config,
        embedder,
        today,
        cache: VectorCache::default(),
        model,
        model_failed: None,
        model_answered: false,
    };
    let mut outcomes = Vec::with_capacity(questions.len());
    for q in questions {
        outcomes.push(a.one(q)?);
    }
    let via = match via_model {
        Some(name) if a.model_answered => name,
        _ => "recall".to_string(),
    };
    Ok(Asked {
        outcomes,
        via,
        model_failed: a.model_failed,
    })
}

impl Asker<'_> {
    fn one(&mut self, q: Question) -> Result<Outcome> {
        // A forgotten fact is asked in its own words: the strictest way to find it.
        let first_query = match q.expect {
            Expect::Recalled => q.query(),
            Expect::NotRecalled => q.text.clone(),
        };
        let first = self.attempt(&q, &first_query)?;
        let mut passed = quiz::passes(q.expect, first.hit.is_some());
        let mut attempts = vec![first];
        if !passed && q.expect == Expect::Recalled {
            let second = self.attempt(&q, &q.text.clone())?;
            passed = quiz::passes(q.expect, second.hit.is_some());
            attempts.push(second);
        }
        Ok(Outcome {
            question: q,
            attempts,
            passed,
        })
    }

    fn attempt(&mut self, q: &Question, query: &str) -> Result<Attempt> {
        if self.model.is_some() && self.model_failed.is_none() {
            match self.model_attempt(q, query)? {
                Ok(a) => return Ok(a),
                Err(why) => {
                    let mut a = self.recall_attempt(q, query)?;
                    a.note = format!("the model could not answer ({why}); recall answered");
                    self.model_failed = Some(why);
                    return Ok(a);
                }
            }
        }
        self.recall_attempt(q, query)
    }

    fn cosines(&mut self, query: &str) -> Result<std::collections::BTreeMap<String, f64>> {
        self.cache.cosines(
            self.embedder,
            self.memory,
            query,
            self.config.embed.batch_size,
        )
    }

    /// `recall` as the MCP tool answers it, scored against the returned lines.
    fn recall_attempt(&mut self, q: &Question, query: &str) -> Result<Attempt> {
        let cosines = self.cosines(query)?;
        let hits = context::recall(
            self.memory,
            &self.config.retention,
            self.today,
            query,
            &cosines,
            self.config.quiz.recall_limit,
        );
        let lines: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
        let (hit, score) = quiz::judge(q, &lines);
        Ok(Attempt {
            via: "recall".into(),
            query: query.to_string(),
            score,
            hit: hit.map(|i| hits[i].id.clone()),
            note: String::new(),
        })
    }

    /// The model answering from `dream context` ranked for `query`; `Ok(Err(why))` when
    /// the call failed or was not started.
    fn model_attempt(
        &mut self,
        q: &Question,
        query: &str,
    ) -> Result<std::result::Result<Attempt, String>> {
        let cosines = self.cosines(query)?;
        let view = of_memory(
            self.memory,
            self.config,
            Waiting::default(),
            self.today,
            &Options {
                budget: None,
                query: Some(query.to_string()),
                all: false,
                // The quiz asks of every fact, whichever project it belongs to.
                every_project: true,
                ..Options::default()
            },
            &cosines,
        )
        .render_markdown()
        .lines()
        // The ranking line repeats the query, which on a second attempt is the fact's own
        // wording: the model must find the answer in memory, not in the question.
        .filter(|l| !l.starts_with("Ranked for: "))
        .collect::<Vec<_>>()
        .join("\n");
        let call = ChatCall {
            stage: STAGE.into(),
            system: SYSTEM.into(),
            user: json!({"memory": view, "question": q.prompt}).to_string(),
            max_tokens: ANSWER_TOKENS,
        };
        let Some(m) = &self.model else {
            return Ok(Err("no model".into()));
        };
        let estimate = m.llm.estimate_chat(&call);
        let reply = match m.calls.call(STAGE, estimate, &|| m.llm.chat_json(&call)) {
            Ok(r) => r,
            Err(CallError::Failed(e)) => return Ok(Err(e.message)),
            Err(e) => return Ok(Err(e.to_string())),
        };
        let Some(answer) = reply.value.get("answer").and_then(|v| v.as_str()) else {
            return Ok(Err(format!(
                "its reply has no \"answer\" string: {}",
                dream_core::schema::excerpt(&reply.value.to_string(), 120)
            )));
        };
        self.model_answered = true;
        let score = quiz::score(&q.answer, answer);
        let hit = (score >= 1.0).then(|| q.fact.clone());
        Ok(Ok(Attempt {
            via: "model".into(),
            query: query.to_string(),
            score,
            hit,
            note: format!("answered {:?}", dream_core::schema::excerpt(answer, 120)),
        }))
    }
}

/// `dream quiz`: the questions `dream_core::recall::quiz::of_store` makes of the repository at
/// `root` as it stands (the archive's latest entries, the standing sample, the other
/// facts), asked and scored. Reads the files and, when there is one, the state (use
/// counts), read-only.
pub fn of_repo(
    root: &std::path::Path,
    config: &Config,
    embedder: &dyn Embedder,
    today: NaiveDate,
    max: usize,
    model: Option<Model<'_>>,
) -> Result<(quiz::Quiz, Option<String>)> {
    use dream_core::schema;
    use dream_core::schema::Archived;
    let timer = std::time::Instant::now();
    let store = crate::edges::store::Store::open(root)?;
    let memory = store.load_memory(today)?;
    let archive: Vec<Archived> = store
        .read(schema::ARCHIVE)?
        .unwrap_or_default()
        .lines()
        .filter_map(Archived::parse)
        .collect();
    let uses: std::collections::BTreeMap<String, u64> =
        match crate::edges::state::State::open_read_only(root)? {
            Some(s) => crate::edges::state::uses(&s.conn, Some(today))?
                .into_iter()
                .map(|(id, (n, _))| (id, n))
                .collect(),
            None => Default::default(),
        };
    let protected = memory
        .facts()
        .chain(archive.iter().map(|a| (a.block, &a.fact)))
        .filter(|(_, f)| dream_core::passes::gates::protection(f, &config.retention).is_some())
        .map(|(_, f)| f.id.clone())
        .collect();
    let questions = quiz::of_store(&memory, &archive, &uses, &protected, max);
    let asked = ask(&memory, config, embedder, today, questions, model)?;
    let ms = timer.elapsed().as_millis() as u64;
    Ok((
        quiz::Quiz::of(asked.outcomes, &asked.via, ms),
        asked.model_failed,
    ))
}
