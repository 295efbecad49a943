//! Claude Code session files (`~/.claude/projects/<project>/<session>.jsonl`, subagents
//! under `<session>/subagents/`): one line → zero or more events. Pure; the table of what
//! becomes what is in `docs/sources.md`.
//!
//! Every line carries its own `uuid`, `sessionId`, `timestamp`, `cwd` and `gitBranch`, so a
//! line maps on its own wherever a read starts. Ids come from the line's uuid and the
//! block's place in it (plus the text), so reading a line again, or a resumed session that
//! copies old lines, finds the same ids.

use super::{lines, no_companion, reads_jsonl, Descriptor};
use std::borrow::Cow;

use serde_json::{Map, Value};

use super::{
    cap, clean_text, compact_call, placeholder, starts_with_tag, str_of, tag_body, timestamp,
    Counts, Draft, FileCtx, MESSAGE_MAX, TOOL_OUTPUT_MAX,
};
use crate::sources::event::Trust;

const SOURCE: &str = "claude-code";

/// Claude Code session files, described for the engine and the command line.
pub static DESCRIPTOR: Descriptor = Descriptor {
    name: SOURCE,
    about: "Claude Code session files (~/.claude/projects/<project>/*.jsonl)",
    default_path: "~/.claude/projects",
    reads: reads_jsonl,
    reads_what: "*.jsonl files",
    companion: no_companion,
    // A session file is named after its session.
    session_from_path: |path| path.file_stem()?.to_str().map(str::to_string),
    primes: false,
    layout: lines,
    id_prefix: "cc_",
    map: Some(map),
};

/// Line types that are bookkeeping of the harness, never events.
const BOOKKEEPING: &[&str] = &[
    "progress",
    "file-history-snapshot",
    "queue-operation",
    "last-prompt",
    "permission-mode",
    "mode",
    "summary",
    "custom-title",
    "ai-title",
    "agent-name",
    "agent-setting",
    "pr-link",
    "frame-link",
    "worktree-state",
    "bridge-session",
    "relocated",
    "started",
    "result",
    "atis-latch",
];

/// System subtypes that are status lines of the harness.
const SYSTEM_SKIPPED: &[&str] = &[
    "local_command",
    "turn_duration",
    "api_error",
    "api_refusal",
    "error",
    "stop_hook_summary",
    "compact_boundary",
    "microcompact_boundary",
    "bridge_status",
    "scheduled_task_fire",
    "informational",
    "session_start",
    "model_refusal_fallback",
];

/// Attachment types that are harness state or injected instructions, never events.
const ATTACHMENTS_SKIPPED: &[&str] = &[
    "hook_success",
    "hook_non_blocking_error",
    "hook_blocking_error",
    "hook_cancelled",
    "hook_deferred_tool",
    "hook_error_during_execution",
    "hook_permission_decision",
    "hook_stopped_continuation",
    "hook_system_message",
    "task_reminder",
    "todo_reminder",
    "task_status",
    "deferred_tools_delta",
    "mcp_instructions_delta",
    "agent_listing_delta",
    "skill_listing",
    "invoked_skills",
    "dynamic_skill",
    "edited_text_file",
    "file",
    "directory",
    "compact_file_reference",
    "plan_file_reference",
    "read_truncation_notice",
    "auto_mode",
    "auto_mode_exit",
    "plan_mode",
    "plan_mode_exit",
    "plan_mode_reentry",
    "command_permissions",
    "date_change",
    "goal_status",
    "budget_usd",
    "max_turns_reached",
    "agent_mention",
    "structured_output",
    "output_style",
    "batching_reminder_sent",
    "silent_turn_reminder",
    "total_tokens_reminder",
    "critical_system_reminder",
    "ultra_effort_enter",
    "ultra_effort_exit",
];

/// What every event of a line shares.
struct Base {
    uuid: Option<String>,
    ts: Result<String, String>,
    session: Option<String>,
    meta: Map<String, Value>,
}

