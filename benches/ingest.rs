//! Transcript ingest benchmark: how long a cycle's ingest takes over ~100 MB of Claude Code
//! and Codex transcripts, and how much memory it needs.
//!
//! Generates realistic session files in a temporary folder (prompts, replies, thinking
//! blocks with signatures, tool calls, tool output from a few hundred bytes to several
//! megabytes, pasted screenshots, progress and snapshot lines, Codex mirrors), then runs
//! the ingest of a cycle (`dream_engine::edges::ingest::ingest_inbox` with two `[[inbox.sources]]`, into a fresh
//! state database, committed) several times, each in a child process so that its peak
//! resident memory is its own. Prints the median, the spread, throughput and peak RSS,
//! then the time of a second cycle that finds nothing new.
//!
//!   cargo bench --bench ingest                       # ~100 MB, 5 runs
//!   DREAM_BENCH_MB=400 DREAM_BENCH_RUNS=3 cargo bench --bench ingest
//!
//! Memory should stay flat in the input size: compare the peak RSS at 100 and 400 MB.
//! To profile one ingest: `DREAM_BENCH_GENERATE=/tmp/data cargo bench --bench ingest`, then
//! run the bench executable with `DREAM_BENCH_CHILD=/tmp/data` under a profiler.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::json;

use dream_core::schema::settings::{Config, Source};
use dream_core::sources::adapters::Format;
use dream_engine::edges::state::{self, State};

const CHILD: &str = "DREAM_BENCH_CHILD";

fn main() {
    if let Ok(dir) = std::env::var(CHILD) {
        child(Path::new(&dir));
        return;
    }
    let mb: u64 = env_num("DREAM_BENCH_MB", 100);
    if let Ok(dir) = std::env::var("DREAM_BENCH_GENERATE") {
        // Only write the data (for profiling: DREAM_BENCH_CHILD=DIR runs one ingest of it).
        let (files, bytes) = generate(Path::new(&dir), mb * 1_000_000);
        println!(
            "generated {files} files, {:.1} MB in {dir}",
            bytes as f64 / 1e6
        );
        return;
    }
    let runs: usize = env_num("DREAM_BENCH_RUNS", 5) as usize;
    let data = tempfile::tempdir().expect("temp dir");
    let t = Instant::now();
    let (files, bytes) = generate(data.path(), mb * 1_000_000);
    println!(
        "transcript ingest: generated {} files, {:.1} MB in {:.1} s ({})",
        files,
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64(),
        data.path().display()
    );
    let mut results = Vec::new();
    for i in 0..runs {
        let out = Command::new(std::env::current_exe().unwrap())
            .env(CHILD, data.path())
            .output()
            .expect("the child runs");
        assert!(
            out.status.success(),
            "child failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
        println!("  run {}: {line}", i + 1);
        let f: Vec<f64> = line
            .split_whitespace()
            .filter_map(|w| w.split('=').nth(1).and_then(|v| v.parse().ok()))
            .collect();
        results.push(f);
    }
    let col = |i: usize| -> Vec<f64> {
        let mut v: Vec<f64> = results.iter().map(|r| r[i]).collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v
    };
    let secs = col(0);
    let rss = col(1);
    let again = col(3);
    let median = secs[secs.len() / 2];
    println!(
        "transcript ingest: {:.1} MB in {:.2} s median (min {:.2}, max {:.2}, {} runs), {:.0} MB/s, {} events, peak RSS {:.0} MB (max), second cycle with nothing new {:.0} ms median",
        bytes as f64 / 1e6,
        median,
        secs[0],
        secs[secs.len() - 1],
        secs.len(),
        bytes as f64 / 1e6 / median,
        results[0][2],
        rss[rss.len() - 1] / 1024.0,
        again[again.len() / 2] * 1000.0,
    );
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One timed ingest into a fresh repo; prints `secs= rss_kb= events= again_secs=`.
fn child(data: &Path) {
    let repo = tempfile::tempdir().expect("temp repo");
    std::fs::create_dir_all(repo.path().join("events")).unwrap();
    let mut config = Config::default();
    for (format, dir) in [(Format::ClaudeCode, "claude"), (Format::Codex, "codex")] {
        config.inbox.sources.push(Source {
            format,
            path: data.join(dir).display().to_string(),
            include: Vec::new(),
            exclude: Vec::new(),
        });
    }
    let now = chrono::Utc::now();
    let mut st = State::open(repo.path()).unwrap();
    let t = Instant::now();
    let tx = st.conn.transaction().unwrap();
    let ingested =
        dream_engine::edges::ingest::ingest_inbox(&tx, repo.path(), &config, "bench", now).unwrap();
    for w in &ingested.watermarks {
        state::put_watermark(&tx, w, now).unwrap();
    }
    tx.commit().unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(ingested.quarantined, 0, "{:?}", ingested.quarantine.first());

    let t = Instant::now();
    let tx = st.conn.transaction().unwrap();
    let again = dream_engine::edges::ingest::ingest_inbox(&tx, repo.path(), &config, "bench2", now)
        .unwrap();
    tx.commit().unwrap();
    let again_secs = t.elapsed().as_secs_f64();
    assert_eq!(again.new_events, 0);
    println!(
        "secs={secs:.3} rss_kb={} events={} again_secs={again_secs:.4}",
        peak_rss_kb(),
        ingested.new_events
    );
}

/// Peak resident set size of this process (Linux), in KiB.
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// A tiny deterministic generator (xorshift), so every run sees the same data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &[
    "the",
    "build",
    "fails",
    "because",
    "cargo",
    "test",
    "module",
    "config",
    "parser",
    "user",
    "session",
    "deploy",
    "staging",
    "database",
    "migration",
    "index",
    "query",
    "cache",
    "token",
    "release",
    "branch",
    "commit",
    "review",
    "error",
    "warning",
    "function",
    "returns",
    "value",
    "Lisbon",
    "TypeScript",
    "prefer",
    "always",
    "never",
    "morning",
    "API",
    "endpoint",
    "latency",
    "src/main.rs",
    "tests/api.rs",
    "v1.2.3",
    "2026-11-02",
    "42",
    "ms",
    "retry",
    "timeout",
];

fn words(rng: &mut Rng, n: usize) -> String {
    let mut s = String::with_capacity(n * 7);
    for i in 0..n {
        if i > 0 {
            s.push(if rng.below(14) == 0 { '\n' } else { ' ' });
        }
        s.push_str(rng.pick(WORDS));
    }
    s
}

/// Between `lo` and `lo + span - 1` words.
fn some_words(rng: &mut Rng, lo: usize, span: u64) -> String {
    let n = lo + rng.below(span) as usize;
    words(rng, n)
}

fn output(rng: &mut Rng, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 80);
    let mut n = 0;
    while s.len() < bytes {
        n += 1;
        s.push_str(&format!("{n:6}\u{2192}"));
        s.push_str(&some_words(rng, 6, 10));
        s.push('\n');
    }
    s
}

