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

use crate::schema::skill_contract::SkillReply;
use crate::schema::GateResult;
use crate::selection::gates::Check;
use crate::text::measures::{self, EntityKind};

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

/// A free name: `name` itself, else `name-2`, `name-3`, ... (kept within 64 characters).
pub fn free_name(name: &str, taken: &BTreeSet<String>) -> String {
    if !taken.contains(name) {
        return name.to_string();
    }
    // `taken` is finite, so some suffix is free: the search ends.
    (2..)
        .map(|n| {
            let suffix = format!("-{n}");
            let base: String = name
                .chars()
                .take(skillmd::MAX_NAME - suffix.len())
                .collect();
            format!("{}{suffix}", base.trim_end_matches('-'))
        })
        .find(|candidate| !taken.contains(candidate))
        .unwrap_or_default()
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

/// A reply prepared once for the gates: the name made a free Agent Skills name, the
/// description and steps on one line each, the commands and the prose they hold, the
/// confidence, and the rendered document. Building it decides nothing.
pub struct Prepared<'a> {
    pub reply: &'a SkillReply,
    pub ev: &'a Evidence,
    /// The proposed name as a slug (empty when nothing usable was proposed).
    pub slugged: String,
    /// The slug, or a free variant of it when taken.
    pub name: String,
    pub description: String,
    pub steps: Vec<DraftStep>,
    /// Every command: the steps' commands and every code span of the text.
    pub commands: Vec<String>,
    /// The description and the steps' text with code spans taken out.
    pub prose: String,
    /// The model's own confidence, when it gave one in 0..=1.
    pub model_confidence: Option<f64>,
    /// How alike the instances are (mean similarity to the most typical one).
    pub cohesion: f64,
    pub confidence: f64,
    pub draft: Draft,
    /// The rendered `SKILL.md`.
    pub document: String,
}

impl<'a> Prepared<'a> {
    pub fn new(
        reply: &'a SkillReply,
        ev: &'a Evidence,
        cohesion: f64,
        taken: &BTreeSet<String>,
        provenance: &Provenance,
    ) -> Prepared<'a> {
        let slugged = skillmd::slug(&reply.name);
        let name = if slugged.is_empty() {
            slugged.clone()
        } else {
            free_name(&slugged, taken)
        };
        let description = one_spaced(&reply.description);
        let steps: Vec<DraftStep> = reply
            .steps
            .iter()
            .map(|s| {
                let command = s.command.trim().to_string();
                let tool = match (s.tool.trim(), command.is_empty()) {
                    ("", false) => ev.shell_tool.clone(),
                    (t, _) => t.to_string(),
                };
                DraftStep {
                    text: one_spaced(&s.text),
                    tool,
                    command,
                }
            })
            .collect();
        let mut commands: Vec<String> = Vec::new();
        for s in &steps {
            if !s.command.is_empty() {
                commands.push(s.command.clone());
            }
            commands.extend(skillmd::code(&s.text));
        }
        commands.extend(skillmd::code(&description));
        let mut checked = prose(&description);
        for s in &steps {
            checked.push('\n');
            checked.push_str(&prose(&s.text));
        }
        let model_confidence = reply.confidence.filter(|c| (0.0..=1.0).contains(c));
        let confidence = measures::round3(model_confidence.map_or(cohesion, |m| m.min(cohesion)));
        let mut metadata = provenance.metadata.clone();
        metadata.push(("dream-confidence".into(), format!("{confidence:.3}")));
        let draft = Draft {
            front: Front {
                name: name.clone(),
                description: description.clone(),
                metadata,
            },
            steps: steps.clone(),
            seen: provenance.seen.clone(),
            sources: provenance.sources.clone(),
        };
        let document = draft.render();
        Prepared {
            reply,
            ev,
            slugged,
            name,
            description,
            steps,
            commands,
            prose: checked,
            model_confidence,
            cohesion,
            confidence,
            draft,
            document,
        }
    }
}

