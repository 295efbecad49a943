//! `dream eval streams`: a labelled owner stream written here for the test (never the
//! shipped ones in fixtures/streams/), replayed one evening cycle a day, and what a person
//! reads in the report: the fact said on three days held on one durable line, the "fact"
//! no memory keeps reported absent with what became of its statements, the small talk
//! kept nowhere, the single mention worth keeping found; and a stream that cannot be read
//! stopping the command with the file and line named.

use crate::util::{stderr, stdout, Env};

/// One labelled event line.
fn line(ts: &str, session: &str, actor: &str, label: &str, lang: &str, text: &str) -> String {
    let trust = if actor == "user" { "owner" } else { "agent" };
    serde_json::json!({
        "ts": ts, "kind": "message", "text": text, "session": session, "actor": actor,
        "trust": trust, "source": "test", "meta": {"label": label, "lang": lang},
    })
    .to_string()
}

/// A small stream over three days: fact F01 said in the same words each day; "F02", three
/// words of chatter labelled as a fact so that one fact is surely absent; greetings, a
/// request, a paste, a single mention worth keeping, and the agent restating F01.
fn stream(lang: &str) -> String {
    let mut out =
        vec![serde_json::json!({"stream": "mini", "written": "for this test"}).to_string()];
    let days = [
        ("2026-05-04", "t1"),
        ("2026-05-05", "t2"),
        ("2026-05-06", "t3"),
    ];
    let chatter = ["ok", "thanks!", "lol"];
    for (i, (day, s)) in days.iter().enumerate() {
        let at = |t: &str| format!("{day}T{t}:00Z");
        out.push(line(
            &at("09:00"),
            s,
            "user",
            "chatter",
            lang,
            "good morning",
        ));
        out.push(line(
            &at("09:01"),
            s,
            "assistant",
            "agent",
            lang,
            "Good morning! What's first?",
        ));
        out.push(line(
            &at("09:02"),
            s,
            "user",
            "F01",
            lang,
            "I live in Lisbon with my two cats.",
        ));
        out.push(line(
            &at("09:03"),
            s,
            "user",
            "request",
            lang,
            "run the tests again please",
        ));
        out.push(line(&at("09:04"), s, "user", "F02", lang, chatter[i]));
        out.push(line(
            &at("09:05"),
            s,
            "assistant",
            "agent",
            lang,
            "You live in Lisbon with your two cats.",
        ));
        if i == 0 {
            out.push(line(
                &at("09:06"),
                s,
                "user",
                "K",
                lang,
                "my sister Ana's birthday is on april 14",
            ));
            out.push(line(
                &at("09:07"),
                s,
                "user",
                "paste",
                lang,
                "got this:\n```\nTraceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    main()\nValueError: bad input\n```",
            ));
        }
    }
    out.join("\n") + "\n"
}

#[test]
fn eval_streams_reports_each_fact_and_what_small_talk_memory_kept() {
    let env = Env::new();
    let dir = env.root.join("streams");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mini-en.jsonl"), stream("en")).unwrap();
    std::fs::write(dir.join("mini-de.jsonl"), stream("de")).unwrap();
    let keep = env.root.join("replays");
    let out = env
        .cmd()
        .args(["eval", "streams"])
        .arg(&dir)
        .arg("--keep")
        .arg(&keep)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let streams = r["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 2, "{r}");
    let en = streams.iter().find(|s| s["name"] == "mini-en").unwrap();
    assert_eq!(en["lang"], "en");
    assert_eq!(en["days"], 3, "one evening cycle a day: {en}");
    let f = &en["figures"];
    assert_eq!(f["facts"], 2, "{f}");
    assert_eq!(
        f["one_durable"], 1,
        "the fact said on three days is one durable line: {en}"
    );
    assert_eq!(f["joined"], 1, "its three statements on that one line: {f}");
    assert_eq!(f["absent"], 1, "{f}");
    assert_eq!(
        (f["split"].as_u64(), f["merged"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(
        f["noise_lines"], 0,
        "no greeting, request or paste kept: {en}"
    );
    assert_eq!(
        (f["k_said"].as_u64(), f["k_cited"].as_u64()),
        (Some(1), Some(1)),
        "the birthday said once is kept: {en}"
    );
    let fact = |label: &str| {
        en["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["label"] == label)
            .cloned()
            .unwrap()
    };
    let f01 = fact("F01");
    assert_eq!(
        (f01["fate"].as_str(), f01["held_as"].as_str()),
        (Some("one"), Some("durable"))
    );
    assert_eq!(
        f01["cited"], 3,
        "its three statements, not the agent's: {f01}"
    );
    let line = &en["lines"][f01["lines"][0].as_u64().unwrap() as usize];
    assert_eq!(line["text"], "I live in Lisbon with my two cats.");
    assert_eq!(line["labels"], serde_json::json!({"F01": 3}));
    assert_eq!(fact("F02")["fate"], "absent");
    // Both streams added up, and each language on its own.
    assert_eq!(r["overall"]["facts"], 4);
    assert_eq!(r["overall"]["one_durable"], 2);
    assert_eq!(r["languages"]["de"]["streams"], 1);
    assert!(
        keep.join("mini-en").join("memory").is_dir(),
        "--keep keeps the replay"
    );

    // The table: a row per stream, per language and overall, and the absent fact with
    // what became of its statements.
    let table = env
        .cmd()
        .args(["eval", "streams"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(table.status.success(), "{}", stderr(&table));
    let text = stdout(&table);
    for needle in [
        "mini-en", "mini-de", "overall", "durable", "absent", "K recall",
    ] {
        assert!(text.contains(needle), "{needle} in {text}");
    }
    let absent = text
        .lines()
        .skip_while(|l| !l.contains("F02 absent"))
        .nth(1)
        .unwrap_or_default();
    assert!(
        absent.contains("never proposed") || absent.contains(" x"),
        "the absent fact says why: {text}"
    );
}

#[test]
fn eval_streams_names_the_file_and_line_it_cannot_read() {
    let env = Env::new();
    let missing = env.dream(&["eval", "streams", "nowhere.jsonl"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing).contains("nowhere.jsonl"),
        "{}",
        stderr(&missing)
    );

    let path = env.root.join("unlabelled.jsonl");
    let lines = [
        line("2026-05-04T09:00:00Z", "t1", "user", "chatter", "en", "hi"),
        serde_json::json!({"ts": "2026-05-04T09:01:00Z", "kind": "message", "text": "no label", "actor": "user"}).to_string(),
    ];
    std::fs::write(&path, lines.join("\n")).unwrap();
    let out = env
        .cmd()
        .args(["eval", "streams"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("unlabelled.jsonl line 2") && err.contains("meta.label"),
        "{err}"
    );
    let empty = env.root.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = env
        .cmd()
        .args(["eval", "streams"])
        .arg(&empty)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("holds no stream"), "{}", stderr(&out));
}