impl Base {
    fn of(line: &Value, ctx: &mut FileCtx) -> Base {
        let uuid = str_of(line, "uuid").map(str::to_string);
        let ts = timestamp(line.get("timestamp"), ctx);
        let session = str_of(line, "sessionId")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .or_else(|| ctx.session.clone());
        let mut meta = Map::new();
        for (from, to) in [
            ("cwd", "cwd"),
            ("gitBranch", "git_branch"),
            ("agentId", "agent_id"),
        ] {
            if let Some(v) = str_of(line, from).filter(|v| !v.is_empty()) {
                meta.insert(to.into(), Value::String(v.into()));
            }
        }
        Base {
            uuid,
            ts,
            session,
            meta,
        }
    }

    fn draft(
        &self,
        part: &str,
        kind: &'static str,
        text: String,
        actor: &'static str,
        trust: Trust,
    ) -> Draft {
        let id_parts = match &self.uuid {
            Some(u) => vec![u.clone(), part.to_string()],
            None => vec![
                self.session.clone().unwrap_or_default(),
                self.ts.clone().unwrap_or_default(),
                part.to_string(),
            ],
        };
        Draft {
            source: SOURCE,
            id_parts,
            ts: self.ts.clone(),
            kind,
            text,
            session: self.session.clone(),
            actor,
            trust,
            recalled: false,
            meta: self.meta.clone(),
        }
    }

    /// Text the harness loaded from memory files into the agent's context: stored once per
    /// session and distinct text, marked recalled so it never counts as support.
    fn recalled(&self, text: &str, path: Option<&str>) -> Draft {
        let (text, _) = clean_text(text.trim(), MESSAGE_MAX);
        let mut d = self.draft("memory", "memory", text, "system", Trust::External);
        d.id_parts = vec!["memory".into(), self.session.clone().unwrap_or_default()];
        d.recalled = true;
        if let Some(p) = path {
            d.meta.insert("path".into(), Value::String(p.into()));
        }
        d
    }
}

/// Map one Claude Code line.
pub fn map(line: Value, ctx: &mut FileCtx, counts: &mut Counts) -> Vec<Draft> {
    if !line.is_object() {
        counts.unknown("line:not-an-object");
        return Vec::new();
    }
    let ty = str_of(&line, "type").unwrap_or("").to_string();
    match ty.as_str() {
        "user" => user(&line, ctx, counts),
        "assistant" => assistant(&line, ctx, counts),
        "system" => system(&line, ctx, counts),
        "attachment" => attachment(&line, ctx, counts),
        t if BOOKKEEPING.contains(&t) => {
            // Their timestamps still serve a later line that lacks one.
            let _ = timestamp(line.get("timestamp"), ctx);
            counts.skip(format!("line:{t}"));
            Vec::new()
        }
        "" => {
            counts.unknown("line:(no type)");
            Vec::new()
        }
        t => {
            counts.unknown(format!("line:{t}"));
            Vec::new()
        }
    }
}

fn is_true(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool) == Some(true)
}

/// The content blocks of a message: a plain string is one text block. Borrowed, so a
/// megabyte of tool output is never copied.
fn blocks(content: Option<&Value>) -> Vec<Cow<'_, Value>> {
    match content {
        Some(Value::String(s)) => vec![Cow::Owned(serde_json::json!({"type": "text", "text": s}))],
        Some(Value::Array(items)) => items.iter().map(Cow::Borrowed).collect(),
        _ => Vec::new(),
    }
}

