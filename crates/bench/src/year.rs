//! The `year` scenario: a heavy user's year, `--year-events` (a million by default) over
//! `--year-days` (365) of the synthetic workload, measured at growing lengths of history
//! (`--year-points`: the last at the whole year, each before it at half the days of the
//! next), so each figure's growth with the history is read off:
//!
//! - **the first run's backfill**: every event of the history in the inbox of a new
//!   repository, one cycle (a child process, its peak memory its own) that ingests and
//!   embeds them all and consolidates them window by window (the backfill), then the
//!   current window, against the fake server with room in the budget: its time, tokens,
//!   calls and peak memory;
//! - **the state's size** after it (`.dream/state.sqlite`, the repository's `.git`);
//! - **the day's cycle**: the next day's events (`events / days` of the same person), one
//!   evening cycle over the history (the window's load: its events and the time to read
//!   them);
//! - **the idle cycle**: the same repository with nothing new (median of `--runs`).
//!
//! Growth is the exponent k in figure ~ days^k between the first and the last point (0:
//! flat, 1: linear). The targets: every cycle's peak memory within [`MEMORY_LIMIT_MB`], and
//! the day's and the idle cycle's time flat in the history (k well under 1: nothing in a
//! cycle reads the whole history).

use std::collections::BTreeMap;
use std::path::Path;

use chrono::Duration;

use dream_core::sources::event::Event;
use dream_engine::error::Result;
use dream_testkit::synth;

use crate::bench::{
    evening_of, measure_cycle, midnight_of, new_repo, now, round2, set_config, spec_of, themes_for,
    token_config, write_events, Figures, Options, ScenarioResult, Target,
};

/// The peak memory a cycle may take (the heavy scenario's limit).
pub const MEMORY_LIMIT_MB: f64 = 300.0;

/// Growth exponent k of a figure between two points: figure ~ days^k.
fn growth(a: (f64, f64), b: (f64, f64)) -> f64 {
    if a.0 <= 0.0 || b.0 <= a.0 || a.1 <= 0.0 || b.1 <= 0.0 {
        return f64::NAN;
    }
    (b.1 / a.1).ln() / (b.0 / a.0).ln()
}

