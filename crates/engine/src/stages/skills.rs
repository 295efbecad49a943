//! Skills (SPEC S10): the same nightly replay that finds durable facts notices work done
//! again and again, and drafts an Agent Skills `SKILL.md` for it, which stays inert until a
//! person activates it.
//!
//! - `procedure` (pure): tool calls into instances and normalised steps, and instances
//!   into recurring procedures.
//! - `skillmd` (pure): the `SKILL.md` format: render, read, validate, and which steps a
//!   skill names.
//! - `gate` (pure): a model's draft re-derived from the instances: drafted, queued or
//!   refused, with every measured value.
//! - `card`: a queued draft as a review card (`kind = "skill"`).
//! - this file: the cycle stage [`run`], and the edge that reads the skills a repository
//!   and the installed skill folders already hold ([`list`]).
//! - `manage`: promote and discard, for `dream skills`.
//!
//! Where skills live: `skills/drafts/<name>/` (inert drafts), `skills/active/<name>/`
//! (promoted by a person; copied to `skills.install_to` when set), `skills/discarded/<name>/`
//! (discarded drafts, kept so the procedure is not drafted again; git keeps every version).

use dream_core::skills::{card, gate, procedure, skillmd};
pub use dream_core::skills::{Covered, SkillDecision, SkillsReport, Status};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::edges::state::{self, Connection};
use crate::edges::store::Change;
use crate::error::{Context, Result};
use crate::stages::{parallel_map, Ctx, Work};
use dream_core::llm::budget::CallError;
use dream_core::operations::report::Degraded;
use dream_core::schema::contract::Reply;
use dream_core::schema::skill_contract::{
    CallView, InstanceView, SkillReply, SkillRequest, StepView,
};
use dream_core::schema::{self, text_id, CardKind, Excerpt, Stage, REVIEW_DIR};
use dream_core::sources::event::Event;

use card::SkillCard;
use gate::{Evidence, Provenance, Route};
use procedure::{Instance, Procedure, Thresholds};

pub use dream_core::skills::{ACTIVE_DIR, DISCARDED_DIR, DRAFTS_DIR, SKILL_FILE};

/// Instances shown to the model per draft (the most typical first).
const SHOWN_INSTANCES: usize = 6;
/// Tool calls shown per instance.
const SHOWN_CALLS: usize = 30;
/// Characters of a tool call's input or a request shown to the model.
const SHOWN_CHARS: usize = 300;
/// Instances listed in a draft's body (all of their ids are in its metadata).
const LISTED_SOURCES: usize = 12;

/// A skill dream knows of.
#[derive(Debug, Clone, Serialize)]
pub struct Skill {
    pub name: String,
    pub status: Status,
    pub description: String,
    /// Relative to the repository, or absolute for an installed skill.
    pub path: String,
    /// dream's own `metadata` (`dream-instances`, `dream-confidence`, ...).
    pub metadata: BTreeMap<String, String>,
    /// The card that proposes it, for a proposed skill.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub card: Option<String>,
    /// What is wrong with its `SKILL.md`, if anything.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    #[serde(skip)]
    pub document: String,
    /// Tool-call events it was drafted from (dream's drafts and proposals).
    #[serde(skip)]
    pub sources: BTreeSet<String>,
}

impl Skill {
    fn from_document(
        name: String,
        status: Status,
        path: String,
        document: String,
        strict: bool,
    ) -> Skill {
        let (description, metadata, problems) = match skillmd::parse(&document) {
            Ok(p) => (
                p.description.clone().unwrap_or_default(),
                p.metadata.clone(),
                skillmd::validate(&document, &name, strict),
            ),
            Err(e) => (String::new(), BTreeMap::new(), vec![e]),
        };
        let sources = metadata
            .get("dream-source-events")
            .map(|s| s.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();
        Skill {
            name,
            status,
            description,
            path,
            metadata,
            card: None,
            problems,
            document,
            sources,
        }
    }
}

impl Skill {
    /// The skill a pending review card proposes.
    pub fn proposed(card: &SkillCard) -> Skill {
        let mut s = Skill::from_document(
            card.name.clone(),
            Status::Proposed,
            card.path(),
            card.document.clone(),
            true,
        );
        s.card = Some(card.id.clone());
        s.sources.extend(card.supporting_event_ids.iter().cloned());
        s
    }
}

/// `~/x` as a path under the home folder; anything else as it is.
pub fn expand_home(p: &str) -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match (p.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => h.join(rest),
        _ if p == "~" => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(p)),
        _ => PathBuf::from(p),
    }
}

