//! The embedders as a user meets them: the default `minilm` model compiled into dream, the
//! vector cache per embedder id (a switch re-embeds the window once and never mixes
//! vectors; `dream status` names what the cache holds), a restatement in other words
//! reinforcing its fact, and `dream eval pairs`.

use crate::util::{event, stdout, Env};

fn status(env: &Env, extra: &[(&str, &str)]) -> serde_json::Value {
    let mut c = env.cmd();
    for (k, v) in extra {
        c.env(k, v);
    }
    let out = c.args(["status", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn run_with(env: &Env, now: &str, extra: &[(&str, &str)]) -> serde_json::Value {
    let mut c = env.cmd();
    for (k, v) in extra {
        c.env(k, v);
    }
    let out = c.args(["run", "--now", now, "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn switching_embedders_re_embeds_the_window_once_and_status_names_the_cache() {
    let env = Env::new();
    env.init();
    let mut lines = String::new();
    for (i, text) in [
        "I live in Lisbon with my two cats.",
        "The deploy script lives in scripts/deploy.sh.",
        "We went hiking in the mountains last weekend.",
    ]
    .iter()
    .enumerate()
    {
        lines += &event(&format!("2026-11-02T09:0{i}:00Z"), "s1", text);
    }
    env.write_inbox("a.jsonl", &lines);
    let first = env.run_cycle("2026-11-02T21:00:00Z");
    assert_eq!(first["embedder"], "minilm-l6-v2-m2v-128-v1", "{first}");
    assert_eq!(first["embedded"], 3, "{first}");
    let s = status(&env, &[]);
    assert_eq!(s["embedder"], "minilm-l6-v2-m2v-128-v1");
    assert_eq!(
        s["vector_cache"],
        serde_json::json!([{"embedder": "minilm-l6-v2-m2v-128-v1", "vectors": 3}])
    );

    // Switch to builtin: the whole window is embedded again under the new id, once.
    let builtin = [("DREAM_EMBED_PROVIDER", "builtin")];
    env.append_inbox(
        "a.jsonl",
        &event("2026-11-03T09:00:00Z", "s2", "My home is in Lisbon."),
    );
    let second = run_with(&env, "2026-11-03T21:00:00Z", &builtin);
    assert_eq!(second["embedder"], "builtin-v1-256", "{second}");
    assert_eq!(second["embedded"], 4, "{second}");
    env.append_inbox(
        "a.jsonl",
        &event("2026-11-04T09:00:00Z", "s3", "The kettle whistled."),
    );
    let third = run_with(&env, "2026-11-04T21:00:00Z", &builtin);
    assert_eq!(third["embedded"], 1, "only the new event: {third}");
    let s = status(&env, &builtin);
    assert_eq!(s["embedder"], "builtin-v1-256");
    assert_eq!(
        s["vector_cache"],
        serde_json::json!([
            {"embedder": "builtin-v1-256", "vectors": 5},
            {"embedder": "minilm-l6-v2-m2v-128-v1", "vectors": 3}
        ])
    );
    let text = stdout(
        &env.cmd()
            .env("DREAM_EMBED_PROVIDER", "builtin")
            .arg("status")
            .output()
            .unwrap(),
    );
    assert!(
        text.contains("embedder         builtin-v1-256 (5 vectors cached)")
            && text.contains("also 3 vectors of minilm-l6-v2-m2v-128-v1"),
        "{text}"
    );

    // And back: the minilm vectors are reused, only what they lack is embedded.
    env.append_inbox(
        "a.jsonl",
        &event("2026-11-05T09:00:00Z", "s4", "The train was late."),
    );
    let back = env.run_cycle("2026-11-05T21:00:00Z");
    assert_eq!(
        back["embedded"], 3,
        "the two events builtin alone saw, and the new one: {back}"
    );
}

#[test]
fn a_restatement_in_other_words_reinforces_its_fact_and_another_fact_does_not() {
    let env = Env::new();
    env.init();
    // Said in three sessions over two days: promoted.
    let mut lines = String::new();
    for (day, session) in [("02", "s1"), ("02", "s2"), ("03", "s3")] {
        lines += &event(
            &format!("2026-11-{day}T09:00:00Z"),
            session,
            "I live in Lisbon with my partner and our two cats.",
        );
    }
    env.write_inbox("a.jsonl", &lines);
    let first = env.run_cycle("2026-11-03T21:00:00Z");
    assert_eq!(first["candidates"]["promoted"], 1, "{first}");

    // Later the owner says it in other words, twice: it reinforces the fact.
    let mut more = String::new();
    for session in ["s4", "s5"] {
        more += &event(
            "2026-11-05T09:00:00Z",
            session,
            "My home is in Lisbon, with my partner and our two cats.",
        );
    }
    env.append_inbox("a.jsonl", &more);
    let second = env.run_cycle("2026-11-05T21:00:00Z");
    assert_eq!(second["candidates"]["reinforced"], 1, "{second}");
    assert_eq!(second["candidates"]["promoted"], 0, "{second}");
    let human = env.read("memory/human.md");
    assert!(
        human.contains("I live in Lisbon with my partner") && !human.contains("My home is"),
        "{human}"
    );
    let (_, message) = &env.commits()[0];
    assert!(message.contains("reinforced"), "{message}");

    // Another city is another fact: never a reinforcement.
    let mut porto = String::new();
    for session in ["s6", "s7"] {
        porto += &event(
            "2026-11-06T09:00:00Z",
            session,
            "I live in Porto with my partner and our two cats.",
        );
    }
    env.append_inbox("a.jsonl", &porto);
    let third = env.run_cycle("2026-11-06T21:00:00Z");
    assert_eq!(third["candidates"]["reinforced"], 0, "{third}");
    assert_eq!(third["candidates"]["proposed"], 1, "{third}");

    // With builtin vectors (no measured restatement distance) the reworded one would have
    // been a new candidate: the behaviour is the embedder's, and says so in the gate.
    let env2 = Env::new();
    env2.init();
    env2.write_inbox("a.jsonl", &(lines + &more));
    let b = run_with(
        &env2,
        "2026-11-05T21:00:00Z",
        &[("DREAM_EMBED_PROVIDER", "builtin")],
    );
    assert_eq!(b["candidates"]["reinforced"], 0, "{b}");
}

#[test]
fn eval_pairs_measures_the_default_and_builtin_on_the_shipped_set() {
    let env = Env::new();
    let out = env.dream(&["eval", "pairs"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(
        text.contains("embedder minilm-l6-v2-m2v-128-v1")
            && text.contains("rule: S6 agree, and S6 >= 0.9 or a shared word and distance <= 0.8"),
        "{text}"
    );
    let out = env.dream(&[
        "eval",
        "pairs",
        "--held-out",
        "--embedder",
        "builtin",
        "--json",
    ]);
    assert!(out.status.success());
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["embedder"], "builtin-v1-256");
    assert_eq!(r["pairs"]["paraphrase"], 40);
    let bad = env.root.join("bad.tsv");
    std::fs::write(&bad, "label\ta\tb\nsame\tx\ty\n").unwrap();
    let out = env.dream(&["eval", "pairs", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "bad input exits 1");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not paraphrase, different or unrelated"));
    let out = env.dream(&["eval", "pairs", "--embedder", "bert"]);
    assert_eq!(out.status.code(), Some(2));
}
