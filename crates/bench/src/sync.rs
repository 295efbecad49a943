//! `dream-bench sync`: what sharing one memory across machines costs (issue 45). A bare
//! repository on this disk stands for the remote (`file://`, so the figures are dream's and
//! git's work, not a network's); a dreamer and `members` members join it; each member's
//! inbox gets `events` events of the test kit's synthetic workload; then, run after run on
//! fresh copies, the time of each member's first sync (ingest here, ship, push, fetch),
//! of an idle member sync (nothing new), of the dreamer's sync (fetch, store every member's
//! events), and the remote's size on disk. Medians of `runs`.

use std::path::Path;
use std::time::Instant;

use chrono::Utc;
use serde::Serialize;

use dream_engine::error::{Context, Error, Result};
use dream_engine::machines::{self, Joining};

/// What one scenario measured (milliseconds, medians over the runs).
#[derive(Debug, Serialize)]
pub struct SyncReport {
    pub members: usize,
    pub events_per_member: usize,
    pub runs: usize,
    pub member_first_sync_ms: f64,
    pub member_idle_sync_ms: f64,
    pub dreamer_sync_ms: f64,
    /// Events the dreamer stored (all members), as a check.
    pub dreamer_ingested: usize,
    pub remote_bytes: u64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let r = v.get(v.len() / 2).copied().unwrap_or(0.0);
    (r * 10.0).round() / 10.0
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => total += size_of(&e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// One run: a fresh remote, dreamer and members; the timings of its syncs.
fn one_run(members: usize, events: usize, seed: u64) -> Result<(f64, f64, f64, usize, u64)> {
    let dir = tempfile::tempdir().context(|| "making a scratch folder".into())?;
    let remote = dir.path().join("memory.git");
    let ok = std::process::Command::new("git")
        .args(["init", "--quiet", "--bare"])
        .arg(&remote)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err(Error::Other(
            "git init --bare failed: is git installed?".into(),
        ));
    }
    let url = format!("file://{}", remote.display());
    let now = Utc::now();
    let dreamer = dir.path().join("dreamer");
    machines::init_remote(&dreamer, &url, "dreamer", now)?;
    let workload = crate::bench::token_workload_of(seed, 7, events);
    let (mut first, mut idle) = (Vec::new(), Vec::new());
    for m in 0..members {
        let root = dir.path().join(format!("member-{m}"));
        let j = Joining {
            machine: format!("member-{m}"),
            person: Some(format!("person-{m}")),
            projects: Vec::new(),
        };
        machines::join(&url, &root, &j, now)?;
        let mut text = String::new();
        for e in &workload.events {
            let mut e = e.clone();
            e.id = format!("{}-m{m}", e.id);
            text.push_str(&serde_json::to_string(&e).unwrap_or_default());
            text.push('\n');
        }
        std::fs::write(root.join("events/bench.jsonl"), text)
            .context(|| "writing a member's inbox".into())?;
        let t = Instant::now();
        let s = machines::sync(&root, now, None)?;
        first.push(ms(t));
        if !s.notes.is_empty() || s.shipped == 0 {
            return Err(Error::Other(format!(
                "a member's sync did not ship: {:?}",
                s.notes
            )));
        }
        let t = Instant::now();
        machines::sync(&root, now, None)?;
        idle.push(ms(t));
    }
    let t = Instant::now();
    let s = machines::sync(&dreamer, now, None)?;
    let dreamer_ms = ms(t);
    Ok((
        median(first),
        median(idle),
        dreamer_ms,
        s.ingested,
        size_of(&remote),
    ))
}

/// `runs` runs of the scenario; medians.
pub fn measure_sync(members: usize, events: usize, runs: usize, seed: u64) -> Result<SyncReport> {
    let mut rows = Vec::new();
    for _ in 0..runs.max(1) {
        rows.push(one_run(members, events, seed)?);
    }
    Ok(SyncReport {
        members,
        events_per_member: events,
        runs: rows.len(),
        member_first_sync_ms: median(rows.iter().map(|r| r.0).collect()),
        member_idle_sync_ms: median(rows.iter().map(|r| r.1).collect()),
        dreamer_sync_ms: median(rows.iter().map(|r| r.2).collect()),
        dreamer_ingested: rows.last().map_or(0, |r| r.3),
        remote_bytes: rows.last().map_or(0, |r| r.4),
    })
}
