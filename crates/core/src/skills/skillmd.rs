//! `SKILL.md` in the Agent Skills format, pure: render a draft, read any skill's front
//! matter and body, validate a document against the format, and say which steps a skill
//! names (for coverage).
//!
//! The format: YAML front matter between `---` lines, then Markdown. `name` is 1-64
//! lower-case letters, digits and single hyphens, neither starting nor ending with a
//! hyphen, equal to the skill's folder name; `description` is 1-1024 characters and says
//! what the skill does and when to use it. dream writes nothing else at the top level: its
//! own fields (instances, days, source events, confidence) go under `metadata`, a map from
//! string keys to string values. Every value dream writes is a double-quoted YAML string, so
//! no YAML parser reads a date or a number where a string was meant.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use yaml_rust2::{Yaml, YamlLoader};

use super::procedure::{self, command_head, Step, StepKind};

/// Longest `name`.
pub const MAX_NAME: usize = 64;
/// Longest `description`.
pub const MAX_DESCRIPTION: usize = 1024;
/// Top-level keys the Agent Skills format defines.
pub const SPEC_KEYS: &[&str] = &[
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
];
/// Top-level keys dream writes.
pub const DREAM_KEYS: &[&str] = &["name", "description", "metadata"];

/// Whether `name` is a valid skill name, and if not, why.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().count() > MAX_NAME {
        return Err(format!(
            "`name` must be 1-{MAX_NAME} characters, not {}",
            name.chars().count()
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(format!(
            "`name` {name:?} may only hold lower-case letters, digits and hyphens"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err(format!(
            "`name` {name:?} must not start or end with a hyphen"
        ));
    }
    if name.contains("--") {
        return Err(format!("`name` {name:?} must not hold consecutive hyphens"));
    }
    Ok(())
}

/// A proposed name made valid: lower case, every run of other characters one hyphen, at
/// most 64 characters. Empty when nothing usable is left.
pub fn slug(proposed: &str) -> String {
    let mut out = String::new();
    for c in proposed.trim().chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let mut out: String = out.chars().take(MAX_NAME).collect();
    while out.ends_with('-') {
        out.pop();
    }
    out
}

/// Whether a description is valid, and if not, why. Beyond the format's length it must say
/// when to use the skill: it names a use or an occasion (`use`, `when`).
pub fn check_description(description: &str) -> Result<(), String> {
    let n = description.chars().count();
    if description.trim().is_empty() {
        return Err("`description` is empty".into());
    }
    if n > MAX_DESCRIPTION {
        return Err(format!(
            "`description` is {n} characters, over the limit of {MAX_DESCRIPTION}"
        ));
    }
    let says_when = description
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| matches!(w.to_lowercase().as_str(), "use" | "when" | "whenever"));
    if !says_when {
        return Err(
            "`description` does not say when to use the skill (no \"use\" or \"when\")".into(),
        );
    }
    Ok(())
}

/// The front matter dream writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Front {
    pub name: String,
    pub description: String,
    /// dream's own fields, in order; keys start with `dream-`.
    pub metadata: Vec<(String, String)>,
}

/// A YAML double-quoted scalar (control characters dropped).
fn quoted(s: &str) -> String {
    let clean: String = s.chars().filter(|c| !c.is_control()).collect();
    serde_json::to_string(&clean).expect("strings serialize")
}

/// The front matter block, `---` lines included.
pub fn render_front(f: &Front) -> String {
    let mut o = String::from("---\n");
    let _ = writeln!(o, "name: {}", quoted(&f.name));
    let _ = writeln!(o, "description: {}", quoted(&f.description));
    if !f.metadata.is_empty() {
        o.push_str("metadata:\n");
        for (k, v) in &f.metadata {
            let plain = !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            let key = if plain { k.clone() } else { quoted(k) };
            let _ = writeln!(o, "  {key}: {}", quoted(v));
        }
    }
    o.push_str("---\n");
    o
}

/// One step of a draft, as the body shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct DraftStep {
    pub text: String,
    pub tool: String,
    pub command: String,
}

/// Everything a draft's `SKILL.md` says.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub front: Front,
    pub steps: Vec<DraftStep>,
    /// "4 instances on 3 days in 4 sessions, from 2026-11-02 to 2026-11-05".
    pub seen: String,
    /// One line per instance: day, session and the ids of its tool-call events.
    pub sources: Vec<String>,
}

