//! Crash-point sweeps (issue: nothing lost). Every durable write of a cycle, of `review
//! accept|reject|edit`, of `undo` and of `skills promote|discard` passes a crash point
//! (`DREAM_CRASH_AT=N` aborts the debug binary just before the N-th; see `edges::crash`).
//! For each command, one uninterrupted run of a copy of a prepared repository gives the
//! expected result and the number of points; then, for every point N, a fresh copy is
//! crashed at N and the same command run again (as a person or the timer would), and the
//! result must be the same: the history (messages and trees), every file of the working
//! tree, a clean `git status`, the state database's rows, and no journal or temporary file
//! left behind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use sha2::{Digest, Sha256};

use crate::util::{event, stderr, Env, SAMPLE_NOW};

/// Copy a folder (a prepared repository) with everything in it.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

fn run_in(env: &Env, repo: &Path, args: &[&str], vars: &[(&str, String)]) -> Output {
    let mut c = env.cmd();
    c.env("DREAM_REPO", repo).args(args);
    for (k, v) in vars {
        c.env(k, v);
    }
    c.output().expect("dream runs")
}

/// What a user can observe of a repository: its history, files, status and state.
#[derive(Debug, PartialEq, Eq)]
struct Print {
    branch: String,
    /// First-parent history from HEAD, newest first: (message, tree).
    history: Vec<(String, String)>,
    /// Every file outside `.git/` and `.dream/` (the inbox included), by content hash.
    files: BTreeMap<String, String>,
    /// What `git status` shows (untracked files included).
    status: Vec<String>,
    /// The state database's rows, table by table (times that are not the cycle's clock
    /// and commit ids left out).
    state: BTreeMap<String, Vec<String>>,
    /// Journal or temporary files left in `.dream/`.
    leftovers: Vec<String>,
}

fn files(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        let rel = p.strip_prefix(root).unwrap().display().to_string();
        if rel == ".git" || rel == ".dream" {
            continue;
        }
        if p.is_dir() {
            files(root, &p, out);
        } else {
            let bytes = std::fs::read(&p).unwrap();
            out.insert(rel, format!("{:x}", Sha256::digest(&bytes)));
        }
    }
}

fn rows(conn: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut stmt = conn.prepare(sql).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| {
        let mut cols = Vec::new();
        for i in 0..n {
            let v: rusqlite::types::Value = r.get(i)?;
            cols.push(format!("{v:?}"));
        }
        Ok(cols.join(" | "))
    })
    .unwrap()
    .map(|r| r.unwrap())
    .collect()
}

fn print(repo: &Path) -> Print {
    let git = git2::Repository::open(repo).unwrap();
    let head = git.find_reference("HEAD").unwrap();
    let branch = head.symbolic_target().unwrap_or("(detached)").to_string();
    let mut history = Vec::new();
    let mut at = git.head().ok().and_then(|h| h.target());
    while let Some(id) = at {
        let c = git.find_commit(id).unwrap();
        history.push((
            String::from_utf8_lossy(c.message_bytes()).into_owned(),
            c.tree_id().to_string(),
        ));
        at = c.parent_ids().next();
    }
    let mut f = BTreeMap::new();
    files(repo, repo, &mut f);
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true);
    let status = git
        .statuses(Some(&mut opts))
        .unwrap()
        .iter()
        .map(|s| format!("{:?} {}", s.status(), s.path().unwrap_or("?")))
        .collect();
    let mut state = BTreeMap::new();
    let db = repo.join(".dream/state.sqlite");
    if db.exists() {
        let conn = rusqlite::Connection::open(&db).unwrap();
        for (table, sql) in [
            ("events", "SELECT id, text, session, trust, reflected_cycle, ingested_cycle, origin FROM events ORDER BY id"),
            ("watermarks", "SELECT file, offset, line, prefix_hash FROM watermarks ORDER BY file"),
            ("quarantine", "SELECT file, line, offset, reason, excerpt, cycle FROM quarantine ORDER BY file, offset"),
            ("vetoes", "SELECT id, kind, text, events, reason, at, decision FROM vetoes ORDER BY id"),
            ("candidates", "SELECT id, cycle, route, text FROM candidates ORDER BY id, cycle"),
            ("cycles", "SELECT id, kind, now FROM cycles ORDER BY id"),
            ("vectors", "SELECT COUNT(*) FROM vectors"),
        ] {
            state.insert(table.to_string(), rows(&conn, sql));
        }
    }
    let mut leftovers = Vec::new();
    if let Ok(entries) = std::fs::read_dir(repo.join(".dream")) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(".dream-tmp-") || name == "journal.json" {
                leftovers.push(name);
            }
        }
    }
    Print {
        branch,
        history,
        files: f,
        status,
        state,
        leftovers,
    }
}

