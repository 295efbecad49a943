//! The job must not stop itself, lose anything or leak anything on a hostile or unlucky
//! machine: stale git locks, a repository whose HEAD left its branch, a deleted
//! `.gitignore`, a dry run on a fresh clone, a hostile inbox, odd environments and
//! configuration, full output devices, and inputs sized to make work explode.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::util::{event, stderr, stdout, Env};

fn age(path: &Path, secs: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs))
        .unwrap();
}

fn three_restatements(env: &Env) {
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

#[test]
fn git_locks_left_by_a_killed_process_are_removed_and_said() {
    let env = Env::new();
    env.init();
    three_restatements(&env);
    for lock in [".git/index.lock", ".git/refs/heads/master.lock"] {
        let p = env.repo.join(lock);
        std::fs::write(&p, "").unwrap();
        age(&p, 120);
    }
    let out = env.dream(&["run", "--now", "2026-11-02T21:00:00Z", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("removed a stale git lock file"),
        "the removal is logged: {}",
        stderr(&out)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = report["notes"].to_string();
    assert!(
        notes.contains(".git/index.lock") && notes.contains(".git/refs/heads/master.lock"),
        "{notes}"
    );
    assert_eq!(report["ingest"]["new_events"], 3);
    assert_eq!(env.facts().len(), 1, "the cycle committed");
    assert!(!env.repo.join(".git/index.lock").exists());
}

#[cfg(target_os = "linux")]
#[test]
fn a_git_lock_held_by_a_running_git_is_left_and_the_error_says_what_to_do() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    env.init();
    three_restatements(&env);
    // A person's `git commit` waiting for its editor: a process named git in the repo.
    let bin = env.root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let git = bin.join("git");
    std::fs::write(&git, "#!/bin/sh\nsleep 30\n").unwrap();
    std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut child = std::process::Command::new(&git)
        .current_dir(&env.repo)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let lock = env.repo.join(".git/refs/heads/master.lock");
    std::fs::write(&lock, "").unwrap();
    age(&lock, 120);
    let head = env.commits().len();
    let out = env.dream(&["run", "--now", "2026-11-02T21:00:00Z"]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("git runs in the repository"), "{err}");
    assert!(err.contains("hint: a git command is running"), "{err}");
    assert!(lock.exists(), "a live git's lock is never removed");
    assert_eq!(env.commits().len(), head, "nothing was committed");
    assert!(env.facts().is_empty());
    // Once git is done (and its lock gone) the next run does the work.
    std::fs::remove_file(&lock).unwrap();
    let r = env.run_cycle("2026-11-02T21:00:00Z");
    assert_eq!(r["ingest"]["new_events"], 3);
}

#[test]
fn the_inbox_and_the_state_are_never_committed_even_without_a_gitignore() {
    let env = Env::new();
    env.init();
    std::fs::remove_file(env.repo.join(".gitignore")).unwrap();
    let mut text = String::new();
    text.push_str(&event(
        "2026-11-01T09:00:00Z",
        "s1",
        "my key is ghp_abcdefghijklmnopqrstuvwxyz0123456789 for the CI",
    ));
    env.write_inbox("a.jsonl", &text);
    env.run_cycle("2026-11-02T21:00:00Z");
    env.run_cycle("2026-11-02T22:00:00Z");
    let repo = git2::Repository::open(&env.repo).unwrap();
    let tree = repo.head().unwrap().peel_to_tree().unwrap();
    assert!(
        tree.get_path(Path::new(".gitignore")).is_err(),
        "the deletion was recorded"
    );
    for private in ["events", ".dream"] {
        assert!(
            tree.get_path(Path::new(private)).is_err(),
            "{private}/ was committed"
        );
    }
    // A person's own `git add -A` leaves them out too.
    for p in [".dream/state.sqlite", "events/a.jsonl"] {
        assert!(repo.status_should_ignore(Path::new(p)).unwrap(), "{p}");
    }
    let status = env.dream(&["status"]);
    assert!(status.status.success(), "{}", stderr(&status));
}

#[test]
fn a_head_off_its_branch_is_refused_and_verify_says_so() {
    let env = Env::new();
    env.init();
    three_restatements(&env);
    env.run_cycle("2026-11-02T21:00:00Z");
    let repo = git2::Repository::open(&env.repo).unwrap();
    let head = repo.head().unwrap().target().unwrap();
    let first = repo.find_commit(head).unwrap().parent_id(0).unwrap();
    // A HEAD detached on an older commit.
    repo.set_head_detached(first).unwrap();
    env.append_inbox(
        "a.jsonl",
        &event("2026-11-03T09:00:00Z", "s4", "I prefer tea to coffee."),
    );
    let out = env.dream(&["run", "--now", "2026-11-03T21:00:00Z"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("HEAD is detached at") && err.contains("switch master"),
        "{err}"
    );
    assert_eq!(repo.refname_to_id("refs/heads/master").unwrap(), head);
    let v = env.dream(&["verify"]);
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(stdout(&v).contains("HEAD is detached"), "{}", stdout(&v));
    // A HEAD that names a branch that does not exist (a rename gone wrong).
    repo.set_head("refs/heads/gone").unwrap();
    let out = env.dream(&["run", "--now", "2026-11-03T21:00:00Z"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("names the branch gone, which does not exist"),
        "{}",
        stderr(&out)
    );
    assert!(
        repo.find_reference("refs/heads/gone").is_err(),
        "no orphan history"
    );
    let v = env.dream(&["verify"]);
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    // Back on the branch, the cycle runs.
    repo.set_head("refs/heads/master").unwrap();
    let out = env.dream(&["run", "--now", "2026-11-03T21:00:00Z"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_dry_run_on_a_fresh_clone_creates_nothing() {
    let env = Env::new();
    env.init();
    three_restatements(&env);
    // A clone has no .dream/ (it is never committed).
    std::fs::remove_dir_all(env.repo.join(".dream")).unwrap();
    let out = env.dream(&["run", "--dry-run", "--now", "2026-11-02T21:00:00Z"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !env.repo.join(".dream").exists(),
        "the dry run created .dream/"
    );
}

#[test]
fn a_damaged_state_says_what_to_do_and_rebuild_brings_it_back_with_the_vetoes() {
    let env = Env::new();
    env.init();
    env.episodes_off(); // the sample's uncorroborated candidates are cards to reject
    env.add_sample_events();
    env.run_cycle(crate::util::SAMPLE_NOW);
    let cards: serde_json::Value =
        serde_json::from_slice(&env.dream(&["review", "list", "--json"]).stdout).unwrap();
    let card = cards[0]["id"].as_str().unwrap().to_string();
    let out = env.dream(&["review", "reject", &card, "--reason", "not true"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let fact = env.facts()[0]
        .split("id=")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let out = env.dream(&["undo", &fact]);
    assert!(out.status.success(), "{}", stderr(&out));
    let facts = env.facts();

    // Damage the database.
    let db = env.repo.join(".dream/state.sqlite");
    let _ = std::fs::remove_file(env.repo.join(".dream/state.sqlite-wal"));
    let mut bytes = std::fs::read(&db).unwrap();
    for b in bytes.iter_mut().skip(100).take(4000) {
        *b = 0xA5;
    }
    std::fs::write(&db, &bytes).unwrap();
    let out = env.dream(&["run", "--now", "2026-11-07T21:00:00Z"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("`dream rebuild`"), "{}", stderr(&out));

    let out = env.dream(&["rebuild"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("moved the damaged state database"), "{text}");
    assert!(text.contains("1 rejected cards, 1 undone facts"), "{text}");
    assert!(std::fs::read_dir(env.repo.join(".dream"))
        .unwrap()
        .any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("damaged-")));

    let r = env.run_cycle("2026-11-07T21:00:00Z");
    assert!(
        r["ingest"]["new_events"].as_u64().unwrap() > 0,
        "the inbox was read again"
    );
    assert_eq!(
        env.facts().len(),
        facts.len(),
        "nothing doubled, the undone fact stays out"
    );
    assert!(!env.facts().iter().any(|f| f.contains(&fact)));
    let pending: serde_json::Value =
        serde_json::from_slice(&env.dream(&["review", "list", "--json"]).stdout).unwrap();
    assert!(
        !pending
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["id"] == card.as_str()),
        "the rejected card did not come back: {pending}"
    );
    // A sound database is not rebuilt by accident.
    let out = env.dream(&["rebuild"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("checks as sound"), "{}", stderr(&out));
}

#[cfg(unix)]
#[test]
fn a_hostile_inbox_is_read_without_hanging_and_what_is_not_read_is_said() {
    use std::os::unix::fs::symlink;
    let env = Env::new();
    env.init();
    three_restatements(&env);
    let inbox = env.repo.join("events");
    let outside = env.root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("passwd"),
        "root:x:0:0:root:/root:/bin/bash\nsecret-host-line:x:1:1\n",
    )
    .unwrap();
    std::fs::write(
        outside.join("more.jsonl"),
        event("2026-11-02T10:00:00Z", "s9", "A line from a linked folder."),
    )
    .unwrap();
    symlink(outside.join("passwd"), inbox.join("passwd.jsonl")).unwrap();
    symlink("/dev/zero", inbox.join("zero.jsonl")).unwrap();
    symlink("/dev/urandom", inbox.join("urandom.jsonl")).unwrap();
    symlink(inbox.join("gone"), inbox.join("dangling.jsonl")).unwrap();
    symlink(inbox.join("loop.jsonl"), inbox.join("loop.jsonl")).unwrap();
    symlink(&outside, inbox.join("linked")).unwrap();
    let fifo = std::ffi::CString::new(inbox.join("fifo.jsonl").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let _socket = std::os::unix::net::UnixListener::bind(inbox.join("sock.jsonl")).unwrap();

    let out = env
        .cmd()
        .args(["run", "--now", "2026-11-02T21:00:00Z", "--json"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["ingest"]["new_events"], 3, "the good file was read: {r}");
    let skipped = r["ingest"]["skipped"].to_string();
    for name in [
        "passwd.jsonl",
        "zero.jsonl",
        "urandom.jsonl",
        "dangling.jsonl",
        "loop.jsonl",
        "linked",
        "fifo.jsonl",
        "sock.jsonl",
    ] {
        assert!(skipped.contains(name), "{name} in {skipped}");
    }
    assert!(skipped.contains("symbolic link") && skipped.contains("not a regular file"));
    assert!(
        stderr(&out).contains("an inbox entry was not read"),
        "{}",
        stderr(&out)
    );
    let text = env.dream(&["run", "--now", "2026-11-02T21:30:00Z"]);
    assert!(
        stdout(&text).contains("not read: events/fifo.jsonl"),
        "{}",
        stdout(&text)
    );

    // The morning digest says so too, and nothing of the linked files was kept.
    let out = env
        .cmd()
        .args(["run", "--cycle", "morning", "--now", "2026-11-03T07:00:00Z"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let digest = env.read("digests/2026-11-03-morning.md");
    assert!(digest.contains("## Inbox entries not read"), "{digest}");
    assert!(digest.contains("events/passwd.jsonl"), "{digest}");
    let repo = git2::Repository::open(&env.repo).unwrap();
    let odb = repo.odb().unwrap();
    odb.foreach(|id| {
        let o = odb.read(*id).unwrap();
        let text = String::from_utf8_lossy(o.data());
        assert!(!text.contains("root:x:0:0") && !text.contains("linked folder"));
        true
    })
    .unwrap();
    let status = env.dream(&["status"]);
    assert!(status.status.success(), "{}", stderr(&status));
}

#[cfg(unix)]
#[test]
fn a_file_it_may_not_read_is_skipped_and_the_rest_ingested() {
    use std::os::unix::fs::PermissionsExt;
    if unsafe { libc::geteuid() } == 0 {
        eprintln!("skipped: permissions do not stop root");
        return;
    }
    let env = Env::new();
    env.init();
    three_restatements(&env);
    let locked = env.repo.join("events/locked.jsonl");
    std::fs::write(&locked, event("2026-11-02T10:00:00Z", "s9", "hidden")).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let r = env.run_cycle("2026-11-02T21:00:00Z");
    assert_eq!(r["ingest"]["new_events"], 3);
    assert!(
        r["ingest"]["skipped"].to_string().contains("locked.jsonl"),
        "{r}"
    );
}

#[cfg(unix)]
#[test]
fn odd_environments_and_out_of_range_config_never_panic() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    env.init();
    three_restatements(&env);
    let bad = OsStr::from_bytes(b"\xff\xfe");
    for args in [
        vec!["status"],
        vec!["verify"],
        vec!["log"],
        vec!["run", "--dry-run"],
    ] {
        let out = env.cmd().args(&args).env("X", bad).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?} with a non-UTF-8 variable: {}",
            stderr(&out)
        );
        let out = env
            .cmd()
            .args(&args)
            .env("DREAM_LOG", bad)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?} with a non-UTF-8 DREAM_LOG: {}",
            stderr(&out)
        );
    }
    let out = env
        .cmd()
        .args(["run", "--dry-run"])
        .env("DREAM_BUDGET_TOKENS_PER_CYCLE", bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("DREAM_BUDGET_TOKENS_PER_CYCLE"),
        "{}",
        stderr(&out)
    );

    let toml = env.read("dream.toml");
    for (section, key, value) in [
        ("[cluster]", "window_days", "100000000"),
        ("[digest]", "quarantine_days", "4294967295"),
        ("[embed]", "dim", "100000000"),
    ] {
        // Every key is optional: a file with this one key.
        std::fs::write(
            env.repo.join("dream.toml"),
            format!("{section}\n{key} = {value}\n"),
        )
        .unwrap();
        for args in [vec!["run", "--dry-run"], vec!["run", "--cycle", "morning"]] {
            let out = env
                .cmd()
                .args(&args)
                .timeout(Duration::from_secs(30))
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{key}: {}", stderr(&out));
            let want = format!(
                "key `{}.{key}`: must be at most",
                &section[1..section.len() - 1]
            );
            assert!(stderr(&out).contains(&want), "{}", stderr(&out));
        }
    }
    std::fs::write(env.repo.join("dream.toml"), &toml).unwrap();
}

#[test]
fn a_full_stdout_or_stderr_never_stops_a_cycle() {
    let env = Env::new();
    env.init();
    three_restatements(&env);
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let out = env
        .std_cmd()
        .args(["-vv", "run", "--now", "2026-11-02T21:00:00Z"])
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr on a full device");
    assert_eq!(env.facts().len(), 1, "the cycle ingested and committed");
    env.append_inbox(
        "a.jsonl",
        &event("2026-11-03T09:00:00Z", "s4", "I prefer tea to coffee."),
    );
    let out = env
        .std_cmd()
        .args(["run", "--now", "2026-11-03T21:00:00Z"])
        .stdout(full())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "the report was lost: {}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("the command itself ran to its end"),
        "{}",
        stderr(&out)
    );
    let status = env.dream(&["status", "--json"]);
    let s: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(s["events_stored"], 4, "the second cycle ingested: {s}");
}

#[test]
fn cycle_profiles_set_by_the_environment_are_obeyed() {
    let env = Env::new();
    env.init();
    three_restatements(&env);
    let out = env
        .cmd()
        .args(["run", "--now", "2026-11-02T21:00:00Z"])
        .env("DREAM_CYCLES_EVENING_DIGEST", "true")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env.repo.join("digests/2026-11-02-evening.md").exists());
}

fn append_human(env: &Env, lines: &str) {
    let path = env.repo.join("memory/human.md");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}{lines}")).unwrap();
}

#[test]
fn hand_written_lines_that_differ_in_a_number_stay_apart_and_copies_go() {
    let env = Env::new();
    env.init();
    let mut lines: String = (0..1000)
        .map(|i| format!("- Hand note {i}: check the deployment pipeline logs every morning before standup.\n"))
        .collect();
    for _ in 0..300 {
        lines.push_str("- Water the office plants on Fridays.\n");
    }
    lines.push_str("- Another <!-- -->\n");
    append_human(&env, &lines);
    let r = env.run_cycle("2026-11-02T21:00:00Z");
    let human = env.read("memory/human.md");
    let notes = human
        .lines()
        .filter(|l| l.starts_with("- Hand note "))
        .count();
    assert_eq!(notes, 1000, "numbers keep facts apart: {}", r["passes"]);
    let plants = human
        .lines()
        .filter(|l| l.contains("Water the office plants"))
        .count();
    assert_eq!(plants, 1, "the pasted copies were dropped as duplicates");
    assert!(
        human.contains("- Another <!-- --> <!-- id=f_"),
        "a person's comment is kept as written: {}",
        human.lines().last().unwrap()
    );
    let v = env.dream(&["verify"]);
    assert!(v.status.success(), "{}", stdout(&v));
}

#[test]
fn a_repeated_fact_id_is_resolved_and_said() {
    let env = Env::new();
    env.init();
    three_restatements(&env);
    env.run_cycle("2026-11-02T21:00:00Z");
    let line = env
        .facts()
        .into_iter()
        .find(|l| l.contains("Lisbon"))
        .unwrap();
    // A person copied the line twice, and reworded the second copy.
    append_human(
        &env,
        &format!(
            "{line}\n{}\n",
            line.replace("I live in Lisbon", "I lived in Lisbon before Porto")
        ),
    );
    let out = env.dream(&["run", "--now", "2026-11-03T21:00:00Z", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let facts = env.facts();
    let id = line
        .split("id=")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    assert_eq!(
        facts
            .iter()
            .filter(|l| l.contains(&format!("id={id} ")))
            .count(),
        1,
        "{facts:?}"
    );
    assert!(
        facts
            .iter()
            .any(|l| l.contains("before Porto") && l.contains("by=owner")),
        "{facts:?}"
    );
    let subjects: Vec<String> = env.commits().into_iter().map(|(s, _)| s).collect();
    assert!(
        subjects.iter().any(|s| s.contains("repeated id resolved")),
        "{subjects:?}"
    );
    let v = env.dream(&["verify"]);
    assert!(v.status.success(), "{}", stdout(&v));
}

#[test]
fn memory_in_the_middle_of_a_merge_is_refused_with_what_to_do() {
    let env = Env::new();
    env.init();
    three_restatements(&env);
    append_human(
        &env,
        "<<<<<<< HEAD\n- I like tea.\n=======\n- I like coffee.\n>>>>>>> laptop\n",
    );
    let before = env.commits().len();
    let out = env.dream(&["run", "--now", "2026-11-02T21:00:00Z"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("memory/human.md line") && err.contains("merge-conflict marker"),
        "{err}"
    );
    assert_eq!(env.commits().len(), before, "nothing was committed");
    let v = env.dream(&["verify"]);
    assert_eq!(v.status.code(), Some(1));
    assert!(
        stdout(&v).contains("merge-conflict marker"),
        "{}",
        stdout(&v)
    );
}

#[test]
fn a_byte_order_mark_does_not_quarantine_the_first_event() {
    let env = Env::new();
    env.init();
    env.write_inbox(
        "bom.jsonl",
        &format!(
            "\u{feff}{}",
            event("2026-11-01T09:00:00Z", "s1", "I like tea.")
        ),
    );
    let r = env.run_cycle("2026-11-02T21:00:00Z");
    assert_eq!(r["ingest"]["new_events"], 1, "{r}");
    assert_eq!(r["ingest"]["quarantined"], 0, "{r}");
}
