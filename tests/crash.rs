//! Crash-point sweeps (issue: nothing lost). Every durable write of a cycle, of `review
//! accept|reject|edit`, of `undo` and of `skills promote|discard` passes a crash point
//! (`DREAM_CRASH_AT=N` aborts the debug binary just before the N-th; see `edges::crash`).
//! For each command, one uninterrupted run of a copy of a prepared repository gives the
//! expected result and the number of points; then, for every point N, a fresh copy is
//! crashed at N and the same command run again (as a person or the timer would), and the
//! result must be the same: the history (messages and trees), every file of the working
//! tree, a clean `git status`, the state database's rows, and no journal or temporary file
//! left behind.
//!
//! I/O errors are crash points too (issue 29): for every point N, `DREAM_FAIL_AT=N` (one
//! failed write or flush, EIO or ENOSPC by turns) and `DREAM_FAIL_FROM=N` (every write
//! from N on fails: a disk that filled up) must each leave one of two outcomes. Exit 0 and
//! the uninterrupted result; or a non-zero exit with a reason on stderr, where "nothing
//! was changed" means exactly that (the print equals the one before the command), and the
//! same command run again gives the uninterrupted result. No command may hang (each is
//! given two minutes). `init` and `hooks install|uninstall` are swept the same way, with
//! the harness's folder under HOME part of what is compared.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use sha2::{Digest, Sha256};

use crate::util::{event, stderr, Env, SAMPLE_NOW};

/// Copy a folder (a prepared repository) with everything in it. Git's object files are
/// linked, not copied: git never changes one in place (a new object is a new file), and
/// the sweeps make hundreds of copies.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            let object = entry
                .path()
                .components()
                .collect::<Vec<_>>()
                .windows(2)
                .any(|w| w[0].as_os_str() == ".git" && w[1].as_os_str() == "objects");
            if !(object && std::fs::hard_link(entry.path(), &dest).is_ok()) {
                std::fs::copy(entry.path(), &dest).unwrap();
            }
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

/// One copy of a prepared repository and HOME, where a command is run.
struct Place {
    dir: PathBuf,
    repo: PathBuf,
    home: PathBuf,
}

fn place(env: &Env, template: &Path, home: &Path, name: &str) -> Place {
    let dir = env.root.join(name);
    let p = Place {
        repo: dir.join("repo"),
        home: dir.join("home"),
        dir,
    };
    copy_dir(template, &p.repo);
    copy_dir(home, &p.home);
    p
}

/// Run `args` (`{repo}` stands for the copy's repository) in a place; `None` when the
/// command had not ended after two minutes (it is killed: a stuck command).
fn run_at(env: &Env, p: &Place, args: &[&str], vars: &[(&str, String)]) -> Option<Output> {
    let repo = p.repo.display().to_string();
    let mut c = env.std_cmd();
    c.env("DREAM_REPO", &p.repo)
        .env("HOME", &p.home)
        .args(args.iter().map(|a| a.replace("{repo}", &repo)));
    for (k, v) in vars {
        c.env(k, v);
    }
    let out_path = p.dir.join("stdout");
    let err_path = p.dir.join("stderr");
    c.stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = c.spawn().expect("dream runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    Some(Output {
        status,
        stdout: std::fs::read(&out_path).unwrap(),
        stderr: std::fs::read(&err_path).unwrap(),
    })
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
    /// Every file under HOME (a harness's settings, backups, temporary files), by content
    /// hash with the place's own path left out.
    home: BTreeMap<String, String>,
}

