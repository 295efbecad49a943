//! Skills (SPEC S10) end to end: an evening cycle over tool-call streams drafts a skill only
//! for a procedure that recurs across days and sessions and that no skill covers yet; every
//! SKILL.md it writes follows the Agent Skills format (checked here with a YAML parser,
//! independently of dream's own validator) and names only commands and tools the instances
//! used; drafts stay inert until `dream skills promote`, which activates one with one commit
//! and installs it; a second cycle does not draft the same procedure again.

use std::collections::HashSet;
use std::path::Path;

use fs2::FileExt;

use crate::util::{stderr, stdout, Env};

const NOW: &str = "2026-11-06T21:00:00Z";

/// An owner's request.
fn ask(ts: &str, session: &str, text: &str) -> String {
    serde_json::json!({"ts": ts, "kind": "message", "actor": "user", "session": session, "text": text}).to_string() + "\n"
}

/// A tool call as the Claude Code adapter writes it: `Tool: input`, with `meta.tool`.
fn call(ts: &str, session: &str, tool: &str, input: &str) -> String {
    let id = format!("{session}-{ts}-{tool}");
    serde_json::json!({"ts": ts, "kind": "tool_call", "session": session, "text": format!("{tool}: {input}"),
        "meta": {"tool": tool, "call_id": id}})
    .to_string()
        + "\n"
}

fn result(ts: &str, session: &str, text: &str) -> String {
    serde_json::json!({"ts": ts, "kind": "tool_result", "session": session, "text": text})
        .to_string()
        + "\n"
}

fn said(ts: &str, session: &str, text: &str) -> String {
    serde_json::json!({"ts": ts, "kind": "message", "actor": "assistant", "session": session, "text": text}).to_string() + "\n"
}

/// One instance of the recurring procedure: format, (edit), lint, (build), test, commit.
fn checks(day: u32, session: &str, request: &str, message: &str, variant: u8) -> String {
    let t = |m: u32| format!("2026-11-{day:02}T10:{m:02}:00Z");
    let mut s = ask(&t(0), session, request);
    s += &call(&t(1), session, "Bash", "cargo fmt --all");
    if variant != 1 {
        s += &call(&t(2), session, "Read", &format!("src/{session}.rs"));
        s += &call(
            &t(3),
            session,
            "Edit",
            &format!("src/{session}.rs old_string=a new_string=b"),
        );
    }
    s += &call(
        &t(4),
        session,
        "Bash",
        "cargo clippy --all-targets -- -D warnings",
    );
    s += &result(&t(5), session, "Finished dev profile");
    if variant == 2 {
        s += &call(&t(6), session, "Bash", "cargo build --release");
    }
    s += &call(
        &t(7),
        session,
        "Bash",
        "cargo test --workspace 2>&1 | tail -20",
    );
    s += &said(&t(8), session, "All tests pass; committing.");
    s += &call(
        &t(9),
        session,
        "Bash",
        &format!("git commit -am {message:?}"),
    );
    s
}

/// The procedure once more, on a new day: what makes a later cycle look at it again (a cycle
/// with no new tool call does not look for procedures at all).
fn once_more(env: &Env) {
    env.append_inbox(
        "agent.jsonl",
        &checks(
            7,
            "s9",
            "Format, lint, test and commit the fix, please.",
            "fix again",
            0,
        ),
    );
}

/// Three tool calls serving one request.
fn triple(day: u32, hour: u32, session: &str, request: &str, calls: [&str; 3]) -> String {
    let t = |m: u32| format!("2026-11-{day:02}T{hour:02}:{m:02}:00Z");
    let mut s = ask(&t(0), session, request);
    for (n, c) in calls.iter().enumerate() {
        s += &call(&t(n as u32 + 1), session, "Bash", c);
    }
    s
}

