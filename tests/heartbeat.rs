//! The heartbeat (a job nobody watches): each quiet failure produces its warning where a
//! person or a monitor looks: `dream run`'s exit code 10 and report, `dream status` (and
//! `--check`), the morning digest. Cycles are driven by the real binary with `--now`, the
//! model (where one is needed) is the fake server of `dream_testkit::fake_llm`.

use std::process::Output;

use dream_testkit::fake_llm::{topic_events, Answer, FakeLlm};
use serde_json::{json, Value};

use crate::util::{stderr, stdout, Env};

/// `n` events of day `day` (November 2026) that share no word, each a question: a question
/// is never kept, not even as an episode, so an offline cycle keeps nothing of them.
fn noise(day: u32, n: usize) -> String {
    (0..n)
        .map(|i| {
            let w = |k: usize| format!("q{day}x{i}y{k}z");
            json!({"ts": format!("2026-11-{day:02}T10:{i:02}:00Z"), "kind": "message", "actor": "user",
                   "session": format!("s{day}"), "text": format!("{} {} {} {}?", w(1), w(2), w(3), w(4))})
            .to_string()
                + "\n"
        })
        .collect()
}

fn evening(day: u32) -> String {
    format!("2026-11-{day:02}T21:00:00Z")
}

/// The rules of a report's or a status's warnings.
fn rules(v: &Value) -> Vec<String> {
    v["warnings"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|w| w["rule"].as_str().unwrap().to_string())
        .collect()
}

fn cause(v: &Value, rule: &str) -> String {
    v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["rule"] == rule)
        .map(|w| format!("{} | fix: {}", w["cause"], w["fix"]))
        .unwrap_or_else(|| panic!("no {rule} warning in {}", v["warnings"]))
}

/// `dream run` with `args`, returning the exit code and the JSON report.
fn run(env: &Env, extra: &[(&str, String)], args: &[&str]) -> (i32, Value) {
    let mut c = env.cmd();
    for (k, v) in extra {
        c.env(k, v);
    }
    let out = c.arg("run").arg("--json").args(args).output().unwrap();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&out), stderr(&out)));
    (out.status.code().unwrap_or(-1), report)
}

fn status(env: &Env, now: &str) -> (Output, Value) {
    let out = env.dream(&["status", "--json", "--check", "--now", now]);
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, v)
}

/// The fake server's variables for `dream`.
/// `dream` pointed at the fake. The embedder is `builtin`, as in `tests/llm.rs`:
/// `fake_llm::topic_events` writes topics of made-up words that only hashed words keep
/// apart one per cluster.
fn model(fake: &FakeLlm) -> Vec<(&'static str, String)> {
    vec![
        ("DREAM_EMBED_PROVIDER", "builtin".into()),
        ("DREAM_LLM_PROVIDER", "openai".into()),
        ("DREAM_LLM_BASE_URL", fake.base_url()),
        ("DREAM_LLM_MODEL", "fake-model".into()),
        ("DREAM_LLM_RETRY_BACKOFF_MS", "1".into()),
        ("DREAM_LLM_MAX_RETRIES", "0".into()),
        ("DREAM_LLM_TIMEOUT_SECS", "5".into()),
    ]
}

#[test]
fn cycles_that_read_events_and_keep_nothing_warn_on_the_third_and_status_says_so() {
    let env = Env::new();
    env.init();
    for day in [3, 4] {
        env.write_inbox(&format!("d{day}.jsonl"), &noise(day, 10));
        let (code, r) = run(&env, &[], &["--now", &evening(day)]);
        assert_eq!((code, rules(&r)), (0, vec![]), "{}", r["warnings"]);
    }
    env.write_inbox("d5.jsonl", &noise(5, 10));
    let (code, r) = run(&env, &[], &["--now", &evening(5)]);
    assert_eq!(code, 10, "the cycle finished, with a warning");
    assert_eq!(rules(&r), ["quiet"]);
    let why = cause(&r, "quiet");
    assert!(
        why.contains("the last 3 evening cycles read 30 new events and kept nothing")
            && why.contains("0 candidates proposed")
            && why.contains("cluster.eps"),
        "{why}"
    );
    assert_eq!(r["window"]["new_events"], 10);

    // `dream status` raises it too, and `--check` exits 10 for a monitor.
    let (out, st) = status(&env, "2026-11-05T22:00:00Z");
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
    assert_eq!(rules(&st), ["quiet"]);
    let text = stdout(&env.dream(&["status", "--now", "2026-11-05T22:00:00Z"]));
    assert!(
        text.contains("heartbeat        1 warnings:\n    [quiet] the last 3 evening cycles"),
        "{text}"
    );
    // A cycle that keeps something ends the streak.
    env.write_inbox(
        "d6.jsonl",
        &(crate::util::event("2026-11-06T09:00:00Z", "a", "I live in Lisbon.")
            + &crate::util::event("2026-11-06T10:00:00Z", "b", "As I said, I live in Lisbon.")
            + &noise(6, 10)),
    );
    let (code, r) = run(&env, &[], &["--now", &evening(6)]);
    assert_eq!((code, rules(&r)), (0, vec![]), "{r}");
}

