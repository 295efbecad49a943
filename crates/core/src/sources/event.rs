//! Events, the input of SPEC S2: what they are and how one line becomes one.
//!
//! [`parse_line`] is the single validation path for every event that enters dream, from
//! the inbox or from `dream ingest`: it checks the required fields, derives a missing id
//! from the content, applies the default trust, and redacts secrets (S8) before anything
//! else sees the text. It returns a reason a person can act on when the line is refused.
//! Pure code: reading files is `inbox`'s job.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::sources::secrets;

/// How far an event's text can be trusted to establish a fact (S8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    /// The person the memory belongs to.
    Owner,
    /// The agent itself.
    Agent,
    /// Output of a tool.
    Tool,
    /// Web pages, other people's text.
    External,
}

impl Trust {
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::Owner => "owner",
            Trust::Agent => "agent",
            Trust::Tool => "tool",
            Trust::External => "external",
        }
    }

    pub fn parse(s: &str) -> Option<Trust> {
        match s {
            "owner" => Some(Trust::Owner),
            "agent" => Some(Trust::Agent),
            "tool" => Some(Trust::Tool),
            "external" => Some(Trust::External),
            _ => None,
        }
    }
}

/// One episodic event, validated and redacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub id: String,
    pub ts: DateTime<Utc>,
    pub kind: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub trust: Trust,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recalled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// An event as stored, with whether a cycle has already reflected on it.
#[derive(Debug, Clone)]
pub struct Stored {
    pub event: Event,
    pub reflected: bool,
}

impl Event {
    /// A stable hash of everything the event says; an id seen again with a different
    /// content hash is a conflict.
    pub fn content_hash(&self) -> String {
        let canonical = serde_json::to_string(self).expect("events serialize");
        hex(&Sha256::digest(canonical.as_bytes()))[..32].to_string()
    }

    /// The calendar day of the event (UTC), used to count distinct days of support.
    pub fn day(&self) -> chrono::NaiveDate {
        self.ts.date_naive()
    }

    /// The session, or a per-event pseudo-session when none was given (an event without a
    /// session is its own independent source).
    pub fn session_key(&self) -> String {
        self.session
            .clone()
            .unwrap_or_else(|| format!("~{}", self.id))
    }

    /// The event as one JSON Lines line (no trailing newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("events serialize")
    }
}

/// Why a line was refused, and which secrets were redacted from an accepted one.
#[derive(Debug)]
pub struct Parsed {
    pub event: Event,
    pub redacted: Vec<&'static str>,
}

pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// The id an event gets when the writer gave none: a hash of its timestamp, kind, session,
/// actor and text, so the same line read twice gets the same id.
pub fn derive_id(
    ts: &DateTime<Utc>,
    kind: &str,
    session: Option<&str>,
    actor: Option<&str>,
    text: &str,
) -> String {
    let mut h = Sha256::new();
    for part in [
        ts.to_rfc3339_opts(SecondsFormat::AutoSi, true).as_str(),
        kind,
        session.unwrap_or(""),
        actor.unwrap_or(""),
        text,
    ] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    format!("ev_{}", &hex(&h.finalize())[..16])
}

/// The trust an event gets when the writer gave none: the user's own words are `owner`,
/// tool calls and their output `tool`, everything else the agent wrote `agent`.
pub fn default_trust(kind: &str, actor: Option<&str>) -> Trust {
    match actor {
        Some("user") | Some("human") | Some("owner") => Trust::Owner,
        Some("tool") => Trust::Tool,
        Some(_) => {
            if kind.starts_with("tool_") {
                Trust::Tool
            } else {
                Trust::Agent
            }
        }
        None => match kind {
            "message" => Trust::Owner,
            k if k.starts_with("tool_") => Trust::Tool,
            _ => Trust::Agent,
        },
    }
}

const MAX_ID_CHARS: usize = 200;

/// The earliest plausible event time: no agent transcript is older than 1990, and a clock
/// reset to 0000-01-01 or 1970 is a broken writer, not history.
pub const EARLIEST_TS: &str = "1990-01-01T00:00:00Z";
/// How far past the cycle's clock an event may be dated (clock skew between machines);
/// 9999-12-31 would otherwise be "not yet reflected on" for ever and sort first always.
pub const MAX_TS_AHEAD_HOURS: i64 = 24;

