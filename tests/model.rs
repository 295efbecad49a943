//! The model path as users run it (a small local model on a CPU): against the scripted
//! fake server, the ways such a model and its server fail, and what a person then sees.
//!
//! Each test here failed before the change it covers: a reply that does not parse is
//! charged what the server counted and estimates stay calibrated across cycles; only the
//! events a model was shown are marked as seen, a cluster larger than the prompt cap is
//! sent in several prompts; a down server is not reported as spent tokens and the cycle
//! stops calling it; a cut-off reply is reported as cut off; an off-contract pass reply is
//! degraded, not "nothing to do"; a missing block takes its default; a failing or
//! per-token `/embeddings` degrades to the builtin embedder with a hint; a running cycle
//! shows its progress and `dream status` sees it; a call that fails the same way is held;
//! `dream log` counts a cycle whose only commit recorded hand edits.

use std::time::{Duration, Instant};

use dream_testkit::fake_llm::{echo_reflect, topic_events, Answer, Call};
use serde_json::{json, Value};

use crate::llm::{candidate, degraded, dream, ev, lisbon, notes, routes, run, setup, NOW};
use crate::util::{stderr, stdout};

fn start() -> chrono::DateTime<chrono::Utc> {
    "2026-11-03T09:00:00Z".parse().unwrap()
}

fn report_of(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "dream run failed ({:?}): {}\n{}",
        out.status.code(),
        stderr(out),
        stdout(out)
    );
    serde_json::from_slice(&out.stdout).expect("the report is JSON")
}

