//! The edits `dream hooks` makes to other tools' files, as pure functions of their text:
//! Claude Code's `settings.json` (a SessionStart hook), a Markdown file's managed block
//! (`~/.claude/CLAUDE.md`'s `@` import, `~/.codex/AGENTS.md`'s context), and
//! `dream.toml`'s `[[inbox.sources]]` entry.
//!
//! These files belong to the person and to other programs, so every edit touches only
//! what dream adds: JSON is edited through a concrete syntax tree (`jsonc-parser`), which
//! keeps every other byte (key order, indentation, comments) as it was; a Markdown block
//! sits between two marker lines and is removed with exactly the separator it was added
//! with; a TOML entry is appended after a comment line that names it. Installing twice
//! gives the same text as installing once, and removing what install added gives back the
//! original text (the `dream` edge also keeps a backup and restores it when nothing else
//! changed the file since).

use jsonc_parser::cst::{CstInputValue, CstNode, CstObject, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::Value;

/// What identifies dream's SessionStart hook: its command runs `dream ... context --hook
/// claude-code`.
pub const CLAUDE_HOOK_MARK: &str = "context --hook claude-code";

/// What identifies dream's Codex SessionStart hook in `~/.codex/hooks.json`, which has the
/// same `hooks.SessionStart[].hooks[]` shape as Claude Code's settings (so the same edits
/// serve both).
pub const CODEX_HOOK_MARK: &str = "context --hook codex";

/// Seconds Claude Code waits for the hook before giving up on it.
pub const HOOK_TIMEOUT_SECS: u64 = 10;

/// The first and last lines of a managed Markdown block.
pub const BLOCK_BEGIN: &str = "<!-- dream:begin";
pub const BLOCK_END: &str = "<!-- dream:end -->";

fn strict_json(text: &str, file: &str) -> Result<(), String> {
    serde_json::from_str::<Value>(text)
        .map(|_| ())
        .map_err(|e| format!("{file} is not valid JSON ({e}); fix it first (nothing was changed)"))
}

fn parse(text: &str, file: &str) -> Result<CstRootNode, String> {
    strict_json(text, file)?;
    CstRootNode::parse(text, &ParseOptions::default())
        .map_err(|e| format!("{file}: {e} (nothing was changed)"))
}

/// Our hook entries: (group, index of the hook within the group's `hooks`, command).
fn our_hooks(session_start: &jsonc_parser::cst::CstArray) -> Vec<(CstObject, CstNode, String)> {
    let mut out = Vec::new();
    for group in session_start.elements() {
        let Some(g) = group.as_object() else { continue };
        let Some(hooks) = g.array_value("hooks") else {
            continue;
        };
        for h in hooks.elements() {
            let command = h
                .as_object()
                .and_then(|o| o.get("command"))
                .and_then(|p| p.value())
                .and_then(|v| v.to_serde_value())
                .and_then(|v| v.as_str().map(str::to_string));
            let ours = |c: &String| c.contains(CLAUDE_HOOK_MARK) || c.contains(CODEX_HOOK_MARK);
            if let Some(c) = command.filter(ours) {
                out.push((g.clone(), h.clone(), c));
            }
        }
    }
    out
}

fn hook_entry(command: &str) -> CstInputValue {
    CstInputValue::Object(vec![(
        "hooks".into(),
        CstInputValue::Array(vec![CstInputValue::Object(vec![
            ("type".into(), "command".into()),
            ("command".into(), command.into()),
            ("timeout".into(), HOOK_TIMEOUT_SECS.into()),
        ])]),
    )])
}

/// `settings.json` with dream's SessionStart hook running `command`: added when absent,
/// its command replaced when it runs something else, unchanged when it is already there.
/// `None` text: the file does not exist yet.
pub fn claude_install(settings: Option<&str>, command: &str) -> Result<String, String> {
    let text = match settings {
        Some(t) if !t.trim().is_empty() => t,
        _ => {
            let root = CstRootNode::parse("{}", &ParseOptions::default()).expect("{} parses");
            let obj = root.object_value_or_set();
            obj.append(
                "hooks",
                CstInputValue::Object(vec![(
                    "SessionStart".into(),
                    CstInputValue::Array(vec![hook_entry(command)]),
                )]),
            );
            return Ok(format!("{}\n", root));
        }
    };
    let root = parse(text, "settings.json")?;
    let Some(obj) = root.object_value() else {
        return Err(
            "settings.json does not hold a JSON object; fix it first (nothing was changed)".into(),
        );
    };
    let hooks = match obj.get("hooks") {
        None => obj.object_value_or_set("hooks"),
        Some(p) => p
            .object_value()
            .ok_or("settings.json: `hooks` is not an object; fix it first (nothing was changed)")?,
    };
    let start = match hooks.get("SessionStart") {
        None => hooks.array_value_or_set("SessionStart"),
        Some(p) => p.array_value().ok_or(
            "settings.json: `hooks.SessionStart` is not an array; fix it first (nothing was changed)",
        )?,
    };
    let ours = our_hooks(&start);
    if ours.iter().any(|(_, _, c)| c == command) && ours.len() == 1 {
        return Ok(text.to_string());
    }
    // Another repository or binary path: drop the old entries, add the new one.
    remove_ours(&start);
    start.append(hook_entry(command));
    Ok(root.to_string())
}

fn remove_ours(start: &jsonc_parser::cst::CstArray) -> usize {
    let ours = our_hooks(start);
    let n = ours.len();
    for (group, hook, _) in ours {
        hook.remove();
        let empty = group
            .array_value("hooks")
            .is_none_or(|a| a.elements().is_empty());
        if empty {
            group.remove();
        }
    }
    n
}

/// `settings.json` without dream's hook (and without the `SessionStart` list or `hooks`
/// object when that leaves them empty); `None` when it holds no hook of dream's.
pub fn claude_uninstall(settings: &str) -> Result<Option<String>, String> {
    let root = parse(settings, "settings.json")?;
    let Some(obj) = root.object_value() else {
        return Ok(None);
    };
    let Some(hooks) = obj.object_value("hooks") else {
        return Ok(None);
    };
    let Some(start) = hooks.array_value("SessionStart") else {
        return Ok(None);
    };
    if remove_ours(&start) == 0 {
        return Ok(None);
    }
    if start.elements().is_empty() {
        if let Some(p) = hooks.get("SessionStart") {
            p.remove();
        }
    }
    if hooks.properties().is_empty() {
        if let Some(p) = obj.get("hooks") {
            p.remove();
        }
    }
    Ok(Some(root.to_string()))
}

/// The commands of dream's hooks in `settings.json` (empty when none, or unreadable).
pub fn claude_hooks(settings: &str) -> Vec<String> {
    let Ok(root) = parse(settings, "settings.json") else {
        return Vec::new();
    };
    root.object_value()
        .and_then(|o| o.object_value("hooks"))
        .and_then(|h| h.array_value("SessionStart"))
        .map(|s| our_hooks(&s).into_iter().map(|(_, _, c)| c).collect())
        .unwrap_or_default()
}

/// A managed block: the begin line (naming what manages it), the body, the end line.
pub fn block(note: &str, body: &str) -> String {
    let mut b = format!("{BLOCK_BEGIN} {note} -->\n{body}");
    if !b.ends_with('\n') {
        b.push('\n');
    }
    b.push_str(BLOCK_END);
    b.push('\n');
    b
}

/// Where the managed block is: (start of its begin line, end after its end line).
fn block_span(text: &str) -> Option<(usize, usize)> {
    let start = text
        .match_indices(BLOCK_BEGIN)
        .map(|(i, _)| i)
        .find(|&i| i == 0 || text.as_bytes()[i - 1] == b'\n')?;
    let end_rel = text[start..].find(BLOCK_END)?;
    let mut end = start + end_rel + BLOCK_END.len();
    if text[end..].starts_with('\n') {
        end += 1;
    }
    Some((start, end))
}

/// The body between the markers, when there is a block.
pub fn block_body(text: &str) -> Option<&str> {
    let (start, end) = block_span(text)?;
    let inner = &text[start..end];
    let body_start = inner.find('\n')? + 1;
    let body_end = inner.rfind(BLOCK_END)?;
    Some(&inner[body_start.min(body_end)..body_end])
}

/// `text` with `block` in it: the block replaced where it is, or appended after one
/// newline (the one [`block_remove`] takes away again).
pub fn block_install(text: Option<&str>, block: &str) -> String {
    let text = text.unwrap_or("");
    if let Some((start, end)) = block_span(text) {
        return format!("{}{block}{}", &text[..start], &text[end..]);
    }
    if text.is_empty() {
        return block.to_string();
    }
    format!("{text}\n{block}")
}

/// `text` without the managed block and the one newline installing put before it; `None`
/// when there is no block.
pub fn block_remove(text: &str) -> Option<String> {
    let (start, end) = block_span(text)?;
    let before = &text[..start];
    let before = before.strip_suffix('\n').unwrap_or(before);
    Some(format!("{before}{}", &text[end..]))
}

/// The comment line that opens the `[[inbox.sources]]` entry `dream hooks` appends.
pub fn source_mark(harness: &str) -> String {
    format!(
        "# added by `dream hooks install {harness}`; `dream hooks uninstall {harness}` removes it"
    )
}

/// `dream.toml` with an `[[inbox.sources]]` entry for `format` at `path` appended.
pub fn source_install(toml_text: &str, harness: &str, format: &str, path: &str) -> String {
    let mut out = toml_text.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&source_entry(harness, format, path));
    out
}

