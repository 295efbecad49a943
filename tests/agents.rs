//! The agent side: `dream context` within its budget, `dream hooks` on real settings files
//! (other hooks already there), the loop that must never echo (context injected, the
//! transcript ingested, the injected facts gain nothing), `dream mcp` through a real MCP
//! client, and the unused-facts policy that `dream verify` accepts.

use std::path::Path;

use serde_json::{json, Value};

use crate::util::{stderr, stdout, Env, SAMPLE_NOW};
use dream_core::llm::budget::estimate_tokens;
use dream_testkit::fake_llm::{Answer, FakeLlm};

const MARKER_LINE: &str = "<!-- dream:recalled";

/// A repository holding the sample stream's facts after one evening cycle.
fn repo_with_facts() -> Env {
    let env = Env::new();
    env.init();
    env.add_sample_events();
    // Two things said once, specific: the episodes (what the sample says twice is a card).
    env.write_inbox(
        "singles.jsonl",
        &(crate::util::event(
            "2026-11-03T11:00:00Z",
            "2026-11-03-x",
            "My dentist appointment moved to Thursday 19 November.",
        ) + &crate::util::event(
            "2026-11-04T10:00:00Z",
            "2026-11-04-x",
            "I booked the team offsite in Porto for 12 March.",
        )),
    );
    env.run_cycle(SAMPLE_NOW);
    assert!(env.facts().len() >= 4, "{:?}", env.facts());
    env
}

/// Claude Code settings a person already has: other hooks, a SessionStart hook of their
/// own, permissions, 2-space indentation as Claude Code writes it.
const SETTINGS: &str = r#"{
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "~/bin/guard.sh"
          }
        ]
      }
    ],
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [
          {
            "type": "command",
            "command": "bd prime"
          }
        ]
      }
    ]
  },
  "permissions": {
    "allow": [
      "Bash(cargo test:*)"
    ]
  }
}
"#;

fn fact_id(env: &Env, words: &str) -> String {
    let line = env
        .facts()
        .into_iter()
        .find(|l| l.contains(words))
        .unwrap_or_else(|| panic!("no fact with {words:?}: {:?}", env.facts()));
    let at = line.find("id=").unwrap() + 3;
    line[at..].split_whitespace().next().unwrap().to_string()
}

fn our_command(settings: &str) -> String {
    let v: Value = serde_json::from_str(settings).unwrap();
    v["hooks"]["SessionStart"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["hooks"].as_array().unwrap().clone())
        .filter_map(|h| h["command"].as_str().map(str::to_string))
        .find(|c| c.contains("context --hook claude-code"))
        .expect("dream's hook is installed")
}

