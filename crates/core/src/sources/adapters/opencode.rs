//! opencode sessions: one row of its SQLite database (a message part, with its message and
//! session) → zero or more events. Pure; the reading (read-only, never locking the
//! database opencode has open) is `src/edges/opencode.rs`, and the table of what becomes
//! what is in `docs/sources.md`.
//!
//! opencode (1.x) keeps every session in `opencode.db`: table `session` (`id`, `directory`,
//! `parent_id` for a subagent's session), `message` (`id`, `session_id`, `data`: JSON with
//! `role`, `time.created`, `time.completed`) and `part` (`id`, `message_id`, `data`: JSON with
//! `type` = `text`, `reasoning`, `tool`, `file`, `step-start`, ...). The edge hands each part
//! to [`map`] as one object:
//!
//! ```json
//! {"session": {"id": "ses_…", "directory": "/w/app", "parent_id": null},
//!  "message_id": "msg_…", "message": {…message.data…},
//!  "part_id": "prt_…", "time_created": 1767261600000, "part": {…part.data…}}
//! ```
//!
//! Parts are rewritten while a reply streams, so an assistant's text is taken only once
//! its message is complete (`time.completed`), and a tool's result only once its state is
//! `completed` or `error`; ids come from the part's own id, so reading a row again finds
//! the same ids. Text opencode adds to a prompt itself (`synthetic`: the contents of an
//! `@`-mentioned file, mode reminders) and parts it marks `ignored` are never the owner's.

use super::{no_session, Descriptor, Layout};
use chrono::{TimeZone, Utc};
use serde_json::Value;

use super::{
    clean_text, compact_call, str_of, timestamp, Counts, Draft, FileCtx, MESSAGE_MAX,
    TOOL_OUTPUT_MAX,
};
use crate::sources::event::Trust;

const SOURCE: &str = "opencode";

/// opencode's database, described for the engine and the command line.
pub static DESCRIPTOR: Descriptor = Descriptor {
    name: SOURCE,
    about: "opencode's SQLite database (~/.local/share/opencode/opencode.db), read-only",
    default_path: "~/.local/share/opencode/opencode.db",
    reads: |rel| rel.extension().is_some_and(|e| e == "db"),
    reads_what: "SQLite databases, *.db",
    // SQLite's log and shared memory beside the database.
    companion: |rel| {
        let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
        [".db-wal", ".db-shm", ".db-journal"]
            .iter()
            .any(|s| name.ends_with(s))
    },
    // Every row names its session.
    session_from_path: no_session,
    primes: false,
    layout: |_| Layout::Database,
    id_prefix: "oc_",
    map: Some(map),
};

/// Part types that are opencode's bookkeeping, never events.
const BOOKKEEPING: &[&str] = &[
    "step-start",
    "step-finish",
    "snapshot",
    "patch",
    "retry",
    "agent",
    "compaction",
    "subtask",
];

/// Milliseconds since the epoch as RFC 3339, when they are a plausible time.
pub fn ms_to_rfc3339(ms: &Value) -> Option<Value> {
    let n = ms.as_i64().or_else(|| ms.as_f64().map(|f| f as i64))?;
    Utc.timestamp_millis_opt(n)
        .single()
        .map(|t| Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)))
}

