//! The gates of a skill draft (SPEC S10), pure: the model proposes a name, a description
//! and steps; these functions re-derive every part from the instances it was drafted from
//! and decide: write the draft, queue it as a review card, or refuse it with a reason.
//!
//! - **name**: the proposal made a valid Agent Skills name (lower case, single hyphens, at
//!   most 64 characters); a name already taken gets `-2`, `-3`, ... Nothing usable: refused.
//! - **description**: 1-1024 characters that say when to use the skill.
//! - **tools**: every tool a step names is a tool the instances used.
//! - **commands**: every word of every command (a step's command and anything in
//!   backticks), placeholders in `<angle brackets>` excepted, appears in the instances' tool
//!   calls.
//! - **paths**: every path, URL, e-mail address, identifier and number in the description
//!   and the steps' text appears in the instances (their tool calls and the requests that
//!   started them).
//! - **secrets**: no secret and no redaction marker in the document.
//! - **format**: the rendered `SKILL.md` passes the format validator.
//! - **confidence** (route, not refusal): the mean similarity of the instances to the most
//!   typical one, lowered to the model's own confidence when it gives a lower one; at or
//!   above `skills.min_confidence` the draft is written, below it a card proposes it.

use std::collections::{BTreeSet, HashSet};

use crate::llm::skill::SkillReply;
use crate::measures::{self, EntityKind};
use crate::memory::GateResult;

use super::procedure::{self, Instance};
use super::skillmd::{self, Draft, DraftStep, Front};

/// What the instances of a procedure say, for the gates.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// Tools the instances used, in lower case.
    pub tools: BTreeSet<String>,
    /// The shell tool most instances used (for a command step that names none).
    pub shell_tool: String,
    /// Every word of every tool call (as the shell splits it, and as white space does), in
    /// lower case, plus `--flag` for `--flag=value`.
    pub words: HashSet<String>,
    /// Tool-call inputs and requests, for paths and the like.
    pub texts: Vec<String>,
}

impl Evidence {
    /// The evidence of these instances; `figures` (counts dream measured, such as "4
    /// instances on 3 days") may be cited as well.
    pub fn new(instances: &[&Instance], figures: &str) -> Evidence {
        let mut ev = Evidence::default();
        let mut shells: std::collections::BTreeMap<String, usize> = Default::default();
        for i in instances {
            for c in &i.calls {
                ev.tools.insert(c.tool.to_lowercase());
                ev.words.insert(c.tool.to_lowercase());
                if procedure::is_shell_tool(&c.tool) {
                    *shells.entry(c.tool.clone()).or_default() += 1;
                }
                let mut ws = procedure::words(&c.input);
                ws.extend(c.input.split_whitespace().map(str::to_string));
                for w in ws {
                    let w = w
                        .trim_matches(|c| c == '"' || c == '\'' || c == ';' || c == ',')
                        .to_lowercase();
                    if let Some((flag, _)) = w.split_once('=') {
                        ev.words.insert(flag.to_string());
                    }
                    ev.words.insert(w);
                }
                for step in &c.steps {
                    for w in step
                        .shown
                        .split_whitespace()
                        .chain(step.sig.split_whitespace())
                    {
                        ev.words.insert(w.to_lowercase());
                    }
                }
                ev.texts.push(c.input.clone());
            }
            if let Some((_, text)) = &i.request {
                ev.texts.push(text.clone());
            }
        }
        ev.texts.push(figures.to_string());
        ev.shell_tool = shells
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|(t, _)| t)
            .unwrap_or_else(|| "Bash".into());
        ev
    }
}

/// Where a gated draft goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// Written to `skills/drafts/<name>/SKILL.md`.
    Draft,
    /// Proposed by a review card, for this reason.
    Queue(String),
    /// Refused, for this reason.
    Refuse(String),
}

impl Route {
    pub fn label(&self) -> &'static str {
        match self {
            Route::Draft => "drafted",
            Route::Queue(_) => "queued",
            Route::Refuse(_) => "refused",
        }
    }
}

/// A gated draft.
#[derive(Debug, Clone)]
pub struct Gated {
    pub draft: Draft,
    /// The rendered `SKILL.md`.
    pub document: String,
    pub gates: Vec<GateResult>,
    pub confidence: f64,
    pub route: Route,
}

/// What dream adds to a draft: its `metadata` (without the confidence, which the gate
/// adds), the "seen" sentence and the source lines of the body.
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    pub metadata: Vec<(String, String)>,
    pub seen: String,
    pub sources: Vec<String>,
}

fn push(
    gates: &mut Vec<GateResult>,
    gate: &str,
    value: impl ToString,
    threshold: &str,
    passed: bool,
    detail: String,
) {
    gates.push(GateResult {
        gate: gate.into(),
        value: value.to_string(),
        threshold: threshold.into(),
        passed,
        detail,
    });
}