/// The title a name reads as: `run-checks` gives "Run checks".
pub fn title(name: &str) -> String {
    let words = name.replace('-', " ");
    let mut c = words.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

impl Draft {
    pub fn render(&self) -> String {
        let mut o = render_front(&self.front);
        let _ = writeln!(o, "\n# {}\n", title(&self.front.name));
        let _ = writeln!(o, "{}\n", self.front.description);
        let _ = writeln!(o, "## Steps\n");
        for (n, s) in self.steps.iter().enumerate() {
            let mut line = format!("{}. {}", n + 1, s.text.trim());
            if !s.command.is_empty() {
                if s.text.trim().is_empty() {
                    let _ = write!(line, "Run `{}`", s.command);
                } else {
                    let _ = write!(line, "\n   Run `{}`", s.command);
                }
                if !s.tool.is_empty() {
                    let _ = write!(line, " with `{}`", s.tool);
                }
                line.push('.');
            } else if !s.tool.is_empty() && !s.text.contains(&format!("`{}`", s.tool)) {
                let _ = write!(line, "\n   Tool: `{}`.", s.tool);
            }
            let _ = writeln!(o, "{line}");
        }
        let _ = writeln!(
            o,
            "\n## Where this comes from\n\nDrafted by dream from {}. The tool calls it was drafted from:\n",
            self.seen
        );
        for s in &self.sources {
            let _ = writeln!(o, "- {s}");
        }
        o
    }
}

/// A `SKILL.md` read back: its front matter as YAML, and its body.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// Top-level keys in order.
    pub keys: Vec<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    /// `metadata` when it is a map of strings to strings.
    pub metadata: BTreeMap<String, String>,
    /// Problems with the front matter's types (for example a `metadata` value that is not a
    /// string).
    pub problems: Vec<String>,
    pub body: String,
}

/// Read a `SKILL.md`: `---` front matter holding one YAML map, then the body.
pub fn parse(doc: &str) -> Result<Parsed, String> {
    let doc = doc.strip_prefix('\u{feff}').unwrap_or(doc);
    let rest = doc
        .strip_prefix("---\n")
        .or_else(|| doc.strip_prefix("---\r\n"))
        .ok_or("a SKILL.md starts with a `---` line opening its YAML front matter")?;
    let (front, body) = match rest.find("\n---") {
        Some(end) => {
            let after = &rest[end + 4..];
            let body = after.split_once('\n').map_or("", |(_, b)| b);
            (&rest[..end + 1], body)
        }
        None if rest.starts_with("---") => ("", rest.split_once('\n').map_or("", |(_, b)| b)),
        None => return Err("the front matter is not closed by a `---` line".into()),
    };
    let docs = YamlLoader::load_from_str(front)
        .map_err(|e| format!("the front matter is not valid YAML: {e}"))?;
    let map = match docs.into_iter().next() {
        Some(Yaml::Hash(h)) => h,
        Some(_) => return Err("the front matter is not a YAML map of keys to values".into()),
        None => return Err("the front matter is empty".into()),
    };
    let mut p = Parsed {
        keys: Vec::new(),
        name: None,
        description: None,
        metadata: BTreeMap::new(),
        problems: Vec::new(),
        body: body.to_string(),
    };
    for (k, v) in &map {
        let Some(key) = k.as_str() else {
            p.problems
                .push(format!("a top-level key is not a string: {k:?}"));
            continue;
        };
        p.keys.push(key.to_string());
        match key {
            "name" | "description" => match v.as_str() {
                Some(s) => {
                    let s = s.trim().to_string();
                    if key == "name" {
                        p.name = Some(s);
                    } else {
                        p.description = Some(s);
                    }
                }
                None => p.problems.push(format!("`{key}` is not a string")),
            },
            "metadata" => match v {
                Yaml::Hash(m) => {
                    for (mk, mv) in m {
                        match (mk.as_str(), mv.as_str()) {
                            (Some(a), Some(b)) => {
                                p.metadata.insert(a.to_string(), b.to_string());
                            }
                            _ => p.problems.push(format!(
                                "`metadata` maps strings to strings; {mk:?}: {mv:?} is not"
                            )),
                        }
                    }
                }
                _ => p.problems.push("`metadata` is not a map".into()),
            },
            _ => {}
        }
    }
    Ok(p)
}

