//! Secret detectors (SPEC S8): redaction at ingest and the secrets gate.
//!
//! Each detector has a stable name that appears in the typed marker left behind
//! (`[redacted:aws-access-key]`) and in refusals, so a person can tell what was found without
//! ever seeing it. Redaction runs before an event is stored, embedded or sent to a model; the
//! gate refuses any candidate that still carries a secret or a redaction marker. Pure code.

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use crate::sources::secret_rules;

/// See [`Detector::check`].
type Check = fn(&str, usize, &str) -> Option<(usize, usize)>;

struct Detector {
    name: &'static str,
    re: Regex,
    /// Which capture group holds the secret itself (0 = the whole match). Assignments keep
    /// their key name (`password=` stays) so the text still reads sensibly.
    group: usize,
    /// A check the match must also pass (a checksum, a mix of characters, a nearby word),
    /// for shapes a pattern alone would confuse with ordinary text: given `(text, start,
    /// match)`, the byte range of the secret within the match, if there is one.
    check: Option<Check>,
    /// Words one of which a text must hold (ASCII case ignored) for this detector to be
    /// tried, as gitleaks' rules have: a pattern that needs the word around its value
    /// ("password", "ssn") is then run only on the texts that have it, instead of joining
    /// the set every text is scanned with, where each pattern slows every text.
    keywords: &'static [&'static str],
}

/// Names of environment-style variables whose value is a secret: the name ends with one
/// of these (so `GITHUB_TOKEN` and `DATABASE_PASSWORD` are secrets, `MAX_TOKENS` is not).
const SECRET_NAME_ENDINGS: &str = "PASSWORD|PASSWD|PASS|PWD|PASSPHRASE|SECRET|SECRET_KEY|SECRET_ACCESS_KEY|TOKEN|AUTH_TOKEN|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY|SIGNING_KEY|ENCRYPTION_KEY|MASTER_KEY|ACCOUNT_KEY|CLIENT_SECRET|CREDENTIALS|CREDENTIAL|DSN|CONNECTION_STRING";