/// The `<name>/SKILL.md` files in a folder, by name.
fn skill_files(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(out);
    };
    for entry in entries {
        let entry = entry.context(|| format!("listing {}", dir.display()))?;
        let file = entry.path().join(SKILL_FILE);
        if file.is_file() {
            out.push((entry.file_name().to_string_lossy().into_owned(), file));
        }
    }
    out.sort();
    Ok(out)
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).context(|| format!("reading {}", path.display()))
}

/// Skills in one of the repository's skill folders.
fn in_repo(root: &Path, dir: &str, status: Status) -> Result<Vec<Skill>> {
    let mut out = Vec::new();
    for (name, file) in skill_files(&root.join(dir))? {
        let path = format!("{dir}/{name}/{SKILL_FILE}");
        out.push(Skill::from_document(
            name,
            status,
            path,
            read(&file)?,
            false,
        ));
    }
    Ok(out)
}

/// Inert drafts awaiting a decision (for the digest).
pub fn drafts(root: &Path) -> Result<Vec<Skill>> {
    in_repo(root, DRAFTS_DIR, Status::Draft)
}

/// Skills awaiting a person's decision: drafts, then skills proposed by review cards.
pub fn awaiting(root: &Path) -> Result<Vec<Skill>> {
    let mut out = drafts(root)?;
    out.extend(proposals(root)?.0.iter().map(Skill::proposed));
    Ok(out)
}

/// Pending skill proposals (review cards of kind `skill`), oldest first. A card that does
/// not parse is reported, not fatal.
pub fn proposals(root: &Path) -> Result<(Vec<SkillCard>, Vec<String>)> {
    let dir = root.join(REVIEW_DIR);
    let mut cards = Vec::new();
    let mut problems = Vec::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok((cards, problems));
    };
    for entry in entries {
        let path = entry
            .context(|| format!("listing {}", dir.display()))?
            .path();
        if !path.is_file() || path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = read(&path)?;
        if schema::card_kind(&text) != CardKind::Skill {
            continue;
        }
        match SkillCard::parse(&text) {
            Ok(c) => cards.push(c),
            Err(e) => problems.push(format!("{}: {e}", path.display())),
        }
    }
    cards.sort_by(|a, b| a.created.cmp(&b.created).then(a.id.cmp(&b.id)));
    Ok((cards, problems))
}

/// The installed skill folders: `skills.installed` and `skills.install_to`, `~` expanded,
/// each once.
pub fn installed_dirs(config: &dream_core::schema::settings::Config) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let s = &config.skills;
    for d in s
        .installed
        .iter()
        .chain(s.install_to.iter())
        .filter(|d| !d.trim().is_empty())
    {
        let p = expand_home(d.trim());
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// Every skill dream knows of: the repository's drafts, proposals, active and discarded
/// skills, and (with `installed`) the skills in the installed folders.
pub fn list(
    root: &Path,
    config: &dream_core::schema::settings::Config,
    installed: bool,
) -> Result<Vec<Skill>> {
    let mut out = awaiting(root)?;
    out.extend(in_repo(root, ACTIVE_DIR, Status::Active)?);
    out.extend(in_repo(root, DISCARDED_DIR, Status::Discarded)?);
    if installed {
        for dir in installed_dirs(config) {
            for (name, file) in skill_files(&dir)? {
                let Ok(text) = std::fs::read_to_string(&file) else {
                    continue;
                };
                out.push(Skill::from_document(
                    name,
                    Status::Installed,
                    file.display().to_string(),
                    text,
                    false,
                ));
            }
        }
    }
    Ok(out)
}

/// Whether `skill` covers the procedure, and why: it names at least `skills.covered` of
/// the procedure's distinct steps, or it was drafted from at least half of its instances.
pub fn covered_by(
    skill: &Skill,
    steps: &[&procedure::Step],
    members: &[&Instance],
    share: f64,
) -> Option<String> {
    let named = skillmd::covers(&skillmd::mentions(&skill.document), steps);
    if named >= share {
        return Some(format!(
            "names {:.0}% of its steps (skills.covered {share})",
            named * 100.0
        ));
    }
    if !skill.sources.is_empty() {
        let from = members
            .iter()
            .filter(|i| i.event_ids().iter().any(|id| skill.sources.contains(id)))
            .count();
        if from * 2 >= members.len() {
            return Some(format!(
                "was drafted from {from} of its {} instances",
                members.len()
            ));
        }
    }
    None
}

/// The steps of the most typical instance (the first) that most instances have; all of
/// its steps when none is that common. Coverage is measured on these.
fn common_steps<'a>(members: &[&'a Instance]) -> Vec<&'a procedure::Step> {
    let has = |s: &procedure::Step| {
        members
            .iter()
            .filter(|i| {
                i.calls
                    .iter()
                    .flat_map(|c| &c.steps)
                    .any(|o| o.key() == s.key())
            })
            .count()
    };
    let all = members[0].steps();
    let common: Vec<&procedure::Step> = all
        .iter()
        .copied()
        .filter(|s| has(s) * 2 > members.len())
        .collect();
    if common.is_empty() {
        all
    } else {
        common
    }
}