fn base64ish(rng: &mut Rng, bytes: usize) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    (0..bytes)
        .map(|_| A[rng.below(64) as usize] as char)
        .collect()
}

fn uuid(rng: &mut Rng) -> String {
    let a = rng.next();
    let b = rng.next();
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

/// Write ~`target` bytes of transcripts (70% Claude Code, 30% Codex); returns files, bytes.
fn generate(dir: &Path, target: u64) -> (usize, u64) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut total = 0u64;
    let mut files = 0usize;
    let mut n = 0u64;
    while total < target {
        n += 1;
        let (path, lines) = if total < target * 7 / 10 {
            claude_session(&mut rng, dir, n)
        } else {
            codex_session(&mut rng, dir, n)
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        for l in &lines {
            f.write_all(l.as_bytes()).unwrap();
            f.write_all(b"\n").unwrap();
            total += l.len() as u64 + 1;
        }
        files += 1;
    }
    (files, total)
}

fn claude_session(rng: &mut Rng, dir: &Path, n: u64) -> (PathBuf, Vec<String>) {
    let session = uuid(rng);
    let mut lines = Vec::new();
    let mut t = 0u64;
    let mut ts = |rng: &mut Rng| {
        t += 1 + rng.below(30);
        format!(
            "2026-11-{:02}T{:02}:{:02}:{:02}.000Z",
            1 + n % 28,
            8 + t / 3600 % 12,
            t / 60 % 60,
            t % 60
        )
    };
    let base = |rng: &mut Rng, ts: String, kind: &str| {
        json!({"parentUuid": uuid(rng), "isSidechain": false, "userType": "external",
            "cwd": "/home/ada/work/service", "sessionId": session, "version": "2.1.90",
            "gitBranch": "main", "type": kind, "uuid": uuid(rng), "timestamp": ts})
    };
    let turns = 40 + rng.below(40);
    for turn in 0..turns {
        let mut l = {
            let at = ts(rng);
            base(rng, at, "progress")
        };
        l["data"] = json!({"type": "hook_progress", "hookEvent": "PreToolUse", "hookName": "PreToolUse:Bash", "command": "guard.sh"});
        lines.push(l.to_string());
        let mut u = {
            let at = ts(rng);
            base(rng, at, "user")
        };
        let mut prompt = some_words(rng, 10, 60);
        if turn % 25 == 3 {
            prompt.push_str(" my key is sk-proj-abcdefghijklmnopqrstuvwx1234");
        }
        u["message"] = if turn % 30 == 7 {
            json!({"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": base64ish(rng, 120_000)}},
                {"type": "text", "text": prompt}]})
        } else {
            json!({"role": "user", "content": prompt})
        };
        u["permissionMode"] = json!("default");
        lines.push(u.to_string());
        let mut a = {
            let at = ts(rng);
            base(rng, at, "assistant")
        };
        a["message"] = json!({"model": "claude-sonnet-4-6", "id": "msg_01", "type": "message", "role": "assistant",
            "content": [{"type": "thinking", "thinking": words(rng, 80), "signature": base64ish(rng, 600)}],
            "usage": {"input_tokens": 3, "cache_read_input_tokens": 20000, "output_tokens": 120}});
        lines.push(a.to_string());
        let mut a = {
            let at = ts(rng);
            base(rng, at, "assistant")
        };
        a["message"] = json!({"model": "claude-sonnet-4-6", "id": "msg_01", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": some_words(rng, 20, 120)}],
            "usage": {"input_tokens": 3, "output_tokens": 120}});
        lines.push(a.to_string());
        for _ in 0..(1 + rng.below(4)) {
            let id = format!("toolu_{}", rng.next());
            let tool = rng.pick(&["Bash", "Read", "Grep", "Edit"]);
            let mut c = {
                let at = ts(rng);
                base(rng, at, "assistant")
            };
            c["message"] = json!({"model": "claude-sonnet-4-6", "role": "assistant", "content": [
                {"type": "tool_use", "id": id, "name": tool, "input": {"command": words(rng, 6), "file_path": "/home/ada/work/service/src/lib.rs"}}]});
            lines.push(c.to_string());
            // Claude Code caps Bash output at 30,000 characters; reads and MCP tools can
            // return more, and now and then a tool prints megabytes.
            let size = match rng.below(1000) {
                0..=1 => 1_500_000 + rng.below(1_000_000) as usize,
                2..=100 => 10_000 + rng.below(20_000) as usize,
                _ => 200 + rng.below(3_800) as usize,
            };
            let out = output(rng, size);
            let mut r = {
                let at = ts(rng);
                base(rng, at, "user")
            };
            r["message"] = json!({"role": "user", "content": [{"tool_use_id": id, "type": "tool_result", "content": out, "is_error": rng.below(20) == 0}]});
            r["toolUseResult"] = json!({"stdout": out, "stderr": "", "interrupted": false});
            lines.push(r.to_string());
        }
        if turn % 10 == 0 {
            lines.push(json!({"type": "file-history-snapshot", "messageId": uuid(rng), "snapshot": {"trackedFileBackups": {}, "timestamp": ts(rng)}}).to_string());
        }
    }
    let path = dir
        .join("claude")
        .join(format!("-home-ada-work-p{}", n % 7))
        .join(format!("{session}.jsonl"));
    (path, lines)
}