/// The files under `dir` by content hash; `place`: a path that stands for the copy the
/// files are in, replaced before hashing (a hook's command names its repository).
fn files_in(root: &Path, dir: &Path, place: Option<&str>, out: &mut BTreeMap<String, String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let p = entry.unwrap().path();
        let rel = p.strip_prefix(root).unwrap().display().to_string();
        if rel == ".git" || rel == ".dream" {
            continue;
        }
        if p.is_dir() {
            files_in(root, &p, place, out);
        } else {
            let mut bytes = std::fs::read(&p).unwrap_or_default();
            if let Some(place) = place {
                bytes = String::from_utf8_lossy(&bytes)
                    .replace(place, "{place}")
                    .into_bytes();
            }
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

/// What a user can observe of a place: its repository (which may not be one yet, before `init`) and HOME.
fn print_place(p: &Place) -> Print {
    print_of(&p.repo, Some(p))
}

fn print_of(repo: &Path, place: Option<&Place>) -> Print {
    let mut branch = "(no repository)".to_string();
    let mut history = Vec::new();
    let mut status = Vec::new();
    if let Ok(git) = git2::Repository::open(repo) {
        let head = git.find_reference("HEAD").unwrap();
        branch = head.symbolic_target().unwrap_or("(detached)").to_string();
        let mut at = git.head().ok().and_then(|h| h.target());
        while let Some(id) = at {
            let c = git.find_commit(id).unwrap();
            history.push((
                String::from_utf8_lossy(c.message_bytes()).into_owned(),
                c.tree_id().to_string(),
            ));
            at = c.parent_ids().next();
        }
        let mut opts = git2::StatusOptions::new();
        opts.include_untracked(true).recurse_untracked_dirs(true);
        status = git
            .statuses(Some(&mut opts))
            .unwrap()
            .iter()
            .map(|s| format!("{:?} {}", s.status(), s.path().unwrap_or("?")))
            .collect();
        for l in ["index.lock", "HEAD.lock", "config.lock", "packed-refs.lock"] {
            if repo.join(".git").join(l).exists() {
                status.push(format!("left .git/{l}"));
            }
        }
    }
    let mut f = BTreeMap::new();
    let dir = place.map(|p| p.dir.display().to_string());
    files_in(repo, repo, dir.as_deref(), &mut f);
    let mut home = BTreeMap::new();
    if let Some(p) = place {
        files_in(&p.home, &p.home, dir.as_deref(), &mut home);
    }
    let mut state = BTreeMap::new();
    let db = repo.join(".dream/state.sqlite");
    let readable = db.exists()
        && rusqlite::Connection::open(&db)
            .and_then(|c| c.query_row("SELECT COUNT(*) FROM cycles", [], |_| Ok(())))
            .is_ok();
    if db.exists() && !readable {
        state.insert("unreadable".to_string(), vec![]);
    }
    if readable {
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
        home,
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
    if want.home != got.home {
        return format!("HOME files {:?} vs {:?}", want.home, got.home);
    }
    format!("leftovers {:?} vs {:?}", want.leftovers, got.leftovers)
}

/// Sweep every crash point of `args` run on a copy of `template` (kills only); returns how
/// many points there were. Panics listing every point whose crash-and-retry differs.
fn sweep(env: &Env, template: &Path, args: &[&str]) -> usize {
    sweep_all(env, template, &env.home, args, Faults::KillsOnly)
}

/// How many points of a sweep get injected errors besides those around the commit point
/// (all of them with `DREAM_SWEEP_FULL=1`).
const ERRORS_PER_SWEEP: usize = 8;

/// Which injections a sweep makes at each point.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Faults {
    KillsOnly,
    /// Kills, one failed operation, and every operation failing from the point on.
    KillsAndErrors,
}

/// The sweep (see the module comment) of `args` on copies of `template` and `home`.
fn sweep_all(env: &Env, template: &Path, home: &Path, args: &[&str], faults: Faults) -> usize {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let label = args.join(" ");
    let base = place(env, template, home, &format!("baseline-{run}"));
    let before = print_place(&base);
    let out = run_at(env, &base, args, &[("DREAM_CRASH_TRACE", "1".into())])
        .unwrap_or_else(|| panic!("{label}: the uninterrupted run did not end"));
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
    let want = print_place(&base);
    assert!(want.leftovers.is_empty(), "{label}: {:?}", want.leftovers);
    let mut failures = Vec::new();
    let mut tried = 0;
    let mut check = |n: usize, name: &str, how: &str, vars: Vec<(&str, String)>, kill: bool| {
        tried += 1;
        let copy = place(
            env,
            template,
            home,
            &format!("crash-{run}-{n}-{}", how.replace(' ', "-")),
        );
        let Some(out) = run_at(env, &copy, args, &vars) else {
            failures.push(format!(
                "point {n} ({name}), {how}: the command did not end"
            ));
            return;
        };
        let err = stderr(&out);
        if kill {
            assert!(
                !out.status.success() && err.contains(&format!("crashing at point {n}:")),
                "{label}: point {n} ({name}) was not reached: {err}"
            );
        } else if out.status.success() {
            // It finished (forward, past an error after its commit point): all of it. No
            // retry: a person or a timer does not run a command that said it was done again
            // at the same clock (a second cycle at one clock is a cycle of its own).
            let got = print_place(&copy);
            if got != want {
                failures.push(format!(
                    "point {n} ({name}), {how}: exit 0 but {}",
                    difference(&want, &got)
                ));
            }
            std::fs::remove_dir_all(&copy.dir).unwrap();
            return;
        } else {
            if !err.contains("error:") {
                failures.push(format!(
                    "point {n} ({name}), {how}: exit {:?} with nothing on stderr",
                    out.status.code()
                ));
            }
            if err.contains("nothing was changed") {
                let mut got = print_place(&copy);
                // When every write fails, even the journal of the change that did not
                // happen cannot be removed: the next command forgets it (the retry below
                // checks that nothing is left).
                if how.contains("from") {
                    got.leftovers.retain(|l| l != "journal.json");
                }
                if got != before {
                    failures.push(format!(
                        "point {n} ({name}), {how}: says nothing was changed, but {} [{}]",
                        difference(&before, &got),
                        err.lines().next().unwrap_or("")
                    ));
                }
            }
        }
        // The retry: the same command again (it may say the decision was already made).
        let Some(retry) = run_at(env, &copy, args, &[]) else {
            failures.push(format!("point {n} ({name}), {how}: the retry did not end"));
            return;
        };
        let got = print_place(&copy);
        if got != want {
            failures.push(format!(
                "point {n} ({name}), {how}: {} [first: {}] [retry: {}]",
                difference(&want, &got),
                err.lines().next().unwrap_or("ok"),
                stderr(&retry).lines().next().unwrap_or("ok")
            ));
        }
        std::fs::remove_dir_all(&copy.dir).unwrap();
    };
    // Errors are injected at every point with DREAM_SWEEP_FULL=1; in `cargo test`, at the
    // points around each commit point and at about ERRORS_PER_SWEEP more spread evenly
    // (each injection is two runs of the debug binary).
    let full = std::env::var_os("DREAM_SWEEP_FULL").is_some();
    let stride = if full {
        1
    } else {
        names.len().div_ceil(ERRORS_PER_SWEEP).max(1)
    };
    let key = |name: &str| {
        [
            "move ",
            "lock refs/",
            ".git/refs/heads",
            "commit the state",
            "journal.json",
            "git index",
        ]
        .iter()
        .any(|k| name.contains(k))
    };
    for (i, name) in names.iter().enumerate() {
        let n = i + 1;
        // A kill before a flush is a kill just after the write before it.
        if !name.starts_with("fsync") {
            check(
                n,
                name,
                "kill",
                vec![("DREAM_CRASH_AT", n.to_string())],
                true,
            );
        }
        if faults == Faults::KillsAndErrors && (i % stride == 0 || key(name)) {
            let errno = if n % 2 == 0 { "EIO" } else { "ENOSPC" };
            check(
                n,
                name,
                &format!("{errno} at"),
                vec![
                    ("DREAM_FAIL_AT", n.to_string()),
                    ("DREAM_FAIL_ERRNO", errno.into()),
                ],
                false,
            );
            check(
                n,
                name,
                "ENOSPC from",
                vec![("DREAM_FAIL_FROM", n.to_string())],
                false,
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{label}: {} of {tried} injections differ from the uninterrupted run (or from not having run):\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!(
        "crash sweep: {label}: {} points, {tried} injections, 0 differences, 0 stuck",
        names.len()
    );
    std::fs::remove_dir_all(&base.dir).unwrap();
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
    let n = sweep_all(
        &env,
        &env.repo,
        &env.home,
        &["run", "--now", SAMPLE_NOW],
        Faults::KillsAndErrors,
    );
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
    sweep_all(
        &env,
        &env.repo,
        &env.home,
        &["review", "accept", &porto, "--now", now],
        Faults::KillsAndErrors,
    );
    sweep_all(
        &env,
        &env.repo,
        &env.home,
        &[
            "review",
            "reject",
            &porto,
            "--reason",
            "I moved back",
            "--now",
            now,
        ],
        Faults::KillsAndErrors,
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
    sweep_all(
        &env,
        &env.repo,
        &env.home,
        &[
            "undo",
            &lisbon,
            "--reason",
            "wrong city",
            "--now",
            "2026-11-07T08:00:00Z",
        ],
        Faults::KillsAndErrors,
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

#[test]
fn a_failed_flush_after_the_branch_moved_still_finishes_the_decision() {
    // Issue 29's report: EIO on the flush of the refs folder after the branch ref was
    // renamed. `accept` said "failed" though the branch had moved, a second accept left
    // the working tree old, and the next cycle recorded the old tree as a hand edit.
    let (env, porto, _) = review_template();
    let now = "2026-11-07T08:00:00Z";
    // Only the flush of the branch's folder fails (the name of that point alone holds
    // `.git/refs/heads`).
    let out = env
        .cmd()
        .args(["review", "accept", &porto, "--now", now])
        .env("DREAM_FAIL_AT", ".git/refs/heads")
        .env("DREAM_FAIL_ERRNO", "EIO")
        .env("DREAM_CRASH_TRACE", "1")
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("fsync folder") && stderr(&out).contains(".git/refs/heads"),
        "the flush of the branch's folder was reached: {}",
        stderr(&out)
    );
    assert!(
        out.status.success(),
        "the decision happened: {}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("all the same"),
        "the failed flush is reported: {}",
        stderr(&out)
    );
    assert!(!env.repo.join(".dream/journal.json").exists());
    assert!(
        env.facts().iter().any(|f| f.contains("Porto")),
        "the accepted fact is in the working tree: {:?}",
        env.facts()
    );
    let r = env.run_cycle("2026-11-07T21:00:00Z");
    let subjects: Vec<String> = env.commits().into_iter().map(|(s, _)| s).collect();
    assert!(
        !subjects
            .iter()
            .any(|s| s.contains("hand edits") && s.contains("review")),
        "{subjects:?}"
    );
    assert!(
        env.facts().iter().any(|f| f.contains("Porto")),
        "the fact stays after the next cycle: {:?} {}",
        env.facts(),
        r["notes"]
    );
}

#[test]
fn every_crash_point_and_io_error_of_undo_cycle_and_purge_gives_a_whole_result() {
    let (env, _, _) = review_template();
    let now = "2026-11-07T08:00:00Z";
    sweep_all(
        &env,
        &env.repo,
        &env.home,
        &["undo", "--cycle", "20261106T210000Z-evening", "--now", now],
        Faults::KillsAndErrors,
    );
    sweep_all(
        &env,
        &env.repo,
        &env.home,
        &["purge", "with my two cats", "--yes", "--now", now],
        Faults::KillsAndErrors,
    );
}

#[test]
fn every_crash_point_and_io_error_of_rebuild_keeps_the_vetoes() {
    let (env, porto, _) = review_template();
    let now = "2026-11-07T08:00:00Z";
    let out = env.dream(&[
        "review",
        "reject",
        &porto,
        "--reason",
        "I moved back",
        "--now",
        now,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    sweep_all(
        &env,
        &env.repo,
        &env.home,
        &["rebuild", "--force", "--now", now],
        Faults::KillsAndErrors,
    );
}

#[test]
fn every_crash_point_and_io_error_of_init_gives_a_whole_repository() {
    let env = Env::new();
    let empty = env.root.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let n = sweep_all(
        &env,
        &empty,
        &env.home,
        &["init", "{repo}", "--now", "2026-11-01T09:00:00Z"],
        Faults::KillsAndErrors,
    );
    assert!(n >= 10, "init has many writes: {n}");
}

#[test]
fn every_crash_point_and_io_error_of_hooks_install_and_uninstall_gives_a_whole_result() {
    let env = Env::new();
    env.init();
    let claude = env.home.join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(
        claude.join("settings.json"),
        "{\n  \"theme\": \"dark\"\n}\n",
    )
    .unwrap();
    let now = "2026-11-01T09:00:00Z";
    sweep_all(
        &env,
        &env.repo,
        &env.home,
        &["hooks", "install", "claude-code", "--now", now],
        Faults::KillsAndErrors,
    );
    let out = env.dream(&["hooks", "install", "claude-code", "--now", now]);
    assert!(out.status.success(), "{}", stderr(&out));
    sweep_all(
        &env,
        &env.repo,
        &env.home,
        &["hooks", "uninstall", "claude-code", "--now", now],
        Faults::KillsAndErrors,
    );
}
