//! `dream context`: what an agent loads at session start, within a token budget.

use dream_core::config::MIN_CONTEXT_BUDGET;

use crate::agents::context::{self, Options};
use crate::cli::{ContextArgs, ContextFormat, Global};
use crate::error::{Error, Result, EXIT_OK};

pub fn run(g: &Global, a: &ContextArgs) -> Result<i32> {
    match (print(g, a), &a.hook) {
        (Ok(()), _) => Ok(EXIT_OK),
        (Err(e), Some(h)) => {
            // A session-start hook must never stop a session: say so in the context itself.
            let text = format!(
                "{}\nMemory (dream) is unavailable: {e}. Run `dream status` in a terminal.\n",
                dream_core::context::marker_line()
            );
            if h == "codex" {
                println!("{}", codex_hook_output(&text));
            } else {
                print!("{text}");
            }
            tracing::warn!("dream context --hook: {e}");
            Ok(EXIT_OK)
        }
        (Err(e), None) => Err(e),
    }
}

fn print(g: &Global, a: &ContextArgs) -> Result<()> {
    if let Some(b) = a.budget {
        if b < MIN_CONTEXT_BUDGET {
            return Err(Error::Usage(format!(
                "--budget {b} is below {MIN_CONTEXT_BUDGET} tokens, which the header and the left-out line need; give at least {MIN_CONTEXT_BUDGET}"
            )));
        }
    }
    let root = super::repo_root(g)?;
    let config = crate::config::load(&root)?;
    let today = super::now(g)?.date_naive();
    let opts = Options {
        budget: a.budget,
        query: a.query.clone(),
        all: a.all,
    };
    let embedder: Box<dyn crate::providers::embed::Embedder> = match opts.query {
        Some(_) => crate::providers::embedder(&config)?,
        None => Box::new(dream_core::embed::Builtin::new(config.embed.dim)),
    };
    let ctx = context::build(&root, &config, embedder.as_ref(), today, &opts)?;
    match a.format {
        ContextFormat::Markdown if a.hook.as_deref() == Some("codex") => {
            println!("{}", codex_hook_output(&ctx.render_markdown()))
        }
        ContextFormat::Markdown => print!("{}", ctx.render_markdown()),
        ContextFormat::Json => super::print_json(&ctx)?,
    }
    Ok(())
}

/// What a Codex SessionStart hook prints: Codex validates the JSON and adds
/// `hookSpecificOutput.additionalContext` to the session's context.
fn codex_hook_output(text: &str) -> String {
    serde_json::json!({
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": text,
        }
    })
    .to_string()
}
