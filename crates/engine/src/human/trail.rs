//! Reading the audit trail back (SPEC S9, S4 step 10): `dream explain ID` and `dream log`.
//!
//! Both only read: the repository's files and git history through `store`, candidate
//! records, events, cycle records and vetoes through a read-only `state`. `explain` takes
//! an id with any prefix (`f_`, `c_`, `k_`) or the bare 8-hex stem, and since a fact, the
//! card it came from and the candidate behind both share that stem, it shows all of them:
//! the fact, the card, every cycle's record of the candidate (every measure and gate with
//! its value and threshold, the route and its reason), the supporting events, any veto,
//! the gates re-measured now against the supporting events, and the commits that touched
//! it. `log` groups commits by their `Dream-Cycle` trailer and adds the cycles that
//! changed nothing (so made no commit) from the state's cycle records, with their refusals.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::edges::state::{self, Connection, State};
use crate::edges::store::Store;
use crate::error::{Error, Result};
use crate::human::oversight::{self, HISTORY_LIMIT};
use dream_core::memory::review;
use dream_core::operations::audit::{self, CycleLog, Mutation};
use dream_core::schema::contract::{EventView, Proposal};
use dream_core::schema::settings::Config;
use dream_core::schema::{self, Block, Card, Fact, GateName, GateResult};
use dream_core::selection::gates::{self, Evidence};
use dream_core::selection::veto::Veto;

/// A fact as `explain` shows it: active or archived.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FactInfo {
    pub id: String,
    pub text: String,
    pub status: String,
    pub block: String,
    pub category: String,
    pub origin: String,
    pub first_seen: NaiveDate,
    pub last_seen: NaiveDate,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<NaiveDate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<NaiveDate>,
    pub supporting_event_ids: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived: Option<ArchiveInfo>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ArchiveInfo {
    pub on: NaiveDate,
    pub why: String,
    pub reason: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub policy: String,
}

/// One cycle's record of a candidate.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CandidateInfo {
    pub id: String,
    pub cycle: String,
    pub route: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub text: String,
    pub reason: String,
    pub judge: String,
    pub supporting_event_ids: Vec<String>,
    pub measures: Value,
    pub gates: Vec<GateResult>,
}

/// A supporting event.
#[derive(Debug, Clone, Serialize)]
pub struct EventInfo {
    pub id: String,
    pub ts: DateTime<Utc>,
    pub session: String,
    pub kind: String,
    pub trust: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub actor: String,
    pub text: String,
}

/// A commit that touched the item.
#[derive(Debug, Clone, Serialize)]
pub struct CommitInfo {
    #[serde(flatten)]
    pub head: audit::CommitHead,
    /// The commit's mutation lines that name the item.
    pub lines: Vec<String>,
}

/// Everything known about an id.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    pub query: String,
    pub stem: String,
    pub facts: Vec<FactInfo>,
    pub cards: Vec<Card>,
    pub candidates: Vec<CandidateInfo>,
    pub events: Vec<EventInfo>,
    pub vetoes: Vec<Veto>,
    /// The gates measured again now, for each fact, against its supporting events.
    pub remeasured: Vec<(String, Vec<GateResult>)>,
    pub commits: Vec<CommitInfo>,
    /// The recall quiz's questions about these facts, newest first (failing ones name the
    /// mutation that touched the fact).
    pub quiz: Vec<QuizInfo>,
}

/// One quiz question about a fact, with the cycle that asked it.
#[derive(Debug, Clone, Serialize)]
pub struct QuizInfo {
    pub cycle: String,
    pub at: String,
    #[serde(flatten)]
    pub outcome: dream_core::recall::quiz::Outcome,
}

