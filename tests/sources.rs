//! Other agents' transcripts as sources (SPEC S2, S8): pointing `[[inbox.sources]]` at a
//! folder of Claude Code sessions or Codex rollouts must yield the events the mapping
//! tables of docs/sources.md promise, line type by line type; a later cycle reads only what
//! was appended and leaves a half-written line for later; a line far over the size limit
//! still becomes its events; no planted secret, base64 blob or private reasoning reaches
//! the state database; unknown types are counted, never errors; and `dream ingest
//! --format` reads the same transcripts once. The fixtures are dream's own, written by
//! `fixtures/make_transcripts.py` in the shapes the harnesses write; the tests read the
//! state database itself, as the events a cycle will consolidate.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::util::{stderr, Env};

/// The cycle's clock: the evening after the fixtures' sessions.
const NOW: &str = "2026-03-14T21:00:00Z";
/// Secrets `make_transcripts.py` planted in tool output.
const OPENAI_KEY: &str = "sk-proj-Zq3vN8xWm2Lk5Rt7Yp9Bc4Df6Gh1Jk0Aa";
const GITHUB_TOKEN: &str = "ghp_R4nd0mT0k3nF0rT3st1ngPurp0s3sOnly12";
const CC_SESSION: &str = "b9db7b05-b755-4419-8692-09b590956467";
const CX_SESSION: &str = "9cd9f4c9-62fa-4675-86f3-3cccca29993c";