/// Run a hook command the way Claude Code does (through a shell), in the test's HOME.
fn run_hook(env: &Env, command: &str) -> String {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("HOME", &env.home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("DREAM_REPO")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn context_is_ranked_within_its_budget_and_says_what_it_left_out() {
    let env = repo_with_facts();
    let out = env.dream(&["context", "--now", SAMPLE_NOW]);
    assert!(out.status.success());
    let md = stdout(&out);
    assert!(md.starts_with(MARKER_LINE), "{md}");
    assert!(md.contains("## Durable facts"), "{md}");
    assert!(estimate_tokens(&md) <= 2000);
    // What was said once is an episode, shown dated after the durable facts; what the
    // sample says twice waits for the person as a card.
    assert!(
        md.contains(
            "## Recent episodes\n- 4 November 2026: I booked the team offsite in Porto for 12 March. ["
        ) && md.contains("- 3 November 2026: My dentist appointment moved to Thursday 19 November. ["),
        "{md}"
    );
    assert!(
        md.contains("Waiting for the person: 2 review cards"),
        "{md}"
    );

    let small = stdout(&env.dream(&["context", "--budget", "300", "--now", SAMPLE_NOW]));
    assert!(
        estimate_tokens(&small) <= 300,
        "{}",
        estimate_tokens(&small)
    );
    assert!(
        small.contains("more episodes left out to stay within 300 tokens"),
        "{small}"
    );

    let json: Value = serde_json::from_slice(
        &env.dream(&["context", "--format", "json", "--now", SAMPLE_NOW])
            .stdout,
    )
    .unwrap();
    assert_eq!(json["marker"], "dream:recalled");
    assert_eq!(json["facts"].as_array().unwrap().len(), env.facts().len());
    // Durable facts by rank; the episodes after them, last seen first.
    let ranks: Vec<f64> = json["facts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["block"] != "episodes")
        .map(|f| f["rank"].as_f64().unwrap())
        .collect();
    assert!(ranks.windows(2).all(|w| w[0] >= w[1]), "ranked: {ranks:?}");

    let q: Value = serde_json::from_slice(
        &env.dream(&[
            "context",
            "--format",
            "json",
            "--query",
            "TypeScript projects",
            "--now",
            SAMPLE_NOW,
        ])
        .stdout,
    )
    .unwrap();
    assert!(
        q["facts"][0]["text"]
            .as_str()
            .unwrap()
            .contains("TypeScript"),
        "{q}"
    );

    let all = stdout(&env.dream(&["context", "--all", "--now", SAMPLE_NOW]));
    assert!(!all.contains("left out"));

    let bad = env.dream(&["context", "--budget", "10"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("at least 300"));

    // The cycle wrote the same view to CONTEXT.md and committed it; no block parses it.
    let file = env.read("CONTEXT.md");
    assert!(file.starts_with(MARKER_LINE), "{file}");
    let repo = git2::Repository::open(&env.repo).unwrap();
    let head = repo.head().unwrap().peel_to_tree().unwrap();
    let blob = head
        .get_path(Path::new("CONTEXT.md"))
        .unwrap()
        .to_object(&repo)
        .unwrap();
    assert_eq!(
        blob.as_blob().unwrap().content(),
        file.as_bytes(),
        "committed with the cycle"
    );
    // A second cycle with nothing new changes nothing, the context file included.
    let before = env.commits().len();
    env.run_cycle("2026-11-07T21:00:00Z");
    assert_eq!(env.commits().len(), before);
}

#[test]
fn claude_code_hook_install_keeps_other_hooks_and_uninstall_restores_the_bytes() {
    let env = repo_with_facts();
    let settings = env.home.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, SETTINGS).unwrap();
    let toml_before = env.read("dream.toml");

    // --dry-run prints the change and writes nothing.
    let dry = env.dream(&["hooks", "install", "claude-code", "--dry-run"]);
    assert!(dry.status.success());
    assert!(
        stdout(&dry).contains("+             \"command\": "),
        "{}",
        stdout(&dry)
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), SETTINGS);
    assert_eq!(env.read("dream.toml"), toml_before);

    let out = env.dream(&["hooks", "install", "claude-code"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let installed = std::fs::read_to_string(&settings).unwrap();
    let v: Value = serde_json::from_str(&installed).unwrap();
    assert_eq!(v["model"], "opus");
    assert_eq!(v["permissions"]["allow"][0], "Bash(cargo test:*)");
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "~/bin/guard.sh"
    );
    assert_eq!(
        v["hooks"]["SessionStart"][0]["hooks"][0]["command"],
        "bd prime"
    );
    assert_eq!(v["hooks"]["SessionStart"].as_array().unwrap().len(), 2);
    assert_eq!(
        std::fs::read_to_string(env.home.join(".claude/settings.json.dream-backup")).unwrap(),
        SETTINGS
    );
    // dream.toml now reads Claude Code's transcripts, committed.
    let toml_after = env.read("dream.toml");
    assert!(
        toml_after.contains("format = \"claude-code\"\npath = \"~/.claude/projects\""),
        "{toml_after}"
    );
    assert!(env.commits()[0]
        .0
        .contains("dream hooks install claude-code"));

    // Idempotent.
    assert!(env
        .dream(&["hooks", "install", "claude-code"])
        .status
        .success());
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), installed);
    assert_eq!(env.read("dream.toml"), toml_after);

    // The hook's command prints a context within its budget.
    let printed = run_hook(&env, &our_command(&installed));
    assert!(printed.starts_with(MARKER_LINE), "{printed}");
    assert!(estimate_tokens(&printed) <= 2000);
    assert!(printed.contains("I live in Lisbon"), "{printed}");

    let status = stdout(&env.dream(&["hooks", "status"]));
    assert!(
        status.contains("claude-code: installed (hook in"),
        "{status}"
    );
    assert!(status.contains("codex: not installed"), "{status}");

    // Uninstall gives back the settings byte for byte and takes out the source entry.
    let out = env.dream(&["hooks", "uninstall", "claude-code"]);
    assert!(out.status.success());
    assert!(
        stdout(&out).contains("restored byte for byte"),
        "{}",
        stdout(&out)
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), SETTINGS);
    assert!(!env.home.join(".claude/settings.json.dream-backup").exists());
    assert_eq!(env.read("dream.toml"), toml_before);
    assert!(stdout(&env.dream(&["hooks", "status", "claude-code"])).contains("not installed"));
}