fn fact_info(f: &Fact, block: Block, archived: Option<ArchiveInfo>) -> FactInfo {
    FactInfo {
        id: f.id.clone(),
        text: f.text.clone(),
        status: if archived.is_some() {
            "archived"
        } else {
            "active"
        }
        .into(),
        block: block.as_str().into(),
        category: f.category.clone(),
        origin: f.origin.as_str().into(),
        first_seen: f.first_seen,
        last_seen: f.last_seen,
        valid_from: f.valid_from,
        valid_to: f.valid_to,
        supporting_event_ids: f.support.clone(),
        archived,
    }
}

/// A candidate record as the state stores it (`state::candidate_records`), read as `explain`
/// shows it.
pub fn candidate_info(id: &str, cycle: &str, route: &str, r: &Value) -> CandidateInfo {
    let s = |k: &str| r[k].as_str().unwrap_or_default().to_string();
    CandidateInfo {
        id: id.into(),
        cycle: cycle.into(),
        route: route.into(),
        target: r["target"].as_str().map(str::to_string),
        text: s("text"),
        reason: s("reason"),
        judge: s("judge"),
        supporting_event_ids: serde_json::from_value(r["supportingEventIds"].clone())
            .unwrap_or_default(),
        measures: r["measures"].clone(),
        gates: serde_json::from_value(r["gates"].clone()).unwrap_or_default(),
    }
}

/// Explain an id: the facts, cards and candidate records that share its stem, the events
/// they cite, any veto, the gates measured again now, the quiz's questions about the facts,
/// and the commits that touched any of it. An id nothing is known about is an input error.
pub fn explain(root: &Path, config: &Config, today: NaiveDate, query: &str) -> Result<Explanation> {
    let store = Store::open(root)?;
    let stem = review::stem(query).to_string();
    let mut ex = Explanation {
        query: query.into(),
        stem: stem.clone(),
        facts: facts_of(&store, today, &stem)?,
        cards: Vec::new(),
        candidates: Vec::new(),
        events: Vec::new(),
        vetoes: Vec::new(),
        remeasured: Vec::new(),
        commits: Vec::new(),
        quiz: Vec::new(),
    };
    ex.cards = cards_of(&store, &stem, &ex.facts)?;
    let state = State::open_read_only(root)?;
    if let Some(st) = &state {
        ex.candidates = candidates_of(&st.conn, &stem, &ex.facts, &ex.cards)?;
        ex.vetoes = vetoes_of(&st.conn, &stem, &ex.facts, &ex.cards)?;
    }
    let ids = supporting_ids(&ex);
    let whole = match &state {
        Some(st) => stored_events(&st.conn, &ids, &mut ex.events)?,
        None => HashMap::new(),
    };
    add_card_excerpts(&ex.cards, &mut ex.events);
    ex.events
        .sort_by(|a, b| a.ts.cmp(&b.ts).then(a.id.cmp(&b.id)));
    ex.remeasured = ex
        .facts
        .iter()
        .filter(|f| !f.supporting_event_ids.is_empty())
        .map(|f| (f.id.clone(), remeasure(f, &ex.events, &whole, config)))
        .collect();
    if let Some(st) = &state {
        ex.quiz = quiz_of(&st.conn, &ex.facts)?;
    }
    if ex.facts.is_empty() && ex.cards.is_empty() && ex.candidates.is_empty() {
        return Err(Error::Input(format!(
            "nothing is known about {query}: no fact in memory/ or archive/, no card under review/, no candidate record in the state database"
        )));
    }
    ex.commits = commits_touching(&store, &ex)?;
    Ok(ex)
}

/// `id` shares the stem `stem` (the same 8-hex stem, whatever its prefix).
fn same_stem(id: &str, stem: &str) -> bool {
    review::stem(id) == stem
}