fn fixtures(format: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/transcripts")
        .join(format)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let p = entry.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// Add an `[[inbox.sources]]` entry to the repo's dream.toml.
fn add_source(env: &Env, format: &str, path: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(env.repo.join("dream.toml"))
        .unwrap();
    writeln!(
        f,
        "\n[[inbox.sources]]\nformat = \"{format}\"\npath = \"{path}\""
    )
    .unwrap();
}

#[derive(Debug)]
struct Row {
    kind: String,
    text: String,
    session: Option<String>,
    actor: Option<String>,
    source: Option<String>,
    trust: String,
    recalled: bool,
    meta: Value,
}

/// Every stored event, in ingest order.
fn events(env: &Env) -> Vec<Row> {
    let conn = rusqlite::Connection::open(env.repo.join(".dream/state.sqlite")).unwrap();
    let mut stmt = conn
        .prepare("SELECT kind, text, session, actor, source, trust, recalled, meta FROM events ORDER BY seq")
        .unwrap();
    stmt.query_map([], |r| {
        Ok(Row {
            kind: r.get(0)?,
            text: r.get(1)?,
            session: r.get(2)?,
            actor: r.get(3)?,
            source: r.get(4)?,
            trust: r.get(5)?,
            recalled: r.get::<_, i64>(6)? != 0,
            meta: r
                .get::<_, Option<String>>(7)?
                .map(|m| serde_json::from_str(&m).unwrap())
                .unwrap_or(Value::Null),
        })
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn find<'a>(rows: &'a [Row], kind: &str, starts: &str) -> &'a Row {
    rows.iter()
        .find(|r| r.kind == kind && r.text.starts_with(starts))
        .unwrap_or_else(|| panic!("no {kind} event starting {starts:?} in {:#?}", rows))
}

fn source_report(report: &Value, i: usize) -> &Value {
    &report["ingest"]["sources"][i]
}

#[test]
fn claude_code_sessions_become_the_events_the_mapping_promises() {
    let env = Env::new();
    env.init();
    copy_dir(&fixtures("claude-code"), &env.home.join(".claude/projects"));
    add_source(&env, "claude-code", "~/.claude/projects");
    let report = env.run_cycle(NOW);
    let src = source_report(&report, 0);
    assert_eq!(src["files"], 2, "the session and its subagent: {src}");
    assert_eq!(src["quarantined"], 0, "{src}");
    assert_eq!(
        src["unknown"],
        json!({"block:sparkle": 1, "line:hologram": 1}),
        "{src}"
    );
    assert_eq!(src["skipped"]["block:thinking"], 1, "{src}");
    let rows = events(&env);

    // The owner's prompts, and only those, are owner messages; the image is a placeholder.
    let owner: Vec<&str> = rows
        .iter()
        .filter(|r| r.trust == "owner")
        .map(|r| r.text.as_str())
        .collect();
    assert_eq!(
        owner,
        vec![
            "I always use pnpm for this shop project, and the staging database is called shop_staging.",
            "[image: image/png]\nThis screenshot shows the checkout button misaligned on mobile.",
        ]
    );
    let prompt = find(&rows, "message", "I always use pnpm");
    assert_eq!(prompt.actor.as_deref(), Some("user"));
    assert_eq!(prompt.session.as_deref(), Some(CC_SESSION));
    assert_eq!(prompt.source.as_deref(), Some("claude-code"));
    assert_eq!(prompt.meta["cwd"], "/home/ada/shop");
    assert_eq!(prompt.meta["git_branch"], "feature/checkout");

    let reply = find(&rows, "message", "Noted: pnpm");
    assert_eq!(
        (reply.trust.as_str(), reply.actor.as_deref()),
        ("agent", Some("assistant"))
    );
    assert_eq!(reply.meta["model"], "claude-sonnet-4-6");

    // Tool calls are compact, and their results are linked by the call id.
    let call = find(&rows, "tool_call", "Bash: grep -r API_KEY .env");
    assert_eq!(call.meta["call_id"], "toolu_01Grep");
    assert_eq!(call.meta["tool"], "Bash");
    let result = rows
        .iter()
        .find(|r| r.kind == "tool_result" && r.meta["call_id"] == "toolu_01Grep")
        .unwrap();
    assert_eq!(result.trust, "tool");
    assert!(
        result.text.contains("[redacted:openai-key]"),
        "{}",
        result.text
    );
    let failed = rows
        .iter()
        .find(|r| r.kind == "tool_result" && r.meta["call_id"] == "toolu_01Read")
        .unwrap();
    assert!(failed.text.starts_with("[error] "), "{}", failed.text);
    assert_eq!(failed.meta["is_error"], true);
    let long = rows
        .iter()
        .find(|r| r.kind == "tool_result" && r.meta["call_id"] == "toolu_01Logs")
        .unwrap();
    let full = long.meta["truncated_from"].as_u64().unwrap();
    assert!(full > 30_000, "{full}");
    assert!(long.text.len() < 5_000, "{}", long.text.len());
    assert!(
        long.text
            .ends_with(&format!("[truncated: {full} bytes in all]")),
        "{}",
        long.text
    );

    find(&rows, "session_summary", "This session is being continued");

    // Memory files the harness loaded are recalled, never the owner's new words.
    let recalled: Vec<&str> = rows
        .iter()
        .filter(|r| r.recalled)
        .map(|r| r.text.as_str())
        .collect();
    assert_eq!(recalled.len(), 3, "{recalled:?}");
    assert!(
        recalled.iter().any(|t| t.contains("Use pnpm, never npm.")),
        "{recalled:?}"
    );
    assert!(
        recalled.contains(&"Components live in web/src/components."),
        "{recalled:?}"
    );
    assert!(
        recalled.contains(&"Ada deploys from the release branch only."),
        "{recalled:?}"
    );
    assert!(rows
        .iter()
        .filter(|r| r.recalled)
        .all(|r| r.kind == "memory"));

    // A subagent's prompt was written by the main agent, not by the owner.
    let sub = find(&rows, "message", "Find every file that imports the Cart");
    assert_eq!(
        (sub.trust.as_str(), sub.actor.as_deref()),
        ("agent", Some("agent"))
    );
    assert_eq!(sub.session.as_deref(), Some(CC_SESSION));
    assert_eq!(sub.meta["agent_id"], "a7f3c21");
    find(&rows, "tool_call", "Grep: import.*Cart path=web/src");

    // Injected context, commands, interruptions and synthetic errors never become events.
    for absent in [
        "PRIVATE-REASONING",
        "EsMCCkYICxgC",
        "Caveat",
        "/model",
        "Set model to Sonnet",
        "Request interrupted",
        "API Error",
        "also check the footer",
        "torus",
    ] {
        assert!(
            rows.iter().all(|r| !r.text.contains(absent)),
            "{absent} reached the state"
        );
    }
}

#[test]
fn codex_rollouts_become_the_events_the_mapping_promises() {
    let env = Env::new();
    env.init();
    copy_dir(&fixtures("codex"), &env.home.join(".codex/sessions"));
    add_source(&env, "codex", "~/.codex/sessions");
    let report = env.run_cycle(NOW);
    let src = source_report(&report, 0);
    assert_eq!(src["quarantined"], 0, "{src}");
    assert_eq!(
        src["unknown"],
        json!({"event_msg:sparkle_update": 1, "response_item:hologram": 1}),
        "{src}"
    );
    assert_eq!(src["skipped"]["mirror:user_message"], 1, "{src}");
    assert_eq!(src["skipped"]["mirror:agent_message"], 1, "{src}");
    let rows = events(&env);
    assert!(
        rows.iter()
            .all(|r| r.session.as_deref() == Some(CX_SESSION)),
        "the session comes from the file"
    );
    assert!(rows.iter().all(|r| r.source.as_deref() == Some("codex")));

    // The visible text that event_msg repeats is stored once.
    let owner: Vec<&str> = rows
        .iter()
        .filter(|r| r.trust == "owner")
        .map(|r| r.text.as_str())
        .collect();
    assert_eq!(
        owner,
        vec!["Our invoices are always issued in euros; please fix the currency formatting in the invoice view."]
    );
    assert_eq!(owner.len(), 1);
    let replies: Vec<&Row> = rows
        .iter()
        .filter(|r| r.kind == "message" && r.trust == "agent")
        .collect();
    assert_eq!(replies.len(), 1);
    assert_eq!(
        replies[0].text,
        "Invoices now format amounts in euros, and the invoice test passes."
    );
    assert_eq!(replies[0].meta["model"], "gpt-5.2-codex");
    assert_eq!(replies[0].meta["cwd"], "/home/ada/shop");
    assert_eq!(replies[0].meta["git_branch"], "main");

    let call = find(&rows, "tool_call", "shell: pnpm test invoice");
    assert_eq!(call.meta["call_id"], "call_test1");
    let result = rows
        .iter()
        .find(|r| r.kind == "tool_result" && r.meta["call_id"] == "call_test1")
        .unwrap();
    assert!(
        result.text.starts_with("[error] FAIL invoice.test.ts"),
        "{}",
        result.text
    );
    assert_eq!(result.meta["is_error"], true);
    find(&rows, "tool_call", "apply_patch: *** Begin Patch");
    find(
        &rows,
        "session_summary",
        "Summary: invoices switched to euros",
    );

    let recalled: Vec<&str> = rows
        .iter()
        .filter(|r| r.recalled)
        .map(|r| r.text.as_str())
        .collect();
    assert_eq!(recalled, vec!["Run pnpm test before every commit."]);

    for absent in [
        "PRIVATE-SUMMARY",
        "encrypted",
        "permissions instructions",
        "environment_context",
        "torus",
    ] {
        assert!(
            rows.iter().all(|r| !r.text.contains(absent)),
            "{absent} reached the state"
        );
    }
}

/// One Claude Code line.
fn cc_line(n: u32, ty: &str, text: &str) -> String {
    let message = if ty == "user" {
        json!({"role": "user", "content": text})
    } else {
        json!({"role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": text}]})
    };
    json!({
        "type": ty,
        "uuid": format!("00000000-0000-4000-8000-{n:012}"),
        "sessionId": "live-session",
        "timestamp": format!("2026-03-14T10:{:02}:00.000Z", n % 60),
        "cwd": "/w",
        "message": message,
    })
    .to_string()
        + "\n"
}

