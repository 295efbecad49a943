//! One file per subcommand, each with a small `run()` that resolves the repository, calls
//! the library, and prints. This is the only layer that writes to stdout.
//!
//! The printing macros are replaced here, for every subcommand file, by ones that never
//! panic (see `out`): a full stdout must not turn a finished cycle into exit 101.

macro_rules! println {
    () => { $crate::cmd::out::line(format_args!("")) };
    ($($arg:tt)*) => { $crate::cmd::out::line(format_args!($($arg)*)) };
}
macro_rules! print {
    ($($arg:tt)*) => { $crate::cmd::out::text(format_args!($($arg)*)) };
}
macro_rules! eprintln {
    () => { $crate::cmd::out::err_line(format_args!("")) };
    ($($arg:tt)*) => { $crate::cmd::out::err_line(format_args!($($arg)*)) };
}
#[allow(unused_macros)]
macro_rules! eprint {
    ($($arg:tt)*) => { $crate::cmd::out::err_text(format_args!($($arg)*)) };
}

pub mod out;
pub mod process;

mod context;
mod demo;
mod doctor;
mod eval;
mod hooks;
mod ingest;
mod init;
mod join;
mod mcp;
mod quiz;
mod run;
mod schedule;
mod skills;
mod status;
pub(crate) mod sync;
mod tooling;
mod verify;
// The human side (SPEC S9).
mod explain;
mod log;
mod purge;
mod rebuild;
mod review;
mod tui;
mod undo;

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::cli::{Cli, Command, Global};
use dream_engine::error::{Context, Error, Result};

/// Run the parsed command line; returns the exit code.
pub fn run(cli: Cli) -> Result<i32> {
    // The writing commands reach their commit point through `store` (or, for init and
    // hooks, a step that is theirs); an I/O, git or state error that leaves them by `?`
    // came before it, and says so (see `Error::unchanged`, docs/operations.md).
    let writes = matches!(
        &cli.command,
        Command::Init(_)
            | Command::Run(_)
            | Command::Hooks(_)
            | Command::Skills(_)
            | Command::Review(_)
            | Command::Undo(_)
            | Command::Purge(_)
            | Command::Rebuild(_)
    );
    let result = dispatch(&cli);
    if writes {
        result.map_err(Error::unchanged)
    } else {
        result
    }
}

fn dispatch(cli: &Cli) -> Result<i32> {
    let g = &cli.global;
    match &cli.command {
        Command::Init(a) => init::run(g, a),
        Command::Join(a) => join::run(g, a),
        Command::Sync(a) => sync::run(g, a),
        Command::Run(a) => run::run(g, a),
        Command::Backfill(a) => run::backfill(g, a),
        Command::Ingest(a) => ingest::run(g, a),
        Command::Context(a) => context::run(g, a),
        Command::Hooks(a) => hooks::run(g, a),
        Command::Mcp(a) => mcp::run(g, a),
        Command::Status(a) => status::run(g, a),
        Command::Doctor(a) => doctor::run(g, a),
        Command::Demo(a) => demo::run(g, a),
        Command::Schedule(a) => schedule::run(g, a),
        Command::Skills(a) => skills::run(g, a),
        Command::Completions(a) => tooling::completions(a),
        Command::Man(a) => tooling::man(a),
        Command::Verify(a) => verify::run(g, a),
        Command::Quiz(a) => quiz::run(g, a),
        Command::Review(a) => review::run(g, a),
        Command::Explain(a) => explain::run(g, a),
        Command::Undo(a) => undo::run(g, a),
        Command::Purge(a) => purge::run(g, a),
        Command::Rebuild(a) => rebuild::run(g, a),
        Command::Log(a) => log::run(g, a),
        Command::Eval(a) => eval::run(g, a),
    }
}

/// The repo the command works on (`--repo`, `$DREAM_REPO`, or found upwards).
pub fn repo_root(g: &Global) -> Result<PathBuf> {
    if g.repo.len() > 1 {
        return Err(Error::Usage(format!(
            "--repo is given {} times; only `dream schedule install` and `uninstall` take several",
            g.repo.len()
        )));
    }
    Ok(repo_roots(g)?.remove(0))
}

/// Every repo `--repo` names (at least one: `$DREAM_REPO`, or found upwards).
pub fn repo_roots(g: &Global) -> Result<Vec<PathBuf>> {
    let cwd = std::env::current_dir().context(|| "reading the current folder".into())?;
    if g.repo.is_empty() {
        return Ok(vec![dream_engine::edges::store::discover(None, &cwd)?]);
    }
    g.repo
        .iter()
        .map(|p| dream_engine::edges::store::discover(Some(&absolute(&cwd, p)), &cwd))
        .collect()
}

pub fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

/// The cycle's clock: `--now`, else the wall clock.
pub fn now(g: &Global) -> Result<DateTime<Utc>> {
    match &g.now {
        None => Ok(Utc::now()),
        Some(s) => DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| Error::Usage(format!("--now {s:?} is not an RFC 3339 timestamp ({e}); for example 2026-11-29T21:00:00Z"))),
    }
}

/// Print a value as one JSON document on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Error::Other(format!("encoding JSON: {e}")))?;
    println!("{text}");
    Ok(())
}
