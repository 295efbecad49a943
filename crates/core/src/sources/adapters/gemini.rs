//! Gemini CLI sessions (`~/.gemini/tmp/<project>/chats/`): records → zero or more events.
//! Pure; the table of what becomes what is in `docs/sources.md`.
//!
//! Gemini CLI has written two forms. The older one is one JSON document per session
//! (`session-<time>-<id>.json`: `{sessionId, projectHash, startTime, lastUpdated, messages}`),
//! rewritten whole after every message; the newer one is JSON Lines (`….jsonl`): a metadata
//! record first, then one record per message, where a message that changes (its tokens
//! counted, a tool call's result added) is appended again under the same `id`, `{"$set":
//! {...}}` records update the metadata and `{"$rewindTo": id}` marks a rewind. Both forms
//! carry the same message records, so both map through [`message`]; every event's id comes
//! from the message's own `id` (and a tool call's `id`) plus its text, so a document
//! rewritten with more messages, or a message appended again, yields only what is new.
//!
//! What Gemini CLI injects is kept out of the owner's words: its own session context
//! (`<session_context>`), hook output (`<hook_context>`), slash commands, the contents of
//! `@`-referenced files it appends after the typed prompt, and the tool responses it sends
//! back as user turns. Thoughts are private reasoning and never stored.

use super::{no_session, Descriptor, Layout};
use serde_json::{Map, Value};

use super::{
    clean_text, compact_call, placeholder, str_of, timestamp, Counts, Draft, FileCtx, MESSAGE_MAX,
    TOOL_OUTPUT_MAX,
};
use crate::sources::event::Trust;

const SOURCE: &str = "gemini";

/// Gemini CLI sessions, described for the engine and the command line.
pub static DESCRIPTOR: Descriptor = Descriptor {
    name: SOURCE,
    about: "Gemini CLI sessions (~/.gemini/tmp/<project>/chats/*.json and *.jsonl)",
    default_path: "~/.gemini/tmp",
    reads: session_file,
    reads_what: "*.json and *.jsonl files under a chats/ folder",
    // Its prompt log, shell history and checkpoints hold nothing a session does not.
    companion: |rel| {
        let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
        matches!(name, "logs.json" | "shell_history" | ".project_root")
            || (name.starts_with("checkpoint-") && name.ends_with(".json"))
    },
    session_from_path: no_session,
    // A JSON Lines session states its session and project on its first line.
    primes: true,
    // The older form is one JSON document, rewritten whole after every message.
    layout: |path| {
        if path.extension().is_some_and(|e| e == "json") {
            Layout::Document
        } else {
            Layout::Lines
        }
    },
    id_prefix: "gm_",
    map: Some(map),
};

/// What Gemini CLI puts after a typed prompt when it reads `@`-referenced files.
const REFERENCED: &str = "--- Content from referenced files ---";

/// Message types that are the CLI's own notices, never the conversation.
const NOTICES: &[&str] = &["info", "error", "warning"];

/// Map one record: a JSONL line, or a whole-file session document.
pub fn map(record: Value, ctx: &mut FileCtx, counts: &mut Counts) -> Vec<Draft> {
    let Value::Object(obj) = record else {
        counts.unknown("line:not-an-object");
        return Vec::new();
    };
    if obj.contains_key("$rewindTo") {
        counts.skip("line:rewind");
        return Vec::new();
    }
    if let Some(Value::Object(set)) = obj.get("$set") {
        // A metadata update; one that carries the messages rewrites the whole list.
        let mut out = Vec::new();
        if let Some(Value::Array(msgs)) = set.get("messages") {
            for m in msgs {
                out.extend(message(m, ctx, counts));
            }
        } else {
            counts.skip("line:metadata");
        }
        return out;
    }
    if obj.contains_key("id") {
        return message(&Value::Object(obj), ctx, counts);
    }
    if let Some(s) = obj.get("sessionId").and_then(Value::as_str) {
        // The metadata record of a JSONL session, or a whole-file document.
        if !s.is_empty() {
            ctx.session = Some(s.to_string());
        }
        if let Some(h) = str_of(&Value::Object(obj.clone()), "projectHash") {
            ctx.meta
                .insert("project_hash".into(), Value::String(h.to_string()));
        }
        if let Some(k) = obj.get("kind").and_then(Value::as_str) {
            ctx.meta
                .insert("session_kind".into(), Value::String(k.to_string()));
        }
        let _ = timestamp(obj.get("startTime"), ctx);
        let mut out = Vec::new();
        match obj.get("messages") {
            Some(Value::Array(msgs)) => {
                for m in msgs {
                    out.extend(message(m, ctx, counts));
                }
            }
            _ => counts.skip("line:metadata"),
        }
        return out;
    }
    counts.unknown("line:(no id)");
    Vec::new()
}