/// The facts with this stem: active ones in memory, then archived ones.
fn facts_of(store: &Store, today: NaiveDate, stem: &str) -> Result<Vec<FactInfo>> {
    let mut facts = Vec::new();
    let memory = store.load_memory(today)?;
    for (b, f) in memory.facts().filter(|(_, f)| same_stem(&f.id, stem)) {
        facts.push(fact_info(f, b, None));
    }
    let archive = review::parse_archive(store.read(schema::ARCHIVE)?.as_deref());
    for a in review::archived(&archive)
        .into_iter()
        .filter(|a| same_stem(&a.fact.id, stem))
    {
        let info = ArchiveInfo {
            on: a.archived,
            why: a.why.clone(),
            reason: a.reason.clone(),
            policy: a.policy.clone(),
        };
        facts.push(fact_info(&a.fact, a.block, Some(info)));
    }
    Ok(facts)
}

/// The cards with this stem: pending ones, then the decided ones of the same base stem or
/// that became one of `facts`, in the order they were decided.
fn cards_of(store: &Store, stem: &str, facts: &[FactInfo]) -> Result<Vec<Card>> {
    let (pending, _) = store.pending_cards()?;
    let base = stem.split('-').next().unwrap_or(stem);
    let mut cards: Vec<Card> = pending
        .into_iter()
        .filter(|c| same_stem(&c.id, stem))
        .collect();
    let became = |c: &Card| {
        c.decision
            .as_ref()
            .and_then(|d| d.fact_id.as_ref())
            .is_some_and(|f| facts.iter().any(|x| &x.id == f))
    };
    let mut decided: Vec<Card> = oversight::decided_cards(store)
        .into_iter()
        .filter(|c| review::stem(&c.id).split('-').next() == Some(base) || became(c))
        .collect();
    decided.sort_by_key(|c| c.decision.as_ref().map(|d| d.at));
    cards.extend(decided);
    Ok(cards)
}

/// Every cycle's record of the candidate with this stem and of the candidates that
/// targeted one of the facts or cards, each (candidate, cycle) once, by cycle.
fn candidates_of(
    conn: &Connection,
    stem: &str,
    facts: &[FactInfo],
    cards: &[Card],
) -> Result<Vec<CandidateInfo>> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut push = |id: &str, cycle: String, route: String, r: Value| {
        if seen.insert((id.to_string(), cycle.clone())) {
            out.push(candidate_info(id, &cycle, &route, &r));
        }
    };
    let k = format!("k_{stem}");
    for (cycle, route, r) in state::candidate_records(conn, &k)? {
        push(&k, cycle, route, r);
    }
    let targets = facts
        .iter()
        .map(|f| f.id.as_str())
        .chain(cards.iter().map(|c| c.id.as_str()));
    for t in targets {
        for (cycle, route, r) in state::candidates_targeting(conn, t)? {
            let id = schema::text_id("k", r["text"].as_str().unwrap_or_default());
            push(&id, cycle, route, r);
        }
    }
    out.sort_by(|a, b| a.cycle.cmp(&b.cycle).then(a.id.cmp(&b.id)));
    Ok(out)
}

/// The vetoes of the facts, of the candidates behind the cards, or of this stem (none in a
/// state database older than the vetoes).
fn vetoes_of(
    conn: &Connection,
    stem: &str,
    facts: &[FactInfo],
    cards: &[Card],
) -> Result<Vec<Veto>> {
    if !state::has_vetoes(conn) {
        return Ok(Vec::new());
    }
    let ids: HashSet<String> = facts
        .iter()
        .map(|f| f.id.clone())
        .chain(cards.iter().map(|c| format!("c_{}", base_of(&c.id))))
        .collect();
    Ok(state::vetoes(conn)?
        .into_iter()
        .filter(|v| ids.contains(&v.id) || same_stem(&v.id, stem))
        .collect())
}

/// The supporting events of everything found, each once: the facts', the cards', then the
/// candidates'.
fn supporting_ids(ex: &Explanation) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    let all = ex
        .facts
        .iter()
        .map(|f| &f.supporting_event_ids)
        .chain(ex.cards.iter().map(|c| &c.supporting_event_ids))
        .chain(ex.candidates.iter().map(|c| &c.supporting_event_ids));
    for id in all.flatten() {
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    ids
}