/// The recurring procedure four times on four days in four sessions, among unrelated tool
/// use: a one-off deployment, a build seen twice on two days, a set-up seen three times on
/// one day, and reading around.
fn stream() -> String {
    let mut s = String::new();
    s += &checks(
        2,
        "s1",
        "Please format, lint, test and commit the parser fix.",
        "fix the parser",
        0,
    );
    s += &ask(
        "2026-11-02T11:00:00Z",
        "s1",
        "What does the README say about releases?",
    );
    s += &call("2026-11-02T11:01:00Z", "s1", "Read", "README.md");
    s += &call("2026-11-02T11:02:00Z", "s1", "Grep", "release path=docs");
    s += &checks(
        3,
        "s2",
        "Run the checks and commit this.",
        "tidy the lexer",
        1,
    );
    s += &triple(
        3,
        14,
        "s2",
        "Deploy this to staging.",
        [
            "git push origin",
            "./deploy.sh staging",
            "curl -fsS https://staging.example.com/health",
        ],
    );
    s += &triple(
        3,
        15,
        "s5",
        "Build the frontend.",
        ["npm ci", "npm run build", "npm run test"],
    );
    s += &triple(
        4,
        15,
        "s6",
        "Build the frontend again.",
        ["npm ci", "npm run build", "npm run test"],
    );
    s += &checks(
        4,
        "s3",
        "Same as yesterday: checks, then commit.",
        "handle empty input",
        0,
    );
    s += &call(
        "2026-11-04T12:00:00Z",
        "s3",
        "WebFetch",
        "https://doc.rust-lang.org/std/ prompt=iterators",
    );
    for (n, session) in ["s7", "s8", "s9"].iter().enumerate() {
        s += &triple(
            5,
            13 + n as u32,
            session,
            "Set up the virtualenv.",
            [
                "python3 -m venv .venv",
                "pip install -r requirements.txt",
                "pytest -q",
            ],
        );
    }
    s += &checks(
        5,
        "s4",
        "Checks and commit, please.",
        "add the changelog entry",
        2,
    );
    s
}

/// Every `SKILL.md` under a folder, as (folder name, text).
fn skill_files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.join("SKILL.md").is_file() {
            out.push((
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(p.join("SKILL.md")).unwrap(),
            ));
        }
    }
    out.sort();
    out
}

/// The Agent Skills format, checked with a YAML parser: `---` front matter holding exactly
/// `name`, `description` and `metadata` (a map of strings to strings), a name of 1-64
/// lower-case letters, digits and single hyphens equal to the folder, a description of
/// 1-1024 characters.
fn assert_valid_skill(folder: &str, text: &str) {
    let rest = text
        .strip_prefix("---\n")
        .unwrap_or_else(|| panic!("{folder}: no front matter:\n{text}"));
    let end = rest
        .find("\n---\n")
        .unwrap_or_else(|| panic!("{folder}: front matter not closed"));
    let docs =
        yaml_rust2::YamlLoader::load_from_str(&rest[..end]).expect("the front matter is YAML");
    let map = docs[0].as_hash().expect("the front matter is a map");
    let keys: Vec<&str> = map
        .keys()
        .map(|k| k.as_str().expect("string keys"))
        .collect();
    assert!(
        keys.iter()
            .all(|k| ["name", "description", "metadata"].contains(k)),
        "{folder}: top-level keys {keys:?}"
    );
    let name = docs[0]["name"].as_str().expect("name is a string");
    assert!((1..=64).contains(&name.len()), "{name}");
    assert!(
        name.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
        "{name}"
    );
    assert!(
        !name.starts_with('-') && !name.ends_with('-') && !name.contains("--"),
        "{name}"
    );
    assert_eq!(name, folder, "the name is the folder's");
    let description = docs[0]["description"]
        .as_str()
        .expect("description is a string");
    assert!(
        (1..=1024).contains(&description.chars().count()),
        "{description}"
    );
    assert!(
        description.contains("Use when"),
        "says when to use it: {description}"
    );
    for (k, v) in docs[0]["metadata"].as_hash().expect("metadata is a map") {
        assert!(
            k.as_str().is_some() && v.as_str().is_some(),
            "metadata {k:?}: {v:?} is a string pair"
        );
    }
}

