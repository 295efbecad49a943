//! The spine end to end: `dream init`, the inbox rules of SPEC S2, one cycle over the
//! shipped sample stream held to its labels, idempotence, dry runs, the lock, crash safety,
//! hand edits, and the errors a person gets for bad input.

use std::path::Path;

use crate::util::{event, stderr, stdout, Env, SAMPLE_NOW};

#[derive(serde::Deserialize)]
struct Labels {
    promoted: Vec<Label>,
    #[serde(default)]
    episodes: Vec<Label>,
    #[serde(default)]
    queued: Vec<Label>,
    never: Vec<String>,
}

#[derive(serde::Deserialize)]
struct Label {
    text: String,
    block: Option<String>,
}

fn labels() -> Labels {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/labels.toml");
    toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn fact_text(line: &str) -> &str {
    line.trim_start_matches("- ").split(" <!--").next().unwrap()
}

#[test]
fn init_creates_the_layout_and_refuses_to_clobber() {
    let env = Env::new();
    env.init();
    for path in [
        "dream.toml",
        ".gitignore",
        "memory/persona.md",
        "memory/human.md",
        "memory/episodes.md",
        "memory/scratch.md",
        "archive/facts.md",
        "review/decided/.gitkeep",
        ".dream/state.sqlite",
        "events",
    ] {
        assert!(env.repo.join(path).exists(), "{path} exists");
    }
    assert!(env.read("dream.toml").contains("tokens_per_cycle = 200000"));
    assert!(env.read(".gitignore").contains("/events/"));
    assert_eq!(env.commits().len(), 1);

    let again = env.cmd().arg("init").arg(&env.repo).output().unwrap();
    assert!(again.status.success());
    assert!(stdout(&again).contains("already a dream repository; nothing changed"));
    assert_eq!(env.commits().len(), 1);

    let other = env.root.join("notes");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("todo.txt"), "x").unwrap();
    let out = env.cmd().arg("init").arg(&other).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("is not empty and is not a dream repository"),
        "{}",
        stderr(&out)
    );
    assert!(!other.join("dream.toml").exists());
}

/// Issue 46: an init killed at its first SQLite writes left a state database with no
/// tables; `dream init` again answered "nothing changed", and status, log and verify failed
/// with "no such table" until a run. Now they say to run `dream init`, which finishes it.
#[test]
fn an_init_interrupted_before_its_tables_is_finished_by_init_again() {
    let env = Env::new();
    env.init();
    let state = env.repo.join(".dream/state.sqlite");
    for side in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(env.repo.join(format!(".dream/state.sqlite{side}")));
    }
    std::fs::write(&state, b"").unwrap();
    for cmd in ["status", "log", "verify"] {
        let out = env.dream(&[cmd]);
        assert!(!out.status.success(), "{cmd}: {}", stdout(&out));
        assert!(
            stderr(&out).contains("run `dream init` again to finish it"),
            "{cmd}: {}",
            stderr(&out)
        );
    }
    let again = env.cmd().arg("init").arg(&env.repo).output().unwrap();
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stdout(&again).contains("its inbox folder and state are made now"),
        "{}",
        stdout(&again)
    );
    for cmd in ["status", "log", "verify"] {
        let out = env.dream(&[cmd]);
        assert!(out.status.success(), "{cmd}: {}", stderr(&out));
    }
    let again = env.cmd().arg("init").arg(&env.repo).output().unwrap();
    assert!(stdout(&again).contains("nothing changed"));
}