/// The stored events `ids` name, shown as excerpts in `events`; returned, the whole text of
/// each and whether it was recalled, for the re-measure (the gates measured the whole
/// text, not the excerpt shown).
fn stored_events(
    conn: &Connection,
    ids: &[String],
    events: &mut Vec<EventInfo>,
) -> Result<HashMap<String, (String, bool)>> {
    let mut whole = HashMap::new();
    for s in state::events_by_ids(conn, ids)? {
        whole.insert(s.event.id.clone(), (s.event.text.clone(), s.event.recalled));
        events.push(EventInfo {
            id: s.event.id.clone(),
            ts: s.event.ts,
            session: s.event.session.clone().unwrap_or_default(),
            kind: s.event.kind.clone(),
            trust: s.event.trust.as_str().into(),
            actor: s.event.actor.clone().unwrap_or_default(),
            text: schema::excerpt(&s.event.text, 300),
        });
    }
    Ok(whole)
}

/// The cards' own excerpts of events the state database does not hold (a state rebuilt,
/// or events purged).
fn add_card_excerpts(cards: &[Card], events: &mut Vec<EventInfo>) {
    for c in cards {
        for e in &c.excerpts {
            if !events.iter().any(|x| x.id == e.id) {
                events.push(EventInfo {
                    id: e.id.clone(),
                    ts: e.ts,
                    session: e.session.clone(),
                    kind: "message".into(),
                    trust: e.trust.clone(),
                    actor: e.actor.clone(),
                    text: e.text.clone(),
                });
            }
        }
    }
}

/// A fact's gates measured again now against its supporting events (their whole text
/// where the state holds it), as `verify` would: the gates that depend on the evidence.
fn remeasure(
    f: &FactInfo,
    events: &[EventInfo],
    whole: &HashMap<String, (String, bool)>,
    config: &Config,
) -> Vec<GateResult> {
    let events: Vec<EventView> = events
        .iter()
        .filter(|e| f.supporting_event_ids.contains(&e.id))
        .map(|e| EventView {
            id: e.id.clone(),
            ts: e.ts,
            session: e.session.clone(),
            kind: e.kind.clone(),
            trust: dream_core::sources::event::Trust::parse(&e.trust)
                .unwrap_or(dream_core::sources::event::Trust::External),
            recalled: whole.get(&e.id).is_some_and(|w| w.1),
            new: true,
            text: whole
                .get(&e.id)
                .map_or_else(|| e.text.clone(), |w| w.0.clone()),
            actor: e.actor.clone(),
        })
        .collect();
    let p = Proposal {
        text: f.text.clone(),
        category: f.category.clone(),
        block: f.block.clone(),
        supporting_event_ids: f.supporting_event_ids.clone(),
        confidence: 1.0,
        reason: String::new(),
    };
    let none = HashSet::new();
    let g = gates::gate_proposal(
        &p,
        &Evidence::new(&events, &none).owned_by(&config.owner.names),
        config,
    );
    g.gates
        .into_iter()
        .filter(|g| GateName::parse(&g.gate).is_some_and(remeasured))
        .collect()
}

/// The recall quiz's questions about the facts (at most 10 each), newest first.
fn quiz_of(conn: &Connection, facts: &[FactInfo]) -> Result<Vec<QuizInfo>> {
    let ids: BTreeSet<&str> = facts.iter().map(|f| f.id.as_str()).collect();
    let mut quiz = Vec::new();
    for id in ids {
        for (cycle, at, outcome) in state::quiz_of_fact(conn, id, 10)? {
            quiz.push(QuizInfo { cycle, at, outcome });
        }
    }
    quiz.sort_by(|a, b| b.at.cmp(&a.at));
    Ok(quiz)
}