/// The first field in which two prints differ, for the failure message.
fn difference(want: &Print, got: &Print) -> String {
    if want.branch != got.branch {
        return format!("branch {} vs {}", want.branch, got.branch);
    }
    if want.history != got.history {
        let w: Vec<&str> = want
            .history
            .iter()
            .map(|(m, _)| m.lines().next().unwrap_or(""))
            .collect();
        let g: Vec<&str> = got
            .history
            .iter()
            .map(|(m, _)| m.lines().next().unwrap_or(""))
            .collect();
        return format!("history {w:?} vs {g:?}");
    }
    if want.files != got.files {
        let mut paths: Vec<&String> = want.files.keys().chain(got.files.keys()).collect();
        paths.sort();
        paths.dedup();
        let differ: Vec<&&String> = paths
            .iter()
            .filter(|p| want.files.get(**p) != got.files.get(**p))
            .collect();
        return format!("files differ: {differ:?}");
    }
    if want.status != got.status {
        return format!("git status {:?} vs {:?}", want.status, got.status);
    }
    if want.state != got.state {
        for (t, rows) in &want.state {
            if got.state.get(t) != Some(rows) {
                return format!("state table {t}: {rows:?} vs {:?}", got.state.get(t));
            }
        }
        return "state tables differ".into();
    }
    format!("leftovers {:?} vs {:?}", want.leftovers, got.leftovers)
}

/// Sweep every crash point of `args` run on a copy of `template`; returns how many
/// points there were. Panics listing every point whose crash-and-retry differs.
fn sweep(env: &Env, template: &Path, args: &[&str]) -> usize {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let label = args.join(" ");
    let base: PathBuf = env.root.join(format!("baseline-{run}"));
    copy_dir(template, &base);
    let out = run_in(env, &base, args, &[("DREAM_CRASH_TRACE", "1".into())]);
    assert!(out.status.success(), "{label}: {}", stderr(&out));
    let names: Vec<String> = stderr(&out)
        .lines()
        .filter_map(|l| l.strip_prefix("dream: crash point "))
        .map(|l| {
            l.split_once(": ")
                .map(|(_, n)| n.to_string())
                .unwrap_or_default()
        })
        .collect();
    assert!(
        names.len() >= 5,
        "{label}: only {} crash points",
        names.len()
    );
    let want = print(&base);
    assert!(want.leftovers.is_empty(), "{label}: {:?}", want.leftovers);
    let mut failures = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let n = i + 1;
        let copy = env.root.join(format!("crash-{run}-{n}"));
        copy_dir(template, &copy);
        let out = run_in(env, &copy, args, &[("DREAM_CRASH_AT", n.to_string())]);
        assert!(
            !out.status.success() && stderr(&out).contains(&format!("crashing at point {n}:")),
            "{label}: point {n} ({name}) was not reached: {}",
            stderr(&out)
        );
        // The retry: the same command again (it may say the decision was already made).
        let retry = run_in(env, &copy, args, &[]);
        let got = print(&copy);
        if got != want {
            failures.push(format!(
                "point {n} ({name}): {} [retry: {}]",
                difference(&want, &got),
                stderr(&retry).lines().next().unwrap_or("ok")
            ));
        }
        std::fs::remove_dir_all(&copy).unwrap();
    }
    assert!(
        failures.is_empty(),
        "{label}: {} of {} crash points differ from the uninterrupted run:\n{}",
        failures.len(),
        names.len(),
        failures.join("\n")
    );
    eprintln!(
        "crash sweep: {label}: {} points, 0 differences",
        names.len()
    );
    names.len()
}