static DETECTORS: LazyLock<Vec<Detector>> = LazyLock::new(|| {
    // Word boundaries are ASCII (`(?-u:\b)`): secrets are ASCII, and a Unicode boundary
    // makes the fast engine give up on any text with a non-ASCII character (tool output
    // full of `→`), which made redaction the slowest step of ingest.
    let d = |name, pattern: &str, group| Detector {
        name,
        re: Regex::new(pattern).expect("detector pattern compiles"),
        group,
        check: None,
        keywords: &[],
    };
    let checked = |name, pattern: &str, group, check| Detector {
        check: Some(check),
        ..d(name, pattern, group)
    };
    let keyed = |keywords, det: Detector| Detector { keywords, ..det };
    vec![
        keyed(
            &["private key"],
            d(
                "private-key",
                r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)",
                0,
            ),
        ),
        d(
            "aws-access-key",
            r"(?-u:\b)(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|APKA)[0-9A-Z]{16}(?-u:\b)",
            0,
        ),
        keyed(
            &["aws"],
            d(
                "aws-secret-key",
                r#"(?i)aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})"#,
                1,
            ),
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
            r"(?-u:\b)gl(?:pat|ptt|dt|rt)-[A-Za-z0-9_\-]{20,}(?-u:\b)",
            0,
        ),
        d(
            "slack-token",
            r"(?-u:\b)xox[abposre]-[A-Za-z0-9-]{10,}(?-u:\b)",
            0,
        ),
        keyed(
            &["hooks.slack.com"],
            d(
                "slack-webhook",
                r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{8,}",
                0,
            ),
        ),
        keyed(
            &["discord"],
            d(
                "discord-webhook",
                r"https?://(?:[a-z]+\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_\-]{20,}",
                0,
            ),
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
            "google-oauth-token",
            r"(?-u:\b)ya29\.[0-9A-Za-z_\-]{20,}",
            0,
        ),
        d(
            "huggingface-token",
            r"(?-u:\b)hf_[A-Za-z0-9]{30,}(?-u:\b)",
            0,
        ),
        d("npm-token", r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)", 0),
        keyed(
            &["pypi-"],
            d(
                "pypi-token",
                r"(?-u:\b)pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{40,}",
                0,
            ),
        ),
        d(
            "sendgrid-key",
            r"(?-u:\b)SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}",
            0,
        ),
        d("twilio-key", r"(?-u:\b)SK[0-9a-fA-F]{32}(?-u:\b)", 0),
        d("mailgun-key", r"(?-u:\b)key-[0-9a-zA-Z]{32}(?-u:\b)", 0),
        d(
            "digitalocean-token",
            r"(?-u:\b)do[opr]_v1_[a-f0-9]{64}(?-u:\b)",
            0,
        ),
        d(
            "shopify-token",
            r"(?-u:\b)shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?-u:\b)",
            0,
        ),
        d(
            "databricks-token",
            r"(?-u:\b)dapi[a-f0-9]{32}(?:-[0-9])?(?-u:\b)",
            0,
        ),
        d(
            "linear-key",
            r"(?-u:\b)lin_(?:api|oauth)_[A-Za-z0-9]{32,}(?-u:\b)",
            0,
        ),
        d(
            "square-token",
            r"(?-u:\b)(?:sq0atp|sq0csp|EAAA)[0-9A-Za-z_\-]{22,60}(?-u:\b)",
            0,
        ),
        d(
            "telegram-bot-token",
            r"(?-u:\b)[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}(?-u:\b)",
            0,
        ),
        d("vault-token", r"(?-u:\b)hv[sbr]\.[A-Za-z0-9_\-]{24,}", 0),
        keyed(
            &["age-secret-key"],
            d(
                "age-secret-key",
                r"(?-u:\b)AGE-SECRET-KEY-1[0-9A-Z]{58}(?-u:\b)",
                0,
            ),
        ),
        keyed(
            &["accountkey", "sharedaccesskey"],
            d(
                "azure-storage-key",
                r"(?i)(?:AccountKey|SharedAccessKey)\s*=\s*([A-Za-z0-9+/]{20,}={0,2})",
                1,
            ),
        ),
        keyed(
            &["sig="],
            d(
                "azure-sas-signature",
                r"(?i)(?-u:\b)sig=([A-Za-z0-9%+/]{30,}(?:%3D|=)*)",
                1,
            ),
        ),
        d(
            "jwt",
            r"(?-u:\b)eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
            0,
        ),
        keyed(
            &["bearer"],
            d(
                "bearer-token",
                r"(?i)(?-u:\b)bearer\s+([A-Za-z0-9_\-\.=+/]{20,})",
                1,
            ),
        ),
        keyed(
            &["authorization"],
            d(
                "basic-auth",
                r"(?i)authorization[\x22']?\s*[:=]\s*[\x22']?basic\s+([A-Za-z0-9+/]{8,}={0,2})",
                1,
            ),
        ),
        d(
            "url-credentials",
            r"(?i)(?-u:\b)[a-z][a-z0-9+.-]*://[^/\s:@]*:([^/\s@]{3,})@",
            1,
        ),
        d(
            "env-secret",
            &format!(
                r#"(?m)(?:^|[\s;,'"(\[{{])(?:export\s+)?[A-Z][A-Z0-9_]*(?:{SECRET_NAME_ENDINGS})["']?\s*[:=]\s*["']?([^\s"'$<{{][^\s"']{{3,}})"#
            ),
            1,
        ),
        keyed(
            &["password", "passwd", "pwd", "passphrase"],
            checked(
                "password",
                r#"(?i)(?:(?-u:\b)|_)(?:password|passwd|pwd|passphrase)["']?\s*(?:[:=]|(?-u:\b)is(?-u:\b))\s*["']?([^\s"',;$][^\s"',;]{3,})"#,
                1,
                password_value,
            ),
        ),
        // "the password for the staging box is ...", "the wifi password to the flat is ...".
        keyed(
            &["password", "passwd", "passphrase"],
            checked(
                "password",
                r#"(?i)(?-u:\b)(?:password|passwd|passphrase)\s+(?:for|of|to|on|at)(?:\s+[A-Za-z0-9_.@\-']+){1,4}?\s+is\s+["']?([^\s"',;$][^\s"',;]{3,})"#,
                1,
                password_value,
            ),
        ),
        // No separator at all, as a `.netrc` line ("machine ... login me password s3cr3t")
        // or prose ("ssh in with password hunter2hunter2") write it: only a value of six or
        // more characters that no word or count could be (`mixed_value`), so "password
        // manager" and "password 2024" are left alone.
        keyed(
            &["password", "passwd"],
            checked(
                "password",
                r#"(?i)(?-u:\b)(?:password|passwd)\s+([^\s"',;$][^\s"',;]{5,})"#,
                1,
                mixed_value,
            ),
        ),
        // The MySQL and MariaDB clients take the password glued to -p ("mysql -u root
        // -ps3cr3t"), in the same command (no `;`, `|` or `&` between).
        keyed(
            &["mysql", "mariadb"],
            d(
                "mysql-password",
                r#"(?-u:\b)(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)(?-u:\b)[^\n;|&]*?\s-p([^\s'"\-][^\s'"]{3,})"#,
                1,
            ),
        ),
        // A PIN or a door, alarm or card security code said with its value.
        keyed(
            &[
                "pin",
                "passcode",
                "door code",
                "gate code",
                "alarm code",
                "lock code",
                "safe code",
                "garage code",
                "entry code",
                "access code",
                "security code",
            ],
            d(
                "pin-code",
                r"(?i)(?-u:\b)(?:pin(?: code| number)?|passcode|(?:door|gate|alarm|lock|safe|garage|entry|access|security) code)\s*(?:is|:|=)\s*([0-9]{3,10}[#*]?)(?:$|[^0-9A-Za-z.,])",
                1,
            ),
        ),
        // A US Social Security number, with the words that say it is one.
        keyed(
            &["ssn", "social security"],
            checked(
                "us-ssn",
                r"(?i)(?-u:\b)(?:ssn|social security(?: number| no\.?| #)?)[^0-9\n]{0,20}?([0-9]{3}-[0-9]{2}-[0-9]{4})(?-u:\b)",
                1,
                us_ssn,
            ),
        ),
        // "pass: ..." as a login is written down (a letter and a digit or a symbol in it, so
        // a test runner's "pass: 12" or "pass: true" is not one).
        keyed(
            &["pass"],
            checked(
                "password",
                r#"(?i)(?-u:\b)pass\s*[:=]\s*["']?([^\s"',;$][^\s"',;]{5,})"#,
                1,
                mixed_value,
            ),
        ),
        // A Mailchimp API key: 32 hexadecimal digits and its data centre.
        keyed(
            &["-us"],
            d(
                "mailchimp-key",
                r"(?-u:\b)[0-9a-f]{32}-us[0-9]{1,2}(?-u:\b)",
                0,
            ),
        ),
        // A wallet's recovery phrase: 12 to 24 lower-case words after the words naming it.
        keyed(
            &["phrase", "mnemonic", "seed words"],
            d(
                "recovery-phrase",
                r"(?i)(?-u:\b)(?:recovery|seed|mnemonic|backup|secret|wallet)\s+(?:phrase|words)\s*(?:is|are|:|=)?\s*((?:[a-z]{3,8}[ ,]+){11,23}[a-z]{3,8})(?-u:\b)",
                1,
            ),
        ),
        // Two-factor backup or recovery codes given with their name.
        keyed(
            &["backup code", "recovery code"],
            checked(
                "backup-codes",
                r"(?i)(?-u:\b)(?:backup|recovery)\s+codes?\s*(?:is|are|:|=)?\s*((?:[0-9a-z]{4,5}-?[0-9a-z]{3,5}(?:,\s*|\s+|$)){1,16})",
                1,
                mixed_value,
            ),
        ),
        // An international bank account number named as one ("IBAN"): its ISO 13616 check
        // digits must hold.
        keyed(
            &["iban"],
            checked(
                "iban",
                r"(?-u:\b)[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?-u:\b)",
                0,
                iban,
            ),
        ),
        checked(
            "secret-assignment",
            r#"(?i)(?-u:\b)[a-z0-9_\-]*(?:api[_\-]?key|secret|token|access[_\-]?key|client[_\-]?secret)["']?\s*[:=]\s*["']?([A-Za-z0-9_\-\./+=]{16,})"#,
            1,
            not_a_name,
        ),
        // A key or token named in words and given in prose ("my api key is ...", "the
        // access token 9f8e..."): only a value no word could be (`key_like`).
        keyed(
            &[
                "api key",
                "api-key",
                "access token",
                "access-token",
                "auth token",
                "auth-token",
                "secret key",
                "secret-key",
                "refresh token",
                "app password",
            ],
            checked(
                "named-token",
                r#"(?i)(?-u:\b)(?:api[ \-]key|access[ \-]token|auth[ \-]token|secret[ \-]key|refresh[ \-]token|app password)(?:\s+is|\s*[:=])?\s+["']?([A-Za-z0-9_\-\.=+/]{16,})"#,
                1,
                key_like,
            ),
        ),
        // Shapes the vendored gitleaks rules (secret_rules.rs) do not have.
        d("groq-api-key", r"(?-u:\b)gsk_[A-Za-z0-9]{48,56}(?-u:\b)", 0),
        d(
            "supabase-token",
            r"(?-u:\b)(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,})(?-u:\b)",
            0,
        ),
        d(
            "tailscale-key",
            r"(?-u:\b)tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}(?-u:\b)",
            0,
        ),
        d(
            "doppler-token",
            r"(?-u:\b)dp\.(?:st|ct|sa|scim|audit)\.(?:[A-Za-z0-9_\-]{1,40}\.)?[A-Za-z0-9]{40,44}(?-u:\b)",
            0,
        ),
        d(
            "mapbox-secret-token",
            r"(?-u:\b)sk\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{16,}",
            0,
        ),
        d(
            "gcp-private-key-id",
            r#"(?i)private_key_id(?:\\?["'])?\s*[:=]\s*(?:\\?["'])?([a-f0-9]{40})"#,
            1,
        ),
        d(
            "new-relic-key",
            r"(?-u:\b)NR(?:AK|AA|II|JS)-[A-Za-z0-9]{19,40}(?-u:\b)",
            0,
        ),
        d("xai-api-key", r"(?-u:\b)xai-[A-Za-z0-9]{48,}(?-u:\b)", 0),
        d("replicate-token", r"(?-u:\b)r8_[A-Za-z0-9]{37}(?-u:\b)", 0),
        d(
            "docker-pat",
            r"(?-u:\b)dckr_(?:pat|oat)_[A-Za-z0-9_\-]{27,}",
            0,
        ),
        d("figma-token", r"(?-u:\b)figd_[A-Za-z0-9_\-]{40}", 0),
        checked(
            "aws-secret-key",
            r"(?:^|[^A-Za-z0-9/+=])([A-Za-z0-9/+]{40})(?:$|[^A-Za-z0-9/+=])",
            1,
            bare_aws_secret,
        ),
        checked(
            "credit-card",
            r"(?-u:\b)(?:[0-9][ \-]?){12,18}[0-9](?-u:\b)",
            0,
            card_number,
        ),
    ]
});

