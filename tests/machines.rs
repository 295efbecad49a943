//! One memory across machines (issue 45): two and three "machines" (each its own HOME and
//! its own copy of the memory) on one host, against a bare remote served by a real `git
//! daemon` on loopback, or a file:// remote. What a user sees: a fact said on a member over
//! three days is in the dreamer's memory after its cycle and in the member's context after
//! its sync; a secret said on a member is in no object of the remote; a second dreamer is
//! stopped, naming both machines, with its cycle's work intact; a person's edits at the
//! remote are taken in; the remote going away and coming back loses nothing.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{event, stderr, stdout, Env};

/// A secret a member's person pastes (a GitHub token shape the redaction knows).
const SECRET: &str = "ghp_Zq8vX2mN4bT7cK1pL9sD3fG6hJ0wE5rY8uI2";

/// A bare repository to share memory through.
fn bare(dir: &Path) -> PathBuf {
    let path = dir.join("memory.git");
    let ok = Command::new("git")
        .args(["init", "--quiet", "--bare"])
        .arg(&path)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap()
        .success();
    assert!(ok, "git init --bare");
    path
}

/// A `git daemon` serving `base` on a free loopback port, stopped when dropped.
struct Daemon {
    child: Child,
    port: u16,
}

impl Daemon {
    fn start(base: &Path) -> Option<Daemon> {
        let exe = [
            "/usr/lib/git-core/git-daemon",
            "/usr/libexec/git-core/git-daemon",
        ]
        .into_iter()
        .find(|p| Path::new(p).exists())?;
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(exe)
            .args([
                "--reuseaddr",
                "--export-all",
                "--enable=receive-pack",
                "--listen=127.0.0.1",
            ])
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", base.display()))
            .arg(base)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "git daemon did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Daemon { child, port })
    }

