//! The benchmark behind `dream bench` (a hidden subcommand; `docs/BENCHMARKS.md` lists
//! every figure with the command that reproduces it).
//!
//! Each scenario builds memory repositories from the synthetic workload ([`dream_testkit::synth`]),
//! prepares them the way a timer would (cycles run in this process), then measures the
//! cycle that matters in a **child process**: `dream run --json` exactly as a timer runs
//! it, so the peak resident memory (`ru_maxrss` from `wait4`) is that cycle's alone and the
//! process wall time includes start-up. Every measured run works on a fresh copy of the
//! prepared repository; the figures are medians over the runs.
//!
//! Scenarios:
//! - `heavy`: `new` events over a window of `window` events (the rest of the window
//!   already consolidated by daily cycles), then `idle`: the same repository run again
//!   with nothing new;
//! - `incremental`: `increment` new events over a history of `history` older events,
//!   beside the same events over an empty history;
//! - `cluster`: DBSCAN alone at growing window sizes, with the exact search beside it up
//!   to `exact_up_to` points (neighbour recall, cluster agreement);
//! - `tokens`: tokens per promoted fact through an OpenAI-compatible server (`--llm-url`),
//!   beside a per-event extractor (one call per event, as mem0-style tools do);
//! - `agents`: what an agent waits for on a repository of `facts` facts: `dream context`
//!   as the SessionStart hook runs it (a whole process, start-up included), and `recall`
//!   round trips through `dream mcp` (JSON-RPC lines over its stdio, the first call apart:
//!   it embeds every fact once).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::{DateTime, Duration, NaiveTime, Utc};
use ndarray::Array2;
use serde::Serialize;

use dream_core::llm::prompts;
use dream_core::schema::contract::{EventView, ReflectRequest};
use dream_core::schema::settings::{Config, CycleKind};
use dream_core::selection::cluster::{self, SignLsh};
use dream_core::sources::event::Event;
use dream_engine::cycle::{self, Options as CycleOptions};
use dream_engine::edges::fsutil::write_atomic;
use dream_engine::error::{Context, Error, Result};
use dream_testkit::synth::{self, Spec};

use crate::parts::{self, StageTokens};

/// Which scenarios to run and at what size.
#[derive(Debug, Clone)]
pub struct Options {
    pub scenarios: Vec<String>,
    pub runs: usize,
    /// Work folder (kept afterwards); a temporary one when `None`.
    pub dir: Option<PathBuf>,
    /// The dream binary measured cycles run as.
    pub exe: PathBuf,
    pub window: usize,
    pub new: usize,
    pub history: usize,
    pub increment: usize,
    pub cluster_sizes: Vec<usize>,
    pub exact_up_to: usize,
    /// Time linfa's own indexes up to this many events.
    pub linfa_up_to: usize,
    /// The index the clustering scenario measures.
    pub lsh: SignLsh,
    /// Sizes of the token-efficiency workload, in events.
    pub token_events: Vec<usize>,
    /// Days the token workload spans.
    pub token_days: u32,
    /// Schedules of the token scenario: cycles a day (0: one cycle over everything).
    pub cycles_per_day: Vec<u32>,
    /// An OpenAI-compatible base URL for the token scenario (for example the fake server).
    pub llm_url: Option<String>,
    pub llm_model: String,
    pub seed: u64,
    /// Facts in the agents scenario's repository.
    pub facts: usize,
    /// The stream scenario's dataset (a LoCoMo file), read where it is.
    pub stream: Option<PathBuf>,
    /// What the fake server's reflect plays in the stream scenario: `reference` or `echo`.
    pub stream_reflect: String,
    /// The year scenario: events, days, and how many lengths of history it measures.
    pub year_events: usize,
    pub year_days: u32,
    pub year_points: u32,
}

/// The scenarios `--scenario all` runs.
pub const SCENARIOS: &[&str] = &["heavy", "incremental", "cluster", "tokens", "agents"];

/// The clock every scenario is replayed at (the evening of its last day).
pub const NOW: &str = "2026-03-01T23:00:00Z";

/// Everything a benchmark run measured.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub machine: Machine,
    pub runs: usize,
    pub scenarios: Vec<ScenarioResult>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpus: usize,
    pub os: String,
    pub arch: String,
    pub release_build: bool,
}

/// One scenario: what was run, its median figures and its targets.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    pub name: String,
    pub description: String,
    pub params: serde_json::Value,
    /// Median figures of the measured cycle (or the measured operation).
    pub median: Figures,
    pub runs: Vec<Figures>,
    pub targets: Vec<Target>,
    /// Anything a reader of the figures should know.
    pub notes: Vec<String>,
    /// Scenario-specific figures (recall, ratios, baselines).
    pub extra: BTreeMap<String, f64>,
    /// The token scenario's schedules, each with where its tokens went.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub schedules: Vec<ScheduleRun>,
}

/// Figures of one measured cycle.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Figures {
    /// Milliseconds per stage, as the cycle's report laps them.
    pub stages_ms: BTreeMap<String, f64>,
    /// The cycle's own wall time (`timings_ms.total`).
    pub engine_ms: f64,
    /// The process's wall time, start-up and exit included.
    pub wall_ms: f64,
    /// Peak resident memory of the process, in MiB.
    pub peak_rss_mb: f64,
    pub llm_calls: f64,
    pub tokens: f64,
    pub new_events: f64,
    pub window_events: f64,
    pub clusters: f64,
    pub promoted: f64,
    pub queued: f64,
    pub reinforced: f64,
    pub refused: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub name: String,
    /// `<=` this.
    pub limit: f64,
    pub measured: f64,
    pub unit: String,
    pub met: bool,
}

impl Target {
    pub(crate) fn at_most(name: &str, measured: f64, limit: f64, unit: &str) -> Target {
        Target {
            name: name.into(),
            limit,
            measured: round2(measured),
            unit: unit.into(),
            met: measured <= limit,
        }
    }
}

pub(crate) fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Run the benchmark.
pub fn run_scenario(
    opts: &Options,
    fake: Option<&dream_testkit::fake_llm::FakeLlm>,
) -> Result<BenchReport> {
    let temp;
    let dir = match &opts.dir {
        Some(d) => {
            std::fs::create_dir_all(d).context(|| format!("creating {}", d.display()))?;
            d.clone()
        }
        None => {
            temp = tempfile::Builder::new()
                .prefix("dream-bench-")
                .tempdir()
                .context(|| "creating a temporary folder".into())?;
            temp.path().to_path_buf()
        }
    };
    let wanted: Vec<&str> = if opts.scenarios.iter().any(|s| s == "all") {
        SCENARIOS.to_vec()
    } else {
        opts.scenarios.iter().map(String::as_str).collect()
    };
    let mut scenarios = Vec::new();
    for name in wanted {
        tracing::info!(scenario = name, "bench: running");
        match name {
            "heavy" | "idle" => scenarios.extend(heavy(opts, &dir.join("heavy"))?),
            "incremental" => scenarios.push(incremental(opts, &dir.join("incremental"))?),
            "cluster" => scenarios.push(cluster_scaling(opts)?),
            "tokens" => scenarios.extend(tokens(opts, fake, &dir.join("tokens"))?),
            "agents" => scenarios.push(agents(opts, &dir.join("agents"))?),
            "stream" => scenarios.push(crate::stream::run_stream(opts, fake, &dir.join("stream"))?),
            "year" => scenarios.push(crate::year::run_year(opts, &dir.join("year"))?),
            other => {
                return Err(Error::Usage(format!(
                    "unknown scenario {other:?}; choose from all, {}, stream, year",
                    SCENARIOS.join(", ")
                )))
            }
        }
    }
    Ok(BenchReport {
        machine: Machine {
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
            release_build: !cfg!(debug_assertions),
        },
        runs: opts.runs,
        scenarios,
    })
}

pub(crate) fn now() -> DateTime<Utc> {
    NOW.parse().expect("a valid timestamp")
}

/// 00:00 on the day of `t`.
pub(crate) fn midnight_of(t: DateTime<Utc>) -> DateTime<Utc> {
    t.date_naive().and_time(NaiveTime::MIN).and_utc()
}

