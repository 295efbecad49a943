//! `dream eval locomo PATH`: replay a LoCoMo file and print the quality figures;
//! `dream eval pairs [PATH]`: measure the embedder on labelled sentence pairs;
//! `dream eval sessions PATH...`: replay real transcripts and read back what memory kept;
//! `dream eval streams PATH...`: replay labelled owner streams and measure what a person
//! notices.

use std::path::Path;

use crate::cli::{
    EvalCommand, EvalLocomoArgs, EvalPairsArgs, EvalSessionsArgs, EvalStreamsArgs, EvalTurnsArgs,
    Global,
};
use dream_core::schema::settings::Config;
use dream_engine::error::{Context, Error, Result, EXIT_OK};
use dream_engine::eval::{self, Options};

pub fn run(g: &Global, a: &EvalCommand) -> Result<i32> {
    let _ = g;
    let cwd = std::env::current_dir().context(|| "reading the current folder".into())?;
    match a {
        EvalCommand::Locomo(a) => locomo(&cwd, a)?,
        EvalCommand::Turns(a) => turns(&cwd, a)?,
        EvalCommand::Sessions(a) => sessions(&cwd, a)?,
        EvalCommand::Pairs(a) => pairs(&cwd, a)?,
        EvalCommand::Streams(a) => streams(&cwd, a)?,
    }
    Ok(EXIT_OK)
}

/// `dream eval locomo`: fails unless every fact and episode traces to its events.
fn locomo(cwd: &Path, a: &EvalLocomoArgs) -> Result<()> {
    let opts = Options {
        only: a.only.clone(),
        config: a.config.as_deref().map(|p| super::absolute(cwd, p)),
        keep: a.keep.as_deref().map(|p| super::absolute(cwd, p)),
        llm: None,
    };
    let report = eval::run_locomo(&super::absolute(cwd, &a.path), &opts)?;
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
    Ok(())
}

/// `dream eval turns`: the shipped dev sets, or the files given.
fn turns(cwd: &Path, a: &EvalTurnsArgs) -> Result<()> {
    let sets: Vec<(String, String)> = if a.paths.is_empty() {
        eval::turns::SHIPPED
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect()
    } else {
        a.paths
            .iter()
            .map(|p| {
                let p = super::absolute(cwd, p);
                std::fs::read_to_string(&p)
                    .context(|| format!("reading {}", p.display()))
                    .map(|t| (p.display().to_string(), t))
            })
            .collect::<Result<_>>()?
    };
    let mut all = serde_json::Map::new();
    for (name, text) in &sets {
        let scores =
            eval::turns::measure(text).map_err(|e| Error::Input(format!("{name}: {e}")))?;
        if a.json {
            all.insert(
                name.clone(),
                serde_json::to_value(&scores).unwrap_or_default(),
            );
        } else {
            print!("{}", eval::turns::render(name, &scores, a.wrong));
        }
    }
    if a.json {
        super::print_json(&all)?;
    }
    Ok(())
}

/// `dream eval sessions`: fails when a kept line is not an owner's words it cites.
fn sessions(cwd: &Path, a: &EvalSessionsArgs) -> Result<()> {
    let opts = Options {
        config: a.config.as_deref().map(|p| super::absolute(cwd, p)),
        keep: a.keep.as_deref().map(|p| super::absolute(cwd, p)),
        ..Options::default()
    };
    let paths: Vec<_> = a.paths.iter().map(|p| super::absolute(cwd, p)).collect();
    let report = eval::sessions::run_sessions(&paths, &opts)?;
    if a.json {
        super::print_json(&report)?;
    } else {
        print!("{}", eval::sessions::render(&report));
    }
    if report.not_verbatim > 0 || report.without_owner > 0 {
        return Err(Error::Other(format!(
            "{} facts and episodes are not a verbatim span of an owner's statement they cite, {} cite none",
            report.not_verbatim, report.without_owner
        )));
    }
    Ok(())
}

/// `dream eval streams`: labelled owner streams replayed, and what memory kept of them.
fn streams(cwd: &Path, a: &EvalStreamsArgs) -> Result<()> {
    let opts = Options {
        config: a.config.as_deref().map(|p| super::absolute(cwd, p)),
        keep: a.keep.as_deref().map(|p| super::absolute(cwd, p)),
        ..Options::default()
    };
    let paths: Vec<_> = a.paths.iter().map(|p| super::absolute(cwd, p)).collect();
    let report = eval::streams::run_streams(&paths, &opts)?;
    if a.json {
        super::print_json(&report)?;
    } else {
        print!("{}", eval::streams::render(&report));
    }
    Ok(())
}

/// `dream eval pairs`: the shipped pairs (or the held-out ones, or a file) and an embedder.
fn pairs(cwd: &Path, a: &EvalPairsArgs) -> Result<()> {
    let (name, text) = match &a.path {
        Some(p) => {
            let p = super::absolute(cwd, p);
            let t = std::fs::read_to_string(&p).context(|| format!("reading {}", p.display()))?;
            (p.display().to_string(), t)
        }
        None if a.held_out => (
            "fixtures/pairs-heldout.tsv".to_string(),
            eval::pairs::HELD_OUT.to_string(),
        ),
        None => (
            "fixtures/pairs.tsv".to_string(),
            eval::pairs::SHIPPED.to_string(),
        ),
    };
    let pairs = eval::pairs::parse(&text).map_err(|e| Error::Input(format!("{name}: {e}")))?;
    let mut config = match &a.config {
        Some(p) => {
            let p = super::absolute(cwd, p);
            let t = std::fs::read_to_string(&p).context(|| format!("reading {}", p.display()))?;
            Config::parse(&t, &p.display().to_string(), &Default::default())?
        }
        None => Config::default(),
    };
    if let Some(e) = &a.embedder {
        config.embed.provider = e.clone();
        config
            .validate()
            .map_err(|message| Error::Usage(format!("--embedder: {message}")))?;
    }
    let embedder = dream_engine::providers::embedder(&config)?;
    let report = eval::pairs::measure(&pairs, embedder.as_ref(), &config)?;
    if a.json {
        super::print_json(&report)?;
    } else {
        print!("{}", eval::pairs::render(&name, &report, a.wrong));
    }
    Ok(())
}
