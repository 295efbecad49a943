//! GitHub Copilot CLI sessions (`~/.copilot/session-state/<session>/events.jsonl`): one
//! line → zero or more events. Pure; the table of what becomes what is in
//! `docs/sources.md`.
//!
//! Every line is an envelope `{type, id, timestamp, parentId, data}`; the first,
//! `session.start`, names the session and the folder it ran in (`data.context.cwd`,
//! `gitRoot`, `branch`), which the lines after it borrow. A tool call is taken from its
//! `tool.execution_start` (the assistant message's `toolRequests` say the same and are
//! counted as mirrors) and its result from `tool.execution_complete`. Ids come from the
//! envelope's own `id` (a tool's from its `toolCallId`), so reading a line again finds the
//! same ids. The person's `data.content` is what they typed; `transformedContent`, the
//! text the CLI actually sent with its reminders added, is never read. Reasoning is private
//! and never stored.

use super::{lines, reads_jsonl, Descriptor};
use serde_json::{Map, Value};

use super::{
    clean_text, compact_call, str_of, timestamp, Counts, Draft, FileCtx, MESSAGE_MAX,
    TOOL_OUTPUT_MAX,
};
use crate::sources::event::Trust;

const SOURCE: &str = "copilot";

/// GitHub Copilot CLI sessions, described for the engine and the command line.
pub static DESCRIPTOR: Descriptor = Descriptor {
    name: SOURCE,
    about: "GitHub Copilot CLI sessions (~/.copilot/session-state/<id>/events.jsonl)",
    default_path: "~/.copilot/session-state",
    reads: reads_jsonl,
    reads_what: "*.jsonl files (<session>/events.jsonl)",
    // Its workspace summary, plan, command history, checkpoints and file snapshots.
    companion: |rel| {
        let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let under = |dir: &str| rel.components().any(|c| c.as_os_str() == dir);
        matches!(
            name,
            "workspace.yaml" | "plan.md" | "command-history-state.json"
        ) || under("checkpoints")
            || under("rewind-snapshots")
            || under("files")
    },
    // `<session>/events.jsonl`: the folder is the session (older versions wrote
    // `<session>.jsonl`).
    session_from_path: |path| {
        if path.file_name().is_some_and(|n| n == "events.jsonl") {
            path.parent()
                .and_then(std::path::Path::file_name)
                .and_then(|n| n.to_str())
                .map(str::to_string)
        } else {
            path.file_stem()?.to_str().map(str::to_string)
        }
    },
    // Its first event (`session.start`) states the folder and branch once.
    primes: true,
    layout: lines,
    id_prefix: "cp_",
    map: Some(map),
};

/// Line types that are the CLI's bookkeeping, never events.
const BOOKKEEPING: &[&str] = &[
    "session.resume",
    "session.info",
    "session.error",
    "session.warning",
    "session.truncation",
    "session.model_change",
    "session.mode_changed",
    "session.usage_info",
    "session.idle",
    "session.shutdown",
    "session.compaction_start",
    "session.compaction_complete",
    "session.context_changed",
    "session.title_changed",
    "session.plan_changed",
    "session.workspace_file_changed",
    "assistant.turn_start",
    "assistant.turn_end",
    "assistant.usage",
    "assistant.intent",
    "assistant.message_delta",
    "assistant.reasoning_delta",
    "tool.execution_partial_result",
    "tool.execution_progress",
    "tool.user_requested",
    "hook.start",
    "hook.end",
    "abort",
];