/// 23:00 on the day of `t` (the evening cycle of that day).
pub(crate) fn evening_of(t: DateTime<Utc>) -> DateTime<Utc> {
    t.date_naive()
        .and_time(NaiveTime::from_hms_opt(23, 0, 0).expect("a valid time"))
        .and_utc()
}

/// Themes for a stream of `events`: one per 200 events, at least 40, so a theme is
/// restated about 120 times in a 14-day window whatever its size.
pub(crate) fn themes_for(events: usize) -> usize {
    (events / 200).max(40)
}

/// A workload spec with the benchmark's shape: sessions of about 45 events, a theme per
/// 200 events (at least 40; so a theme is restated about 120 times in a 14-day window
/// whatever its size), 30% noise, 10% tool runs.
fn spec(
    opts: &Options,
    stream: u64,
    events: usize,
    start: DateTime<Utc>,
    days: u32,
    prefix: &str,
    themes: usize,
) -> Spec {
    spec_of(opts.seed, stream, events, start, days, prefix, themes)
}

pub(crate) fn spec_of(
    seed: u64,
    stream: u64,
    events: usize,
    start: DateTime<Utc>,
    days: u32,
    prefix: &str,
    themes: usize,
) -> Spec {
    Spec {
        seed,
        stream,
        events,
        start,
        days,
        sessions: (events / 45).max(1),
        themes,
        noise: 0.3,
        tool_share: 0.1,
        id_prefix: prefix.into(),
    }
}

/// A new repository with the offline defaults at `dir` (which must not exist yet).
pub(crate) fn new_repo(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).context(|| format!("removing {}", dir.display()))?;
    }
    dream_engine::edges::repo::create(dir)?;
    Ok(())
}

/// Set keys of a repository's dream.toml (`section.key` = TOML value).
pub(crate) fn set_config(dir: &Path, keys: &[(&str, toml::Value)]) -> Result<()> {
    let path = dir.join(dream_core::schema::settings::FILE);
    let text = std::fs::read_to_string(&path).context(|| format!("reading {}", path.display()))?;
    let mut table: toml::Table = text
        .parse()
        .map_err(|e| Error::Other(format!("{}: {e}", path.display())))?;
    for (key, value) in keys {
        let (section, name) = key.split_once('.').expect("section.key");
        let t = table
            .entry(section)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .expect("a section is a table");
        t.insert(name.to_string(), value.clone());
    }
    write_atomic(&path, table.to_string().as_bytes())
}

/// Prepare a repository once: with `--dir`, a repository prepared earlier from the same
/// recipe (and the same dream version) is reused; otherwise it is built with `build`.
/// Returns how it was prepared, for the notes.
fn prepare_once(
    dir: &Path,
    recipe: &str,
    build: impl FnOnce(&Path) -> Result<()>,
) -> Result<String> {
    let marker = dir.join(".dream").join("bench-recipe");
    if std::fs::read_to_string(&marker).is_ok_and(|r| r == recipe) {
        return Ok(format!("reused from {}", dir.display()));
    }
    let started = Instant::now();
    new_repo(dir)?;
    build(dir)?;
    write_atomic(&marker, recipe.as_bytes())?;
    Ok(format!("{:.1} s", started.elapsed().as_secs_f64()))
}

/// Write events to an inbox file of a repository.
pub(crate) fn write_events(dir: &Path, name: &str, events: &[Event]) -> Result<()> {
    let mut text = String::with_capacity(events.len() * 200);
    for e in events {
        text.push_str(&e.to_line());
        text.push('\n');
    }
    write_atomic(&dir.join("events").join(name), text.as_bytes())
}

/// One evening cycle in this process (for preparing repositories).
pub(crate) fn cycle_here(
    dir: &Path,
    now: DateTime<Utc>,
) -> Result<dream_core::operations::report::Report> {
    let config = dream_engine::config::load(dir)?;
    let provider = dream_engine::providers::llm(&config)?;
    let embedder = dream_engine::providers::embedder(&config)?;
    let opts = CycleOptions {
        kind: CycleKind::Evening,
        dry_run: false,
        allow_loss: false,
        now,
    };
    cycle::run_cycle(dir, &config, provider.as_ref(), embedder.as_ref(), &opts)
}

/// Ingest a stream day by day, one evening cycle per day, as a timer would.
fn replay_daily(dir: &Path, events: &[Event], prefix: &str) -> Result<()> {
    let mut by_day: BTreeMap<chrono::NaiveDate, Vec<Event>> = BTreeMap::new();
    for e in events {
        by_day.entry(e.ts.date_naive()).or_default().push(e.clone());
    }
    for (day, evs) in by_day {
        write_events(dir, &format!("{prefix}-{day}.jsonl"), &evs)?;
        cycle_here(dir, evening_of(evs[0].ts))?;
    }
    Ok(())
}

/// Copy a folder tree (a prepared repository) to a new place. Inbox files are hard links,
/// not copies: a copy is a new file to dream (a new inode), which it would read again from
/// its start, as it must for a replaced file, and no timer's repository is copied between
/// two runs. Nothing writes to those files afterwards. Copies are flushed to disk before
/// the measured cycle runs.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to).context(|| format!("removing {}", to.display()))?;
    }
    let mut stack = vec![from.to_path_buf()];
    while let Some(d) = stack.pop() {
        let rel = d.strip_prefix(from).expect("under the root");
        let target = to.join(rel);
        std::fs::create_dir_all(&target).context(|| format!("creating {}", target.display()))?;
        for entry in std::fs::read_dir(&d).context(|| format!("listing {}", d.display()))? {
            let entry = entry.context(|| format!("listing {}", d.display()))?;
            let p = entry.path();
            if entry
                .file_type()
                .context(|| format!("reading {}", p.display()))?
                .is_dir()
            {
                stack.push(p);
            } else {
                let dest = target.join(entry.file_name());
                let inbox = rel.starts_with("events");
                if !(inbox && std::fs::hard_link(&p, &dest).is_ok()) {
                    std::fs::copy(&p, &dest).context(|| format!("copying {}", p.display()))?;
                    // Flushed now, or the measured cycle's first fsync would write the copy.
                    std::fs::File::open(&dest)
                        .and_then(|f| f.sync_all())
                        .context(|| format!("flushing {}", dest.display()))?;
                }
            }
        }
    }
    Ok(())
}

/// What a child process gave.
pub(crate) struct ChildRun {
    pub(crate) report: serde_json::Value,
    pub(crate) wall_ms: f64,
    pub(crate) peak_rss_mb: f64,
}

/// Run one cycle as a child process (`dream bench-cycle`, which is `dream run --json` that
/// also reports its own peak memory) and measure it.
///
/// With `DREAM_BENCH_WRAP` set (a command and its arguments, split as a shell would), each
/// measured cycle runs under it: `DREAM_BENCH_WRAP='heaptrack -o /tmp/cycle'` records
/// where a cycle's memory goes. The wrapper's own memory then counts in the peak.
pub(crate) fn measure_cycle(opts: &Options, dir: &Path, now: DateTime<Utc>) -> Result<ChildRun> {
    let wrap = std::env::var("DREAM_BENCH_WRAP")
        .ok()
        .and_then(|w| shell_words::split(&w).ok())
        .filter(|w| !w.is_empty());
    let mut cmd = match &wrap {
        Some(w) => {
            let mut c = std::process::Command::new(&w[0]);
            c.args(&w[1..]).arg(&opts.exe);
            c
        }
        None => std::process::Command::new(&opts.exe),
    };
    for (k, _) in std::env::vars() {
        if k.starts_with("DREAM_") {
            cmd.env_remove(k);
        }
    }
    cmd.arg("--repo")
        .arg(dir)
        .arg("--now")
        .arg(now.to_rfc3339())
        .arg("--quiet")
        .arg("cycle");
    let (status, stdout, stderr, wall_ms) = spawn_measured(cmd)?;
    if !status {
        return Err(Error::Other(format!(
            "the measured cycle failed in {}: {}",
            dir.display(),
            stderr.trim()
        )));
    }
    // A wrapper may print lines of its own around the report; the report starts a line.
    let report = stdout
        .split(|b| *b == b'\n')
        .scan(0, |at, line| {
            let start = *at;
            *at += line.len() + 1;
            Some((start, line))
        })
        .find(|(_, line)| line.starts_with(b"{"))
        .map_or(&stdout[..0], |(start, _)| &stdout[start..]);
    let out: serde_json::Value = serde_json::Deserializer::from_slice(report)
        .into_iter()
        .next()
        .unwrap_or_else(|| serde_json::from_slice(b""))
        .map_err(|e| Error::Other(format!("the measured cycle printed no JSON report: {e}")))?;
    Ok(ChildRun {
        peak_rss_mb: out["peak_rss_kb"].as_f64().unwrap_or(f64::NAN) / 1024.0,
        report: out["report"].clone(),
        wall_ms,
    })
}

