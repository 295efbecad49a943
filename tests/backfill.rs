//! The whole history, once: a first cycle on months of events consolidates what is older
//! than the rolling window, oldest first, one window at a time, within the token budget;
//! a budget stop or a kill is resumed by the next run; and old events still waiting are a
//! heartbeat warning with its fix, never silent.

use chrono::{DateTime, Duration, Utc};
use dream_testkit::fake_llm::FakeLlm;
use serde_json::Value;

use crate::llm::{dream, NOW};
use crate::util::{stderr, stdout, Env};

/// Topics a day apart within each, `gap` days between topics, the first one `days` before
/// NOW: `topics` topics each stated by the user on three days running.
fn history(topics: usize, days: i64, gap: i64) -> String {
    let now: DateTime<Utc> = NOW.parse().unwrap();
    let start = now - Duration::days(days);
    let lines = dream_testkit::fake_llm::topic_events(topics, 3, start);
    let mut out = String::new();
    for (i, line) in lines.lines().enumerate() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        let ts: DateTime<Utc> = v["ts"].as_str().unwrap().parse().unwrap();
        let shifted = ts + Duration::days(gap * (i / 3) as i64);
        v["ts"] = Value::String(shifted.to_rfc3339());
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}

/// The word each topic of `history` starts with (what its fact must name).
fn topic_word(lines: &str, topic: usize) -> String {
    let line = lines.lines().nth(topic * 3).unwrap();
    let v: Value = serde_json::from_str(line).unwrap();
    v["text"]
        .as_str()
        .unwrap()
        .split(' ')
        .nth(2)
        .unwrap()
        .to_string()
}

fn report(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(out), stderr(out)))
}

fn warned(report: &Value, rule: &str) -> bool {
    report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["rule"] == rule)
}