/// Bytes of the files under `dir`.
fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match entry.metadata() {
                Ok(m) if m.is_dir() => stack.push(entry.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

fn mib(bytes: u64) -> f64 {
    round2(bytes as f64 / (1024.0 * 1024.0))
}

/// What one point of the year measured.
struct Point {
    days: u32,
    events: usize,
    backfill: Figures,
    backfill_windows: u64,
    state_mb: f64,
    git_mb: f64,
    day: Figures,
    day_window_ms: f64,
    idle: Figures,
}

/// The scenario (see the module).
pub fn run(opts: &Options, dir: &Path) -> Result<ScenarioResult> {
    let days = opts.year_days.max(2);
    let points = opts.year_points.clamp(1, 8);
    // The history lengths, the last the whole year.
    let lengths: Vec<u32> = (0..points)
        .map(|i| (days >> (points - 1 - i)).max(1))
        .collect();
    let per_day = opts.year_events.div_ceil(days as usize).max(1);
    let start = midnight_of(now()) - Duration::days(i64::from(days) - 1);
    let w = synth::generate(&spec_of(
        opts.seed,
        8,
        opts.year_events,
        start,
        days,
        "y-",
        themes_for(opts.year_events),
    ));
    let mut by_day: BTreeMap<i64, Vec<Event>> = BTreeMap::new();
    for e in w.events {
        by_day.entry((e.ts - start).num_days()).or_default().push(e);
    }
    let keys = token_config(opts);
    let mut measured: Vec<Point> = Vec::new();
    for &len in &lengths {
        let repo = dir.join(format!("d{len}"));
        new_repo(&repo)?;
        set_config(&repo, &keys)?;
        let mut events = 0;
        for (day, evs) in by_day.range(..i64::from(len)) {
            write_events(&repo, &format!("y-{day:03}.jsonl"), evs)?;
            events += evs.len();
        }
        let last_evening = evening_of(start + Duration::days(i64::from(len) - 1));
        tracing::info!(days = len, events, "year: the first run's backfill");
        let first = measure_cycle(opts, &repo, last_evening)?;
        let backfill_windows = first.report["backfill"]["windows"].as_u64().unwrap_or(0);
        let backfill = crate::bench::figures(&first.report, first.wall_ms, first.peak_rss_mb);
        let state_mb = mib(size_of(&repo.join(".dream")));
        let git_mb = mib(size_of(&repo.join(".git")));
        // The next day: a day's events of the same person (the same themes), after the
        // history.
        let next = synth::generate(&spec_of(
            opts.seed,
            9,
            per_day,
            start + Duration::days(i64::from(len)),
            1,
            &format!("yd{len}-"),
            themes_for(opts.year_events),
        ))
        .events;
        write_events(&repo, &format!("y-{len:03}.jsonl"), &next)?;
        let day_evening = evening_of(start + Duration::days(i64::from(len)));
        let day_run = measure_cycle(opts, &repo, day_evening)?;
        let day_window_ms = day_run.report["timings_ms"]["window"]
            .as_f64()
            .unwrap_or(0.0);
        let day = crate::bench::figures(&day_run.report, day_run.wall_ms, day_run.peak_rss_mb);
        let mut idle_runs = Vec::new();
        for k in 0..opts.runs.max(1) {
            let at = day_evening + Duration::minutes(10 * (k as i64 + 1));
            let r = measure_cycle(opts, &repo, at)?;
            idle_runs.push(crate::bench::figures(&r.report, r.wall_ms, r.peak_rss_mb));
        }
        let idle = crate::bench::median_figures(&idle_runs);
        measured.push(Point {
            days: len,
            events,
            backfill,
            backfill_windows,
            state_mb,
            git_mb,
            day,
            day_window_ms,
            idle,
        });
    }

    let mut extra = BTreeMap::new();
    let mut targets = Vec::new();
    for p in &measured {
        let k = format!("d{}", p.days);
        extra.insert(format!("{k}_events"), p.events as f64);
        extra.insert(
            format!("{k}_backfill_wall_s"),
            round2(p.backfill.wall_ms / 1000.0),
        );
        extra.insert(
            format!("{k}_backfill_engine_s"),
            round2(p.backfill.engine_ms / 1000.0),
        );
        extra.insert(
            format!("{k}_backfill_peak_mb"),
            round2(p.backfill.peak_rss_mb),
        );
        extra.insert(format!("{k}_backfill_tokens"), p.backfill.tokens);
        extra.insert(format!("{k}_backfill_calls"), p.backfill.llm_calls);
        extra.insert(format!("{k}_backfill_windows"), p.backfill_windows as f64);
        extra.insert(
            format!("{k}_backfill_tokens_per_event"),
            round2(p.backfill.tokens / p.events.max(1) as f64),
        );
        extra.insert(format!("{k}_state_mb"), p.state_mb);
        extra.insert(format!("{k}_git_mb"), p.git_mb);
        extra.insert(format!("{k}_day_new_events"), p.day.new_events);
        extra.insert(format!("{k}_day_window_events"), p.day.window_events);
        extra.insert(format!("{k}_day_window_ms"), p.day_window_ms);
        extra.insert(format!("{k}_day_engine_ms"), p.day.engine_ms);
        extra.insert(format!("{k}_day_wall_ms"), round2(p.day.wall_ms));
        extra.insert(format!("{k}_day_peak_mb"), round2(p.day.peak_rss_mb));
        extra.insert(format!("{k}_day_tokens"), p.day.tokens);
        extra.insert(format!("{k}_idle_engine_ms"), p.idle.engine_ms);
        extra.insert(format!("{k}_idle_wall_ms"), round2(p.idle.wall_ms));
        extra.insert(format!("{k}_idle_peak_mb"), round2(p.idle.peak_rss_mb));
        for (what, mb) in [
            ("first run's backfill", p.backfill.peak_rss_mb),
            ("day's cycle", p.day.peak_rss_mb),
            ("idle cycle", p.idle.peak_rss_mb),
        ] {
            targets.push(Target::at_most(
                &format!("peak memory, {what}, {} days", p.days),
                mb,
                MEMORY_LIMIT_MB,
                "MiB",
            ));
        }
    }
    if let (Some(a), Some(b)) = (measured.first(), measured.last()) {
        if b.days > a.days {
            let (x, y) = (f64::from(a.days), f64::from(b.days));
            let rows: [(&str, f64, f64); 9] = [
                ("backfill_wall", a.backfill.wall_ms, b.backfill.wall_ms),
                ("backfill_tokens", a.backfill.tokens, b.backfill.tokens),
                (
                    "backfill_peak",
                    a.backfill.peak_rss_mb,
                    b.backfill.peak_rss_mb,
                ),
                ("state_size", a.state_mb, b.state_mb),
                ("day_engine", a.day.engine_ms, b.day.engine_ms),
                (
                    "day_window_load",
                    a.day_window_ms.max(1.0),
                    b.day_window_ms.max(1.0),
                ),
                ("day_peak", a.day.peak_rss_mb, b.day.peak_rss_mb),
                (
                    "idle_engine",
                    a.idle.engine_ms.max(1.0),
                    b.idle.engine_ms.max(1.0),
                ),
                ("idle_peak", a.idle.peak_rss_mb, b.idle.peak_rss_mb),
            ];
            for (name, fa, fb) in rows {
                let k = growth((x, fa), (y, fb));
                if k.is_finite() {
                    extra.insert(format!("growth_{name}"), round2(k));
                }
            }
            for (name, fa, fb) in [
                ("day's cycle engine time", a.day.engine_ms, b.day.engine_ms),
                (
                    "idle cycle engine time",
                    a.idle.engine_ms.max(1.0),
                    b.idle.engine_ms.max(1.0),
                ),
            ] {
                let k = growth((x, fa), (y, fb));
                if k.is_finite() {
                    targets.push(Target::at_most(
                        &format!("growth of the {name} with the history (~days^k)"),
                        k,
                        0.5,
                        "k",
                    ));
                }
            }
        }
    }
    let notes = vec![
        "each point is a new repository whose inbox holds the first `days` days of the same year's stream; the first run is one cycle that backfills every window older than its own (budget without limit, against the fake server when given), then the next day's events are one evening cycle, then cycles with nothing new (median)".into(),
        "growth_* is the exponent k in figure ~ days^k between the first and the last point (1: proportional to the history, 0: independent of it)".into(),
        format!("peak memory: each cycle's own process (VmHWM); the limit is {MEMORY_LIMIT_MB} MiB, the heavy scenario's"),
    ];
    let last = measured.last();
    Ok(ScenarioResult {
        name: "year".into(),
        description: format!(
            "a heavy user's year: {} events over {days} days, measured at {} days of history",
            opts.year_events,
            lengths
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        params: serde_json::json!({
            "events": opts.year_events,
            "days": days,
            "points": lengths,
            "themes": themes_for(opts.year_events),
            "llm_url": opts.llm_url,
        }),
        median: last.map(|p| p.day.clone()).unwrap_or_default(),
        runs: measured
            .iter()
            .flat_map(|p| [p.backfill.clone(), p.day.clone(), p.idle.clone()])
            .collect(),
        targets,
        notes,
        extra,
        schedules: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_the_exponent_between_two_points() {
        assert!((growth((10.0, 5.0), (20.0, 10.0)) - 1.0).abs() < 1e-9);
        assert!(growth((10.0, 5.0), (40.0, 5.0)).abs() < 1e-9);
        assert!(growth((10.0, 0.0), (20.0, 5.0)).is_nan());
        assert!(growth((10.0, 1.0), (10.0, 5.0)).is_nan());
    }
}