/// Whether an event's time is plausible for a cycle running at `now`: from 1990 to a day
/// after `now`. An event outside is quarantined with this reason, not kept.
pub fn check_time(ts: DateTime<Utc>, now: DateTime<Utc>) -> Result<(), String> {
    let earliest: DateTime<Utc> = EARLIEST_TS.parse().expect("a valid timestamp");
    if ts < earliest {
        return Err(format!(
            "`ts` {} is before 1990-01-01, outside the plausible range (1990 to a day after the cycle's clock); fix the writer's clock or the line",
            ts.to_rfc3339_opts(SecondsFormat::Secs, true)
        ));
    }
    if ts > now + chrono::Duration::hours(MAX_TS_AHEAD_HOURS) {
        return Err(format!(
            "`ts` {} is more than {MAX_TS_AHEAD_HOURS} hours after the cycle's clock ({}), outside the plausible range; fix the writer's clock or the line",
            ts.to_rfc3339_opts(SecondsFormat::Secs, true),
            now.to_rfc3339_opts(SecondsFormat::Secs, true)
        ));
    }
    Ok(())
}

/// Validate one inbox line (without its newline) into an event, or say why not.
pub fn parse_line(bytes: &[u8], max_bytes: usize) -> Result<Parsed, String> {
    if bytes.len() > max_bytes {
        return Err(format!(
            "line is {} bytes, over the limit of {} (inbox.max_event_bytes)",
            bytes.len(),
            max_bytes
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        format!(
            "not valid UTF-8 (first bad byte at offset {})",
            e.valid_up_to()
        )
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(obj) = value else {
        return Err("not a JSON object".into());
    };
    from_object(obj)
}

/// Validate a JSON object already parsed into an event.
pub fn from_object(mut obj: Map<String, Value>) -> Result<Parsed, String> {
    let ts_raw = required_str(&obj, "ts")?;
    let ts = DateTime::parse_from_rfc3339(ts_raw)
        .map_err(|e| {
            format!(
                "`ts` is not an RFC 3339 timestamp ({:?}: {e})",
                secrets::shown(ts_raw, 60)
            )
        })?
        .with_timezone(&Utc);
    let kind = required_str(&obj, "kind")?.to_string();
    if kind.is_empty()
        || kind.len() > 64
        || !kind
            .chars()
            .all(|c| c.is_ascii_lowercase() || c == '_' || c == '-')
    {
        return Err(format!(
            "`kind` must be a lower-case word such as message or tool_call, not {:?}",
            secrets::shown(&kind, 60)
        ));
    }
    let raw_text = required_str(&obj, "text")?.to_string();
    if raw_text.trim().is_empty() {
        return Err("`text` is empty".into());
    }
    for key in ["text", "session", "actor", "source", "id"] {
        if let Some(Value::String(s)) = obj.get(key) {
            unstorable(key, s)?;
        }
    }
    // Every free-text field is redacted like the text (S8): a secret pasted as a session
    // or source name is stored, shown and committed as a marker.
    let mut redacted = Vec::new();
    let mut clean = |v: Option<String>| {
        v.map(|v| {
            let (c, found) = secrets::redact(&v);
            redacted.extend(found);
            c
        })
    };
    let session = clean(optional_str(&obj, "session")?);
    let actor = clean(optional_str(&obj, "actor")?);
    let source = clean(optional_str(&obj, "source")?);
    let trust = match optional_str(&obj, "trust")? {
        Some(t) => Trust::parse(&t).ok_or_else(|| {
            format!(
                "`trust` must be one of owner, agent, tool, external, not {:?}",
                secrets::shown(&t, 60)
            )
        })?,
        None => default_trust(&kind, actor.as_deref()),
    };
    let recalled = match obj.get("recalled") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(format!(
                "`recalled` must be true or false, not {}",
                secrets::shown(&other.to_string(), 60)
            ))
        }
    };
    let mut meta = match obj.remove("meta") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v),
        Some(other) => {
            return Err(format!(
                "`meta` must be a JSON object, not {}",
                secrets::shown(&other.to_string(), 60)
            ))
        }
    };

    let (text, found) = secrets::redact(&raw_text);
    redacted.extend(found);
    if let Some(m) = meta.as_mut() {
        redacted.extend(secrets::redact_json(m));
    }
    let derived = || derive_id(&ts, &kind, session.as_deref(), actor.as_deref(), &text);
    let id = match obj.get("id") {
        None | Some(Value::Null) => derived(),
        // An id that carries a secret is replaced by the id derived from the content, as
        // for an event without one (a marker would make every such id the same).
        Some(Value::String(s)) if !secrets::find(s).is_empty() => {
            redacted.extend(secrets::find(s).iter().map(|f| f.detector));
            derived()
        }
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(other) => {
            return Err(format!(
                "`id` must be a non-empty string, not {}",
                secrets::shown(&other.to_string(), 60)
            ))
        }
    };
    if id.chars().count() > MAX_ID_CHARS || id.chars().any(char::is_control) {
        return Err(format!(
            "`id` must be at most {MAX_ID_CHARS} characters with no control characters"
        ));
    }
    redacted.sort_unstable();
    redacted.dedup();
    // Text that carries dream's own marker was read back from memory (a context printed
    // by `dream context`, a hook's output, a `recall` result, the Codex block), whoever
    // wrote the line: it never counts as new support (S8, no echo).
    let recalled = recalled || carries_marker(&text);
    Ok(Parsed {
        event: Event {
            id,
            ts,
            kind,
            text,
            session,
            actor,
            source,
            trust,
            recalled,
            meta,
        },
        redacted,
    })
}