fn source_entry(harness: &str, format: &str, path: &str) -> String {
    let quoted = serde_json::to_string(path).expect("strings serialize");
    format!(
        "\n{}\n[[inbox.sources]]\nformat = \"{format}\"\npath = {quoted}\n",
        source_mark(harness)
    )
}

/// `dream.toml` without the entry [`source_install`] appended for `harness`; `None` when it
/// is not there.
pub fn source_remove(toml_text: &str, harness: &str) -> Option<String> {
    let mark = source_mark(harness);
    let at = toml_text.find(&format!("\n{mark}\n"))?;
    // The entry is the mark line and the three lines after it.
    let rest = &toml_text[at + 1..];
    let mut end = at + 1;
    for (i, line) in rest.split_inclusive('\n').enumerate() {
        if i == 4 {
            break;
        }
        if i > 0
            && !(line.starts_with("[[inbox.sources]]")
                || line.starts_with("format = ")
                || line.starts_with("path = "))
        {
            return None;
        }
        end += line.len();
    }
    Some(format!("{}{}", &toml_text[..at], &toml_text[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTINGS: &str = r#"{
  "model": "opus",
  // a comment a person wrote
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          { "type": "command", "command": "~/bin/guard.sh" }
        ]
      }
    ],
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [{ "type": "command", "command": "bd prime" }]
      }
    ]
  },
  "permissions": { "allow": ["Bash(cargo test:*)"] }
}
"#;

    const CMD: &str = "'/usr/bin/dream' --repo '/home/ada/memory' context --hook claude-code";

    #[test]
    fn the_hook_is_added_beside_others_and_removed_leaving_them() {
        let strict = r#"{"model":"opus","hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"bd prime"}]}]}}"#;
        let installed = claude_install(Some(strict), CMD).unwrap();
        let v: Value = serde_json::from_str(&installed).unwrap();
        let start = v["hooks"]["SessionStart"].as_array().unwrap();
        assert_eq!(start.len(), 2);
        assert_eq!(start[0]["hooks"][0]["command"], "bd prime");
        assert_eq!(start[1]["hooks"][0]["command"], CMD);
        assert_eq!(start[1]["hooks"][0]["timeout"], HOOK_TIMEOUT_SECS);
        assert!(
            start[1].get("matcher").is_none(),
            "no matcher: every start, resume, clear and compaction"
        );
        assert_eq!(
            claude_install(Some(&installed), CMD).unwrap(),
            installed,
            "idempotent"
        );
        assert_eq!(claude_hooks(&installed), vec![CMD.to_string()]);
        let removed = claude_uninstall(&installed).unwrap().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&removed).unwrap(),
            serde_json::from_str::<Value>(strict).unwrap()
        );
        assert_eq!(claude_uninstall(&removed).unwrap(), None);
    }

    #[test]
    fn comments_order_and_indentation_survive() {
        // settings.json must be strict JSON for Claude Code; a file with a comment is refused.
        assert!(claude_install(Some(SETTINGS), CMD)
            .unwrap_err()
            .contains("not valid JSON"));
        let strict = SETTINGS.replace("  // a comment a person wrote\n", "");
        let installed = claude_install(Some(&strict), CMD).unwrap();
        assert!(
            installed.starts_with("{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"PreToolUse\""),
            "{installed}"
        );
        assert!(
            installed.contains("{ \"type\": \"command\", \"command\": \"~/bin/guard.sh\" }"),
            "{installed}"
        );
        assert!(
            installed.ends_with("  \"permissions\": { \"allow\": [\"Bash(cargo test:*)\"] }\n}\n"),
            "{installed}"
        );
        let removed = claude_uninstall(&installed).unwrap().unwrap();
        assert_eq!(
            removed, strict,
            "removing what install added gives back the bytes"
        );
    }

    #[test]
    fn a_new_file_and_a_moved_repository() {
        let fresh = claude_install(None, CMD).unwrap();
        assert_eq!(claude_hooks(&fresh), vec![CMD.to_string()]);
        let other = CMD.replace("/home/ada/memory", "/srv/mem");
        let moved = claude_install(Some(&fresh), &other).unwrap();
        assert_eq!(
            claude_hooks(&moved),
            vec![other.clone()],
            "the old entry is replaced, not doubled"
        );
        let gone = claude_uninstall(&moved).unwrap().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&gone).unwrap(),
            serde_json::json!({})
        );
        assert!(claude_install(Some("[1]"), CMD).is_err());
        assert!(claude_install(Some("{\"hooks\": 3}"), CMD).is_err());
    }

    #[test]
    fn markdown_blocks_come_and_go_byte_for_byte() {
        let b = block("repo=/m (managed by `dream hooks`)", "@/m/CONTEXT.md");
        for original in [
            "",
            "Use tabs.",
            "Use tabs.\n",
            "# Mine\n\nUse tabs.\n\n",
            "\n",
        ] {
            let with = block_install(Some(original), &b);
            assert_eq!(
                block_install(Some(&with), &b),
                with,
                "idempotent on {original:?}"
            );
            assert_eq!(block_body(&with), Some("@/m/CONTEXT.md\n"));
            assert_eq!(block_remove(&with).unwrap(), original, "{original:?}");
        }
        let with = block_install(Some("top\n"), &b);
        let newer = block_install(Some(&with), &block("repo=/m", "new body"));
        assert_eq!(block_body(&newer), Some("new body\n"));
        assert!(newer.starts_with("top\n\n<!-- dream:begin"));
        // Text a person added after the block stays.
        let later = format!("{with}More rules.\n");
        assert_eq!(block_remove(&later).unwrap(), "top\nMore rules.\n");
        assert_eq!(block_remove("no block here"), None);
    }

    #[test]
    fn the_sources_entry_is_appended_and_removed() {
        let toml_text = "[llm]\nprovider = \"none\"\n";
        let with = source_install(
            toml_text,
            "claude-code",
            "claude-code",
            "~/.claude/projects",
        );
        assert!(with.contains(
            "[[inbox.sources]]\nformat = \"claude-code\"\npath = \"~/.claude/projects\"\n"
        ));
        let parsed: toml::Table = with.parse().unwrap();
        assert_eq!(
            parsed["inbox"]["sources"][0]["path"].as_str(),
            Some("~/.claude/projects")
        );
        assert_eq!(source_remove(&with, "claude-code").unwrap(), toml_text);
        assert_eq!(source_remove(&with, "codex"), None);
        assert_eq!(source_remove(toml_text, "claude-code"), None);
    }
}
