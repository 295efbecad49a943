//! Agents beyond Claude Code and Codex, and the Claude Code plugin (issue 30, parts 3-4).
//!
//! `dream hooks install gemini|opencode|copilot` keeps a managed block of the context in
//! the instructions file each agent reads at every session (GEMINI.md, opencode's global
//! AGENTS.md, Copilot CLI's copilot-instructions.md), adds the agent's sessions as an
//! `[[inbox.sources]]` entry, is refreshed by every cycle, and uninstall gives the file
//! back byte for byte. The repository's Claude Code plugin files are checked against
//! Claude Code's documented plugin layout: what `/plugin install` reads must parse, carry
//! the required fields, and run `dream`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{stderr, stdout, Env, SAMPLE_NOW};

fn repo_with_facts() -> Env {
    let env = Env::new();
    env.init();
    env.add_sample_events();
    env.run_cycle(SAMPLE_NOW);
    assert!(env.facts().len() >= 4, "{:?}", env.facts());
    env
}

/// The instructions file of each agent under the test's HOME, and the source it adds.
fn cases(home: &Path) -> Vec<(&'static str, PathBuf, &'static str)> {
    vec![
        (
            "gemini",
            home.join(".gemini/GEMINI.md"),
            "format = \"gemini\"\npath = \"~/.gemini/tmp\"",
        ),
        (
            "opencode",
            home.join(".config/opencode/AGENTS.md"),
            "format = \"opencode\"\npath = \"~/.local/share/opencode/opencode.db\"",
        ),
        (
            "copilot",
            home.join(".copilot/copilot-instructions.md"),
            "format = \"copilot\"\npath = \"~/.copilot/session-state\"",
        ),
    ]
}

#[test]
fn each_agent_gets_a_refreshed_block_and_uninstall_restores_its_file_byte_for_byte() {
    let env = repo_with_facts();
    for (agent, file, source) in cases(&env.home) {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let original = format!("# My {agent} rules\n\nPrefer small diffs.\n");
        std::fs::write(&file, &original).unwrap();

        let dry = env.dream(&["hooks", "install", agent, "--dry-run"]);
        assert!(dry.status.success(), "{agent}: {}", stderr(&dry));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), original);

        let out = env.dream(&["hooks", "install", agent, "--now", SAMPLE_NOW]);
        assert!(out.status.success(), "{agent}: {}", stderr(&out));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with(&original), "{agent}: {text}");
        assert!(
            text.contains("<!-- dream:begin repo=")
                && text.contains(&format!("dream hooks uninstall {agent}"))
                && text.contains("I live in Lisbon"),
            "{agent}: {text}"
        );
        assert!(env.read("dream.toml").contains(source), "{agent}");
        // Installing twice changes nothing.
        assert!(env.dream(&["hooks", "install", agent]).status.success());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text, "{agent}");
        let status = stdout(&env.dream(&["hooks", "status", agent]));
        assert!(
            status.contains(&format!("{agent}: installed (block in")),
            "{status}"
        );
    }

    // A cycle that learns something new refreshes every block.
    let day = |d: u32, s: &str| {
        crate::util::event(
            &format!("2026-11-{d:02}T10:00:00Z"),
            s,
            "I keep my notes in Obsidian.",
        )
    };
    env.write_inbox(
        "more.jsonl",
        &[day(7, "n1"), day(8, "n2"), day(9, "n3")].concat(),
    );
    env.run_cycle("2026-11-09T21:00:00Z");
    for (agent, file, _) in cases(&env.home) {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.contains("I keep my notes in Obsidian."),
            "{agent}: {text}"
        );
    }

    for (agent, file, source) in cases(&env.home) {
        let out = env.dream(&["hooks", "uninstall", agent]);
        assert!(out.status.success(), "{agent}: {}", stderr(&out));
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            format!("# My {agent} rules\n\nPrefer small diffs.\n"),
            "{agent}"
        );
        assert!(!env.read("dream.toml").contains(source), "{agent}");
    }
}