/// The commits, oldest first, that touched the facts, cards or candidates: a mutation line
/// or the subject names one, a card's file changed, or a fact's metadata is in the diff.
fn commits_touching(store: &Store, ex: &Explanation) -> Result<Vec<CommitInfo>> {
    let mut needles: Vec<String> = ex.facts.iter().map(|f| f.id.clone()).collect();
    needles.extend(ex.cards.iter().map(|c| c.id.clone()));
    needles.extend(ex.candidates.iter().map(|c| c.id.clone()));
    needles.sort();
    needles.dedup();
    let fact_needles: Vec<String> = ex.facts.iter().map(|f| format!("id={} ", f.id)).collect();
    let card_paths: Vec<String> = ex.cards.iter().map(|c| format!("{}.md", c.id)).collect();
    let mut commits = Vec::new();
    for c in store.recent_commits(HISTORY_LIMIT)? {
        let note = c.note();
        let named = |s: &str| needles.iter().any(|n| mentions(s, n));
        let lines: Vec<String> = note
            .mutations
            .iter()
            .filter(|m| named(&m.text))
            .map(Mutation::line)
            .collect();
        let mut touched = !lines.is_empty() || named(&note.head.subject);
        if !touched && !card_paths.is_empty() {
            touched = store
                .changed_paths(&c.id.to_string())?
                .iter()
                .any(|p| card_paths.iter().any(|cp| p.ends_with(&format!("/{cp}"))));
        }
        if !touched && !fact_needles.is_empty() {
            touched = store.diff_mentions(&c.id.to_string(), &fact_needles)?;
        }
        if touched {
            commits.push(CommitInfo {
                head: note.head.clone(),
                lines,
            });
        }
    }
    commits.reverse();
    Ok(commits)
}