/// A free name: `name` itself, else `name-2`, `name-3`, ... (kept within 64 characters).
pub fn free_name(name: &str, taken: &BTreeSet<String>) -> String {
    if !taken.contains(name) {
        return name.to_string();
    }
    for n in 2.. {
        let suffix = format!("-{n}");
        let base: String = name
            .chars()
            .take(skillmd::MAX_NAME - suffix.len())
            .collect();
        let candidate = format!("{}{suffix}", base.trim_end_matches('-'));
        if !taken.contains(&candidate) {
            return candidate;
        }
    }
    unreachable!("some suffix is free")
}

/// Words of a command that no instance ran (placeholders and shell operators excepted).
pub fn unseen_words(command: &str, ev: &Evidence) -> Vec<String> {
    let mut out = Vec::new();
    for w in procedure::words(command) {
        if matches!(w.as_str(), "&&" | "||" | "|" | ";" | "&" | "|&") {
            continue;
        }
        let stripped = strip_placeholders(&w);
        let t = stripped
            .trim_matches(|c| c == '"' || c == '\'' || c == ';' || c == ',')
            .to_lowercase();
        if t.is_empty() {
            continue;
        }
        let t = match t.strip_suffix('=') {
            Some(flag) => flag.to_string(),
            None => t,
        };
        if !ev.words.contains(&t) && !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// A word without its `<placeholder>` parts.
fn strip_placeholders(w: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for c in w.chars() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Text with its code spans taken out (they are checked as commands).
fn prose(text: &str) -> String {
    text.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

/// Gate a proposal drafted from `instances` (the most typical first).
pub fn gate(
    reply: &SkillReply,
    ev: &Evidence,
    cohesion: f64,
    taken: &BTreeSet<String>,
    provenance: &Provenance,
    min_confidence: f64,
) -> Gated {
    let mut gates = Vec::new();
    let mut refusals: Vec<String> = Vec::new();

    // name
    let slugged = skillmd::slug(&reply.name);
    let name = if slugged.is_empty() {
        slugged.clone()
    } else {
        free_name(&slugged, taken)
    };
    let name_ok = skillmd::check_name(&name);
    let mut detail = String::new();
    if !slugged.is_empty() && slugged != reply.name {
        detail = format!("proposed {:?}", reply.name);
    }
    if name != slugged {
        detail = format!(
            "{detail}{}{slugged:?} is taken",
            if detail.is_empty() { "" } else { "; " }
        );
    }
    push(
        &mut gates,
        "name",
        &name,
        "1-64 of a-z, 0-9 and single hyphens",
        name_ok.is_ok(),
        detail,
    );
    if let Err(e) = name_ok {
        refusals.push(format!("no usable name in {:?}: {e}", reply.name));
    }

    // description
    let description = reply
        .description
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let d = skillmd::check_description(&description);
    push(
        &mut gates,
        "description",
        format!("{} characters", description.chars().count()),
        "1-1024 characters, says when to use it",
        d.is_ok(),
        d.clone().err().unwrap_or_default(),
    );
    if let Err(e) = d {
        refusals.push(e);
    }

    // steps
    let mut steps: Vec<DraftStep> = Vec::new();
    for s in &reply.steps {
        let text = s.text.split_whitespace().collect::<Vec<_>>().join(" ");
        let command = s.command.trim().to_string();
        let tool = match (s.tool.trim(), command.is_empty()) {
            ("", false) => ev.shell_tool.clone(),
            (t, _) => t.to_string(),
        };
        steps.push(DraftStep {
            text,
            tool,
            command,
        });
    }
    push(
        &mut gates,
        "steps",
        steps.len(),
        ">= 1",
        !steps.is_empty(),
        String::new(),
    );
    if steps.is_empty() {
        refusals.push("no steps".into());
    }

    // tools
    let foreign: Vec<String> = steps
        .iter()
        .map(|s| s.tool.clone())
        .filter(|t| !t.is_empty() && !ev.tools.contains(&t.to_lowercase()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    push(
        &mut gates,
        "tools",
        if foreign.is_empty() {
            "all used in the instances".to_string()
        } else {
            foreign.join(", ")
        },
        "every tool used in the instances",
        foreign.is_empty(),
        String::new(),
    );
    if !foreign.is_empty() {
        refusals.push(format!(
            "names tools the instances never used: {} (they used {})",
            foreign.join(", "),
            ev.tools.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }

    // commands
    let mut commands: Vec<String> = Vec::new();
    for s in &steps {
        if !s.command.is_empty() {
            commands.push(s.command.clone());
        }
        commands.extend(skillmd::code(&s.text));
    }
    commands.extend(skillmd::code(&description));
    let mut unseen: Vec<String> = Vec::new();
    for c in &commands {
        for w in unseen_words(c, ev) {
            if !unseen.contains(&w) {
                unseen.push(w);
            }
        }
    }
    push(
        &mut gates,
        "commands",
        format!(
            "{} unseen words in {} commands",
            unseen.len(),
            commands.len()
        ),
        "0 (every word ran in the instances)",
        unseen.is_empty(),
        unseen.join(" "),
    );
    if !unseen.is_empty() {
        refusals.push(format!(
            "commands use words no instance ran: {}",
            unseen.join(", ")
        ));
    }

    // paths, URLs, identifiers, numbers
    let mut checked = prose(&description);
    for s in &steps {
        checked.push('\n');
        checked.push_str(&prose(&s.text));
    }
    let sources: Vec<&str> = ev.texts.iter().map(String::as_str).collect();
    let invented: Vec<String> = measures::invented_entities(&checked, &sources)
        .into_iter()
        .filter(|e| e.kind != EntityKind::ProperNoun)
        .map(|e| format!("{} {:?}", e.kind.as_str(), e.text))
        .collect();
    push(
        &mut gates,
        "paths",
        invented.len(),
        "0 paths, URLs, identifiers or numbers not in the instances",
        invented.is_empty(),
        invented.join(", "),
    );
    if !invented.is_empty() {
        refusals.push(format!(
            "names what the instances do not: {}",
            invented.join(", ")
        ));
    }

    // confidence
    let model = reply.confidence.filter(|c| (0.0..=1.0).contains(c));
    let confidence = measures::round3(model.map_or(cohesion, |m| m.min(cohesion)));
    let mut metadata = provenance.metadata.clone();
    metadata.push(("dream-confidence".into(), format!("{confidence:.3}")));
    let draft = Draft {
        front: Front {
            name: name.clone(),
            description: description.clone(),
            metadata,
        },
        steps,
        seen: provenance.seen.clone(),
        sources: provenance.sources.clone(),
    };
    let document = draft.render();

    // secrets
    let secret = crate::secrets::gate(&document);
    push(
        &mut gates,
        "secrets",
        secret.clone().unwrap_or_else(|| "none".into()),
        "none",
        secret.is_none(),
        String::new(),
    );
    if let Some(s) = secret {
        refusals.push(format!("contains a secret ({s})"));
    }

    // format
    if refusals.is_empty() {
        let problems = skillmd::validate(&document, &name, true);
        push(
            &mut gates,
            "format",
            problems.len(),
            "0 problems (Agent Skills format)",
            problems.is_empty(),
            problems.join("; "),
        );
        if !problems.is_empty() {
            refusals.push(format!("not a valid SKILL.md: {}", problems.join("; ")));
        }
    }

    let passed = confidence >= min_confidence;
    push(
        &mut gates,
        "confidence",
        format!("{confidence:.3}"),
        &format!(">= {min_confidence} to draft"),
        passed,
        match model {
            Some(m) if m < cohesion => {
                format!("cohesion {cohesion:.3}, lowered to the model's {m:.3}")
            }
            _ => format!("cohesion {cohesion:.3}"),
        },
    );
    let route = if !refusals.is_empty() {
        Route::Refuse(refusals.join("; "))
    } else if passed {
        Route::Draft
    } else {
        Route::Queue(format!(
            "confidence {confidence:.3} < skills.min_confidence {min_confidence}"
        ))
    };
    Gated {
        draft,
        document,
        gates,
        confidence,
        route,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::skill::SkillStep;
    use crate::skills::procedure::{steps_of, Call};

    fn instance(session: &str, day: u32, calls: &[(&str, &str)]) -> Instance {
        let ts: chrono::DateTime<chrono::Utc> =
            format!("2026-11-{day:02}T10:00:00Z").parse().unwrap();
        let calls: Vec<Call> = calls
            .iter()
            .enumerate()
            .map(|(n, (tool, input))| Call {
                event_id: format!("{session}-{n}"),
                ts,
                tool: tool.to_string(),
                input: input.to_string(),
                steps: steps_of(tool, input),
            })
            .collect();
        Instance {
            session: session.into(),
            day: ts.date_naive(),
            start: ts,
            request: Some(("m".into(), "ship the release to staging".into())),
            seq: calls
                .iter()
                .flat_map(|c| c.steps.iter().map(|s| s.key()))
                .collect(),
            calls,
        }
    }

    fn evidence() -> Evidence {
        let a = instance(
            "a",
            2,
            &[
                ("Bash", "cargo fmt --all"),
                ("Edit", "src/lib.rs old_string=x"),
                ("Bash", "git commit -m \"fix it\""),
            ],
        );
        let b = instance(
            "b",
            3,
            &[
                ("Bash", "cargo fmt --all"),
                ("Bash", "git commit -m \"more\""),
            ],
        );
        Evidence::new(&[&a, &b], "2 instances on 2 days")
    }

    fn reply() -> SkillReply {
        SkillReply {
            name: "Format and Commit".into(),
            description:
                "Formats the Rust code and commits it. Use when the user asks to ship the release."
                    .into(),
            steps: vec![
                SkillStep {
                    text: "Format the code.".into(),
                    tool: "Bash".into(),
                    command: "cargo fmt --all".into(),
                },
                SkillStep {
                    text: "Edit the `*.rs` file that needs it.".into(),
                    tool: "Edit".into(),
                    command: String::new(),
                },
                SkillStep {
                    text: "Commit.".into(),
                    tool: String::new(),
                    command: "git commit -m <message>".into(),
                },
            ],
            confidence: None,
            reason: String::new(),
        }
    }

    #[test]
    fn a_grounded_proposal_is_drafted_and_valid() {
        let g = gate(
            &reply(),
            &evidence(),
            0.9,
            &BTreeSet::new(),
            &Provenance::default(),
            0.8,
        );
        assert_eq!(g.route, Route::Draft, "{:?}", g.gates);
        assert_eq!(g.draft.front.name, "format-and-commit");
        assert_eq!(
            g.draft.steps[2].tool, "Bash",
            "a command step gets the instances' shell"
        );
        assert!(skillmd::validate(&g.document, "format-and-commit", true).is_empty());
        let taken: BTreeSet<String> = ["format-and-commit".to_string()].into();
        let g = gate(
            &reply(),
            &evidence(),
            0.9,
            &taken,
            &Provenance::default(),
            0.8,
        );
        assert_eq!(g.draft.front.name, "format-and-commit-2");
    }

    #[test]
    fn low_confidence_goes_to_review() {
        let mut r = reply();
        r.confidence = Some(0.5);
        let g = gate(
            &r,
            &evidence(),
            0.9,
            &BTreeSet::new(),
            &Provenance::default(),
            0.8,
        );
        assert_eq!(
            g.route,
            Route::Queue("confidence 0.500 < skills.min_confidence 0.8".into())
        );
        let g = gate(
            &reply(),
            &evidence(),
            0.75,
            &BTreeSet::new(),
            &Provenance::default(),
            0.8,
        );
        assert!(matches!(g.route, Route::Queue(_)));
    }

    #[test]
    fn invented_commands_tools_and_paths_are_refused_with_reasons() {
        let refused = |r: SkillReply| match gate(
            &r,
            &evidence(),
            1.0,
            &BTreeSet::new(),
            &Provenance::default(),
            0.8,
        )
        .route
        {
            Route::Refuse(why) => why,
            other => panic!("not refused: {other:?}"),
        };
        let mut r = reply();
        r.steps[0].command = "cargo publish --dry-run".into();
        assert_eq!(
            refused(r),
            "commands use words no instance ran: publish, --dry-run"
        );
        let mut r = reply();
        r.steps[1].tool = "WebFetch".into();
        assert!(refused(r).starts_with("names tools the instances never used: WebFetch"));
        let mut r = reply();
        r.steps[1].text = "Then run `rm -rf /` to clean up.".into();
        assert!(refused(r).contains("rm, -rf, /"));
        let mut r = reply();
        r.description =
            "Deploys to https://prod.example.com and commits. Use when shipping.".into();
        assert!(refused(r).contains("url \"https://prod.example.com\""));
        let mut r = reply();
        r.steps[0].text = "Wait 30 seconds, then format.".into();
        assert!(refused(r).contains("number \"30\""));
        let mut r = reply();
        r.description = "Formats and commits.".into();
        assert!(refused(r).contains("does not say when to use"));
        let mut r = reply();
        r.name = "???".into();
        assert!(refused(r).starts_with("no usable name"));
        let mut r = reply();
        r.description = format!("Use when asked. {}", "word ".repeat(250));
        assert!(refused(r).contains("over the limit of 1024"));
        let mut r = reply();
        r.steps.clear();
        assert_eq!(refused(r), "no steps");
    }

    #[test]
    fn a_redaction_marker_is_refused() {
        let a = instance(
            "a",
            2,
            &[
                ("Bash", "export TOKEN=[redacted:github-token]"),
                ("Bash", "make deploy"),
            ],
        );
        let ev = Evidence::new(&[&a], "");
        let mut r = reply();
        r.steps = vec![SkillStep {
            text: String::new(),
            tool: "Bash".into(),
            command: "export TOKEN=[redacted:github-token]".into(),
        }];
        let g = gate(&r, &ev, 1.0, &BTreeSet::new(), &Provenance::default(), 0.8);
        match g.route {
            Route::Refuse(why) => assert!(
                why.contains("contains a secret (github-token (redacted at ingest))"),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
    }
}