/// The base of every event of one message.
fn draft(
    msg: &Value,
    ctx: &mut FileCtx,
    part: &str,
    kind: &'static str,
    text: String,
    who: (&'static str, Trust),
) -> Draft {
    let id = str_of(msg, "id").unwrap_or_default().to_string();
    let ts = timestamp(msg.get("timestamp"), ctx);
    let mut meta = ctx.meta.clone();
    if let Some(m) = str_of(msg, "model").filter(|m| !m.is_empty()) {
        meta.insert("model".into(), Value::String(m.into()));
    }
    Draft {
        source: SOURCE,
        id_parts: vec![ctx.session.clone().unwrap_or_default(), id, part.into()],
        ts,
        kind,
        text,
        session: ctx.session.clone(),
        actor: who.0,
        trust: who.1,
        recalled: false,
        meta,
    }
}

/// The text of a Gemini `PartListUnion` (a string, one part or a list of parts): text parts
/// joined, images and files as placeholders; function calls and responses are counted (the
/// message's `toolCalls` carry them).
fn parts_text(content: Option<&Value>, counts: &mut Counts) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut one = |p: &Value, out: &mut Vec<String>| match p {
        Value::String(s) => out.push(s.clone()),
        Value::Object(o) => {
            if o.get("thought").and_then(Value::as_bool) == Some(true) {
                counts.skip("part:thought");
            } else if let Some(t) = o.get("text").and_then(Value::as_str) {
                out.push(t.to_string());
            } else if let Some(d) = o.get("inlineData") {
                out.push(placeholder("image", d));
            } else if let Some(d) = o.get("fileData") {
                out.push(placeholder("file", d));
            } else if o.contains_key("functionResponse") {
                counts.skip("part:function-response");
            } else if o.contains_key("functionCall") {
                counts.skip("part:function-call");
            } else {
                counts.unknown("part:(other)");
            }
        }
        _ => counts.unknown("part:(not an object)"),
    };
    match content {
        Some(Value::Array(items)) => {
            for p in items {
                one(p, &mut out);
            }
        }
        Some(v) => one(v, &mut out),
        None => {}
    }
    out.join("")
}

/// Map one message record.
pub fn message(msg: &Value, ctx: &mut FileCtx, counts: &mut Counts) -> Vec<Draft> {
    let ty = str_of(msg, "type").unwrap_or("");
    match ty {
        "user" => user(msg, ctx, counts),
        "gemini" => model(msg, ctx, counts),
        t if NOTICES.contains(&t) => {
            let _ = timestamp(msg.get("timestamp"), ctx);
            counts.skip(format!("message:{t}"));
            Vec::new()
        }
        "" => {
            counts.unknown("message:(no type)");
            Vec::new()
        }
        t => {
            counts.unknown(format!("message:{t}"));
            Vec::new()
        }
    }
}