/// `text` names `id` as a whole word (so `f_1a2b3c4d` does not match `f_1a2b3c4d-2`).
fn mentions(text: &str, id: &str) -> bool {
    text.match_indices(id).any(|(at, _)| {
        let after = text[at + id.len()..].chars().next();
        let before = text[..at].chars().next_back();
        !after.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-')
            && !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

fn base_of(id: &str) -> &str {
    let s = review::stem(id);
    s.split('-').next().unwrap_or(s)
}

/// The audit trail, newest cycle first: commits grouped by cycle, plus the cycles that
/// changed nothing (from the state database), with their refusals.
pub fn log(root: &Path) -> Result<Vec<CycleLog>> {
    let store = Store::open(root)?;
    let notes: Vec<audit::CommitNote> = store
        .recent_commits(HISTORY_LIMIT)?
        .into_iter()
        .map(|c| c.note())
        .collect();
    let mut groups = audit::group(notes);
    if let Some(st) = State::open_read_only(root)? {
        for c in state::recent_cycles(&st.conn, usize::MAX >> 1)? {
            let r = &c.report;
            // The refusals to show, and how many there were.
            let refusals = || -> (Vec<Mutation>, usize) {
                let mut listed: Vec<Mutation> = r["decisions"]
                    .as_array()
                    .map(|v| v.as_slice())
                    .unwrap_or_default()
                    .iter()
                    .filter(|d| d["route"] == "refused")
                    .map(|d| Mutation {
                        kind: "refused",
                        verb: "refused".into(),
                        text: format!(
                            "{}  {:?}  -- {}",
                            d["candidate"].as_str().unwrap_or_default(),
                            schema::excerpt(d["text"].as_str().unwrap_or_default(), 120),
                            d["reason"].as_str().unwrap_or_default()
                        ),
                    })
                    .collect();
                // A report lists its first rows only (`report::MAX_DECISION_ROWS`) and
                // counts every refusal by gate: say how many more there were.
                let counted: u64 = r["refused_by_gate"]
                    .as_object()
                    .map_or(0, |m| m.values().filter_map(|n| n.as_u64()).sum());
                let count = listed.len().max(counted as usize);
                let more = count - listed.len();
                if more > 0 {
                    listed.push(Mutation {
                        kind: "refused",
                        verb: "refused".into(),
                        text: format!(
                            "... and {more} more, not listed in the cycle's report (`dream explain` takes a candidate's id)"
                        ),
                    });
                }
                (listed, count)
            };
            let spent = r["tokens"]["spent"].as_u64().unwrap_or(0);
            let quiz: Option<dream_core::recall::quiz::Quiz> =
                serde_json::from_value(r["quiz"].clone()).ok();
            let quiz_failures: Vec<String> = quiz
                .as_ref()
                .map(|q| q.failures.iter().map(|f| f.line()).collect())
                .unwrap_or_default();
            if let Some(g) = groups.iter_mut().find(|g| g.cycle == c.id) {
                if let Some(q) = &quiz {
                    g.quiz = Some(q.summary.clone());
                    g.quiz_failures = quiz_failures.clone();
                }
                // The cycle record counts every token, also those of stages that changed
                // nothing (and so made no commit), and every refusal, also those of a cycle
                // whose only commit recorded hand edits.
                g.tokens = g.tokens.max(spent);
                if g.refusals.is_empty() {
                    (g.refusals, g.refused) = refusals();
                }
                continue;
            }
            let (refusals, refused) = refusals();
            groups.push(CycleLog {
                cycle: c.id.clone(),
                kind: c.kind.clone(),
                time: c.finished,
                tokens: spent,
                applied: 0,
                refused,
                engine: 0,
                degraded: r["degraded"]
                    .as_array()
                    .map(|v| v.as_slice())
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|d| d["stage"].as_str().map(str::to_string))
                    .collect(),
                undone_by: None,
                no_commit: true,
                refusals,
                commits: Vec::new(),
                quiz: quiz.map(|q| q.summary),
                quiz_failures,
            });
        }
    }
    groups.sort_by_key(|b| std::cmp::Reverse(b.time));
    Ok(groups)
}

/// Whether `dream explain` shows a gate measured again against a fact's events as they are
/// now. Exhaustive, so a new gate is a decision here, not silently left out: the rows about
/// what a fact rests on are; the rows about a proposal in flight (its text and block as the
/// model wrote them, its dates, whether its events were new to the cycle) and routing's
/// rows (its confidence, corroboration, the judge) are not.
fn remeasured(gate: GateName) -> bool {
    match gate {
        GateName::Ids
        | GateName::Floor
        | GateName::Trust
        | GateName::Secret
        | GateName::Entities
        | GateName::Coverage
        | GateName::Salience => true,
        GateName::Text
        | GateName::Recalled
        | GateName::NewEvidence
        | GateName::Block
        | GateName::Dates
        | GateName::Veto
        | GateName::Confidence
        | GateName::Support
        | GateName::Days
        | GateName::Traceable
        | GateName::Owner
        | GateName::Judge => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edges::state::{put_cycle, CycleRecord};

    #[test]
    fn a_cycle_without_a_commit_counts_the_refusals_its_report_did_not_list() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        Store::init_repo(root).unwrap();
        let state = State::open(root).unwrap();
        let at = chrono::Utc::now();
        let report = serde_json::json!({
            "decisions": [{"candidate": "k_00000001", "route": "refused",
                           "text": "Lunch was fine.", "reason": "below KEEP", "gate": "salience"}],
            "decisions_not_listed": 4,
            "refused_by_gate": {"salience": 5},
        });
        put_cycle(
            &state.conn,
            &CycleRecord {
                id: "c1".into(),
                kind: "evening".into(),
                started: at,
                finished: at,
                now: at,
                report,
            },
        )
        .unwrap();
        drop(state);
        let logs = log(root).unwrap();
        let c = logs
            .iter()
            .find(|g| g.cycle == "c1")
            .expect("the cycle's log");
        assert_eq!(c.refused, 5, "every refusal counted");
        let lines: Vec<&str> = c.refusals.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].contains("Lunch was fine."), "{lines:?}");
        assert!(
            lines[1].starts_with("... and 4 more, not listed in the cycle's report"),
            "{lines:?}"
        );
    }
}