fn workers(ctx: &Ctx<'_>) -> usize {
    if ctx.llm.offline() {
        1
    } else {
        ctx.config.llm.concurrency
    }
}

/// The request for one procedure.
fn request(p: &Procedure, id: &str, instances: &[Instance], max_tokens: u64) -> SkillRequest {
    let members: Vec<&Instance> = p.members.iter().map(|&m| &instances[m]).collect();
    let typical = members[0];
    let common = common_steps(&members);
    let steps = typical
        .steps()
        .into_iter()
        .map(|s| {
            let same = members
                .iter()
                .filter(|i| {
                    i.calls
                        .iter()
                        .flat_map(|c| &c.steps)
                        .any(|o| o.key() == s.key() && o.raw == s.raw)
                })
                .count();
            StepView {
                tool: s.tool.clone(),
                shown: s.shown.clone(),
                example: s.raw.clone(),
                stable: !s.raw.is_empty() && same * 2 > members.len(),
                common: common.iter().any(|c| c.key() == s.key()),
            }
        })
        .collect();
    let shown = members
        .iter()
        .take(SHOWN_INSTANCES)
        .map(|i| InstanceView {
            session: i.session.clone(),
            day: i.day.to_string(),
            request: i
                .request
                .as_ref()
                .map(|(_, t)| schema::excerpt(t, SHOWN_CHARS)),
            calls: i
                .calls
                .iter()
                .take(SHOWN_CALLS)
                .map(|c| CallView {
                    event_id: c.event_id.clone(),
                    tool: c.tool.clone(),
                    input: schema::excerpt(&c.input, SHOWN_CHARS),
                })
                .collect(),
        })
        .collect();
    SkillRequest {
        procedure: id.to_string(),
        instances: shown,
        steps,
        total_instances: members.len(),
        days: p.days,
        sessions: p.sessions,
        max_tokens,
    }
}

/// dream's metadata and the provenance lines of a draft.
fn provenance(p: &Procedure, id: &str, instances: &[Instance], cycle: &str) -> Provenance {
    let mut members: Vec<&Instance> = p.members.iter().map(|&m| &instances[m]).collect();
    members.sort_by_key(|i| (i.start, i.session.clone()));
    let first = members.first().map(|i| i.day).unwrap_or_default();
    let last = members.last().map(|i| i.day).unwrap_or_default();
    let ids: Vec<String> = members.iter().flat_map(|i| i.event_ids()).collect();
    let seen = format!(
        "{} instances on {} days in {} sessions, from {first} to {last}",
        members.len(),
        p.days,
        p.sessions
    );
    let mut sources: Vec<String> = members
        .iter()
        .take(LISTED_SOURCES)
        .map(|i| {
            format!(
                "{}, session {}: {}",
                i.day,
                i.session,
                i.event_ids().join(", ")
            )
        })
        .collect();
    if members.len() > LISTED_SOURCES {
        sources.push(format!(
            "and {} more instances (every event id is in the metadata, dream-source-events)",
            members.len() - LISTED_SOURCES
        ));
    }
    Provenance {
        metadata: vec![
            ("dream-procedure".into(), id.into()),
            ("dream-instances".into(), members.len().to_string()),
            ("dream-days".into(), p.days.to_string()),
            ("dream-sessions".into(), p.sessions.to_string()),
            ("dream-first-seen".into(), first.to_string()),
            ("dream-last-seen".into(), last.to_string()),
            ("dream-cycle".into(), cycle.into()),
            ("dream-source-events".into(), ids.join(" ")),
        ],
        seen,
        sources,
    }
}