/// Spawn, collect output and wall time.
fn spawn_measured(mut cmd: std::process::Command) -> Result<(bool, Vec<u8>, String, f64)> {
    let started = Instant::now();
    let out = cmd
        .output()
        .context(|| "running the measured dream process".into())?;
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok((
        out.status.success(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        wall_ms,
    ))
}

/// The peak resident memory of this process, in KiB: `VmHWM` from /proc/self/status
/// where there is one. (`ru_maxrss` is not used on Linux: a process started by a large
/// one inherits its parent's peak at exec, which would credit the benchmark's own memory
/// to the measured cycle.)
pub fn peak_rss_kb() -> Option<u64> {
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        return status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
    }
    peak_rss_from_rusage()
}

#[cfg(unix)]
fn peak_rss_from_rusage() -> Option<u64> {
    // SAFETY: getrusage only writes into the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    let rss = usage.ru_maxrss as u64;
    // ru_maxrss is in bytes on macOS, in KiB elsewhere.
    Some(if cfg!(target_os = "macos") {
        rss / 1024
    } else {
        rss
    })
}

#[cfg(not(unix))]
fn peak_rss_from_rusage() -> Option<u64> {
    None
}

/// Figures from a cycle report (and the child's own measures).
pub(crate) fn figures(report: &serde_json::Value, wall_ms: f64, peak_rss_mb: f64) -> Figures {
    let n = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    let mut stages_ms = BTreeMap::new();
    if let Some(t) = report["timings_ms"].as_object() {
        for (k, v) in t {
            if k != "total" {
                stages_ms.insert(k.clone(), n(v));
            }
        }
    }
    let c = &report["candidates"];
    Figures {
        stages_ms,
        engine_ms: n(&report["timings_ms"]["total"]),
        wall_ms,
        peak_rss_mb,
        llm_calls: n(&report["tokens"]["calls"]),
        tokens: n(&report["tokens"]["spent"]),
        new_events: n(&report["ingest"]["new_events"]),
        window_events: n(&report["window"]["events"]),
        clusters: n(&report["window"]["clusters"]),
        promoted: n(&c["promoted"]),
        queued: n(&c["queued"]),
        reinforced: n(&c["reinforced"]),
        refused: n(&c["refused"]),
    }
}

pub(crate) fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(|a, b| a.total_cmp(b));
    let m = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[m]
    } else {
        (xs[m - 1] + xs[m]) / 2.0
    }
}

/// The median of every figure over runs.
pub(crate) fn median_figures(runs: &[Figures]) -> Figures {
    let med = |f: fn(&Figures) -> f64| round2(median(runs.iter().map(f).collect()));
    let mut stages_ms = BTreeMap::new();
    for r in runs {
        for k in r.stages_ms.keys() {
            stages_ms.entry(k.clone()).or_insert(0.0);
        }
    }
    for (k, v) in stages_ms.iter_mut() {
        *v = round2(median(
            runs.iter()
                .map(|r| r.stages_ms.get(k).copied().unwrap_or(0.0))
                .collect(),
        ));
    }
    Figures {
        stages_ms,
        engine_ms: med(|f| f.engine_ms),
        wall_ms: med(|f| f.wall_ms),
        peak_rss_mb: med(|f| f.peak_rss_mb),
        llm_calls: med(|f| f.llm_calls),
        tokens: med(|f| f.tokens),
        new_events: med(|f| f.new_events),
        window_events: med(|f| f.window_events),
        clusters: med(|f| f.clusters),
        promoted: med(|f| f.promoted),
        queued: med(|f| f.queued),
        reinforced: med(|f| f.reinforced),
        refused: med(|f| f.refused),
    }
}

/// `new` events over a `window`-event window, then the same repository with nothing new.
fn heavy(opts: &Options, dir: &Path) -> Result<Vec<ScenarioResult>> {
    let now = now();
    let today = midnight_of(now);
    let old = opts.window.saturating_sub(opts.new);
    let prepared = dir.join("prepared");
    // The older part of the window: 13 days before today, consolidated day by day.
    let themes = themes_for(opts.window);
    let history_spec = spec(opts, 1, old, today - Duration::days(13), 13, "h-", themes);
    let prepared_how = prepare_once(
        &prepared,
        &format!("{history_spec:?} {}", env!("CARGO_PKG_VERSION")),
        |repo| {
            let history = synth::generate(&history_spec);
            replay_daily(repo, &history.events, "history")
        },
    )?;
    let fresh = synth::generate(&spec(opts, 2, opts.new, today, 1, "n-", themes));

    let mut busy = Vec::new();
    let mut idle = Vec::new();
    for run in 0..opts.runs {
        let repo = dir.join(format!("run-{run}"));
        copy_tree(&prepared, &repo)?;
        write_events(&repo, "new.jsonl", &fresh.events)?;
        let r = measure_cycle(opts, &repo, now)?;
        busy.push(figures(&r.report, r.wall_ms, r.peak_rss_mb));
        let r = measure_cycle(opts, &repo, now)?;
        idle.push(figures(&r.report, r.wall_ms, r.peak_rss_mb));
        if opts.dir.is_none() {
            std::fs::remove_dir_all(&repo).context(|| format!("removing {}", repo.display()))?;
        }
    }
    let params = serde_json::json!({
        "window_events": opts.window,
        "new_events": opts.new,
        "window_days": 14,
        "themes_per_event": 0.005,
        "noise": 0.3,
        "tool_share": 0.1,
        "prepared": prepared_how,
    });
    let m = median_figures(&busy);
    let heavy = ScenarioResult {
        name: "heavy".into(),
        description: format!(
            "{} new events over a {}-event window (offline providers)",
            opts.new, opts.window
        ),
        params: params.clone(),
        targets: vec![
            Target::at_most("engine time", m.engine_ms / 1000.0, 3.0, "s"),
            Target::at_most("peak memory", m.peak_rss_mb, 300.0, "MiB"),
        ],
        median: m,
        runs: busy,
        notes: vec![format!(
            "the window's older {old} events were ingested and consolidated by 13 daily cycles beforehand ({prepared_how})"
        )],
        extra: BTreeMap::new(),
        schedules: Vec::new(),
    };
    let m = median_figures(&idle);
    let idle = ScenarioResult {
        name: "idle".into(),
        description: format!(
            "a cycle with nothing new, on the {}-event window above",
            opts.window
        ),
        params,
        targets: vec![Target::at_most("engine time", m.engine_ms, 30.0, "ms")],
        notes: vec![format!(
            "process wall time (start-up and exit included) is {:.1} ms",
            m.wall_ms
        )],
        median: m,
        runs: idle,
        extra: BTreeMap::new(),
        schedules: Vec::new(),
    };
    Ok(vec![heavy, idle])
}