    fn url(&self, name: &str) -> String {
        format!("git://127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ok(out: &std::process::Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({:?}): {}\n{}",
        out.status.code(),
        stderr(out),
        stdout(out)
    );
    stdout(out)
}

/// A member joining `url` as `machine`, for `person`.
fn join(env: &Env, url: &str, machine: &str, person: &str) {
    let repo = env.repo.display().to_string();
    let out = env.dream(&["join", url, &repo, "--machine", machine, "--person", person]);
    ok(&out, "dream join");
}

/// A dreamer `desk` and a member `laptop` (Ana's) sharing memory through a file://
/// remote: the two machines, the bare repository and its URL.
fn desk_and_laptop() -> (Env, Env, PathBuf, String) {
    let (a, b) = (Env::new(), Env::new());
    let remote = bare(&a.root);
    let url = format!("file://{}", remote.display());
    let repo = a.repo.display().to_string();
    let out = a.dream(&["init", &repo, "--remote", &url, "--machine", "desk"]);
    ok(&out, "init");
    join(&b, &url, "laptop", "ana");
    (a, b, remote, url)
}

/// Every object of a bare repository, as text (loose and packed alike).
fn every_object(bare: &Path) -> String {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(bare)
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn lisbon(day: u32, session: &str, extra: &str) -> String {
    event(
        &format!("2026-11-0{day}T09:00:00Z"),
        session,
        &format!("I live in Lisbon with my two cats.{extra}"),
    )
}

#[test]
fn a_fact_said_on_a_member_over_three_days_reaches_memory_and_comes_back_and_its_secret_stays_home()
{
    let (a, b, c) = (Env::new(), Env::new(), Env::new());
    let remote = bare(&a.root);
    let Some(daemon) = Daemon::start(&a.root) else {
        eprintln!("note: no git daemon on this machine; the git:// test is skipped");
        return;
    };
    let url = daemon.url("memory.git");
    let repo = a.repo.display().to_string();
    let out = a.dream(&["init", &repo, "--remote", &url, "--machine", "desk"]);
    ok(&out, "dream init --remote");
    join(&b, &url, "laptop", "ana");
    join(&c, &url, "cloudbox", "bo");

    // Ana says it on the laptop on three days, syncing each evening (as the timer would);
    // on the third she pastes a token too. Bo says something else on the cloud box.
    for day in 1..=3 {
        let extra = if day == 3 {
            format!(" My token is {SECRET}")
        } else {
            String::new()
        };
        b.append_inbox("b.jsonl", &lisbon(day, &format!("s{day}"), &extra));
        let now = format!("2026-11-0{day}T20:00:00Z");
        ok(&b.dream(&["sync", "--now", &now]), "member sync");
    }
    c.append_inbox(
        "c.jsonl",
        &event("2026-11-02T10:00:00Z", "c1", "I prefer tabs over spaces."),
    );
    ok(
        &c.dream(&["sync", "--now", "2026-11-02T20:00:00Z"]),
        "member sync",
    );

    // The dreamer's cycle takes both members' events in, exactly once.
    let r = a.run_cycle("2026-11-03T21:00:00Z");
    assert_eq!(r["ingest"]["new_events"], 4, "{}", r["ingest"]);
    assert!(
        a.facts()
            .iter()
            .any(|f| f.contains("I live in Lisbon with my two cats.")),
        "the dreamer's memory: {:?}",
        a.facts()
    );
    let again = a.dream(&["sync", "--json"]);
    let again: serde_json::Value = serde_json::from_str(&ok(&again, "dreamer sync")).unwrap();
    assert_eq!(again["ingested"], 0, "nothing is taken in twice: {again}");

    // Ana's next session on the laptop: sync, then the context holds the fact.
    ok(
        &b.dream(&["sync", "--now", "2026-11-03T21:30:00Z"]),
        "member sync",
    );
    let ctx = ok(
        &b.dream(&["context", "--now", "2026-11-03T21:40:00Z"]),
        "context",
    );
    assert!(ctx.contains("I live in Lisbon with my two cats."), "{ctx}");
    assert!(ctx.contains("Memory copy from git://"), "{ctx}");

    // The token never left the laptop: no object of the remote holds it.
    let objects = every_object(&remote);
    assert!(objects.contains("Lisbon"), "the events did travel");
    assert!(!objects.contains(SECRET), "the secret is at the remote");
    assert!(
        !objects.contains(&SECRET[4..20]),
        "a part of the secret is at the remote"
    );

    // The dreamer's status names every machine seen, with its person and last event.
    let s: serde_json::Value =
        serde_json::from_str(&ok(&a.dream(&["status", "--json"]), "status")).unwrap();
    let members = s["shared"]["members"].as_array().unwrap();
    let names: Vec<&str> = members
        .iter()
        .filter_map(|m| m["machine"].as_str())
        .collect();
    assert_eq!(names, ["cloudbox", "laptop"], "{s}");
    assert_eq!(members[1]["person"], "ana");
    assert_eq!(members[1]["events"], 3);
    assert_eq!(s["shared"]["membership"]["role"], "dreamer");
    // Every commit of memory names the machine that dreamed it.
    let (_, message) = &a.commits()[0];
    assert!(message.contains("Dream-Machine: desk"), "{message}");
}

/// Copy a folder whole (a machine's repository moved or copied by hand).
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

#[test]
fn a_second_dreamer_is_stopped_naming_both_machines_and_its_cycle_stays_local() {
    let (a, a2) = (Env::new(), Env::new());
    let remote = bare(&a.root);
    let url = format!("file://{}", remote.display());
    let repo = a.repo.display().to_string();
    ok(
        &a.dream(&["init", &repo, "--remote", &url, "--machine", "desk"]),
        "init",
    );
    // The repository copied to a new machine that dreams too (its timers installed while
    // the old machine's still run): the mistake the fence is for.
    copy_dir(&a.repo, &a2.repo);
    let toml = a2.repo.join(".dream/remote.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, text.replace("\"desk\"", "\"tower\"")).unwrap();

    // The remote is away while desk dreams: its cycle commits locally.
    let away = a.root.join("away.git");
    std::fs::rename(&remote, &away).unwrap();
    a.write_inbox(
        "a.jsonl",
        &(lisbon(1, "s1", "") + &lisbon(2, "s2", "") + &lisbon(3, "s3", "")),
    );
    let out = a.dream(&["run", "--now", "2026-11-03T21:00:00Z"]);
    ok(&out, "a cycle with the remote away");
    assert!(
        stderr(&out).contains("pushed at the next sync"),
        "{}",
        stderr(&out)
    );
    let desk_facts = a.facts();
    assert!(!desk_facts.is_empty());
    std::fs::rename(&away, &remote).unwrap();

    // Tower dreams and pushes first.
    a2.write_inbox(
        "t.jsonl",
        &event("2026-11-03T10:00:00Z", "t1", "I prefer tabs over spaces."),
    );
    ok(
        &a2.dream(&["run", "--now", "2026-11-03T22:00:00Z"]),
        "tower's cycle",
    );
    let at_remote = every_object(&remote);

    // Desk's push is refused: the error names both machines and what to do; desk's cycle
    // stays in its own history, the remote keeps tower's.
    let out = a.dream(&["sync"]);
    assert!(!out.status.success(), "a second dreamer must be stopped");
    let e = stderr(&out);
    assert!(e.contains("\"desk\"") && e.contains("\"tower\""), "{e}");
    assert!(e.contains("dream join"), "{e}");
    assert_eq!(a.facts(), desk_facts, "desk's cycle is intact");
    assert_eq!(
        every_object(&remote),
        at_remote,
        "nothing reached the remote"
    );
    // And desk's next cycle stops before it starts.
    let out = a.dream(&["run", "--now", "2026-11-04T21:00:00Z"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("\"tower\""), "{}", stderr(&out));
}

#[test]
fn the_remote_going_away_and_coming_back_loses_nothing_and_hand_edits_at_the_remote_are_taken_in() {
    let (a, b, remote, url) = desk_and_laptop();

    // The remote goes away: the member keeps its events, committed; the dreamer's cycle
    // runs on what it has; nothing fails.
    let away = a.root.join("away.git");
    std::fs::rename(&remote, &away).unwrap();
    for day in 1..=3 {
        b.append_inbox("b.jsonl", &lisbon(day, &format!("s{day}"), ""));
        let now = format!("2026-11-0{day}T20:00:00Z");
        let out = b.dream(&["sync", "--now", &now]);
        ok(&out, "a member's sync with the remote away");
        assert!(stderr(&out).contains("wait here"), "{}", stderr(&out));
    }
    let s: serde_json::Value =
        serde_json::from_str(&ok(&b.dream(&["status", "--json"]), "status")).unwrap();
    assert_eq!(s["shared"]["commits_waiting"], 3, "{}", s["shared"]);
    ok(
        &a.dream(&["run", "--now", "2026-11-03T21:00:00Z"]),
        "a cycle with the remote away",
    );
    // A session hook with the remote away answers at once, with the copy it has.
    let start = Instant::now();
    let ctx = ok(
        &b.dream(&["context", "--hook", "claude-code"]),
        "context --hook",
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(ctx.contains("Memory copy from"), "{ctx}");

    // Back: everything goes, once.
    std::fs::rename(&away, &remote).unwrap();
    ok(
        &b.dream(&["sync", "--now", "2026-11-03T21:10:00Z"]),
        "member sync",
    );
    let r = a.run_cycle("2026-11-03T21:20:00Z");
    assert_eq!(r["ingest"]["new_events"], 3, "{}", r["ingest"]);
    assert!(
        a.facts().iter().any(|f| f.contains("Lisbon")),
        "{:?}",
        a.facts()
    );

    // A person edits memory on the git host (a plain clone, commit, push); the dreamer's
    // next cycle takes the edit in and pushes on top of it.
    let hand = a.root.join("hand");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Ana")
            .env("GIT_AUTHOR_EMAIL", "ana@example.org")
            .env("GIT_COMMITTER_NAME", "Ana")
            .env("GIT_COMMITTER_EMAIL", "ana@example.org")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    };
    git(&[
        "clone",
        "--quiet",
        "--branch",
        "main",
        &url,
        hand.to_str().unwrap(),
    ]);
    let scratch = hand.join("memory/scratch.md");
    let mut text = std::fs::read_to_string(&scratch).unwrap();
    text.push_str("- The office moves to Porto in March.\n");
    std::fs::write(&scratch, text).unwrap();
    git(&[
        "-C",
        hand.to_str().unwrap(),
        "commit",
        "--quiet",
        "-am",
        "note the move",
    ]);
    git(&[
        "-C",
        hand.to_str().unwrap(),
        "push",
        "--quiet",
        "origin",
        "main",
    ]);
    a.write_inbox(
        "a.jsonl",
        &event("2026-11-04T10:00:00Z", "a1", "I prefer tabs over spaces."),
    );
    let out = a.dream(&["run", "--now", "2026-11-04T21:00:00Z"]);
    ok(&out, "a cycle after a hand edit at the remote");
    assert!(
        a.read("memory/scratch.md").contains("Porto"),
        "the edit is taken in"
    );
    ok(
        &b.dream(&["sync", "--now", "2026-11-04T21:30:00Z"]),
        "member sync",
    );
    assert!(b.read("memory/scratch.md").contains("Porto"));
    let fact = b
        .facts()
        .into_iter()
        .find(|f| f.contains("Lisbon"))
        .expect("the fact");
    // A member does not write memory: an undo there is refused, its copy unmoved.
    let id = fact
        .split("id=")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let before = b.commits();
    let out = b.dream(&["undo", &id]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("written only by"), "{}", stderr(&out));
    assert_eq!(b.commits(), before, "the member's copy did not move");
    // Memory at the remote is the dreamer's branch: nothing to push is left.
    let s: serde_json::Value =
        serde_json::from_str(&ok(&a.dream(&["status", "--json"]), "status")).unwrap();
    assert_eq!(s["shared"]["commits_waiting"], 0, "{}", s["shared"]);
}

#[test]
fn init_refuses_a_remote_that_holds_memory_and_join_refuses_what_is_not_one() {
    let (a, b) = (Env::new(), Env::new());
    let remote = bare(&a.root);
    let url = format!("file://{}", remote.display());
    let repo = a.repo.display().to_string();
    ok(
        &a.dream(&["init", &repo, "--remote", &url, "--machine", "desk"]),
        "init",
    );
    let other = b.repo.display().to_string();
    let out = b.dream(&["init", &other, "--remote", &url, "--machine", "tower"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("dream join"), "{}", stderr(&out));
    assert!(!b.repo.exists(), "nothing was created");

    let empty = bare(&b.root);
    let url = format!("file://{}", empty.display());
    let out = b.dream(&["join", &url, &other]);
    assert!(!out.status.success());
    assert!(!b.repo.exists(), "nothing was created");
    let out = b.dream(&["join", &url, &other, "--machine", "no good"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not usable"), "{}", stderr(&out));
    // A member does not dream, nor write memory any other way.
    join(&b, &format!("file://{}", remote.display()), "laptop", "ana");
    let out = b.dream(&["run"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("dream sync"), "{}", stderr(&out));
    // Its doctor checks the shared memory, not the cycles it does not run.
    let d = ok(&b.dream(&["doctor", "--offline"]), "doctor on a member");
    assert!(d.contains("shared memory member of file://"), "{d}");
    assert!(d.contains("skip  heartbeat"), "{d}");
    ok(
        &b.dream(&["status", "--check"]),
        "status --check on a member",
    );
}

#[test]
fn a_session_hook_on_a_member_waits_on_a_slow_remote_for_a_second_or_two_at_most() {
    let (_desk, b, _remote, url) = desk_and_laptop();
    ok(&b.dream(&["sync"]), "member sync");
    // The remote becomes an ssh host that never answers (an ssh that hangs).
    let toml = b.repo.join(".dream/remote.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        text.replace(&url, "ssh://unreachable.invalid/memory.git"),
    )
    .unwrap();
    b.set_var("GIT_SSH_COMMAND", "sleep 30 #");
    b.append_inbox("b.jsonl", &lisbon(1, "s1", ""));
    let start = Instant::now();
    let out = b
        .cmd()
        .args(["context", "--hook", "claude-code"])
        .write_stdin("{}")
        .output()
        .unwrap();
    let took = start.elapsed();
    let ctx = ok(&out, "context --hook");
    assert!(took < Duration::from_secs(5), "the hook waited {took:?}");
    assert!(
        ctx.contains("Memory copy from ssh://unreachable.invalid/memory.git, fetched"),
        "{ctx}"
    );
    // The hook reads no transcript (the timer's sync does); that sync, bounded too, commits
    // what the laptop said and leaves it waiting for the remote.
    let status = || -> serde_json::Value {
        serde_json::from_str(&ok(&b.dream(&["status", "--json"]), "status")).unwrap()
    };
    assert_eq!(status()["shared"]["commits_waiting"], 0);
    let start = Instant::now();
    let out = b.dream(&["sync", "--timeout", "1"]);
    ok(&out, "a bounded sync");
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(stderr(&out).contains("stopped"), "{}", stderr(&out));
    let s = status();
    assert_eq!(s["shared"]["commits_waiting"], 1, "{}", s["shared"]);
    assert_eq!(s["shared"]["events_waiting"], 0, "{}", s["shared"]);
}

/// A world of machines in one folder (the remote, each machine's repository and HOME),
/// copied whole for every crash point of a sweep.
struct World {
    dir: PathBuf,
}

impl World {
    fn url(&self) -> String {
        format!("file://{}", self.dir.join("memory.git").display())
    }

    /// `dream ARGS` on machine `name` (its repository `name`, its HOME `home-name`).
    fn dream(
        &self,
        env: &Env,
        name: &str,
        args: &[&str],
        vars: &[(&str, &str)],
    ) -> std::process::Output {
        let mut c = env.std_cmd();
        c.env("DREAM_REPO", self.dir.join(name))
            .env("HOME", self.dir.join(format!("home-{name}")))
            .args(args);
        for (k, v) in vars {
            c.env(k, v);
        }
        std::fs::create_dir_all(self.dir.join(format!("home-{name}"))).unwrap();
        c.output().unwrap()
    }

    /// A copy of this world at `to`, its machines pointed at the copy's remote.
    fn copy(&self, to: &Path) -> World {
        copy_dir(&self.dir, to);
        let w = World {
            dir: to.to_path_buf(),
        };
        for m in ["a", "b"] {
            let toml = to.join(m).join(".dream/remote.toml");
            if let Ok(text) = std::fs::read_to_string(&toml) {
                std::fs::write(&toml, text.replace(&self.url(), &w.url())).unwrap();
            }
        }
        w
    }

    fn tip(&self, repo: &str, refname: &str) -> Option<git2::Oid> {
        git2::Repository::open(self.dir.join(repo))
            .ok()?
            .refname_to_id(refname)
            .ok()
    }
}

/// The crash points a command passes (flushes left out: a kill there is a kill after the
/// write before it), by number.
fn crash_points(out: &std::process::Output) -> Vec<usize> {
    stderr(out)
        .lines()
        .filter_map(|l| l.strip_prefix("dream: crash point "))
        .filter(|l| !l.contains(": fsync "))
        .filter_map(|l| l.split(':').next()?.parse().ok())
        .collect()
}

/// Kill `args` on machine `name` at every crash point of a copy of `world`, run it again
/// (as the timer would), and hand the copy to `check`. Returns how many points were swept.
fn sweep(
    env: &Env,
    world: &World,
    name: &str,
    args: &[&str],
    check: impl Fn(&World, usize),
) -> usize {
    let traced = world.copy(&env.root.join("traced"));
    let out = traced.dream(env, name, args, &[("DREAM_CRASH_TRACE", "1")]);
    ok(&out, "the uninterrupted run");
    check(&traced, 0);
    let points = crash_points(&out);
    assert!(points.len() >= 3, "too few crash points: {}", stderr(&out));
    for &n in &points {
        let w = world.copy(&env.root.join(format!("at-{n}")));
        let at = n.to_string();
        let out = w.dream(env, name, args, &[("DREAM_CRASH_AT", &at)]);
        assert!(
            !out.status.success(),
            "point {n} did not crash: {}",
            stderr(&out)
        );
        ok(
            &w.dream(env, name, args, &[]),
            &format!("the run after a crash at {n}"),
        );
        check(&w, n);
        let _ = std::fs::remove_dir_all(&w.dir);
    }
    points.len()
}

/// The ids of the events a member's branch at the remote holds, every file of its tip.
fn shipped_ids(w: &World, machine: &str) -> Vec<String> {
    let git = git2::Repository::open_bare(w.dir.join("memory.git")).unwrap();
    let Ok(tip) = git.refname_to_id(&format!("refs/heads/dream/events/{machine}")) else {
        return Vec::new();
    };
    let tree = git.find_commit(tip).unwrap().tree().unwrap();
    let mut ids = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |_, e| {
        if let Ok(blob) = e.to_object(&git).and_then(|o| o.peel_to_blob()) {
            for line in String::from_utf8_lossy(blob.content()).lines() {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                ids.push(v["id"].as_str().unwrap().to_string());
            }
        }
        git2::TreeWalkResult::Ok
    })
    .unwrap();
    ids.sort();
    ids
}

/// A dreamer `a` whose memory is ahead of member `b`'s copy, and three lines in b's inbox.
fn world(env: &Env) -> World {
    let w = World {
        dir: env.root.join("world"),
    };
    std::fs::create_dir_all(&w.dir).unwrap();
    bare(&w.dir);
    let a = w.dir.join("a").display().to_string();
    let b = w.dir.join("b").display().to_string();
    ok(
        &w.dream(
            env,
            "a",
            &["init", &a, "--remote", &w.url(), "--machine", "desk"],
            &[],
        ),
        "init",
    );
    ok(
        &w.dream(
            env,
            "b",
            &["join", &w.url(), &b, "--machine", "laptop"],
            &[],
        ),
        "join",
    );
    let inbox =
        |m: &str, text: String| std::fs::write(w.dir.join(m).join("events/x.jsonl"), text).unwrap();
    inbox(
        "a",
        event("2026-11-01T10:00:00Z", "a1", "I prefer tabs over spaces."),
    );
    ok(
        &w.dream(
            env,
            "a",
            &["run", "--cycle", "morning", "--now", "2026-11-01T07:00:00Z"],
            &[],
        ),
        "a cycle",
    );
    inbox(
        "b",
        lisbon(1, "s1", "") + &lisbon(2, "s2", "") + &lisbon(3, "s3", ""),
    );
    w
}

#[test]
fn every_crash_point_of_a_members_sync_ships_each_event_once_and_updates_the_copy() {
    let env = Env::new();
    let w = world(&env);
    let n = sweep(
        &env,
        &w,
        "b",
        &["sync", "--now", "2026-11-03T20:00:00Z"],
        |w, n| {
            let ids = shipped_ids(w, "laptop");
            assert_eq!(ids.len(), 3, "crash at {n}: {ids:?}");
            assert!(
                ids.windows(2).all(|p| p[0] != p[1]),
                "crash at {n}: twice: {ids:?}"
            );
            let remote = git2::Repository::open_bare(w.dir.join("memory.git")).unwrap();
            let main = remote.refname_to_id("refs/heads/main").unwrap();
            assert_eq!(
                w.tip("b", "HEAD"),
                Some(main),
                "crash at {n}: the copy is not updated"
            );
            let b = git2::Repository::open(w.dir.join("b")).unwrap();
            let dirty = b
                .statuses(None)
                .unwrap()
                .iter()
                .filter(|s| !s.status().is_ignored())
                .count();
            assert_eq!(
                dirty, 0,
                "crash at {n}: the copy's files are not its commit's"
            );
        },
    );
    eprintln!("swept {n} crash points of a member's sync");
}

#[test]
fn every_crash_point_of_the_dreamers_sync_takes_each_event_in_once_and_pushes() {
    let env = Env::new();
    let w = world(&env);
    ok(
        &w.dream(&env, "b", &["sync", "--now", "2026-11-03T20:00:00Z"], &[]),
        "member sync",
    );
    // The dreamer's next cycle ran with the remote away: its commits wait to be pushed.
    let remote = w.dir.join("memory.git");
    std::fs::rename(&remote, w.dir.join("away")).unwrap();
    std::fs::write(
        w.dir.join("a/events/y.jsonl"),
        event("2026-11-02T10:00:00Z", "a2", "I prefer tabs over spaces."),
    )
    .unwrap();
    let morning = ["run", "--cycle", "morning", "--now", "2026-11-02T07:00:00Z"];
    ok(&w.dream(&env, "a", &morning, &[]), "a cycle, remote away");
    std::fs::rename(w.dir.join("away"), &remote).unwrap();
    let n = sweep(
        &env,
        &w,
        "a",
        &["sync", "--now", "2026-11-03T21:00:00Z"],
        |w, n| {
            let st = rusqlite::Connection::open(w.dir.join("a/.dream/state.sqlite")).unwrap();
            let got: i64 = st
                .query_row(
                    "SELECT COUNT(*) FROM events WHERE origin LIKE 'machines/laptop/%'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(got, 3, "crash at {n}");
            let quarantined: i64 = st
                .query_row("SELECT COUNT(*) FROM quarantine", [], |r| r.get(0))
                .unwrap();
            assert_eq!(quarantined, 0, "crash at {n}");
            let remote = git2::Repository::open_bare(w.dir.join("memory.git")).unwrap();
            let main = remote.refname_to_id("refs/heads/main").unwrap();
            assert_eq!(
                w.tip("a", "HEAD"),
                Some(main),
                "crash at {n}: memory is not pushed"
            );
        },
    );
    eprintln!("swept {n} crash points of the dreamer's sync");
}

#[test]
fn a_join_killed_at_any_point_leaves_nothing_and_joins_when_run_again() {
    let env = Env::new();
    let remote = bare(&env.root);
    let url = format!("file://{}", remote.display());
    let desk = env.root.join("desk").display().to_string();
    ok(
        &env.dream(&["init", &desk, "--remote", &url, "--machine", "desk"]),
        "init",
    );
    let path = env.root.join("laptop");
    let p = path.display().to_string();
    let join = ["join", url.as_str(), p.as_str(), "--machine", "laptop"];
    let traced = env
        .cmd()
        .args(join)
        .env("DREAM_CRASH_TRACE", "1")
        .output()
        .unwrap();
    ok(&traced, "join");
    let points = crash_points(&traced);
    assert!(points.len() >= 3, "{}", stderr(&traced));
    for n in points {
        std::fs::remove_dir_all(&path).unwrap();
        let out = env
            .cmd()
            .args(join)
            .env("DREAM_CRASH_AT", n.to_string())
            .output()
            .unwrap();
        assert!(!out.status.success(), "point {n} did not crash");
        assert!(
            !path.exists(),
            "a join killed at {n} left {}",
            path.display()
        );
        ok(
            &env.cmd().args(join).output().unwrap(),
            &format!("join after a crash at {n}"),
        );
        let left: Vec<String> = std::fs::read_dir(&env.root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".dream-tmp-"))
            .collect();
        assert!(left.is_empty(), "crash at {n} left {left:?}");
        ok(
            &env.cmd()
                .args(["--repo", p.as_str(), "sync"])
                .output()
                .unwrap(),
            "sync",
        );
    }
}

#[test]
fn a_card_decided_on_a_member_lands_once_and_a_second_decision_is_reported() {
    let (a, b, _remote, url) = desk_and_laptop();
    a.episodes_off();
    let c = Env::new();
    join(&c, &url, "cloudbox", "bo");
    // Said twice: a card, pushed with memory.
    a.write_inbox("a.jsonl", &(lisbon(1, "s1", "") + &lisbon(2, "s2", "")));
    a.run_cycle("2026-11-02T21:00:00Z");
    let card = a.pending().into_iter().next().expect("a card").id;
    ok(&b.dream(&["sync"]), "member sync");
    ok(&c.dream(&["sync"]), "member sync");

    // Ana accepts it on the laptop; Bo, later, rejects it on the cloud box.
    let out = b.dream(&["review", "accept", &card, "--now", "2026-11-03T08:00:00Z"]);
    assert!(
        ok(&out, "accept on a member").contains("travels"),
        "{}",
        stdout(&out)
    );
    assert!(
        b.pending().iter().any(|k| k.id == card),
        "the member's copy is not written"
    );
    let out = c.dream(&[
        "review",
        "reject",
        &card,
        "--reason",
        "not me",
        "--now",
        "2026-11-03T09:00:00Z",
    ]);
    ok(&out, "reject on another member");

    // The dreamer applies the first and reports the second.
    let out = a.dream(&["sync"]);
    let said = ok(&out, "dreamer sync");
    assert!(
        said.contains(&format!("accept {card} by ana on laptop: applied")),
        "{said}"
    );
    assert!(
        said.contains(&format!("reject {card} by bo on cloudbox: not applied")),
        "{said}"
    );
    assert!(said.contains("already decided"), "{said}");
    assert!(
        a.facts().iter().any(|f| f.contains("Lisbon")),
        "{:?}",
        a.facts()
    );
    assert!(a.pending().is_empty());
    // The card, decided, says who decided and where; the commit names the dreamer.
    let decided = std::fs::read_dir(a.repo.join("review/decided"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .find(|t| t.contains(&card))
        .expect("the decided card");
    assert!(decided.contains("decided by ana on laptop"), "{decided}");
    let (_, message) = &a.commits()[0];
    assert!(message.contains("Dream-Machine: desk"), "{message}");
    // Once: a second sync applies nothing again, and the laptop's copy gets the fact.
    let again = ok(&a.dream(&["sync"]), "dreamer sync");
    assert!(!again.contains("decision"), "{again}");
    ok(&b.dream(&["sync"]), "member sync");
    assert!(
        b.facts().iter().any(|f| f.contains("Lisbon")),
        "{:?}",
        b.facts()
    );
    assert!(b.pending().is_empty());
}
