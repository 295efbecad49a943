//! `dream eval locomo PATH`: replay a LoCoMo file and print the quality figures.

use crate::cli::{EvalCommand, Global};
use crate::error::{Context, Error, Result, EXIT_OK};
use crate::eval::{self, Options};

pub fn run(g: &Global, a: &EvalCommand) -> Result<i32> {
    let _ = g;
    let cwd = std::env::current_dir().context(|| "reading the current folder".into())?;
    match a {
        EvalCommand::Locomo(a) => {
            let opts = Options {
                only: a.only.clone(),
                config: a.config.as_deref().map(|p| super::absolute(&cwd, p)),
                keep: a.keep.as_deref().map(|p| super::absolute(&cwd, p)),
                llm: None,
            };
            let report = eval::run_locomo(&super::absolute(&cwd, &a.path), &opts)?;
            if a.json {
                super::print_json(&report)?;
            } else {
                print!("{}", eval::render(&report));
            }
            let c = &report.overall.counts;
            let memory = c.facts + c.episodes;
            if c.traceable_facts < memory {
                return Err(Error::Other(format!(
                    "{} of {} facts and episodes are not fully traceable to the events they cite; traceability must be 100%",
                    memory - c.traceable_facts,
                    memory
                )));
            }
        }
    }
    Ok(EXIT_OK)
}
