//! `dream quiz`: ask memory questions only it can answer; exit 1 naming each that fails.

use dream_core::llm::budget::Budget;

use crate::cli::{Global, QuizArgs};
use dream_engine::agents::quiz::{of_repo, Model};
use dream_engine::error::{Result, EXIT_FAILURE, EXIT_OK};

pub fn run(g: &Global, a: &QuizArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let config = dream_engine::config::load(&root)?;
    let today = super::now(g)?.date_naive();
    let embedder = dream_engine::providers::embedder(&config)?;
    let max = a.max.map_or(config.quiz.max_questions, |m| m as usize);
    let with_model = a.model || config.quiz.model;
    let llm = if with_model && config.llm.provider != "none" {
        Some(dream_engine::providers::llm(&config)?)
    } else {
        None
    };
    let budget = Budget::new(config.budget.tokens_per_cycle)
        .with_cached_discount(config.llm.cached_discount);
    let model = llm.as_deref().map(|llm| Model {
        llm,
        calls: &budget,
    });
    let (quiz, model_failed) = of_repo(&root, &config, embedder.as_ref(), today, max, model)?;
    let ok = quiz.summary.failed() == 0;
    if a.json {
        #[derive(serde::Serialize)]
        struct Out<'a> {
            ok: bool,
            #[serde(flatten)]
            quiz: &'a dream_core::recall::quiz::Quiz,
            questions: &'a [dream_core::recall::quiz::Outcome],
            #[serde(skip_serializing_if = "Option::is_none")]
            model_failed: Option<&'a str>,
            tokens: u64,
        }
        super::print_json(&Out {
            ok,
            quiz: &quiz,
            questions: &quiz.outcomes,
            model_failed: model_failed.as_deref(),
            tokens: budget.spend().spent,
        })?;
    } else {
        if with_model && llm.is_none() {
            println!("no model is configured (llm.provider = \"none\"): recall answered");
        }
        if let Some(why) = &model_failed {
            println!("the model could not answer ({why}); recall answered the rest");
        }
        for o in &quiz.outcomes {
            println!("  {} {}", if o.passed { "ok  " } else { "FAIL" }, o.line());
        }
        println!(
            "quiz: {}; {} failed ({} ms{})",
            quiz.summary.render(),
            quiz.summary.failed(),
            quiz.ms,
            if budget.spend().spent > 0 {
                format!(", {} tokens", budget.spend().spent)
            } else {
                String::new()
            }
        );
        if !ok {
            println!("`dream explain <fact>` shows a fact's history: the mutation that changed or archived it, and its quiz questions.");
        }
    }
    Ok(if ok { EXIT_OK } else { EXIT_FAILURE })
}