/// `increment` new events over a `history`-event history older than the window, beside
/// the same events over an empty history.
fn incremental(opts: &Options, dir: &Path) -> Result<ScenarioResult> {
    let now = now();
    let today = midnight_of(now);
    // The history: 200 days that ended before the 14-day window starts.
    let hist_days = 200u32;
    let hist_start = today - Duration::days(15 + i64::from(hist_days));
    let themes = themes_for(opts.history);
    let history_spec = spec(opts, 3, opts.history, hist_start, hist_days, "h-", themes);
    let with_history = dir.join("with-history");
    // A timer that ran through the history: everything ingested, the history's own last
    // window consolidated.
    let prepared_how = prepare_once(
        &with_history,
        &format!("{history_spec:?} {}", env!("CARGO_PKG_VERSION")),
        |repo| {
            let history = synth::generate(&history_spec);
            write_events(repo, "history.jsonl", &history.events)?;
            let last = history.events.last().map(|e| e.ts).unwrap_or(hist_start);
            cycle_here(repo, evening_of(last)).map(|_| ())
        },
    )?;
    let empty = dir.join("empty");
    new_repo(&empty)?;
    let fresh = synth::generate(&spec(
        opts,
        4,
        opts.increment,
        today - Duration::days(1),
        2,
        "i-",
        themes,
    ));

    let mut over_history = Vec::new();
    let mut over_empty = Vec::new();
    for run in 0..opts.runs {
        for (prepared, out) in [
            (&with_history, &mut over_history),
            (&empty, &mut over_empty),
        ] {
            let repo = dir.join(format!("run-{run}"));
            copy_tree(prepared, &repo)?;
            write_events(&repo, "new.jsonl", &fresh.events)?;
            let r = measure_cycle(opts, &repo, now)?;
            out.push(figures(&r.report, r.wall_ms, r.peak_rss_mb));
            if opts.dir.is_none() {
                std::fs::remove_dir_all(&repo)
                    .context(|| format!("removing {}", repo.display()))?;
            }
        }
    }
    let h = median_figures(&over_history);
    let e = median_figures(&over_empty);
    let ratio = h.engine_ms / e.engine_ms.max(0.001);
    let mut extra = BTreeMap::new();
    extra.insert("engine_ms_over_history".into(), h.engine_ms);
    extra.insert("engine_ms_over_empty".into(), e.engine_ms);
    extra.insert("engine_ratio".into(), round2(ratio));
    extra.insert("wall_ms_over_history".into(), h.wall_ms);
    extra.insert("wall_ms_over_empty".into(), e.wall_ms);
    extra.insert(
        "wall_ratio".into(),
        round2(h.wall_ms / e.wall_ms.max(0.001)),
    );
    extra.insert("peak_rss_mb_over_empty".into(), e.peak_rss_mb);
    Ok(ScenarioResult {
        name: "incremental".into(),
        description: format!(
            "{} new events over a {}-event history older than the window, against the same events over an empty history",
            opts.increment, opts.history
        ),
        params: serde_json::json!({
            "history_events": opts.history,
            "history_days": hist_days,
            "new_events": opts.increment,
            "prepared": prepared_how,
        }),
        targets: vec![Target::at_most("time over history / time over empty", ratio, 1.5, "x")],
        median: h,
        runs: over_history.into_iter().chain(over_empty).collect(),
        notes: vec![
            "median figures are those over the history; `runs` lists the runs over the history, then those over the empty repository".into(),
        ],
        extra,
        schedules: Vec::new(),
    })
}

