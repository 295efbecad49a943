//! Codex rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`): one
//! line → zero or more events. Pure; the table of what becomes what is in
//! `docs/sources.md`.
//!
//! A rollout records the model's history as `response_item` lines and, beside them, UI
//! events (`event_msg`) that repeat the same visible text (`user_message`,
//! `agent_message`, `exec_command_end`, ...). The response items are the record; their
//! `event_msg` mirrors are counted once as skipped. The session, working folder and git
//! branch come from the file's first line (`session_meta`, or the uuid in the file name),
//! the model from the latest `turn_context`; a read that starts mid-file is primed with
//! the first line by `sources`.

use super::{lines, no_companion, reads_jsonl, Descriptor};
use serde_json::Value;

use super::{
    cap, clean_text, compact_call, placeholder, starts_with_tag, str_of, tag_body, timestamp,
    Counts, Draft, FileCtx, MESSAGE_MAX, TOOL_OUTPUT_MAX,
};
use crate::sources::event::Trust;

const SOURCE: &str = "codex";

/// Codex rollout files, described for the engine and the command line.
pub static DESCRIPTOR: Descriptor = Descriptor {
    name: SOURCE,
    about: "Codex rollout files (~/.codex/sessions/YYYY/MM/DD/*.jsonl)",
    default_path: "~/.codex/sessions",
    reads: reads_jsonl,
    reads_what: "*.jsonl files",
    companion: no_companion,
    // The session's uuid ends the rollout's name.
    session_from_path: |path| session_from_file_stem(path.file_stem()?.to_str()?),
    // The first line (`session_meta`) states the folder, branch and sub-agent once.
    primes: true,
    layout: lines,
    id_prefix: "cx_",
    map: Some(map),
};

/// `event_msg` types that repeat a response item (the visible text is counted once).
const MIRRORS: &[&str] = &[
    "user_message",
    "agent_message",
    "agent_message_delta",
    "agent_reasoning",
    "agent_reasoning_delta",
    "agent_reasoning_raw_content",
    "agent_reasoning_raw_content_delta",
    "agent_reasoning_section_break",
    "exec_command_begin",
    "exec_command_end",
    "exec_command_output_delta",
    "patch_apply_begin",
    "patch_apply_end",
    "mcp_tool_call_begin",
    "mcp_tool_call_end",
    "web_search_begin",
    "web_search_end",
    "view_image_tool_call",
    "image_generation_begin",
    "image_generation_end",
    "dynamic_tool_call_request",
    "dynamic_tool_call_response",
    "collab_agent_spawn_begin",
    "collab_agent_spawn_end",
    "collab_agent_interaction_begin",
    "collab_agent_interaction_end",
    "collab_waiting_begin",
    "collab_waiting_end",
    "collab_close_begin",
    "collab_close_end",
    "item_started",
    "item_completed",
];

/// `event_msg` types that are status of the harness.
const EVENTS_SKIPPED: &[&str] = &[
    "token_count",
    "task_started",
    "task_complete",
    "turn_started",
    "turn_complete",
    "turn_aborted",
    "turn_diff",
    "context_compacted",
    "thread_name_updated",
    "thread_goal_updated",
    "thread_settings_applied",
    "guardian_assessment",
    "entered_review_mode",
    "exited_review_mode",
    "error",
    "stream_error",
    "warning",
    "background_event",
    "undo_started",
    "undo_completed",
    "sub_agent_activity",
    "plan_update",
    "session_configured",
    "shutdown_complete",
    "deprecation_notice",
];

/// Response item types that carry no text for memory.
const ITEMS_SKIPPED: &[&str] = &[
    "reasoning",
    "ghost_snapshot",
    "compaction",
    "compaction_summary",
];