/// A bare 40-character AWS secret: base64 with upper case, lower case and digits, and
/// either a `/` or `+` in it or the word "aws" or "secret" just before it (a git commit id
/// is 40 hexadecimal digits in one case, so it never qualifies).
fn bare_aws_secret(text: &str, start: usize, s: &str) -> Option<(usize, usize)> {
    let has = |f: fn(&u8) -> bool| s.as_bytes().iter().any(f);
    if !(has(u8::is_ascii_uppercase) && has(u8::is_ascii_lowercase) && has(u8::is_ascii_digit)) {
        return None;
    }
    // Inside a URL, a run with slashes is a path ("example.com/story/news/2023/...").
    let token = text[..start]
        .rfind(|c: char| c.is_whitespace() || c == '"')
        .map_or(0, |i| i + 1);
    if text[token..start].contains("://") {
        return None;
    }
    if has(|b| *b == b'/' || *b == b'+') {
        return Some((0, s.len()));
    }
    let mut from = start.saturating_sub(80);
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    let before = text[from..start].to_ascii_lowercase();
    (before.contains("aws") || before.contains("secret")).then_some((0, s.len()))
}

/// An assigned value made only of letters, `_`, `.` and `-` is a name, not a key
/// (`csrfToken = document.querySelector`), as gitleaks' generic rule allows.
fn not_a_name(_: &str, _: usize, s: &str) -> Option<(usize, usize)> {
    let name = s
        .bytes()
        .all(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'.' | b'-'));
    (!name).then_some((0, s.len()))
}