fn user(line: &Value, ctx: &mut FileCtx, counts: &mut Counts) -> Vec<Draft> {
    let b = Base::of(line, ctx);
    let content = line.get("message").and_then(|m| m.get("content"));
    let mut out = Vec::new();

    if is_true(line, "isCompactSummary") {
        let text = blocks(content)
            .iter()
            .filter_map(|blk| str_of(blk, "text"))
            .collect::<Vec<_>>()
            .join("\n");
        if !text.trim().is_empty() {
            let (text, _) = clean_text(text.trim(), MESSAGE_MAX);
            out.push(b.draft("summary", "session_summary", text, "system", Trust::Agent));
        } else {
            counts.skip("user:empty");
        }
        return out;
    }

    let mut prose: Vec<String> = Vec::new();
    for (i, block) in blocks(content).iter().enumerate() {
        match str_of(block, "type").unwrap_or("") {
            "text" => {
                if let Some(t) = str_of(block, "text") {
                    prose.push(t.to_string());
                }
            }
            "image" => prose.push(placeholder("image", block)),
            "document" => prose.push(placeholder("document", block)),
            "tool_result" => out.push(tool_result(&b, block, i, counts)),
            t => counts.unknown(format!("block:{t}")),
        }
    }
    let text = prose.join("\n");
    let text = reminders(&b, &text, counts, &mut out);
    let text = text.trim();
    if text.is_empty() {
        return out;
    }
    if is_true(line, "isMeta") || starts_with_tag(text, "local-command-caveat") {
        counts.skip("user:meta");
        return out;
    }
    if starts_with_tag(text, "command-name") || starts_with_tag(text, "command-message") {
        let name = tag_body(text, "command-name").unwrap_or("").trim();
        let args = tag_body(text, "command-args").unwrap_or("").trim();
        if args.is_empty() {
            counts.skip("user:command");
        } else {
            let (t, _) = clean_text(&format!("{name} {args}"), MESSAGE_MAX);
            out.push(b.draft("prompt", "message", t, "user", Trust::Owner));
        }
        return out;
    }
    for tag in ["local-command-stdout", "local-command-stderr"] {
        if starts_with_tag(text, tag) {
            counts.skip("user:command-output");
            return out;
        }
    }
    if starts_with_tag(text, "bash-input") {
        let cmd = tag_body(text, "bash-input").unwrap_or("").trim();
        let t = compact_call("bash", &Value::String(cmd.into()));
        out.push(b.draft("bash", "tool_call", t, "user", Trust::Tool));
        return out;
    }
    if starts_with_tag(text, "bash-stdout") || starts_with_tag(text, "bash-stderr") {
        let stdout = tag_body(text, "bash-stdout").unwrap_or("").trim();
        let stderr = tag_body(text, "bash-stderr").unwrap_or("").trim();
        let joined = [stdout, stderr]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        let joined = if joined.is_empty() {
            "(no output)".to_string()
        } else {
            joined
        };
        let (t, cut) = clean_text(&joined, TOOL_OUTPUT_MAX);
        let mut d = b.draft("bash-output", "tool_result", t, "tool", Trust::Tool);
        if let Some(n) = cut {
            d.meta.insert("truncated_from".into(), n.into());
        }
        out.push(d);
        return out;
    }
    for tag in [
        "task-notification",
        "user-prompt-submit-hook",
        "local-command",
    ] {
        if starts_with_tag(text, tag) {
            counts.skip(format!("user:{tag}"));
            return out;
        }
    }
    if text.starts_with("[Request interrupted by user") {
        counts.skip("user:interrupt");
        return out;
    }
    // A subagent's prompt, or a message another agent sent, is not the owner's word.
    let from_agent = is_true(line, "isSidechain")
        || line
            .get("origin")
            .is_some_and(|o| o.get("from").is_some() || o.get("senderTaskId").is_some());
    let (t, cut) = clean_text(text, MESSAGE_MAX);
    let mut d = if from_agent {
        b.draft("prompt", "message", t, "agent", Trust::Agent)
    } else {
        b.draft("prompt", "message", t, "user", Trust::Owner)
    };
    if let Some(n) = cut {
        d.meta.insert("truncated_from".into(), n.into());
    }
    out.push(d);
    out
}

/// Take `<system-reminder>` sections out of a text: a reminder that carries memory files
/// (CLAUDE.md) becomes a recalled event, the others are counted and dropped.
fn reminders(b: &Base, text: &str, counts: &mut Counts, out: &mut Vec<Draft>) -> String {
    let (kept, memories) = split_reminders(text, counts);
    out.extend(memories.iter().map(|m| b.recalled(m, None)));
    kept
}

/// A text without its `<system-reminder>` sections, and the bodies of those that carry
/// memory files; the others are counted.
fn split_reminders<'a>(text: &'a str, counts: &mut Counts) -> (String, Vec<&'a str>) {
    const OPEN: &str = "<system-reminder>";
    const CLOSE: &str = "</system-reminder>";
    if !text.contains(OPEN) {
        return (text.to_string(), Vec::new());
    }
    let mut rest = text;
    let mut kept = String::new();
    let mut memories = Vec::new();
    while let Some(at) = rest.find(OPEN) {
        kept.push_str(&rest[..at]);
        let body_start = at + OPEN.len();
        let (body, next) = match rest[body_start..].find(CLOSE) {
            Some(e) => (
                &rest[body_start..body_start + e],
                body_start + e + CLOSE.len(),
            ),
            None => (&rest[body_start..], rest.len()),
        };
        let memory = body.contains("# claudeMd")
            || (body.contains("Contents of ") && body.contains("CLAUDE.md"));
        if memory && !body.trim().is_empty() {
            memories.push(body);
        } else {
            counts.skip("user:system-reminder");
        }
        rest = &rest[next..];
    }
    kept.push_str(rest);
    (kept, memories)
}