/// The session uuid at the end of a rollout file name
/// (`rollout-2025-12-28T12-18-30-019b64e5-57fa-7463-b644-fba7e456f905`).
pub fn session_from_file_stem(stem: &str) -> Option<String> {
    if stem.len() < 36 {
        return None;
    }
    let tail = &stem[stem.len() - 36..];
    let shape = tail.char_indices().all(|(i, c)| match i {
        8 | 13 | 18 | 23 => c == '-',
        _ => c.is_ascii_hexdigit(),
    });
    shape.then(|| tail.to_ascii_lowercase())
}

/// Map one Codex line.
pub fn map(line: Value, ctx: &mut FileCtx, counts: &mut Counts) -> Vec<Draft> {
    if !line.is_object() {
        counts.unknown("line:not-an-object");
        return Vec::new();
    }
    let ty = str_of(&line, "type").map(str::to_string);
    let payload = line.get("payload");
    match (ty.as_deref(), payload) {
        (Some("session_meta"), Some(p)) => {
            let _ = timestamp(line.get("timestamp"), ctx);
            session_meta(p, ctx);
            counts.skip("line:session_meta");
            Vec::new()
        }
        (Some("turn_context"), Some(p)) => {
            let ts = timestamp(line.get("timestamp"), ctx);
            if let Some(m) = str_of(p, "model").or_else(|| {
                p.get("collaboration_mode")
                    .and_then(|c| c.get("settings"))
                    .and_then(|s| str_of(s, "model"))
            }) {
                ctx.model = Some(m.to_string());
            }
            if let Some(c) = str_of(p, "cwd") {
                ctx.meta.insert("cwd".into(), Value::String(c.to_string()));
            }
            counts.skip("line:turn_context");
            match str_of(p, "user_instructions").filter(|t| !t.trim().is_empty()) {
                Some(text) => vec![recalled(ctx, ts, text)],
                None => Vec::new(),
            }
        }
        (Some("world_state"), Some(p)) => {
            let ts = timestamp(line.get("timestamp"), ctx);
            counts.skip("line:world_state");
            let agents_md = p.get("state").and_then(|s| s.get("agents_md"));
            match agents_md
                .and_then(|a| str_of(a, "text"))
                .filter(|t| !t.trim().is_empty())
            {
                Some(text) => vec![recalled(ctx, ts, text)],
                None => Vec::new(),
            }
        }
        (Some("response_item"), Some(p)) => {
            let ts = timestamp(line.get("timestamp"), ctx);
            let raw_ts = str_of(&line, "timestamp").unwrap_or("").to_string();
            response_item(p, ts, &raw_ts, ctx, counts)
        }
        (Some("event_msg"), Some(p)) => {
            let _ = timestamp(line.get("timestamp"), ctx);
            let t = str_of(p, "type").unwrap_or("");
            if MIRRORS.contains(&t) {
                counts.skip(format!("mirror:{t}"));
            } else if EVENTS_SKIPPED.contains(&t) {
                counts.skip(format!("event_msg:{t}"));
            } else {
                counts.unknown(format!("event_msg:{t}"));
            }
            Vec::new()
        }
        (Some("compacted"), Some(p)) => {
            let ts = timestamp(line.get("timestamp"), ctx);
            match str_of(p, "message")
                .map(str::trim)
                .filter(|m| !m.is_empty())
            {
                Some(text) => {
                    let (t, _) = clean_text(text, MESSAGE_MAX);
                    let raw_ts = str_of(&line, "timestamp").unwrap_or("");
                    vec![draft(
                        ctx,
                        ts,
                        vec![raw_ts.into(), "compacted".into()],
                        "session_summary",
                        t,
                        "system",
                        Trust::Agent,
                    )]
                }
                None => {
                    counts.skip("line:compacted");
                    Vec::new()
                }
            }
        }
        (Some("inter_agent_communication_metadata"), _) => {
            counts.skip("line:inter_agent_communication_metadata");
            Vec::new()
        }
        // The first rollout format (2025): a header line, then bare response items, and
        // state records, none with their own timestamp.
        (None, None) if line.get("record_type").is_some() => {
            counts.skip("line:state");
            Vec::new()
        }
        (None, None) if line.get("id").is_some() && line.get("timestamp").is_some() => {
            let _ = timestamp(line.get("timestamp"), ctx);
            session_meta(&line, ctx);
            counts.skip("line:session_meta");
            Vec::new()
        }
        (Some(t), None) if is_response_item(t) => {
            let ts = timestamp(None, ctx);
            let raw_ts = ctx.last_ts.clone().unwrap_or_default();
            response_item(&line, ts, &raw_ts, ctx, counts)
        }
        (t, _) => {
            counts.unknown(format!("line:{}", t.unwrap_or("(no type)")));
            Vec::new()
        }
    }
}