/// Every command in the body's steps uses only words the stream's tool calls used
/// (placeholders in angle brackets excepted).
fn assert_grounded(text: &str, stream: &str) {
    let mut vocab: HashSet<String> = HashSet::new();
    for line in stream.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["kind"] == "tool_call" {
            let t = v["text"].as_str().unwrap();
            for w in t.split_whitespace().chain(
                shell_words::split(t)
                    .unwrap_or_default()
                    .iter()
                    .map(String::as_str),
            ) {
                vocab.insert(
                    w.trim_matches(|c| c == '"' || c == '\'' || c == ':')
                        .to_string(),
                );
            }
            vocab.insert(v["meta"]["tool"].as_str().unwrap().to_string());
        }
    }
    let steps = text
        .split("## Steps")
        .nth(1)
        .expect("a Steps section")
        .split("\n## ")
        .next()
        .unwrap();
    let mut spans = 0;
    for span in steps.split('`').skip(1).step_by(2) {
        spans += 1;
        for w in shell_words::split(span).unwrap() {
            if w.starts_with('<') || w.starts_with("*.") {
                continue;
            }
            assert!(
                vocab.contains(&w),
                "`{w}` in `{span}` is not in any tool call"
            );
        }
    }
    assert!(spans >= 4, "the steps name their commands:\n{steps}");
}

/// Set a `[skills]` key in dream.toml (replacing its line, commented or not).
fn config(env: &Env, key: &str, value: &str) {
    let path = env.repo.join("dream.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut in_skills = false;
    let mut set = false;
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            if l.starts_with('[') {
                in_skills = l.starts_with("[skills]");
            }
            let bare = l.trim_start_matches("# ");
            if in_skills && !set && bare.starts_with(&format!("{key} =")) {
                set = true;
                return format!("{key} = {value}");
            }
            l.to_string()
        })
        .collect();
    assert!(set, "{key} is in the template");
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
    let out = env.dream(&["status"]);
    assert!(out.status.success(), "config is valid: {}", stderr(&out));
}

fn commit_count(env: &Env) -> usize {
    env.commits().len()
}