#[test]
fn one_gate_refusing_nearly_every_candidate_is_named() {
    let env = Env::new();
    env.init();
    let start = "2026-11-04T09:00:00Z".parse().unwrap();
    env.write_inbox("topics.jsonl", &topic_events(12, 2, start));
    let fake = FakeLlm::start();
    // A model that cites an event id nobody sent, for every cluster (a prompt may carry
    // several).
    fake.on("reflect", |call| {
        let candidates: Vec<_> = call
            .clusters()
            .iter()
            .map(|c| {
                json!({"text": c.events[0].text, "category": "knowledge", "block": "scratch",
                "supportingEventIds": ["e_made_up"], "confidence": 0.9, "reason": "seen"})
            })
            .collect();
        Answer::json(json!({ "candidates": candidates }))
    });
    let (code, r) = run(&env, &model(&fake), &["--now", &evening(6)]);
    assert_eq!(code, 10, "{r}");
    assert_eq!(rules(&r), ["gate"]);
    let why = cause(&r, "gate");
    assert!(
        why.contains(
            "the ids gate refused 12 of the 12 candidates (100%) of the last evening cycle"
        ) && why.contains("too small for the JSON contract"),
        "{why}"
    );
    let refused = r["decisions"].as_array().unwrap();
    assert!(refused.iter().all(|d| d["gate"] == "ids"), "{r}");
}

#[test]
fn a_stage_degraded_three_cycles_in_a_row_warns() {
    let env = Env::new();
    env.init();
    let start = "2026-11-01T09:00:00Z".parse().unwrap();
    env.write_inbox("topics.jsonl", &topic_events(1, 2, start));
    let fake = FakeLlm::start();
    fake.on("reflect", |_| Answer::server_error());
    let vars = model(&fake);
    for day in [3, 4] {
        let (code, r) = run(&env, &vars, &["--now", &evening(day)]);
        assert_eq!((code, rules(&r)), (0, vec![]), "{r}");
        assert_eq!(r["window"]["pending"], 1, "the cluster waits: {r}");
    }
    let (code, r) = run(&env, &vars, &["--now", &evening(5)]);
    assert_eq!(code, 10, "{r}");
    assert_eq!(rules(&r), ["degraded"]);
    let why = cause(&r, "degraded");
    assert!(
        why.contains("stage reflect degraded in each of the last 3 cycles that ran it")
            && why.contains("left pending")
            && why.contains("dream doctor"),
        "{why}"
    );
}

#[test]
fn no_cycle_for_two_periods_warns_in_status_and_in_the_morning_digest() {
    let env = Env::new();
    env.init();
    env.write_inbox("a.jsonl", &noise(6, 2));
    let (code, _) = run(&env, &[], &["--now", "2026-11-06T21:00:00Z"]);
    assert_eq!(code, 0);
    let (out, st) = status(&env, "2026-11-07T20:00:00Z");
    assert_eq!((out.status.code(), rules(&st)), (Some(0), vec![]));
    // Nothing ran for two and a half days: the evening timer is not firing.
    let (out, st) = status(&env, "2026-11-09T09:00:00Z");
    assert_eq!(out.status.code(), Some(10));
    assert_eq!(rules(&st), ["missed"]);
    let why = cause(&st, "missed");
    assert!(
        why.contains("no evening cycle has finished since 2026-11-06 21:00 UTC (2 days")
            && why.contains("the timer is not firing")
            && why.contains("dream schedule status"),
        "{why}"
    );
    // The morning cycle runs (its timer does) and its digest says so first.
    let (code, r) = run(
        &env,
        &[],
        &["--cycle", "morning", "--now", "2026-11-09T07:00:00Z"],
    );
    assert_eq!(code, 10, "{r}");
    assert_eq!(rules(&r), ["missed"]);
    let page = env.read("digests/2026-11-09-morning.md");
    assert!(
        page.contains("Needs your attention: 1 heartbeat warning")
            && page.contains("## Heartbeat warnings\n\n- **missed**: no evening cycle has finished since 2026-11-06 21:00 UTC"),
        "{page}"
    );
    let (subject, _) = &env.commits()[0];
    assert!(subject.contains("1 heartbeat warning"), "{subject}");
}