fn is_response_item(t: &str) -> bool {
    matches!(
        t,
        "message"
            | "reasoning"
            | "function_call"
            | "function_call_output"
            | "custom_tool_call"
            | "custom_tool_call_output"
            | "local_shell_call"
            | "local_shell_call_output"
            | "web_search_call"
    )
}

fn session_meta(p: &Value, ctx: &mut FileCtx) {
    if ctx.seen_header {
        // A later session_meta belongs to history copied from another session.
        return;
    }
    ctx.seen_header = true;
    if ctx.session.is_none() {
        if let Some(id) = str_of(p, "id").or_else(|| str_of(p, "session_id")) {
            ctx.session = Some(id.to_string());
        }
    }
    if let Some(c) = str_of(p, "cwd") {
        ctx.meta.insert("cwd".into(), Value::String(c.to_string()));
    }
    if let Some(b) = p.get("git").and_then(|g| str_of(g, "branch")) {
        ctx.meta
            .insert("git_branch".into(), Value::String(b.to_string()));
    }
    ctx.subagent = p.get("source").and_then(|s| s.get("subagent")).is_some();
}

fn draft(
    ctx: &FileCtx,
    ts: Result<String, String>,
    id_parts: Vec<String>,
    kind: &'static str,
    text: String,
    actor: &'static str,
    trust: Trust,
) -> Draft {
    let meta = ctx.meta.clone();
    let mut parts = vec![ctx.session.clone().unwrap_or_default()];
    parts.extend(id_parts);
    Draft {
        source: SOURCE,
        id_parts: parts,
        ts,
        kind,
        text,
        session: ctx.session.clone(),
        actor,
        trust,
        recalled: false,
        meta,
    }
}

/// Instructions the harness loaded from AGENTS.md files: stored once per session and
/// distinct text, marked recalled so they never count as support.
fn recalled(ctx: &FileCtx, ts: Result<String, String>, text: &str) -> Draft {
    let (t, _) = clean_text(text.trim(), MESSAGE_MAX);
    let mut d = draft(ctx, ts, Vec::new(), "memory", t, "system", Trust::External);
    d.id_parts = vec!["memory".into(), ctx.session.clone().unwrap_or_default()];
    d.recalled = true;
    d
}