/// The text of a tool result's content: strings and text items joined, images as
/// placeholders, reminders the harness appended taken out.
fn result_text(block: &Value, counts: &mut Counts) -> String {
    let mut parts: Vec<String> = Vec::new();
    match block.get("content") {
        Some(Value::String(s)) => parts.push(s.clone()),
        Some(Value::Array(items)) => {
            for item in items {
                match item {
                    Value::String(s) => parts.push(s.clone()),
                    _ => match str_of(item, "type").unwrap_or("") {
                        "text" => parts.push(str_of(item, "text").unwrap_or("").to_string()),
                        "image" => parts.push(placeholder("image", item)),
                        "document" => parts.push(placeholder("document", item)),
                        "tool_reference" => parts.push(format!(
                            "[tool: {}]",
                            str_of(item, "tool_name").unwrap_or("?")
                        )),
                        t => match str_of(item, "text") {
                            Some(text) => parts.push(text.to_string()),
                            None => counts.unknown(format!("result-item:{t}")),
                        },
                    },
                }
            }
        }
        Some(Value::Object(o)) => {
            if let Some(Value::String(s)) = o.get("text") {
                parts.push(s.clone());
            }
        }
        _ => {}
    }
    if parts.iter().all(|p| p.trim().is_empty()) {
        if let Some(t) = str_of(block, "text") {
            parts = vec![t.to_string()];
        }
    }
    let joined = parts.join("\n");
    let (kept, _) = split_reminders(&joined, counts);
    kept.trim().to_string()
}

fn tool_result(b: &Base, block: &Value, index: usize, counts: &mut Counts) -> Draft {
    let call = str_of(block, "tool_use_id").unwrap_or("");
    let is_error = is_true(block, "is_error");
    let text = result_text(block, counts);
    let text = if text.is_empty() {
        "(no output)".to_string()
    } else {
        text
    };
    let (mut t, cut) = clean_text(&text, TOOL_OUTPUT_MAX);
    if is_error {
        t = format!("[error] {t}");
    }
    let part = if call.is_empty() {
        format!("result{index}")
    } else {
        format!("result:{call}")
    };
    let mut d = b.draft(&part, "tool_result", t, "tool", Trust::Tool);
    if !call.is_empty() {
        d.meta.insert("call_id".into(), Value::String(call.into()));
    }
    if is_error {
        d.meta.insert("is_error".into(), Value::Bool(true));
    }
    if let Some(n) = cut {
        d.meta.insert("truncated_from".into(), n.into());
    }
    d
}

fn assistant(line: &Value, ctx: &mut FileCtx, counts: &mut Counts) -> Vec<Draft> {
    let mut b = Base::of(line, ctx);
    let message = line.get("message");
    let model = message.and_then(|m| str_of(m, "model")).unwrap_or("");
    if is_true(line, "isApiErrorMessage") || model == "<synthetic>" {
        counts.skip("assistant:synthetic");
        return Vec::new();
    }
    if !model.is_empty() {
        b.meta.insert("model".into(), Value::String(model.into()));
    }
    let mut out = Vec::new();
    for (i, block) in blocks(message.and_then(|m| m.get("content")))
        .iter()
        .enumerate()
    {
        let ty = str_of(block, "type").unwrap_or("");
        match ty {
            "text" => {
                let text = str_of(block, "text").unwrap_or("").trim();
                if text.is_empty() {
                    counts.skip("block:empty-text");
                    continue;
                }
                let (t, cut) = clean_text(text, MESSAGE_MAX);
                let mut d = b.draft(&format!("text{i}"), "message", t, "assistant", Trust::Agent);
                if let Some(n) = cut {
                    d.meta.insert("truncated_from".into(), n.into());
                }
                out.push(d);
            }
            "thinking" | "redacted_thinking" => counts.skip("block:thinking"),
            "tool_use" | "server_tool_use" => {
                let name = str_of(block, "name")
                    .filter(|n| !n.trim().is_empty())
                    .unwrap_or("tool");
                let call = str_of(block, "id").unwrap_or("");
                let t = compact_call(name, block.get("input").unwrap_or(&Value::Null));
                let part = if call.is_empty() {
                    format!("call{i}")
                } else {
                    format!("call:{call}")
                };
                let mut d = b.draft(&part, "tool_call", t, "assistant", Trust::Tool);
                d.meta
                    .insert("tool".into(), Value::String(cap(name, 200).0));
                if !call.is_empty() {
                    d.meta.insert("call_id".into(), Value::String(call.into()));
                }
                out.push(d);
            }
            "image" | "document" | "fallback" => counts.skip(format!("block:{ty}")),
            t if t.ends_with("_tool_result") => {
                let mut d = tool_result(&b, block, i, counts);
                d.actor = "tool";
                out.push(d);
            }
            t => counts.unknown(format!("block:{t}")),
        }
    }
    out
}