#[test]
fn a_source_that_stops_growing_warns() {
    let env = Env::new();
    env.init();
    let agent = env.root.join("agent-log");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(agent.join("a.jsonl"), noise(1, 3)).unwrap();
    let toml = env.read("dream.toml")
        + &format!(
            "\n[[inbox.sources]]\nformat = \"jsonl\"\npath = \"{}\"\n",
            agent.display()
        );
    std::fs::write(env.repo.join("dream.toml"), toml).unwrap();
    env.write_inbox("inbox.jsonl", &noise(1, 2));
    let (code, r) = run(&env, &[], &["--now", &evening(1)]);
    assert_eq!((code, rules(&r)), (0, vec![]), "{r}");
    // The inbox keeps growing; the agent's log stopped on the 1st.
    env.append_inbox("inbox.jsonl", &noise(5, 2));
    let (code, r) = run(&env, &[], &["--now", &evening(5)]);
    assert_eq!((code, rules(&r)), (0, vec![]), "{r}");
    env.append_inbox("inbox.jsonl", &noise(9, 2));
    let (code, r) = run(&env, &[], &["--now", &evening(9)]);
    assert_eq!(code, 10, "{r}");
    assert_eq!(rules(&r), ["source"]);
    let why = cause(&r, "source");
    assert!(
        why.starts_with(&format!(
            "\"jsonl {} has not grown since 2026-11-01 (8 days; heartbeat.source_idle_days = 7)",
            agent.display()
        )) && why.contains("is the agent still writing there?"),
        "{why}"
    );
    // An inbox nobody writes to is not watched when sources feed the memory.
    let env2 = Env::new();
    env2.init();
    std::fs::write(
        env2.repo.join("dream.toml"),
        env2.read("dream.toml")
            + &format!(
                "\n[[inbox.sources]]\nformat = \"jsonl\"\npath = \"{}\"\n",
                agent.display()
            ),
    )
    .unwrap();
    std::fs::write(agent.join("b.jsonl"), noise(9, 2)).unwrap();
    let (code, r) = run(&env2, &[], &["--now", &evening(9)]);
    assert_eq!((code, rules(&r)), (0, vec![]), "{r}");
    std::fs::write(agent.join("c.jsonl"), noise(20, 2)).unwrap();
    let (code, r) = run(&env2, &[], &["--now", &evening(20)]);
    assert_eq!(
        (code, rules(&r)),
        (0, vec![]),
        "the empty inbox is not a warning: {r}"
    );
    // Off when set to 0.
    let mut c = env.cmd();
    c.env("DREAM_HEARTBEAT_SOURCE_IDLE_DAYS", "0");
    let out = c
        .args(["status", "--check", "--now", "2026-11-09T22:00:00Z"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn a_budget_that_stops_calls_every_cycle_warns() {
    let env = Env::new();
    env.init();
    let start = "2026-11-01T09:00:00Z".parse().unwrap();
    env.write_inbox("topics.jsonl", &topic_events(3, 2, start));
    let fake = FakeLlm::start();
    let vars = model(&fake);
    for day in [3, 4] {
        let (code, r) = run(&env, &vars, &["--now", &evening(day), "--budget", "50"]);
        assert_eq!((code, rules(&r)), (0, vec![]), "{r}");
        assert_eq!(r["window"]["pending"], 3, "{r}");
    }
    let (code, r) = run(&env, &vars, &["--now", &evening(5), "--budget", "50"]);
    assert_eq!(code, 10, "{r}");
    assert_eq!(rules(&r), ["budget"]);
    let why = cause(&r, "budget");
    assert!(
        why.contains("the token budget stopped calls in each of the last 3 evening cycles (budget.tokens_per_cycle = 50; 3 clusters left pending")
            && why.contains("raise budget.tokens_per_cycle"),
        "{why}"
    );
    assert!(fake.calls("reflect").is_empty(), "no call crossed the cap");
}

#[test]
fn a_failed_cycle_is_kept_and_warned_about_until_one_finishes() {
    let env = Env::new();
    env.init();
    env.write_inbox(
        "a.jsonl",
        &(crate::util::event("2026-11-05T09:00:00Z", "a", "I live in Lisbon.")
            + &crate::util::event("2026-11-06T09:00:00Z", "b", "As I said, I live in Lisbon.")),
    );
    // A full disk when the cycle commits its state (a debug build's test-only failure).
    let out = env
        .cmd()
        .env("DREAM_FAIL_AT", "commit the state")
        .args(["run", "--now", &evening(6)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (out, st) = status(&env, "2026-11-06T22:00:00Z");
    assert_eq!(out.status.code(), Some(10));
    assert_eq!(rules(&st), ["failed"]);
    assert!(
        cause(&st, "failed").contains("the last evening cycle (20261106T210000Z-evening, clock 2026-11-06 21:00 UTC) failed with exit code 1"),
        "{}",
        cause(&st, "failed")
    );
    assert!(
        st["last_cycles"][0]["failed"]
            .as_str()
            .unwrap()
            .contains("committing the state transaction"),
        "{st}"
    );
    let (code, r) = run(&env, &[], &["--now", "2026-11-06T21:30:00Z"]);
    assert_eq!((code, rules(&r)), (0, vec![]), "{r}");
    let (out, _) = status(&env, "2026-11-06T22:00:00Z");
    assert_eq!(out.status.code(), Some(0));
}