/// Map one Copilot CLI line.
pub fn map(line: Value, ctx: &mut FileCtx, counts: &mut Counts) -> Vec<Draft> {
    if !line.is_object() {
        counts.unknown("line:not-an-object");
        return Vec::new();
    }
    let ty = str_of(&line, "type").unwrap_or("").to_string();
    let empty = Value::Object(Map::new());
    let data = line.get("data").unwrap_or(&empty);
    match ty.as_str() {
        "session.start" => {
            start(&line, data, ctx);
            counts.skip("line:session.start");
            Vec::new()
        }
        "user.message" => user(&line, data, ctx, counts),
        "assistant.message" => assistant(&line, data, ctx, counts),
        "assistant.reasoning" => {
            let _ = timestamp(line.get("timestamp"), ctx);
            counts.skip("block:reasoning");
            Vec::new()
        }
        "tool.execution_start" => tool_start(&line, data, ctx),
        "tool.execution_complete" => tool_complete(&line, data, ctx, counts),
        t if BOOKKEEPING.contains(&t) => {
            let _ = timestamp(line.get("timestamp"), ctx);
            counts.skip(format!("line:{t}"));
            Vec::new()
        }
        "" => {
            counts.unknown("line:(no type)");
            Vec::new()
        }
        t => {
            let _ = timestamp(line.get("timestamp"), ctx);
            counts.unknown(format!("line:{t}"));
            Vec::new()
        }
    }
}

/// Learn the session and its folder from `session.start`.
pub fn start(line: &Value, data: &Value, ctx: &mut FileCtx) {
    let _ = timestamp(line.get("timestamp"), ctx);
    if let Some(s) = str_of(data, "sessionId").filter(|s| !s.is_empty()) {
        ctx.session = Some(s.to_string());
    }
    if let Some(c) = data.get("context") {
        for (from, to) in [
            ("cwd", "cwd"),
            ("gitRoot", "git_root"),
            ("branch", "git_branch"),
            ("repository", "repository"),
        ] {
            if let Some(v) = str_of(c, from).filter(|v| !v.is_empty()) {
                ctx.meta.insert(to.into(), Value::String(v.into()));
            }
        }
    }
}

fn draft(
    line: &Value,
    ctx: &mut FileCtx,
    part: &str,
    kind: &'static str,
    text: String,
    who: (&'static str, Trust),
) -> Draft {
    let id = str_of(line, "id").unwrap_or_default().to_string();
    Draft {
        source: SOURCE,
        id_parts: vec![ctx.session.clone().unwrap_or_default(), id, part.into()],
        ts: timestamp(line.get("timestamp"), ctx),
        kind,
        text,
        session: ctx.session.clone(),
        actor: who.0,
        trust: who.1,
        recalled: false,
        meta: ctx.meta.clone(),
    }
}

fn user(line: &Value, data: &Value, ctx: &mut FileCtx, counts: &mut Counts) -> Vec<Draft> {
    let text = str_of(data, "content").unwrap_or("").trim();
    if text.is_empty() {
        let _ = timestamp(line.get("timestamp"), ctx);
        counts.skip("user:empty");
        return Vec::new();
    }
    if text.starts_with('/') && !text.contains(char::is_whitespace) {
        // A bare slash command the CLI handles itself.
        let _ = timestamp(line.get("timestamp"), ctx);
        counts.skip("user:command");
        return Vec::new();
    }
    let (t, cut) = clean_text(text, MESSAGE_MAX);
    let mut d = draft(line, ctx, "prompt", "message", t, ("user", Trust::Owner));
    if let Some(n) = cut {
        d.meta.insert("truncated_from".into(), n.into());
    }
    if let Some(n) = data
        .get("attachments")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
    {
        d.meta.insert("attachments".into(), n.len().into());
    }
    vec![d]
}

fn assistant(line: &Value, data: &Value, ctx: &mut FileCtx, counts: &mut Counts) -> Vec<Draft> {
    if data
        .get("toolRequests")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty())
    {
        counts.skip("mirror:toolRequests");
    }
    let text = str_of(data, "content").unwrap_or("").trim();
    if text.is_empty() {
        let _ = timestamp(line.get("timestamp"), ctx);
        return Vec::new();
    }
    let (t, cut) = clean_text(text, MESSAGE_MAX);
    let mut d = draft(
        line,
        ctx,
        "reply",
        "message",
        t,
        ("assistant", Trust::Agent),
    );
    if let Some(n) = cut {
        d.meta.insert("truncated_from".into(), n.into());
    }
    vec![d]
}

fn call_id(line: &Value, data: &Value) -> String {
    str_of(data, "toolCallId")
        .or_else(|| str_of(line, "id"))
        .unwrap_or_default()
        .to_string()
}