/// Run the stage: find recurring procedures in the window, leave out those an existing skill
/// covers, ask for a draft of each of the rest, gate it, and write drafts and cards as one
/// commit.
pub fn draft_skills(ctx: &Ctx<'_>, tx: &Connection, work: &mut Work) -> Result<()> {
    let cfg = &ctx.config.skills;
    if !cfg.enabled {
        return Ok(());
    }
    let spent_before = ctx.budget.spend().spent;
    let t = Thresholds::from(cfg);
    let instances = window_instances(tx, work)?;
    let procedures = procedure::group(&instances, &t);
    let mut report = SkillsReport {
        instances: instances
            .iter()
            .filter(|i| procedure::eligible(i, &t))
            .count(),
        procedures: procedures.len(),
        ..SkillsReport::default()
    };
    let recurring = recurring_procedures(&procedures, &instances, &t);
    report.recurring = recurring.len();

    let known = if recurring.is_empty() {
        Vec::new()
    } else {
        list(ctx.root, ctx.config, true)?
    };
    let mut todo = uncovered(recurring, &instances, &known, cfg.covered, &mut report);
    defer_over_cap(&mut todo, cfg.max_per_cycle, &mut report, work);
    let requests: Vec<SkillRequest> = todo
        .iter()
        .map(|(p, id)| request(p, id, &instances, ctx.config.llm.max_tokens))
        .collect();
    let results = parallel_map(&requests, workers(ctx), |r| {
        ctx.call("skills", ctx.llm.estimate_skill(r), || {
            ctx.llm.draft_skill(r)
        })
    });

    let mut out = Drafted {
        taken: known.iter().map(|k| k.name.clone()).collect(),
        change: Change::default(),
        lines: Vec::new(),
    };
    for (item, result) in todo.iter().zip(results) {
        let Some(reply) = reply_or_defer(ctx, &item.1, result, &mut report, work) else {
            continue;
        };
        let proposal = gate_reply(ctx, item, &instances, reply, &out.taken);
        let (target, reason) = route_proposal(ctx, tx, &proposal, &mut out)?;
        record_decision(ctx, tx, &proposal, target, reason, &mut report)?;
    }
    work.lap("skills");
    commit_drafts(ctx, work, out, report, spent_before);
    Ok(())
}

/// The instances the window's tool calls and owner messages make up.
fn window_instances(tx: &Connection, work: &Work) -> Result<Vec<Instance>> {
    // The window's load listed its tool calls and owner messages; read only those that
    // make up instances.
    let seqs = procedure::rows_to_read(&work.window.procedure);
    let window = state::events_by_seq(tx, &seqs)?;
    let events: Vec<&Event> = window.iter().map(|s| &s.event).collect();
    Ok(procedure::instances(&events))
}

/// The procedures that recur often enough to draft (why each other one does not, at debug).
fn recurring_procedures<'p>(
    procedures: &'p [Procedure],
    instances: &[Instance],
    t: &Thresholds,
) -> Vec<&'p Procedure> {
    procedures
        .iter()
        .filter(|p| match p.recurs(t) {
            Ok(()) => true,
            Err(why) => {
                tracing::debug!(procedure = %p.id(instances), "not recurring: {why}");
                false
            }
        })
        .collect()
}

/// The recurring procedures no skill covers, with their ids; the covered ones go in the report.
fn uncovered<'p>(
    recurring: Vec<&'p Procedure>,
    instances: &[Instance],
    known: &[Skill],
    covered: f64,
    report: &mut SkillsReport,
) -> Vec<(&'p Procedure, String)> {
    // Largest first: a procedure whose steps a larger one drafted in this cycle names is
    // covered by that draft-to-be, as it would be by the draft in the next cycle.
    let mut todo: Vec<(&Procedure, String)> = Vec::new();
    let mut planned: Vec<(String, skillmd::Mentions)> = Vec::new();
    for p in recurring {
        let id = p.id(instances);
        let members: Vec<&Instance> = p.members.iter().map(|&m| &instances[m]).collect();
        let steps = common_steps(&members);
        let cover = known
            .iter()
            .find_map(|k| {
                covered_by(k, &steps, &members, covered).map(|why| (k.name.clone(), k.status, why))
            })
            .or_else(|| {
                planned.iter().find_map(|(other, m)| {
                    let named = skillmd::covers(m, &steps);
                    (named >= covered).then(|| {
                        let why = format!(
                            "a larger procedure drafted in this cycle names {:.0}% of its steps",
                            named * 100.0
                        );
                        (other.clone(), Status::Draft, why)
                    })
                })
            });
        match cover {
            Some((by, status, why)) => report.covered.push(Covered {
                procedure: id,
                by,
                status,
                why,
            }),
            None => {
                planned.push((id.clone(), skillmd::mentions_of(&steps)));
                todo.push((p, id));
            }
        }
    }
    todo
}