/// Every way `doc` breaks the Agent Skills format for a skill in folder `folder`; with
/// `strict`, also any top-level key other than `name`, `description` and `metadata` (what
/// dream writes). Empty when valid.
pub fn validate(doc: &str, folder: &str, strict: bool) -> Vec<String> {
    let p = match parse(doc) {
        Ok(p) => p,
        Err(e) => return vec![e],
    };
    let mut problems = p.problems.clone();
    match &p.name {
        None if !p.keys.iter().any(|k| k == "name") => problems.push("`name` is missing".into()),
        None => {}
        Some(name) => {
            if let Err(e) = check_name(name) {
                problems.push(e);
            } else if name != folder {
                problems.push(format!(
                    "`name` {name:?} differs from its folder name {folder:?}"
                ));
            }
        }
    }
    match &p.description {
        None if !p.keys.iter().any(|k| k == "description") => {
            problems.push("`description` is missing".into())
        }
        None => {}
        Some(d) => {
            let n = d.chars().count();
            if n == 0 || n > MAX_DESCRIPTION {
                problems.push(format!(
                    "`description` must be 1-{MAX_DESCRIPTION} characters, not {n}"
                ));
            }
        }
    }
    let allowed = if strict { DREAM_KEYS } else { SPEC_KEYS };
    for k in &p.keys {
        if !allowed.contains(&k.as_str()) {
            problems.push(format!(
                "top-level key `{k}` is not one of {}",
                allowed.join(", ")
            ));
        }
    }
    problems
}

/// Inline code spans and the lines of fenced code blocks of a Markdown text.
pub fn code(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for line in markdown.lines() {
        let t = line.trim_start();
        if let Some(f) = fence {
            if t.starts_with(f) {
                fence = None;
            } else if !t.trim().is_empty() {
                out.push(t.trim().trim_start_matches("$ ").to_string());
            }
            continue;
        }
        if t.starts_with("```") {
            fence = Some("```");
            continue;
        }
        if t.starts_with("~~~") {
            fence = Some("~~~");
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let Some(inside) = parts.next() {
            if parts.next().is_none() {
                break; // an unclosed span
            }
            if !inside.trim().is_empty() {
                out.push(inside.trim().to_string());
            }
        }
    }
    out
}

/// What a skill names: the commands in its code (verb and subcommand, `git commit`) and
/// every word of its text (for tool names).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mentions {
    pub commands: BTreeSet<String>,
    pub words: BTreeSet<String>,
}

pub fn mentions(doc: &str) -> Mentions {
    let mut m = Mentions::default();
    for c in code(doc) {
        for cmd in procedure::commands(&c) {
            m.commands.insert(command_head(&cmd.sig));
        }
    }
    for w in doc.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
        let w = w.trim_matches(['.', '-']);
        if !w.is_empty() {
            m.words.insert(w.to_lowercase());
        }
    }
    m
}

/// What a skill drafted from these steps would name.
pub fn mentions_of(steps: &[&Step]) -> Mentions {
    let mut m = Mentions::default();
    for s in steps {
        match s.command_head() {
            Some(h) => {
                m.commands.insert(h);
            }
            None => {
                m.words.insert(s.tool.to_lowercase());
            }
        }
    }
    m
}