/// Text parts of a message's content, classified: the owner's words, and memory files or
/// environment context the harness put into a user turn.
fn content_texts(content: Option<&Value>, counts: &mut Counts) -> Vec<(Part, String)> {
    let mut out = Vec::new();
    let items: Vec<&Value> = match content {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(v @ Value::String(_)) => vec![v],
        _ => Vec::new(),
    };
    for item in items {
        if let Value::String(s) = item {
            out.push((Part::Text, s.clone()));
            continue;
        }
        match str_of(item, "type").unwrap_or("") {
            "input_text" | "output_text" | "text" => {
                out.push((Part::Text, str_of(item, "text").unwrap_or("").to_string()))
            }
            "refusal" => out.push((
                Part::Text,
                str_of(item, "refusal").unwrap_or("").to_string(),
            )),
            "input_image" | "output_image" | "image" => {
                let media = str_of(item, "image_url")
                    .and_then(|u| u.strip_prefix("data:"))
                    .and_then(|u| u.split([';', ',']).next())
                    .filter(|m| m.len() <= 64 && m.contains('/'));
                out.push((
                    Part::Image,
                    media.map_or("[image]".to_string(), |m| format!("[image: {m}]")),
                ))
            }
            "encrypted_content" => counts.skip("block:encrypted_content"),
            t => counts.unknown(format!("content:{t}")),
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Part {
    Text,
    Image,
}

/// One response item: its type decides which of the steps below maps it.
fn response_item(
    p: &Value,
    ts: Result<String, String>,
    raw_ts: &str,
    ctx: &mut FileCtx,
    counts: &mut Counts,
) -> Vec<Draft> {
    let ty = str_of(p, "type").unwrap_or("");
    let item_id = str_of(p, "call_id")
        .or_else(|| str_of(p, "id"))
        .unwrap_or("");
    let ids = |part: &str| {
        vec![
            raw_ts.to_string(),
            ty.to_string(),
            item_id.to_string(),
            part.to_string(),
        ]
    };
    match ty {
        "message" => {
            let role = str_of(p, "role").unwrap_or("");
            match role {
                "user" => user_message(p, ts, &ids("user"), ctx, counts),
                "assistant" => assistant_message(p, ts, ids("assistant"), ctx, counts),
                r => {
                    counts.skip(format!(
                        "message:{}",
                        if r.is_empty() { "(no role)" } else { r }
                    ));
                    Vec::new()
                }
            }
        }
        "agent_message" => agent_message(p, ts, ids("agent"), ctx, counts),
        "function_call"
        | "custom_tool_call"
        | "local_shell_call"
        | "web_search_call"
        | "tool_search_call"
        | "image_generation_call" => vec![tool_call(p, ty, ts, ids("call"), ctx)],
        "function_call_output"
        | "custom_tool_call_output"
        | "local_shell_call_output"
        | "tool_search_output" => vec![tool_output(p, ty, ts, ids("result"), ctx, counts)],
        t if ITEMS_SKIPPED.contains(&t) => {
            counts.skip(format!("response_item:{t}"));
            Vec::new()
        }
        t => {
            counts.unknown(format!("response_item:{t}"));
            Vec::new()
        }
    }
}

/// The assistant's message: its text parts joined, with the model and any cut in meta.
fn assistant_message(
    p: &Value,
    ts: Result<String, String>,
    ids: Vec<String>,
    ctx: &FileCtx,
    counts: &mut Counts,
) -> Vec<Draft> {
    let Some((mut d, cut)) = joined_message(p, ts, ids, ctx, counts, "assistant") else {
        return Vec::new();
    };
    if let Some(m) = &ctx.model {
        d.meta.insert("model".into(), Value::String(m.clone()));
    }
    if let Some(n) = cut {
        d.meta.insert("truncated_from".into(), n.into());
    }
    vec![d]
}

/// Another agent's message: its text parts joined, with its author and recipient in meta.
fn agent_message(
    p: &Value,
    ts: Result<String, String>,
    ids: Vec<String>,
    ctx: &FileCtx,
    counts: &mut Counts,
) -> Vec<Draft> {
    let Some((mut d, _)) = joined_message(p, ts, ids, ctx, counts, "agent") else {
        return Vec::new();
    };
    for k in ["author", "recipient"] {
        if let Some(v) = str_of(p, k) {
            d.meta.insert(k.into(), Value::String(cap(v, 200).0));
        }
    }
    vec![d]
}

/// A message of `actor`'s: its content's text parts joined into one event, and the length
/// it was cut from when it was cut; `None` (counted as skipped) when it says nothing.
fn joined_message(
    p: &Value,
    ts: Result<String, String>,
    ids: Vec<String>,
    ctx: &FileCtx,
    counts: &mut Counts,
    actor: &'static str,
) -> Option<(Draft, Option<u64>)> {
    let text = content_texts(p.get("content"), counts)
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join("\n");
    if text.trim().is_empty() {
        counts.skip("message:empty");
        return None;
    }
    let (t, cut) = clean_text(text.trim(), MESSAGE_MAX);
    Some((draft(ctx, ts, ids, "message", t, actor, Trust::Agent), cut))
}

/// A tool call of any kind, as one compact line with the tool, call id and model in meta.
fn tool_call(
    p: &Value,
    ty: &str,
    ts: Result<String, String>,
    ids: Vec<String>,
    ctx: &FileCtx,
) -> Draft {
    let (name, input) = tool_call_input(p, ty);
    let name = if name.trim().is_empty() {
        "tool".to_string()
    } else {
        name
    };
    let t = compact_call(&name, &input);
    let mut d = draft(ctx, ts, ids, "tool_call", t, "assistant", Trust::Tool);
    d.meta
        .insert("tool".into(), Value::String(cap(&name, 200).0));
    if let Some(c) = str_of(p, "call_id") {
        d.meta.insert("call_id".into(), Value::String(c.into()));
    }
    if let Some(m) = &ctx.model {
        d.meta.insert("model".into(), Value::String(m.clone()));
    }
    d
}

/// The tool's name and its input, where each kind of tool call keeps them.
fn tool_call_input(p: &Value, ty: &str) -> (String, Value) {
    match ty {
        "function_call" => {
            let name = str_of(p, "name").unwrap_or("function");
            let name = match str_of(p, "namespace").filter(|n| !n.is_empty()) {
                Some(ns) => format!("{ns}.{name}"),
                None => name.to_string(),
            };
            (name, p.get("arguments").cloned().unwrap_or(Value::Null))
        }
        "custom_tool_call" => (
            str_of(p, "name").unwrap_or("tool").to_string(),
            p.get("input").cloned().unwrap_or(Value::Null),
        ),
        "local_shell_call" => (
            "shell".to_string(),
            p.get("action")
                .and_then(|a| a.get("command"))
                .cloned()
                .unwrap_or(Value::Null),
        ),
        "web_search_call" => {
            let action = p.get("action");
            let q = action
                .and_then(|a| {
                    a.get("query")
                        .filter(|q| !q.is_null())
                        .or_else(|| a.get("url"))
                })
                .cloned()
                .unwrap_or(Value::Null);
            ("web_search".to_string(), q)
        }
        "tool_search_call" => (
            "tool_search".to_string(),
            p.get("arguments").cloned().unwrap_or(Value::Null),
        ),
        _ => (
            "image_generation".to_string(),
            p.get("revised_prompt").cloned().unwrap_or(Value::Null),
        ),
    }
}

/// A tool's output (or a tool search's list of tools), marked when it is an error.
fn tool_output(
    p: &Value,
    ty: &str,
    ts: Result<String, String>,
    ids: Vec<String>,
    ctx: &FileCtx,
    counts: &mut Counts,
) -> Draft {
    let (text, is_error) = if ty == "tool_search_output" {
        let names: Vec<String> = p
            .get("tools")
            .and_then(Value::as_array)
            .map(|ts| {
                ts.iter()
                    .filter_map(|t| str_of(t, "name").map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        (format!("tools: {}", names.join(", ")), false)
    } else {
        output_text(p.get("output"), counts)
    };
    let text = if text.trim().is_empty() {
        "(no output)".to_string()
    } else {
        text
    };
    let (mut t, cut) = clean_text(text.trim(), TOOL_OUTPUT_MAX);
    if is_error {
        t = format!("[error] {t}");
    }
    let mut d = draft(ctx, ts, ids, "tool_result", t, "tool", Trust::Tool);
    if let Some(c) = str_of(p, "call_id") {
        d.meta.insert("call_id".into(), Value::String(c.into()));
    }
    if is_error {
        d.meta.insert("is_error".into(), Value::Bool(true));
    }
    if let Some(n) = cut {
        d.meta.insert("truncated_from".into(), n.into());
    }
    d
}

fn user_message(
    p: &Value,
    ts: Result<String, String>,
    ids: &[String],
    ctx: &mut FileCtx,
    counts: &mut Counts,
) -> Vec<Draft> {
    let mut out = Vec::new();
    let mut prose: Vec<String> = Vec::new();
    for (kind, text) in content_texts(p.get("content"), counts) {
        if kind == Part::Image {
            prose.push(text);
            continue;
        }
        let trimmed = text.trim_start();
        if trimmed.starts_with("# AGENTS.md instructions")
            || starts_with_tag(trimmed, "user_instructions")
        {
            let body = tag_body(trimmed, "INSTRUCTIONS")
                .or_else(|| tag_body(trimmed, "user_instructions"))
                .unwrap_or(trimmed);
            if !body.trim().is_empty() {
                out.push(recalled(ctx, ts.clone(), body));
            }
            continue;
        }
        let injected = [
            "environment_context",
            "user_shell_command",
            "turn_aborted",
            "subagent_notification",
            "skill",
        ]
        .into_iter()
        .find(|tag| starts_with_tag(trimmed, tag));
        if let Some(tag) = injected {
            counts.skip(format!("user:{tag}"));
            continue;
        }
        prose.push(text);
    }
    let text = prose.join("\n");
    let text = text.trim();
    if text.is_empty() {
        return out;
    }
    let (t, cut) = clean_text(text, MESSAGE_MAX);
    let mut d = if ctx.subagent {
        draft(ctx, ts, ids.to_vec(), "message", t, "agent", Trust::Agent)
    } else {
        draft(ctx, ts, ids.to_vec(), "message", t, "user", Trust::Owner)
    };
    if let Some(n) = cut {
        d.meta.insert("truncated_from".into(), n.into());
    }
    out.push(d);
    out
}

/// A tool's output as text, and whether it reports a failure. Outputs come as a plain
/// string (`Exit code: N` first in newer versions), as a JSON string
/// `{"output": ..., "metadata": {"exit_code": N}}` in older ones, or as content items.
fn output_text(output: Option<&Value>, counts: &mut Counts) -> (String, bool) {
    match output {
        Some(Value::String(s)) => {
            if s.trim_start().starts_with('{') {
                if let Ok(v) = serde_json::from_str::<Value>(s) {
                    if let Some(o) = str_of(&v, "output") {
                        let code = v
                            .get("metadata")
                            .and_then(|m| m.get("exit_code"))
                            .and_then(Value::as_i64);
                        return (o.to_string(), code.is_some_and(|c| c != 0));
                    }
                }
            }
            let code = s
                .strip_prefix("Exit code: ")
                .and_then(|r| r.split_whitespace().next())
                .and_then(|c| c.parse::<i64>().ok());
            (s.clone(), code.is_some_and(|c| c != 0))
        }
        Some(items @ Value::Array(_)) => {
            let text = content_texts(Some(items), counts)
                .into_iter()
                .map(|(_, t)| t)
                .collect::<Vec<_>>()
                .join("\n");
            (text, false)
        }
        Some(v @ Value::Object(_)) => {
            let failed = v.get("success").and_then(Value::as_bool) == Some(false);
            let text = str_of(v, "text")
                .or_else(|| str_of(v, "content"))
                .or_else(|| str_of(v, "output"))
                .map(str::to_string)
                .unwrap_or_else(|| {
                    if str_of(v, "type").is_some_and(|t| t.contains("image")) {
                        placeholder("image", v)
                    } else {
                        String::new()
                    }
                });
            (text, failed)
        }
        _ => (String::new(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::adapters::{map_line, Format};
    use serde_json::json;

    fn map_all(lines: Vec<Value>) -> (Vec<crate::sources::event::Event>, Counts) {
        let mut ctx = FileCtx::default();
        let mut counts = Counts::default();
        let mut events = Vec::new();
        for l in lines {
            for r in map_line(Format::Codex, l, &mut ctx, &mut counts) {
                events.push(r.unwrap().event);
            }
        }
        (events, counts)
    }

    fn at(ty: &str, payload: Value) -> Value {
        json!({"timestamp": "2026-04-02T08:00:00.000Z", "type": ty, "payload": payload})
    }

    #[test]
    fn session_file_names_give_the_session() {
        assert_eq!(
            session_from_file_stem(
                "rollout-2025-12-28T12-18-30-019b64e5-57fa-7463-b644-fba7e456f905"
            )
            .as_deref(),
            Some("019b64e5-57fa-7463-b644-fba7e456f905")
        );
        assert_eq!(session_from_file_stem("notes"), None);
    }

    #[test]
    fn mirrored_text_is_counted_once() {
        let (ev, counts) = map_all(vec![
            at(
                "session_meta",
                json!({"id": "sess-9", "cwd": "/w", "git": {"branch": "dev"}}),
            ),
            at("turn_context", json!({"cwd": "/w", "model": "gpt-x"})),
            at(
                "response_item",
                json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "deploy on fridays is banned"}]}),
            ),
            at(
                "event_msg",
                json!({"type": "user_message", "message": "deploy on fridays is banned"}),
            ),
            at(
                "event_msg",
                json!({"type": "agent_message", "message": "Noted."}),
            ),
            at(
                "response_item",
                json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Noted."}]}),
            ),
        ]);
        let texts: Vec<_> = ev
            .iter()
            .map(|e| (e.kind.as_str(), e.trust, e.text.as_str()))
            .collect();
        assert_eq!(
            texts,
            vec![
                ("message", Trust::Owner, "deploy on fridays is banned"),
                ("message", Trust::Agent, "Noted.")
            ]
        );
        assert_eq!(ev[0].session.as_deref(), Some("sess-9"));
        assert_eq!(ev[1].meta.as_ref().unwrap()["model"], "gpt-x");
        assert_eq!(ev[1].meta.as_ref().unwrap()["git_branch"], "dev");
        assert_eq!(counts.skipped["mirror:user_message"], 1);
        assert_eq!(counts.skipped["mirror:agent_message"], 1);
    }

    #[test]
    fn agents_md_is_recalled_and_environment_is_skipped() {
        let (ev, counts) = map_all(vec![at(
            "response_item",
            json!({"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nRun cargo fmt.\n</INSTRUCTIONS>"},
                {"type": "input_text", "text": "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}
            ]}),
        )]);
        assert_eq!(ev.len(), 1);
        assert!(ev[0].recalled);
        assert_eq!(ev[0].text, "Run cargo fmt.");
        assert_eq!(counts.skipped["user:environment_context"], 1);
    }

    #[test]
    fn the_first_rollout_format_is_read_too() {
        let (ev, counts) = map_all(vec![
            json!({"id": "5973b6c0", "timestamp": "2025-05-07T17:24:21.123Z", "instructions": "x", "git": {"branch": "main"}}),
            json!({"record_type": "state"}),
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "we ship with make ship"}]}),
        ]);
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].text, "we ship with make ship");
        assert_eq!(ev[0].session.as_deref(), Some("5973b6c0"));
        assert_eq!(ev[0].ts.to_rfc3339(), "2025-05-07T17:24:21.123+00:00");
        assert_eq!(counts.skipped["line:state"], 1);
    }

    #[test]
    fn failed_commands_are_marked() {
        let (ev, _) = map_all(vec![
            at(
                "response_item",
                json!({"type": "function_call", "name": "shell", "call_id": "c1", "arguments": "{\"command\":[\"bash\",\"-lc\",\"make\"]}"}),
            ),
            at(
                "response_item",
                json!({"type": "function_call_output", "call_id": "c1", "output": "{\"output\":\"make: *** no rule\",\"metadata\":{\"exit_code\":2}}"}),
            ),
        ]);
        assert_eq!(ev[0].text, "shell: make");
        assert_eq!(ev[1].text, "[error] make: *** no rule");
        assert_eq!(ev[1].meta.as_ref().unwrap()["call_id"], "c1");
        assert_eq!(ev[1].meta.as_ref().unwrap()["is_error"], true);
    }
}