/// Map one part row.
pub fn map(row: Value, ctx: &mut FileCtx, counts: &mut Counts) -> Vec<Draft> {
    let (Some(msg), Some(part)) = (row.get("message"), row.get("part")) else {
        counts.unknown("row:(no message or part)");
        return Vec::new();
    };
    let session = row.get("session");
    let session_id = session
        .and_then(|s| str_of(s, "id"))
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let subagent = session
        .and_then(|s| s.get("parent_id"))
        .is_some_and(|p| p.as_str().is_some_and(|p| !p.is_empty()));
    let part_id = str_of(&row, "part_id").unwrap_or_default().to_string();
    let created = row.get("time_created").and_then(ms_to_rfc3339).or_else(|| {
        msg.get("time")
            .and_then(|t| t.get("created"))
            .and_then(ms_to_rfc3339)
    });
    let ts = timestamp(created.as_ref(), ctx);
    let mut meta = serde_json::Map::new();
    if let Some(d) = session
        .and_then(|s| str_of(s, "directory"))
        .filter(|d| !d.is_empty())
    {
        meta.insert("cwd".into(), Value::String(d.into()));
    }
    if let Some(m) = str_of(msg, "modelID").filter(|m| !m.is_empty()) {
        meta.insert("model".into(), Value::String(m.into()));
    }
    if let Some(a) = str_of(msg, "agent").or_else(|| str_of(msg, "mode")) {
        meta.insert("agent".into(), Value::String(a.into()));
    }
    let base = |part: &str, kind: &'static str, text: String, who: (&'static str, Trust)| Draft {
        source: SOURCE,
        id_parts: vec![part_id.clone(), part.into()],
        ts: ts.clone(),
        kind,
        text,
        session: session_id.clone(),
        actor: who.0,
        trust: who.1,
        recalled: false,
        meta: meta.clone(),
    };
    let role = str_of(msg, "role").unwrap_or("");
    let ty = str_of(part, "type").unwrap_or("");
    let flag = |k: &str| part.get(k).and_then(Value::as_bool) == Some(true);
    match (role, ty) {
        (_, t) if BOOKKEEPING.contains(&t) => {
            counts.skip(format!("part:{t}"));
            Vec::new()
        }
        (_, "reasoning") => {
            counts.skip("block:reasoning");
            Vec::new()
        }
        ("user", "text") => {
            let text = str_of(part, "text").unwrap_or("").trim();
            if flag("synthetic") {
                counts.skip("user:synthetic");
                return Vec::new();
            }
            if flag("ignored") {
                counts.skip("user:ignored");
                return Vec::new();
            }
            if text.is_empty() {
                counts.skip("user:empty");
                return Vec::new();
            }
            let who = if subagent {
                ("agent", Trust::Agent)
            } else {
                ("user", Trust::Owner)
            };
            let (t, cut) = clean_text(text, MESSAGE_MAX);
            let mut d = base("text", "message", t, who);
            if let Some(n) = cut {
                d.meta.insert("truncated_from".into(), n.into());
            }
            vec![d]
        }
        ("user", "file") => {
            // An attached file: its contents come as a synthetic text part.
            counts.skip("user:file");
            Vec::new()
        }
        ("assistant", "text") => {
            let done = msg
                .get("time")
                .and_then(|t| t.get("completed"))
                .is_some_and(|c| !c.is_null());
            if !done {
                counts.skip("assistant:unfinished");
                return Vec::new();
            }
            if flag("synthetic") {
                counts.skip("assistant:synthetic");
                return Vec::new();
            }
            let text = str_of(part, "text").unwrap_or("").trim();
            if text.is_empty() {
                counts.skip("assistant:empty");
                return Vec::new();
            }
            let (t, cut) = clean_text(text, MESSAGE_MAX);
            let mut d = base("text", "message", t, ("assistant", Trust::Agent));
            if let Some(n) = cut {
                d.meta.insert("truncated_from".into(), n.into());
            }
            vec![d]
        }
        (_, "tool") => tool(part, &base, counts),
        (_, "file") => {
            counts.skip("part:file");
            Vec::new()
        }
        (r, t) => {
            counts.unknown(format!("part:{r}/{t}"));
            Vec::new()
        }
    }
}

/// Who wrote an event: its actor and trust.
type Who = (&'static str, Trust);

/// A draft of this row's part: its id part, kind, text and author.
type Base<'a> = dyn Fn(&str, &'static str, String, Who) -> Draft + 'a;