/// DBSCAN alone at growing sizes, with exact search beside it on the smaller ones.
fn cluster_scaling(opts: &Options) -> Result<ScenarioResult> {
    let config = Config::default();
    let embedder = dream_engine::providers::embedder(&config)?;
    let eps = dream_engine::providers::embed::eps(&config, embedder.as_ref());
    let mut extra = BTreeMap::new();
    let mut notes = Vec::new();
    let mut points: Vec<(f64, f64)> = Vec::new();
    for &n in &opts.cluster_sizes {
        let w = synth::generate(&spec(
            opts,
            5,
            n,
            now() - Duration::days(14),
            14,
            "c-",
            themes_for(n),
        ));
        let texts: Vec<&str> = w.events.iter().map(|e| e.text.as_str()).collect();
        let vectors = embedder.embed(&texts)?;
        let rows: Vec<&Vec<f32>> = vectors
            .iter()
            .filter(|v| v.iter().any(|x| *x != 0.0))
            .collect();
        let dim = rows.first().map_or(config.embed.dim, |v| v.len());
        let mut data = Array2::<f32>::zeros((rows.len(), dim));
        for (i, v) in rows.iter().enumerate() {
            data.row_mut(i)
                .assign(&ndarray::ArrayView1::from(v.as_slice()));
        }
        // As in a cycle: the newest tenth of the window is new.
        let fresh: Vec<bool> = (0..rows.len()).map(|i| i >= rows.len() * 9 / 10).collect();
        let focused_lsh = || SignLsh {
            focus: Some(cluster::Focus {
                rows: fresh.clone().into(),
                min_points: config.cluster.min_points,
            }),
            ..opts.lsh.clone()
        };
        let (mut times, mut focused_times) = (Vec::new(), Vec::new());
        let (mut lsh, mut focused) = (
            cluster::Clustering::default(),
            cluster::Clustering::default(),
        );
        for _ in 0..opts.runs.max(1) {
            let t = Instant::now();
            lsh = cluster::dbscan_with(
                data.view(),
                config.cluster.min_points,
                eps,
                opts.lsh.clone(),
            );
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            let t = Instant::now();
            focused =
                cluster::dbscan_with(data.view(), config.cluster.min_points, eps, focused_lsh());
            focused_times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let ms = median(times);
        extra.insert(format!("ms_at_{n}"), round2(ms));
        extra.insert(
            format!("ms_new_tenth_at_{n}"),
            round2(median(focused_times)),
        );
        extra.insert(format!("clusters_at_{n}"), lsh.clusters.len() as f64);
        points.push((rows.len() as f64, ms));
        let (recall, false_found) = neighbour_recall(&data, rows.len().min(500), eps, &opts.lsh);
        extra.insert(format!("neighbour_recall_at_{n}"), round4(recall));
        extra.insert(format!("false_neighbours_at_{n}"), false_found as f64);
        if n <= opts.linfa_up_to {
            // linfa's own indexes, for comparison (one run each: they are slow).
            let linfa: [(&str, linfa_nn::CommonNearestNeighbour); 3] = [
                ("kdtree", linfa_nn::CommonNearestNeighbour::KdTree),
                ("balltree", linfa_nn::CommonNearestNeighbour::BallTree),
                ("linear", linfa_nn::CommonNearestNeighbour::LinearSearch),
            ];
            for (name, nn) in linfa {
                let t = Instant::now();
                cluster::dbscan_with(data.view(), config.cluster.min_points, eps, nn);
                extra.insert(
                    format!("linfa_{name}_ms_at_{n}"),
                    round2(t.elapsed().as_secs_f64() * 1000.0),
                );
            }
        }
        if n <= opts.exact_up_to && config.cluster.min_points == 2 {
            // With --dir, the exact clustering is kept there: a parameter sweep computes it
            // once.
            let cache = opts.dir.as_ref().map(|d| {
                d.join(format!(
                    "exact-{n}-seed{}-{}-eps{}.json",
                    opts.seed,
                    embedder.id(),
                    eps
                ))
            });
            let cached: Option<cluster::Clustering> = cache
                .as_ref()
                .and_then(|p| std::fs::read_to_string(p).ok())
                .and_then(|t| serde_json::from_str(&t).ok());
            let exact = match cached {
                Some(c) => c,
                None => {
                    let t = Instant::now();
                    let c = cluster::exact_components(data.view(), eps);
                    extra.insert(
                        format!("exact_ms_at_{n}"),
                        round2(t.elapsed().as_secs_f64() * 1000.0),
                    );
                    if let Some(p) = &cache {
                        let text = serde_json::to_string(&c).unwrap_or_default();
                        write_atomic(p, text.as_bytes())?;
                    }
                    c
                }
            };
            extra.insert(
                format!("exact_clusters_at_{n}"),
                exact.clusters.len() as f64,
            );
            extra.insert(
                format!("adjusted_rand_at_{n}"),
                round4(adjusted_rand(&exact, &lsh, rows.len())),
            );
            extra.insert(
                format!("identical_clusters_share_at_{n}"),
                round4(same_clusters(&exact, &lsh)),
            );
            let holding = |c: &cluster::Clustering| cluster::Clustering {
                clusters: c
                    .clusters
                    .iter()
                    .filter(|c| c.iter().any(|&i| fresh[i]))
                    .cloned()
                    .collect(),
                noise: Vec::new(),
            };
            let (want, got) = (holding(&exact), holding(&focused));
            extra.insert(
                format!("new_clusters_exact_at_{n}"),
                want.clusters.len() as f64,
            );
            extra.insert(
                format!("new_clusters_found_at_{n}"),
                got.clusters.len() as f64,
            );
            extra.insert(
                format!("new_clusters_identical_share_at_{n}"),
                round4(same_clusters(&want, &got)),
            );
        }
    }
    let mut targets = Vec::new();
    if let (Some(first), Some(last)) = (points.first(), points.last()) {
        if last.0 > first.0 {
            let exponent = (last.1 / first.1).ln() / (last.0 / first.0).ln();
            extra.insert("growth_exponent".into(), round2(exponent));
            targets.push(Target::at_most(
                "growth exponent (time ~ n^k)",
                exponent,
                1.5,
                "k",
            ));
        }
    }
    notes.push("n counts events; DBSCAN sees those with a content word. ms: all clusters; ms_new_tenth: only the clusters holding the newest tenth (what a cycle asks for). Recall is over up to 500 query rows spread over the window, against exact search; exact clusters come from cluster::exact_components (exact DBSCAN for min_points = 2)".into());
    Ok(ScenarioResult {
        name: "cluster".into(),
        description: format!(
            "DBSCAN (linfa) over a window's {} vectors with the sign-LSH index, by window size",
            embedder.id()
        ),
        params: serde_json::json!({
            "sizes": opts.cluster_sizes,
            "eps": eps,
            "min_points": config.cluster.min_points,
            "index": format!("{:?}", opts.lsh),
        }),
        median: Figures::default(),
        runs: Vec::new(),
        targets,
        notes,
        extra,
        schedules: Vec::new(),
    })
}

fn round4(x: f64) -> f64 {
    (x * 10000.0).round() / 10000.0
}

/// Share of true neighbours (exact search) the index returns over `q` query rows spread
/// over the data, and how many neighbours it returned that exact search does not (always
/// zero: every candidate is verified with the exact distance).
pub fn neighbour_recall(data: &Array2<f32>, q: usize, eps: f64, lsh: &SignLsh) -> (f64, usize) {
    use linfa_nn::distance::L2Dist;
    use linfa_nn::NearestNeighbour;
    // The search itself: a capped one stops at `max_neighbours` by design.
    let uncapped = SignLsh {
        max_neighbours: 0,
        ..lsh.clone()
    };
    let index = uncapped
        .from_batch(data, L2Dist)
        .expect("a non-empty batch");
    let norms: Vec<f32> = data.rows().into_iter().map(|r| r.dot(&r)).collect();
    let limit = (eps * eps) as f32;
    let (mut found, mut total, mut false_found) = (0usize, 0usize, 0usize);
    let step = (data.nrows() / q.max(1)).max(1);
    for i in (0..data.nrows()).step_by(step).take(q) {
        let dots = data.dot(&data.row(i));
        let truth: std::collections::HashSet<usize> = (0..data.nrows())
            .filter(|&j| norms[i] + norms[j] - 2.0 * dots[j] < limit)
            .collect();
        let got: std::collections::HashSet<usize> = index
            .within_range(data.row(i), eps as f32)
            .expect("same dimension")
            .into_iter()
            .map(|(_, j)| j)
            .collect();
        total += truth.len();
        found += got.intersection(&truth).count();
        false_found += got.difference(&truth).count();
    }
    let recall = if total == 0 {
        1.0
    } else {
        found as f64 / total as f64
    };
    (recall, false_found)
}

/// Labels per row: cluster number, or a unique label for noise.
fn labels(c: &cluster::Clustering, n: usize) -> Vec<usize> {
    let mut l: Vec<usize> = (0..n).map(|i| c.clusters.len() + i).collect();
    for (k, members) in c.clusters.iter().enumerate() {
        for &i in members {
            l[i] = k;
        }
    }
    l
}

/// Adjusted Rand index of two clusterings of `n` rows (noise points as singletons): 1.0
/// when they are the same partition.
pub fn adjusted_rand(a: &cluster::Clustering, b: &cluster::Clustering, n: usize) -> f64 {
    let (la, lb) = (labels(a, n), labels(b, n));
    let pairs = |x: f64| x * (x - 1.0) / 2.0;
    let mut table: HashMap<(usize, usize), f64> = HashMap::new();
    let mut rows: HashMap<usize, f64> = HashMap::new();
    let mut cols: HashMap<usize, f64> = HashMap::new();
    for i in 0..n {
        *table.entry((la[i], lb[i])).or_default() += 1.0;
        *rows.entry(la[i]).or_default() += 1.0;
        *cols.entry(lb[i]).or_default() += 1.0;
    }
    let index: f64 = table.values().map(|&x| pairs(x)).sum();
    let sa: f64 = rows.values().map(|&x| pairs(x)).sum();
    let sb: f64 = cols.values().map(|&x| pairs(x)).sum();
    let expected = sa * sb / pairs(n as f64).max(1.0);
    let max = (sa + sb) / 2.0;
    if (max - expected).abs() < f64::EPSILON {
        1.0
    } else {
        (index - expected) / (max - expected)
    }
}

/// Share of the exact clusters that the other clustering has exactly (same members).
pub fn same_clusters(exact: &cluster::Clustering, other: &cluster::Clustering) -> f64 {
    if exact.clusters.is_empty() {
        return 1.0;
    }
    let mut theirs: std::collections::HashSet<Vec<usize>> = std::collections::HashSet::new();
    for c in &other.clusters {
        let mut c = c.clone();
        c.sort_unstable();
        theirs.insert(c);
    }
    let same = exact
        .clusters
        .iter()
        .filter(|c| {
            let mut c = (*c).clone();
            c.sort_unstable();
            theirs.contains(&c)
        })
        .count();
    same as f64 / exact.clusters.len() as f64
}

/// The token scenario's workload: `events` events over `days` days ending on the benchmark's
/// last day, 40 themes (the same for every size, so a larger stream restates them more).
pub fn token_workload(opts: &Options, events: usize) -> synth::Workload {
    token_workload_of(opts.seed, opts.token_days, events)
}

/// The token workload of a seed, days and events (also what `dream-bench fake-server`
/// writes for the mem0 comparison).
pub fn token_workload_of(seed: u64, days: u32, events: usize) -> synth::Workload {
    let today = midnight_of(now());
    let days = days.max(1);
    synth::generate(&spec_of(
        seed,
        6,
        events,
        today - Duration::days(i64::from(days) - 1),
        days,
        "t-",
        TOKEN_THEMES,
    ))
}

/// Themes of the token workload.
const TOKEN_THEMES: usize = 40;

/// The clock of each cycle when `per_day` cycles run on each of `days` days ending on the
/// benchmark's last day: evenly spaced, the last of each day at 23:00 (one a day: 23:00;
/// two: 11:00 and 23:00). `per_day` 0 is one cycle over everything, at the end.
pub fn schedule(days: u32, per_day: u32) -> Vec<DateTime<Utc>> {
    let end = now();
    if per_day == 0 {
        return vec![end];
    }
    let step = Duration::minutes(24 * 60 / i64::from(per_day));
    let mut out = Vec::new();
    for d in (0..i64::from(days.max(1))).rev() {
        let evening = end - Duration::days(d);
        for k in (0..i64::from(per_day)).rev() {
            out.push(evening - step * k as i32);
        }
    }
    out
}

/// One schedule's run of the token workload.
#[derive(Debug, Clone, Serialize)]
pub struct ScheduleRun {
    /// `one cycle`, `1 cycle a day`, ...
    pub schedule: String,
    pub cycles_per_day: u32,
    /// Cycles run, and cycles of the schedule not run because nothing was new.
    pub cycles: usize,
    pub idle_cycles: usize,
    pub events: usize,
    pub tokens: u64,
    pub calls: u64,
    pub cached: u64,
    pub tokens_per_event: f64,
    /// Per stage: from the fake server's requests when it runs in this process, else the
    /// totals the cycles' reports give (no split of the prompt).
    pub stages: BTreeMap<String, StageTokens>,
    /// Tokens of each cycle, in order.
    pub per_cycle: Vec<u64>,
    /// Active facts at the end (durable, and episodes apart in `episodes` when counted
    /// apart), and how many of the workload's `themes` one of them states.
    pub facts: usize,
    pub episodes: usize,
    pub themes: usize,
    pub themes_stated: usize,
    /// Pending review cards at the end, and the themes only a card states.
    pub cards: usize,
    pub themes_only_in_cards: usize,
    pub promoted: u64,
    pub reinforced: u64,
    pub queued: u64,
    pub refused: u64,
}

/// What a replay of a stream under a schedule gave.
pub(crate) struct Replayed {
    /// Each cycle's report, in order.
    pub(crate) reports: Vec<serde_json::Value>,
    /// Tokens of each cycle, in order.
    pub(crate) per_cycle: Vec<u64>,
    /// Where the tokens went, per stage (see [`parts`](crate::parts)).
    pub(crate) stages: BTreeMap<String, StageTokens>,
    /// The one measured cycle's figures, when the schedule was one cycle in a child.
    pub(crate) child: Option<Figures>,
    /// Cycles of the schedule not run because their stretch held no event.
    pub(crate) idle: usize,
}

/// Replay `events` into the repository at `repo` on the cycle clocks `times`: the events of
/// each cycle's stretch of time (after the previous clock, up to its own; the last takes
/// what is left) are written to the inbox just before it runs. With `batch`, the one cycle
/// runs in a child process (`dream-bench cycle`, for its wall time and memory); otherwise
/// the cycles run in this process. With `skip_idle`, a cycle whose stretch holds no event
/// is not run: it would find nothing new and call no model (the idle fast path), so its
/// tokens are none either way.
pub(crate) fn replay(
    opts: &Options,
    fake: Option<&dream_testkit::fake_llm::FakeLlm>,
    repo: &Path,
    events: &[Event],
    times: &[DateTime<Utc>],
    batch: bool,
    skip_idle: bool,
) -> Result<Replayed> {
    let mut per_cycle = Vec::new();
    let mut reports: Vec<serde_json::Value> = Vec::new();
    let mut child = None;
    let mut idle = 0;
    let mut from: Option<DateTime<Utc>> = None;
    let first_request = fake.map_or(0, |f| f.requests().len());
    // Each schedule starts with a cold prompt cache: what an earlier schedule sent is not
    // this one's.
    if let Some(f) = fake {
        f.clear_prefix_cache();
    }
    for (i, t) in times.iter().enumerate() {
        let stretch: Vec<Event> = events
            .iter()
            .filter(|e| from.is_none_or(|f| e.ts > f) && (e.ts <= *t || i + 1 == times.len()))
            .cloned()
            .collect();
        from = Some(*t);
        if skip_idle && stretch.is_empty() {
            idle += 1;
            continue;
        }
        write_events(repo, &format!("t-{i:05}.jsonl"), &stretch)?;
        let report = if batch {
            let r = measure_cycle(opts, repo, *t)?;
            child = Some(figures(&r.report, r.wall_ms, r.peak_rss_mb));
            r.report
        } else {
            let r = cycle_here(repo, *t)?;
            serde_json::to_value(&r).map_err(|e| Error::Other(e.to_string()))?
        };
        per_cycle.push(report["tokens"]["spent"].as_u64().unwrap_or(0));
        reports.push(report);
    }
    let n = |r: &serde_json::Value, p: &str| r.pointer(p).and_then(|v| v.as_u64()).unwrap_or(0);
    let stages = match fake {
        Some(f) => parts::split_requests(&f.requests()[first_request..]),
        None => {
            let mut out: BTreeMap<String, StageTokens> = BTreeMap::new();
            for r in &reports {
                for (stage, v) in r["tokens"]["stages"].as_object().into_iter().flatten() {
                    let s = out.entry(stage.clone()).or_default();
                    s.calls += n(v, "/calls");
                    s.input += n(v, "/prompt");
                    s.completion += n(v, "/completion");
                    s.cached += n(v, "/cached");
                    s.total += n(v, "/spent");
                }
            }
            out
        }
    };
    Ok(Replayed {
        reports,
        per_cycle,
        stages,
        child,
        idle,
    })
}

/// Run the token workload on a fresh repository under one schedule: the events of each
/// cycle's stretch of time are written to the inbox just before it runs. A one-cycle
/// schedule's cycle runs in a child process (`dream-bench cycle`, for its wall time and
/// memory); a daily schedule's cycles run in this process, as the repositories of the
/// other scenarios are prepared.
fn run_schedule(
    opts: &Options,
    fake: Option<&dream_testkit::fake_llm::FakeLlm>,
    repo: &Path,
    w: &synth::Workload,
    per_day: u32,
) -> Result<(ScheduleRun, Option<Figures>)> {
    let keys = token_config(opts);
    new_repo(repo)?;
    set_config(repo, &keys)?;
    let times = schedule(opts.token_days, per_day);
    let Replayed {
        reports,
        per_cycle,
        stages,
        child,
        ..
    } = replay(opts, fake, repo, &w.events, &times, per_day == 0, false)?;
    let n = |r: &serde_json::Value, p: &str| r.pointer(p).and_then(|v| v.as_u64()).unwrap_or(0);
    let sum = |p: &str| reports.iter().map(|r| n(r, p)).sum::<u64>();
    let store = dream_engine::edges::store::Store::open(repo)?;
    let memory = store.load_memory(now().date_naive())?;
    let (cards, _) = store.pending_cards()?;
    let stated =
        |text: &str, theme: &str| dream_core::text::measures::similarity(theme, text) >= 0.9;
    let in_facts: Vec<bool> = w
        .themes
        .iter()
        .map(|t| memory.facts().any(|(_, f)| stated(&f.text, t)))
        .collect();
    let only_cards = w
        .themes
        .iter()
        .zip(&in_facts)
        .filter(|(t, found)| !**found && cards.iter().any(|c| stated(&c.text, t)))
        .count();
    let tokens = sum("/tokens/spent");
    let run = ScheduleRun {
        schedule: match per_day {
            0 => "one cycle".into(),
            1 => "1 cycle a day".into(),
            k => format!("{k} cycles a day"),
        },
        cycles_per_day: per_day,
        cycles: times.len(),
        idle_cycles: 0,
        events: w.events.len(),
        tokens,
        calls: sum("/tokens/calls"),
        cached: sum("/tokens/cached"),
        tokens_per_event: round2(tokens as f64 / w.events.len().max(1) as f64),
        stages,
        per_cycle,
        facts: memory.facts().count(),
        episodes: 0,
        themes: TOKEN_THEMES,
        themes_stated: in_facts.iter().filter(|f| **f).count(),
        cards: cards.len(),
        themes_only_in_cards: only_cards,
        promoted: sum("/candidates/promoted"),
        reinforced: sum("/candidates/reinforced"),
        queued: sum("/candidates/queued"),
        refused: sum("/candidates/refused"),
    };
    Ok((run, child))
}

/// The config keys of the token scenario's repositories.
pub(crate) fn token_config(opts: &Options) -> Vec<(&'static str, toml::Value)> {
    let mut keys: Vec<(&str, toml::Value)> =
        vec![("budget.tokens_per_cycle", toml::Value::Integer(1 << 40))];
    if let Some(url) = &opts.llm_url {
        keys.push(("llm.provider", toml::Value::String("openai".into())));
        keys.push(("llm.base_url", toml::Value::String(url.clone())));
        keys.push(("llm.model", toml::Value::String(opts.llm_model.clone())));
    }
    keys
}

/// Tokens through an OpenAI-compatible server on the schedules of `--cycles-per-day` (one
/// cycle over everything, a cycle a day, ...), per event and per promoted fact, with where
/// they went; beside a per-event extractor on the same workload.
fn tokens(
    opts: &Options,
    fake: Option<&dream_testkit::fake_llm::FakeLlm>,
    dir: &Path,
) -> Result<Vec<ScenarioResult>> {
    let mut out = Vec::new();
    for &events in &opts.token_events {
        out.push(tokens_at(
            opts,
            fake,
            &dir.join(format!("e{events}")),
            events,
        )?);
    }
    Ok(out)
}

fn tokens_at(
    opts: &Options,
    fake: Option<&dream_testkit::fake_llm::FakeLlm>,
    dir: &Path,
    events: usize,
) -> Result<ScenarioResult> {
    let w = token_workload(opts, events);
    let mut notes = Vec::new();
    let mut extra = BTreeMap::new();
    let days = opts.token_days.max(1);
    let description = format!(
        "{events} events over {days} days: tokens per event on each schedule, and per promoted fact against a per-event extractor"
    );
    let params = serde_json::json!({
        "events": events, "days": days, "themes": TOKEN_THEMES,
        "cycles_per_day": opts.cycles_per_day, "llm_url": opts.llm_url, "model": opts.llm_model,
    });
    // Whether the repositories' provider takes prompts at all.
    let probe = dir.join("probe");
    new_repo(&probe)?;
    set_config(&probe, &token_config(opts))?;
    let config = dream_engine::config::load(&probe)?;
    let provider = match dream_engine::providers::llm(&config) {
        Ok(p) if !p.offline() => p,
        Ok(_) | Err(_) => {
            notes.push("no LLM figures: this scenario needs the openai provider: run with --fake-llm (the tests' fake server) or --llm-url URL (any OpenAI-compatible server)".into());
            return Ok(ScenarioResult {
                name: "tokens".into(),
                description,
                params,
                median: Figures::default(),
                runs: Vec::new(),
                targets: Vec::new(),
                notes,
                extra,
                schedules: Vec::new(),
            });
        }
    };
    let mut schedules = Vec::new();
    let mut batch: Option<Figures> = None;
    for &per_day in &opts.cycles_per_day {
        let (run, child) = run_schedule(opts, fake, &dir.join(format!("c{per_day}")), &w, per_day)?;
        if child.is_some() {
            batch = child;
        }
        schedules.push(run);
    }
    let mut targets = Vec::new();
    let one = schedules.iter().find(|s| s.cycles_per_day == 0).cloned();
    if let Some(one) = &one {
        for s in schedules.iter().filter(|s| s.cycles_per_day > 0) {
            targets.push(Target::at_most(
                &format!("tokens per event, {} / one cycle", s.schedule),
                s.tokens_per_event / one.tokens_per_event.max(f64::MIN_POSITIVE),
                1.5,
                "x",
            ));
        }
    }
    for s in &schedules {
        let k = format!("c{}", s.cycles_per_day);
        extra.insert(format!("{k}_tokens"), s.tokens as f64);
        extra.insert(format!("{k}_calls"), s.calls as f64);
        extra.insert(format!("{k}_tokens_per_event"), s.tokens_per_event);
        extra.insert(format!("{k}_facts"), s.facts as f64);
        extra.insert(format!("{k}_themes_stated"), s.themes_stated as f64);
    }

    // The baseline: a per-event extractor (one call per event, as mem0-style tools make)
    // with the same instructions as dream's reflect step, through the same provider, so
    // the difference is what consolidation changes: which events are asked about, and how
    // many at once. (mem0 also makes an update call per extracted fact and uses a longer
    // prompt, so this baseline is the cheaper one; scripts/mem0-compare.py measures mem0.)
    if let Some(one) = &one {
        let (mut spent, mut calls, mut failed) = (0u64, 0u64, 0u64);
        let started = Instant::now();
        for event in &w.events {
            let req = ReflectRequest {
                cluster: 0,
                events: vec![EventView::of(event, true)],
                singles: false,
            };
            let call = prompts::reflect_call(&req, config.llm.max_tokens);
            match provider.chat_json(&call) {
                Ok(reply) => {
                    calls += 1;
                    spent += if reply.usage.total() > 0 {
                        reply.usage.total()
                    } else {
                        provider.estimate_chat(&call)
                    };
                }
                Err(_) => failed += 1,
            }
        }
        extra.insert("baseline_tokens".into(), spent as f64);
        extra.insert("baseline_calls".into(), calls as f64);
        extra.insert("baseline_failed_calls".into(), failed as f64);
        // One call after another, as an extractor called per incoming event makes them.
        extra.insert(
            "baseline_wall_ms".into(),
            round2(started.elapsed().as_secs_f64() * 1000.0),
        );
        if let Some(f) = &batch {
            extra.insert("dream_wall_ms".into(), round2(f.wall_ms));
        }
        let promoted = one.promoted as f64;
        if promoted > 0.0 {
            let dream_per_fact = one.tokens as f64 / promoted;
            let base_per_fact = spent as f64 / promoted;
            extra.insert("dream_tokens_per_fact".into(), round2(dream_per_fact));
            extra.insert("baseline_tokens_per_fact".into(), round2(base_per_fact));
            targets.push(Target::at_most(
                "tokens per promoted fact / baseline",
                dream_per_fact / base_per_fact.max(1.0),
                0.2,
                "x",
            ));
        } else {
            notes.push(
                "dream promoted no fact on this workload, so there is no per-fact figure".into(),
            );
        }
        notes.push("the baseline's tokens are divided by dream's promoted facts: both read the same events, and a per-event extractor can at best find the same facts".into());
    }
    if fake.is_none() {
        notes.push("not the in-process fake server: stage figures are the cycles' reports (prompt and completion), without the split of the prompt".into());
    }
    Ok(ScenarioResult {
        name: "tokens".into(),
        description,
        params,
        median: batch.clone().unwrap_or_default(),
        runs: batch.into_iter().collect(),
        targets,
        notes,
        extra,
        schedules,
    })
}

/// The benchmark as a table a person can scan.
/// A repository of `n` facts (distinct sentences across the blocks, a fifth of them
/// episodes) written straight into its block files, as years of cycles would leave them.
fn facts_repo(dir: &Path, n: usize) -> Result<()> {
    use dream_core::schema::{Block, BlockFile, Fact, Origin};
    new_repo(dir)?;
    let today = now().date_naive();
    let topics = [
        "deploys",
        "the build",
        "reviews",
        "travel",
        "the garden",
        "music",
        "the team",
        "meetings",
    ];
    let mut blocks: Vec<BlockFile> = Block::ALL.iter().map(|b| BlockFile::empty(*b)).collect();
    for i in 0..n {
        let block = match i % 10 {
            0 | 1 => Block::Episodes,
            2 => Block::Persona,
            3 => Block::Scratch,
            _ => Block::Human,
        };
        let topic = topics[i % topics.len()];
        let text = format!(
            "Fact {i} about {topic}: the user prefers option {} for {topic} on project p{}.",
            i * 7 % 101,
            i % 37
        );
        let last = today - Duration::days((i % 90) as i64);
        let fact = Fact::new(
            dream_core::schema::text_id("f", &text),
            text,
            ["knowledge", "preferences", "project", "event"][i % 4].into(),
            Origin::Auto,
            (0..(i % 12 + 1)).map(|k| format!("ev_{i}_{k}")).collect(),
            last - Duration::days(30),
            last,
        );
        blocks
            .iter_mut()
            .find(|b| b.block == block)
            .expect("every block")
            .push(fact);
    }
    for bf in &blocks {
        write_atomic(&dir.join(bf.block.path()), bf.render().as_bytes())?;
    }
    Ok(())
}

/// `dream context` as the hook runs it, and `recall` through `dream mcp`, on `facts` facts.
fn agents(opts: &Options, dir: &Path) -> Result<ScenarioResult> {
    use std::io::{BufRead, BufReader, Write};
    let dream_exe = opts
        .exe
        .with_file_name(format!("dream{}", std::env::consts::EXE_SUFFIX));
    if !dream_exe.exists() {
        return Err(Error::Usage(format!(
            "the agents scenario runs the dream binary beside dream-bench ({}); build it too (cargo build --release)",
            dream_exe.display()
        )));
    }
    facts_repo(dir, opts.facts)?;
    let config = Config::default();
    let runs = opts.runs.max(5);
    let mut context_ms = Vec::new();
    let mut tokens = 0.0;
    for _ in 0..runs {
        let mut cmd = std::process::Command::new(&dream_exe);
        cmd.args(["--repo"])
            .arg(dir)
            .args(["--now", NOW, "context", "--hook", "claude-code"]);
        let (ok, stdout, stderr, wall) = spawn_measured(cmd)?;
        if !ok {
            return Err(Error::Other(format!(
                "dream context failed: {}",
                stderr.trim()
            )));
        }
        tokens = dream_core::llm::budget::estimate_tokens(&String::from_utf8_lossy(&stdout)) as f64;
        context_ms.push(wall);
    }

    // The MCP server, driven by JSON-RPC lines as any client sends them.
    let mut child = std::process::Command::new(&dream_exe)
        .arg("--repo")
        .arg(dir)
        .args(["--now", NOW, "mcp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context(|| "starting dream mcp".into())?;
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut send = |line: serde_json::Value, wait: bool| -> Result<(f64, String)> {
        let started = Instant::now();
        writeln!(stdin, "{line}").context(|| "writing to dream mcp".into())?;
        stdin.flush().context(|| "writing to dream mcp".into())?;
        let mut reply = String::new();
        if wait {
            stdout
                .read_line(&mut reply)
                .context(|| "reading from dream mcp".into())?;
        }
        Ok((started.elapsed().as_secs_f64() * 1000.0, reply))
    };
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "dream-bench", "version": "1"}}}),
        true,
    )?;
    send(
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        false,
    )?;
    let queries = [
        "how does the user deploy",
        "garden preferences",
        "what about music on project p3",
        "the team meetings",
        "option 42 for reviews",
    ];
    let mut recall_ms = Vec::new();
    let mut first_ms = 0.0;
    let mut hits = 0usize;
    for i in 0..(runs * 4 + 1) {
        let q = queries[i % queries.len()];
        let (ms, reply) = send(
            serde_json::json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": q}}}),
            true,
        )?;
        let v: serde_json::Value = serde_json::from_str(&reply)
            .map_err(|e| Error::Other(format!("dream mcp replied {reply:?}: {e}")))?;
        let text = v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        hits = text.lines().filter(|l| l.starts_with("- ")).count();
        if i == 0 {
            first_ms = ms;
        } else {
            recall_ms.push(ms);
        }
    }
    drop(stdin);
    let _ = child.wait();

    let ctx = median(context_ms.clone());
    let recall = median(recall_ms.clone());
    let mut extra = BTreeMap::new();
    extra.insert("context_wall_ms".into(), round2(ctx));
    extra.insert("context_tokens".into(), tokens);
    extra.insert("context_budget".into(), config.context.budget_tokens as f64);
    extra.insert("recall_first_call_ms".into(), round2(first_ms));
    extra.insert("recall_ms".into(), round2(recall));
    extra.insert("recall_hits".into(), hits as f64);
    Ok(ScenarioResult {
        name: "agents".into(),
        description: format!(
            "`dream context` (the SessionStart hook's process) and `recall` over `dream mcp` on {} facts",
            opts.facts
        ),
        params: serde_json::json!({"facts": opts.facts, "runs": runs, "recall_calls": recall_ms.len()}),
        targets: vec![
            Target::at_most("dream context wall time", ctx, 100.0, "ms"),
            Target::at_most("context within its budget", tokens, config.context.budget_tokens as f64, "tokens"),
            Target::at_most("recall round trip", recall, 50.0, "ms"),
        ],
        median: Figures {
            wall_ms: round2(ctx),
            ..Figures::default()
        },
        runs: Vec::new(),
        notes: vec![format!(
            "the first recall embeds every fact once ({first_ms:.1} ms with the builtin embedder); later calls reuse the vectors"
        )],
        extra,
        schedules: Vec::new(),
    })
}