#[test]
fn a_settings_file_changed_since_install_keeps_the_change_and_a_broken_one_is_refused() {
    let env = repo_with_facts();
    let settings = env.home.join(".claude/settings.json");
    // No settings yet: install creates the file, uninstall removes it.
    assert!(env
        .dream(&["hooks", "install", "claude-code"])
        .status
        .success());
    assert!(our_command(&std::fs::read_to_string(&settings).unwrap()).contains("--repo"));
    assert!(env
        .dream(&["hooks", "uninstall", "claude-code"])
        .status
        .success());
    assert!(!settings.exists());

    // Changed after install (Claude Code wrote a new key): only dream's part goes.
    std::fs::write(&settings, SETTINGS).unwrap();
    assert!(env
        .dream(&["hooks", "install", "claude-code"])
        .status
        .success());
    let installed = std::fs::read_to_string(&settings).unwrap();
    let changed = installed.replacen(
        "\"model\": \"opus\",",
        "\"model\": \"opus\",\n  \"theme\": \"dark\",",
        1,
    );
    std::fs::write(&settings, &changed).unwrap();
    let out = env.dream(&["hooks", "uninstall", "claude-code"]);
    assert!(
        stdout(&out).contains("changed since install"),
        "{}",
        stdout(&out)
    );
    let after = std::fs::read_to_string(&settings).unwrap();
    assert_eq!(
        after,
        SETTINGS.replacen(
            "\"model\": \"opus\",",
            "\"model\": \"opus\",\n  \"theme\": \"dark\",",
            1
        )
    );

    // Not JSON: refused, nothing written.
    std::fs::write(&settings, "{ not json").unwrap();
    let out = env.dream(&["hooks", "install", "claude-code"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid JSON"));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "{ not json");
}

#[test]
fn the_import_method_adds_an_at_import_of_the_context_file() {
    let env = repo_with_facts();
    let claude_md = env.home.join(".claude/CLAUDE.md");
    std::fs::create_dir_all(claude_md.parent().unwrap()).unwrap();
    std::fs::write(&claude_md, "# My rules\n\nUse tabs.\n").unwrap();
    assert!(env
        .dream(&["hooks", "install", "claude-code", "--method", "import"])
        .status
        .success());
    let text = std::fs::read_to_string(&claude_md).unwrap();
    let repo = env.repo.canonicalize().unwrap();
    assert!(
        text.contains(&format!("@{}/CONTEXT.md\n", repo.display())),
        "{text}"
    );
    assert!(
        text.starts_with("# My rules\n\nUse tabs.\n\n<!-- dream:begin"),
        "{text}"
    );
    assert!(env
        .dream(&["hooks", "uninstall", "claude-code"])
        .status
        .success());
    assert_eq!(
        std::fs::read_to_string(&claude_md).unwrap(),
        "# My rules\n\nUse tabs.\n"
    );
}

#[test]
fn the_codex_block_is_refreshed_by_each_cycle_and_removed_byte_for_byte() {
    let env = repo_with_facts();
    let agents = env.home.join(".codex/AGENTS.md");
    std::fs::create_dir_all(agents.parent().unwrap()).unwrap();
    let original = "Always run cargo fmt.";
    std::fs::write(&agents, original).unwrap();
    assert!(env
        .dream(&["hooks", "install", "codex", "--now", SAMPLE_NOW])
        .status
        .success());
    let text = std::fs::read_to_string(&agents).unwrap();
    assert!(
        text.starts_with("Always run cargo fmt.\n<!-- dream:begin repo="),
        "{text}"
    );
    assert!(
        text.contains(MARKER_LINE) && text.contains("I live in Lisbon"),
        "{text}"
    );
    assert!(env
        .read("dream.toml")
        .contains("format = \"codex\"\npath = \"~/.codex/sessions\""));

    // A cycle that learns something new refreshes the block.
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
    assert!(
        env.facts().iter().any(|f| f.contains("Obsidian")),
        "{:?}",
        env.facts()
    );
    let refreshed = std::fs::read_to_string(&agents).unwrap();
    assert!(
        refreshed.contains("I keep my notes in Obsidian."),
        "{refreshed}"
    );
    assert!(refreshed.starts_with("Always run cargo fmt.\n<!-- dream:begin repo="));

    assert!(env.dream(&["hooks", "uninstall", "codex"]).status.success());
    assert_eq!(std::fs::read_to_string(&agents).unwrap(), original);
}

/// A model that re-extracts memory lines it is shown ("- text [f_id]"), as an echo-prone
/// extractor does: it proposes each as a fact, citing the event that held it.
fn echo_prone_reflect(call: &dream_testkit::fake_llm::Call) -> Answer {
    let mut candidates = Vec::new();
    for e in call.events() {
        for line in e.text.lines() {
            let Some(rest) = line.strip_prefix("- ") else {
                continue;
            };
            let Some(at) = rest.rfind(" [f_") else {
                continue;
            };
            candidates.push(json!({
                "text": &rest[..at],
                "category": "identity",
                "block": "human",
                "supportingEventIds": [e.id],
                "confidence": 0.95,
                "reason": "stated in the session",
            }));
        }
    }
    Answer::json(json!({ "candidates": candidates }))
}

fn transcript_line(v: Value) -> String {
    v.to_string() + "\n"
}

#[test]
fn the_injected_context_never_supports_itself() {
    let env = repo_with_facts();
    assert!(env
        .dream(&["hooks", "install", "claude-code"])
        .status
        .success());
    let settings = std::fs::read_to_string(env.home.join(".claude/settings.json")).unwrap();
    let injected = run_hook(&env, &our_command(&settings));
    let lisbon = fact_id(&env, "Lisbon");
    assert!(injected.contains(&lisbon));
    let context_file = env.read("CONTEXT.md");

    // A session as Claude Code records it: the SessionStart hook's output, the agent
    // reading CONTEXT.md and running `dream context` (two restatements of every fact that
    // cluster together), and the agent citing a fact's id.
    let base = |uuid: &str, ts: &str| json!({"uuid": uuid, "sessionId": "sess-echo", "timestamp": ts, "cwd": "/work/proj", "gitBranch": "main"});
    let with = |mut b: Value, extra: Value| {
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        transcript_line(b)
    };
    let lines = [
        with(base("u1", "2026-11-07T09:00:00Z"), json!({"type": "attachment", "attachment": {"type": "hook_success", "hookName": "SessionStart:startup", "hookEvent": "SessionStart", "stdout": injected, "content": "", "exitCode": 0}})),
        with(base("u2", "2026-11-07T09:00:00Z"), json!({"type": "attachment", "attachment": {"type": "hook_additional_context", "hookName": "SessionStart", "hookEvent": "SessionStart", "content": [injected]}})),
        with(base("u3", "2026-11-07T09:01:00Z"), json!({"type": "user", "message": {"role": "user", "content": "Please tidy up the build scripts."}})),
        with(base("u4", "2026-11-07T09:02:00Z"), json!({"type": "assistant", "message": {"model": "claude-x", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cat ~/memory-repo/CONTEXT.md"}}]}})),
        with(base("u5", "2026-11-07T09:02:01Z"), json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": context_file}]}})),
        with(base("u5b", "2026-11-07T09:02:30Z"), json!({"type": "assistant", "message": {"model": "claude-x", "content": [{"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "dream context"}}]}})),
        with(base("u5c", "2026-11-07T09:02:31Z"), json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": injected}]}})),
        with(base("u6", "2026-11-07T09:03:00Z"), json!({"type": "assistant", "message": {"model": "claude-x", "content": [{"type": "text", "text": format!("Noted, you are in Lisbon ({lisbon}); tidying the scripts now.")}]}})),
    ]
    .concat();
    let project = env.home.join(".claude/projects/-work-proj");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("sess-echo.jsonl"), lines).unwrap();

    let memory_before: Vec<String> = ["human", "persona", "episodes", "scratch"]
        .iter()
        .map(|b| env.read(&format!("memory/{b}.md")))
        .collect();
    let cards_before = env.cards();

    let fake = FakeLlm::start();
    fake.on("reflect", echo_prone_reflect);
    let out = env
        .cmd()
        .env("DREAM_LLM_PROVIDER", "openai")
        .env("DREAM_LLM_BASE_URL", fake.base_url())
        .env("DREAM_LLM_MODEL", "fake-model")
        .env("DREAM_LLM_RETRY_BACKOFF_MS", "1")
        .env_remove("OPENAI_API_KEY")
        .args(["run", "--now", "2026-11-07T21:00:00Z", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["ingest"]["new_events"].as_u64().unwrap() >= 4,
        "{report}"
    );

    // The injected facts gained no support, no fresher last-seen, and no candidate.
    let memory_after: Vec<String> = ["human", "persona", "episodes", "scratch"]
        .iter()
        .map(|b| env.read(&format!("memory/{b}.md")))
        .collect();
    assert_eq!(memory_after, memory_before);
    assert_eq!(env.cards(), cards_before);
    for call in fake.calls("reflect") {
        let body = call.body.to_string();
        assert!(
            !body.contains("dream:recalled"),
            "a recalled event reached the model: {body}"
        );
    }

    // Every stored event that carries the marker is recalled, and the citation is a use.
    let conn = rusqlite::Connection::open(env.repo.join(".dream/state.sqlite")).unwrap();
    let unrecalled: i64 = conn
        .query_row(
            "SELECT count(*) FROM events WHERE text LIKE '%dream:recalled%' AND recalled = 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(unrecalled, 0);
    let recalled: i64 = conn
        .query_row(
            "SELECT count(*) FROM events WHERE text LIKE '%dream:recalled%' AND recalled = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        recalled >= 2,
        "the hook's output and the file the agent read: {recalled}"
    );
    let cited: i64 = conn
        .query_row(
            "SELECT count FROM uses WHERE fact = ?1 AND via = 'cited'",
            [&lisbon],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(cited, 1);
}

/// What an MCP client got: the tools, a recall (its limit sent as a string, as the MCP
/// Inspector sends it), a compact explain, a full explain, a remember.
type Exchange = (Vec<String>, String, String, String, String);

fn mcp_exchange(env: &Env, now: &str) -> Exchange {
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::TokioChildProcess;
    use rmcp::ServiceExt;

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let bin = assert_cmd::cargo::cargo_bin("dream");
        let mut cmd = tokio::process::Command::new(bin);
        cmd.args([
            "--repo",
            &env.repo.display().to_string(),
            "--now",
            now,
            "mcp",
        ])
        .env("HOME", &env.home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("DREAM_REPO")
        .stderr(std::process::Stdio::null());
        let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        let info = client.peer_info().expect("the server introduced itself");
        assert_eq!(
            info.server_info.as_ref().map(|i| i.name.as_str()),
            Some("dream")
        );
        let tools: Vec<String> = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        let text_of = |r: rmcp::model::CallToolResult| {
            assert_ne!(r.is_error, Some(true), "{r:?}");
            r.content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let args = |v: Value| v.as_object().unwrap().clone();
        let recall = client
            .call_tool(CallToolRequestParams::new("recall").with_arguments(args(
                json!({"query": "where does the user live? Lisbon", "limit": "3"}),
            )))
            .await
            .unwrap();
        let recall = text_of(recall);
        let explain = client
            .call_tool(
                CallToolRequestParams::new("explain")
                    .with_arguments(args(json!({"id": fact_id(env, "Lisbon")}))),
            )
            .await
            .unwrap();
        let explain = text_of(explain);
        let full = client
            .call_tool(
                CallToolRequestParams::new("explain")
                    .with_arguments(args(json!({"id": fact_id(env, "Lisbon"), "full": true}))),
            )
            .await
            .unwrap();
        let full = text_of(full);
        let remember = client
            .call_tool(CallToolRequestParams::new("remember").with_arguments(args(
                json!({"text": "The user moved the standup to 10:00.", "session": "mcp-1"}),
            )))
            .await
            .unwrap();
        let remember = text_of(remember);
        client.cancel().await.unwrap();
        (tools, recall, explain, full, remember)
    })
}

#[test]
fn an_mcp_client_lists_three_tools_and_gets_a_ranked_recall() {
    let env = repo_with_facts();
    let snapshot = env.snapshot();
    let (mut tools, recall, explain, full, remember) = mcp_exchange(&env, SAMPLE_NOW);
    tools.sort();
    assert_eq!(tools, ["explain", "recall", "remember"]);
    assert!(recall.starts_with(MARKER_LINE), "{recall}");
    let first = recall.lines().nth(1).unwrap();
    assert!(
        first.contains("I live in Lisbon") && first.contains(&fact_id(&env, "Lisbon")),
        "{recall}"
    );
    assert!(first.contains("last seen 2026-11-06"), "{first}");
    // "limit": "3" was read as the number 3.
    assert!(
        recall.lines().filter(|l| l.starts_with("- ")).count() <= 3,
        "{recall}"
    );
    // explain: a compact answer by default, the whole trail with full=true.
    let lisbon = fact_id(&env, "Lisbon");
    assert!(explain.starts_with(MARKER_LINE), "{explain}");
    assert!(
        explain.contains(&format!("{lisbon} (active fact")) && explain.contains("I live in Lisbon"),
        "{explain}"
    );
    assert!(explain.contains("supported by "), "{explain}");
    assert!(explain.contains("full=true"), "{explain}");
    assert!(explain.len() <= 2048, "{} bytes: {explain}", explain.len());
    assert!(
        full.contains("\"events\"") && full.len() > explain.len(),
        "{full}"
    );
    assert!(remember.contains("nothing in memory changed"), "{remember}");

    // Read-only on the repository: the only new files are the inbox line and the use log.
    let after = env.snapshot();
    // (SQLite's own -shm/-wal files of a read-only open aside.)
    let changed: Vec<&String> = after
        .keys()
        .filter(|k| snapshot.get(*k) != after.get(*k))
        .filter(|k| !k.ends_with("-shm") && !k.ends_with("-wal"))
        .collect();
    assert_eq!(
        changed,
        [
            &".dream/uses.jsonl".to_string(),
            &"events/mcp.jsonl".to_string()
        ],
        "{changed:?}"
    );
    let inbox = env.read("events/mcp.jsonl");
    let ev: Value = serde_json::from_str(inbox.lines().next().unwrap()).unwrap();
    assert_eq!(ev["trust"], "agent");
    assert_eq!(ev["session"], "mcp-1");
    assert!(env
        .read(".dream/uses.jsonl")
        .contains(&fact_id(&env, "Lisbon")));
}

/// Set a retention key in dream.toml's [retention] table.
fn set_retention(repo: &Path, line: &str) {
    let path = repo.join("dream.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replacen("[retention]\n", &format!("[retention]\n{line}\n"), 1);
    std::fs::write(path, text).unwrap();
}

#[test]
fn unused_facts_are_retired_only_when_asked_recorded_as_their_policy_and_verified() {
    let env = repo_with_facts();
    let lisbon = fact_id(&env, "Lisbon");
    let typescript = fact_id(&env, "TypeScript");
    let northwind = fact_id(&env, "Northwind");
    // Twenty days later, without the policy, nothing is retired.
    let later = |d: u32, s: &str| {
        crate::util::event(
            &format!("2026-11-{d:02}T10:00:00Z"),
            s,
            "Rainy weather again today.",
        )
    };
    env.write_inbox("later.jsonl", &later(25, "w1"));
    env.run_cycle("2026-11-26T21:00:00Z");
    // The five durable facts and the two episodes; the weather is status, never kept.
    assert_eq!(env.facts().len(), 7, "{:?}", env.facts());

    // With unused_after_days = 10 (and preferences no longer protected): the TypeScript
    // preference was recalled two days ago, the other facts were neither used nor restated
    // for twenty days. Protected categories (identity, commitments) are never forgotten.
    set_retention(&env.repo, "unused_after_days = 10");
    // Two of the five facts go at once: the loss guard (a quarter of memory per cycle by
    // default) is raised so the policy's whole effect shows in one cycle.
    let toml_text = env
        .read("dream.toml")
        .replacen(
            "protected = [\"identity\", \"preferences\", \"commitments\"]",
            "protected = [\"identity\", \"commitments\"]",
            1,
        )
        .replacen("max_loss_share = 0.25", "max_loss_share = 0.5", 1);
    std::fs::write(env.repo.join("dream.toml"), toml_text).unwrap();
    let uses =
        json!({"ts": "2026-11-25T12:00:00Z", "fact": typescript, "via": "recall"}).to_string();
    std::fs::write(env.repo.join(".dream/uses.jsonl"), uses + "\n").unwrap();
    env.write_inbox("later2.jsonl", &later(27, "w2"));
    env.run_cycle("2026-11-27T21:00:00Z");
    let archive = env.read("archive/facts.md");
    let facts = env.facts();
    assert!(facts.iter().any(|f| f.contains(&typescript)), "used: kept");
    assert!(
        facts.iter().any(|f| f.contains(&northwind)),
        "protected: kept"
    );
    assert!(
        !facts.iter().any(|f| f.contains(&lisbon)),
        "unused: retired"
    );
    let retired: Vec<&str> = archive
        .lines()
        .filter(|l| l.contains("policy=\"unused_after_days=10\""))
        .collect();
    assert_eq!(retired.len(), 2, "{archive}");
    assert!(retired.iter().any(|l| l.contains(&lisbon)));
    let forget = env
        .commits()
        .into_iter()
        .find(|(s, _)| s.starts_with("dream: forget pass"))
        .expect("a forget commit");
    assert!(
        forget.1.contains("engine   forget") && forget.1.contains("unused_after_days=10"),
        "{}",
        forget.1
    );
    assert!(
        !env.repo.join(".dream/uses.jsonl").exists(),
        "the use log was counted and cleared"
    );

    let v = env.dream(&["verify", "--json"]);
    let report: Value = serde_json::from_slice(&v.stdout).unwrap();
    assert_eq!(v.status.code(), Some(0), "{report}");
}

#[test]
fn a_first_install_mentions_no_backup_it_did_not_write_and_modes_are_kept() {
    use std::os::unix::fs::PermissionsExt;
    let env = repo_with_facts();
    let settings = env.home.join(".claude/settings.json");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;

    // No settings.json yet: install creates it and says no backup exists.
    let out = env.dream(&["hooks", "install", "claude-code"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(!said.contains("kept at"), "{said}");
    assert!(!env.home.join(".claude/settings.json.dream-backup").exists());
    assert!(said.contains("did not exist before"), "{said}");
    assert_eq!(mode(&settings), 0o644, "a new settings file is rw-r--r--");
    assert!(env
        .dream(&["hooks", "uninstall", "claude-code"])
        .status
        .success());
    assert!(!settings.exists(), "the file dream created is removed");

    // An existing 644 file stays 644 through install and uninstall; its backup too.
    std::fs::write(&settings, SETTINGS).unwrap();
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = env.dream(&["hooks", "install", "claude-code"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("kept at"), "{}", stdout(&out));
    assert_eq!(mode(&settings), 0o644);
    assert_eq!(
        mode(&env.home.join(".claude/settings.json.dream-backup")),
        0o644
    );
    assert!(env
        .dream(&["hooks", "uninstall", "claude-code"])
        .status
        .success());
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), SETTINGS);
    assert_eq!(mode(&settings), 0o644);
    // A private one stays private.
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(env
        .dream(&["hooks", "install", "claude-code"])
        .status
        .success());
    assert_eq!(mode(&settings), 0o600);
}
