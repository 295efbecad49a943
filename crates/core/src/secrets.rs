//! Secret detectors (SPEC S8): redaction at ingest and the secrets gate.
//!
//! Each detector has a stable name that appears in the typed marker left behind
//! (`[redacted:aws-access-key]`) and in refusals, so a person can tell what was found without
//! ever seeing it. Redaction runs before an event is stored, embedded or sent to a model; the
//! gate refuses any candidate that still carries a secret or a redaction marker. Pure code.

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

struct Detector {
    name: &'static str,
    re: Regex,
    /// Which capture group holds the secret itself (0 = the whole match). Assignments keep
    /// their key name (`password=` stays) so the text still reads sensibly.
    group: usize,
}

static DETECTORS: LazyLock<Vec<Detector>> = LazyLock::new(|| {
    // Word boundaries are ASCII (`(?-u:\b)`): secrets are ASCII, and a Unicode boundary
    // makes the fast engine give up on any text with a non-ASCII character (tool output
    // full of `→`), which made redaction the slowest step of ingest.
    let d = |name, pattern: &str, group| Detector {
        name,
        re: Regex::new(pattern).expect("detector pattern compiles"),
        group,
    };
    vec![
        d(
            "private-key",
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)",
            0,
        ),
        d(
            "aws-access-key",
            r"(?-u:\b)(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}(?-u:\b)",
            0,
        ),
        d(
            "aws-secret-key",
            r#"(?i)aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})"#,
            1,
        ),
        d("anthropic-key", r"(?-u:\b)sk-ant-[A-Za-z0-9_\-]{20,}", 0),
        d(
            "openai-key",
            r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
            0,
        ),
        d(
            "github-token",
            r"(?-u:\b)(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}(?-u:\b)|(?-u:\b)github_pat_[A-Za-z0-9_]{40,}(?-u:\b)",
            0,
        ),
        d(
            "gitlab-token",
            r"(?-u:\b)glpat-[A-Za-z0-9_\-]{20,}(?-u:\b)",
            0,
        ),
        d(
            "slack-token",
            r"(?-u:\b)xox[abposr]-[A-Za-z0-9-]{10,}(?-u:\b)",
            0,
        ),
        d(
            "stripe-key",
            r"(?-u:\b)(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}(?-u:\b)",
            0,
        ),
        d(
            "google-api-key",
            r"(?-u:\b)AIza[0-9A-Za-z_\-]{35}(?-u:\b)",
            0,
        ),
        d(
            "huggingface-token",
            r"(?-u:\b)hf_[A-Za-z0-9]{30,}(?-u:\b)",
            0,
        ),
        d(
            "jwt",
            r"(?-u:\b)eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
            0,
        ),
        d(
            "bearer-token",
            r"(?i)(?-u:\b)bearer\s+([A-Za-z0-9_\-\.=+/]{20,})",
            1,
        ),
        d(
            "url-credentials",
            r"(?i)(?-u:\b)[a-z][a-z0-9+.-]*://[^/\s:@]+:([^/\s@]{3,})@",
            1,
        ),
        d(
            "password",
            r#"(?i)(?-u:\b)(?:password|passwd|pwd|passphrase)["']?\s*(?:[:=]|(?-u:\b)is(?-u:\b))\s*["']?([^\s"',;]{4,})"#,
            1,
        ),
        d(
            "secret-assignment",
            r#"(?i)(?-u:\b)[a-z0-9_]*(?:api_?key|secret|token|access_?key|client_?secret)["']?\s*[:=]\s*["']?([A-Za-z0-9_\-\./+=]{16,})"#,
            1,
        ),
    ]
});

/// What a detector found: its name and the byte range of the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub detector: &'static str,
    pub start: usize,
    pub end: usize,
}

const MARKER_PREFIX: &str = "[redacted:";

/// Every detector in one automaton: one pass over a text says which detectors can match,
/// and almost every text matches none.
static ANY: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(DETECTORS.iter().map(|d| d.re.as_str())).expect("detector patterns compile")
});

/// Every secret in a text, leftmost first, without overlaps.
pub fn find(text: &str) -> Vec<Finding> {
    let mut found: Vec<Finding> = Vec::new();
    let candidates = ANY.matches(text);
    if !candidates.matched_any() {
        return found;
    }
    for det in candidates.iter().map(|i| &DETECTORS[i]) {
        for caps in det.re.captures_iter(text) {
            let Some(m) = caps.get(det.group) else {
                continue;
            };
            if m.as_str().starts_with(MARKER_PREFIX) || m.as_str().contains("redacted") {
                continue;
            }
            if found.iter().any(|f| m.start() < f.end && f.start < m.end()) {
                continue;
            }
            found.push(Finding {
                detector: det.name,
                start: m.start(),
                end: m.end(),
            });
        }
    }
    found.sort_by_key(|f| f.start);
    found
}

