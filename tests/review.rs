//! The human side (SPEC S3, S4 step 8, S9): a person reviews queued cards, asks why
//! anything happened, and takes things back. The interactive review is driven through a
//! real pseudo-terminal (80x24) with keystrokes, and the screen is read back through a
//! terminal emulator, exactly as a person would see it; the subcommands for scripts,
//! `explain`, `undo` and `log` run on repositories built by real cycles over events the
//! tests write. Every decision must leave one clear commit, and what a person rejected or
//! undid must not come back from the same evidence.

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{native_pty_system, CommandBuilder, PtySize};

use crate::util::{event, stderr, stdout, Env, SAMPLE_NOW};

/// The morning after the sample stream: when the person reviews.
const REVIEW_NOW: &str = "2026-11-07T08:00:00Z";

/// A `dream` process on a pseudo-terminal, its screen kept by a vt100 emulator.
struct Tty {
    _master: Box<dyn portable_pty::MasterPty + Send>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    parser: Arc<Mutex<vt100::Parser>>,
}

impl Tty {
    fn spawn(env: &Env, args: &[&str], color: bool) -> Tty {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: 24,
                cols: 80,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("a pseudo-terminal");
        let mut cmd = CommandBuilder::new(assert_cmd::cargo::cargo_bin("dream"));
        cmd.args(args);
        for (k, _) in std::env::vars() {
            if k.starts_with("DREAM_") || k.starts_with("GIT_") || k == "NO_COLOR" {
                cmd.env_remove(k);
            }
        }
        cmd.env("HOME", &env.home);
        cmd.env("GIT_CONFIG_GLOBAL", "/dev/null");
        cmd.env("GIT_CONFIG_NOSYSTEM", "1");
        cmd.env("DREAM_REPO", &env.repo);
        for (k, v) in env.vars() {
            cmd.env(k, v);
        }
        cmd.env("TERM", "xterm-256color");
        if !color {
            cmd.env("NO_COLOR", "1");
        }
        cmd.cwd(&env.root);
        let child = pair
            .slave
            .spawn_command(cmd)
            .expect("dream starts on the pty");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let size = |n| NonZeroU16::new(n).unwrap();
        let parser = Arc::new(Mutex::new(vt100::Parser::new(size(24), size(80), 0)));
        let sink = Arc::clone(&parser);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().process(&buf[..n]);
            }
        });
        Tty {
            _master: pair.master,
            writer,
            child,
            parser,
        }
    }

    fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// Wait until the screen shows `needle`; returns the screen.
    fn wait_for(&self, needle: &str) -> String {
        self.wait_all(&[needle])
    }

    /// Wait until the screen shows every one of `needles` at once (a frame may arrive in
    /// several reads); returns the screen.
    fn wait_all(&self, needles: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if needles.iter().all(|n| s.contains(n)) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the screen never showed all of {needles:?}; it shows:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn keys(&mut self, s: &str) {
        self.writer.write_all(s.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    fn wait_exit(&mut self) -> u32 {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.exit_code();
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "dream review did not exit:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether any cell on screen has a colour other than the default.
    fn has_colour(&self) -> bool {
        let p = self.parser.lock().unwrap();
        let s = p.screen();
        (0..24).any(|r| {
            (0..80).any(|c| {
                s.cell(r, c)
                    .is_some_and(|cell| cell.fgcolor() != vt100::Color::Default)
            })
        })
    }
}

/// A repository after one cycle over the shipped sample stream: two pending cards (the
/// episodic tier is off, so what lacks corroboration waits for a person).
fn sample_repo() -> Env {
    let env = Env::new();
    env.init();
    env.episodes_off();
    env.add_sample_events();
    env.run_cycle(SAMPLE_NOW);
    env
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}\n{}", stderr(out), stdout(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

fn pending(env: &Env) -> Vec<serde_json::Value> {
    json(&env.dream(&["review", "list", "--json"]))
        .as_array()
        .unwrap()
        .clone()
}

fn fact_line(env: &Env, needle: &str) -> Option<String> {
    env.facts().into_iter().find(|l| l.contains(needle))
}

fn fact_id(line: &str) -> String {
    line.split("id=")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn the_interactive_review_accepts_and_rejects_with_single_keys() {
    let env = sample_repo();
    let commits_before = env.commits().len();
    let mut tty = Tty::spawn(&env, &["review", "--now", REVIEW_NOW], false);

    // The candidate, why it was queued, the judge, each supporting event (time, session,
    // excerpt), the gate table, and the keys.
    // Best first: the more salient card (a child's school start) comes first.
    let screen = tty.wait_all(&[
        "card 1 of 2, best first",
        "My daughter Lina starts school in September.",
        "Why queued",
        "support 2 < min_support 3",
        "Judge",
        "Supporting events (2)",
        "11-04 09:29",
        "2026-11-04-a",
        "threshold",
        "NO support",
        "a accept  r reject  e edit  s skip  q quit",
    ]);
    assert!(screen.lines().all(|l| l.chars().count() <= 80));
    assert!(!tty.has_colour(), "NO_COLOR means no colour");
    // The gate table scrolls into view with the arrow keys.
    tty.keys("\x1b[B\x1b[B\x1b[B\x1b[B\x1b[B\x1b[B");
    tty.wait_for("coverage");

    tty.keys("r");
    tty.wait_for("type a reason");
    tty.keys("not my daughter's school year");
    tty.wait_for("> not my daughter's school year");
    tty.keys("\r");
    tty.wait_all(&[
        "card 1 of 1",
        "rejected c_3fbed39b",
        "I am allergic to peanuts and shellfish.",
        "NO confidence",
    ]);

    tty.keys("a");
    assert_eq!(tty.wait_exit(), 0);
    tty.wait_for("1 accepted, 1 rejected, 0 edited, 0 skipped; 0 cards still pending");

    // One commit per decision, each saying what it did, in one review session.
    let commits = env.commits();
    assert_eq!(commits.len(), commits_before + 2);
    assert!(
        commits[0]
            .0
            .starts_with("dream: review: accepted c_031362d3 as f_031362d3"),
        "{:?}",
        commits[0]
    );
    assert!(
        commits[1]
            .0
            .starts_with("dream: review: rejected c_3fbed39b"),
        "{:?}",
        commits[1]
    );
    assert!(
        commits[1].1.contains("-- not my daughter's school year"),
        "{}",
        commits[1].1
    );
    for (_, message) in &commits[..2] {
        assert!(message.contains("Dream-Stage: review"), "{message}");
    }
    let session = |m: &str| {
        m.lines()
            .find(|l| l.starts_with("Dream-Cycle: review-"))
            .map(str::to_string)
    };
    assert!(session(&commits[0].1).is_some());
    assert_eq!(
        session(&commits[0].1),
        session(&commits[1].1),
        "one session, one cycle id"
    );

    let line = fact_line(&env, "allergic to peanuts").expect("the accepted fact is in memory");
    assert!(env.read("memory/human.md").contains(&line));
    assert!(line.contains("by=review"), "{line}");
    assert!(pending(&env).is_empty());
    let rejected = env.read("review/decided/c_3fbed39b.md");
    let card = dream_core::schema::Card::parse(&rejected).unwrap();
    let d = card.decision.unwrap();
    assert_eq!(
        (d.verdict.as_str(), d.reason.as_str()),
        ("rejected", "not my daughter's school year")
    );
}

#[test]
fn an_edit_is_gated_again_and_becomes_an_owner_fact() {
    let env = sample_repo();
    let mut tty = Tty::spawn(&env, &["review", "--now", REVIEW_NOW], false);
    // The more salient card first: skip it, edit the next.
    tty.wait_for("card 1 of 2");
    tty.keys("s");
    tty.wait_for("card 2 of 2, best first (1 skipped)");
    tty.keys("e");
    tty.wait_for("> I am allergic to peanuts and shellfish.");
    // A name that no supporting event mentions is refused, and the field stays open.
    tty.keys("\x15I am allergic to peanuts and Brazil nuts.\r");
    tty.wait_all(&[
        "the edited text was refused",
        "invented name \"Brazil\"",
        "card 2 of 2",
    ]);
    assert_eq!(pending(&env).len(), 2);
    tty.keys("\x15I am allergic to shellfish and to peanuts.\r");
    assert_eq!(tty.wait_exit(), 0);
    tty.wait_for("0 accepted, 0 rejected, 1 edited, 1 skipped; 1 card still pending");

    let line = fact_line(&env, "shellfish and to peanuts").expect("the edit is a fact");
    assert!(line.contains("by=owner"), "{line}");
    assert!(
        line.contains("ev=ev_b2f52ef075c84cff,ev_161cfc7c3edbb8b5"),
        "the card's evidence: {line}"
    );
    assert_eq!(
        env.commits()[0].0,
        format!(
            "dream: review: edited c_031362d3 into {}: I am allergic to shellfish and to peanuts.",
            fact_id(&line)
        )
    );
    let skipped = pending(&env);
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0]["id"], "c_3fbed39b");
}

#[test]
fn quitting_writes_nothing_and_colour_follows_no_color() {
    let env = sample_repo();
    let before = env.snapshot();
    let mut tty = Tty::spawn(&env, &["review", "--now", REVIEW_NOW], true);
    tty.wait_for("card 1 of 2");
    assert!(tty.has_colour(), "colour when NO_COLOR is unset");
    tty.keys("x");
    tty.wait_for("keys: a accept, r reject");
    tty.keys("q");
    assert_eq!(tty.wait_exit(), 0);
    let after = env.snapshot();
    let changed: Vec<&String> = after
        .iter()
        .filter(|(p, h)| !p.starts_with(".dream/") && before.get(*p) != Some(h))
        .map(|(p, _)| p)
        .collect();
    assert!(changed.is_empty(), "quitting changed {changed:?}");
}

#[test]
fn review_off_a_terminal_points_to_the_subcommands() {
    let env = sample_repo();
    let out = env.dream(&["review"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("needs a terminal"), "{err}");
    assert!(
        err.contains("dream review list") && err.contains("dream review accept ID"),
        "{err}"
    );
}

#[test]
fn the_subcommands_list_show_accept_and_reject_each_with_one_commit() {
    let env = sample_repo();
    let cards = pending(&env);
    assert_eq!(cards.len(), 2);
    for c in &cards {
        for key in [
            "id",
            "text",
            "block",
            "category",
            "reason",
            "supportingEventIds",
            "gates",
        ] {
            assert!(!c[key].is_null(), "{key} in {c}");
        }
    }
    assert_eq!(
        cards[0]["id"], "c_3fbed39b",
        "best first: the most salient, then the oldest"
    );
    assert_eq!(cards[0]["supportingEventIds"].as_array().unwrap().len(), 2);

    let list = stdout(&env.dream(&["review", "list"]));
    assert!(list.contains("2 cards waiting for review"), "{list}");
    // Any prefix, or none, finds the card.
    for id in ["c_031362d3", "031362d3", "k_031362d3"] {
        let out = env.dream(&["review", "show", id]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        assert!(
            text.contains("I am allergic to peanuts and shellfish."),
            "{text}"
        );
        assert!(
            text.contains("NO confidence") && text.contains(">= 0.8"),
            "{text}"
        );
        assert!(text.contains("Supporting events (2)"), "{text}");
    }

    let n = env.commits().len();
    let out = env.dream(&["review", "accept", "031362d3", "--now", REVIEW_NOW]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("accepted c_031362d3 as f_031362d3"),
        "{}",
        stdout(&out)
    );
    assert_eq!(env.commits().len(), n + 1);
    let out = env.dream(&[
        "review",
        "reject",
        "c_3fbed39b",
        "--reason",
        "wrong child",
        "--now",
        REVIEW_NOW,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(env.commits().len(), n + 2);
    assert!(pending(&env).is_empty());
    assert!(!env.repo.join("review/c_3fbed39b.md").exists());
    assert!(env
        .read("review/decided/c_3fbed39b.md")
        .contains("verdict = \"rejected\""));

    // Deciding again is a clear error, and so is an unknown id.
    let out = env.dream(&["review", "accept", "c_3fbed39b"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("card c_3fbed39b was already decided (rejected)"),
        "{}",
        stderr(&out)
    );
    let out = env.dream(&["review", "show", "c_00000000"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no pending review card c_00000000"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_decision_while_a_cycle_holds_the_lock_exits_75_and_writes_nothing() {
    use fs2::FileExt;
    let env = sample_repo();
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .open(env.repo.join(".dream/lock"))
        .unwrap();
    lock.lock_exclusive().unwrap();
    let before = env.snapshot();
    for args in [
        vec!["review", "accept", "c_031362d3"],
        vec!["undo", "--cycle", "x"],
        vec!["undo", "f_00000000"],
    ] {
        let out = env.dream(&args);
        assert_eq!(out.status.code(), Some(75), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("another dream cycle is running"),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(env.snapshot(), before);
    FileExt::unlock(&lock).unwrap();
    assert!(env
        .dream(&["review", "accept", "c_031362d3"])
        .status
        .success());
}

/// Three restatements on two days (promoted), then, a few days later, three of a
/// contradicting fact.
fn lisbon_then_porto(env: &Env) -> (String, String) {
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
    env.run_cycle("2026-11-02T21:00:00Z");
    let old = fact_id(&fact_line(env, "Lisbon").expect("Lisbon was promoted"));
    let mut text = String::new();
    text.push_str(&event(
        "2026-11-05T09:00:00Z",
        "s4",
        "I live in Porto with my two cats.",
    ));
    text.push_str(&event(
        "2026-11-06T09:00:00Z",
        "s5",
        "Yes, I live in Porto with my two cats.",
    ));
    text.push_str(&event(
        "2026-11-06T15:00:00Z",
        "s6",
        "I live in Porto with my two cats.",
    ));
    env.write_inbox("b.jsonl", &text);
    env.run_cycle("2026-11-06T21:00:00Z");
    assert!(
        fact_line(env, "Porto").is_none(),
        "a contradiction is never promoted on its own"
    );
    let cards = pending(env);
    assert_eq!(cards.len(), 1, "{cards:?}");
    assert_eq!(cards[0]["supersedes"], old.as_str());
    (old, cards[0]["id"].as_str().unwrap().to_string())
}

#[test]
fn accepting_a_contradiction_supersedes_the_old_fact_with_a_validity_interval() {
    let env = Env::new();
    env.init();
    let (old, card) = lisbon_then_porto(&env);

    let show = stdout(&env.dream(&["review", "show", &card]));
    assert!(show.contains(&format!("Supersedes {old}")), "{show}");
    assert!(
        show.contains("I live in Lisbon with my two cats."),
        "both facts are shown: {show}"
    );
    assert!(show.contains("I live in Porto with my two cats."), "{show}");

    let out = env.dream(&["review", "accept", &card, "--now", "2026-11-07T08:00:00Z"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let facts = env.facts();
    assert_eq!(facts.len(), 1, "the two never coexist: {facts:#?}");
    let new_line = &facts[0];
    assert!(
        new_line.contains("Porto") && new_line.contains("from=2026-11-05"),
        "{new_line}"
    );
    let archive = env.read("archive/facts.md");
    let old_line = archive
        .lines()
        .find(|l| l.contains(&old))
        .expect("the old fact is archived");
    let new = fact_id(new_line);
    assert!(
        old_line.contains("to=2026-11-05") && old_line.contains("why=superseded"),
        "{old_line}"
    );
    assert!(old_line.contains(&format!("policy={new}")), "{old_line}");
    let message = &env.commits()[0].1;
    assert!(message.contains(&format!("superseded {old}")), "{message}");

    // explain shows the archived fact and why it left.
    let ex = json(&env.dream(&["explain", &old, "--json"]));
    assert_eq!(ex["facts"][0]["status"], "archived");
    assert_eq!(ex["facts"][0]["archived"]["why"], "superseded");
    assert_eq!(ex["facts"][0]["validTo"], "2026-11-05");

    // Undoing the new fact makes the old one valid again.
    let out = env.dream(&["undo", &new, "--now", "2026-11-08T08:00:00Z"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let facts = env.facts();
    assert_eq!(facts.len(), 1, "{facts:#?}");
    assert!(
        facts[0].contains(&old) && !facts[0].contains("to="),
        "{}",
        facts[0]
    );
    assert!(env.read("archive/facts.md").contains("why=undone"));
}

#[test]
fn explain_shows_events_gates_route_and_commits_for_a_fact_and_a_card() {
    let env = sample_repo();
    env.dream(&["review", "accept", "c_031362d3", "--now", REVIEW_NOW]);
    let out = env.dream(&["explain", "k_031362d3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for shown in [
        "f_031362d3  active fact in memory/human.md",
        "c_031362d3  review card, accepted",
        "20261106T210000Z-evening  k_031362d3  queued -> c_031362d3",
        "NO  support       2",
        ">= 3",
        "Supporting events (2)",
        "ev_b2f52ef075c84cff",
        "Commits (2)",
        "dream: evening cycle 2026-11-06",
        "dream: review: accepted c_031362d3",
    ] {
        assert!(text.contains(shown), "explain shows {shown:?}:\n{text}");
    }
    let ex = json(&env.dream(&["explain", "f_031362d3", "--json"]));
    assert_eq!(ex["facts"][0]["origin"], "review");
    assert_eq!(ex["candidates"][0]["route"], "queued");
    assert!(ex["candidates"][0]["gates"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["gate"] == "coverage" && g["value"] == "1.000"));
    assert_eq!(ex["commits"].as_array().unwrap().len(), 2);
    assert_eq!(
        ex["remeasured"][0][1]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["passed"] == false)
            .count(),
        0
    );

    let out = env.dream(&["explain", "f_deadbeef"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("nothing is known about f_deadbeef"),
        "{}",
        stderr(&out)
    );
}

/// Three restatements on two days, promoted at once.
fn promoted_fact(env: &Env) -> String {
    let mut text = String::new();
    text.push_str(&event(
        "2026-11-01T09:00:00Z",
        "s1",
        "I lead the data platform team at Northwind.",
    ));
    text.push_str(&event(
        "2026-11-02T09:00:00Z",
        "s2",
        "As I said, I lead the data platform team at Northwind.",
    ));
    text.push_str(&event(
        "2026-11-02T15:00:00Z",
        "s3",
        "I lead the data platform team at Northwind.",
    ));
    env.write_inbox("a.jsonl", &text);
    let report = env.run_cycle("2026-11-02T21:00:00Z");
    assert_eq!(report["candidates"]["promoted"], 1, "{report}");
    fact_id(&fact_line(env, "Northwind").unwrap())
}

#[test]
fn undo_of_a_cycle_is_a_commit_that_can_itself_be_undone() {
    let env = Env::new();
    env.init();
    let f = promoted_fact(&env);
    let cycle = "20261102T210000Z-evening";
    let n = env.commits().len();

    let dry = env.dream(&[
        "undo",
        "--cycle",
        cycle,
        "--dry-run",
        "--now",
        "2026-11-03T08:00:00Z",
    ]);
    assert!(
        stdout(&dry).contains("dry run: nothing was written"),
        "{}",
        stdout(&dry)
    );
    assert_eq!(env.commits().len(), n);

    let out = json(&env.dream(&[
        "undo",
        "--cycle",
        cycle,
        "--now",
        "2026-11-03T08:00:00Z",
        "--json",
    ]));
    let undo_id = out["id"].as_str().unwrap().to_string();
    assert!(undo_id.starts_with("undo-20261103T080000Z-"), "{out}");
    assert_eq!(env.commits().len(), n + 1);
    assert!(env.facts().is_empty());
    assert!(env.read("archive/facts.md").contains(&format!("id={f} ")));
    let (subject, message) = &env.commits()[0];
    assert_eq!(
        subject,
        &format!("dream: undo evening cycle {cycle}: 1 changes reverted")
    );
    assert!(
        message.contains(&format!("Dream-Undoes: {cycle}"))
            && message.contains(&format!("undone     {f}")),
        "{message}"
    );

    // Undoing the same cycle again says who undid it.
    let again = env.dream(&["undo", "--cycle", cycle]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains(&format!("already undone by {undo_id}")),
        "{}",
        stderr(&again)
    );

    // The same evidence does not bring it back.
    let report = env.run_cycle("2026-11-03T21:00:00Z");
    assert_eq!(report["candidates"]["proposed"], 0);
    assert!(env.facts().is_empty());

    // Undo the undo: the fact is back, and the veto is gone.
    let out = env.dream(&["undo", "--cycle", &undo_id, "--now", "2026-11-03T09:00:00Z"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(env.facts().len(), 1);
    assert!(!env.read("archive/facts.md").contains(&format!("id={f} ")));
    let ex = json(&env.dream(&["explain", &f, "--json"]));
    assert!(
        ex["vetoes"].as_array().unwrap().is_empty(),
        "{}",
        ex["vetoes"]
    );
    assert_eq!(
        ex["commits"].as_array().unwrap().len(),
        3,
        "promoted, undone, restored"
    );
}

#[test]
fn an_undone_fact_comes_back_only_through_review_and_only_with_new_evidence() {
    let env = Env::new();
    env.init();
    // A wider neighbourhood, so a loosely related new event joins the old cluster.
    let toml = env.read("dream.toml").replace("eps = 0.8", "eps = 1.3");
    std::fs::write(env.repo.join("dream.toml"), toml).unwrap();
    let f = promoted_fact(&env);
    let out = env.dream(&[
        "undo",
        &f,
        "--reason",
        "I moved teams",
        "--now",
        "2026-11-03T08:00:00Z",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));

    // New event in the cluster that does not itself say it: refused, naming the veto.
    env.append_inbox(
        "a.jsonl",
        &event(
            "2026-11-03T09:00:00Z",
            "s4",
            "At Northwind I still lead the whole analytics team.",
        ),
    );
    // (The episodic tier off for this one cycle, so the refusal is all it does: the new
    // event, said once, would otherwise be an episode of its own.)
    let out = env
        .cmd()
        .env("DREAM_EPISODES_ENABLED", "false")
        .args(["run", "--now", "2026-11-03T21:00:00Z", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["candidates"]["refused"], 1, "{report}");
    let reason = report["decisions"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("restates {f}"))
            && reason.contains("which a person undid on 2026-11-03: I moved teams"),
        "{reason}"
    );
    assert!(reason.contains("coverage by them 0.600 < 0.8"), "{reason}");
    assert!(env.facts().is_empty());

    // explain finds the refused candidate by its k_ id, with the veto gate.
    let k = f.replacen("f_", "k_", 1);
    let ex = json(&env.dream(&["explain", &k, "--json"]));
    let refused = ex["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["route"] == "refused")
        .expect("the refusal is recorded");
    assert!(
        refused["gates"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["gate"] == "veto" && g["passed"] == false),
        "{refused}"
    );
    assert_eq!(ex["vetoes"][0]["reason"], "I moved teams");

    // The log lists that cycle although it made no commit, with its refusal.
    let log = json(&env.dream(&["log", "--cycle", "20261103T210000Z-evening", "--json"]));
    assert_eq!(log[0]["no_commit"], true);
    assert_eq!(log[0]["refused"], 1);
    assert!(log[0]["refusals"][0]["text"]
        .as_str()
        .unwrap()
        .contains("which a person undid"));

    // An event that says it again: a card, never a promotion.
    env.append_inbox(
        "a.jsonl",
        &event(
            "2026-11-04T09:00:00Z",
            "s5",
            "To be clear, I lead the data platform team at Northwind.",
        ),
    );
    let report = env.run_cycle("2026-11-04T21:00:00Z");
    assert_eq!(report["candidates"]["promoted"], 0, "{report}");
    assert_eq!(report["candidates"]["queued"], 1, "{report}");
    let cards = pending(&env);
    assert!(
        cards[0]["reason"]
            .as_str()
            .unwrap()
            .contains("a person undid a similar fact before"),
        "{}",
        cards[0]
    );
}

#[test]
fn a_rejected_card_can_be_put_back_in_the_queue() {
    let env = sample_repo();
    env.dream(&[
        "review",
        "reject",
        "c_3fbed39b",
        "--reason",
        "no",
        "--now",
        REVIEW_NOW,
    ]);
    assert_eq!(pending(&env).len(), 1);
    let out = env.dream(&["undo", "c_3fbed39b", "--now", REVIEW_NOW]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(pending(&env).len(), 2);
    assert!(!env.repo.join("review/decided/c_3fbed39b.md").exists());
    let ex = json(&env.dream(&["explain", "c_3fbed39b", "--json"]));
    assert!(ex["vetoes"].as_array().unwrap().is_empty());
    assert!(env.commits()[0]
        .0
        .starts_with("dream: undo the rejection of c_3fbed39b"));
}

#[test]
fn the_log_has_one_block_per_cycle_review_and_undo() {
    let env = sample_repo();
    env.dream(&["review", "accept", "c_031362d3", "--now", REVIEW_NOW]);
    env.dream(&[
        "review",
        "reject",
        "c_3fbed39b",
        "--reason",
        "not now",
        "--now",
        REVIEW_NOW,
    ]);
    env.dream(&["undo", "f_031362d3", "--now", "2026-11-07T09:00:00Z"]);
    let log = json(&env.dream(&["log", "--json"]));
    let kinds: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        vec!["undo", "review", "review", "evening", "other"],
        "{log}"
    );
    let evening = &log[3];
    assert_eq!(evening["cycle"], "20261106T210000Z-evening");
    assert_eq!(evening["applied"], 7, "5 promoted, 2 queued");
    assert_eq!(evening["tokens"], 0);
    assert!(evening["commits"][0]["mutations"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["verb"] == "queued"));

    let text = stdout(&env.dream(&["log"]));
    assert!(text.contains("evening 20261106T210000Z-evening"), "{text}");
    assert!(text.contains("rejected   c_3fbed39b"), "{text}");
    assert!(text.contains("undone     f_031362d3"), "{text}");
    let one = stdout(&env.dream(&["log", "--cycle", "20261106T210000Z-evening"]));
    assert!(!one.contains("review-"), "{one}");
    let out = env.dream(&["log", "--cycle", "nope"]);
    assert_eq!(out.status.code(), Some(1));
}
