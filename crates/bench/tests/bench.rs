//! `dream-bench` at toy sizes: it measures cycles in child processes and counts tokens
//! against the fake server. These tests check that the figures are produced and hang
//! together; the figures themselves are measured on a release build
//! (docs/BENCHMARKS.md), never by a timed test.

use std::process::Output;

use assert_cmd::Command;

/// A temporary folder with its own HOME and no global git config or DREAM_* variables.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn cmd(&self) -> Command {
        let mut c = Command::cargo_bin("dream-bench").expect("the dream-bench binary");
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().into_owned();
            if k.starts_with("DREAM_") || k.starts_with("GIT_") {
                c.env_remove(k);
            }
        }
        let home = self.dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        c.env("HOME", &home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1")
            .current_dir(self.dir.path());
        c
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bench_measures_cycles_in_child_processes_at_toy_sizes() {
    let env = Env::new();
    let out = env
        .cmd()
        .args([
            "--scenario",
            "heavy,incremental,cluster,tokens",
            "--runs",
            "1",
            "--window",
            "200",
            "--new",
            "50",
            "--history",
            "300",
            "--increment",
            "40",
            "--cluster-sizes",
            "400",
            "--exact-up-to",
            "400",
            "--token-events",
            "60",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_name = |n: &str| scenario(&r, n);
    let heavy = by_name("heavy");
    assert_eq!(heavy["median"]["new_events"], 50.0, "{heavy}");
    assert!(
        heavy["median"]["window_events"].as_f64().unwrap() >= 200.0,
        "{heavy}"
    );
    assert!(
        heavy["median"]["peak_rss_mb"].as_f64().unwrap() > 1.0,
        "{heavy}"
    );
    assert!(
        heavy["median"]["stages_ms"].get("cluster").is_some(),
        "{heavy}"
    );
    let idle = by_name("idle");
    assert_eq!(idle["median"]["new_events"], 0.0, "{idle}");
    assert!(
        idle["median"]["stages_ms"].get("cluster").is_none(),
        "{idle}"
    );
    let inc = by_name("incremental");
    assert!(
        inc["extra"]["engine_ratio"].as_f64().unwrap() > 0.0,
        "{inc}"
    );
    let cluster = by_name("cluster");
    assert_eq!(
        cluster["extra"]["false_neighbours_at_400"], 0.0,
        "{cluster}"
    );
    assert!(
        cluster["extra"]["neighbour_recall_at_400"]
            .as_f64()
            .unwrap()
            > 0.9,
        "{cluster}"
    );
    let tokens = by_name("tokens");
    assert!(
        tokens["notes"].to_string().contains("--llm-url"),
        "{tokens}"
    );
    // The table goes to stderr with --json.
    assert!(stderr(&out).contains("target"), "{}", stderr(&out));
}

#[test]
fn bench_counts_tokens_against_the_fake_server_and_a_per_event_extractor() {
    let env = Env::new();
    let out = env
        .cmd()
        .args([
            "--scenario",
            "tokens",
            "--runs",
            "1",
            "--token-events",
            "400",
            "--fake-llm",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tokens = scenario(&r, "tokens");
    let x = |k: &str| {
        tokens["extra"][k]
            .as_f64()
            .unwrap_or_else(|| panic!("{k} in {tokens}"))
    };
    // The baseline asks once per event; dream once per prompt (and judge batch), in one
    // cycle (c0) and in a cycle a day (c1), both schedules run by default.
    assert_eq!(x("baseline_calls"), 400.0, "{tokens}");
    assert!(x("c0_calls") > 0.0 && x("c0_calls") < 100.0, "{tokens}");
    assert!(x("c1_calls") >= x("c0_calls"), "{tokens}");
    assert!(x("c0_facts") > 0.0 && x("c1_facts") > 0.0, "{tokens}");
    assert!(
        x("dream_tokens_per_fact") < x("baseline_tokens_per_fact") / 2.0,
        "{tokens}"
    );
}

/// A LoCoMo-shaped file of two small conversations (their sessions on several days, one
/// turn sharing an image), made up for the test.
fn toy_locomo() -> String {
    let turn = |speaker: &str, dia: &str, text: &str| serde_json::json!({"speaker": speaker, "dia_id": dia, "text": text});
    let conv = |id: &str, a: &str, b: &str, day: u32| {
        let mut c = serde_json::Map::new();
        c.insert("speaker_a".into(), a.into());
        c.insert("speaker_b".into(), b.into());
        for s in 1..=3u32 {
            c.insert(
                format!("session_{s}_date_time"),
                format!("1:{s}0 pm on {} May, 2023", day + 2 * s).into(),
            );
            let mut turns = vec![
                turn(
                    a,
                    &format!("D{s}:1"),
                    &format!("I keep bees on the roof of my flat in Leeds, {a} here."),
                ),
                turn(b, &format!("D{s}:2"), "That is lovely! How many hives?"),
                turn(
                    a,
                    &format!("D{s}:3"),
                    "Three hives, and the honey sells at the Sunday market.",
                ),
            ];
            if s == 2 {
                let mut t = turn(b, "D2:4", "Look at my new bike.");
                t["blip_caption"] = "a photo of a red bicycle".into();
                turns.push(t);
            }
            c.insert(format!("session_{s}"), turns.into());
        }
        serde_json::json!({"sample_id": id, "conversation": c, "qa": [
            {"question": "Where does the beekeeper live?", "answer": "Leeds", "evidence": ["D1:1"], "category": 4}
        ]})
    };
    serde_json::json!([conv("toy-1", "Ada", "Bo", 1), conv("toy-2", "Cy", "Di", 10)]).to_string()
}

#[test]
fn the_stream_scenario_replays_a_conversation_file_on_each_schedule() {
    let env = Env::new();
    let file = env.dir.path().join("toy-locomo.json");
    std::fs::write(&file, toy_locomo()).unwrap();
    let out = env
        .cmd()
        .args([
            "--scenario",
            "stream",
            "--runs",
            "1",
            "--fake-llm",
            "--json",
        ])
        .arg("--stream")
        .arg(&file)
        .args(["--cycles-per-day", "0,2", "--stream-reflect", "echo"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = scenario(&r, "stream");
    assert_eq!(s["params"]["events"], 20, "{s}");
    let runs = s["schedules"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{s}");
    let (one, two) = (&runs[0], &runs[1]);
    assert_eq!(
        (one["cycles"].as_u64(), one["idle_cycles"].as_u64()),
        (Some(1), Some(0))
    );
    // Six session days over a month: one cycle runs on each, the other days' are idle.
    assert_eq!(two["cycles"], 6, "{two}");
    assert!(two["idle_cycles"].as_u64().unwrap() > 20, "{two}");
    for run in runs {
        let reflect = &run["stages"]["reflect"];
        assert!(reflect["new_events"].as_u64().unwrap() > 0, "{run}");
        assert!(reflect["instructions"].as_u64().unwrap() > 0, "{run}");
        let total: u64 = run["stages"]
            .as_object()
            .unwrap()
            .values()
            .map(|t| t["total"].as_u64().unwrap())
            .sum();
        assert_eq!(
            total,
            run["tokens"].as_u64().unwrap(),
            "the stages add up: {run}"
        );
    }
    assert_eq!(s["extra"]["c0_traceability"], 1.0, "{s}");
    assert_eq!(s["extra"]["c2_traceability"], 1.0, "{s}");
    let targets: Vec<&str> = s["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        targets,
        [
            "tokens per event, 2 cycles a day",
            "tokens per event, 2 cycles a day / one cycle"
        ],
        "{s}"
    );
}

#[test]
fn the_year_scenario_measures_each_figure_at_each_length_of_history() {
    let env = Env::new();
    let out = env
        .cmd()
        .args([
            "--scenario",
            "year",
            "--runs",
            "1",
            "--year-events",
            "1500",
            "--year-days",
            "33",
            "--year-points",
            "2",
            "--fake-llm",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let y = scenario(&r, "year");
    assert_eq!(y["params"]["points"], serde_json::json!([16, 33]), "{y}");
    let x = |k: &str| {
        y["extra"][k]
            .as_f64()
            .unwrap_or_else(|| panic!("{k} in {y}"))
    };
    for d in ["d16", "d33"] {
        assert!(x(&format!("{d}_backfill_tokens")) > 0.0, "{y}");
        assert!(x(&format!("{d}_state_mb")) > 0.0, "{y}");
        assert!(x(&format!("{d}_day_new_events")) > 0.0, "{y}");
        assert!(x(&format!("{d}_idle_engine_ms")) >= 0.0, "{y}");
        assert!(x(&format!("{d}_backfill_peak_mb")) > 1.0, "{y}");
    }
    // The longer history was backfilled in more windows, with more tokens.
    assert!(x("d33_backfill_windows") > x("d16_backfill_windows"), "{y}");
    assert!(x("d33_backfill_tokens") > x("d16_backfill_tokens"), "{y}");
    assert!(y["extra"].get("growth_backfill_tokens").is_some(), "{y}");
    let targets = y["targets"].to_string();
    assert!(
        targets.contains("peak memory, first run's backfill, 33 days"),
        "{targets}"
    );
    assert!(
        targets.contains("growth of the idle cycle engine time"),
        "{targets}"
    );
}

/// One scenario of `dream-bench --json`'s output, by name.
fn scenario(report: &serde_json::Value, name: &str) -> serde_json::Value {
    report["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("scenario {name} in {report}"))
        .clone()
}