fn tool(part: &Value, base: &Base<'_>, counts: &mut Counts) -> Vec<Draft> {
    let name = str_of(part, "tool").unwrap_or("tool");
    let call_id = str_of(part, "callID").unwrap_or_default().to_string();
    let empty = Value::Null;
    let state = part.get("state").unwrap_or(&empty);
    let status = str_of(state, "status").unwrap_or("");
    if status == "pending" || status.is_empty() {
        counts.skip("tool:pending");
        return Vec::new();
    }
    let mut call = base(
        "call",
        "tool_call",
        compact_call(name, state.get("input").unwrap_or(&empty)),
        ("assistant", Trust::Agent),
    );
    call.meta
        .insert("call_id".into(), Value::String(call_id.clone()));
    let mut out = vec![call];
    let result = match status {
        "completed" => str_of(state, "output").map(str::to_string),
        "error" => str_of(state, "error").map(str::to_string),
        _ => {
            counts.skip("tool:running");
            return out;
        }
    };
    let Some(result) = result.filter(|r| !r.trim().is_empty()) else {
        counts.skip("tool:no-result");
        return out;
    };
    let (t, cut) = clean_text(&result, TOOL_OUTPUT_MAX);
    let mut d = base("result", "tool_result", t, ("tool", Trust::Tool));
    if let Some(end) = state
        .get("time")
        .and_then(|t| t.get("end"))
        .and_then(ms_to_rfc3339)
    {
        d.ts = Ok(end.as_str().unwrap_or_default().to_string());
    }
    d.meta.insert("call_id".into(), Value::String(call_id));
    d.meta.insert("status".into(), Value::String(status.into()));
    if let Some(n) = cut {
        d.meta.insert("truncated_from".into(), n.into());
    }
    out.push(d);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(role: &str, completed: bool, part: Value) -> Value {
        json!({
            "session": {"id": "ses_1", "directory": "/w/app", "parent_id": null},
            "message_id": "msg_1",
            "message": {"role": role, "time": {"created": 1767261600000i64,
                        "completed": if completed { json!(1767261601000i64) } else { Value::Null }}},
            "part_id": format!("prt_{}", part["type"].as_str().unwrap()),
            "time_created": 1767261600500i64,
            "part": part,
        })
    }

    #[test]
    fn rows_map_to_owner_prompts_replies_and_tools() {
        let mut ctx = FileCtx::default();
        let mut counts = Counts::default();
        let mut out = Vec::new();
        for r in [
            row("user", false, json!({"type": "text", "text": "add a flag"})),
            row(
                "user",
                false,
                json!({"type": "text", "text": "Called the Read tool", "synthetic": true}),
            ),
            row(
                "assistant",
                false,
                json!({"type": "text", "text": "Half a rep"}),
            ),
            row(
                "assistant",
                true,
                json!({"type": "reasoning", "text": "think"}),
            ),
            row(
                "assistant",
                true,
                json!({"type": "tool", "tool": "bash", "callID": "c1",
                "state": {"status": "completed", "input": {"command": "ls"}, "output": "a b",
                          "time": {"start": 1767261600600i64, "end": 1767261600900i64}}}),
            ),
        ] {
            out.extend(map(r, &mut ctx, &mut counts));
        }
        let got: Vec<_> = out
            .iter()
            .map(|d| (d.kind, d.actor, d.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("message", "user", "add a flag"),
                ("tool_call", "assistant", "bash: ls"),
                ("tool_result", "tool", "a b"),
            ]
        );
        assert_eq!(out[0].trust, Trust::Owner);
        assert_eq!(out[0].ts.as_deref(), Ok("2026-01-01T10:00:00.500Z"));
        assert_eq!(out[2].ts.as_deref(), Ok("2026-01-01T10:00:00.900Z"));
        assert_eq!(counts.skipped["user:synthetic"], 1);
        assert_eq!(counts.skipped["assistant:unfinished"], 1);
        assert_eq!(counts.skipped["block:reasoning"], 1);
    }
}