#[test]
fn a_later_cycle_reads_only_what_was_appended_and_a_half_written_line_waits() {
    let env = Env::new();
    env.init();
    let dir = env.home.join(".claude/projects/-w");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("live-session.jsonl");
    let append = |s: &str| {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .unwrap();
        f.write_all(s.as_bytes()).unwrap();
    };
    append(
        &(cc_line(1, "user", "I keep the release notes in docs/CHANGES.md.")
            + &cc_line(2, "assistant", "Got it.")),
    );
    add_source(&env, "claude-code", "~/.claude/projects");
    let r1 = env.run_cycle(NOW);
    assert_eq!(r1["ingest"]["new_events"], 2, "{}", r1["ingest"]);

    let third = cc_line(4, "user", "The changelog uses one line per change.");
    let (head, tail) = third.split_at(40);
    append(&(cc_line(3, "assistant", "I will update it.") + head));
    let r2 = env.run_cycle("2026-03-14T22:00:00Z");
    assert_eq!(
        r2["ingest"]["new_events"], 1,
        "only the appended complete line: {}",
        r2["ingest"]
    );
    assert_eq!(
        source_report(&r2, 0)["lines"],
        1,
        "the old lines were not read again"
    );
    assert_eq!(r2["ingest"]["partial_bytes"], 40);
    assert_eq!(r2["ingest"]["quarantined"], 0);

    append(tail);
    // A new session in another project appears too.
    let other = env.home.join(".claude/projects/-x/new-session.jsonl");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::write(&other, cc_line(5, "user", "Ship the beta on Fridays only.")).unwrap();
    let r3 = env.run_cycle("2026-03-14T23:00:00Z");
    assert_eq!(r3["ingest"]["new_events"], 2, "{}", r3["ingest"]);
    assert_eq!(r3["ingest"]["partial_bytes"], 0);

    let r4 = env.run_cycle("2026-03-14T23:30:00Z");
    assert_eq!(r4["ingest"]["new_events"], 0);
    assert_eq!(source_report(&r4, 0)["lines"], 0);
    let texts: Vec<String> = events(&env).into_iter().map(|r| r.text).collect();
    assert_eq!(texts.len(), 5, "{texts:?}");
    assert!(texts.contains(&"The changelog uses one line per change.".to_string()));
}

