//! The vendored gitleaks rule set (crates/core/rules/gitleaks.toml), loaded for redaction.
//!
//! Hand-written detectors cannot keep up with the key shapes vendors publish: a torture run
//! found 23 of 40 real shapes kept in plain text. gitleaks maintains a default rule set of a
//! few hundred rules (a regex, the group holding the secret, an entropy floor, keywords, and
//! allowlists), MIT-licensed; it is vendored with its licence and provenance
//! (rules/PROVENANCE.md, refreshed by scripts/update-secret-rules.sh) and compiled in with
//! `include_str!`, so a user's binary needs no file. The rules are parsed with `toml` and
//! compiled once, on first use; a keyword prefilter (one Aho-Corasick pass over the text,
//! case-insensitive, as gitleaks does) picks the few rules whose keyword appears, so
//! ingest does not run hundreds of regexes over every event.
//!
//! Go's RE2 syntax and Rust's `regex` agree almost everywhere (no lookarounds on either
//! side). The rules are compiled as byte regexes with Unicode off, which is what Go's
//! `\w`, `\s`, `\d`, `\b` mean (ASCII); a match's ends are widened to character boundaries
//! so a redaction never splits a character. A `{` that does not open a repetition (Go reads
//! it literally, Rust refuses it) is escaped. Rules scoped to a kind of file (`path`) are not
//! loaded, since dream scans events, not files; they and any rule that fails to compile are
//! listed by [`skipped`] with the reason.

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::bytes::{Regex, RegexBuilder};
use serde::Deserialize;