#[test]
fn a_first_run_consolidates_a_90_day_history_oldest_first_window_by_window() {
    // Seven topics 15 days apart from 92 days ago: six older than the 14-day window.
    let lines = history(7, 92, 14);
    let env = Env::new();
    env.init();
    env.write_inbox("agent.jsonl", &lines);
    let out = env.dream(&["run", "--now", NOW, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = report(&out);
    let b = &r["backfill"];
    assert_eq!(b["windows"], 6, "{r}");
    assert_eq!(b["left"], 0, "{r}");
    assert_eq!(b["stopped"], false, "{r}");
    assert_eq!(b["new_events"], 18, "{r}");
    assert!(!warned(&r, "unreflected"), "{r}");
    // Every topic, the oldest too, reached memory.
    let facts = env.facts().join("\n");
    for t in 0..7 {
        let w = topic_word(&lines, t);
        assert!(facts.contains(&w), "topic {t} ({w}) missing: {facts}");
    }
    // One commit per older window, oldest first in history, then the current window's.
    let subjects: Vec<String> = env.commits().into_iter().rev().map(|c| c.0).collect();
    let backfills: Vec<&String> = subjects
        .iter()
        .filter(|s| s.starts_with("dream: backfill "))
        .collect();
    assert_eq!(backfills.len(), 6, "{subjects:#?}");
    let mut sorted = backfills.clone();
    sorted.sort();
    assert_eq!(backfills, sorted, "oldest first: {subjects:#?}");
    assert!(backfills[0].starts_with("dream: backfill 2026-08-06 to 2026-08-20: evening cycle"));
    // The text report says so too.
    let status = env.dream(&["status"]);
    assert!(
        !stdout(&status).contains("events older than"),
        "{}",
        stdout(&status)
    );
    // Nothing is left to do: the next run is idle and does not backfill again.
    let r = env.run_cycle("2026-11-07T09:00:00Z");
    assert!(r.get("backfill").is_none(), "{r}");
}

#[test]
fn a_window_routed_in_parts_keeps_what_the_whole_window_keeps() {
    // `cluster.route_part_events` bounds a cycle's memory on a big window (a year's
    // backfill) by gating, judging and routing its proposals in parts. At 1, every
    // proposal is a part of its own, and what memory keeps is the same.
    let lines = history(7, 92, 14);
    let run = |parts: bool| {
        let env = Env::new();
        env.init();
        if parts {
            let toml = env.read("dream.toml");
            let default = "route_part_events = 4096";
            assert!(toml.contains(default), "{toml}");
            let toml = toml.replacen(default, "route_part_events = 1", 1);
            std::fs::write(env.repo.join("dream.toml"), toml).unwrap();
        }
        env.write_inbox("agent.jsonl", &lines);
        let fake = FakeLlm::start();
        let out = dream(&env, &fake, &[], &["run", "--now", NOW, "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let r = report(&out);
        (env, r, fake.calls("judge").len())
    };
    let (whole, r_whole, _) = run(false);
    let (parts, r_parts, _) = run(true);
    assert_eq!(r_parts["backfill"]["windows"], 6, "{r_parts}");
    assert_eq!(parts.facts(), whole.facts());
    assert_eq!(parts.cards(), whole.cards());
    assert_eq!(r_parts["candidates"], r_whole["candidates"], "{r_parts}");
    let facts = parts.facts().join("\n");
    for t in 0..7 {
        assert!(facts.contains(&topic_word(&lines, t)), "topic {t}: {facts}");
    }
}

#[test]
fn the_budget_stops_the_backfill_with_a_warning_and_the_next_run_goes_on_from_there() {
    let lines = history(7, 92, 14);
    let env = Env::new();
    env.init();
    env.write_inbox("agent.jsonl", &lines);
    let fake = FakeLlm::start();
    let vars = [("DREAM_LLM_MAX_TOKENS", "300")];
    // Room for about two reflect calls of the seven.
    let out = dream(
        &env,
        &fake,
        &vars,
        &["run", "--now", NOW, "--json", "--budget", "3000"],
    );
    assert_eq!(out.status.code(), Some(10), "warnings: {}", stderr(&out));
    let r = report(&out);
    let b = &r["backfill"];
    assert_eq!(b["stopped"], true, "{r}");
    let done = b["windows"].as_u64().unwrap();
    assert!((1..6).contains(&done), "{r}");
    assert!(b["left"].as_u64().unwrap() > 0, "{r}");
    assert!(r["tokens"]["spent"].as_u64().unwrap() <= 3000, "{r}");
    assert!(warned(&r, "unreflected"), "{r}");
    let w = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["rule"] == "unreflected")
        .unwrap();
    assert!(w["fix"].as_str().unwrap().contains("dream backfill"), "{w}");
    // Progress, window by window, on stderr.
    assert!(
        stderr(&out).contains("dream: backfill 2026-08-06 to 2026-08-20"),
        "{}",
        stderr(&out)
    );
    let calls_first = fake.calls("reflect").len();
    // `dream status` shows the warning too.
    let status = env.dream(&["status", "--now", "2026-11-06T21:05:00Z"]);
    assert!(
        stdout(&status).contains("events older than the 14-day window are not yet reflected on"),
        "{}",
        stdout(&status)
    );

    // The next cycle, with room, goes on where the first stopped: no window is sent twice.
    let out = dream(&env, &fake, &vars, &["backfill", "--now", NOW, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = report(&out);
    assert_eq!(r["backfill"]["left"], 0, "{r}");
    assert!(!warned(&r, "unreflected"), "{r}");
    assert_eq!(
        fake.calls("reflect").len(),
        7,
        "seven topics, each sent once (first run {calls_first})"
    );
    let facts = env.facts().join("\n");
    for t in 0..7 {
        assert!(facts.contains(&topic_word(&lines, t)), "topic {t}: {facts}");
    }
}

#[test]
fn a_backfill_killed_before_its_commit_point_is_done_again_with_the_same_result() {
    let lines = history(5, 80, 15);
    let clean = Env::new();
    clean.init();
    clean.write_inbox("agent.jsonl", &lines);
    clean.run_cycle(NOW);

    let env = Env::new();
    env.init();
    env.write_inbox("agent.jsonl", &lines);
    let out = env
        .cmd()
        .args(["run", "--now", NOW])
        .env("DREAM_CRASH_AT", "commit the state")
        .output()
        .unwrap();
    assert!(!out.status.success(), "the crash point was reached");
    assert!(
        env.facts().is_empty(),
        "nothing published before the commit point"
    );
    let r = env.run_cycle(NOW);
    assert_eq!(r["backfill"]["left"], 0, "{r}");
    assert_eq!(env.facts(), clean.facts());
}

#[test]
fn old_events_no_cycle_reflects_on_are_a_warning_with_the_fix() {
    let lines = history(3, 60, 15);
    let env = Env::new();
    env.init();
    env.write_inbox("agent.jsonl", &lines);
    // The morning cycle ingests but never reflects: the old events wait, and it says so.
    let out = env.dream(&["run", "--cycle", "morning", "--now", NOW, "--json"]);
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
    let r = report(&out);
    let w = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["rule"] == "unreflected")
        .unwrap_or_else(|| panic!("{r}"))
        .clone();
    let cause = w["cause"].as_str().unwrap();
    assert!(
        cause.starts_with("9 events older than the 14-day window are not yet reflected on (the oldest from 2026-09-07)"),
        "{cause}"
    );
    // The evening cycle then consolidates them, and the warning is gone.
    let r = env.run_cycle("2026-11-06T22:00:00Z");
    assert!(!warned(&r, "unreflected"), "{r}");
    assert_eq!(r["backfill"]["left"], 0);
}