#[test]
fn a_line_far_over_the_limit_becomes_its_events_and_the_file_goes_on() {
    let env = Env::new();
    env.init();
    let dir = env.home.join(".claude/projects/-w");
    std::fs::create_dir_all(&dir).unwrap();
    let output = "0123456789abcdef ".repeat(200_000); // 3.4 MB of tool output
    let huge = json!({
        "type": "user",
        "uuid": "00000000-0000-4000-8000-000000000002",
        "sessionId": "big",
        "timestamp": "2026-03-14T10:01:00.000Z",
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_big", "content": output}]},
        "toolUseResult": {"stdout": output},
    })
    .to_string();
    assert!(huge.len() > 2 * (1 << 20));
    std::fs::write(
        dir.join("big.jsonl"),
        format!(
            "{}{huge}\n{}",
            cc_line(1, "user", "Print the whole log."),
            cc_line(3, "assistant", "That was long.")
        ),
    )
    .unwrap();
    add_source(&env, "claude-code", "~/.claude/projects");
    let r = env.run_cycle(NOW);
    assert_eq!(r["ingest"]["quarantined"], 0, "{}", r["ingest"]);
    assert_eq!(r["ingest"]["new_events"], 3, "{}", r["ingest"]);
    let rows = events(&env);
    let result = rows.iter().find(|r| r.kind == "tool_result").unwrap();
    assert_eq!(
        result.meta["truncated_from"].as_u64(),
        Some(output.len() as u64)
    );
    assert!(result.text.len() < 5_000);
    assert!(result.text.starts_with("0123456789abcdef 0123456789abcdef"));
    find(&rows, "message", "That was long.");
}

#[test]
fn no_secret_base64_blob_or_private_reasoning_reaches_the_state() {
    let env = Env::new();
    env.init();
    copy_dir(&fixtures("claude-code"), &env.home.join("cc"));
    copy_dir(&fixtures("codex"), &env.home.join("cx"));
    add_source(&env, "claude-code", "~/cc");
    add_source(&env, "codex", "~/cx");
    let report = env.run_cycle(NOW);
    assert!(
        report["ingest"]["redacted"].as_u64().unwrap() >= 2,
        "{}",
        report["ingest"]
    );

    // The pasted screenshot's data, as the fixture stores it.
    let session = std::fs::read_to_string(
        fixtures("claude-code").join(format!("-home-ada-shop/{CC_SESSION}.jsonl")),
    )
    .unwrap();
    let image = session
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| {
            v["message"]["content"]
                .as_array()?
                .iter()
                .find_map(|b| b["source"]["data"].as_str().map(str::to_string))
        })
        .expect("the fixture has an image");
    assert!(image.len() > 1000);

    let mut state = Vec::new();
    for name in ["state.sqlite", "state.sqlite-wal"] {
        if let Ok(bytes) = std::fs::read(env.repo.join(".dream").join(name)) {
            state.extend(bytes);
        }
    }
    let state = String::from_utf8_lossy(&state);
    for needle in [
        OPENAI_KEY,
        GITHUB_TOKEN,
        &image[..64],
        "PRIVATE-REASONING",
        "PRIVATE-SUMMARY",
        "EsMCCkYICxgC",
    ] {
        assert!(
            !state.contains(needle),
            "{needle} reached the state database"
        );
    }
    for row in events(&env) {
        assert!(!row.meta.to_string().contains("sk-proj-"), "{:?}", row.meta);
    }
    for f in [
        "memory/human.md",
        "memory/persona.md",
        "memory/episodes.md",
        "memory/scratch.md",
    ] {
        let text = env.read(f);
        assert!(
            !text.contains(OPENAI_KEY) && !text.contains(GITHUB_TOKEN),
            "{f}"
        );
    }
}

