//! `dream context`: what an agent loads at session start, within a token budget.

use dream_core::schema::settings::MIN_CONTEXT_BUDGET;

use crate::cli::{ContextArgs, ContextFormat, Global};
use dream_engine::agents::context::{self, Options};
use dream_engine::error::{Error, Result, EXIT_OK};

pub fn run(g: &Global, a: &ContextArgs) -> Result<i32> {
    match (print(g, a), &a.hook) {
        (Ok(()), _) => Ok(EXIT_OK),
        (Err(e), Some(h)) => {
            // A session-start hook must never stop a session: say so in the context itself.
            let text = format!(
                "{}\nMemory (dream) is unavailable: {e}. Run `dream status` in a terminal.\n",
                dream_core::recall::context::marker_line()
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
    let config = dream_engine::config::load(&root)?;
    let now = super::now(g)?;
    let today = now.date_naive();
    // A member's session hook pushes what waits and fetches memory first, bounded: a second
    // or two on the network at most, then the copy it has, with its age.
    if a.hook.is_some() {
        if let Err(e) = dream_engine::machines::refresh(&root, now, HOOK_SYNC) {
            tracing::warn!("dream context --hook: sync: {e}");
        }
    }
    let age = dream_engine::machines::copy_age(&root, now);
    let project = if a.every_project {
        None
    } else {
        current_project(a)
    };
    let opts = Options {
        budget: a.budget,
        // Part of what the session loads: the budget holds it too.
        scope_line: Some(match &age {
            Some(age) => format!("{} {age}", scope_line(project.as_deref(), a.every_project)),
            None => scope_line(project.as_deref(), a.every_project),
        }),
        query: a.query.clone(),
        all: a.all,
        project: project.clone(),
        every_project: a.every_project,
    };
    let embedder: Box<dyn dream_engine::providers::embed::Embedder> = match opts.query {
        Some(_) => dream_engine::providers::embedder(&config)?,
        None => Box::new(dream_core::selection::embed::Builtin::new(config.embed.dim)),
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

/// The session's project: `--project`, else (as a Claude Code hook) the `cwd` of the JSON
/// on stdin, else the current folder; resolved to its repository.
fn current_project(a: &ContextArgs) -> Option<String> {
    if let Some(p) = &a.project {
        return Some(dream_engine::edges::project::resolve(&absolute(p)));
    }
    // Claude Code's and Codex's SessionStart hooks both give the session's `cwd` as JSON.
    if matches!(a.hook.as_deref(), Some("claude-code" | "codex"))
        && !std::io::IsTerminal::is_terminal(&std::io::stdin())
    {
        // Read on a thread, waited for briefly: a stdin left open with nothing written
        // must not hold the session up.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(hook_cwd(std::io::stdin().lock()));
        });
        if let Ok(Some(cwd)) = rx.recv_timeout(HOOK_INPUT_WAIT) {
            return Some(dream_engine::edges::project::resolve(&cwd));
        }
    }
    std::env::current_dir()
        .ok()
        .map(|d| dream_engine::edges::project::resolve(&d.display().to_string()))
}

/// A relative `--project` is taken from the current folder.
fn absolute(p: &str) -> String {
    let path = std::path::Path::new(p);
    if path.is_absolute() {
        return p.to_string();
    }
    std::env::current_dir()
        .map(|d| d.join(path).display().to_string())
        .unwrap_or_else(|_| p.to_string())
}

/// The most a session hook's sync spends on the network.
const HOOK_SYNC: std::time::Duration = std::time::Duration::from_millis(1500);

/// How long a hook waits for its input before it goes on without it.
const HOOK_INPUT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Most bytes of hook input read: Claude Code's SessionStart JSON is a few hundred.
const HOOK_INPUT_MAX: u64 = 1 << 20;

/// The `cwd` of a SessionStart hook's JSON input, if stdin holds such JSON. Anything else
/// (nothing, a terminal's end of input, text, JSON without a string `cwd`, more than
/// `HOOK_INPUT_MAX` bytes) is none: the session then sees the current folder's project.
pub fn hook_cwd(input: impl std::io::Read) -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    input.take(HOOK_INPUT_MAX).read_to_string(&mut text).ok()?;
    let v: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
    v.get("cwd")?
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The line under the marker saying which facts the context holds.
fn scope_line(project: Option<&str>, every: bool) -> String {
    match (every, project) {
        (true, _) => "Scope: every project's facts.".to_string(),
        (false, Some(p)) => format!("Scope: global facts and those of the project {p}."),
        (false, None) => "Scope: global facts only (no project known).".to_string(),
    }
}
