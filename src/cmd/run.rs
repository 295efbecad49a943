//! `dream run`: one cycle, with its progress on stderr while a model is called; exit code
//! 10 when it finished with heartbeat warnings.
//!
//! A cycle against a model on a CPU can take many minutes, so `run` shows how far it got:
//! on a terminal a progress bar (stage, calls returned of the total, tokens, elapsed); on
//! anything else (a pipe, a log file, the journal under systemd, where `JOURNAL_STREAM`
//! is set) plain lines, at most one every ten seconds plus the last of each stage. Nothing
//! with `--quiet` or `--log-format json` (the `-v` log says the same there), and nothing
//! for the offline provider, whose cycles take milliseconds.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::{BackfillArgs, Global, LogFormat, RunArgs};
use dream_engine::cycle::{self, Options};
use dream_engine::error::{Result, EXIT_OK, EXIT_WARNING};
use dream_engine::providers::{self};
use dream_engine::stages::Progress;

pub fn run(g: &Global, a: &RunArgs) -> Result<i32> {
    cycle(g, a, false)
}

/// `dream backfill`: an evening cycle whose backfill starts over at the oldest event older
/// than the window that no cycle has looked at.
pub fn backfill(g: &Global, a: &BackfillArgs) -> Result<i32> {
    let run = RunArgs {
        cycle: dream_core::schema::settings::CycleKind::Evening,
        dry_run: a.dry_run,
        json: a.json,
        budget: a.budget,
        allow_loss: false,
    };
    cycle(g, &run, true)
}

fn cycle(g: &Global, a: &RunArgs, restart: bool) -> Result<i32> {
    let root = super::repo_root(g)?;
    let mut config = dream_engine::config::load(&root)?;
    if let Some(b) = a.budget {
        config.budget.tokens_per_cycle = b;
    }
    let provider = providers::llm(&config)?;
    let embedder = providers::embedder(&config)?;
    // A shared memory (issue 45): what the members shipped and a person's edits at the
    // remote come in first; a second dreamer stops here, before the cycle.
    let shared = !a.dry_run;
    if shared {
        if let Some(s) = dream_engine::machines::before_cycle(&root, super::now(g)?)? {
            for n in &s.notes {
                eprintln!("dream: {n}");
            }
        }
    }
    let opts = Options {
        kind: a.cycle,
        dry_run: a.dry_run,
        now: super::now(g)?,
        allow_loss: a.allow_loss,
    };
    let shown = Shown::for_stderr(g);
    let cycle = if restart {
        cycle::backfill_with
    } else {
        cycle::run_with
    };
    let result = cycle(
        &root,
        &config,
        provider.as_ref(),
        embedder.as_ref(),
        &opts,
        &shown,
    );
    shown.finish();
    let report = result?;
    // Memory out: pushed when the cycle is done (a remote out of reach keeps it here,
    // committed, for the next sync or cycle; another dreamer's cycles are an error).
    if shared && dream_engine::edges::remote::membership(&root)?.is_some() {
        // Members' decisions on cards this cycle took in are applied before the push.
        super::sync::apply_decisions(&root, super::now(g)?, false)?;
    }
    if shared {
        if let Some(s) = dream_engine::machines::after_cycle(&root, super::now(g)?)? {
            for n in &s.notes {
                eprintln!("dream: {n}");
            }
        }
    }
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

/// Lines at most this often (plus the last of each stage) when not on a terminal.
const LINE_EVERY: Duration = Duration::from_secs(10);

/// Where progress goes.
enum Shown {
    Off,
    Bar {
        bar: ProgressBar,
    },
    Lines {
        started: Instant,
        last: Mutex<Option<Instant>>,
    },
}

impl Shown {
    fn for_stderr(g: &Global) -> Shown {
        if g.quiet || g.log_format == LogFormat::Json {
            return Shown::Off;
        }
        let journal = std::env::var_os("JOURNAL_STREAM").is_some();
        if std::io::stderr().is_terminal() && !journal {
            // Hidden until a model is called (the offline provider never is).
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
            bar.set_style(spinner_style());
            Shown::Bar { bar }
        } else {
            Shown::Lines {
                started: Instant::now(),
                last: Mutex::new(None),
            }
        }
    }

    fn finish(&self) {
        if let Shown::Bar { bar } = self {
            bar.finish_and_clear();
        }
    }
}

/// A stage without a count of calls: what it is doing, for how long.
fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {elapsed:>4} {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// Model calls: how many returned of how many, then the stage and its tokens.
fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {elapsed:>4} [{bar:20}] {pos}/{len} calls {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

/// Show the bar from the first stage a model is called in.
fn reveal(bar: &ProgressBar) {
    if bar.is_hidden() {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.enable_steady_tick(Duration::from_millis(200));
    }
}

/// `75 s`, `12 min 40 s`, `1 h 3 min`.
fn elapsed(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

impl Progress for Shown {
    fn stage(&self, stage: &str) {
        match self {
            Shown::Off => {}
            Shown::Bar { bar } => {
                reveal(bar);
                bar.set_style(spinner_style());
                bar.set_message(stage.to_string());
            }
            Shown::Lines { started, .. } => {
                eprintln!("dream: {stage} ({})", elapsed(started.elapsed()));
            }
        }
    }

    fn calls(&self, stage: &str, done: usize, total: usize, tokens: u64) {
        match self {
            Shown::Off => {}
            Shown::Bar { bar } => {
                reveal(bar);
                bar.set_style(bar_style());
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(format!("{stage}, {tokens} tokens"));
            }
            Shown::Lines { started, last } => {
                let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
                let due = last.is_none_or(|t| t.elapsed() >= LINE_EVERY);
                if done == total || due {
                    *last = Some(Instant::now());
                    eprintln!(
                        "dream: {stage} {done} of {total} calls returned, {tokens} tokens, {} elapsed",
                        elapsed(started.elapsed())
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elapsed_reads_like_a_person_says_it() {
        assert_eq!(elapsed(Duration::from_secs(42)), "42 s");
        assert_eq!(elapsed(Duration::from_secs(760)), "12 min 40 s");
        assert_eq!(elapsed(Duration::from_secs(3780)), "1 h 3 min");
    }
}