fn tool_start(line: &Value, data: &Value, ctx: &mut FileCtx) -> Vec<Draft> {
    let name = str_of(data, "toolName")
        .or_else(|| str_of(data, "name"))
        .unwrap_or("tool");
    let id = call_id(line, data);
    let text = compact_call(name, data.get("arguments").unwrap_or(&Value::Null));
    let mut d = draft(
        line,
        ctx,
        "call",
        "tool_call",
        text,
        ("assistant", Trust::Agent),
    );
    d.id_parts = vec![
        ctx.session.clone().unwrap_or_default(),
        id.clone(),
        "call".into(),
    ];
    d.meta.insert("call_id".into(), Value::String(id));
    vec![d]
}

fn tool_complete(line: &Value, data: &Value, ctx: &mut FileCtx, counts: &mut Counts) -> Vec<Draft> {
    let id = call_id(line, data);
    let ok = data.get("success").and_then(Value::as_bool).unwrap_or(true);
    let text = data
        .get("result")
        .and_then(|r| str_of(r, "content").or_else(|| str_of(r, "detailedContent")))
        .or_else(|| data.get("error").and_then(|e| str_of(e, "message")))
        .or_else(|| str_of(data, "error"))
        .map(str::to_string);
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        let _ = timestamp(line.get("timestamp"), ctx);
        counts.skip("tool:no-result");
        return Vec::new();
    };
    let (t, cut) = clean_text(&text, TOOL_OUTPUT_MAX);
    let mut d = draft(line, ctx, "result", "tool_result", t, ("tool", Trust::Tool));
    d.id_parts = vec![
        ctx.session.clone().unwrap_or_default(),
        id.clone(),
        "result".into(),
    ];
    d.meta.insert("call_id".into(), Value::String(id));
    if !ok {
        d.meta
            .insert("status".into(), Value::String("error".into()));
    }
    if let Some(n) = cut {
        d.meta.insert("truncated_from".into(), n.into());
    }
    vec![d]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_session_maps_to_prompt_reply_call_and_result() {
        let mut ctx = FileCtx::default();
        let mut counts = Counts::default();
        let lines = [
            json!({"type": "session.start", "id": "e1", "timestamp": "2026-01-02T09:00:00Z", "parentId": null,
                   "data": {"sessionId": "s9", "context": {"cwd": "/w/app", "branch": "main"}}}),
            json!({"type": "user.message", "id": "e2", "timestamp": "2026-01-02T09:00:01Z",
                   "data": {"content": "run the tests", "transformedContent": "<reminder>x</reminder> run the tests"}}),
            json!({"type": "assistant.reasoning", "id": "e3", "timestamp": "2026-01-02T09:00:02Z", "data": {"content": "hmm"}}),
            json!({"type": "assistant.message", "id": "e4", "timestamp": "2026-01-02T09:00:03Z",
                   "data": {"content": "Running them.", "toolRequests": [{"toolCallId": "t1", "name": "bash", "arguments": {"command": "cargo test"}}]}}),
            json!({"type": "tool.execution_start", "id": "e5", "timestamp": "2026-01-02T09:00:04Z",
                   "data": {"toolCallId": "t1", "toolName": "bash", "arguments": {"command": "cargo test"}}}),
            json!({"type": "tool.execution_complete", "id": "e6", "timestamp": "2026-01-02T09:00:09Z",
                   "data": {"toolCallId": "t1", "success": true, "result": {"content": "ok"}}}),
        ];
        let mut out = Vec::new();
        for l in lines {
            out.extend(map(l, &mut ctx, &mut counts));
        }
        let kinds: Vec<_> = out
            .iter()
            .map(|d| (d.kind, d.actor, d.text.as_str()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("message", "user", "run the tests"),
                ("message", "assistant", "Running them."),
                ("tool_call", "assistant", "bash: cargo test"),
                ("tool_result", "tool", "ok"),
            ]
        );
        assert_eq!(out[0].trust, Trust::Owner);
        assert_eq!(out[0].meta["cwd"], "/w/app");
        assert_eq!(out[0].session.as_deref(), Some("s9"));
        assert_eq!(counts.skipped["block:reasoning"], 1);
        assert_eq!(counts.skipped["mirror:toolRequests"], 1);
    }
}