/// Leave the procedures over `skills.max_per_cycle` for later cycles, with a note.
fn defer_over_cap(
    todo: &mut Vec<(&Procedure, String)>,
    max_per_cycle: usize,
    report: &mut SkillsReport,
    work: &mut Work,
) {
    if todo.len() > max_per_cycle {
        report.pending += todo.len() - max_per_cycle;
        work.report.notes.push(format!(
            "skills: {} recurring procedures left for later cycles (skills.max_per_cycle = {})",
            todo.len() - max_per_cycle,
            max_per_cycle
        ));
        todo.truncate(max_per_cycle);
    }
}

/// The model's draft, or none when the call failed and the procedure is left for the next cycle.
fn reply_or_defer(
    ctx: &Ctx<'_>,
    id: &str,
    result: std::result::Result<Reply<SkillReply>, CallError>,
    report: &mut SkillsReport,
    work: &mut Work,
) -> Option<SkillReply> {
    match result {
        Ok(r) => Some(r.value),
        Err(CallError::Budget) => {
            report.pending += 1;
            work.report.notes.push(format!(
                "skills: token budget reached; procedure {id} left for the next cycle (budget.tokens_per_cycle = {})",
                ctx.budget.cap()
            ));
            None
        }
        Err(e) => {
            report.pending += 1;
            work.report.degraded.push(Degraded {
                stage: "skills".into(),
                reason: format!("procedure {id} left for the next cycle: {e}"),
            });
            None
        }
    }
}

/// What the stage's drafts add up to: files to commit, their lines, and the names taken.
struct Drafted {
    change: Change,
    lines: Vec<String>,
    taken: BTreeSet<String>,
}

/// A procedure's draft as the gate judged it.
struct Proposal<'a> {
    p: &'a Procedure,
    id: &'a str,
    members: Vec<&'a Instance>,
    reply: SkillReply,
    g: gate::Gated,
    name: String,
}

/// Gate a model's draft against the instances it was drafted from.
fn gate_reply<'a>(
    ctx: &Ctx<'_>,
    (p, id): &'a (&'a Procedure, String),
    instances: &'a [Instance],
    reply: SkillReply,
    taken: &BTreeSet<String>,
) -> Proposal<'a> {
    let members: Vec<&Instance> = p.members.iter().map(|&m| &instances[m]).collect();
    let prov = provenance(p, id, instances, &ctx.cycle_id);
    let ev = Evidence::new(
        &members,
        &format!("{} {} {}", prov.seen, p.days, p.sessions),
    );
    let g = gate::gate(
        &reply,
        &ev,
        p.cohesion,
        taken,
        &prov,
        ctx.config.skills.min_confidence,
    );
    let name = g.draft.front.name.clone();
    Proposal {
        p,
        id,
        members,
        reply,
        g,
        name,
    }
}

/// Write a gated draft where its route sends it (a draft, a card, nothing); its target and reason.
fn route_proposal(
    ctx: &Ctx<'_>,
    tx: &Connection,
    proposal: &Proposal<'_>,
    out: &mut Drafted,
) -> Result<(Option<String>, String)> {
    let Proposal {
        p,
        id,
        members,
        reply,
        g,
        name,
    } = proposal;
    let summary = format!(
        "({} instances, {} days, {} sessions, confidence {:.3})",
        members.len(),
        p.days,
        p.sessions,
        g.confidence
    );
    Ok(match &g.route {
        Route::Draft => {
            let path = format!("{DRAFTS_DIR}/{name}/{SKILL_FILE}");
            out.change.write(path.clone(), g.document.clone());
            out.lines.push(format!("drafted    {path}  {summary}"));
            out.taken.insert(name.clone());
            (Some(path), String::new())
        }
        Route::Queue(why) => {
            let card = skill_card(ctx, tx, p, id, members, &reply.reason, g, why)?;
            out.change.write(card.path(), card.render());
            out.lines.push(format!(
                "queued     {}  skill {name}  {summary} -- {why}",
                card.id
            ));
            out.taken.insert(name.clone());
            (Some(card.path()), why.clone())
        }
        Route::Refuse(why) => {
            out.lines.push(format!(
                "refused    {id}  skill {name:?}  {summary} -- {why}"
            ));
            (None, why.clone())
        }
    })
}