fn user(msg: &Value, ctx: &mut FileCtx, counts: &mut Counts) -> Vec<Draft> {
    // What the person typed, when the CLI expanded it (`@file` contents) before sending.
    let shown = msg
        .get("displayContent")
        .filter(|d| !d.is_null())
        .map(|d| parts_text(Some(d), counts));
    let sent = parts_text(msg.get("content"), counts);
    let text = match shown {
        Some(s) if !s.trim().is_empty() => s,
        _ => match sent.find(REFERENCED) {
            Some(at) => {
                counts.skip("user:referenced-files");
                sent[..at].to_string()
            }
            None => sent,
        },
    };
    let t = text.trim();
    if t.is_empty() {
        let _ = timestamp(msg.get("timestamp"), ctx);
        counts.skip("user:empty");
        return Vec::new();
    }
    for tag in ["session_context", "hook_context"] {
        if super::starts_with_tag(t, tag) {
            let _ = timestamp(msg.get("timestamp"), ctx);
            counts.skip(format!("user:{tag}"));
            return Vec::new();
        }
    }
    if t.starts_with('/') || t.starts_with('?') {
        // Slash commands and help: the CLI handles them, they never reach the model.
        let _ = timestamp(msg.get("timestamp"), ctx);
        counts.skip("user:command");
        return Vec::new();
    }
    let (t, cut) = clean_text(t, MESSAGE_MAX);
    let who = if ctx.meta.get("session_kind").and_then(Value::as_str) == Some("subagent") {
        ("agent", Trust::Agent)
    } else {
        ("user", Trust::Owner)
    };
    let mut d = draft(msg, ctx, "prompt", "message", t, who);
    if let Some(n) = cut {
        d.meta.insert("truncated_from".into(), n.into());
    }
    vec![d]
}

fn model(msg: &Value, ctx: &mut FileCtx, counts: &mut Counts) -> Vec<Draft> {
    let mut out = Vec::new();
    if msg
        .get("thoughts")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
    {
        counts.skip("block:thoughts");
    }
    let text = parts_text(msg.get("content"), counts);
    if !text.trim().is_empty() {
        let (t, cut) = clean_text(text.trim(), MESSAGE_MAX);
        let mut d = draft(msg, ctx, "reply", "message", t, ("assistant", Trust::Agent));
        if let Some(n) = cut {
            d.meta.insert("truncated_from".into(), n.into());
        }
        out.push(d);
    } else {
        let _ = timestamp(msg.get("timestamp"), ctx);
    }
    let calls = msg.get("toolCalls").and_then(Value::as_array);
    for (i, call) in calls.into_iter().flatten().enumerate() {
        out.extend(tool_call(msg, call, i, ctx, counts));
    }
    out
}

fn tool_call(
    msg: &Value,
    call: &Value,
    index: usize,
    ctx: &mut FileCtx,
    counts: &mut Counts,
) -> Vec<Draft> {
    let name = str_of(call, "name").unwrap_or("tool");
    let call_id = str_of(call, "id")
        .map(str::to_string)
        .unwrap_or_else(|| format!("#{index}"));
    let mut meta_call = Map::new();
    meta_call.insert("call_id".into(), Value::String(call_id.clone()));
    let text = compact_call(name, call.get("args").unwrap_or(&Value::Null));
    let mut first = draft(
        msg,
        ctx,
        &format!("call:{call_id}"),
        "tool_call",
        text,
        ("assistant", Trust::Agent),
    );
    first.meta.extend(meta_call.clone());
    if let Ok(ts) = timestamp(call.get("timestamp"), ctx) {
        first.ts = Ok(ts);
    }
    let mut out = vec![first];
    let status = str_of(call, "status").unwrap_or("");
    let result = result_text(call);
    match (status, result) {
        ("success" | "error" | "cancelled", Some(r)) => {
            let (t, cut) = clean_text(&r, TOOL_OUTPUT_MAX);
            let mut d = draft(
                msg,
                ctx,
                &format!("result:{call_id}"),
                "tool_result",
                t,
                ("tool", Trust::Tool),
            );
            d.meta.extend(meta_call);
            d.meta
                .insert("status".into(), Value::String(status.to_string()));
            if let Ok(ts) = timestamp(call.get("timestamp"), ctx) {
                d.ts = Ok(ts);
            }
            if let Some(n) = cut {
                d.meta.insert("truncated_from".into(), n.into());
            }
            out.push(d);
        }
        ("success" | "error" | "cancelled", None) => counts.skip("tool:no-result"),
        _ => counts.skip("tool:unfinished"),
    }
    out
}