fn lisbon(env: &Env) {
    let mut text = String::new();
    for (ts, s, t) in [
        (
            "2026-11-01T09:00:00Z",
            "s1",
            "I live in Lisbon with my two cats.",
        ),
        (
            "2026-11-02T09:00:00Z",
            "s2",
            "As I said, I live in Lisbon with my two cats.",
        ),
        (
            "2026-11-02T15:00:00Z",
            "s3",
            "I live in Lisbon with my two cats.",
        ),
    ] {
        text.push_str(&event(ts, s, t));
    }
    env.write_inbox("a.jsonl", &text);
}

fn porto(env: &Env) {
    let mut text = String::new();
    for (ts, s, t) in [
        (
            "2026-11-05T09:00:00Z",
            "s4",
            "I live in Porto with my two cats.",
        ),
        (
            "2026-11-06T09:00:00Z",
            "s5",
            "Yes, I live in Porto with my two cats.",
        ),
        (
            "2026-11-06T15:00:00Z",
            "s6",
            "I live in Porto with my two cats.",
        ),
    ] {
        text.push_str(&event(ts, s, t));
    }
    env.write_inbox("b.jsonl", &text);
}

fn hand_edit(env: &Env, line: &str) {
    let path = env.repo.join("memory/human.md");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}- {line}\n")).unwrap();
}

/// A repository with a fact (Lisbon), new events waiting (Porto, which contradicts it,
/// and the sample stream), a hand-written line, and an evening that writes a digest.
/// `cards`: the episodic tier off, so what lacks corroboration is a review card (the
/// review and undo sweeps decide cards); on, the cycle sweep also writes episodes.
fn cycle_template(cards: bool) -> Env {
    let env = Env::new();
    env.init();
    if cards {
        env.episodes_off();
    }
    let toml = env.read("dream.toml").replace(
        "[cycles.evening]                # dream run --cycle evening (the default)\nreflect = true                  # cluster, reflect, judge and route new events\npasses = true                   # dedupe, merge, promote, forget over durable memory\ndigest = false",
        "[cycles.evening]\nreflect = true\npasses = true\ndigest = true",
    );
    assert!(toml.contains("digest = true"));
    std::fs::write(env.repo.join("dream.toml"), toml).unwrap();
    lisbon(&env);
    env.run_cycle("2026-11-02T21:00:00Z");
    porto(&env);
    env.add_sample_events();
    hand_edit(&env, "I have a sister called Ana.");
    env
}

#[test]
fn every_crash_point_of_a_cycle_gives_the_uninterrupted_result() {
    let env = cycle_template(false);
    let n = sweep(&env, &env.repo, &["run", "--now", SAMPLE_NOW]);
    assert!(n >= 20, "a busy cycle has many writes: {n}");
}

/// The cycle template after its cycle: pending cards (one contradicts the Lisbon fact),
/// and another hand-written line waiting.
fn review_template() -> (Env, String, String) {
    let env = cycle_template(true);
    env.run_cycle(SAMPLE_NOW);
    hand_edit(&env, "I play the cello.");
    let cards: serde_json::Value =
        serde_json::from_slice(&env.dream(&["review", "list", "--json"]).stdout).unwrap();
    let porto = cards
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["supersedes"].is_string())
        .expect("a card that supersedes Lisbon")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let lisbon = env
        .facts()
        .into_iter()
        .find(|l| l.contains("Lisbon"))
        .unwrap()
        .split("id=")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    (env, porto, lisbon)
}