/// Count the decision in the report and keep its record as a candidate row.
fn record_decision(
    ctx: &Ctx<'_>,
    tx: &Connection,
    proposal: &Proposal<'_>,
    target: Option<String>,
    reason: String,
    report: &mut SkillsReport,
) -> Result<()> {
    let Proposal {
        p,
        id,
        members,
        reply,
        g,
        name,
    } = proposal;
    report.proposed += 1;
    match g.route {
        Route::Draft => report.drafted += 1,
        Route::Queue(_) => report.queued += 1,
        Route::Refuse(_) => report.refused += 1,
    }
    let label = g.route.label();
    report.decisions.push(SkillDecision {
        procedure: id.to_string(),
        route: label.into(),
        name: name.clone(),
        target: target.clone(),
        confidence: g.confidence,
        reason: reason.clone(),
    });
    let record = serde_json::json!({
        "kind": "skill",
        "name": name,
        "description": g.draft.front.description,
        "route": label,
        "target": target,
        "reason": reason,
        "confidence": g.confidence,
        "cohesion": p.cohesion,
        "proposerReason": reply.reason,
        "supportingEventIds": members.iter().flat_map(|i| i.event_ids()).collect::<Vec<_>>(),
        "instances": members.len(),
        "days": p.days,
        "sessions": p.sessions,
        "gates": g.gates,
    });
    state::put_candidate(
        tx,
        id,
        &ctx.cycle_id,
        &format!("skill-{label}"),
        name,
        &record,
    )
}

/// Log the stage's figures, commit its drafts and cards, and put its report in the cycle's.
fn commit_drafts(
    ctx: &Ctx<'_>,
    work: &mut Work,
    out: Drafted,
    report: SkillsReport,
    spent_before: u64,
) {
    tracing::info!(
        instances = report.instances,
        recurring = report.recurring,
        covered = report.covered.len(),
        drafted = report.drafted,
        queued = report.queued,
        refused = report.refused,
        "skills"
    );
    if !out.change.is_empty() {
        let subject = format!(
            "dream: {} cycle {}: skills: {} drafted, {} queued, {} refused",
            ctx.opts.kind.as_str(),
            ctx.today,
            report.drafted,
            report.queued,
            report.refused
        );
        let tokens = ctx.budget.spend().spent.saturating_sub(spent_before);
        work.push_stage(ctx, Stage::Skills, out.change, &subject, &out.lines, tokens);
    }
    work.report.skills = report;
}

#[allow(clippy::too_many_arguments)]
fn skill_card(
    ctx: &Ctx<'_>,
    tx: &Connection,
    p: &Procedure,
    id: &str,
    members: &[&Instance],
    proposer_reason: &str,
    g: &gate::Gated,
    why: &str,
) -> Result<SkillCard> {
    let typical = members[0];
    let ids = typical
        .calls
        .iter()
        .map(|c| c.event_id.clone())
        .collect::<Vec<_>>();
    let stored = state::events_by_ids(tx, &ids)?;
    let excerpts = stored.iter().map(|s| Excerpt::of(&s.event)).collect();
    let name = &g.draft.front.name;
    Ok(SkillCard {
        kind: CardKind::Skill,
        id: text_id("c", &format!("skill {name}")),
        created: ctx.opts.now,
        updated: ctx.opts.now,
        cycle: ctx.cycle_id.clone(),
        name: name.clone(),
        description: g.draft.front.description.clone(),
        procedure: id.to_string(),
        confidence: g.confidence,
        reason: why.to_string(),
        proposer_reason: proposer_reason.to_string(),
        instances: members.len(),
        days: p.days,
        sessions: p.sessions,
        supporting_event_ids: members.iter().flat_map(|i| i.event_ids()).collect(),
        gates: g.gates.clone(),
        excerpts,
        document: g.document.clone(),
        decision: None,
    })
}