/// Characters no stored event field may hold, each with what refuses it. A NUL (U+0000)
/// ends a C string: git refuses a commit message that holds one, and a fact quoting it
/// could never be committed, so every later cycle would fail on the same line. Refusing
/// the event here quarantines that one line with its reason; the rest goes on. (Other
/// control characters are kept: git, SQLite and the Markdown rows hold them.)
pub const UNSTORABLE: &[(char, &str)] = &[(
    '\u{0}',
    "a NUL character (U+0000), which git commit messages and C strings cannot hold",
)];

/// Refuse a field holding a character of [`UNSTORABLE`], naming the field, the character
/// and where it is, so the writer can be fixed.
fn unstorable(key: &str, value: &str) -> Result<(), String> {
    for (at, c) in value.char_indices() {
        if let Some((_, why)) = UNSTORABLE.iter().find(|(u, _)| *u == c) {
            return Err(format!(
                "`{key}` holds {why} (at byte {at}); remove it from the line, or have its writer escape it"
            ));
        }
    }
    Ok(())
}

fn required_str<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Err(format!("missing required field `{key}`")),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!(
            "`{key}` must be a string, not {}",
            secrets::shown(&other.to_string(), 60)
        )),
    }
}

fn optional_str(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "`{key}` must be a string, not {}",
            secrets::shown(&other.to_string(), 60)
        )),
    }
}

/// The marker every text dream shows an agent carries (`dream context`, recall). An event
/// whose text contains it was read back from memory, and is stored as recalled.
pub const MARKER: &str = "dream:recalled";

/// The first line of everything dream prints for an agent.
pub fn marker_line() -> String {
    format!("<!-- {MARKER}: memory loaded from dream; recalled, not new evidence -->")
}