#[test]
fn a_recurring_procedure_becomes_one_inert_draft_that_promote_activates_once() {
    let env = Env::new();
    env.init();
    config(&env, "install_to", "\"~/agent-skills\"");
    let stream = stream();
    env.write_inbox("agent.jsonl", &stream);

    let report = env.run_cycle(NOW);
    let sk = &report["skills"];
    assert_eq!(sk["recurring"], 1, "{sk}");
    assert_eq!(sk["drafted"], 1, "{sk}");
    assert_eq!(sk["proposed"], 1, "{sk}");
    assert_eq!(sk["queued"], 0);
    assert_eq!(sk["refused"], 0);
    assert!(
        sk["procedures"].as_u64().unwrap() >= 3,
        "the near misses are seen as procedures: {sk}"
    );

    let drafts = skill_files(&env.repo.join("skills/drafts"));
    assert_eq!(drafts.len(), 1, "{drafts:?}");
    let (name, text) = &drafts[0];
    assert_valid_skill(name, text);
    assert_grounded(text, &stream);
    for cmd in [
        "cargo fmt --all",
        "cargo clippy --all-targets -- -D warnings",
        "git commit -am <arg>",
    ] {
        assert!(text.contains(&format!("`{cmd}`")), "{cmd} in\n{text}");
    }
    assert!(text.contains("`Edit` a `*.rs` file"), "{text}");
    for unrelated in ["deploy.sh", "npm", "venv", "WebFetch", "Grep"] {
        assert!(!text.contains(unrelated), "{unrelated} in\n{text}");
    }
    assert!(
        text.contains("dream-instances: \"4\"") && text.contains("dream-days: \"4\""),
        "{text}"
    );
    let (subject, body) = &env.commits()[0];
    assert!(
        subject.contains("skills: 1 drafted, 0 queued, 0 refused"),
        "{subject}"
    );
    assert!(
        body.contains(&format!("drafted    skills/drafts/{name}/SKILL.md")),
        "{body}"
    );
    assert!(body.contains("Dream-Stage: skills"), "{body}");

    // Inert: nothing active, nothing installed.
    assert!(!env.repo.join("skills/active").exists());
    assert!(!env.home.join("agent-skills").exists());
    let list = env.dream(&["skills", "list", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list[0]["name"], name.as_str());
    assert_eq!(list[0]["status"], "draft");

    // The morning digest lists it.
    let morning = env.dream(&["run", "--cycle", "morning", "--now", "2026-11-07T07:00:00Z"]);
    assert!(morning.status.success(), "{}", stderr(&morning));
    let digest = env.read("digests/2026-11-07-morning.md");
    assert!(digest.contains(&format!("`{name}`")), "{digest}");

    let before = commit_count(&env);
    let out = env.dream(&["skills", "promote", name]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(commit_count(&env), before + 1, "promote is one commit");
    assert!(env.commits()[0]
        .0
        .contains(&format!("promote skill {name}")));
    assert!(!env.repo.join("skills/drafts").join(name).exists());
    assert_eq!(
        &env.read(&format!("skills/active/{name}/SKILL.md")),
        text,
        "moved as it was"
    );
    let installed = env.home.join("agent-skills").join(name).join("SKILL.md");
    assert_eq!(
        &std::fs::read_to_string(&installed).unwrap(),
        text,
        "and installed"
    );
    assert!(stdout(&out).contains("installed:"), "{}", stdout(&out));

    // A second cycle sees the same procedure and leaves it alone.
    once_more(&env);
    let before = commit_count(&env);
    let report = env.run_cycle("2026-11-07T21:00:00Z");
    let sk = &report["skills"];
    assert_eq!(sk["recurring"], 1, "{sk}");
    assert_eq!(sk["drafted"], 0, "{sk}");
    assert_eq!(sk["covered"][0]["by"], name.as_str(), "{sk}");
    assert_eq!(sk["covered"][0]["status"], "active", "{sk}");
    assert!(skill_files(&env.repo.join("skills/drafts")).is_empty());
    assert_eq!(commit_count(&env), before, "nothing changed");
}

fn only(lines: &[String]) -> String {
    lines.concat()
}

#[test]
fn three_instances_on_one_day_or_two_on_two_days_are_not_enough() {
    for (what, stream) in [
        (
            "three on one day",
            only(&[
                checks(5, "a", "checks please", "one", 0),
                checks(5, "b", "checks please", "two", 0).replace("T10:", "T12:"),
                checks(5, "c", "checks please", "three", 0).replace("T10:", "T14:"),
            ]),
        ),
        (
            "two on two days",
            only(&[
                checks(4, "a", "checks please", "one", 0),
                checks(5, "b", "checks please", "two", 0),
            ]),
        ),
        (
            "four in one session",
            only(&[
                checks(3, "a", "checks please", "one", 0),
                checks(4, "a", "checks please", "two", 0),
                checks(5, "a", "checks please", "three", 0),
                checks(5, "a", "checks again", "four", 0).replace("T10:", "T12:"),
            ]),
        ),
    ] {
        let env = Env::new();
        env.init();
        env.write_inbox("agent.jsonl", &stream);
        let report = env.run_cycle(NOW);
        let sk = &report["skills"];
        assert_eq!(sk["procedures"], 1, "{what}: {sk}");
        assert_eq!(sk["recurring"], 0, "{what}: {sk}");
        assert_eq!(sk["drafted"], 0, "{what}");
        assert!(
            skill_files(&env.repo.join("skills/drafts")).is_empty(),
            "{what}"
        );
        assert!(
            !env.commits().iter().any(|(s, _)| s.contains("skills:")),
            "{what}"
        );
    }
}

#[test]
fn a_procedure_an_installed_skill_covers_is_not_drafted() {
    let env = Env::new();
    env.init();
    let dir = env.home.join(".claude/skills/ship-it");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: ship-it\ndescription: >\n  Checks and commits Rust changes. Use when asked to ship.\nlicense: MIT\n---\n\n\
         Edit what needs editing, then:\n\n```sh\ncargo fmt --all\ncargo clippy --all-targets\ncargo test\ngit commit -am \"...\"\n```\n",
    )
    .unwrap();
    env.write_inbox("agent.jsonl", &stream());
    let report = env.run_cycle(NOW);
    let sk = &report["skills"];
    assert_eq!(sk["recurring"], 1, "{sk}");
    assert_eq!(sk["drafted"], 0, "{sk}");
    assert_eq!(sk["covered"][0]["by"], "ship-it", "{sk}");
    assert_eq!(sk["covered"][0]["status"], "installed", "{sk}");
    assert!(skill_files(&env.repo.join("skills/drafts")).is_empty());
    let list = stdout(&env.dream(&["skills", "list"]));
    assert!(
        list.contains("installed") && list.contains("ship-it"),
        "{list}"
    );
}

#[test]
fn below_min_confidence_a_card_proposes_the_skill_and_promote_decides_it() {
    let env = Env::new();
    env.init();
    config(&env, "min_confidence", "0.95");
    env.write_inbox("agent.jsonl", &stream());
    let report = env.run_cycle(NOW);
    let sk = &report["skills"];
    assert_eq!(sk["queued"], 1, "{sk}");
    assert!(
        skill_files(&env.repo.join("skills/drafts")).is_empty(),
        "no draft below min_confidence"
    );
    let card_path = sk["decisions"][0]["target"].as_str().unwrap().to_string();
    let card = env.read(&card_path);
    assert!(card.contains("kind = \"skill\""), "{card}");
    assert!(
        card.contains("confidence 0.878 < skills.min_confidence 0.95"),
        "{card}"
    );
    let name = sk["decisions"][0]["name"].as_str().unwrap().to_string();

    // Status counts it apart from the fact cards.
    let status = env.dream(&["status", "--json"]);
    assert!(status.status.success(), "{}", stderr(&status));
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["skills_awaiting"], 1, "{status}");

    // The proposed document is valid as it stands.
    let show = env.dream(&["skills", "show", &name]);
    assert!(show.status.success());
    assert_valid_skill(&name, &stdout(&show));

    // A second cycle does not propose it again.
    once_more(&env);
    let report = env.run_cycle("2026-11-07T21:00:00Z");
    assert_eq!(
        report["skills"]["covered"][0]["status"], "proposed",
        "{}",
        report["skills"]
    );

    let before = commit_count(&env);
    let out = env.dream(&["skills", "promote", &name]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(commit_count(&env), before + 1);
    assert!(
        !env.repo.join(&card_path).exists(),
        "the card left the queue"
    );
    let decided = env.read(&card_path.replace("review/", "review/decided/"));
    assert!(decided.contains("verdict = \"accepted\""), "{decided}");
    assert_valid_skill(&name, &env.read(&format!("skills/active/{name}/SKILL.md")));
    assert!(
        stdout(&out).contains("not installed anywhere"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn discard_keeps_the_procedure_from_coming_back_and_says_why() {
    let env = Env::new();
    env.init();
    env.write_inbox("agent.jsonl", &stream());
    let report = env.run_cycle(NOW);
    let name = report["skills"]["decisions"][0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let out = env.dream(&[
        "skills",
        "discard",
        &name,
        "--reason",
        "we commit through CI",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (subject, body) = &env.commits()[0];
    assert_eq!(subject, &format!("dream: discard skill {name}"));
    assert!(body.contains("we commit through CI"), "{body}");
    assert!(env
        .repo
        .join(format!("skills/discarded/{name}/SKILL.md"))
        .is_file());
    once_more(&env);
    let report = env.run_cycle("2026-11-07T21:00:00Z");
    assert_eq!(report["skills"]["drafted"], 0);
    assert_eq!(report["skills"]["covered"][0]["status"], "discarded");
}

#[test]
fn skills_commands_refuse_clearly() {
    let env = Env::new();
    env.init();
    let out = env.dream(&["skills", "promote", "nothing-here"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no skill draft or proposal named \"nothing-here\""),
        "{}",
        stderr(&out)
    );
    let out = env.dream(&["skills", "promote", "../../etc"]);
    assert_eq!(out.status.code(), Some(2), "a name is never a path");
    assert!(stdout(&env.dream(&["skills", "list"])).starts_with("no skills yet"));

    env.write_inbox("agent.jsonl", &stream());
    let report = env.run_cycle(NOW);
    let name = report["skills"]["decisions"][0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    // A draft a person broke is not promoted.
    let path = env.repo.join(format!("skills/drafts/{name}/SKILL.md"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replacen(&format!("name: \"{name}\""), "name: \"Other Name\"", 1),
    )
    .unwrap();
    let before = commit_count(&env);
    let out = env.dream(&["skills", "promote", &name]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is not a valid skill"),
        "{}",
        stderr(&out)
    );
    assert_eq!(commit_count(&env), before);
    std::fs::write(&path, &text).unwrap();

    // The single-writer lock.
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .open(env.repo.join(".dream/lock"))
        .unwrap();
    lock.lock_exclusive().unwrap();
    let out = env.dream(&["skills", "promote", &name]);
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    FileExt::unlock(&lock).unwrap();
    assert!(path.is_file(), "nothing moved while locked");
}