fn status(env: &crate::util::Env) -> Value {
    let out = env.dream(&["status", "--json", "--now", NOW]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_reply_that_does_not_parse_is_charged_what_the_server_counted_and_calibrates_later_cycles() {
    // The server's tokenizer counts three times its plain count: half again dream's plain
    // estimate, as a small model's tokenizer does on JSON.
    let (env, fake) = setup(&topic_events(1, 2, start()));
    fake.set_token_scale(3.0);
    fake.on("reflect", |_| Answer::garbled());
    let vars = [("DREAM_LLM_MAX_TOKENS", "100")];
    let report = report_of(&dream(&env, &fake, &vars, &["run", "--now", NOW, "--json"]));
    assert!(degraded(&report).contains("is not valid JSON"), "{report}");
    let spent = report["tokens"]["spent"].as_u64().unwrap();
    assert_eq!(
        spent,
        fake.tokens_used(),
        "the usage the server reported, not dream's smaller estimate"
    );
    let ratio = report["tokens"]["calibration"]["ratio"].as_f64().unwrap();
    assert!((1.4..1.6).contains(&ratio), "{report}");

    // The next cycle starts from what the server counted: a budget the plain estimate
    // would fit (and the server would cross) starts no call.
    let first = &fake.calls("reflect")[0];
    let m = first.body["messages"].as_array().unwrap();
    let plain = dream_engine::providers::openai::prompt_estimate(
        m[0]["content"].as_str().unwrap(),
        m[1]["content"].as_str().unwrap(),
    ) + 100;
    let budget = (plain + first.tokens()) / 2;
    assert!(plain <= budget && budget < first.tokens());
    let report = report_of(&dream(
        &env,
        &fake,
        &vars,
        &[
            "run",
            "--now",
            NOW,
            "--json",
            "--budget",
            &budget.to_string(),
        ],
    ));
    assert_eq!(fake.calls("reflect").len(), 1, "{report}");
    assert_eq!(report["tokens"]["refused_calls"], 1, "{report}");
    assert_eq!(report["window"]["pending"], 1);
}

/// The events a reflect call shows in full, over all its clusters, as its numbered lines
/// read back.
fn shown(call: &dream_testkit::fake_llm::Recorded) -> Vec<dream_testkit::fake_llm::SentEvent> {
    let user = call.body["messages"][1]["content"].as_str().unwrap();
    dream_testkit::fake_llm::parse_lines(user)
        .into_iter()
        .flat_map(|c| c.events)
        .collect()
}

#[test]
fn a_cluster_larger_than_the_prompt_cap_is_sent_in_prompts_and_only_what_was_sent_is_seen() {
    // One topic restated on five days: one cluster of five new events, two per prompt.
    let (env, fake) = setup(&topic_events(1, 5, "2026-11-01T09:00:00Z".parse().unwrap()));
    // Room for one prompt only (the calls start together and each takes a while, so no
    // reply frees room before the others ask): the rest must stay new.
    fake.set_latency(Duration::from_millis(300));
    let vars = [
        ("DREAM_CLUSTER_MAX_EVENTS_PER_PROMPT", "2"),
        ("DREAM_LLM_CONCURRENCY", "4"),
    ];
    let budget = {
        let out = dream(
            &env,
            &fake,
            &vars,
            &["run", "--dry-run", "--now", NOW, "--json"],
        );
        let r = report_of(&out);
        assert_eq!(r["window"]["prompts"], 3, "{r}");
        let calls = fake.calls("reflect");
        assert_eq!(calls.len(), 3, "a dry run sends every prompt");
        let estimates: Vec<u64> = calls
            .iter()
            .map(|c| {
                let m = c.body["messages"].as_array().unwrap();
                dream_engine::providers::openai::prompt_estimate(
                    m[0]["content"].as_str().unwrap(),
                    m[1]["content"].as_str().unwrap(),
                ) + c.max_tokens
            })
            .collect();
        estimates.iter().max().unwrap() + estimates.iter().min().unwrap() / 2
    };
    let before = fake.calls("reflect").len();
    let report = report_of(&dream(
        &env,
        &fake,
        &vars,
        &[
            "run",
            "--now",
            NOW,
            "--json",
            "--budget",
            &budget.to_string(),
        ],
    ));
    let w = &report["window"];
    assert_eq!(
        (w["with_new"].as_u64(), w["prompts"].as_u64()),
        (Some(1), Some(3)),
        "{report}"
    );
    assert_eq!(w["reflected"], 1, "{report}");
    assert_eq!(w["pending"], 2);
    let sent: Vec<String> = fake.calls("reflect")[before..]
        .iter()
        .flat_map(|r| {
            shown(r)
                .into_iter()
                .filter(|e| e.new)
                .map(|e| e.text)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(sent.len() <= 2, "{sent:?}");
    assert_eq!(w["seen"].as_u64().unwrap() as usize, sent.len());
    assert_eq!(
        status(&env)["events_unreflected"].as_u64().unwrap() as usize,
        5 - sent.len(),
        "only the events a model was shown count as seen"
    );

    // With room, the next cycle sends the rest, oldest first, each event once.
    let before = fake.calls("reflect").len();
    let report = run(&env, &fake, &vars);
    assert_eq!(report["window"]["pending"], 0, "{report}");
    let mut all: Vec<String> = sent.clone();
    for r in &fake.calls("reflect")[before..] {
        let events = shown(r);
        assert!(events.len() <= 2, "never more than the cap in one prompt");
        for e in events.iter().filter(|e| e.new) {
            all.push(e.text.clone());
        }
    }
    all.sort();
    let n = all.len();
    all.dedup();
    assert_eq!(
        (n, all.len()),
        (5, 5),
        "every event sent as new exactly once: {all:?}"
    );
    assert_eq!(status(&env)["events_unreflected"], 0);
}

#[test]
fn a_down_server_costs_nothing_and_is_not_called_again_in_the_cycle() {
    let (env, fake) = setup(&topic_events(4, 2, start()));
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/v1");
    let out = dream(
        &env,
        &fake,
        &[
            ("DREAM_LLM_BASE_URL", &url),
            ("DREAM_LLM_CONCURRENCY", "1"),
            ("DREAM_LLM_MAX_TOKENS", "256"),
        ],
        &["run", "--now", NOW],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("tokens      0 of 200000 (0 calls, 1 unanswered: server not reached)"),
        "{text}"
    );
    assert!(
        text.contains("0 clusters reflected, 4 left pending"),
        "{text}"
    );
    assert!(
        text.contains("not tried: an earlier call found the server unavailable"),
        "{text}"
    );
    let report = run(
        &env,
        &fake,
        &[("DREAM_LLM_BASE_URL", &url), ("DREAM_LLM_CONCURRENCY", "1")],
    );
    assert_eq!(report["tokens"]["spent"], 0);
    assert_eq!(report["tokens"]["calls"], 0);
    assert_eq!(
        report["tokens"]["unanswered"], 1,
        "one try, then no more: {report}"
    );
    // Back up: everything waited (one cluster a prompt: room for one reply of 256 tokens).
    let report = run(&env, &fake, &[("DREAM_LLM_MAX_TOKENS", "256")]);
    assert_eq!(report["window"]["reflected"], 4, "{report}");
}

#[test]
fn a_hung_server_is_not_queued_behind_and_the_timeout_says_what_to_raise() {
    let (env, fake) = setup(&topic_events(3, 2, start()));
    fake.on("reflect", |c| {
        echo_reflect(c).delayed(Duration::from_millis(2500))
    });
    // One cluster a prompt (room for one reply each), so three calls to wait behind.
    let vars = [
        ("DREAM_LLM_TIMEOUT_SECS", "1"),
        ("DREAM_LLM_CONCURRENCY", "1"),
        ("DREAM_LLM_MAX_TOKENS", "256"),
    ];
    let report = report_of(&dream(&env, &fake, &vars, &["run", "--now", NOW, "--json"]));
    assert_eq!(fake.calls("reflect").len(), 1, "{report}");
    assert_eq!(report["window"]["pending"], 3);
    let d = degraded(&report);
    assert!(d.contains("within 1 s (llm.timeout_secs)"), "{d}");
    assert!(d.contains("raise llm.timeout_secs"), "{d}");
    assert!(d.contains("not tried"), "{d}");
    assert!(
        fake.calls("judge").is_empty() && fake.calls("merge").is_empty(),
        "no later stage calls it either"
    );
    assert!(
        report["tokens"]["spent"].as_u64().unwrap() > 0,
        "a timed-out call may have been worked on: its estimate is charged"
    );
}

#[test]
fn a_reply_cut_off_at_the_token_limit_is_reported_as_cut_off_not_as_the_wrong_schema() {
    let (env, fake) = setup(&lisbon());
    fake.on("reflect", |_| {
        // Two candidates, cut in the middle of the second: the first is a whole object.
        Answer::truncated(json!({"candidates": [
            candidate("I live in Lisbon with two cats.", &["lis-1", "lis-2", "lis-3"]),
            {"text": "I live in Lisbon with two cats, really.", "category": "identity",
             "block": "human", "supportingEventIds": ["lis-1", "lis-2", "lis-3"],
             "confidence": 0.9, "reason": "x".repeat(300)},
        ]}))
    });
    let report = run(&env, &fake, &[]);
    let d = degraded(&report);
    assert!(
        d.contains("cut off at the token limit (max_tokens 1024) and is not complete JSON: raise llm.max_tokens"),
        "{d}"
    );
    assert!(!d.contains("wrong schema"), "{d}");
    assert_eq!(
        report["tokens"]["spent"],
        fake.tokens_used(),
        "charged what was counted"
    );
}

#[test]
fn a_pass_reply_off_its_contract_is_a_degraded_pass_not_nothing_to_do() {
    let events = [
        lisbon(),
        ev("pn-1", 4, "s2", "I am allergic to peanuts and hazelnuts."),
        ev(
            "pn-2",
            5,
            "s3",
            "Note that I am allergic to peanuts and hazelnuts.",
        ),
        ev(
            "pn-3",
            6,
            "s4",
            "Again: I am allergic to peanuts and hazelnuts.",
        ),
    ]
    .concat();
    let (env, fake) = setup(&events);
    let facts = |_: &Call| Answer::json(json!({"facts": [{"text": "I live in Lisbon."}]}));
    fake.on("merge", facts);
    fake.on("promote", facts);
    let out = dream(&env, &fake, &[], &["run", "--now", NOW]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("nothing to do"), "{text}");
    assert!(
        text.contains("passes      nothing applied; merge, promote degraded"),
        "{text}"
    );
    assert!(
        text.contains("merge: the merge reply is not the contract's object: it has no `merge` list (it has facts); engine backstops only"),
        "{text}"
    );
    assert!(
        text.contains("promote: the promote reply is not the contract's object"),
        "{text}"
    );
    assert_eq!(fake.calls("merge").len(), 1);
    let (_, message) = &env.commits()[0];
    assert!(message.contains("Dream-Degraded:"), "{message}");
}

#[test]
fn a_missing_block_takes_the_block_of_its_category_and_explain_names_every_failed_gate() {
    let (env, fake) = setup(&lisbon());
    fake.on("reflect", |_| {
        Answer::json(json!({"candidates": [
            {"text": "I live in Lisbon with two cats.", "category": "identity",
             "supportingEventIds": ["lis-1", "lis-2", "lis-3"], "confidence": 0.95, "reason": "said thrice"},
            {"text": "I live in Porto with 3 dogs.", "supportingEventIds": [], "confidence": 0.9},
        ]}))
    });
    let report = run(&env, &fake, &[]);
    assert_eq!(routes(&report), (1, 0, 0, 1), "{report}");
    assert!(
        env.read("memory/human.md")
            .contains("- I live in Lisbon with two cats."),
        "the default block of identity is human"
    );
    let n = notes(&report);
    assert!(n.contains("took its documented default"), "{n}");
    assert!(
        n.contains("no block given: human, from category identity"),
        "{n}"
    );

    let refused = report["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["route"] == "refused")
        .unwrap();
    assert_eq!(refused["reason"], "cites no supporting event");
    let out = env.dream(&[
        "explain",
        refused["candidate"].as_str().unwrap(),
        "--now",
        NOW,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for want in [
        "failed: cites no supporting event",
        "failed: support 0 is below the floor of 2 distinct owner statements",
        "failed: no statement of the owner's supports it",
        "failed: invented name \"Porto\", number \"3\"",
        "ids           none cited",
    ] {
        assert!(text.contains(want), "want {want:?} in:\n{text}");
    }
}

#[test]
fn a_failing_embeddings_server_degrades_to_the_builtin_embedder_with_a_hint() {
    let vars = [
        ("DREAM_EMBED_PROVIDER", "openai"),
        ("DREAM_EMBED_MODEL", "smollm2"),
    ];
    let (env, fake) = setup(&lisbon());
    fake.on("embed", |_| {
        Answer::status(
            500,
            "Llama model must be created with embedding=True to call this method",
        )
    });
    let report = run(&env, &fake, &vars);
    assert_eq!(routes(&report), (1, 0, 0, 0), "the cycle went on: {report}");
    let d = degraded(&report);
    assert!(d.starts_with("embed: embedding with smollm2 failed"), "{d}");
    assert!(
        d.contains("start llama-cpp-python with `--embedding true`"),
        "{d}"
    );
    assert!(
        d.contains("this cycle clusters with the builtin embedder instead"),
        "{d}"
    );
    assert!(
        report["embedder"]
            .as_str()
            .unwrap()
            .contains("(fallback from openai:smollm2)"),
        "{report}"
    );

    // llama-cpp-python serving a chat model answers one vector per token.
    let (env, fake) = setup(&lisbon());
    fake.on("embed", |call| {
        let n = call.input.as_array().map_or(1, Vec::len);
        let data: Vec<Value> = (0..n)
            .map(|i| json!({"object": "embedding", "index": i, "embedding": [[0.1, 0.2], [0.3, 0.4]]}))
            .collect();
        Answer::raw(200, json!({"object": "list", "data": data}))
    });
    let report = run(&env, &fake, &vars);
    assert_eq!(routes(&report), (1, 0, 0, 0), "{report}");
    let d = degraded(&report);
    assert!(
        d.contains("item 0 holds 2 vectors: the server returns one vector per token"),
        "{d}"
    );
    assert!(d.contains("--pooling mean"), "{d}");
}

#[test]
fn a_running_cycle_shows_its_progress_and_status_sees_it() {
    let (env, fake) = setup(&topic_events(2, 2, start()));
    fake.on("reflect", |c| {
        echo_reflect(c).delayed(Duration::from_millis(1500))
    });
    let child = env
        .std_cmd()
        .env("DREAM_EMBED_PROVIDER", "builtin")
        .env("DREAM_LLM_PROVIDER", "openai")
        .env("DREAM_LLM_BASE_URL", fake.base_url())
        .env("DREAM_LLM_MODEL", "fake-model")
        .env("DREAM_LLM_CONCURRENCY", "1")
        // One cluster a prompt, so the progress line counts two calls.
        .env("DREAM_LLM_MAX_TOKENS", "200")
        .env_remove("JOURNAL_STREAM")
        .args(["run", "--now", NOW])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = None;
    while Instant::now() < deadline {
        let out = env.dream(&["status", "--now", NOW]);
        let text = stdout(&out);
        if text.contains("stage reflect") {
            seen = Some(text);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = seen.expect("status saw the cycle in its reflect stage");
    assert!(
        seen.contains(&format!("running now      pid {pid}, since ")),
        "{seen}"
    );
    let err = stderr(&out);
    assert!(
        err.contains("dream: reflect 0 of 2 calls returned"),
        "{err}"
    );
    assert!(
        err.contains("dream: reflect 2 of 2 calls returned"),
        "{err}"
    );
    assert!(
        stdout(&env.dream(&["status", "--now", NOW])).contains("running now      nothing"),
        "nothing runs once it ended"
    );
}

#[test]
fn a_call_that_fails_the_same_way_twice_is_held_and_the_digest_says_what_to_change() {
    let (env, fake) = setup(&lisbon());
    fake.on("reflect", |_| {
        Answer::truncated(json!({"candidates": [candidate("I live in Lisbon with two cats.", &["lis-1", "lis-2", "lis-3"])]}))
    });
    let first = run(&env, &fake, &[]);
    assert_eq!(first["window"]["held"], 0);
    let second = run(&env, &fake, &[]);
    assert!(
        degraded(&second).contains(
            "failed this way 2 cycles running, so it is held from now on: raise llm.max_tokens"
        ),
        "{second}"
    );
    assert_eq!(fake.calls("reflect").len(), 2);
    let third = run(&env, &fake, &[]);
    assert_eq!(
        fake.calls("reflect").len(),
        2,
        "not paid for a third time: {third}"
    );
    assert_eq!(third["window"]["held"], 1);
    assert_eq!(third["window"]["pending"], 1);
    let d = degraded(&third);
    assert!(d.contains("cluster 0 is held, not sent: 2 cycles running the reply was cut off at the token limit; raise llm.max_tokens"), "{d}");
    assert_eq!(status(&env)["events_unreflected"], 3, "held, not lost");

    // The morning digest tells the person.
    let morning = env.dream(&["run", "--cycle", "morning", "--now", "2026-11-07T07:00:00Z"]);
    assert!(morning.status.success(), "{}", stderr(&morning));
    let digest = std::fs::read_dir(env.repo.join("digests"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect::<String>();
    assert!(digest.contains("held, not sent"), "{digest}");

    // Raising max_tokens changes what the call sends: it is tried again.
    fake.on("reflect", echo_reflect);
    let report = run(&env, &fake, &[("DREAM_LLM_MAX_TOKENS", "2048")]);
    assert_eq!(fake.calls("reflect").len(), 3);
    assert_eq!(routes(&report), (1, 0, 0, 0), "{report}");
}

#[test]
fn dream_log_counts_a_cycle_whose_only_commit_recorded_hand_edits() {
    let (env, fake) = setup(&lisbon());
    // A new user's first step: edit dream.toml by hand.
    let toml = env.read("dream.toml");
    std::fs::write(
        env.repo.join("dream.toml"),
        format!("{toml}\n# edited by hand\n"),
    )
    .unwrap();
    fake.on("reflect", |_| {
        Answer::json(json!({"candidates": [
            candidate("I live in Porto.", &["lis-1", "lis-2"]),
            candidate("I live in Lisbon with 3 cats.", &["lis-1", "lis-2"]),
        ]}))
    });
    let report = run(&env, &fake, &[]);
    assert_eq!(routes(&report), (0, 0, 0, 2), "{report}");
    let tokens = report["tokens"]["spent"].as_u64().unwrap();
    assert!(tokens > 0);
    let commits = env.commits();
    assert!(
        commits.iter().any(|c| c.0.contains("record hand edits"))
            && !commits
                .iter()
                .any(|c| c.1.contains("Dream-Stage: consolidate")),
        "the cycle's commits record hand edits (and the context view), no refusal: {commits:?}"
    );
    let out = env.dream(&["log"]);
    let text = stdout(&out);
    assert!(
        text.contains(&format!("2 refused, 0 engine-enforced, {tokens} tokens")),
        "{text}"
    );
    assert!(
        text.contains("invented name \"Porto\""),
        "the refusals are listed: {text}"
    );
}