/// Whether a text carries dream's marker (it was read back from memory).
pub fn carries_marker(text: &str) -> bool {
    text.contains(MARKER)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Parsed, String> {
        parse_line(line.as_bytes(), 1 << 20)
    }

    #[test]
    fn a_minimal_event_gets_an_id_and_default_trust() {
        let p = parse(r#"{"ts":"2026-11-01T09:00:00Z","kind":"message","text":"I live in Lisbon","actor":"user"}"#).unwrap();
        assert!(p.event.id.starts_with("ev_"));
        assert_eq!(p.event.trust, Trust::Owner);
        let again = parse(r#"{"ts":"2026-11-01T09:00:00Z","kind":"message","text":"I live in Lisbon","actor":"user"}"#).unwrap();
        assert_eq!(p.event.id, again.event.id, "derived ids are deterministic");
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        let table = [
            (
                r#"{"kind":"message","text":"x"}"#,
                "missing required field `ts`",
            ),
            (
                r#"{"ts":"yesterday","kind":"message","text":"x"}"#,
                "`ts` is not an RFC 3339 timestamp",
            ),
            (
                r#"{"ts":"2026-11-01T09:00:00Z","kind":"Message","text":"x"}"#,
                "`kind` must be a lower-case word",
            ),
            (
                r#"{"ts":"2026-11-01T09:00:00Z","kind":"message","text":"  "}"#,
                "`text` is empty",
            ),
            (
                r#"{"ts":"2026-11-01T09:00:00Z","kind":"message","text":"x","trust":"god"}"#,
                "`trust` must be one of",
            ),
            (r#"[1,2]"#, "not a JSON object"),
            (r#"{"ts":"#, "not valid JSON"),
        ];
        for (line, want) in table {
            let err = parse(line).unwrap_err();
            assert!(err.starts_with(want), "{line}: {err}");
        }
        assert!(parse_line(b"\xff\xfe", 100)
            .unwrap_err()
            .starts_with("not valid UTF-8"));
        assert!(parse_line(&[b'a'; 200], 100)
            .unwrap_err()
            .contains("over the limit of 100"));
    }

    #[test]
    fn a_nul_in_a_stored_field_is_refused_and_named() {
        for key in ["text", "session", "actor", "source", "id"] {
            let line = format!(
                r#"{{"ts":"2026-11-01T09:00:00Z","kind":"message","text":"I live in Lisbon","{key}":"a\u0000b"}}"#
            );
            let err = parse(&line).unwrap_err();
            assert!(
                err.starts_with(&format!("`{key}` holds a NUL")),
                "{key}: {err}"
            );
        }
        // meta is stored as JSON, where a NUL is escaped: it is kept.
        let p = parse(
            r#"{"ts":"2026-11-01T09:00:00Z","kind":"message","text":"I live in Lisbon","meta":{"x":"a\u0000b"}}"#,
        );
        assert!(p.is_ok());
        // Other control characters are kept.
        let p = parse(
            r#"{"ts":"2026-11-01T09:00:00Z","kind":"message","text":"I live\u0007 in\u001b Lisbon\r"}"#,
        );
        assert!(p.is_ok());
    }

    #[test]
    fn times_outside_1990_to_a_day_ahead_are_refused() {
        let now: DateTime<Utc> = "2026-11-06T21:00:00Z".parse().unwrap();
        let at = |s: &str| check_time(s.parse().unwrap(), now);
        assert!(at("2026-11-06T09:00:00Z").is_ok());
        assert!(at("1990-01-01T00:00:00Z").is_ok());
        assert!(
            at("2026-11-07T20:59:00Z").is_ok(),
            "clock skew within a day"
        );
        assert!(at("1989-12-31T23:59:59Z")
            .unwrap_err()
            .contains("before 1990"));
        assert!(at("0000-01-01T00:00:00Z")
            .unwrap_err()
            .contains("before 1990"));
        let far = at("9999-12-31T23:59:59Z").unwrap_err();
        assert!(
            far.contains("more than 24 hours after the cycle's clock (2026-11-06T21:00:00Z)"),
            "{far}"
        );
    }

    #[test]
    fn secrets_are_redacted_before_anything_else_sees_them() {
        let p = parse(r#"{"ts":"2026-11-01T09:00:00Z","kind":"tool_result","text":"OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx1234","meta":{"env":"AKIAIOSFODNN7EXAMPLE"}}"#).unwrap();
        assert!(!p.event.text.contains("sk-abc"));
        assert!(!p.event.meta.as_ref().unwrap().to_string().contains("AKIA"));
        assert_eq!(p.redacted, vec!["aws-access-key", "openai-key"]);
        assert_eq!(p.event.trust, Trust::Tool);
    }
}