#[test]
fn install_creates_a_missing_instructions_file_and_uninstall_removes_it() {
    let env = repo_with_facts();
    for (agent, file, _) in cases(&env.home) {
        assert!(!file.exists());
        let out = env.dream(&["hooks", "install", agent]);
        assert!(out.status.success(), "{agent}: {}", stderr(&out));
        assert!(std::fs::read_to_string(&file)
            .unwrap()
            .contains("<!-- dream:begin"));
        assert!(env.dream(&["hooks", "uninstall", agent]).status.success());
        assert!(!file.exists(), "{agent}: the file dream created is gone");
    }
    // The agents' own homes are honoured.
    env.set_var("GEMINI_CLI_HOME", env.home.join("g").to_str().unwrap());
    env.set_var("COPILOT_HOME", env.home.join("cp").to_str().unwrap());
    env.set_var("XDG_CONFIG_HOME", env.home.join("xdg").to_str().unwrap());
    for (agent, file) in [
        ("gemini", env.home.join("g/.gemini/GEMINI.md")),
        ("copilot", env.home.join("cp/copilot-instructions.md")),
        ("opencode", env.home.join("xdg/opencode/AGENTS.md")),
    ] {
        assert!(env.dream(&["hooks", "install", agent]).status.success());
        assert!(file.exists(), "{agent}: {}", file.display());
    }
}

fn repo_file(rel: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} is part of the plugin: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{rel} is not valid JSON: {e}"))
}

/// A command line's program and arguments.
fn words(command: &str) -> Vec<String> {
    shell_words::split(command).unwrap()
}

#[test]
fn the_claude_code_plugin_follows_the_documented_layout_and_runs_dream() {
    // .claude-plugin/plugin.json: a kebab-case name (the only required field), a version.
    let manifest = repo_file(".claude-plugin/plugin.json");
    let name = manifest["name"].as_str().expect("plugin.json needs a name");
    assert!(
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
        "{name}"
    );
    assert_eq!(
        manifest["version"].as_str(),
        Some(env!("CARGO_PKG_VERSION")),
        "the plugin's version is dream's"
    );
    assert!(manifest["description"].is_string());
    // Components live at the plugin's root, never inside .claude-plugin/.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(".claude-plugin");
    let mut inside: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    inside.sort();
    assert_eq!(inside, vec!["marketplace.json", "plugin.json"]);

    // The marketplace that lets `/plugin marketplace add` + `/plugin install dream@dream`
    // take the plugin straight from this repository.
    let market = repo_file(".claude-plugin/marketplace.json");
    assert!(market["name"].is_string() && market["owner"]["name"].is_string());
    let plugins = market["plugins"].as_array().unwrap();
    assert_eq!(plugins.len(), 1);
    assert_eq!(plugins[0]["name"], manifest["name"]);
    assert_eq!(plugins[0]["source"], "./");

    // hooks/hooks.json: a SessionStart hook (no matcher: start, resume, /clear, compact)
    // that runs `dream context --hook claude-code`.
    let hooks = repo_file("hooks/hooks.json");
    let groups = hooks["hooks"]["SessionStart"].as_array().unwrap();
    assert_eq!(groups.len(), 1);
    assert!(groups[0].get("matcher").is_none());
    let hook = &groups[0]["hooks"][0];
    assert_eq!(hook["type"], "command");
    let command = words(hook["command"].as_str().unwrap());
    assert_eq!(command[0], "dream");
    assert!(
        command
            .join(" ")
            .ends_with(dream_core::recall::hooks::CLAUDE_HOOK_MARK),
        "{command:?}"
    );
    assert!(hook["timeout"].as_u64().is_some_and(|t| t <= 60));

    // .mcp.json: `dream mcp` as the plugin's MCP server.
    let mcp = repo_file(".mcp.json");
    let servers = mcp["mcpServers"].as_object().unwrap();
    let server = &servers["dream"];
    assert_eq!(server["command"], "dream");
    assert_eq!(server["args"], serde_json::json!(["mcp"]));

    // And the commands are ones this dream accepts.
    let env = Env::new();
    env.init();
    let out = env.dream(&command[1..].iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("<!-- dream:recalled"),
        "{}",
        stdout(&out)
    );
    let help = env.dream(&["mcp", "--help"]);
    assert!(help.status.success(), "{}", stderr(&help));
}