/// The share of a procedure's distinct steps a skill names: a command by its verb and
/// subcommand in the skill's code, any other tool by its name in the skill's text.
pub fn covers(m: &Mentions, steps: &[&Step]) -> f64 {
    let distinct: BTreeMap<String, &Step> = steps.iter().map(|s| (s.key(), *s)).collect();
    if distinct.is_empty() {
        return 0.0;
    }
    let named = distinct
        .values()
        .filter(|s| match s.kind {
            StepKind::Command => s.command_head().is_some_and(|h| m.commands.contains(&h)),
            StepKind::File | StepKind::Tool => m.words.contains(&s.tool.to_lowercase()),
        })
        .count();
    named as f64 / distinct.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft() -> Draft {
        Draft {
            front: Front {
                name: "run-checks".into(),
                description: "Formats, lints and tests the workspace. Use when asked: \"check it: all of it\".".into(),
                metadata: vec![
                    ("dream-instances".into(), "4".into()),
                    ("dream-first-seen".into(), "2026-11-02".into()),
                    ("dream-confidence".into(), "true".into()),
                ],
            },
            steps: vec![
                DraftStep {
                    text: "Format the code.".into(),
                    tool: "Bash".into(),
                    command: "cargo fmt --all".into(),
                },
                DraftStep {
                    text: "Edit a `*.rs` file.".into(),
                    tool: "Edit".into(),
                    command: String::new(),
                },
            ],
            seen: "4 instances on 2 days in 3 sessions".into(),
            sources: vec!["2026-11-02, session s1: ev_1, ev_2".into()],
        }
    }

    #[test]
    fn a_rendered_draft_is_valid_and_reads_back_as_strings() {
        let doc = draft().render();
        assert_eq!(
            validate(&doc, "run-checks", true),
            Vec::<String>::new(),
            "{doc}"
        );
        let p = parse(&doc).unwrap();
        assert_eq!(p.keys, vec!["name", "description", "metadata"]);
        assert_eq!(p.description.unwrap(), draft().front.description);
        assert_eq!(p.metadata["dream-instances"], "4");
        assert_eq!(p.metadata["dream-first-seen"], "2026-11-02");
        assert_eq!(p.metadata["dream-confidence"], "true");
        assert!(
            p.body.contains("Run `cargo fmt --all` with `Bash`."),
            "{}",
            p.body
        );
        assert!(!validate(&doc, "other-name", true).is_empty());
    }

    #[test]
    fn the_validator_finds_each_format_problem() {
        let case = |front: &str| validate(&format!("---\n{front}---\nbody\n"), "x-y", true);
        assert!(case("name: x-y\ndescription: Does x. Use when y.\n").is_empty());
        assert!(case("name: X-Y\ndescription: d\n")[0].contains("lower-case"));
        assert!(case("name: -x-y\ndescription: d\n")[0].contains("start or end"));
        assert!(case("name: x--y\ndescription: d\n")[0].contains("consecutive"));
        assert!(case("description: d\n")[0].contains("`name` is missing"));
        assert!(case("name: x-y\n")[0].contains("`description` is missing"));
        assert!(
            case(&format!("name: x-y\ndescription: {}\n", "d".repeat(1025)))[0].contains("1-1024")
        );
        assert!(
            case("name: x-y\ndescription: d\nversion: 1\n")[0].contains("top-level key `version`")
        );
        assert!(validate(
            "---\nname: x-y\ndescription: d\nlicense: MIT\n---\n",
            "x-y",
            false
        )
        .is_empty());
        assert!(case("name: x-y\ndescription: d\nmetadata:\n  n: 4\n")[0]
            .contains("strings to strings"));
        assert!(validate("no front matter", "x-y", true)[0].contains("starts with a `---`"));
        assert!(case("name: [x\n")[0].contains("not valid YAML"));
    }

    #[test]
    fn names_are_slugged_and_checked() {
        assert_eq!(slug("Run the Checks!"), "run-the-checks");
        assert_eq!(slug("  --Deploy__Staging-- "), "deploy-staging");
        assert_eq!(slug("日本"), "");
        assert_eq!(slug(&"a-".repeat(40)).len(), 63);
        assert!(check_name(&slug(&"ab".repeat(40))).is_ok());
        assert!(check_name("ok-name-2").is_ok());
        assert!(check_description("Runs the release. Use when shipping.").is_ok());
        assert!(check_description("Helps with releases.")
            .unwrap_err()
            .contains("when to use"));
    }

    #[test]
    fn coverage_counts_the_steps_a_skill_names() {
        let doc = "---\nname: x\ndescription: d\n---\nRun `cargo fmt` then:\n\n```sh\n$ cargo test --workspace\n```\nThen Edit the file.\n";
        let m = mentions(doc);
        assert!(
            m.commands.contains("cargo fmt") && m.commands.contains("cargo test"),
            "{m:?}"
        );
        let steps: Vec<Step> = [
            ("Bash", "cargo fmt --all"),
            ("Bash", "cargo test"),
            ("Edit", "src/a.rs"),
            ("Bash", "git push"),
        ]
        .iter()
        .flat_map(|(t, i)| procedure::steps_of(t, i))
        .collect();
        let refs: Vec<&Step> = steps.iter().collect();
        assert_eq!(covers(&m, &refs), 0.75);
    }
}