pub fn render(b: &BenchReport) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "dream bench: {} runs per scenario (medians), {} cpus, {}/{}, {} build",
        b.runs,
        b.machine.cpus,
        b.machine.os,
        b.machine.arch,
        if b.machine.release_build {
            "release"
        } else {
            "debug (figures are not representative)"
        }
    );
    for s in &b.scenarios {
        let _ = writeln!(o, "\n{}: {}", s.name, s.description);
        let m = &s.median;
        if !s.runs.is_empty() {
            let stages: Vec<String> = m
                .stages_ms
                .iter()
                .map(|(k, v)| format!("{k} {v:.0}"))
                .collect();
            let _ = writeln!(o, "  stages (ms)   {}", stages.join(", "));
            let _ = writeln!(
                o,
                "  engine {:.0} ms, process wall {:.0} ms, peak memory {:.0} MiB, llm calls {:.0}, tokens {:.0}",
                m.engine_ms, m.wall_ms, m.peak_rss_mb, m.llm_calls, m.tokens
            );
            let _ = writeln!(
                o,
                "  {:.0} new events, window {:.0}, {:.0} clusters; {:.0} promoted, {:.0} queued, {:.0} reinforced, {:.0} refused",
                m.new_events, m.window_events, m.clusters, m.promoted, m.queued, m.reinforced, m.refused
            );
        }
        for (k, v) in &s.extra {
            let _ = writeln!(o, "  {k:<36} {v}");
        }
        for r in &s.schedules {
            render_schedule(&mut o, r);
        }
        for t in &s.targets {
            let _ = writeln!(
                o,
                "  target {:<40} {} {} (limit {} {})  {}",
                t.name,
                t.measured,
                t.unit,
                t.limit,
                t.unit,
                if t.met { "met" } else { "NOT MET" }
            );
        }
        for n in &s.notes {
            let _ = writeln!(o, "  note: {n}");
        }
    }
    o
}

