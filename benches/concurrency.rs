//! Benchmark: reflect calls run `llm.concurrency` at a time (SPEC S5).
//!
//! A fake OpenAI-compatible server on loopback (`dream_testkit::fake_llm`) adds 200 ms of latency
//! to every chat call; an inbox holds 40 distinct topics, each stated twice, so a cycle
//! reflects on 40 clusters. The real `dream` binary runs `dream run --dry-run` (every step,
//! nothing written, so the same repo serves every run) at concurrency 1 and 8, several
//! times each. It prints the median wall time of each and their ratio; the target is a
//! ratio of at most 1/5. Exits 1 if the target is missed.
//!
//! Run with `cargo bench --bench concurrency` (`DREAM_BENCH_RUNS=N` for more or fewer runs,
//! default 5). `cargo test` does not run it.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use dream_testkit::fake_llm::FakeLlm;

const NOW: &str = "2026-11-06T21:00:00Z";
const CLUSTERS: usize = 40;
const LATENCY: Duration = Duration::from_millis(200);
const TARGET: f64 = 0.2;

fn dream(home: &Path, repo: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dream"));
    for (k, _) in std::env::vars() {
        if k.starts_with("DREAM_") || k.starts_with("GIT_") {
            c.env_remove(k);
        }
    }
    c.env("HOME", home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("DREAM_REPO", repo);
    c
}

/// Wall time of one dry-run cycle at this concurrency.
fn cycle(home: &Path, repo: &Path, fake: &FakeLlm, concurrency: usize) -> Duration {
    let started = Instant::now();
    let out = dream(home, repo)
        .env("DREAM_LLM_PROVIDER", "openai")
        .env("DREAM_LLM_BASE_URL", fake.base_url())
        .env("DREAM_LLM_MODEL", "fake-model")
        .env("DREAM_LLM_CONCURRENCY", concurrency.to_string())
        .args(["run", "--dry-run", "--json", "--now", NOW])
        .output()
        .expect("dream runs");
    let elapsed = started.elapsed();
    assert!(
        out.status.success(),
        "dream run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(
        report["window"]["reflected"], CLUSTERS,
        "every cluster is reflected: {}",
        report["window"]
    );
    elapsed
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() {
    let runs: usize = std::env::var("DREAM_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let dir = tempfile::tempdir().expect("a temp dir");
    let home = dir.path().join("home");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&home).unwrap();
    let init = dream(&home, &repo).arg("init").arg(&repo).output().unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let start = "2026-11-04T09:00:00Z".parse().unwrap();
    std::fs::write(
        repo.join("events/bench.jsonl"),
        dream_testkit::fake_llm::topic_events(CLUSTERS, 2, start),
    )
    .unwrap();

    let fake = FakeLlm::start();
    fake.set_latency(LATENCY);
    println!(
        "concurrency benchmark: {CLUSTERS} clusters, {} ms per call, median of {runs} dry-run cycles",
        LATENCY.as_millis()
    );
    let mut medians = Vec::new();
    for concurrency in [1, 8] {
        let times: Vec<Duration> = (0..runs)
            .map(|_| cycle(&home, &repo, &fake, concurrency))
            .collect();
        let m = median(times.clone());
        let all: Vec<String> = times
            .iter()
            .map(|t| format!("{:.2}", t.as_secs_f64()))
            .collect();
        println!(
            "  concurrency {concurrency}: median {:.2} s  (runs: {} s; fake saw at most {} calls at once)",
            m.as_secs_f64(),
            all.join(", "),
            fake.max_in_flight()
        );
        medians.push(m);
    }
    let ratio = medians[1].as_secs_f64() / medians[0].as_secs_f64();
    let verdict = if ratio <= TARGET { "meets" } else { "MISSES" };
    println!(
        "  ratio concurrency 8 / concurrency 1: {ratio:.3} ({verdict} the target of at most {TARGET})"
    );
    if ratio > TARGET {
        std::process::exit(1);
    }
}