#[test]
fn the_sample_stream_is_consolidated_as_labelled() {
    let env = Env::new();
    env.init();
    env.add_sample_events();
    let report = env.run_cycle(SAMPLE_NOW);

    let c = &report["candidates"];
    let n = |k: &str| c[k].as_u64().unwrap();
    assert_eq!(
        n("proposed"),
        n("promoted") + n("episodes") + n("queued") + n("reinforced") + n("refused"),
        "{c}"
    );
    assert_eq!(
        report["ingest"]["quarantined"], 2,
        "the two malformed lines"
    );
    assert_eq!(report["ingest"]["redacted"], 2, "the pasted key, twice");

    let labels = labels();
    let durable: Vec<String> = ["persona", "human", "scratch"]
        .iter()
        .flat_map(|b| {
            env.read(&format!("memory/{b}.md"))
                .lines()
                .filter(|l| l.starts_with("- "))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let facts = durable;
    for l in &labels.promoted {
        let found = facts
            .iter()
            .find(|f| dream_core::text::measures::similarity(fact_text(f), &l.text) >= 0.9)
            .unwrap_or_else(|| panic!("{:?} was not promoted; facts: {facts:#?}", l.text));
        if let Some(block) = &l.block {
            assert!(
                env.read(&format!("memory/{block}.md"))
                    .contains(found.as_str()),
                "{:?} in {block}",
                l.text
            );
        }
    }
    assert_eq!(
        facts.len(),
        labels.promoted.len(),
        "nothing else was promoted: {facts:#?}"
    );
    let episodes: Vec<String> = env
        .read("memory/episodes.md")
        .lines()
        .filter(|l| l.starts_with("- "))
        .map(|l| dream_core::schema::episode_body(fact_text(l)).to_string())
        .collect();
    for l in &labels.episodes {
        assert!(
            episodes
                .iter()
                .any(|e| dream_core::text::measures::similarity(e, &l.text) >= 0.9),
            "{:?} is not an episode: {episodes:#?}",
            l.text
        );
    }
    assert_eq!(
        episodes.len(),
        labels.episodes.len(),
        "nothing else was kept: {episodes:#?}"
    );
    let cards = env.cards();
    assert_eq!(cards.len(), labels.queued.len(), "{cards:#?}");
    for l in &labels.queued {
        assert!(
            cards
                .iter()
                .any(|c| dream_core::text::measures::similarity(c, &l.text) >= 0.9),
            "{:?} was not queued; cards: {cards:#?}",
            l.text
        );
    }

    // No noise and no secret anywhere: files, commit messages.
    let mut everything = String::new();
    for (rel, _) in env.snapshot() {
        if rel.starts_with(".git/") || rel.starts_with(".dream/") || rel.starts_with("events/") {
            continue;
        }
        everything.push_str(&env.read(&rel));
    }
    for (_, message) in env.commits() {
        everything.push_str(&message);
    }
    for bad in &labels.never {
        assert!(
            !everything.contains(bad.as_str()),
            "{bad:?} leaked into the repository"
        );
    }

    let subjects: Vec<String> = env.commits().into_iter().map(|(s, _)| s).collect();
    assert!(
        subjects[0].starts_with("dream: evening cycle 2026-11-06:"),
        "{subjects:?}"
    );
}

#[test]
fn a_second_run_with_nothing_new_makes_no_commit() {
    let env = Env::new();
    env.init();
    env.add_sample_events();
    env.run_cycle(SAMPLE_NOW);
    let before = env.commits().len();
    let report = env.run_cycle("2026-11-07T09:00:00Z");
    assert_eq!(env.commits().len(), before);
    assert_eq!(report["ingest"]["new_events"], 0);
    assert_eq!(report["candidates"]["proposed"], 0);
}

#[test]
fn a_dry_run_writes_nothing_at_all() {
    let env = Env::new();
    env.init();
    env.add_sample_events();
    // A hand edit too, which a real run would commit first.
    let human = env.read("memory/human.md");
    std::fs::write(
        env.repo.join("memory/human.md"),
        format!("{human}- I have two cats.\n"),
    )
    .unwrap();
    let before = env.snapshot();
    let out = env.dream(&["run", "--dry-run", "--now", SAMPLE_NOW]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("dry run: nothing was written"), "{text}");
    assert!(text.contains("would commit (consolidate)"), "{text}");
    assert!(
        text.contains("would first commit hand edits to memory/human.md"),
        "{text}"
    );
    assert_eq!(
        env.snapshot(),
        before,
        "every byte of the repo and the state is unchanged"
    );
}

#[test]
fn a_concurrent_run_exits_75_and_writes_nothing() {
    use fs2::FileExt;
    let env = Env::new();
    env.init();
    env.add_sample_events();
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .open(env.repo.join(".dream/lock"))
        .unwrap();
    lock.lock_exclusive().unwrap();
    let before = env.snapshot();
    let out = env.dream(&["run", "--now", SAMPLE_NOW]);
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("another dream cycle is running"),
        "{}",
        stderr(&out)
    );
    assert_eq!(env.snapshot(), before);
    FileExt::unlock(&lock).unwrap();
    env.run_cycle(SAMPLE_NOW);
}

#[test]
fn malformed_lines_are_quarantined_and_the_rest_is_consumed() {
    let env = Env::new();
    env.init();
    let mut text = event(
        "2026-11-01T09:00:00Z",
        "s1",
        "I live in Lisbon with two cats.",
    );
    text.push_str("{not json\n");
    text.push_str(r#"{"kind":"message","text":"no ts"}"#);
    text.push('\n');
    text.push_str(r#"{"ts":"yesterday","kind":"message","text":"bad ts"}"#);
    text.push('\n');
    text.push_str(&event(
        "2026-11-02T09:00:00Z",
        "s2",
        "I live in Lisbon with two cats.",
    ));
    env.write_inbox("a.jsonl", &text);
    let report = env.run_cycle("2026-11-02T21:00:00Z");
    assert_eq!(report["ingest"]["new_events"], 2);
    assert_eq!(report["ingest"]["quarantined"], 3);

    let out = env.dream(&["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["quarantined"], 3);
    let reasons: Vec<String> = status["recent_quarantine"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            format!(
                "{}:{} {}",
                q["file"].as_str().unwrap(),
                q["line"],
                q["reason"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("events/a.jsonl:2 not valid JSON")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("events/a.jsonl:3 missing required field `ts`")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("events/a.jsonl:4 `ts` is not an RFC 3339")),
        "{reasons:?}"
    );

    // Running again does not quarantine the same lines twice.
    env.run_cycle("2026-11-02T22:00:00Z");
    let out = env.dream(&["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["quarantined"], 3);
}

#[test]
fn a_partial_last_line_is_consumed_once_completed() {
    let env = Env::new();
    env.init();
    let line = event(
        "2026-11-01T09:00:00Z",
        "s1",
        "I prefer tea in the afternoon over coffee.",
    );
    let (head, tail) = line.split_at(30);
    env.write_inbox("a.jsonl", head);
    let r1 = env.run_cycle("2026-11-01T21:00:00Z");
    assert_eq!(r1["ingest"]["new_events"], 0);
    assert_eq!(r1["ingest"]["quarantined"], 0);
    assert_eq!(r1["ingest"]["partial_bytes"], 30);
    env.append_inbox("a.jsonl", tail);
    let r2 = env.run_cycle("2026-11-01T22:00:00Z");
    assert_eq!(r2["ingest"]["new_events"], 1);
    assert_eq!(r2["ingest"]["quarantined"], 0);
    let r3 = env.run_cycle("2026-11-01T23:00:00Z");
    assert_eq!(r3["ingest"]["new_events"], 0);
}

#[test]
fn duplicate_ids_are_no_ops_and_conflicting_ids_are_quarantined() {
    let env = Env::new();
    env.init();
    let same =
        r#"{"id":"e1","ts":"2026-11-01T09:00:00Z","kind":"message","text":"hello there friend"}"#;
    let other = r#"{"id":"e1","ts":"2026-11-01T09:00:00Z","kind":"message","text":"something else entirely"}"#;
    env.write_inbox("a.jsonl", &format!("{same}\n{same}\n{other}\n"));
    let r = env.run_cycle("2026-11-01T21:00:00Z");
    assert_eq!(r["ingest"]["new_events"], 1);
    assert_eq!(r["ingest"]["duplicates"], 1);
    assert_eq!(r["ingest"]["quarantined"], 1);
}

#[test]
fn a_replaced_or_truncated_inbox_file_is_read_again_without_doubling() {
    let env = Env::new();
    env.init();
    let a = event("2026-11-01T09:00:00Z", "s1", "first line of the day");
    let b = event("2026-11-01T10:00:00Z", "s1", "second line of the day");
    env.write_inbox("a.jsonl", &format!("{a}{b}"));
    assert_eq!(
        env.run_cycle("2026-11-01T21:00:00Z")["ingest"]["new_events"],
        2
    );
    // Truncated and rewritten with one old and one new line.
    let c = event("2026-11-01T11:00:00Z", "s1", "third line");
    env.write_inbox("a.jsonl", &c);
    let r = env.run_cycle("2026-11-01T22:00:00Z");
    assert_eq!(r["ingest"]["new_events"], 1);
    assert!(r["ingest"]["restarted"][0]
        .as_str()
        .unwrap()
        .contains("read again from the start"));
    // Replaced by a new file (new inode) holding everything.
    let path = env.repo.join("events/a.jsonl");
    std::fs::remove_file(&path).unwrap();
    env.write_inbox("a.jsonl", &format!("{a}{b}{c}"));
    let r = env.run_cycle("2026-11-01T23:00:00Z");
    assert_eq!(r["ingest"]["new_events"], 0);
    assert_eq!(r["ingest"]["duplicates"], 3);
}

/// Three restatements on two days: promoted in one cycle.
fn promotable(env: &Env) {
    let mut text = String::new();
    text.push_str(&event(
        "2026-11-01T09:00:00Z",
        "s1",
        "I live in Lisbon with my two cats.",
    ));
    text.push_str(&event(
        "2026-11-02T09:00:00Z",
        "s2",
        "As I said, I live in Lisbon with my two cats.",
    ));
    text.push_str(&event(
        "2026-11-02T15:00:00Z",
        "s3",
        "I live in Lisbon with my two cats.",
    ));
    env.write_inbox("a.jsonl", &text);
}

#[test]
fn a_crash_before_the_state_commit_leaves_everything_as_before_and_the_rerun_does_it_all() {
    let env = Env::new();
    env.init();
    promotable(&env);
    let commits_before = env.commits().len();
    let out = env
        .cmd()
        .args(["run", "--now", "2026-11-02T21:00:00Z"])
        .env("DREAM_CRASH_AT", "commit the state")
        .output()
        .unwrap();
    assert!(!out.status.success(), "the crash point aborts the process");
    assert!(
        stderr(&out).contains("crashing at point"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        env.facts().len(),
        0,
        "no file was written before the commit point"
    );
    assert_eq!(
        env.commits().len(),
        commits_before,
        "the branch did not move"
    );

    let r = env.run_cycle("2026-11-02T21:00:00Z");
    assert_eq!(
        r["ingest"]["new_events"], 3,
        "the events were not lost: the state was rolled back"
    );
    assert!(
        r["notes"].to_string().contains("discarded"),
        "the rerun says it forgot the interrupted change: {}",
        r["notes"]
    );
    assert_eq!(env.facts().len(), 1, "no doubled fact");
    let again = env.run_cycle("2026-11-02T22:00:00Z");
    assert_eq!(again["ingest"]["new_events"], 0);
}

#[test]
fn a_crash_after_the_state_commit_is_finished_by_the_next_command() {
    let env = Env::new();
    env.init();
    promotable(&env);
    let out = env
        .cmd()
        .args(["run", "--now", "2026-11-02T21:00:00Z"])
        .env("DREAM_CRASH_AT", "move refs/heads")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(env.facts().len(), 0, "the files come after the branch");
    let out = env.dream(&["status"]);
    assert!(out.status.success());
    // The next writing command rolls the change forward before it reads anything.
    let r = env.run_cycle("2026-11-02T21:30:00Z");
    assert!(
        r["notes"].to_string().contains("was completed"),
        "{}",
        r["notes"]
    );
    assert_eq!(
        r["ingest"]["new_events"], 0,
        "the state had recorded the cycle"
    );
    assert_eq!(env.facts().len(), 1);
    let subjects: Vec<String> = env.commits().into_iter().map(|(s, _)| s).collect();
    assert!(
        !subjects.iter().any(|s| s.contains("hand edits")),
        "dream's own files are never recorded as hand edits: {subjects:?}"
    );
}

#[test]
fn a_failed_write_says_truthfully_whether_anything_changed() {
    let env = Env::new();
    env.init();
    promotable(&env);
    let before = env.snapshot();
    // Before the commit point: nothing changed, and the hint says so.
    let out = env
        .cmd()
        .args(["run", "--now", "2026-11-02T21:00:00Z"])
        .env("DREAM_FAIL_AT", "commit the state")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing was changed"),
        "{}",
        stderr(&out)
    );
    let after = env.snapshot();
    for (path, hash) in &before {
        if path.starts_with("memory/")
            || path.starts_with(".dream/state")
            || path.starts_with(".git/refs")
        {
            assert_eq!(after.get(path), Some(hash), "{path} is unchanged");
        }
    }
    assert!(!env.repo.join(".dream/journal.json").exists());
    // After it (a full disk while writing the files): the hint says the change happened.
    let out = env
        .cmd()
        .args(["run", "--now", "2026-11-02T21:00:00Z"])
        .env("DREAM_FAIL_AT", "/memory/")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(!err.contains("nothing was changed"), "{err}");
    assert!(
        err.contains("was committed") && err.contains("next dream command"),
        "{err}"
    );
    // The next run finishes the files; no hand-edit commit, nothing doubled.
    let r = env.run_cycle("2026-11-02T21:30:00Z");
    assert!(
        r["notes"].to_string().contains("was completed"),
        "{}",
        r["notes"]
    );
    assert_eq!(env.facts().len(), 1);
    let subjects: Vec<String> = env.commits().into_iter().map(|(s, _)| s).collect();
    assert!(
        !subjects.iter().any(|s| s.contains("hand edits")),
        "{subjects:?}"
    );
}

#[test]
fn hand_edits_are_committed_first_and_adopted_as_owner_facts() {
    let env = Env::new();
    env.init();
    let human = env.read("memory/human.md");
    std::fs::write(
        env.repo.join("memory/human.md"),
        format!("{human}- I have two cats named Tofu and Miso.\n"),
    )
    .unwrap();
    promotable(&env);
    env.run_cycle("2026-11-02T21:00:00Z");
    let subjects: Vec<String> = env.commits().into_iter().map(|(s, _)| s).collect();
    assert_eq!(
        subjects[subjects.len() - 2],
        "dream: record hand edits",
        "{subjects:?}"
    );
    assert!(
        subjects
            .iter()
            .any(|s| s == "dream: give ids to 1 hand-written facts"),
        "{subjects:?}"
    );
    let human = env.read("memory/human.md");
    let line = human.lines().find(|l| l.contains("Tofu and Miso")).unwrap();
    assert!(
        line.starts_with("- I have two cats named Tofu and Miso. <!-- id=f_"),
        "{line}"
    );
    assert!(line.contains("by=owner"), "{line}");
    assert!(
        human.contains("I live in Lisbon with my two cats."),
        "the cycle's fact sits beside it"
    );
}

#[test]
fn bad_config_exits_2_naming_the_file_and_key() {
    let env = Env::new();
    env.init();
    let path = env.repo.join("dream.toml");
    std::fs::write(&path, "[cluster]\nwindow_dayz = 3\n").unwrap();
    let out = env.dream(&["run"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("dream.toml") && err.contains("unknown key `cluster.window_dayz`"),
        "{err}"
    );

    std::fs::write(&path, "[cluster]\nmin_points = 5\n").unwrap();
    let out = env.dream(&["run"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cluster floor (5) is above the score floor promote.min_support (3)"),
        "{}",
        stderr(&out)
    );

    std::fs::write(&path, "[budget]\ntokens_per_cycle = \"many\"\n").unwrap();
    let out = env.dream(&["run"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("key `budget.tokens_per_cycle`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_folder_that_is_not_a_dream_repo_gets_a_clear_error() {
    let env = Env::new();
    let out = env
        .cmd()
        .env_remove("DREAM_REPO")
        .args(["run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("is not a dream repository"), "{err}");
    assert!(err.contains("hint: run `dream init DIR`"), "{err}");
}

#[test]
fn ingest_appends_valid_events_and_lists_the_bad_ones() {
    let env = Env::new();
    env.init();
    let input = format!(
        "{}{}\n{}",
        event(
            "2026-11-01T09:00:00Z",
            "s1",
            "my key is sk-abcdefghijklmnopqrstuvwxyz12345"
        ),
        r#"{"kind":"message","text":"no ts"}"#,
        event("2026-11-01T09:05:00Z", "s1", "all good here")
    );
    let out = env
        .cmd()
        .args(["ingest", "--now", "2026-11-01T10:00:00Z", "-"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "a refused line makes the exit code 1"
    );
    let err = stderr(&out);
    assert!(err.contains("-:2: missing required field `ts`"), "{err}");
    assert!(err.contains("appended 2 events"), "{err}");
    let inbox = env.read("events/ingest-2026-11-01.jsonl");
    assert_eq!(inbox.lines().count(), 2);
    assert!(
        !inbox.contains("sk-abc"),
        "secrets are redacted before they are written"
    );
    assert!(inbox.contains("[redacted:openai-key]"));
    let r = env.run_cycle("2026-11-01T21:00:00Z");
    assert_eq!(r["ingest"]["new_events"], 2);
}

#[test]
fn the_demo_runs_end_to_end() {
    let env = Env::new();
    let dir = env.root.join("demo");
    let out = env
        .cmd()
        .env_remove("DREAM_REPO")
        .args(["demo", "--keep"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("promoted"), "{text}");
    assert!(
        text.contains(&format!("The demo repository is {}", dir.display())),
        "{text}"
    );
    assert!(dir.join("memory/human.md").exists());
    // It mentions `dream context`, and the review queue only as what the cycle queued.
    assert!(
        text.contains(&format!("dream --repo {} context", dir.display())),
        "{text}"
    );
    let queued = std::fs::read_dir(dir.join("review"))
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "md"))
            })
            .count()
        })
        .unwrap_or(0);
    if queued == 0 {
        assert!(!text.contains("cards waiting for a person"), "{text}");
        assert!(text.contains("no card was queued for review"), "{text}");
    } else {
        assert!(
            text.contains(&format!("{queued} cards waiting for a person")),
            "{text}"
        );
    }
}

#[test]
fn a_fact_reworded_by_hand_becomes_an_owner_fact_that_verify_trusts() {
    let env = Env::new();
    env.init();
    promotable(&env);
    env.run_cycle("2026-11-02T21:00:00Z");
    let human = env.read("memory/human.md");
    let edited = human.replace(
        "- I live in Lisbon with my two cats.",
        "- I live in Lisbon with my two cats and a parrot called Kiwi.",
    );
    assert_ne!(edited, human, "the promoted fact is there to edit");
    std::fs::write(env.repo.join("memory/human.md"), edited).unwrap();
    env.run_cycle("2026-11-03T21:00:00Z");
    let subjects: Vec<String> = env.commits().into_iter().map(|(s, _)| s).collect();
    assert_eq!(subjects[1], "dream: record hand edits", "{subjects:?}");
    assert_eq!(
        subjects[0], "dream: 1 facts reworded by hand are now owner facts",
        "{subjects:?}"
    );
    let line = env
        .read("memory/human.md")
        .lines()
        .find(|l| l.contains("Kiwi"))
        .unwrap()
        .to_string();
    assert!(line.contains("by=owner"), "{line}");
    let out = env.dream(&["verify"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}

#[test]
fn a_fact_restated_for_weeks_cites_a_bounded_set_that_still_traces_it() {
    let env = Env::new();
    env.init();
    let line = |id: &str, ts: &str, session: &str, text: &str| {
        serde_json::json!({"id": id, "ts": ts, "kind": "message", "actor": "user",
            "session": session, "text": text})
        .to_string()
            + "\n"
    };
    // Promoted on day two, then restated in a new session every day for four weeks.
    env.write_inbox(
        "a.jsonl",
        &(line(
            "e-01a",
            "2026-11-01T09:00:00Z",
            "s-01a",
            "My sister Ana lives in Porto.",
        ) + &line(
            "e-02a",
            "2026-11-02T09:00:00Z",
            "s-02a",
            "As I said, my sister Ana lives in Porto.",
        ) + &line(
            "e-02b",
            "2026-11-02T15:00:00Z",
            "s-02b",
            "My sister Ana lives in Porto.",
        )),
    );
    env.run_cycle("2026-11-02T21:00:00Z");
    assert_eq!(env.facts().len(), 1);
    for day in 3..=30 {
        env.append_inbox(
            "a.jsonl",
            &line(
                &format!("e-{day:02}"),
                &format!("2026-11-{day:02}T09:00:00Z"),
                &format!("s-{day:02}"),
                "Again: my sister Ana lives in Porto.",
            ),
        );
        env.run_cycle(&format!("2026-11-{day:02}T21:00:00Z"));
    }
    let facts = env.facts();
    assert_eq!(facts.len(), 1, "{facts:?}");
    let ev = facts[0]
        .split(" ev=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("an ev= list in {}", facts[0]))
        .to_string();
    let cited: Vec<&str> = ev.split(',').collect();
    assert!(cited.len() <= 12, "{} ids cited: {ev}", cited.len());
    assert!(cited.len() >= 3, "{ev}");
    assert!(
        cited.contains(&"e-30"),
        "the newest restatement is cited: {ev}"
    );
    assert!(facts[0].contains("first=2026-11-01"), "{}", facts[0]);
    assert!(facts[0].contains("last=2026-11-30"), "{}", facts[0]);
    // Every reinforcement is still reported with what it added.
    let bodies: Vec<String> = env.commits().into_iter().map(|(_, b)| b).collect();
    assert!(
        bodies.iter().any(|b| b.contains("+1 supporting events")),
        "{bodies:?}"
    );
    let out = env.dream(&["verify"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}