/// A password's value; after "is" (prose, not an assignment) a plain word of letters is
/// not one: "the database password is stored in ..." (as gitleaks' generic rule allows a
/// value of letters only).
fn password_value(text: &str, start: usize, s: &str) -> Option<(usize, usize)> {
    let before = text[..start]
        .trim_end_matches(['"', '\''])
        .trim_end()
        .as_bytes();
    let prose = before.len() >= 2 && before[before.len() - 2..].eq_ignore_ascii_case(b"is");
    if prose && s.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    Some((0, s.len()))
}

/// A key's value, not a word or a name: a digit and a letter in it.
fn key_like(_: &str, _: usize, s: &str) -> Option<(usize, usize)> {
    let digit = s.bytes().any(|b| b.is_ascii_digit());
    let letter = s.bytes().any(|b| b.is_ascii_alphabetic());
    (digit && letter).then_some((0, s.len()))
}

/// A value with a digit in it and a letter or a symbol, so neither a word nor a count
/// (spaces and commas between backup codes do not count as symbols).
fn mixed_value(_: &str, _: usize, s: &str) -> Option<(usize, usize)> {
    let t = s.trim_end();
    let digit = t.bytes().any(|b| b.is_ascii_digit());
    let other = t.bytes().any(|b| {
        b.is_ascii_alphabetic()
            || !(b.is_ascii_alphanumeric() || b.is_ascii_whitespace() || b == b',')
    });
    (digit && other).then_some((0, t.len()))
}

/// A Social Security number that can be one: area neither 000, 666 nor 900 to 999, group
/// not 00, serial not 0000.
fn us_ssn(_: &str, _: usize, s: &str) -> Option<(usize, usize)> {
    let part = |r: std::ops::Range<usize>| s.get(r).and_then(|p| p.parse::<u32>().ok());
    let (area, group, serial) = (part(0..3)?, part(4..6)?, part(7..11)?);
    (area != 0 && area != 666 && area < 900 && group != 0 && serial != 0).then_some((0, s.len()))
}

