//! Measuring dream: the idle fast path and the window semantics it relies on, the LoCoMo
//! evaluation command on a tiny LoCoMo-shaped file written here (tests never read the real
//! dataset), and the benchmark command at toy sizes. These tests check that the figures
//! are produced and mean what they say; the performance targets themselves are measured
//! by `dream bench` on a release build (docs/BENCHMARKS.md), never by a timed test.

use crate::util::{event, stderr, stdout, Env};

#[test]
fn a_cycle_with_nothing_new_skips_the_window_and_commits_nothing() {
    let env = Env::new();
    env.init();
    let mut lines = String::new();
    for (day, session) in [("02", "s1"), ("03", "s2"), ("04", "s3")] {
        lines += &event(
            &format!("2026-11-{day}T09:00:00Z"),
            session,
            "I live in Lisbon with my two cats.",
        );
    }
    lines += &event(
        "2026-11-04T09:05:00Z",
        "s3",
        "The kettle whistled twice before breakfast.",
    );
    env.write_inbox("a.jsonl", &lines);
    let first = env.run_cycle("2026-11-04T21:00:00Z");
    assert_eq!(first["candidates"]["promoted"], 1, "{first}");
    assert!(first["timings_ms"].get("cluster").is_some());
    let status = env.dream(&["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(
        status["events_unreflected"], 0,
        "the noise event was looked at: {status}"
    );

    let commits = env.commits().len();
    let idle = env.run_cycle("2026-11-04T22:00:00Z");
    assert_eq!(
        idle["window"]["events"], 0,
        "the window was not loaded: {idle}"
    );
    assert!(
        idle["timings_ms"].get("cluster").is_none(),
        "nothing was clustered: {idle}"
    );
    let notes = idle["notes"].to_string();
    assert!(
        notes.contains("nothing new since the last cycle"),
        "{notes}"
    );
    assert_eq!(
        env.commits().len(),
        commits,
        "an idle cycle commits nothing"
    );
}

#[test]
fn an_event_no_cluster_held_joins_one_when_it_is_restated() {
    let env = Env::new();
    env.init();
    // Day 1: a lone statement (noise: nothing restates it yet).
    env.write_inbox(
        "a.jsonl",
        &event(
            "2026-11-02T09:00:00Z",
            "s1",
            "My sister Ines works as a pilot in Porto.",
        ),
    );
    let first = env.run_cycle("2026-11-02T21:00:00Z");
    assert_eq!(first["window"]["clusters"], 0, "{first}");
    // Days 2 and 3: restated; the looked-at event still supports the fact.
    env.append_inbox(
        "a.jsonl",
        &(event(
            "2026-11-03T09:00:00Z",
            "s2",
            "My sister Ines works as a pilot in Porto.",
        ) + &event(
            "2026-11-04T09:00:00Z",
            "s3",
            "As I said, my sister Ines works as a pilot in Porto.",
        )),
    );
    let report = env.run_cycle("2026-11-04T21:00:00Z");
    assert_eq!(report["candidates"]["promoted"], 1, "{report}");
    let facts = env.facts().join("\n");
    assert!(
        facts.contains("My sister Ines works as a pilot in Porto."),
        "{facts}"
    );
    assert_eq!(
        report["decisions"][0]["route"], "promoted",
        "three supporting events on three days: {report}"
    );
}

/// A LoCoMo-shaped file: one conversation where a fact is restated on three dates, a
/// second with nothing durable, an image turn, and malformed evidence.
const TINY_LOCOMO: &str = r#"[
 {"sample_id": "conv-a",
  "conversation": {
    "speaker_a": "Ana", "speaker_b": "Ben",
    "session_1_date_time": "10:00 am on 1 May, 2023",
    "session_1": [
      {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat named Pixel."},
      {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats!", "img_url": ["u"], "blip_caption": "a photo of a grey kitten"}
    ],
    "session_2_date_time": "6:30 pm on 3 May, 2023",
    "session_2": [
      {"speaker": "Ana", "dia_id": "D2:1", "text": "Remember, I adopted a grey cat named Pixel."}
    ],
    "session_3_date_time": "9:45 pm on 6 May, 2023",
    "session_3": [
      {"speaker": "Ana", "dia_id": "D3:1", "text": "Like I said, I adopted a grey cat named Pixel."},
      {"speaker": "Ben", "dia_id": "D3:2", "text": "Pixel is a great name."}
    ]
  },
  "qa": [
    {"question": "What is the name of Ana's cat?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
    {"question": "What colour is the cat?", "answer": "grey", "evidence": ["D1:1; D2:1"], "category": 1},
    {"question": "Where was the photo taken?", "adversarial_answer": "x", "evidence": ["D:9:9"], "category": 5}
  ]},
 {"sample_id": "conv-b",
  "conversation": {
    "speaker_a": "Cy", "speaker_b": "Di",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
      {"speaker": "Cy", "dia_id": "D1:1", "text": "Hi Di, how are you?"},
      {"speaker": "Di", "dia_id": "D1:2", "text": "Fine thanks, busy week at the bakery."}
    ]
  },
  "qa": [
    {"question": "Where does Di work?", "answer": "bakery", "evidence": ["D1:2"], "category": 4}
  ]}
]"#;

#[test]
fn eval_locomo_replays_each_conversation_and_reports_the_figures() {
    let env = Env::new();
    let path = env.root.join("tiny-locomo.json");
    std::fs::write(&path, TINY_LOCOMO).unwrap();
    let out = env
        .cmd()
        .args(["eval", "locomo"])
        .arg(&path)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let a = &r["conversations"][0];
    assert_eq!(a["sample_id"], "conv-a");
    assert_eq!(
        a["counts"]["cycles"], 3,
        "one evening per session date: {a}"
    );
    assert_eq!(a["counts"]["events"], 5);
    assert_eq!(
        a["counts"]["facts"], 1,
        "the fact restated on three dates is promoted: {a}"
    );
    assert_eq!(
        a["figures"]["answer_retention"], 1.0,
        "both answers are in the fact: {a}"
    );
    assert_eq!(a["figures"]["traceability"], 1.0);
    assert_eq!(a["counts"]["evidence_turns"], 2);
    assert_eq!(a["counts"]["evidence_invalid"], 1);
    assert_eq!(a["figures"]["evidence_recall"], 1.0);
    assert_eq!(a["figures"]["average_support"], 3.0);
    let b = &r["conversations"][1];
    assert_eq!(b["counts"]["facts"], 0, "small talk makes no fact: {b}");
    assert_eq!(b["figures"]["answer_retention"], 0.0);
    let overall = &r["overall"];
    assert_eq!(overall["counts"]["questions"], 3);
    assert_eq!(overall["counts"]["retained_in_facts"], 2);
    let size = overall["figures"]["memory_size"].as_f64().unwrap();
    assert!(size > 0.0 && size < 1.0, "{overall}");

    // The table names every conversation and the overall row.
    let table = env
        .cmd()
        .args(["eval", "locomo"])
        .arg(&path)
        .output()
        .unwrap();
    let text = stdout(&table);
    for needle in ["conv-a", "conv-b", "overall", "retention", "traceable"] {
        assert!(text.contains(needle), "{needle} in {text}");
    }

    // --only picks conversations and refuses unknown ones.
    let only = env
        .cmd()
        .args(["eval", "locomo"])
        .arg(&path)
        .args(["--only", "conv-b", "--json"])
        .output()
        .unwrap();
    let only: serde_json::Value = serde_json::from_slice(&only.stdout).unwrap();
    assert_eq!(only["conversations"].as_array().unwrap().len(), 1);
    let bad = env
        .cmd()
        .args(["eval", "locomo"])
        .arg(&path)
        .args(["--only", "conv-z"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("conv-z"), "{}", stderr(&bad));
}

#[test]
fn eval_locomo_says_what_is_wrong_with_a_bad_file() {
    let env = Env::new();
    let missing = env.dream(&["eval", "locomo", "nowhere.json"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).contains("reading"), "{}", stderr(&missing));
    let path = env.root.join("not-locomo.json");
    std::fs::write(&path, r#"{"hello": 1}"#).unwrap();
    let out = env
        .cmd()
        .args(["eval", "locomo"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is not a LoCoMo file"),
        "{}",
        stderr(&out)
    );
}
