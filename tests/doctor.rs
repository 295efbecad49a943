//! `dream doctor`: on a fresh `dream init` it names what is missing (no schedule, nothing
//! feeding the memory, no cycle yet) and exits 0; on a configured repository every check
//! passes, the model endpoint answering one tiny JSON-mode call of the fake server; a
//! failing check (a refused key, no repository) exits 1 with its fix.

use std::path::Path;

use dream_testkit::fake_llm::{Answer, FakeLlm};
use serde_json::{json, Value};

use crate::util::{stderr, stdout, Env, SAMPLE_NOW};

/// `dream doctor --json` with no route to a user service manager; (exit code, result).
fn doctor(env: &Env, vars: &[(&str, String)], args: &[&str]) -> (i32, Value) {
    let mut c = env.cmd();
    c.env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("DBUS_SESSION_BUS_ADDRESS");
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = c
        .args(["doctor", "--json", "--now", SAMPLE_NOW])
        .args(args)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&out), stderr(&out)));
    (out.status.code().unwrap_or(-1), v)
}

/// name -> (status, detail, fix)
fn checks(v: &Value) -> Vec<(String, String, String, String)> {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
                c["detail"].as_str().unwrap().to_string(),
                c["fix"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn get(v: &Value, name: &str) -> (String, String, String) {
    checks(v)
        .into_iter()
        .find(|c| c.0 == name)
        .map(|c| (c.1, c.2, c.3))
        .unwrap_or_else(|| panic!("no {name} check in {v}"))
}

/// A binary the installed units may run in a test, wherever the checkout lives: the test's
/// own build is under the checkout, and a checkout under /tmp is a binary the units'
/// `PrivateTmp=true` hides, which the doctor rightly warns of. Any binary that exists
/// outside the temporary folders stands in for an installed dream (the doctor checks the
/// path, it does not run it).
const INSTALLED: &str = "/bin/sh";

/// Make the installed systemd units run `to` instead of the binary that installed them.
fn units_run(env: &Env, to: &str) {
    let units = env.home.join(".config/systemd/user");
    let bin = assert_cmd::cargo::cargo_bin("dream").display().to_string();
    for c in ["morning", "evening"] {
        let path = units.join(format!("dream-{c}.service"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(&bin), "{text}");
        std::fs::write(&path, text.replace(&bin, to)).unwrap();
    }
}

#[test]
fn on_a_fresh_init_the_doctor_names_what_is_missing() {
    let env = Env::new();
    env.init();
    let (code, v) = doctor(&env, &[], &[]);
    assert_eq!(code, 0, "warnings are not failures: {v}");
    let warned: Vec<String> = checks(&v)
        .into_iter()
        .filter(|c| c.1 == "warn")
        .map(|c| c.0)
        .collect();
    assert_eq!(warned, ["sources", "schedule", "last cycle"], "{v}");
    let (_, detail, fix) = get(&v, "schedule");
    assert!(
        detail.starts_with("no timer runs this repository"),
        "{detail}"
    );
    assert!(fix.starts_with("dream schedule install --repo "), "{fix}");
    let (_, detail, fix) = get(&v, "sources");
    assert!(
        detail.starts_with("nothing feeds this memory yet"),
        "{detail}"
    );
    assert!(fix.contains("[[inbox.sources]]"), "{fix}");
    assert_eq!(
        get(&v, "model").0,
        "ok",
        "the offline provider needs no endpoint"
    );
    assert_eq!(get(&v, "embedder").0, "ok");
    assert_eq!(v["fail"], 0);

    // The same as a table a person reads.
    let out = env
        .cmd()
        .args(["doctor", "--now", SAMPLE_NOW])
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("  warn  schedule     no timer runs this repository")
            && text.contains("               fix: dream schedule install --repo ")
            && text.contains(" ok, 3 warn, 0 fail"),
        "{text}"
    );
}

#[test]
fn on_a_configured_repository_every_check_passes_and_the_model_is_called_once_in_json_mode() {
    let env = Env::new();
    env.init();
    // A git identity, a transcript source, a schedule (enabled the way systemctl links it),
    // a model, and a cycle that ran.
    let repo = git2::Repository::open(&env.repo).unwrap();
    let mut cfg = repo.config().unwrap();
    cfg.set_str("user.name", "Ana").unwrap();
    cfg.set_str("user.email", "ana@example.com").unwrap();
    let agent = env.root.join("agent-log");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("a.jsonl"),
        crate::util::event("2026-11-06T09:00:00Z", "s1", "I live in Lisbon."),
    )
    .unwrap();
    let toml = env.read("dream.toml")
        + &format!(
            "\n[[inbox.sources]]\nformat = \"jsonl\"\npath = \"{}\"\n",
            agent.display()
        );
    std::fs::write(env.repo.join("dream.toml"), toml).unwrap();
    let out = env
        .cmd()
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .args(["schedule", "install", "--systemd", "--no-enable"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    units_run(&env, INSTALLED);
    let units = env.home.join(".config/systemd/user");
    std::fs::create_dir_all(units.join("timers.target.wants")).unwrap();
    for c in ["morning", "evening"] {
        std::os::unix::fs::symlink(
            format!("../dream-{c}.timer"),
            units.join(format!("timers.target.wants/dream-{c}.timer")),
        )
        .unwrap();
    }
    let fake = FakeLlm::start();
    fake.on("doctor", |_| Answer::json(json!({"ok": true})));
    let vars = vec![
        ("DREAM_LLM_PROVIDER", "openai".to_string()),
        ("DREAM_LLM_BASE_URL", fake.base_url()),
        ("DREAM_LLM_MODEL", "fake-model".to_string()),
    ];
    let out = env.dream(&["run", "--now", "2026-11-06T20:00:00Z"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (code, v) = doctor(&env, &vars, &[]);
    assert_eq!(code, 0, "{v}");
    let not_ok: Vec<_> = checks(&v).into_iter().filter(|c| c.1 != "ok").collect();
    assert!(not_ok.is_empty(), "every check passes: {not_ok:?}");
    assert!(get(&v, "git")
        .1
        .contains("commits as Ana <ana@example.com>"));
    assert!(get(&v, "source jsonl").1.ends_with(": 1 files"), "{v}");
    assert!(
        get(&v, "schedule")
            .1
            .starts_with("dream-morning.timer, dream-evening.timer: enabled"),
        "{v}"
    );
    assert!(get(&v, "model").1.contains("answered in JSON mode"), "{v}");
    let calls = fake.calls("doctor");
    assert_eq!(calls.len(), 1, "one tiny call");
    assert_eq!(calls[0].body["response_format"]["type"], "json_object");
    assert!(calls[0].body["max_tokens"].as_u64().unwrap() <= 32);

    // --offline calls nothing.
    let (code, v) = doctor(&env, &vars, &["--offline"]);
    assert_eq!(code, 0);
    assert_eq!(get(&v, "model").0, "skip");
    assert_eq!(fake.calls("doctor").len(), 1);

    // Not enabled any more: the schedule check says how to enable it.
    std::fs::remove_file(units.join("timers.target.wants/dream-evening.timer")).unwrap();
    let (code, v) = doctor(&env, &vars, &["--offline"]);
    assert_eq!(code, 0);
    let (status, detail, fix) = get(&v, "schedule");
    assert_eq!(status, "warn");
    assert!(
        detail.contains("dream-evening.timer (not enabled)"),
        "{detail}"
    );
    assert!(fix.contains("systemctl --user enable --now"), "{fix}");
}

#[test]
fn a_failing_check_exits_1_with_its_fix() {
    let env = Env::new();
    env.init();
    let fake = FakeLlm::start();
    fake.require_key("sk-right");
    let vars = vec![
        ("DREAM_LLM_PROVIDER", "openai".to_string()),
        ("DREAM_LLM_BASE_URL", fake.base_url()),
        ("DREAM_LLM_MODEL", "fake-model".to_string()),
        ("OPENAI_API_KEY", "sk-wrong".to_string()),
    ];
    let (code, v) = doctor(&env, &vars, &[]);
    assert_eq!(code, 1, "{v}");
    let (status, _, fix) = get(&v, "model");
    assert_eq!(status, "fail");
    assert!(fix.contains("OPENAI_API_KEY"), "{fix}");
    assert!(!v.to_string().contains("sk-wrong"), "no key in the output");

    // A missing source is a warning; no repository at all is a failure.
    let toml = env.read("dream.toml")
        + "\n[[inbox.sources]]\nformat = \"codex\"\npath = \"~/.codex/sessions\"\n";
    std::fs::write(env.repo.join("dream.toml"), toml).unwrap();
    let (_, v) = doctor(&env, &[], &[]);
    let (status, detail, _) = get(&v, "source codex");
    assert_eq!(status, "warn");
    assert!(detail.contains("is not there (yet)"), "{detail}");
    let mut c = env.cmd();
    let out = c
        .args(["doctor", "--json", "--repo"])
        .arg(Path::new(&env.root).join("nowhere"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(get(&v, "repository").0, "fail");
}

#[test]
fn the_doctor_says_why_the_timers_are_not_running_and_warns_of_a_binary_under_tmp() {
    let env = Env::new();
    env.init();
    let install = env
        .cmd()
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .args(["schedule", "install", "--systemd", "--no-enable"])
        .output()
        .unwrap();
    assert!(install.status.success(), "{}", stderr(&install));
    units_run(&env, INSTALLED);
    // Not enabled, and systemctl cannot be asked here: the doctor says what it answered.
    let (_, v) = doctor(&env, &[], &[]);
    let (status, detail, _) = get(&v, "schedule");
    assert_eq!(status, "warn", "{v}");
    assert!(
        detail.starts_with("installed but not running: dream-morning.timer (not enabled)")
            && detail.contains("; systemctl could not be asked: "),
        "{detail}"
    );

    // A binary under /tmp, which the units' PrivateTmp=true hides from them.
    let tmp = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    let fake = tmp.path().join("dream");
    std::fs::write(&fake, "").unwrap();
    let units = env.home.join(".config/systemd/user");
    for c in ["morning", "evening"] {
        let path = units.join(format!("dream-{c}.service"));
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace(INSTALLED, &fake.display().to_string())).unwrap();
    }
    let (_, v) = doctor(&env, &[], &[]);
    let (status, detail, fix) = get(&v, "schedule");
    assert_eq!(status, "warn", "{v}");
    assert!(
        detail.contains(&format!("the units run {}", fake.display()))
            && detail.contains("PrivateTmp=true hides"),
        "{detail}"
    );
    assert!(fix.contains("outside /tmp"), "{fix}");
}