/// An IBAN: 15 to 34 characters once spaces are left out, whose check digits hold (the
/// number read with its first four characters moved to the end, letters as 10 to 35, is 1
/// modulo 97).
fn iban(_: &str, _: usize, s: &str) -> Option<(usize, usize)> {
    let compact: Vec<u8> = s.bytes().filter(|b| *b != b' ').collect();
    if !(15..=34).contains(&compact.len()) {
        return None;
    }
    let mut rem: u32 = 0;
    for &b in compact[4..].iter().chain(&compact[..4]) {
        let v = match b {
            b'0'..=b'9' => u32::from(b - b'0'),
            b'A'..=b'Z' => u32::from(b - b'A') + 10,
            _ => return None,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    (rem == 1).then_some((0, s.len()))
}

/// A payment card number: 13 to 19 digits (spaces or dashes between groups), a known
/// issuer prefix, and a valid Luhn checksum. The run of digit groups the pattern found
/// may hold more than the card (`order 12 4111 1111 1111 1111`): the longest run of whole
/// groups that is a card, leftmost first, is the secret.
fn card_number(_: &str, _: usize, s: &str) -> Option<(usize, usize)> {
    let mut groups = Vec::new();
    let mut at = None;
    for (i, c) in s.char_indices() {
        match (c.is_ascii_digit(), at) {
            (true, None) => at = Some(i),
            (false, Some(b)) => {
                groups.push((b, i));
                at = None;
            }
            _ => {}
        }
    }
    if let Some(b) = at {
        groups.push((b, s.len()));
    }
    for first in 0..groups.len() {
        for last in (first..groups.len()).rev() {
            let (from, to) = (groups[first].0, groups[last].1);
            if is_card(&s[from..to]) {
                return Some((from, to));
            }
        }
    }
    None
}

fn is_card(s: &str) -> bool {
    let digits: Vec<u32> = s.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let prefix = |n: usize| digits[..n].iter().fold(0u32, |a, d| a * 10 + d);
    let issuer = digits[0] == 4
        || (51..=55).contains(&prefix(2))
        || (2221..=2720).contains(&prefix(4))
        || matches!(prefix(2), 34 | 37 | 36 | 38 | 35 | 65)
        || prefix(4) == 6011
        || (644..=649).contains(&prefix(3))
        || (300..=305).contains(&prefix(3));
    if !issuer {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 {
                    x - 9
                } else {
                    x
                }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// How many kinds of secret the detectors know (each has a name in the markers).
pub fn shapes() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = DETECTORS.iter().map(|d| d.name).collect();
    names.extend(secret_rules::RULES.rules.iter().map(|r| r.id));
    names.sort_unstable();
    names.dedup();
    names
}

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
/// The detectors without keywords, as one set every text is scanned with, and their
/// indices in [`DETECTORS`].
static ANY: LazyLock<(RegexSet, Vec<usize>)> = LazyLock::new(|| {
    let open: Vec<usize> = (0..DETECTORS.len())
        .filter(|&i| DETECTORS[i].keywords.is_empty())
        .collect();
    let set = RegexSet::new(open.iter().map(|&i| DETECTORS[i].re.as_str()))
        .expect("detector patterns compile");
    (set, open)
});

/// The keywords of the detectors that have them, and for each keyword its detector.
static KEYWORDS: LazyLock<(aho_corasick::AhoCorasick, Vec<usize>)> = LazyLock::new(|| {
    let mut words = Vec::new();
    let mut owner = Vec::new();
    for (i, d) in DETECTORS.iter().enumerate() {
        for w in d.keywords {
            words.push(*w);
            owner.push(i);
        }
    }
    let ac = aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(words)
        .expect("the detectors' keywords build an automaton");
    (ac, owner)
});

/// The detectors worth trying on a text, in [`DETECTORS`]' order: those of the set that
/// match it, and those one of whose keywords it holds.
fn candidates(text: &str) -> Vec<usize> {
    let (set, open) = &*ANY;
    let mut out: Vec<usize> = set.matches(text).iter().map(|i| open[i]).collect();
    let (ac, owner) = &*KEYWORDS;
    for m in ac.find_overlapping_iter(text) {
        out.push(owner[m.pattern().as_usize()]);
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Every secret in a text, leftmost first, without overlaps.
pub fn find(text: &str) -> Vec<Finding> {
    let mut found: Vec<Finding> = Vec::new();
    for det in candidates(text).into_iter().map(|i| &DETECTORS[i]) {
        for caps in det.re.captures_iter(text) {
            let Some(m) = caps.get(det.group) else {
                continue;
            };
            if m.as_str().starts_with(MARKER_PREFIX) || m.as_str().contains("redacted") {
                continue;
            }
            let (start, end) = match det.check {
                None => (m.start(), m.end()),
                Some(check) => match check(text, m.start(), m.as_str()) {
                    Some((a, b)) => (m.start() + a, m.start() + b),
                    None => continue,
                },
            };
            if found.iter().any(|f| start < f.end && f.start < end) {
                continue;
            }
            found.push(Finding {
                detector: det.name,
                start,
                end,
            });
        }
    }
    // The vendored gitleaks rules, for every shape the detectors above do not name.
    for hit in secret_rules::RULES.find(text) {
        let span = &text[hit.start..hit.end];
        if span.starts_with(MARKER_PREFIX) || span.contains("redacted") {
            continue;
        }
        // A finding it overlaps keeps its name but grows to cover this one too: a card
        // number the detectors found at the head of a Facebook token must not leave the
        // token's tail in clear.
        if let Some(f) = found
            .iter_mut()
            .find(|f| hit.start < f.end && f.start < hit.end)
        {
            f.start = f.start.min(hit.start);
            f.end = f.end.max(hit.end);
            continue;
        }
        found.push(Finding {
            detector: hit.rule,
            start: hit.start,
            end: hit.end,
        });
    }
    // Grown findings may now touch each other: merge them, the first keeping its name.
    found.sort_by_key(|f| f.start);
    let mut merged: Vec<Finding> = Vec::with_capacity(found.len());
    for f in found {
        match merged.last_mut() {
            Some(last) if f.start < last.end => last.end = last.end.max(f.end),
            _ => merged.push(f),
        }
    }
    merged
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

/// `text` redacted, for a message that shows a value (a quarantine reason, a file name):
/// secrets become markers before the rest is cut to `max` characters.
pub fn shown(text: &str, max: usize) -> String {
    cut(&redact(text).0, max)
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// An excerpt of a line that could not be read as an event, for quarantine (and the
/// digest that lists it): the whole line is redacted before it is cut, so a secret across
/// the cut is still found whole, and any long run of mixed letters and digits (a key the
/// detectors do not know, a line of a PEM block) is masked too: such a line is garbage to
/// dream, and only its shape helps a person find it.
pub fn quarantine_excerpt(raw: &str, max: usize) -> String {
    let one_line = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    cut(&mask_high_entropy(&redact(&one_line).0), max)
}

/// Follows the lines of one file that are quarantined, so the body of a PEM private key
/// pasted over several lines (each line is garbage on its own) is masked whole, from its
/// `BEGIN` line to its `END` line.
#[derive(Debug, Default, Clone)]
pub struct Excerpts {
    in_key: bool,
}

impl Excerpts {
    /// The excerpt of the next quarantined line (see [`quarantine_excerpt`]).
    pub fn of(&mut self, raw: &str, max: usize) -> String {
        let begins = raw.contains("-----BEGIN") && raw.contains("PRIVATE KEY");
        let ends = raw.contains("-----END");
        if self.in_key {
            self.in_key = !ends;
            return "[redacted:private-key]".into();
        }
        if begins && !ends {
            self.in_key = true;
        }
        quarantine_excerpt(raw, max)
    }
}

/// A marker in place of every run of 24 or more characters of the base64 alphabet that
/// mixes letters and digits (or upper and lower case with `/`, `+`), as random keys do.
pub fn mask_high_entropy(text: &str) -> String {
    const MIN: usize = 24;
    let bytes = text.as_bytes();
    let in_run = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-');
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if !in_run(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && in_run(bytes[i]) {
            i += 1;
        }
        let run = &bytes[start..i];
        if run.len() < MIN || text[..start].ends_with(MARKER_PREFIX) {
            continue;
        }
        let digits = run.iter().filter(|b| b.is_ascii_digit()).count();
        let upper = run.iter().any(u8::is_ascii_uppercase);
        let lower = run.iter().any(u8::is_ascii_lowercase);
        let letters = run.iter().any(u8::is_ascii_alphabetic);
        let random = (digits >= 2 && letters)
            || (upper && lower && run.iter().any(|b| matches!(b, b'+' | b'/')));
        if random {
            out.push_str(&text[copied..start]);
            out.push_str("[redacted:high-entropy]");
            copied = i;
        }
    }
    out.push_str(&text[copied..]);
    out
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
            // A key can carry a secret too (`{"ghp_...": true}`): it is renamed.
            let keys: Vec<String> = map
                .keys()
                .filter(|k| !find(k).is_empty())
                .cloned()
                .collect();
            for k in keys {
                let (clean, found) = redact(&k);
                names.extend(found);
                if let Some(v) = map.remove(&k) {
                    let mut key = clean;
                    while map.contains_key(&key) {
                        key.push('_');
                    }
                    map.insert(key, v);
                }
            }
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
    fn every_detector_finds_its_shape() {
        let table = [
            ("DATABASE_PASSWORD=correct-horse-42", "env-secret"),
            ("export GITHUB_TOKEN=abcd1234efgh", "env-secret"),
            ("db_password: hunter2hunter", "password"),
            ("my wifi password is Tr0ub4dor&3", "password"),
            ("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4MTIzNA==;EndpointSuffix=core.windows.net", "azure-storage-key"),
            ("https://acme.blob.core.windows.net/c?sv=2022-11-02&sig=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789%2B%2F%3D", "azure-sas-signature"),
            ("npm token npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "npm-token"),
            ("SG.AbCdEfGhIjKlMnOpQrStUv.WxYz0123456789AbCdEfGhIjKlMnOpQrStUvWxYz01234", "sendgrid-key"),
            ("twilio SK0123456789abcdef0123456789abcdef", "twilio-key"),
            ("post to https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/XxXxXxXxXxXxXxXxXxXxXxXx", "slack-webhook"),
            ("https://discord.com/api/webhooks/123456789012345678/AbCdEfGhIjKlMnOpQrStUvWxYz_0123456789", "discord-webhook"),
            ("the secret is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ok", "aws-secret-key"),
            ("card 4111 1111 1111 1111 exp 12/29", "credit-card"),
            ("oops 13 4111 1111 1111 1111", "credit-card"),
            ("pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAwMDAwMAACKlszLCJhYmMiXQ", "pypi-token"),
            ("dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "digitalocean-token"),
            ("shpat_0123456789abcdef0123456789abcdef", "shopify-token"),
            ("key-0123456789abcdefABCDEF0123456789", "mailgun-key"),
            ("bot 1234567890:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawZ", "telegram-bot-token"),
            ("ya29.a0AfH6SMBx0123456789abcdefghijklmnop", "google-oauth-token"),
            ("hvs.CAESIJ0123456789abcdefghijklmnopqrstuv", "vault-token"),
            ("AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ", "age-secret-key"),
            ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "basic-auth"),
            ("dapi0123456789abcdef0123456789abcdef", "databricks-token"),
            ("lin_api_0123456789abcdefABCDEF0123456789abcdefAB", "linear-key"),
            ("sq0atp-0123456789abcdefABCDEF", "square-token"),
            ("glpat-AbCdEfGhIjKlMnOpQrSt", "gitlab-token"),
            ("xoxb-123456789012-abcdefghijkl", "slack-token"),
            ("AIzaSyA0123456789abcdefghijklmnopqrstuv", "google-api-key"),
            ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "huggingface-token"),
            ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz", "anthropic-key"),
            ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "jwt"),
            ("x-api-key: abcdef0123456789abcdef", "secret-assignment"),
            ("-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----", "private-key"),
            ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA", "private-key"),
            ("cache at redis://:myRedisPass123@cache.example.com:6379/0", "url-credentials"),
            ("my password for the staging box is Tr0ub4dor&3horse", "password"),
            ("machine api.example.com login me@example.com password 01234567-89ab-cdef-0123-456789abcdef", "password"),
            ("ssh root@10.0.0.5 with password hunter2hunter2", "password"),
            ("mysql -u root -pS3cretPassw0rd -h localhost", "mysql-password"),
            ("my bank PIN is 4821", "pin-code"),
            ("the door code is 7734#, ring twice", "pin-code"),
            ("my SSN is 123-45-6789", "us-ssn"),
            ("pay it to IBAN GB82 WEST 1234 5698 7654 32 by Friday", "iban"),
            ("IBAN: DE89370400440532013000", "iban"),
            ("my api key is 7c9e2f4a1b8d6e3c0f5a9b2d4e7c1a8f", "named-token"),
            ("the access token is 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "named-token"),
            ("here's the auth token 4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f for the SMS account", "named-token"),
            ("wifi: HomeNet / pass: sunflower2024", "password"),
            ("Mailchimp key 0123456789abcdef0123456789abcdef-us21", "mailchimp-key"),
            ("the recovery phrase is abandon ability able about above absent absorb abstract absurd abuse access accident", "recovery-phrase"),
            ("my 2FA backup codes are 8273-1928, 1827-3746, 9182-7364", "backup-codes"),
        ];
        for (input, detector) in table {
            let (clean, names) = redact(input);
            assert_eq!(names, vec![detector], "redact({input:?}) -> {clean}");
        }
        assert!(shapes().len() >= 30, "{:?}", shapes());
    }

    /// The 40 real-world shapes of crates/testkit/data/secret-shapes.tsv, each alone and in
    /// a sentence: redacted whole, whatever rule finds it.
    #[test]
    fn forty_real_world_shapes_are_redacted() {
        let table = include_str!("../../../testkit/data/secret-shapes.tsv");
        let mut kept = Vec::new();
        let mut n = 0;
        for line in table
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let cols: Vec<&str> = line.split('\t').collect();
            let (name, text, core) = (cols[0], cols[1], cols[2]);
            n += 1;
            for t in [
                text.to_string(),
                format!("the config said {text} yesterday"),
            ] {
                let (clean, _) = redact(&t);
                if clean.contains(core) || !clean.contains("[redacted:") {
                    kept.push(format!("{name}: {clean}"));
                }
            }
        }
        assert_eq!(n, 40);
        assert!(kept.is_empty(), "kept:\n{}", kept.join("\n"));
    }

    #[test]
    fn overlapping_findings_are_redacted_as_one_and_escaped_json_is_read() {
        // The digits are a valid card number; the whole is a Facebook token.
        let text = "facebook value was 4723251787996245%uXtquxEkJV4soVIL51yRTHpVH2U ok";
        let (clean, _) = redact(text);
        assert!(!clean.contains("uXtqux"), "{clean}");
        assert_eq!(clean, "facebook value was [redacted:credit-card] ok");
        let escaped = r#"{\"private_key_id\": \"5bd6a43989c78e01f447c18006209600e386e715\"}"#;
        let (clean, names) = redact(escaped);
        assert_eq!(names, vec!["gcp-private-key-id"], "{clean}");
    }

    /// Secrets said in prose, inside hostile text: direction overrides, zero-width spaces,
    /// emoji, JSON escapes, and a long line of them with keywords everywhere. Every one is
    /// redacted whole, twice over gives the same text, and nothing panics.
    #[test]
    fn secrets_said_in_hostile_text_are_redacted_whole() {
        let said = [
            (
                "the password for the staging box is Tr0ub4dor&3horse",
                "Tr0ub4dor&3horse",
            ),
            ("my bank PIN is 4821", "4821"),
            (
                "my api key is 7c9e2f4a1b8d6e3c0f5a9b2d4e7c1a8f",
                "7c9e2f4a1b8d6e3c0f5a9b2d4e7c1a8f",
            ),
            ("SSN 219-09-9999", "219-09-9999"),
            (
                "IBAN GB82 WEST 1234 5698 7654 32",
                "GB82 WEST 1234 5698 7654 32",
            ),
        ];
        for (text, core) in said {
            for hostile in [
                format!("\u{202e}{text}\u{202c} 🎉"),
                format!("\u{200b}{text}\u{200b}\u{200b}"),
                format!("{{\\\"note\\\": \\\"{text}\\\"}}"),
                format!(
                    "{} {text} {}",
                    "password PIN iban api key ".repeat(2_000),
                    "ssn ".repeat(500)
                ),
            ] {
                let (clean, names) = redact(&hostile);
                assert!(
                    !clean.contains(core),
                    "{core} kept in {:?}",
                    &clean[..clean.len().min(200)]
                );
                assert!(!names.is_empty());
                assert_eq!(redact(&clean).0, clean, "redacting twice changes it");
            }
        }
    }

    #[test]
    fn lookalikes_are_left_alone() {
        for text in [
            "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
            "MAX_TOKENS=1024 and DREAM_BUDGET_TOKENS_PER_CYCLE=50000",
            "order 1234567890123456 shipped",
            "card 4111 1111 1111 1112 (not a valid checksum)",
            "the basic functionality works",
            "PRIMARY_KEY=id SORT_KEY=name",
            "PASSWORD=$DB_PASSWORD from the environment",
            "call me at +1 415 555 2671",
            "path /home/user/projects/dream/crates/core/src/secrets.rs",
            "The database password is stored in the DB_PASSWORD environment variable.",
            "const csrfToken = document.querySelector('meta[name=csrf]')",
            "see https://www.news-press.com/story/news/local/2023/Ab12cd3ef4g5h6-48d9 today",
            "the password for the admin account is stored in the vault",
            "I changed my password 3 times this year",
            "the password policy changed in 2024",
            "a password-protected zip, password reset links, password hashing with bcrypt",
            "mysql -u root -p mydb",
            "start mysql; then build with gcc -pthread main.c",
            "the pin is 2.54 mm wide",
            "order GB82WEST12345698765433 is not a valid IBAN",
            "ticket 123-45-6789 was closed",
            "my SSN is 000-12-3456 in the example form",
            "http://localhost:8080/api and ftp://files.example.com/pub",
            "the api key is stored in the OPENAI_API_KEY environment variable",
            "an access token expires after 3600 seconds",
            "pass: 12 fail: 0",
            "pass: true",
            "the secret key is rotated every 90 days",
            "that phrase is one of my favourite things about the whole book today",
            "I printed my backup codes and put them in the drawer",
        ] {
            assert_eq!(redact(text), (text.to_string(), vec![]), "{text}");
        }
    }

    #[test]
    fn excerpts_are_redacted_before_they_are_cut_and_mask_unknown_keys() {
        let line = format!(
            "{}ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "x ".repeat(95)
        );
        let e = quarantine_excerpt(&line, 200);
        assert!(!e.contains("ghp_abc"), "{e}");
        let pem_body = "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB";
        assert!(!quarantine_excerpt(pem_body, 200).contains("MIIEow"));
        assert_eq!(
            quarantine_excerpt("not json at all", 200),
            "not json at all"
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

    #[test]
    fn every_loaded_rule_finds_an_example_of_its_own_shape_and_redaction_removes_it() {
        let mut missing = Vec::new();
        for (i, rule) in secret_rules::RULES.rules.iter().enumerate() {
            match secret_rules::found_example(i) {
                None => missing.push(rule.id),
                Some((text, secret)) => {
                    let (clean, names) = redact(&text);
                    assert!(!names.is_empty(), "{}: {text:?}", rule.id);
                    assert!(
                        !clean.contains(&secret),
                        "{}: {clean:?} keeps {secret:?}",
                        rule.id
                    );
                }
            }
        }
        assert!(missing.is_empty(), "no example found for {missing:?}");
    }
}