/// A tool call's result as text: what the CLI displayed when it is text, else the output
/// (or error) of the function response it sent back.
fn result_text(call: &Value) -> Option<String> {
    if let Some(s) = str_of(call, "resultDisplay").filter(|s| !s.trim().is_empty()) {
        return Some(s.to_string());
    }
    let responses: Vec<&Value> = match call.get("result") {
        Some(Value::String(s)) if !s.trim().is_empty() => return Some(s.clone()),
        Some(Value::Array(items)) => items.iter().collect(),
        Some(v @ Value::Object(_)) => vec![v],
        _ => Vec::new(),
    };
    let texts: Vec<String> = responses
        .iter()
        .filter_map(|p| {
            let r = p.get("functionResponse")?.get("response")?;
            match r.get("output").or_else(|| r.get("error")) {
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => Some(other.to_string()),
                None => Some(r.to_string()),
            }
        })
        .collect();
    if texts.is_empty() {
        None
    } else {
        Some(texts.join("\n"))
    }
}

/// A file name Gemini CLI gives a main session (`session-….json` or `….jsonl` under a
/// `chats` folder); subagents' files sit in a folder named after their parent session.
pub fn session_file(rel: &std::path::Path) -> bool {
    let ext_ok = rel.extension().is_some_and(|e| e == "json" || e == "jsonl");
    ext_ok && rel.components().any(|c| c.as_os_str() == "chats")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(lines: &[Value]) -> (Vec<Draft>, Counts) {
        let mut ctx = FileCtx::default();
        let mut counts = Counts::default();
        let mut out = Vec::new();
        for l in lines {
            out.extend(map(l.clone(), &mut ctx, &mut counts));
        }
        (out, counts)
    }

    #[test]
    fn typed_prompt_is_the_owners_and_injected_text_is_not() {
        let (out, counts) = run(&[
            json!({"sessionId": "s1", "projectHash": "ab", "startTime": "2026-01-01T10:00:00Z"}),
            json!({"id": "m0", "timestamp": "2026-01-01T10:00:01Z", "type": "user",
                   "content": [{"text": "<session_context>\nOS: linux\n</session_context>"}]}),
            json!({"id": "m1", "timestamp": "2026-01-01T10:00:02Z", "type": "user",
                   "content": [{"text": "explain @a.rs"}, {"text": "\n--- Content from referenced files ---\nfn main() {}"}]}),
            json!({"id": "m2", "timestamp": "2026-01-01T10:00:03Z", "type": "user",
                   "content": [{"text": "/stats"}]}),
            json!({"id": "m3", "timestamp": "2026-01-01T10:00:04Z", "type": "info", "content": "x"}),
        ]);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].text, "explain @a.rs");
        assert_eq!(out[0].trust, Trust::Owner);
        assert_eq!(out[0].session.as_deref(), Some("s1"));
        assert_eq!(counts.skipped["user:session_context"], 1);
        assert_eq!(counts.skipped["user:command"], 1);
        assert_eq!(counts.skipped["message:info"], 1);
    }

    #[test]
    fn a_message_appended_again_keeps_its_ids() {
        let reply = json!({"id": "g1", "timestamp": "2026-01-01T10:00:05Z", "type": "gemini",
            "content": "Let me look.", "thoughts": [{"subject": "s", "description": "d"}],
            "toolCalls": [{"id": "c1", "name": "read_file", "args": {"path": "a.rs"}, "status": "executing"}]});
        let mut done = reply.clone();
        done["toolCalls"][0]["status"] = json!("success");
        done["toolCalls"][0]["resultDisplay"] = json!("fn main() {}");
        let (a, _) = run(&[reply]);
        let (b, counts) = run(&[done]);
        let ids = |v: &[Draft]| -> Vec<String> {
            v.iter()
                .map(|d| d.clone().finish().unwrap().event.id)
                .collect()
        };
        assert_eq!(a.len(), 2);
        assert_eq!(b.len(), 3);
        assert_eq!(ids(&a)[..], ids(&b)[..2], "the same message, the same ids");
        assert_eq!(b[2].kind, "tool_result");
        assert_eq!(b[2].text, "fn main() {}");
        assert_eq!(counts.skipped["block:thoughts"], 1);
    }
}