fn one_spaced(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A gate of a skill draft: a pure function of the prepared reply.
pub type Gate = fn(&Prepared<'_>) -> Check;

/// The gates that re-derive a draft's content from the instances, in the order their
/// refusals are reported. The format gate runs after them, on a draft none refused.
pub const GATES: &[Gate] = &[
    name_gate,
    description_gate,
    steps_gate,
    tools_gate,
    commands_gate,
    paths_gate,
    secrets_gate,
];

/// A valid Agent Skills name could be made of the proposal.
pub fn name_gate(p: &Prepared<'_>) -> Check {
    let ok = skillmd::check_name(&p.name);
    let mut detail = String::new();
    if !p.slugged.is_empty() && p.slugged != p.reply.name {
        detail = format!("proposed {:?}", p.reply.name);
    }
    if p.name != p.slugged {
        detail = format!(
            "{detail}{}{:?} is taken",
            if detail.is_empty() { "" } else { "; " },
            p.slugged
        );
    }
    let refusal = ok
        .as_ref()
        .err()
        .map(|e| format!("no usable name in {:?}: {e}", p.reply.name));
    Check::row(
        "name",
        &p.name,
        "1-64 of a-z, 0-9 and single hyphens",
        ok.is_ok(),
        detail,
    )
    .refuse_if(refusal.is_some(), || refusal.clone().unwrap_or_default())
}

/// The description is 1-1024 characters and says when to use the skill.
pub fn description_gate(p: &Prepared<'_>) -> Check {
    let d = skillmd::check_description(&p.description);
    Check::row(
        "description",
        format!("{} characters", p.description.chars().count()),
        "1-1024 characters, says when to use it",
        d.is_ok(),
        d.clone().err().unwrap_or_default(),
    )
    .refuse_if(d.is_err(), || d.clone().err().unwrap_or_default())
}

/// The draft has at least one step.
pub fn steps_gate(p: &Prepared<'_>) -> Check {
    Check::row(
        "steps",
        p.steps.len(),
        ">= 1",
        !p.steps.is_empty(),
        String::new(),
    )
    .refuse_if(p.steps.is_empty(), || "no steps".into())
}

/// Every tool a step names is a tool the instances used.
pub fn tools_gate(p: &Prepared<'_>) -> Check {
    let foreign: Vec<String> = p
        .steps
        .iter()
        .map(|s| s.tool.clone())
        .filter(|t| !t.is_empty() && !p.ev.tools.contains(&t.to_lowercase()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    Check::row(
        "tools",
        if foreign.is_empty() {
            "all used in the instances".to_string()
        } else {
            foreign.join(", ")
        },
        "every tool used in the instances",
        foreign.is_empty(),
        String::new(),
    )
    .refuse_if(!foreign.is_empty(), || {
        format!(
            "names tools the instances never used: {} (they used {})",
            foreign.join(", "),
            p.ev.tools.iter().cloned().collect::<Vec<_>>().join(", ")
        )
    })
}

/// Every word of every command (placeholders excepted) ran in the instances.
pub fn commands_gate(p: &Prepared<'_>) -> Check {
    let mut unseen: Vec<String> = Vec::new();
    for c in &p.commands {
        for w in unseen_words(c, p.ev) {
            if !unseen.contains(&w) {
                unseen.push(w);
            }
        }
    }
    Check::row(
        "commands",
        format!(
            "{} unseen words in {} commands",
            unseen.len(),
            p.commands.len()
        ),
        "0 (every word ran in the instances)",
        unseen.is_empty(),
        unseen.join(" "),
    )
    .refuse_if(!unseen.is_empty(), || {
        format!("commands use words no instance ran: {}", unseen.join(", "))
    })
}

/// Every path, URL, identifier and number of the prose appears in the instances.
pub fn paths_gate(p: &Prepared<'_>) -> Check {
    let sources: Vec<&str> = p.ev.texts.iter().map(String::as_str).collect();
    let invented: Vec<String> = measures::invented_entities(&p.prose, &sources)
        .into_iter()
        .filter(|e| e.kind != EntityKind::ProperNoun)
        .map(|e| format!("{} {:?}", e.kind.as_str(), e.text))
        .collect();
    Check::row(
        "paths",
        invented.len(),
        "0 paths, URLs, identifiers or numbers not in the instances",
        invented.is_empty(),
        invented.join(", "),
    )
    .refuse_if(!invented.is_empty(), || {
        format!("names what the instances do not: {}", invented.join(", "))
    })
}

/// No secret and no redaction marker in the rendered document.
pub fn secrets_gate(p: &Prepared<'_>) -> Check {
    let secret = crate::sources::secrets::gate(&p.document);
    Check::row(
        "secrets",
        secret.clone().unwrap_or_else(|| "none".into()),
        "none",
        secret.is_none(),
        String::new(),
    )
    .refuse_if(secret.is_some(), || {
        format!("contains a secret ({})", secret.clone().unwrap_or_default())
    })
}

/// The rendered `SKILL.md` passes the Agent Skills format validator.
pub fn format_gate(p: &Prepared<'_>) -> Check {
    let problems = skillmd::validate(&p.document, &p.name, true);
    Check::row(
        "format",
        problems.len(),
        "0 problems (Agent Skills format)",
        problems.is_empty(),
        problems.join("; "),
    )
    .refuse_if(!problems.is_empty(), || {
        format!("not a valid SKILL.md: {}", problems.join("; "))
    })
}

/// Gate a proposal drafted from `instances` (the most typical first): refuse it when a
/// gate of [`GATES`] (or then [`format_gate`]) fails; else draft it when its confidence
/// reaches `min_confidence`, or queue it as a card.
pub fn gate(
    reply: &SkillReply,
    ev: &Evidence,
    cohesion: f64,
    taken: &BTreeSet<String>,
    provenance: &Provenance,
    min_confidence: f64,
) -> Gated {
    let p = Prepared::new(reply, ev, cohesion, taken, provenance);
    let mut gates = Vec::new();
    let mut refusals: Vec<String> = Vec::new();
    for check in GATES.iter().map(|g| g(&p)) {
        gates.extend(check.result);
        refusals.extend(check.refusal);
    }
    if refusals.is_empty() {
        let check = format_gate(&p);
        gates.extend(check.result);
        refusals.extend(check.refusal);
    }
    let confidence = p.confidence;
    let passed = confidence >= min_confidence;
    gates.push(
        GateResult::new(
            "confidence",
            format!("{confidence:.3}"),
            format!(">= {min_confidence} to draft"),
            passed,
        )
        .detail(match p.model_confidence {
            Some(m) if m < cohesion => {
                format!("cohesion {cohesion:.3}, lowered to the model's {m:.3}")
            }
            _ => format!("cohesion {cohesion:.3}"),
        }),
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
        draft: p.draft,
        document: p.document,
        gates,
        confidence,
        route,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::skill_contract::SkillStep;
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

    /// One row per gate function: how to break a grounded reply so that gate alone
    /// refuses it, and the refusal.
    #[test]
    fn every_gate_function_refuses_on_its_own() {
        type Break = fn(&mut SkillReply);
        let table: Vec<(&str, Gate, Break, &str)> = vec![
            (
                "name",
                name_gate,
                |r| r.name = "!!!".into(),
                "no usable name",
            ),
            (
                "description",
                description_gate,
                |r| r.description.clear(),
                "description",
            ),
            ("steps", steps_gate, |r| r.steps.clear(), "no steps"),
            (
                "tools",
                tools_gate,
                |r| r.steps[0].tool = "Docker".into(),
                "never used: docker",
            ),
            (
                "commands",
                commands_gate,
                |r| r.steps[0].command = "cargo fmt --check".into(),
                "--check",
            ),
            (
                "paths",
                paths_gate,
                |r| r.steps[0].text = "Format /etc/passwd.".into(),
                "/etc/passwd",
            ),
            (
                "secrets",
                secrets_gate,
                |r| r.steps[0].text = "Use AKIAIOSFODNN7EXAMPLE.".into(),
                "secret",
            ),
        ];
        assert_eq!(table.len(), GATES.len(), "a row for every gate in GATES");
        let ev = evidence();
        let taken = BTreeSet::new();
        let prov = Provenance::default();
        let good = reply();
        for (name, g, _, _) in &table {
            let check = g(&Prepared::new(&good, &ev, 0.9, &taken, &prov));
            assert_eq!(check.refusal, None, "{name} refused the grounded reply");
        }
        assert_eq!(
            format_gate(&Prepared::new(&good, &ev, 0.9, &taken, &prov)).refusal,
            None
        );
        for (name, g, break_it, want) in table {
            let mut bad = reply();
            break_it(&mut bad);
            let check = g(&Prepared::new(&bad, &ev, 0.9, &taken, &prov));
            let reason = check.refusal.unwrap_or_default().to_lowercase();
            assert!(
                reason.contains(want),
                "{name}: got {reason:?}, want {want:?}"
            );
        }
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