#[test]
fn every_crash_point_of_a_review_decision_gives_the_uninterrupted_result() {
    let (env, porto, _) = review_template();
    let now = "2026-11-07T08:00:00Z";
    sweep(&env, &env.repo, &["review", "accept", &porto, "--now", now]);
    sweep(
        &env,
        &env.repo,
        &[
            "review",
            "reject",
            &porto,
            "--reason",
            "I moved back",
            "--now",
            now,
        ],
    );
    sweep(
        &env,
        &env.repo,
        &[
            "review",
            "edit",
            "c_031362d3",
            "I am allergic to shellfish and to peanuts.",
            "--now",
            now,
        ],
    );
}

#[test]
fn every_crash_point_of_an_undo_gives_the_uninterrupted_result() {
    let (env, _, lisbon) = review_template();
    sweep(
        &env,
        &env.repo,
        &[
            "undo",
            &lisbon,
            "--reason",
            "wrong city",
            "--now",
            "2026-11-07T08:00:00Z",
        ],
    );
}

#[test]
fn every_crash_point_of_a_skill_decision_gives_the_uninterrupted_result() {
    let env = Env::new();
    env.init();
    let dir = env.repo.join("skills/drafts/run-checks");
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: run-checks\ndescription: Format, lint and test before a commit.\n---\n\n# Run the checks\n\n1. `cargo fmt --all`\n2. `scripts/check.sh`\n",
    )
    .unwrap();
    std::fs::write(dir.join("scripts/check.sh"), "cargo test\n").unwrap();
    env.run_cycle("2026-11-02T21:00:00Z");
    let now = "2026-11-03T08:00:00Z";
    sweep(
        &env,
        &env.repo,
        &["skills", "promote", "run-checks", "--now", now],
    );
    sweep(
        &env,
        &env.repo,
        &[
            "skills",
            "discard",
            "run-checks",
            "--reason",
            "not needed",
            "--now",
            now,
        ],
    );
}

#[test]
fn an_interrupted_cycle_is_replayed_on_top_of_a_commit_made_meanwhile() {
    let env = Env::new();
    env.init();
    lisbon(&env);
    // The state records the cycle, then the process dies before the branch moves.
    let out = run_in(
        &env,
        &env.repo,
        &["run", "--now", "2026-11-02T21:00:00Z"],
        &[("DREAM_CRASH_AT", "move refs/heads".into())],
    );
    assert!(!out.status.success());
    assert!(
        stale_lock_left(&env.repo),
        "the crash left the branch's lock"
    );
    // Meanwhile a person commits a note with git, around the lock dream left.
    std::fs::remove_file(env.repo.join(".git/refs/heads/master.lock")).unwrap();
    std::fs::write(env.repo.join("notes.md"), "my own notes\n").unwrap();
    let repo = git2::Repository::open(&env.repo).unwrap();
    let mut index = repo.index().unwrap();
    index.add_path(Path::new("notes.md")).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = git2::Signature::now("Ana", "ana@example.com").unwrap();
    let head = repo.head().unwrap().peel_to_commit().unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "my notes", &tree, &[&head])
        .unwrap();

    let r = env.run_cycle("2026-11-02T22:00:00Z");
    assert!(
        r["notes"].to_string().contains("was completed"),
        "{}",
        r["notes"]
    );
    assert_eq!(env.facts().len(), 1, "the cycle's fact landed");
    assert_eq!(
        env.read("notes.md"),
        "my own notes\n",
        "the person's commit is kept"
    );
    let subjects: Vec<String> = env.commits().into_iter().map(|(s, _)| s).collect();
    assert_eq!(
        subjects[1], "my notes",
        "replayed on top of it: {subjects:?}"
    );
    assert!(
        subjects[0].starts_with("dream: evening cycle 2026-11-02"),
        "{subjects:?}"
    );
    assert_eq!(r["ingest"]["new_events"], 0, "the state had the cycle");
}

fn stale_lock_left(repo: &Path) -> bool {
    repo.join(".git/refs/heads/master.lock").exists()
}