fn codex_session(rng: &mut Rng, dir: &Path, n: u64) -> (PathBuf, Vec<String>) {
    let session = uuid(rng);
    let day = 1 + n % 28;
    let at = |rng: &mut Rng| {
        format!(
            "2026-11-{day:02}T10:{:02}:{:02}.000Z",
            rng.below(60),
            rng.below(60)
        )
    };
    let mut lines = vec![json!({"timestamp": at(rng), "type": "session_meta", "payload": {"id": session, "cwd": "/home/ada/work/api",
        "originator": "codex_cli_rs", "cli_version": "0.120.0", "base_instructions": {"text": words(rng, 2000)}, "git": {"branch": "main"}}})
    .to_string()];
    for _ in 0..(30 + rng.below(30)) {
        lines.push(json!({"timestamp": at(rng), "type": "turn_context", "payload": {"cwd": "/home/ada/work/api", "model": "gpt-5.2-codex", "approval_policy": "on-request"}}).to_string());
        let prompt = some_words(rng, 10, 50);
        lines.push(json!({"timestamp": at(rng), "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}}).to_string());
        lines.push(json!({"timestamp": at(rng), "type": "event_msg", "payload": {"type": "user_message", "message": prompt, "images": []}}).to_string());
        lines.push(json!({"timestamp": at(rng), "type": "response_item", "payload": {"type": "reasoning", "summary": [], "encrypted_content": base64ish(rng, 2_000)}}).to_string());
        for _ in 0..(1 + rng.below(4)) {
            let call = format!("call_{}", rng.next());
            let args =
                json!({"command": ["bash", "-lc", words(rng, 5)], "workdir": "/home/ada/work/api"})
                    .to_string();
            lines.push(json!({"timestamp": at(rng), "type": "response_item", "payload": {"type": "function_call", "name": "shell", "arguments": args, "call_id": call}}).to_string());
            let size = if rng.below(12) == 0 {
                30_000
            } else {
                300 + rng.below(4_000) as usize
            };
            let out = output(rng, size);
            lines.push(json!({"timestamp": at(rng), "type": "event_msg", "payload": {"type": "exec_command_end", "call_id": call, "stdout": out, "exit_code": 0}}).to_string());
            lines.push(json!({"timestamp": at(rng), "type": "response_item", "payload": {"type": "function_call_output", "call_id": call,
                "output": json!({"output": out, "metadata": {"exit_code": 0, "duration_seconds": 0.4}}).to_string()}}).to_string());
        }
        let reply = some_words(rng, 20, 100);
        lines.push(json!({"timestamp": at(rng), "type": "event_msg", "payload": {"type": "agent_message", "message": reply}}).to_string());
        lines.push(json!({"timestamp": at(rng), "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": reply}]}}).to_string());
        lines.push(json!({"timestamp": at(rng), "type": "event_msg", "payload": {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 1000}}}}).to_string());
    }
    let path = dir
        .join("codex")
        .join(format!("2026/11/{day:02}"))
        .join(format!("rollout-2026-11-{day:02}T10-00-00-{session}.jsonl"));
    (path, lines)
}