/// The vendored rule file, as gitleaks publishes it.
pub const GITLEAKS_TOML: &str = include_str!("../../rules/gitleaks.toml");

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    allowlist: Option<RawAllow>,
    #[serde(default)]
    rules: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRule {
    id: String,
    #[serde(default)]
    regex: Option<String>,
    #[serde(default)]
    secret_group: Option<usize>,
    #[serde(default)]
    entropy: Option<f64>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    allowlists: Vec<RawAllow>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawAllow {
    #[serde(default)]
    condition: Option<String>,
    #[serde(default)]
    regex_target: Option<String>,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    commits: Vec<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Target {
    Secret,
    Match,
    Line,
}

/// An allowlist: a finding it matches is not a secret.
struct Allow {
    /// `condition = "AND"`: every criterion given must match (else any one).
    all: bool,
    target: Target,
    regexes: Vec<Regex>,
    /// Lower case; a secret containing one is allowed.
    stopwords: Vec<String>,
    /// The allowlist also names paths or commits, which an event never matches.
    needs_path: bool,
}

impl Allow {
    fn allows(&self, secret: &[u8], whole: &[u8], line: &[u8]) -> bool {
        let on = match self.target {
            Target::Secret => secret,
            Target::Match => whole,
            Target::Line => line,
        };
        let regex = (!self.regexes.is_empty()).then(|| self.regexes.iter().any(|r| r.is_match(on)));
        let stop = (!self.stopwords.is_empty()).then(|| {
            let lower = secret.to_ascii_lowercase();
            self.stopwords
                .iter()
                .any(|w| memchr::memmem::find(&lower, w.as_bytes()).is_some())
        });
        let given = [regex, stop];
        if self.all {
            !self.needs_path
                && given.iter().flatten().all(|m| *m)
                && given.iter().any(Option::is_some)
        } else {
            given.iter().flatten().any(|m| *m)
        }
    }
}

/// One loaded rule.
pub struct Rule {
    pub id: &'static str,
    /// The regex as gitleaks wrote it.
    pub source: &'static str,
    /// Lower case; the rule runs only on a text holding one (unless there are none).
    pub keywords: Vec<String>,
    re: Regex,
    secret_group: Option<usize>,
    entropy: Option<f64>,
    allow: Vec<Allow>,
}

/// The loaded rule set.
pub struct Rules {
    pub rules: Vec<Rule>,
    /// Rules not loaded: (id, why).
    pub skipped: Vec<(String, String)>,
    keywords: AhoCorasick,
    /// For each keyword, the rules that name it.
    by_keyword: Vec<Vec<usize>>,
    /// Rules without keywords run on every text.
    always: Vec<usize>,
    global: Vec<Allow>,
}

/// A finding of one rule: its id and the byte range of the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub rule: &'static str,
    pub start: usize,
    pub end: usize,
}

/// Go reads a `{` that does not open a counted repetition (`{2}`, `{2,}`, `{2,5}`) as a
/// literal; Rust's parser refuses it. Such braces (and the `}` closing them) are escaped.
pub fn translate(go: &str) -> String {
    let b = go.as_bytes();
    let mut out = String::with_capacity(go.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    let mut literal_open = 0usize;
    while i < b.len() {
        let c = b[i] as char;
        if c == '\\' && i + 1 < b.len() {
            out.push_str(&go[i..i + 1 + utf8_len(b[i + 1])]);
            i += 1 + utf8_len(b[i + 1]);
            continue;
        }
        if in_class {
            if c == ']' {
                in_class = false;
            }
        } else if c == '[' {
            in_class = true;
            out.push('[');
            i += 1;
            // A `]` or `^]` right after the opening bracket is part of the class.
            if b.get(i) == Some(&b'^') {
                out.push('^');
                i += 1;
            }
            if b.get(i) == Some(&b']') {
                out.push(']');
                i += 1;
            }
            continue;
        } else if c == '{' && !counted(&go[i..]) {
            out.push_str("\\{");
            literal_open += 1;
            i += 1;
            continue;
        } else if c == '}' && literal_open > 0 {
            out.push_str("\\}");
            literal_open -= 1;
            i += 1;
            continue;
        }
        let n = utf8_len(b[i]);
        out.push_str(&go[i..i + n]);
        i += n;
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// `{n}`, `{n,}` or `{n,m}` at the start of `s`.
fn counted(s: &str) -> bool {
    let Some(end) = s.find('}') else {
        return false;
    };
    let inner = &s[1..end];
    let mut parts = inner.splitn(2, ',');
    let first = parts.next().unwrap_or("");
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit());
    digits(first) && parts.next().is_none_or(|p| p.is_empty() || digits(p))
}

fn compile(go: &str) -> Result<Regex, String> {
    RegexBuilder::new(&translate(go))
        .unicode(false)
        .size_limit(32 << 20)
        .dfa_size_limit(32 << 20)
        .build()
        .map_err(|e| {
            e.to_string()
                .lines()
                .last()
                .unwrap_or("")
                .trim()
                .to_string()
        })
}

fn allow(raw: &RawAllow) -> Result<Allow, String> {
    Ok(Allow {
        all: raw
            .condition
            .as_deref()
            .is_some_and(|c| c.eq_ignore_ascii_case("and")),
        target: match raw.regex_target.as_deref() {
            Some("match") => Target::Match,
            Some("line") => Target::Line,
            _ => Target::Secret,
        },
        regexes: raw
            .regexes
            .iter()
            .map(|r| compile(r))
            .collect::<Result<_, _>>()?,
        stopwords: raw
            .stopwords
            .iter()
            .map(|w| w.to_ascii_lowercase())
            .collect(),
        needs_path: !raw.paths.is_empty() || !raw.commits.is_empty(),
    })
}

/// Parse and compile a gitleaks configuration. An error only if the file itself does not
/// parse; a rule that does not compile is skipped with its reason.
pub fn load(text: &str) -> Result<Rules, String> {
    let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut rules = Vec::new();
    let mut skipped = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut by_keyword: Vec<Vec<usize>> = Vec::new();
    let mut always = Vec::new();
    for raw in file.rules {
        let Some(pattern) = raw.regex.as_deref() else {
            skipped.push((raw.id, "matches file names only (no regex)".into()));
            continue;
        };
        if let Some(p) = &raw.path {
            skipped.push((
                raw.id,
                format!("applies only to files whose path matches {p}; dream scans events"),
            ));
            continue;
        }
        let re = match compile(pattern) {
            Ok(re) => re,
            Err(e) => {
                skipped.push((raw.id, format!("does not compile: {e}")));
                continue;
            }
        };
        let allows = match raw
            .allowlists
            .iter()
            .map(allow)
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(a) => a,
            Err(e) => {
                skipped.push((raw.id, format!("an allowlist regex does not compile: {e}")));
                continue;
            }
        };
        let index = rules.len();
        if raw.keywords.is_empty() {
            always.push(index);
        }
        for k in &raw.keywords {
            let k = k.to_ascii_lowercase();
            match words.iter().position(|w| *w == k) {
                Some(at) => by_keyword[at].push(index),
                None => {
                    words.push(k);
                    by_keyword.push(vec![index]);
                }
            }
        }
        rules.push(Rule {
            id: Box::leak(raw.id.into_boxed_str()),
            source: Box::leak(pattern.to_string().into_boxed_str()),
            keywords: raw
                .keywords
                .iter()
                .map(|k| k.to_ascii_lowercase())
                .collect(),
            re,
            secret_group: raw.secret_group.filter(|g| *g > 0),
            entropy: raw.entropy.filter(|e| *e > 0.0),
            allow: allows,
        });
    }
    let keywords = AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .build(&words)
        .map_err(|e| e.to_string())?;
    let global = match &file.allowlist {
        Some(a) => vec![allow(a)?],
        None => Vec::new(),
    };
    Ok(Rules {
        rules,
        skipped,
        keywords,
        by_keyword,
        always,
        global,
    })
}

/// The vendored rules, compiled on first use.
pub static RULES: LazyLock<Rules> =
    LazyLock::new(|| load(GITLEAKS_TOML).expect("the vendored gitleaks.toml parses"));

/// Shannon entropy of a string in bits per character, as gitleaks measures it.
pub fn entropy(s: &[u8]) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    let mut counts = [0usize; 256];
    for b in s {
        counts[*b as usize] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|c| **c > 0)
        .map(|c| {
            let p = *c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

impl Rules {
    /// The rules whose keyword occurs in `text` (and those without keywords).
    fn candidates(&self, text: &str) -> Vec<usize> {
        let mut on = vec![false; self.rules.len()];
        for i in &self.always {
            on[*i] = true;
        }
        for m in self.keywords.find_overlapping_iter(text) {
            for i in &self.by_keyword[m.pattern().as_usize()] {
                on[*i] = true;
            }
        }
        on.iter()
            .enumerate()
            .filter_map(|(i, o)| o.then_some(i))
            .collect()
    }

    /// Every finding of every rule in `text`, in rule order (overlaps not removed).
    pub fn find(&self, text: &str) -> Vec<Hit> {
        let mut out = Vec::new();
        for i in self.candidates(text) {
            self.find_rule(i, text, &mut out);
        }
        out
    }

    /// The findings of rule `i` in `text`.
    pub fn find_rule(&self, i: usize, text: &str, out: &mut Vec<Hit>) {
        let rule = &self.rules[i];
        let bytes = text.as_bytes();
        for caps in rule.re.captures_iter(bytes) {
            let whole = caps.get(0).expect("group 0");
            let secret = match rule.secret_group {
                Some(g) => caps.get(g),
                None => (1..caps.len())
                    .filter_map(|g| caps.get(g))
                    .find(|m| !m.is_empty())
                    .or(Some(whole)),
            };
            let Some(secret) = secret.filter(|m| !m.is_empty()) else {
                continue;
            };
            let s = secret.as_bytes();
            if rule.entropy.is_some_and(|floor| entropy(s) <= floor) {
                continue;
            }
            let line_start = memchr::memrchr(b'\n', &bytes[..whole.start()]).map_or(0, |p| p + 1);
            let line_end = memchr::memchr(b'\n', &bytes[whole.end()..])
                .map_or(bytes.len(), |p| whole.end() + p);
            let line = &bytes[line_start..line_end];
            let allowed = self
                .global
                .iter()
                .chain(&rule.allow)
                .any(|a| a.allows(s, whole.as_bytes(), line));
            if allowed {
                continue;
            }
            let mut start = secret.start();
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let mut end = secret.end();
            while !text.is_char_boundary(end) {
                end += 1;
            }
            out.push(Hit {
                rule: rule.id,
                start,
                end,
            });
        }
    }
}

/// A text that rule `index` should find, built from the rule's own regex (gitleaks ships
/// its published examples in Go source, not in the rule file): literals as written, each
/// class drawn from (letters and digits first), each counted repetition at its minimum or
/// 24 when that is allowed, each alternation's branch chosen by `seed`. Used by the tests
/// and by the integration corpus, so every loaded rule is shown to compile, to pass its own
/// keyword prefilter, entropy floor and allowlists, and to be redacted end to end. `None`
/// if the rule's regex does not parse here.
pub fn example(index: usize, seed: u64) -> Option<String> {
    use regex_syntax::hir::{Class, HirKind};
    use regex_syntax::ParserBuilder;
    let raw = RULES.rules.get(index)?;
    let hir = ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(&translate(raw.source))
        .ok()?;
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (index as u64 + 1);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    fn walk(h: &regex_syntax::hir::Hir, next: &mut dyn FnMut() -> u64, out: &mut Vec<u8>) {
        match h.kind() {
            HirKind::Empty | HirKind::Look(_) => {}
            HirKind::Literal(l) => out.extend_from_slice(&l.0),
            HirKind::Class(c) => {
                let mut all: Vec<u8> = Vec::new();
                match c {
                    Class::Bytes(b) => {
                        for r in b.ranges() {
                            all.extend(r.start()..=r.end());
                        }
                    }
                    Class::Unicode(u) => {
                        for r in u.ranges() {
                            for ch in r.start()..=r.end() {
                                if ch.is_ascii() {
                                    all.push(ch as u8);
                                }
                                if all.len() > 512 {
                                    break;
                                }
                            }
                        }
                    }
                }
                let alnum: Vec<u8> = all
                    .iter()
                    .copied()
                    .filter(u8::is_ascii_alphanumeric)
                    .collect();
                let shown: Vec<u8> = all
                    .iter()
                    .copied()
                    .filter(|b| b.is_ascii_graphic())
                    .collect();
                // A class of (nearly) every byte is an unescaped `.`, as in a host name.
                let pool = if all.len() > 200 && all.contains(&b'.') {
                    vec![b'.']
                } else if !alnum.is_empty() {
                    alnum
                } else if !shown.is_empty() {
                    shown
                } else {
                    all
                };
                if !pool.is_empty() {
                    out.push(pool[(next() % pool.len() as u64) as usize]);
                }
            }
            HirKind::Repetition(r) => {
                let n = if r.min == 0 {
                    0
                } else {
                    let max = r.max.unwrap_or(r.min.max(24));
                    24u32.clamp(r.min, max.max(r.min))
                };
                for _ in 0..n {
                    walk(&r.sub, next, out);
                }
            }
            HirKind::Capture(c) => walk(&c.sub, next, out),
            HirKind::Concat(items) => {
                for i in items {
                    walk(i, next, out);
                }
            }
            HirKind::Alternation(alts) => {
                let pick = (next() % alts.len() as u64) as usize;
                walk(&alts[pick], next, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(&hir, &mut next, &mut out);
    String::from_utf8(out).ok()
}

/// An example of rule `index` (see [`example`]) that the whole rule set finds as that rule
/// in a sentence, with the sentence: the first of 64 seeds that works.
pub fn found_example(index: usize) -> Option<(String, String)> {
    let rule = RULES.rules.get(index)?;
    let id = rule.id;
    (0..64).find_map(|seed| {
        let ex = example(index, seed)?;
        // As in gitleaks' own examples, the service is named beside a secret whose shape
        // does not name it.
        let lower = ex.to_ascii_lowercase();
        let named = rule.keywords.is_empty() || rule.keywords.iter().any(|k| lower.contains(k));
        let lead = if named { "the" } else { &rule.keywords[0] };
        let text = format!("{lead} value was {ex} \nsee above");
        let hit = RULES.find(&text).into_iter().find(|h| h.rule == id)?;
        Some((text.clone(), text[hit.start..hit.end].to_string()))
    })
}

/// Rules of the vendored set that are not loaded, with the reason.
pub fn skipped() -> &'static [(String, String)] {
    &RULES.skipped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_literal_braces_are_escaped_and_counted_ones_kept() {
        assert_eq!(translate(r"^\${(?:[A-Z_]+)}$"), r"^\$\{(?:[A-Z_]+)\}$");
        assert_eq!(translate(r"a{2,5}b{3}c{4,}"), r"a{2,5}b{3}c{4,}");
        assert_eq!(translate(r"[{}]x{2}"), r"[{}]x{2}");
        assert_eq!(translate(r"^\{\d{0,2}}$"), r"^\{\d{0,2}}$");
    }

    #[test]
    fn every_vendored_rule_with_a_regex_loads_except_the_file_scoped_ones() {
        let r = &*RULES;
        let total = GITLEAKS_TOML.matches("\n[[rules]]\n").count();
        assert!(total >= 200, "{total} rules in the file");
        for (id, why) in &r.skipped {
            assert!(
                why.starts_with("applies only to files") || why.starts_with("matches file names"),
                "{id} was not loaded: {why}"
            );
        }
        assert_eq!(r.rules.len() + r.skipped.len(), total);
    }

    #[test]
    fn keywords_pick_the_rules_and_allowlists_and_entropy_refuse() {
        // A rule runs only where its keyword occurs.
        let postman = "PMAK-5f3a9c1be2d4476a8b0c9e1f-0a1b2c3d4e5f60718293a4b5c6d7e8f901";
        assert!(RULES
            .find(postman)
            .iter()
            .any(|h| h.rule == "postman-api-token"));
        assert!(RULES.candidates("nothing to see here").len() <= RULES.always.len());
        // The entropy floor: a repeated character is no token.
        assert!(RULES.find(&format!("pul-{}", "a".repeat(40))).is_empty());
        // The global allowlist: a placeholder is not a secret.
        assert!(RULES.find("api_key = ${API_KEY}").is_empty());
    }

    #[test]
    fn the_vendored_file_is_the_one_its_provenance_names() {
        use sha2::{Digest, Sha256};
        let provenance = include_str!("../../rules/PROVENANCE.md");
        let sha = format!("{:x}", Sha256::digest(GITLEAKS_TOML.as_bytes()));
        assert!(
            provenance.contains(&format!("gitleaks.toml sha256: {sha}")),
            "rules/gitleaks.toml (sha256 {sha}) differs from what PROVENANCE.md records: run scripts/update-secret-rules.sh"
        );
        assert!(include_str!("../../rules/LICENSE").contains("Zachary Rice"));
    }

    #[test]
    fn entropy_is_shannons() {
        assert_eq!(entropy(b"aaaa"), 0.0);
        assert!((entropy(b"abcd") - 2.0).abs() < 1e-9);
    }
}