fn system(line: &Value, ctx: &mut FileCtx, counts: &mut Counts) -> Vec<Draft> {
    let subtype = str_of(line, "subtype").unwrap_or("");
    match subtype {
        "away_summary" => {
            let b = Base::of(line, ctx);
            match str_of(line, "content")
                .map(str::trim)
                .filter(|t| !t.is_empty())
            {
                Some(text) => {
                    let (t, _) = clean_text(text, MESSAGE_MAX);
                    vec![b.draft("summary", "session_summary", t, "system", Trust::Agent)]
                }
                None => {
                    counts.skip("system:away_summary");
                    Vec::new()
                }
            }
        }
        s if SYSTEM_SKIPPED.contains(&s) => {
            counts.skip(format!("system:{s}"));
            Vec::new()
        }
        s => {
            counts.unknown(format!("system:{s}"));
            Vec::new()
        }
    }
}

fn attachment(line: &Value, ctx: &mut FileCtx, counts: &mut Counts) -> Vec<Draft> {
    let Some(att) = line.get("attachment") else {
        counts.unknown("attachment:(none)");
        return Vec::new();
    };
    let ty = str_of(att, "type").unwrap_or("");
    let b = Base::of(line, ctx);
    match ty {
        "nested_memory" => {
            let path = str_of(att, "path");
            let text = match att.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(c) => str_of(c, "content").unwrap_or("").to_string(),
                None => String::new(),
            };
            if text.trim().is_empty() {
                counts.skip("attachment:nested_memory");
                return Vec::new();
            }
            vec![b.recalled(&text, path)]
        }
        "relevant_memories" => {
            let texts: Vec<String> = att
                .get("memories")
                .and_then(Value::as_array)
                .map(|ms| {
                    ms.iter()
                        .filter_map(|m| {
                            str_of(m, "content")
                                .or_else(|| str_of(m, "text"))
                                .map(str::to_string)
                        })
                        .collect()
                })
                .unwrap_or_default();
            texts
                .iter()
                .filter(|t| !t.trim().is_empty())
                .map(|t| b.recalled(t, None))
                .collect()
        }
        "hook_additional_context" => {
            let text = match att.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(items)) => items
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            };
            if text.trim().is_empty() {
                counts.skip("attachment:hook_additional_context");
                return Vec::new();
            }
            let mut d = b.recalled(&text, None);
            if let Some(h) = str_of(att, "hookName") {
                d.meta.insert("hook".into(), Value::String(h.into()));
            }
            vec![d]
        }
        "queued_command" => {
            let mode = str_of(att, "commandMode").unwrap_or("prompt");
            let from_agent = att
                .get("origin")
                .is_some_and(|o| o.get("from").is_some() || o.get("senderTaskId").is_some());
            if mode != "prompt" || is_true(att, "isMeta") {
                counts.skip("attachment:queued_command");
                return Vec::new();
            }
            let mut prose = Vec::new();
            for block in blocks(att.get("prompt")) {
                match str_of(&block, "type").unwrap_or("") {
                    "text" => prose.push(str_of(&block, "text").unwrap_or("").to_string()),
                    "image" => prose.push(placeholder("image", &block)),
                    "document" => prose.push(placeholder("document", &block)),
                    t => counts.unknown(format!("block:{t}")),
                }
            }
            let text = prose.join("\n");
            if text.trim().is_empty() {
                counts.skip("attachment:queued_command");
                return Vec::new();
            }
            let (t, _) = clean_text(text.trim(), MESSAGE_MAX);
            let d = if from_agent {
                b.draft("queued", "message", t, "agent", Trust::Agent)
            } else {
                b.draft("queued", "message", t, "user", Trust::Owner)
            };
            vec![d]
        }
        t if ATTACHMENTS_SKIPPED.contains(&t) => {
            counts.skip(format!("attachment:{t}"));
            Vec::new()
        }
        t => {
            counts.unknown(format!("attachment:{t}"));
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::adapters::{map_line, Format};
    use serde_json::json;

    fn map(v: Value) -> (Vec<crate::sources::event::Event>, Counts) {
        let mut ctx = FileCtx::default();
        let mut counts = Counts::default();
        let events = map_line(Format::ClaudeCode, v, &mut ctx, &mut counts)
            .into_iter()
            .map(|r| r.unwrap().event)
            .collect();
        (events, counts)
    }

    fn line(extra: Value) -> Value {
        let mut base = json!({
            "uuid": "11111111-2222-4333-8444-555555555555",
            "sessionId": "s-1",
            "timestamp": "2026-03-01T10:00:00.000Z",
            "cwd": "/home/ada/proj",
            "gitBranch": "main",
        });
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        base
    }

    #[test]
    fn a_user_prompt_is_an_owner_message_with_session_and_meta() {
        let (ev, _) = map(line(
            json!({"type": "user", "message": {"role": "user", "content": "use pnpm, never npm"}}),
        ));
        assert_eq!(ev.len(), 1);
        let e = &ev[0];
        assert_eq!(
            (e.kind.as_str(), e.trust, e.text.as_str()),
            ("message", Trust::Owner, "use pnpm, never npm")
        );
        assert_eq!(e.session.as_deref(), Some("s-1"));
        assert_eq!(e.meta.as_ref().unwrap()["git_branch"], "main");
        assert!(e.id.starts_with("cc_"));
    }

    #[test]
    fn thinking_never_becomes_text_and_tool_use_is_compact() {
        let (ev, counts) = map(line(
            json!({"type": "assistant", "message": {"model": "claude-x", "content": [
                {"type": "thinking", "thinking": "secret plan", "signature": "c2lnbmF0dXJl"},
                {"type": "text", "text": "Running the tests."},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cargo test"}}
            ]}}),
        ));
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0].trust, Trust::Agent);
        assert_eq!(ev[1].kind, "tool_call");
        assert_eq!(ev[1].text, "Bash: cargo test");
        assert_eq!(ev[1].meta.as_ref().unwrap()["call_id"], "toolu_1");
        assert_eq!(ev[1].meta.as_ref().unwrap()["model"], "claude-x");
        assert_eq!(counts.skipped["block:thinking"], 1);
        assert!(ev.iter().all(|e| !e.text.contains("secret plan")));
    }

    #[test]
    fn injected_context_is_skipped_or_recalled() {
        let (ev, counts) = map(line(
            json!({"type": "user", "message": {"role": "user", "content":
            "<system-reminder>\nAs you answer, use this context:\n# claudeMd\nContents of /home/ada/CLAUDE.md:\nAlways use tabs.\n</system-reminder>\nwhat is next?"}}),
        ));
        assert_eq!(ev.len(), 2);
        assert!(ev[0].recalled && ev[0].text.contains("Always use tabs"));
        assert_eq!(ev[1].text, "what is next?");
        assert_eq!(ev[1].trust, Trust::Owner);
        let (ev, counts2) = map(line(
            json!({"type": "user", "message": {"role": "user", "content": "<local-command-stdout>Kept model</local-command-stdout>"}}),
        ));
        assert!(ev.is_empty());
        assert_eq!(counts2.skipped["user:command-output"], 1);
        assert!(counts.unknown.is_empty());
    }

    #[test]
    fn unknown_types_are_counted_not_errors() {
        let (ev, counts) = map(line(json!({"type": "hologram", "data": 1})));
        assert!(ev.is_empty());
        assert_eq!(counts.unknown["line:hologram"], 1);
    }
}