/// One schedule of the token scenario: its totals, then a row per stage.
fn render_schedule(o: &mut String, r: &ScheduleRun) {
    use std::fmt::Write as _;
    let idle = if r.idle_cycles > 0 {
        format!(", {} idle not run", r.idle_cycles)
    } else {
        String::new()
    };
    let kept = if r.themes > 0 {
        format!(
            "{} facts stating {}/{} themes ({} more only in cards)",
            r.facts, r.themes_stated, r.themes, r.themes_only_in_cards
        )
    } else {
        format!(
            "{} facts, {} episodes, {} cards",
            r.facts, r.episodes, r.cards
        )
    };
    let _ = writeln!(
        o,
        "  {} ({} cycles{idle}): {} tokens, {} calls, {} tokens per event, {} cached; {kept}; {} promoted, {} reinforced, {} queued, {} refused",
        r.schedule,
        r.cycles,
        r.tokens,
        r.calls,
        r.tokens_per_event,
        r.cached,
        r.promoted,
        r.reinforced,
        r.queued,
        r.refused
    );
    parts::render(o, &r.stages);
    if r.per_cycle.len() > 1 && r.per_cycle.len() <= 30 {
        let cycles: Vec<String> = r.per_cycle.iter().map(u64::to_string).collect();
        let _ = writeln!(o, "    per cycle: {}", cycles.join(", "));
    } else if r.per_cycle.len() > 30 {
        let mut c: Vec<f64> = r.per_cycle.iter().map(|&t| t as f64).collect();
        let most = c.iter().copied().fold(0.0, f64::max);
        c.retain(|&t| t > 0.0);
        let _ = writeln!(
            o,
            "    per cycle: {} cycles spent tokens, median {:.0}, most {most:.0}",
            c.len(),
            median(c)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_take_the_middle_run() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(Vec::new()).is_nan());
    }

    #[test]
    fn the_adjusted_rand_index_is_one_for_the_same_partition_only() {
        let a = cluster::Clustering {
            clusters: vec![vec![0, 1, 2], vec![3, 4]],
            noise: vec![5],
        };
        let same = cluster::Clustering {
            clusters: vec![vec![3, 4], vec![0, 1, 2]],
            noise: vec![5],
        };
        let other = cluster::Clustering {
            clusters: vec![vec![0, 1], vec![2, 3, 4]],
            noise: vec![5],
        };
        assert_eq!(adjusted_rand(&a, &same, 6), 1.0);
        assert_eq!(same_clusters(&a, &same), 1.0);
        assert!(adjusted_rand(&a, &other, 6) < 0.5);
        assert_eq!(same_clusters(&a, &other), 0.0);
    }
}