#[test]
fn dream_ingest_reads_transcripts_once_and_a_cycle_takes_them() {
    let env = Env::new();
    env.init();
    let codex = fixtures("codex");
    let codex = codex.to_str().unwrap();

    let out = env.dream(&["ingest", "--format", "codex", "--dry-run", codex]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("would append 10 events"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("unknown types, ignored: event_msg:sparkle_update 1"),
        "{}",
        stderr(&out)
    );
    let inbox: Vec<_> = std::fs::read_dir(env.repo.join("events"))
        .unwrap()
        .collect();
    assert!(inbox.is_empty(), "a dry run writes nothing");

    for _ in 0..2 {
        let out = env.dream(&["ingest", "--format", "codex", codex]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("appended 10 events"),
            "{}",
            stderr(&out)
        );
    }
    let r = env.run_cycle(NOW);
    assert_eq!(r["ingest"]["new_events"], 10, "{}", r["ingest"]);
    assert_eq!(
        r["ingest"]["duplicates"], 10,
        "the second run's events are the same events"
    );
    assert_eq!(r["ingest"]["quarantined"], 0, "{}", r["ingest"]);
    assert_eq!(events(&env).iter().filter(|e| e.recalled).count(), 1);

    let out = env.dream(&["ingest", "--format", "claude-code"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("reads files or folders, not standard input"),
        "{}",
        stderr(&out)
    );
    let out = env.dream(&["ingest", "--format", "codex", "/no/such/folder"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
}

#[test]
fn dream_events_kept_outside_the_inbox_are_a_jsonl_source() {
    let env = Env::new();
    env.init();
    let dir = env.home.join("agent-events");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("a.jsonl"),
        concat!(
            r#"{"ts":"2026-03-14T09:00:00Z","kind":"message","actor":"user","text":"I work from Porto."}"#,
            "\n{broken\n"
        ),
    )
    .unwrap();
    add_source(&env, "jsonl", "~/agent-events");
    let r = env.run_cycle(NOW);
    assert_eq!(r["ingest"]["new_events"], 1, "{}", r["ingest"]);
    assert_eq!(
        r["ingest"]["quarantined"], 1,
        "dream's own format keeps its quarantine rule"
    );
    let status = env.dream(&["status", "--json"]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    let reason = status["recent_quarantine"][0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("not valid JSON"), "{reason}");
}

#[test]
fn a_bad_source_is_a_config_error_and_a_missing_folder_is_not() {
    let env = Env::new();
    env.init();
    add_source(&env, "cursor", "~/x");
    let out = env.dream(&["run", "--now", NOW]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("inbox.sources[0].format"),
        "{}",
        stderr(&out)
    );

    let env = Env::new();
    env.init();
    add_source(&env, "codex", "~/.codex/sessions");
    let r = env.run_cycle(NOW);
    assert_eq!(source_report(&r, 0)["missing"], true, "{}", r["ingest"]);
}

#[test]
fn a_codex_read_that_starts_mid_file_still_knows_the_session_and_folder() {
    let env = Env::new();
    env.init();
    let dir = env.home.join("codex");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("session.jsonl"); // no uuid in the name: the session is in line 1
    let line = |ty: &str, payload: Value| {
        json!({"timestamp": "2026-03-14T10:00:00.000Z", "type": ty, "payload": payload}).to_string()
            + "\n"
    };
    let said = |text: &str| {
        line(
            "response_item",
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}),
        )
    };
    std::fs::write(
        &file,
        line(
            "session_meta",
            json!({"id": "sess-42", "cwd": "/srv/app", "git": {"branch": "trunk"}}),
        ) + &said("First prompt of the day."),
    )
    .unwrap();
    add_source(&env, "codex", "~/codex");
    assert_eq!(env.run_cycle(NOW)["ingest"]["new_events"], 1);
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        f.write_all(said("Second prompt, read on its own.").as_bytes())
            .unwrap();
    }
    let r = env.run_cycle("2026-03-14T22:00:00Z");
    assert_eq!(source_report(&r, 0)["lines"], 1, "{}", r["ingest"]);
    let rows = events(&env);
    let second = find(&rows, "message", "Second prompt");
    assert_eq!(second.session.as_deref(), Some("sess-42"));
    assert_eq!(second.meta["cwd"], "/srv/app");
    assert_eq!(second.meta["git_branch"], "trunk");
}

/// Texts of the stored events of one kind and actor, in ingest order.
fn texts<'a>(rows: &'a [Row], kind: &str, actor: &str) -> Vec<&'a str> {
    rows.iter()
        .filter(|r| r.kind == kind && r.actor.as_deref() == Some(actor))
        .map(|r| r.text.as_str())
        .collect()
}