#[test]
fn codex_can_take_a_session_start_hook_that_prints_the_json_codex_reads() {
    let env = repo_with_facts();
    let hooks = env.home.join(".codex/hooks.json");
    let out = env.dream(&["hooks", "install", "codex", "--method", "hook"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("trust"), "{}", stdout(&out));
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&hooks).unwrap()).unwrap();
    let keys: Vec<&String> = file.as_object().unwrap().keys().collect();
    assert_eq!(keys, vec!["hooks"], "Codex refuses other root fields");
    let hook = &file["hooks"]["SessionStart"][0]["hooks"][0];
    assert_eq!(hook["type"], "command");
    let command = words(hook["command"].as_str().unwrap());
    assert!(
        command
            .join(" ")
            .ends_with(dream_core::recall::hooks::CODEX_HOOK_MARK),
        "{command:?}"
    );
    assert!(
        !env.home.join(".codex/AGENTS.md").exists(),
        "the hook, not the block as well: the context once"
    );
    // What the hook prints is Codex's SessionStart output, carrying the context.
    let run = std::process::Command::new(&command[0])
        .args(&command[1..])
        .env("HOME", &env.home)
        .output()
        .unwrap();
    assert!(run.status.success());
    let printed: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(
        printed["hookSpecificOutput"]["hookEventName"],
        "SessionStart"
    );
    let context = printed["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.starts_with("<!-- dream:recalled") && context.contains("I live in Lisbon"),
        "{context}"
    );
    // A broken repository: still valid output, saying memory is unavailable.
    let broken = std::process::Command::new(&command[0])
        .args(["--repo", "/no/such/repo", "context", "--hook", "codex"])
        .env("HOME", &env.home)
        .output()
        .unwrap();
    assert!(broken.status.success());
    let printed: Value = serde_json::from_slice(&broken.stdout).unwrap();
    assert!(printed["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .contains("unavailable"));

    let status = stdout(&env.dream(&["hooks", "status", "codex"]));
    assert!(status.contains("codex: installed (hook in"), "{status}");
    assert!(env.dream(&["hooks", "uninstall", "codex"]).status.success());
    assert!(!hooks.exists(), "the file dream created is gone");

    let wrong = env.dream(&["hooks", "install", "codex", "--method", "import"]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(
        stderr(&wrong).contains("--method import does not apply to codex"),
        "{}",
        stderr(&wrong)
    );
    let wrong = env.dream(&["hooks", "install", "gemini", "--method", "hook"]);
    assert_eq!(wrong.status.code(), Some(2));
}

/// Instructions kept with the person's dotfiles (the agent's file a symbolic link into
/// another folder): install writes the file the link points to, the link stays a link, and
/// uninstall gives that file back byte for byte (issue 46, item 11).
#[test]
#[cfg(unix)]
fn an_instructions_file_that_is_a_symlink_stays_a_link() {
    let env = repo_with_facts();
    let dotfiles = env.home.join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let real = dotfiles.join("GEMINI.md");
    let original = "# My gemini rules\n\nPrefer small diffs.\n";
    std::fs::write(&real, original).unwrap();
    let link = env.home.join(".gemini/GEMINI.md");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink("../dotfiles/GEMINI.md", &link).unwrap();

    let out = env.dream(&["hooks", "install", "gemini", "--now", SAMPLE_NOW]);
    assert!(out.status.success(), "{}", stderr(&out));
    let is_link = |p: &Path| {
        std::fs::symlink_metadata(p)
            .unwrap()
            .file_type()
            .is_symlink()
    };
    assert!(is_link(&link), "install replaced the link with a file");
    let text = std::fs::read_to_string(&real).unwrap();
    assert!(
        text.starts_with(original) && text.contains("I live in Lisbon"),
        "{text}"
    );

    let out = env.dream(&["hooks", "uninstall", "gemini"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(is_link(&link), "uninstall replaced the link with a file");
    assert_eq!(std::fs::read_to_string(&real).unwrap(), original);
}
