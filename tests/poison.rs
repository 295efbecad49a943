//! No single input stops the pipeline (issue 46): an event that a later stage could not
//! carry (git, SQLite, a Markdown row) is quarantined at ingest with its reason, named by
//! `dream status`, and every other line goes on to memory. Each test feeds a line the
//! torture run found, or the whole class it belongs to, through real evening cycles.

use crate::util::{event, stderr, stdout, Env};

/// Said three times on two days in three sessions: enough for a cycle to promote it.
fn said_three_times(text: &str) -> String {
    [
        ("2026-11-01T09:00:00Z", "s1"),
        ("2026-11-02T09:00:00Z", "s2"),
        ("2026-11-02T15:00:00Z", "s3"),
    ]
    .iter()
    .map(|(ts, s)| event(ts, s, text))
    .collect()
}

fn run(env: &Env, now: &str) -> std::process::Output {
    env.dream(&["run", "--now", now, "--json"])
}

#[test]
fn a_nul_in_a_message_is_quarantined_and_every_evening_goes_on() {
    let env = Env::new();
    env.init();
    env.write_inbox(
        "a.jsonl",
        &said_three_times("I live in Lisbon with my two cats."),
    );
    env.write_inbox(
        "b.jsonl",
        &said_three_times("My locker at the gym is number 41\u{0}7."),
    );
    for now in ["2026-11-02T21:00:00Z", "2026-11-03T21:00:00Z"] {
        let out = run(&env, now);
        assert!(
            out.status.success(),
            "the evening at {now} failed: {}",
            stderr(&out)
        );
    }
    assert!(
        env.facts().iter().any(|f| f.contains("Lisbon")),
        "the other lines reached memory: {:?}",
        env.facts()
    );
    assert!(!env.facts().iter().any(|f| f.contains("locker")));
    let status = env.dream(&["status"]);
    let s = stdout(&status);
    assert!(
        s.contains("quarantined      3 lines") && s.contains("events/b.jsonl:1"),
        "status names the lines: {s}"
    );
    assert!(s.contains("NUL"), "and why: {s}");
    // A line written after it is read as usual.
    env.append_inbox(
        "b.jsonl",
        &event("2026-11-03T22:00:00Z", "s4", "I like tea."),
    );
    let out = run(&env, "2026-11-04T21:00:00Z");
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["ingest"]["new_events"], 1, "{r}");
    let v = env.dream(&["verify"]);
    assert!(v.status.success(), "{}", stdout(&v));
}

/// The class: every control character, the Unicode line and paragraph separators, a
/// byte order mark, a non-character and a lone surrogate (as a JSON escape), each inside
/// a fact said often enough to be promoted, in the text and in the session. Every cycle
/// must end, every line must be stored or quarantined with a reason, and `verify` must
/// pass on what was committed.
#[test]
fn no_character_in_any_field_stops_a_cycle() {
    let env = Env::new();
    env.init();
    let mut odd: Vec<String> = (0u32..0x20)
        .chain([0x7f, 0x85, 0x2028, 0x2029, 0xfeff, 0xfffe, 0xffff])
        .map(|c| char::from_u32(c).unwrap().to_string())
        .collect();
    odd.push("\\ud800".into());
    let mut lines = 0;
    for (i, c) in odd.iter().enumerate() {
        let mut text = String::new();
        for (ts, s) in [
            ("2026-11-01T09:00:00Z", "s1"),
            ("2026-11-02T09:00:00Z", "s2"),
            ("2026-11-02T15:00:00Z", "s3"),
        ] {
            // Written by hand, so the lone surrogate reaches the parser as JSON wrote it.
            let fact = format!("My locker number {i} at the gym is 4{c}17 on floor Oslo{i}.");
            let esc = serde_json::to_string(&fact)
                .unwrap()
                .replace("\\\\ud800", "\\ud800");
            let session = serde_json::to_string(&format!("{s}{c}{i}"))
                .unwrap()
                .replace("\\\\ud800", "\\ud800");
            text.push_str(&format!(
                "{{\"ts\":\"{ts}\",\"kind\":\"message\",\"actor\":\"user\",\"session\":{session},\"text\":{esc}}}\n"
            ));
            lines += 1;
        }
        env.write_inbox(&format!("odd-{i:02}.jsonl"), &text);
    }
    let mut stored = 0u64;
    let mut quarantined = 0u64;
    for now in ["2026-11-02T21:00:00Z", "2026-11-03T21:00:00Z"] {
        let out = run(&env, now);
        assert!(
            matches!(out.status.code(), Some(0) | Some(10)),
            "the evening at {now} failed: {}",
            stderr(&out)
        );
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        stored += r["ingest"]["new_events"].as_u64().unwrap();
        quarantined += r["ingest"]["quarantined"].as_u64().unwrap();
    }
    // A message may be cut into parts (a line of its own makes a part): at least a line.
    assert!(
        stored + quarantined >= lines,
        "every line is stored or quarantined: {stored} + {quarantined} of {lines}"
    );
    assert!(quarantined >= 3, "the NUL and the surrogate lines at least");
    assert!(
        env.facts().len() >= 20,
        "most of them were promoted: {:?}",
        env.facts()
    );
    let v = env.dream(&["verify"]);
    assert!(v.status.success(), "{}", stdout(&v));
    for cmd in [&["status"][..], &["log"], &["context"]] {
        let out = env.dream(cmd);
        assert!(out.status.success(), "{cmd:?}: {}", stderr(&out));
    }
}