fn no_secret_or_reasoning(rows: &[Row]) {
    for absent in [
        OPENAI_KEY,
        GITHUB_TOKEN,
        "PRIVATE-",
        "session_context",
        "hook_context",
        "Content from referenced files",
        "torus",
    ] {
        assert!(
            rows.iter().all(|r| !r.text.contains(absent)),
            "{absent} reached the state"
        );
    }
}

#[test]
fn gemini_sessions_in_both_forms_become_events_and_a_rewritten_document_gives_only_new_ones() {
    let env = Env::new();
    env.init();
    let tmp = env.home.join(".gemini/tmp");
    copy_dir(&fixtures("gemini"), &tmp);
    // A file no adapter reads: named in the report, never skipped silently.
    std::fs::write(tmp.join("shop/notes.txt"), "not a session\n").unwrap();
    add_source(&env, "gemini", "~/.gemini/tmp");
    let report = env.run_cycle(NOW);
    let src = source_report(&report, 0);
    assert_eq!(src["quarantined"], 0, "{src}");
    assert_eq!(src["files"], 2, "{src}");
    assert_eq!(src["unknown"], json!({"message:hologram": 1}), "{src}");
    assert_eq!(src["skipped"]["user:session_context"], 1, "{src}");
    assert_eq!(src["skipped"]["user:command"], 1, "{src}");
    assert_eq!(src["skipped"]["block:thoughts"], 1, "{src}");
    let skipped = report["ingest"]["skipped"].to_string();
    assert!(
        skipped.contains("notes.txt") && skipped.contains("no gemini adapter reads it"),
        "{skipped}"
    );
    assert!(
        !skipped.contains("logs.json"),
        "a known companion: {skipped}"
    );

    let rows = events(&env);
    assert!(rows.iter().all(|r| r.source.as_deref() == Some("gemini")));
    assert_eq!(
        texts(&rows, "message", "user"),
        vec![
            "We deploy the shop with Fly.io; never suggest Heroku.",
            "explain @fly.toml",
            "Prices in the checkout are always shown with VAT included.",
        ]
    );
    assert!(rows
        .iter()
        .filter(|r| r.actor.as_deref() == Some("user"))
        .all(|r| r.trust == "owner"));
    assert_eq!(
        texts(&rows, "message", "assistant"),
        vec!["Understood: Fly.io it is.", "Checking the checkout tests."]
    );
    let call = find(&rows, "tool_call", "run_shell_command: fly status");
    assert_eq!(call.meta["call_id"], "run_shell_command-1");
    find(&rows, "tool_result", "App shop is running");
    // The message appended again when its tool call finished adds only the result.
    assert_eq!(
        texts(&rows, "tool_call", "assistant"),
        vec![
            "run_shell_command: fly status description=check the app",
            "run_shell_command: pnpm test checkout",
        ]
    );
    assert_eq!(texts(&rows, "tool_result", "tool").len(), 2);
    assert_eq!(rows.len(), 9, "{rows:#?}");
    no_secret_or_reasoning(&rows);

    // Gemini CLI rewrites the whole document after each message: only the new one is new.
    let doc_path = std::fs::read_dir(tmp.join("shop/chats"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&doc_path).unwrap()).unwrap();
    doc["messages"].as_array_mut().unwrap().push(json!({
        "id": "new-message", "timestamp": "2026-03-14T12:30:00.000Z", "type": "user",
        "content": [{"text": "Staging runs on a single Fly machine."}]
    }));
    doc["lastUpdated"] = json!("2026-03-14T12:30:00.000Z");
    std::fs::write(&doc_path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let report = env.run_cycle("2026-03-14T22:00:00Z");
    let src = source_report(&report, 0);
    assert_eq!(src["new_events"], 1, "{src}");
    assert_eq!(src["quarantined"], 0, "{src}");
    let rows = events(&env);
    assert_eq!(
        rows.last().unwrap().text,
        "Staging runs on a single Fly machine."
    );
    // Nothing changed: nothing read.
    let report = env.run_cycle("2026-03-14T23:00:00Z");
    assert_eq!(source_report(&report, 0)["new_events"], 0);
    assert_eq!(source_report(&report, 0)["duplicates"], 0);
}

#[test]
fn copilot_cli_sessions_become_events() {
    let env = Env::new();
    env.init();
    copy_dir(
        &fixtures("copilot"),
        &env.home.join(".copilot/session-state"),
    );
    add_source(&env, "copilot", "~/.copilot/session-state");
    let report = env.run_cycle(NOW);
    let src = source_report(&report, 0);
    assert_eq!(src["quarantined"], 0, "{src}");
    assert_eq!(src["unknown"], json!({"line:sparkle.update": 1}), "{src}");
    assert_eq!(src["skipped"]["block:reasoning"], 1, "{src}");
    assert_eq!(src["skipped"]["mirror:toolRequests"], 1, "{src}");
    assert!(
        report["ingest"]["skipped"]
            .as_array()
            .is_none_or(|a| a.is_empty()),
        "workspace.yaml is a known companion: {}",
        report["ingest"]
    );
    let rows = events(&env);
    assert_eq!(
        texts(&rows, "message", "user"),
        vec!["Our release branch is always called release/next."]
    );
    let owner = find(&rows, "message", "Our release branch");
    assert_eq!(owner.trust, "owner");
    assert_eq!(owner.meta["cwd"], "/home/ada/shop");
    assert_eq!(owner.meta["git_branch"], "main");
    assert_eq!(
        texts(&rows, "message", "assistant"),
        vec![
            "I will check the branches.",
            "release/next exists; I will target it."
        ]
    );
    assert_eq!(
        texts(&rows, "tool_call", "assistant"),
        vec!["bash: git branch -a"]
    );
    assert!(find(&rows, "tool_result", "* main")
        .text
        .contains("release/next"));
    assert_eq!(rows.len(), 5);
    let session = rows[0].session.clone().unwrap();
    assert!(rows.iter().all(|r| r.session.as_deref() == Some(&session)));
    no_secret_or_reasoning(&rows);

    // A line appended later: read from the watermark, still in its session and folder.
    let file = std::fs::read_dir(env.home.join(".copilot/session-state"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("events.jsonl");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(
        &json!({"type": "user.message", "id": "later", "timestamp": "2026-03-14T15:00:00.000Z",
        "parentId": null, "data": {"content": "Tag releases as vYYYY.MM."}})
        .to_string(),
    );
    text.push('\n');
    std::fs::write(&file, text).unwrap();
    let report = env.run_cycle("2026-03-14T22:00:00Z");
    assert_eq!(source_report(&report, 0)["new_events"], 1);
    let rows = events(&env);
    let later = rows.last().unwrap();
    assert_eq!(later.text, "Tag releases as vYYYY.MM.");
    assert_eq!(later.session.as_deref(), Some(session.as_str()));
    assert_eq!(later.meta["cwd"], "/home/ada/shop");
}

/// Names of the files in a folder.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn opencode_database_is_read_read_only_even_while_opencode_has_it_open() {
    let env = Env::new();
    env.init();
    let data = env.home.join(".local/share/opencode");
    std::fs::create_dir_all(&data).unwrap();
    let db = data.join("opencode.db");
    std::fs::copy(fixtures("opencode").join("opencode.db"), &db).unwrap();
    let before = std::fs::read(&db).unwrap();
    add_source(&env, "opencode", "~/.local/share/opencode");
    let report = env.run_cycle(NOW);
    let src = source_report(&report, 0);
    assert_eq!(src["quarantined"], 0, "{src}");
    assert_eq!(src["files"], 1, "{src}");
    assert_eq!(
        src["unknown"],
        json!({"part:assistant/hologram": 1}),
        "{src}"
    );
    assert_eq!(src["skipped"]["user:synthetic"], 1, "{src}");
    assert_eq!(src["skipped"]["block:reasoning"], 1, "{src}");
    // Not opened for writing: no journal, log or shared-memory file, the bytes unchanged.
    assert_eq!(names(&data), vec!["opencode.db"]);
    assert_eq!(std::fs::read(&db).unwrap(), before);

    let rows = events(&env);
    assert!(rows.iter().all(|r| r.source.as_deref() == Some("opencode")));
    assert_eq!(
        texts(&rows, "message", "user"),
        vec!["Use structured JSON logging in every service of the shop."]
    );
    assert_eq!(find(&rows, "message", "Use structured").trust, "owner");
    assert_eq!(
        find(&rows, "message", "Use structured").meta["cwd"],
        "/home/ada/shop"
    );
    // A subagent's prompt was written by the parent agent, not the owner.
    assert_eq!(
        texts(&rows, "message", "agent"),
        vec!["Find every console.log call in src/."]
    );
    assert_eq!(
        texts(&rows, "message", "assistant"),
        vec!["Switched the services to pino with JSON output."]
    );
    find(&rows, "tool_call", "bash: grep -rn console.log src");
    find(&rows, "tool_result", "src/a.ts:3");
    assert_eq!(rows.len(), 5, "{rows:#?}");
    no_secret_or_reasoning(&rows);

    // opencode running: the database open in WAL mode with a write committed since.
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer.pragma_update(None, "journal_mode", "WAL").unwrap();
    let t = 1773500000000i64;
    writer
        .execute(
            "INSERT INTO message VALUES ('msg_09', 'ses_main', ?1, ?1, ?2)",
            rusqlite::params![t, r#"{"role":"user","time":{"created":1773500000000}}"#],
        )
        .unwrap();
    writer
        .execute(
            "INSERT INTO part VALUES ('prt_99', 'msg_09', 'ses_main', ?1, ?1, ?2)",
            rusqlite::params![
                t,
                r#"{"type":"text","text":"Logs go to stdout, never to files."}"#
            ],
        )
        .unwrap();
    let files_open = names(&data);
    let report = env.run_cycle("2026-03-14T22:00:00Z");
    let src = source_report(&report, 0);
    assert_eq!(src["new_events"], 1, "{src}");
    assert_eq!(
        events(&env).last().unwrap().text,
        "Logs go to stdout, never to files."
    );
    assert_eq!(names(&data), files_open, "dream created no file beside it");
    // The writer was never blocked: it writes again at once.
    writer
        .execute("UPDATE session SET title = 'x' WHERE id = 'ses_main'", [])
        .unwrap();
    drop(writer);

    // `dream ingest --format opencode` reads the same database once.
    let out = env.dream(&[
        "ingest",
        "--format",
        "opencode",
        "--dry-run",
        db.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("would append 6 events"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_file_no_adapter_reads_is_named_by_ingest_the_cycle_and_doctor() {
    let env = Env::new();
    env.init();
    let dir = env.home.join("agent-logs");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("a.jsonl"),
        crate::util::event("2026-03-14T10:00:00Z", "s1", "hello"),
    )
    .unwrap();
    std::fs::write(dir.join("session.json"), "{\"messages\": []}\n").unwrap();
    add_source(&env, "jsonl", "~/agent-logs");

    let out = env.dream(&["ingest", "--dry-run", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("not read: ") && err.contains("session.json: no jsonl adapter reads it"),
        "{err}"
    );
    assert!(err.contains("not read: 1 entries"), "{err}");

    let report = env.run_cycle(NOW);
    let skipped = report["ingest"]["skipped"].to_string();
    assert!(skipped.contains("session.json"), "{skipped}");
    assert_eq!(report["ingest"]["new_events"], 1);

    let doctor = crate::util::stdout(&env.dream(&["doctor"]));
    assert!(
        doctor.contains("entries under ~/agent-logs are not read")
            && doctor.contains("session.json"),
        "{doctor}"
    );
}
