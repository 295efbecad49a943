//! `dream run`: one cycle; exit code 10 when it finished with heartbeat warnings.

use crate::cli::{Global, RunArgs};
use crate::cycle::{self, Options};
use crate::error::{Result, EXIT_OK, EXIT_WARNING};
use crate::providers::{self};

pub fn run(g: &Global, a: &RunArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let mut config = crate::config::load(&root)?;
    if let Some(b) = a.budget {
        config.budget.tokens_per_cycle = b;
    }
    let provider = providers::llm(&config)?;
    let embedder = providers::embedder(&config)?;
    let opts = Options {
        kind: a.cycle,
        dry_run: a.dry_run,
        now: super::now(g)?,
        allow_loss: a.allow_loss,
    };
    let report = cycle::run(&root, &config, provider.as_ref(), embedder.as_ref(), &opts)?;
    if a.json {
        super::print_json(&report)?;
    } else {
        print!("{}", report.render());
    }
    Ok(if report.warnings.is_empty() {
        EXIT_OK
    } else {
        EXIT_WARNING
    })
}