/// The text with every secret replaced by a typed marker, and the detectors that fired.
pub fn redact(text: &str) -> (String, Vec<&'static str>) {
    let findings = find(text);
    if findings.is_empty() {
        return (text.to_string(), Vec::new());
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut names = Vec::new();
    for f in &findings {
        out.push_str(&text[at..f.start]);
        out.push_str(MARKER_PREFIX);
        out.push_str(f.detector);
        out.push(']');
        at = f.end;
        if !names.contains(&f.detector) {
            names.push(f.detector);
        }
    }
    out.push_str(&text[at..]);
    (out, names)
}

/// Redact every string inside a JSON value (used for `meta`).
pub fn redact_json(value: &mut serde_json::Value) -> Vec<&'static str> {
    let mut names = Vec::new();
    match value {
        serde_json::Value::String(s) => {
            let (clean, found) = redact(s);
            if !found.is_empty() {
                *s = clean;
                names.extend(found);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                names.extend(redact_json(item));
            }
        }
        serde_json::Value::Object(map) => {
            for (_, item) in map.iter_mut() {
                names.extend(redact_json(item));
            }
        }
        _ => {}
    }
    names
}

/// The secrets gate: the name of the first detector that fires on a candidate, or of the
/// marker a redaction left in it. `None` means the text is clean.
pub fn gate(text: &str) -> Option<String> {
    if let Some(f) = find(text).first() {
        return Some(f.detector.to_string());
    }
    let at = text.find(MARKER_PREFIX)?;
    let rest = &text[at + MARKER_PREFIX.len()..];
    let name = rest.split(']').next().unwrap_or("secret");
    Some(format!("{name} (redacted at ingest)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_common_key_shapes_with_typed_markers() {
        let table = [
            (
                "my key is sk-proj-abcdefghijklmnopqrstuvwx123",
                "openai-key",
            ),
            ("AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws-secret-key",
            ),
            (
                "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                "github-token",
            ),
            ("password: hunter2hunter", "password"),
            (
                "export STRIPE_SECRET=sk_live_abcdefghijklmnop1234",
                "stripe-key",
            ),
            (
                "Authorization: Bearer abcdefghijklmnopqrstuvwxyz123456",
                "bearer-token",
            ),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
                "private-key",
            ),
            (
                "db: postgres://app:s3cretpw@db.internal/app",
                "url-credentials",
            ),
        ];
        for (input, detector) in table {
            let (clean, names) = redact(input);
            assert_eq!(names, vec![detector], "redact({input:?}) -> {clean}");
            assert!(clean.contains(&format!("[redacted:{detector}]")), "{clean}");
        }
    }

    #[test]
    fn finds_keys_in_text_with_non_ascii_characters() {
        let text = "     3→export KEY=ghp_abcdefghijklmnopqrstuvwxyz0123456789 # clé «AKIAIOSFODNN7EXAMPLE»";
        let (clean, names) = redact(text);
        assert_eq!(names, vec!["github-token", "aws-access-key"], "{clean}");
        assert!(
            clean.starts_with("     3→export KEY=[redacted:github-token]"),
            "{clean}"
        );
    }

    #[test]
    fn leaves_ordinary_text_alone() {
        for text in [
            "I live in Lisbon and work best in the morning.",
            "the token budget is 200000 per cycle",
            "my password manager is 1Password",
            "see src/main.rs and tests/tests.rs",
        ] {
            assert_eq!(redact(text), (text.to_string(), vec![]), "{text}");
        }
    }

    #[test]
    fn redaction_is_idempotent_and_gate_sees_markers() {
        let (once, _) = redact("key sk-abcdefghijklmnopqrstuvwxyz0123");
        let (twice, names) = redact(&once);
        assert_eq!(once, twice);
        assert!(names.is_empty());
        assert_eq!(
            gate(&once).as_deref(),
            Some("openai-key (redacted at ingest)")
        );
        assert_eq!(
            gate("AKIAIOSFODNN7EXAMPLE").as_deref(),
            Some("aws-access-key")
        );
        assert_eq!(gate("I like tea"), None);
    }
}
