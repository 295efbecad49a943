//! Operations (SPEC S1, S11): dream as a well-behaved timer job. `dream schedule` writes
//! units that systemd accepts and property lists that launchd can read, into the user's
//! folders and nowhere else, and removes them cleanly; enabling degrades to printed
//! commands where there is no service manager (containers, CI); the morning cycle writes
//! and commits a digest a person would act on, once a day; logs read as text or as JSON
//! lines; completions and the man page come from the command line itself.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{event, stderr, stdout, Env, SAMPLE_NOW};

/// A `dream` command with no route to a user service manager and a fixed time zone.
fn sched(env: &Env) -> assert_cmd::Command {
    let mut c = env.cmd();
    c.env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env("TZ", "UTC");
    c
}

/// Every file under `dir`, relative to it, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

fn dream_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("dream")
        .canonicalize()
        .unwrap()
}

/// `systemd-analyze verify` on unit files; `None` when the tool is not installed.
fn systemd_verify(units: &[PathBuf]) -> Option<(bool, String)> {
    let tool = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"]
        .into_iter()
        .find(|p| Path::new(p).exists())?;
    let runtime = tempfile::tempdir().unwrap();
    let run = |user: bool| {
        let mut c = Command::new(tool);
        c.arg("verify");
        if user {
            c.arg("--user");
        }
        c.args(units)
            .env("XDG_RUNTIME_DIR", runtime.path())
            .env("SYSTEMD_PAGER", "");
        c.output().unwrap()
    };
    let mut out = run(true);
    if String::from_utf8_lossy(&out.stderr).contains("Failed to initialize manager") {
        // No user manager can be simulated here: verify the same files in system mode.
        out = run(false);
    }
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

#[test]
fn schedule_install_writes_exactly_the_systemd_units_and_they_verify() {
    let env = Env::new();
    let repo = env.root.join("my memory");
    env.cmd().arg("init").arg(&repo).assert().success();

    let out = sched(&env)
        .args([
            "schedule",
            "install",
            "--systemd",
            "--no-enable",
            "--morning",
            "06:30",
            "--evening",
            "22:15",
        ])
        .arg("--repo")
        .arg(&repo)
        .args(["--now", SAMPLE_NOW])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("systemctl --user enable --now dream-morning.timer dream-evening.timer"),
        "{text}"
    );
    assert!(
        text.contains("next morning run: Sat 2026-11-07 06:30"),
        "{text}"
    );
    assert!(
        text.contains("next evening run: Fri 2026-11-06 22:15"),
        "{text}"
    );

    let dir = env.home.join(".config/systemd/user");
    assert_eq!(
        files_under(&env.home),
        [
            ".config/systemd/user/dream-evening.service",
            ".config/systemd/user/dream-evening.timer",
            ".config/systemd/user/dream-morning.service",
            ".config/systemd/user/dream-morning.timer",
        ]
    );
    let repo = repo.canonicalize().unwrap();
    let service = std::fs::read_to_string(dir.join("dream-morning.service")).unwrap();
    let exec = format!(
        "ExecStart=\"{}\" --repo \"{}\" run --cycle morning --verbose\n",
        dream_bin().display(),
        repo.display()
    );
    assert!(service.contains(&exec), "{service}");
    for line in [
        "Type=oneshot\n",
        "SuccessExitStatus=75 10\n",
        "NoNewPrivileges=true\n",
        "ProtectSystem=strict\n",
        "PrivateTmp=true\n",
    ] {
        assert!(service.contains(line), "{line:?} in\n{service}");
    }
    assert!(
        service.contains(&format!("ReadWritePaths=\"{}\"\n", repo.display())),
        "{service}"
    );
    let timer = std::fs::read_to_string(dir.join("dream-evening.timer")).unwrap();
    for line in [
        "OnCalendar=*-*-* 22:15:00\n",
        "Persistent=true\n",
        "RandomizedDelaySec=",
        "WantedBy=timers.target\n",
    ] {
        assert!(timer.contains(line), "{line:?} in\n{timer}");
    }
    assert!(std::fs::read_to_string(dir.join("dream-evening.service"))
        .unwrap()
        .contains("run --cycle evening"));

    let units: Vec<PathBuf> = files_under(&dir).iter().map(|f| dir.join(f)).collect();
    match systemd_verify(&units) {
        None => eprintln!("note: systemd-analyze is not installed; the units were not verified"),
        Some((ok, err)) => {
            assert!(ok, "systemd-analyze verify failed:\n{err}");
            let ours: Vec<&str> = err.lines().filter(|l| l.contains("dream-")).collect();
            assert!(
                ours.is_empty(),
                "systemd-analyze warned about the units:\n{err}"
            );
        }
    }

    // status reads the units back and computes the next runs from their times.
    let out = sched(&env)
        .args([
            "schedule",
            "status",
            "--systemd",
            "--json",
            "--now",
            SAMPLE_NOW,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let st: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cycles = &st["schedulers"][0]["cycles"];
    assert_eq!(cycles[0]["cycle"], "morning");
    assert_eq!(cycles[0]["time"], "06:30");
    assert_eq!(cycles[0]["repo"], repo.display().to_string());
    assert!(
        cycles[0]["next_run"]
            .as_str()
            .unwrap()
            .starts_with("Sat 2026-11-07 06:30"),
        "{st}"
    );
    assert!(
        cycles[1]["next_run"]
            .as_str()
            .unwrap()
            .starts_with("Fri 2026-11-06 22:15"),
        "{st}"
    );
    let out = sched(&env)
        .args(["schedule", "status", "--now", SAMPLE_NOW])
        .output()
        .unwrap();
    assert!(
        stdout(&out).contains("evening  daily at 22:15 for"),
        "{}",
        stdout(&out)
    );

    // uninstall removes exactly what install wrote (and the links `enable` would have made).
    std::fs::create_dir_all(dir.join("timers.target.wants")).unwrap();
    std::os::unix::fs::symlink(
        "../dream-morning.timer",
        dir.join("timers.target.wants/dream-morning.timer"),
    )
    .unwrap();
    let out = sched(&env)
        .args(["schedule", "uninstall", "--no-enable"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("systemctl --user daemon-reload"),
        "{}",
        stdout(&out)
    );
    assert_eq!(files_under(&env.home), Vec::<String>::new());
    let out = sched(&env)
        .args(["schedule", "uninstall"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        stdout(&out).contains("nothing to remove"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn schedule_install_writes_launchd_agents_that_parse_as_property_lists() {
    let env = Env::new();
    env.init();
    let out = sched(&env)
        .args([
            "schedule",
            "install",
            "--launchd",
            "--no-enable",
            "--evening",
            "21:45",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("launchctl bootstrap gui/"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        files_under(&env.home),
        [
            "Library/LaunchAgents/local.dream.evening.plist",
            "Library/LaunchAgents/local.dream.morning.plist"
        ]
    );
    let repo = env.repo.canonicalize().unwrap();
    assert!(
        repo.join(".dream/logs").is_dir(),
        "the log folder exists for launchd to open"
    );
    for (cycle, hour, minute) in [("morning", 7, 0), ("evening", 21, 45)] {
        let path = env
            .home
            .join(format!("Library/LaunchAgents/local.dream.{cycle}.plist"));
        let value =
            plist::Value::from_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let d = value.as_dictionary().expect("a dictionary at the top");
        assert_eq!(
            d["Label"].as_string(),
            Some(format!("local.dream.{cycle}").as_str())
        );
        let args: Vec<&str> = d["ProgramArguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_string().unwrap())
            .collect();
        let bin = dream_bin().display().to_string();
        let repo_s = repo.display().to_string();
        assert_eq!(
            args,
            [
                bin.as_str(),
                "--repo",
                repo_s.as_str(),
                "run",
                "--cycle",
                cycle,
                "--verbose"
            ]
        );
        let when = d["StartCalendarInterval"].as_dictionary().unwrap();
        assert_eq!(when["Hour"].as_signed_integer(), Some(hour));
        assert_eq!(when["Minute"].as_signed_integer(), Some(minute));
        let log = format!("{}/.dream/logs/{cycle}.log", repo.display());
        assert_eq!(d["StandardErrorPath"].as_string(), Some(log.as_str()));
        assert_eq!(d["StandardOutPath"].as_string(), Some(log.as_str()));
        assert_eq!(d["RunAtLoad"].as_boolean(), Some(false));
    }
    let out = sched(&env)
        .args(["schedule", "uninstall", "--launchd", "--no-enable"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        stdout(&out).contains("launchctl bootout gui/"),
        "{}",
        stdout(&out)
    );
    assert_eq!(files_under(&env.home), Vec::<String>::new());
}

#[test]
fn enabling_without_a_service_manager_prints_the_commands_instead() {
    let env = Env::new();
    env.init();
    let out = sched(&env)
        .args(["schedule", "install", "--systemd"])
        .output()
        .unwrap();
    // The files are in place, but nothing will run until the commands do: exit 1.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("could not enable the timers here"), "{text}");
    assert!(
        env.home
            .join(".config/systemd/user/dream-evening.timer")
            .exists(),
        "{text}"
    );
    assert!(
        text.contains("    systemctl --user daemon-reload\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "    systemctl --user enable --now dream-morning.timer dream-evening.timer\n"
        ),
        "{text}"
    );
    assert_eq!(files_under(&env.home.join(".config/systemd/user")).len(), 4);
}

#[test]
fn bad_times_and_paths_are_usage_errors() {
    let env = Env::new();
    env.init();
    for bad in ["25:00", "7pm", "07:5"] {
        let out = sched(&env)
            .args([
                "schedule",
                "install",
                "--systemd",
                "--no-enable",
                "--morning",
                bad,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            stderr(&out).contains("use HH:MM on a 24-hour clock"),
            "{}",
            stderr(&out)
        );
    }
    let out = sched(&env)
        .args(["schedule", "install", "--systemd", "--no-enable", "--repo"])
        .arg(env.root.join("nowhere"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("is not a dream repository"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        files_under(&env.home),
        Vec::<String>::new(),
        "nothing written"
    );
}

#[test]
fn the_morning_cycle_writes_and_commits_a_digest_once_a_day() {
    let env = Env::new();
    env.init();
    env.episodes_off();
    env.add_sample_events();
    let evening = env.run_cycle(SAMPLE_NOW);
    assert_eq!(
        std::fs::read_dir(env.repo.join("review")).unwrap().count(),
        3,
        "two cards and decided/"
    );

    // Overnight: a hand-written commitment, a skill draft, and one more event.
    let human = env.read("memory/human.md")
        + "- I will send the board deck on November 12. <!-- id=f_0000beef cat=commitments by=owner first=2026-11-05 last=2026-11-05 -->\n";
    std::fs::write(env.repo.join("memory/human.md"), human).unwrap();
    std::fs::create_dir_all(env.repo.join("skills/drafts/run-tests")).unwrap();
    std::fs::write(
        env.repo.join("skills/drafts/run-tests/SKILL.md"),
        "---\nname: run-tests\ndescription: Run the test suite before pushing.\n---\n1. cargo test\n",
    )
    .unwrap();
    env.append_inbox(
        "late.jsonl",
        &event(
            "2026-11-07T06:00:00Z",
            "s-late",
            "Remind me to water the plants.",
        ),
    );

    let out = env.dream(&[
        "run",
        "--cycle",
        "morning",
        "--now",
        "2026-11-07T07:00:00Z",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let morning: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(morning["ingest"]["new_events"], 1);
    assert_eq!(
        morning["window"]["reflected"], 0,
        "the morning does not reflect"
    );
    assert_eq!(morning["candidates"]["proposed"], 0);
    assert_eq!(morning["digest"], "digests/2026-11-07-morning.md");

    let page = env.read("digests/2026-11-07-morning.md");
    let at = |s: &str| {
        page.find(s)
            .unwrap_or_else(|| panic!("{s:?} missing in\n{page}"))
    };
    at("# Morning digest, 2026-11-07\n");
    at("1 new event arrived since the last evening cycle");
    // Pending cards, best first (the most salient, then the oldest), each with why it was
    // queued.
    let mut cards: Vec<dream_core::schema::Card> = std::fs::read_dir(env.repo.join("review"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| dream_core::schema::Card::parse(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect();
    cards.sort_by(dream_core::selection::keep::card_rank);
    assert_eq!(cards.len(), 2);
    assert!(at(&format!("`{}`", cards[0].id)) < at(&format!("`{}`", cards[1].id)));
    for c in &cards {
        at(&c.text);
        at(&format!("Why queued: {}", c.reason));
    }
    // The commitment near today, and the one further out.
    let soon = at("**Thu 2026-11-12**, in 5 days: I will send the board deck on November 12. (`f_0000beef`, memory/human.md)");
    let later =
        at("**Thu 2026-12-03**, in 26 days: I will present the quarterly roadmap on December 3.");
    assert!(soon < at("Further out:") && at("Further out:") < later);
    at("`run-tests`: Run the test suite before pushing. (skills/drafts/run-tests/SKILL.md)");
    let c = &evening["candidates"];
    at(&format!(
        "{} proposed = {} promoted + {} queued + {} reinforced + {} refused",
        c["proposed"], c["promoted"], c["queued"], c["reinforced"], c["refused"]
    ));
    at("no stage degraded");
    at("I lead the data platform team at Northwind.");
    at("2 lines were quarantined in the last 7 days");
    at("missing required field `ts`");

    let commits = env.commits();
    let (subject, message) = &commits[0];
    assert_eq!(
        subject,
        "dream: morning digest 2026-11-07: 2 review cards, 1 commitment due soon, 1 skill draft, 2 quarantined input lines"
    );
    assert!(message.contains("Dream-Stage: digest\n"), "{message}");
    assert_eq!(
        commits[1].0, "dream: record hand edits",
        "hand edits are committed first"
    );

    // A second morning run the same day with nothing new: the same page, no commit.
    let before = env.commits().len();
    let out = env.dream(&["run", "--cycle", "morning", "--now", "2026-11-07T08:30:00Z"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(env.commits().len(), before);
    assert_eq!(env.read("digests/2026-11-07-morning.md"), page);
}

#[test]
fn logs_are_text_without_colour_or_one_json_object_per_line() {
    let env = Env::new();
    env.init();
    env.write_inbox(
        "a.jsonl",
        &(event("2026-11-06T09:00:00Z", "s1", "I live in Lisbon.") + "{broken\n"),
    );

    let out = env.dream(&["run", "--now", SAMPLE_NOW, "-v", "--log-format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stderr(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let messages: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["fields"]["message"].as_str())
        .collect();
    assert!(messages.contains(&"evening cycle started"), "{messages:?}");
    assert!(
        messages.iter().any(|m| m.starts_with("cycle finished in")),
        "{messages:?}"
    );
    let ingest = lines
        .iter()
        .find(|l| {
            l["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("ingested"))
        })
        .expect("an ingest line");
    assert_eq!(ingest["fields"]["new_events"], 1);
    assert_eq!(ingest["fields"]["quarantined"], 1);
    assert!(
        lines.iter().any(|l| l["level"] == "WARN"),
        "the quarantined line is a warning"
    );
    assert!(lines.iter().any(|l| l["fields"]["message"]
        .as_str()
        .is_some_and(|m| m.starts_with("tokens:"))));

    let out = env.dream(&[
        "run",
        "--cycle",
        "morning",
        "--now",
        "2026-11-07T07:00:00Z",
        "-v",
    ]);
    let text = stderr(&out);
    assert!(text.contains("INFO morning cycle started"), "{text}");
    assert!(
        text.contains("committed: dream: morning digest 2026-11-07"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "no colour when NO_COLOR is set and stderr is not a terminal"
    );

    // Errors too are JSON in JSON mode.
    let out = env
        .cmd()
        .args(["run", "--log-format", "json", "--repo"])
        .arg(env.root.join("nowhere"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let line: serde_json::Value = serde_json::from_str(stderr(&out).trim()).expect("one JSON line");
    assert_eq!(line["level"], "ERROR");
    assert!(
        line["fields"]["message"]
            .as_str()
            .unwrap()
            .contains("is not a dream repository"),
        "{line}"
    );
    assert_eq!(line["fields"]["exit_code"], 2);
}

#[test]
fn completions_and_man_pages_come_from_the_command_line() {
    let env = Env::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = env.dream(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = stdout(&out);
        assert!(
            script.contains("schedule") && script.contains("cycle") && script.contains("evening"),
            "{shell}: {script}"
        );
    }
    let out = env.dream(&["man"]);
    assert!(out.status.success());
    let page = stdout(&out);
    assert!(page.contains(".TH dream 1"), "{page}");
    assert!(page.contains("schedule"), "{page}");

    let dir = env.root.join("man1");
    let out = env
        .cmd()
        .arg("man")
        .arg("--out-dir")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let pages = files_under(&dir);
    for p in [
        "dream.1",
        "dream-run.1",
        "dream-schedule.1",
        "dream-schedule-install.1",
    ] {
        assert!(pages.iter().any(|x| x == p), "{p} in {pages:?}");
    }
    let run = std::fs::read_to_string(dir.join("dream-run.1")).unwrap();
    assert!(run.contains("75"), "exit codes in dream-run(1)");

    let out = env.dream(&["run", "--help"]);
    assert!(
        stdout(&out).contains("75  another dream process holds the repo's lock"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn several_repositories_get_template_units_with_staggered_starts_that_verify() {
    let env = Env::new();
    let ana = env.root.join("ana memory");
    let bob = env.root.join("bob");
    let cleo = env.root.join("cleo");
    for r in [&ana, &bob, &cleo] {
        env.cmd().arg("init").arg(r).assert().success();
    }
    let out = sched(&env)
        .args([
            "schedule",
            "install",
            "--systemd",
            "--no-enable",
            "--now",
            SAMPLE_NOW,
        ])
        .arg("--repo")
        .arg(&ana)
        .arg("--repo")
        .arg(&bob)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let ana = ana.canonicalize().unwrap();
    let bob = bob.canonicalize().unwrap();
    let esc = |p: &Path| dream_engine::schedule::escape_path(p.to_str().unwrap());
    let (a, b) = (esc(&ana), esc(&bob));
    assert!(a.ends_with("-ana\\x20memory"), "{a}");
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "systemctl --user enable --now 'dream-morning@{a}.timer' 'dream-evening@{a}.timer' dream-morning@{b}.timer dream-evening@{b}.timer"
        )),
        "{text}"
    );
    let dir = env.home.join(".config/systemd/user");
    let mut want = vec![
        "dream-evening@.service".to_string(),
        "dream-evening@.timer".into(),
        "dream-morning@.service".into(),
        "dream-morning@.timer".into(),
    ];
    for i in [&a, &b] {
        for c in ["evening", "morning"] {
            want.push(format!("dream-{c}@{i}.timer.d/dream.conf"));
        }
    }
    want.sort();
    assert_eq!(files_under(&dir), want);
    let service = std::fs::read_to_string(dir.join("dream-evening@.service")).unwrap();
    assert!(
        service.contains(&format!(
            "ExecStart=\"{}\" --repo \"%f\" run --cycle evening --verbose\n",
            dream_bin().display()
        )) && service.contains("ReadWritePaths=\"%f\"\n")
            && service.contains("SuccessExitStatus=75 10\n"),
        "{service}"
    );
    let time = |c: &str, i: &str| {
        let t =
            std::fs::read_to_string(dir.join(format!("dream-{c}@{i}.timer.d/dream.conf"))).unwrap();
        dream_engine::schedule::parse_time(&t).unwrap().to_string()
    };
    assert_eq!(
        [
            time("evening", &a),
            time("evening", &b),
            time("morning", &a),
            time("morning", &b)
        ],
        ["22:00", "22:10", "07:00", "07:10"],
        "staggered by 10 minutes"
    );

    // systemd itself loads every instance: the template and its drop-in.
    let mut units: Vec<PathBuf> = Vec::new();
    for i in [&a, &b] {
        for c in ["evening", "morning"] {
            units.push(dir.join(format!("dream-{c}@{i}.service")));
            units.push(dir.join(format!("dream-{c}@{i}.timer")));
        }
    }
    match systemd_verify(&units) {
        None => eprintln!(
            "note: systemd-analyze is not installed; the template units were not verified"
        ),
        Some((ok, err)) => {
            assert!(ok, "systemd-analyze verify failed:\n{err}");
            let ours: Vec<&str> = err.lines().filter(|l| l.contains("dream-")).collect();
            assert!(
                ours.is_empty(),
                "systemd-analyze warned about the units:\n{err}"
            );
        }
    }

    // A third repository, later, takes the first start nobody has.
    let out = sched(&env)
        .args([
            "schedule",
            "install",
            "--systemd",
            "--no-enable",
            "--instance",
        ])
        .arg("--repo")
        .arg(&cleo)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let c = esc(&cleo.canonicalize().unwrap());
    assert_eq!(time("evening", &c), "22:20");
    let out = sched(&env)
        .args([
            "schedule",
            "status",
            "--systemd",
            "--json",
            "--now",
            SAMPLE_NOW,
        ])
        .output()
        .unwrap();
    let st: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let instances = st["schedulers"][0]["instances"].as_array().unwrap();
    let repos: Vec<&str> = instances
        .iter()
        .map(|i| i["repo"].as_str().unwrap())
        .collect();
    assert_eq!(repos.len(), 3, "{st}");
    assert!(repos.contains(&ana.to_str().unwrap()), "{repos:?}");
    let bob_status = instances
        .iter()
        .find(|i| i["instance"] == b.as_str())
        .unwrap();
    assert_eq!(bob_status["cycles"][1]["cycle"], "evening");
    assert_eq!(bob_status["cycles"][1]["time"], "22:10");
    assert_eq!(bob_status["cycles"][1]["enabled"], false);
    assert!(
        bob_status["cycles"][1]["next_run"]
            .as_str()
            .unwrap()
            .starts_with("Fri 2026-11-06 22:10"),
        "{bob_status}"
    );

    // One repository's instance goes; the templates stay until the last one does.
    let out = sched(&env)
        .args([
            "schedule",
            "uninstall",
            "--instance",
            "--no-enable",
            "--repo",
        ])
        .arg(&bob)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!dir.join(format!("dream-evening@{b}.timer.d")).exists());
    assert!(dir.join("dream-evening@.service").exists());
    let out = sched(&env)
        .args([
            "schedule",
            "uninstall",
            "--instance",
            "--no-enable",
            "--repo",
        ])
        .arg(&ana)
        .arg("--repo")
        .arg(&cleo)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(files_under(&env.home), Vec::<String>::new());

    // Every other command works on one repository.
    let out = env
        .cmd()
        .arg("status")
        .arg("--repo")
        .arg(&ana)
        .arg("--repo")
        .arg(&bob)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--repo is given 2 times"),
        "{}",
        stderr(&out)
    );
}
