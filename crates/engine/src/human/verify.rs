//! `dream verify` (SPEC S12): re-audit a memory repository independently of the code that
//! wrote it.
//!
//! Nothing here calls the cycle's gates. The audit reads the files, the git history
//! (through `store`'s read-only helpers) and the event texts in the state database, and
//! re-measures everything with the S6 measures directly:
//!
//! - every accepted or engine-enforced mutation in a pass commit, against memory as it was
//!   before that commit and as it was after (similarity, coverage, names, blocks,
//!   protection, staleness, capacity and salience), and the commit's declared counts;
//! - every entry added to `archive/facts.md` by any commit (a person's included) or left
//!   in the working tree, against what it claims (a duplicate of what, forgotten under
//!   which policy);
//! - that no dream commit removed a fact from memory without archiving it, and that the
//!   pass commits of a cycle run with the loss guard on archived at most
//!   `retention.max_loss_share` of the facts active before them and no protected fact
//!   whose words the fact kept in its place lacks;
//! - that every active fact is traceable to its supporting events (no name absent from
//!   them; full coverage for auto-promoted and merged facts, `promote.min_coverage` for
//!   facts a person accepted from review), facts the owner wrote being trusted;
//! - that no line of a memory file (the archive included) or pending card holds a secret,
//!   named by file, line and rule;
//! - that dream.toml loads;
//! - that the counts of every cycle commit and every recorded cycle report balance.
//!
//! The thresholds are restated here from the spec rather than imported from the pass code,
//! so a change to one side that breaks the contract shows up as a problem.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::LazyLock;

use chrono::NaiveDate;
use git2::Oid;
use regex::Regex;
use serde::Serialize;

use crate::edges::state::{self, State};
use crate::edges::store::{HistoryCommit, Store};
use crate::error::Result;
use dream_core::schema::settings::{self, Config, Retention};
use dream_core::schema::{self, Archived, Block, BlockFile, Fact, Memory, Origin};
use dream_core::selection::keep;
use dream_core::sources::event::Stored;
use dream_core::sources::secrets;
use dream_core::text::measures::{self, EntityKind};

/// S4 step 9: duplicates are at least this similar.
const DUPLICATE_SIMILARITY: f64 = 0.9;
/// The fact kept for a duplicate holds at least this share of the dropped one's words.
const KEPT_COVERAGE: f64 = 0.8;
/// Measured values are recorded to three decimals.
const TOLERANCE: f64 = 0.0005;
const PASS_STAGES: [&str; 4] = ["dedupe", "merge", "promote", "forget"];
const TARGET_BLOCKS: [Block; 3] = [Block::Persona, Block::Human, Block::Episodes];

/// One thing wrong with the repository.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Problem {
    /// `mutation`, `archive`, `deleted`, `loss`, `trace`, `secret`, `counts`, `head`,
    /// `config`.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fact: Option<String>,
    pub message: String,
}

/// What `dream verify` checked and found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Verification {
    pub ok: bool,
    pub commits: usize,
    /// Commits written by dream cycles (a `Dream-Stage` other than `manual`).
    pub cycle_commits: usize,
    /// Pass mutations re-measured against their gates.
    pub mutations: usize,
    /// Archive entries re-checked against what they claim.
    pub archive_entries: usize,
    pub active_facts: usize,
    /// Active facts traced to their supporting events.
    pub traced: usize,
    /// Active facts the owner wrote (trusted without events).
    pub trusted: usize,
    /// Cycle reports in the state database whose counts were checked.
    pub cycle_reports: usize,
    /// Kept lines whose recorded salience was checked against its threshold (and scored
    /// again, when this binary's salience model recorded it).
    pub salience_checked: usize,
    pub notes: Vec<String>,
    pub problems: Vec<Problem>,
}

impl Verification {
    /// The result as a person reads it.
    pub fn render(&self) -> String {
        let mut o = format!(
            "dream verify: {} commits ({} by cycles), {} pass mutations re-measured, {} archive entries, \
             {} active facts ({} traced to their events, {} written by the owner), {} cycle reports, \
             {} kept lines' salience\n",
            self.commits,
            self.cycle_commits,
            self.mutations,
            self.archive_entries,
            self.active_facts,
            self.traced,
            self.trusted,
            self.cycle_reports,
            self.salience_checked
        );
        for n in &self.notes {
            o.push_str(&format!("  note: {n}\n"));
        }
        if self.problems.is_empty() {
            o.push_str("ok: every check passed\n");
        } else {
            o.push_str(&format!(
                "{} problem{}:\n",
                self.problems.len(),
                if self.problems.len() == 1 { "" } else { "s" }
            ));
            for p in &self.problems {
                let mut at = Vec::new();
                if let Some(c) = &p.commit {
                    at.push(c.clone());
                }
                if let Some(f) = &p.fact {
                    at.push(f.clone());
                }
                if at.is_empty() {
                    o.push_str(&format!("  [{}] {}\n", p.kind, p.message));
                } else {
                    o.push_str(&format!("  [{}] {}: {}\n", p.kind, at.join(" "), p.message));
                }
            }
        }
        o
    }
}

/// Memory, archive and config as they were at one point of the history.
struct Snap {
    facts: BTreeMap<String, (Block, Fact)>,
    archive: Vec<String>,
    config: Config,
    /// The commit it was read from (`None`: the working tree).
    at: Option<Oid>,
}

impl Snap {
    fn new(
        memory: Memory,
        archive: Option<String>,
        config_text: Option<String>,
        notes: &mut Vec<String>,
        at: &str,
    ) -> Snap {
        let facts = memory
            .facts()
            .filter(|(_, f)| !f.id.is_empty())
            .map(|(b, f)| (f.id.clone(), (b, f.clone())))
            .collect();
        let archive = archive
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect();
        let env: BTreeMap<String, String> = crate::config::environment().unwrap_or_default();
        let config = match config_text {
            None => Config::default(),
            Some(t) => Config::parse(&t, settings::FILE, &env).unwrap_or_else(|e| {
                notes.push(format!(
                    "{at}: dream.toml does not load ({e}); audited with the defaults"
                ));
                Config::default()
            }),
        };
        Snap {
            facts,
            archive,
            config,
            at: None,
        }
    }

    fn archived(&self) -> impl Iterator<Item = Archived> + '_ {
        self.archive.iter().filter_map(|l| Archived::parse(l))
    }

    /// Active facts outside the episodes: what `retention.max_active_facts` counts (the
    /// episodes have their own cap, `episodes.max_facts`).
    fn durable(&self) -> usize {
        self.facts
            .values()
            .filter(|(b, _)| *b != Block::Episodes)
            .count()
    }
}

struct Auditor {
    store: Store,
    v: Verification,
    /// Archive entries the transition being audited added.
    added: Vec<Archived>,
    /// Facts pinned by pending review cards, per commit (read when a forget needs them).
    pins: HashMap<Oid, BTreeSet<String>>,
    /// The state database, read only, for the days agents used facts (the unused policy).
    state: Option<State>,
    /// Per cycle with the loss guard on: facts active before its first pass commit, facts
    /// its pass commits archived, and whether a problem was already reported.
    loss: BTreeMap<String, (usize, usize, bool)>,
}

/// Audit the repository at `root`.
pub fn verify(root: &Path) -> Result<Verification> {
    let store = Store::open(root)?;
    let mut a = Auditor {
        store,
        v: Verification::default(),
        added: Vec::new(),
        pins: HashMap::new(),
        state: State::open_read_only(root)?,
        loss: BTreeMap::new(),
    };
    // dream commits only onto a branch: a detached HEAD, or one naming a branch that does
    // not exist while history lives on another, is a finding (the next cycle refuses it).
    if let Err(e) = a.store.branch() {
        a.push(problem("head", None, None, e.to_string()));
    }
    a.history()?;
    a.active(root)?;
    a.cycle_reports(root)?;
    a.v.ok = a.v.problems.is_empty();
    Ok(a.v)
}

fn problem(kind: &str, commit: Option<&str>, fact: Option<&str>, message: String) -> Problem {
    Problem {
        kind: kind.into(),
        commit: commit.map(str::to_string),
        fact: fact.map(str::to_string),
        message,
    }
}

/// The day a commit's cycle ran (its `Dream-Cycle` trailer), else the commit's own date.
fn cycle_day(c: &HistoryCommit) -> NaiveDate {
    c.trailer("Dream-Cycle")
        .and_then(|id| NaiveDate::parse_from_str(id.get(..8)?, "%Y%m%d").ok())
        .unwrap_or_else(|| c.time.date_naive())
}

/// What a kept line of a consolidation commit records of its salience: `salience S >= T`,
/// or `salience S, ` and why it was kept below a threshold (a standing instruction, a
/// habit, a preference), or that a purge lowered it ([`RESCORED_AFTER_PURGE`]).
pub(crate) static RECORDED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"salience (\d+\.\d+)(?: >= (\d+(?:\.\d+)?)|, (a standing instruction|a habit|a preference|re-scored after a purge))",
    )
    .unwrap()
});

/// What a kept line records when `dream purge` took words out of its fact and its score
/// fell below the threshold it had met: the line stays (a person asked for words out, not
/// for the fact to go), with the score its words now give.
pub(crate) const RESCORED_AFTER_PURGE: &str = "re-scored after a purge";

/// The texts of the owner's own statements among `events`: what a kept line was scored on.
pub(crate) fn owner_texts(events: &[state::Stored]) -> Vec<&str> {
    owner_statements(events)
        .map(|s| s.event.text.as_str())
        .collect()
}

/// The salience a kept line scores with this binary's model: its words' and its supporting
/// owner statements' (`keep::statements`, as the cycle scored it), the highest; `None` when
/// there is nothing to score.
pub(crate) fn score_kept(fact_text: &str, owners: &[&str]) -> Result<Option<f32>> {
    let scorer = crate::providers::salience::scorer();
    let mut again: Option<f32> = None;
    for said in keep::statements(fact_text, owners.iter().copied()) {
        let s = scorer.score(&said)?;
        again = Some(again.map_or(s, |a: f32| a.max(s)));
    }
    Ok(again)
}

impl Auditor {
    fn push(&mut self, p: Problem) {
        if !self.v.problems.contains(&p) {
            self.v.problems.push(p);
        }
    }

    fn snap_at(&mut self, id: Oid) -> Result<Snap> {
        let memory = self.store.memory_at(id, NaiveDate::MIN)?;
        let archive = self.store.read_at(id, schema::ARCHIVE)?;
        let config = self.store.read_at(id, settings::FILE)?;
        let at = id.to_string()[..10].to_string();
        let mut snap = Snap::new(memory, archive, config, &mut self.v.notes, &at);
        snap.at = Some(id);
        Ok(snap)
    }

    fn snap_worktree(&mut self) -> Result<Snap> {
        let memory = self.store.load_memory(NaiveDate::MIN)?;
        let archive = self.store.read(schema::ARCHIVE)?;
        let config = self.store.read(settings::FILE)?;
        Ok(Snap::new(
            memory,
            archive,
            config,
            &mut self.v.notes,
            "working tree",
        ))
    }

    /// Walk the history, oldest first, then the uncommitted working tree.
    fn history(&mut self) -> Result<()> {
        let commits = self.store.history()?;
        self.v.commits = commits.len();
        // The snapshot after one commit is the snapshot before the next.
        let mut last: Option<(Oid, Snap)> = None;
        for c in &commits {
            let stage = c.trailer("Dream-Stage").map(str::to_string);
            let by_cycle = stage.as_deref().is_some_and(|s| s != "manual");
            if by_cycle {
                self.v.cycle_commits += 1;
            }
            if stage.as_deref() == Some("consolidate") {
                self.consolidate_counts(c);
            }
            let Some(parent) = c.parent else { continue };
            let is_pass = stage.as_deref().is_some_and(|s| PASS_STAGES.contains(&s));
            let archive_changed = self.store.blob_at(c.id, schema::ARCHIVE)?
                != self.store.blob_at(parent, schema::ARCHIVE)?;
            if !(by_cycle || archive_changed) {
                continue;
            }
            let before = match last.take() {
                Some((id, snap)) if id == parent => snap,
                _ => self.snap_at(parent)?,
            };
            let after = self.snap_at(c.id)?;
            if stage.as_deref() == Some("consolidate") {
                self.salience_lines(c, &after)?;
            }
            self.added = added_entries(&before, &after);
            let covered = if is_pass {
                self.pass_commit(c, &before, &after)
            } else {
                BTreeSet::new()
            };
            self.archive_added(Some(&c.short()), cycle_day(c), &before, &after, &covered);
            if by_cycle {
                self.nothing_deleted(
                    &c.short(),
                    stage.as_deref().unwrap_or_default(),
                    &before,
                    &after,
                );
            }
            last = Some((c.id, after));
        }
        if self.store.is_dirty()? {
            if let Some(head) = self.store.head() {
                let before = self.snap_at(head)?;
                let after = self.snap_worktree()?;
                if before.archive != after.archive {
                    self.added = added_entries(&before, &after);
                    let today = commits.last().map(cycle_day).unwrap_or(NaiveDate::MIN);
                    self.archive_added(
                        Some("working tree"),
                        today,
                        &before,
                        &after,
                        &BTreeSet::new(),
                    );
                }
            }
        }
        Ok(())
    }

    /// Counts of a consolidation commit: its subject against its body lines.
    fn consolidate_counts(&mut self, c: &HistoryCommit) {
        static SUBJECT: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(
                r"(\d+) promoted, (?:(\d+) episodes, )?(\d+) queued, (\d+) reinforced, (\d+) refused",
            )
            .unwrap()
        });
        let short = c.short();
        let Some(caps) = SUBJECT.captures(c.subject()) else {
            self.push(problem(
                "counts",
                Some(&short),
                None,
                format!(
                    "the consolidation commit's subject {:?} does not state its counts",
                    c.subject()
                ),
            ));
            return;
        };
        let n = |i: usize| {
            caps.get(i)
                .and_then(|m| m.as_str().parse::<usize>().ok())
                .unwrap_or(0)
        };
        let count = |word: &str| {
            c.message
                .lines()
                .filter(|l| l.split_whitespace().next() == Some(word))
                .count()
        };
        let (promoted, episodes, refused) = (count("promoted"), count("episode"), count("refused"));
        if promoted != n(1)
            || episodes != n(2)
            || refused != n(5)
            || count("queued") > n(3)
            || count("reinforced") > n(4)
        {
            self.push(problem(
                "counts",
                Some(&short),
                None,
                format!(
                    "the subject says {} promoted, {} episodes and {} refused, the body lists {promoted} promoted, {episodes} episodes and {refused} refused",
                    n(1),
                    n(2),
                    n(5)
                ),
            ));
        }
        for l in c.message.lines().filter(|l| l.starts_with("refused ")) {
            if l.split_once(" -- ")
                .is_none_or(|(_, r)| r.trim().is_empty())
            {
                self.push(problem(
                    "counts",
                    Some(&short),
                    None,
                    format!("a refusal without a reason: {l}"),
                ));
            }
        }
    }

    /// Salience as well as corroboration (issue 28), restated: every line a consolidation
    /// commit kept (an episode, a promoted fact) records its salience and the threshold it
    /// met (`salience S >= T`), and S must be at least T, or that it was kept as a standing
    /// instruction (`salience S, a standing instruction`), which its words must say. When the commit's salience model
    /// (its `Dream-Salience: model=...` trailer) is this binary's, the kept line is scored
    /// again from its words and its supporting events' (`keep::statements`, as the cycle
    /// scored it) and must give S; a line another model scored is checked against what it
    /// recorded only, and a note says so.
    fn salience_lines(&mut self, c: &HistoryCommit, after: &Snap) -> Result<()> {
        let Some(trailer) = c.trailer("Dream-Salience") else {
            return Ok(());
        };
        let model = trailer
            .split_whitespace()
            .find_map(|w| w.strip_prefix("model="))
            .unwrap_or_default()
            .to_string();
        let same = model == keep::model_id();
        let short = c.short();
        let mut other = 0;
        for line in c.message.lines() {
            let verb = line.split_whitespace().next().unwrap_or_default();
            if !matches!(verb, "episode" | "promoted") {
                continue;
            }
            let Some(caps) = RECORDED.captures(line) else {
                continue;
            };
            let id = line
                .split_whitespace()
                .nth(1)
                .unwrap_or_default()
                .to_string();
            let score: f32 = caps[1].parse().unwrap_or(f32::NAN);
            self.v.salience_checked += 1;
            match (caps.get(2), caps.get(3)) {
                (Some(t), _) => {
                    let threshold: f32 = t.as_str().parse().unwrap_or(f32::NAN);
                    // A NaN (a line that does not parse) fails too.
                    if score.partial_cmp(&threshold) == Some(std::cmp::Ordering::Less)
                        || score.is_nan()
                        || threshold.is_nan()
                    {
                        self.push(problem(
                            "salience",
                            Some(&short),
                            Some(&id),
                            format!("{id} was kept at salience {score:.3}, below the threshold {threshold} its commit records"),
                        ));
                        continue;
                    }
                }
                // Kept at or above its threshold, then a purge took words out of it
                // ([`RESCORED_AFTER_PURGE`]): its score is checked below like any other.
                (None, Some(k)) if k.as_str() == RESCORED_AFTER_PURGE => {}
                _ if same => {
                    // Kept below the threshold as a standing instruction: its words must say
                    // one, by the rules this binary has (an older binary's, whose rules may
                    // have called more things instructions, is checked against its record).
                    let text = after.facts.get(&id).map(|(_, f)| f.text.clone());
                    if let Some(t) = text {
                        let said = keep::statement(&t);
                        if !keep::kept_whatever_its_score(&said) {
                            self.push(problem(
                                "salience",
                                Some(&short),
                                Some(&id),
                                format!("{id} was kept at salience {score:.3} as a standing instruction, a habit or a preference, but its words give none of them"),
                            ));
                            continue;
                        }
                    }
                }
                _ => {}
            }
            if !same {
                other += 1;
                continue;
            }
            let (Some((_, fact)), Some(st)) = (after.facts.get(&id), &self.state) else {
                continue;
            };
            let events = state::events_by_ids(&st.conn, &fact.support)?;
            let owners = owner_texts(&events);
            if let Some(a) = score_kept(&fact.text, &owners)? {
                if (a - score).abs() > 0.0015 {
                    self.push(problem(
                        "salience",
                        Some(&short),
                        Some(&id),
                        format!("{id} records salience {score:.3}, but its words and events score {a:.3} with the same model ({model})"),
                    ));
                }
            }
        }
        if other > 0 {
            self.v.notes.push(format!(
                "{short}: {other} kept lines were scored by salience model {model}, not this binary's ({}); their recorded scores were checked against their recorded threshold",
                keep::model_id()
            ));
        }
        Ok(())
    }

    /// Re-measure every mutation line of a pass commit. Returns the ids whose archive
    /// entries the lines account for.
    fn pass_commit(&mut self, c: &HistoryCommit, before: &Snap, after: &Snap) -> BTreeSet<String> {
        let short = c.short();
        let day = cycle_day(c);
        let mut lines = Vec::new();
        for l in c.message.lines() {
            let first = l.split_whitespace().next().unwrap_or_default();
            if !matches!(first, "accepted" | "engine" | "refused") {
                continue;
            }
            match dream_core::passes::record::Line::parse(l) {
                Some(line) => lines.push(line),
                None => self.push(problem(
                    "mutation",
                    Some(&short),
                    None,
                    format!("unreadable mutation line: {l}"),
                )),
            }
        }
        let tally = |v: &str| lines.iter().filter(|l| l.verdict == v).count();
        let (accepted, engine) = (tally("accepted"), tally("engine"));
        let engine_refused = lines
            .iter()
            .filter(|l| l.verdict == "refused" && l.get("by") == Some("engine"))
            .count();
        let refused = tally("refused") - engine_refused;
        match c
            .trailer("Dream-Counts")
            .and_then(dream_core::passes::record::Counts::parse_trailer)
        {
            None => self.push(problem(
                "counts",
                Some(&short),
                None,
                "the pass commit has no readable Dream-Counts trailer".into(),
            )),
            Some(k) => {
                if k.proposed != k.accepted + k.refused
                    || (k.accepted, k.refused, k.engine, k.engine_refused)
                        != (accepted, refused, engine, engine_refused)
                {
                    self.push(problem(
                        "counts",
                        Some(&short),
                        None,
                        format!(
                            "Dream-Counts says proposed={} accepted={} refused={} engine={} engine_refused={}, the body lists {accepted} accepted, {refused} refused, {engine} engine, {engine_refused} engine refused",
                            k.proposed, k.accepted, k.refused, k.engine, k.engine_refused
                        ),
                    ));
                }
            }
        }
        let dropped: BTreeSet<String> = lines
            .iter()
            .filter(|l| l.op == "drop" && l.verdict != "refused")
            .filter_map(|l| l.get("item").map(str::to_string))
            .collect();
        let mut covered = BTreeSet::new();
        let mut active = before.durable();
        for l in &lines {
            let item = l.get("item").unwrap_or_default().to_string();
            if l.verdict == "refused" {
                if l.get("refusal").is_none_or(|r| r.trim().is_empty()) {
                    self.push(problem(
                        "mutation",
                        Some(&short),
                        Some(&item),
                        "a refused mutation without a refusal reason".into(),
                    ));
                }
                continue;
            }
            self.v.mutations += 1;
            let mut found = Vec::new();
            match l.op.as_str() {
                "drop" => self.drop_line(l, &item, before, after, &dropped, &mut found),
                "merge" => {
                    self.merge_line(l, &item, before, after, &mut found);
                    covered.extend(
                        l.get("from")
                            .unwrap_or_default()
                            .split(',')
                            .map(str::to_string),
                    );
                }
                "promote" => self.promote_line(l, &item, before, after, &mut found),
                _ => {
                    self.forget_line(l, &item, before, after, day, active, &mut found);
                    active = active.saturating_sub(1);
                }
            }
            covered.insert(item.clone());
            for m in found {
                self.push(problem("mutation", Some(&short), Some(&item), m));
            }
        }
        if c.trailer("Dream-Loss-Guard") == Some("on") {
            self.loss_guard(c, &lines, before, after);
        }
        covered
    }

    /// The loss guard, restated: a cycle's pass commits archive at most
    /// `retention.max_loss_share` of the facts active before the first of them (at least
    /// one when the share is above 0), and a protected or owner-written fact leaves memory
    /// or is rewritten only for a text that holds every one of its content words.
    fn loss_guard(
        &mut self,
        c: &HistoryCommit,
        lines: &[dream_core::passes::record::Line],
        before: &Snap,
        after: &Snap,
    ) {
        let short = c.short();
        let r = &after.config.retention;
        let mut archived = 0;
        for l in lines.iter().filter(|l| l.verdict != "refused") {
            let item = l.get("item").unwrap_or_default();
            let (rewritten, stays): (Vec<&str>, String) = match l.op.as_str() {
                "drop" => {
                    archived += 1;
                    let kept = l.get("duplicate_of").unwrap_or_default();
                    let text = before.facts.get(kept).map(|(_, f)| f.text.clone());
                    (vec![item], text.unwrap_or_default())
                }
                "merge" => {
                    let from: Vec<&str> = l
                        .get("from")
                        .unwrap_or_default()
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .collect();
                    archived += from.len();
                    let text = after.facts.get(item).map(|(_, f)| f.text.clone());
                    let mut parts = vec![item];
                    parts.extend(from);
                    (parts, text.unwrap_or_default())
                }
                "forget" => {
                    archived += 1;
                    continue;
                }
                _ => continue,
            };
            for id in rewritten {
                let Some((_, f)) = before.facts.get(id) else {
                    continue;
                };
                let cov = measures::coverage(&f.text, [stays.as_str()]);
                if protected(f, r) && cov.value < 1.0 {
                    self.push(problem(
                        "loss",
                        Some(&short),
                        Some(id),
                        format!(
                            "{id} is protected ({}), yet a {} left in its place a text without its words {} (coverage {:.3}), with the loss guard on",
                            if f.origin == Origin::Owner { "written by the owner".to_string() } else { format!("category {}", f.category) },
                            l.op,
                            cov.missing.join(", "),
                            cov.value
                        ),
                    ));
                }
            }
        }
        let cycle = c.trailer("Dream-Cycle").unwrap_or_default().to_string();
        let entry = self
            .loss
            .entry(cycle.clone())
            .or_insert((before.facts.len(), 0, false));
        entry.1 += archived;
        let (active, total, flagged) = *entry;
        let share = r.max_loss_share;
        let allowed = if share >= 1.0 {
            usize::MAX
        } else if share <= 0.0 {
            0
        } else {
            ((share * active as f64).floor() as usize).max(1)
        };
        if total > allowed && !flagged {
            entry.2 = true;
            self.push(problem(
                "loss",
                Some(&short),
                None,
                format!(
                    "cycle {cycle} archived {total} of the {active} facts active before its passes, over retention.max_loss_share = {share} (at most {allowed}), with the loss guard on"
                ),
            ));
        }
    }

    fn drop_line(
        &mut self,
        l: &dream_core::passes::record::Line,
        item: &str,
        before: &Snap,
        after: &Snap,
        dropped: &BTreeSet<String>,
        found: &mut Vec<String>,
    ) {
        let kept = l.get("duplicate_of").unwrap_or_default();
        if item == kept {
            found.push(format!("{item} was dropped as a duplicate of itself"));
            return;
        }
        let (Some((_, a)), Some((_, b))) = (before.facts.get(item), before.facts.get(kept)) else {
            found.push(format!("{item} was dropped as a duplicate of {kept}, but the two were not both active before the commit"));
            return;
        };
        if dropped.contains(kept) {
            found.push(format!("{item} was dropped as a duplicate of {kept}, which was itself dropped in the same commit (a chain)"));
        }
        if after.facts.contains_key(item) {
            found.push(format!("{item} is recorded as dropped but is still active"));
        }
        if !after.facts.contains_key(kept) {
            found.push(format!(
                "{kept}, kept for the duplicate {item}, is not active after the commit"
            ));
        }
        let sim = measures::similarity(&a.text, &b.text);
        if sim < DUPLICATE_SIMILARITY {
            found.push(format!(
                "{item} was dropped as a duplicate of {kept}, but their similarity is {sim:.3} (< {DUPLICATE_SIMILARITY})"
            ));
        }
        if let Some(rec) = l.get("similarity").and_then(|s| s.parse::<f64>().ok()) {
            if (rec - sim).abs() > TOLERANCE {
                found.push(format!("the commit records similarity {rec:.3} for {item} and {kept}; it measures {sim:.3}"));
            }
        }
        if !measures::polarity_agrees(&a.text, &b.text) {
            found.push(format!("{item} and {kept} disagree in polarity, yet one was dropped as a duplicate of the other"));
        }
        if !measures::numbers_agree(&a.text, &b.text) {
            found.push(format!("{item} and {kept} state different numbers, yet one was dropped as a duplicate of the other"));
        }
        let cov = measures::coverage(&a.text, [b.text.as_str()]);
        if cov.value < KEPT_COVERAGE {
            found.push(format!(
                "dropping {item} lost words {kept} lacks: coverage {:.3} < {KEPT_COVERAGE} ({})",
                cov.value,
                cov.missing.join(", ")
            ));
        }
        if !self.added_entry(item, "duplicate") {
            found.push(format!(
                "{item} was dropped without an archive entry (why=duplicate)"
            ));
        }
    }

    fn merge_line(
        &mut self,
        l: &dream_core::passes::record::Line,
        into: &str,
        before: &Snap,
        after: &Snap,
        found: &mut Vec<String>,
    ) {
        let from: Vec<&str> = l
            .get("from")
            .unwrap_or_default()
            .split(',')
            .filter(|s| !s.is_empty())
            .collect();
        let mut parts: Vec<&(Block, Fact)> = Vec::new();
        for id in std::iter::once(into).chain(from.iter().copied()) {
            match before.facts.get(id) {
                Some(p) => parts.push(p),
                None => found.push(format!(
                    "{id} was merged but was not an active fact before the commit"
                )),
            }
        }
        if from.is_empty() {
            found.push(format!(
                "the merge into {into} names no fact merged into it"
            ));
        }
        if let Some((b0, _)) = parts.first() {
            if parts.iter().any(|(b, _)| b != b0) {
                found.push(format!("the merge into {into} crosses blocks"));
            }
        }
        if parts.iter().any(|(_, f)| f.origin == Origin::Owner) {
            found.push(format!(
                "the merge into {into} rewrote a fact the owner wrote"
            ));
        }
        let Some((_, merged)) = after.facts.get(into) else {
            found.push(format!(
                "{into}, the merged fact, is not active after the commit"
            ));
            return;
        };
        for id in &from {
            if after.facts.contains_key(*id) {
                found.push(format!("{id} was merged into {into} but is still active"));
            }
            if !self.added_entry(id, "merged") {
                found.push(format!(
                    "{id} was merged away without an archive entry (why=merged)"
                ));
            }
        }
        if parts.len() != from.len() + 1 {
            return;
        }
        let sources: Vec<&str> = parts.iter().map(|(_, f)| f.text.as_str()).collect();
        let cov = measures::coverage(&merged.text, sources.iter().copied());
        if cov.value < 1.0 {
            found.push(format!(
                "the merged text of {into} has words absent from the facts it merged: {} (coverage {:.3} < 1.0)",
                cov.missing.join(", "),
                cov.value
            ));
        }
        let written: BTreeSet<&str> = sources
            .iter()
            .flat_map(|s| s.split_whitespace())
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
            .collect();
        let base = |w: &str| w.split(['\'', '\u{2019}']).next().unwrap_or(w).to_string();
        let written_bases: BTreeSet<String> = written.iter().map(|w| base(w)).collect();
        for name in measures::proper_nouns(&merged.text) {
            if !written.contains(name.as_str()) && !written_bases.contains(&base(&name)) {
                found.push(format!(
                    "the merged text of {into} has a new proper noun {name:?}"
                ));
            }
        }
        for e in measures::invented_entities(&merged.text, &sources) {
            if e.kind != EntityKind::ProperNoun {
                found.push(format!(
                    "the merged text of {into} invents {} {:?}",
                    e.kind.as_str(),
                    e.text
                ));
            }
        }
        let lost: Vec<&String> = parts
            .iter()
            .flat_map(|(_, f)| f.support.iter())
            .filter(|id| !merged.support.contains(id))
            .collect();
        if !lost.is_empty() {
            found.push(format!(
                "the merged fact {into} lost supporting events: {}",
                lost.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }

    fn promote_line(
        &mut self,
        l: &dream_core::passes::record::Line,
        item: &str,
        before: &Snap,
        after: &Snap,
        found: &mut Vec<String>,
    ) {
        let to = l.get("to").unwrap_or_default();
        let Some(target) = Block::parse(to).filter(|b| TARGET_BLOCKS.contains(b)) else {
            found.push(format!(
                "{item} was promoted to {to:?}, which is not persona, human or episodes"
            ));
            return;
        };
        match (before.facts.get(item), after.facts.get(item)) {
            (None, _) => found.push(format!(
                "{item} was promoted but was not an active fact before the commit"
            )),
            (_, None) => found.push(format!(
                "{item} was promoted but is not active after the commit"
            )),
            (Some((b, _)), _) if *b == target => {
                found.push(format!("{item} was promoted to {to}, where it already was"))
            }
            (_, Some((b, _))) if *b != target => found.push(format!(
                "{item} was promoted to {to} but is in {} after the commit",
                b.as_str()
            )),
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn forget_line(
        &mut self,
        l: &dream_core::passes::record::Line,
        item: &str,
        before: &Snap,
        after: &Snap,
        day: NaiveDate,
        active: usize,
        found: &mut Vec<String>,
    ) {
        let Some((block, fact)) = before.facts.get(item) else {
            found.push(format!(
                "{item} was forgotten but was not an active fact before the commit"
            ));
            return;
        };
        if after.facts.contains_key(item) {
            found.push(format!(
                "{item} is recorded as forgotten but is still active"
            ));
        }
        if !self.added_entry(item, "forgotten") {
            found.push(format!(
                "{item} was forgotten without an archive entry (why=forgotten)"
            ));
        }
        let r = &after.config.retention;
        let policy = l.get("policy").unwrap_or_default();
        let pinned = self.pinned(before);
        let used = self.last_used(item, day, policy);
        found.extend(forget_problems(
            item, *block, fact, policy, r, day, active, after, &pinned, used,
        ));
    }

    /// The last day on or before `day` an agent used `fact`, as the state recorded it (only
    /// an unused forget needs it; without a state database, none is known and a note says
    /// so).
    fn last_used(&mut self, fact: &str, day: NaiveDate, policy: &str) -> Option<NaiveDate> {
        if !policy.starts_with("unused_after_days") {
            return None;
        }
        let Some(state) = &self.state else {
            let note = "no state database: facts forgotten as unused were checked against their last sighting only".to_string();
            if !self.v.notes.contains(&note) {
                self.v.notes.push(note);
            }
            return None;
        };
        match state::uses(&state.conn, Some(day)) {
            Ok(mut u) => u.remove(fact).map(|(_, d)| d),
            Err(e) => {
                self.v
                    .notes
                    .push(format!("use counts could not be read ({e})"));
                None
            }
        }
    }

    /// The facts pending cards pinned in a snapshot: a capacity forget passes over them, so
    /// they do not count against its lowest-salience-first order.
    fn pinned(&mut self, snap: &Snap) -> BTreeSet<String> {
        let Some(at) = snap.at else {
            return BTreeSet::new();
        };
        if let Some(p) = self.pins.get(&at) {
            return p.clone();
        }
        let p = self.store.pinned_at(at).unwrap_or_else(|e| {
            self.v
                .notes
                .push(format!("could not read the review cards at {at}: {e}"));
            BTreeSet::new()
        });
        self.pins.insert(at, p.clone());
        p
    }

    /// Whether the transition added an archive entry for `id` with this `why`.
    fn added_entry(&self, id: &str, why: &str) -> bool {
        self.added.iter().any(|a| a.fact.id == id && a.why == why)
    }

    /// Archive entries a transition added that no mutation line accounts for.
    fn archive_added(
        &mut self,
        at: Option<&str>,
        day: NaiveDate,
        before: &Snap,
        after: &Snap,
        covered: &BTreeSet<String>,
    ) {
        let added = self.added.clone();
        let mut removed = 0;
        for e in added {
            self.v.archive_entries += 1;
            let id = e.fact.id.clone();
            if covered.contains(&id) {
                continue;
            }
            let day = if e.archived == NaiveDate::MIN {
                day
            } else {
                e.archived
            };
            let mut found = Vec::new();
            match e.why.as_str() {
                "duplicate" => {
                    let kept = e.policy.as_str();
                    match after.facts.get(kept) {
                        None => found.push(format!("{id} was archived as a duplicate of {kept:?}, which is not an active fact")),
                        Some((_, k)) => {
                            let sim = measures::similarity(&e.fact.text, &k.text);
                            if sim < DUPLICATE_SIMILARITY {
                                found.push(format!(
                                    "{id} was archived as a duplicate of {kept}, but their similarity is {sim:.3} (< {DUPLICATE_SIMILARITY})"
                                ));
                            }
                            if !measures::numbers_agree(&e.fact.text, &k.text) {
                                found.push(format!(
                                    "{id} was archived as a duplicate of {kept}, but they state different numbers"
                                ));
                            }
                        }
                    }
                }
                "merged" if !after.facts.contains_key(&e.policy) => {
                    found.push(format!(
                        "{id} was archived as merged into {:?}, which is not an active fact",
                        e.policy
                    ));
                }
                "expired" => found.extend(expiry_problems(&e, day, before, after)),
                "forgotten" => {
                    let pinned = self.pinned(before);
                    let used = self.last_used(&id, day, &e.policy);
                    found.extend(forget_problems(
                        &id,
                        e.block,
                        &e.fact,
                        &e.policy,
                        &after.config.retention,
                        day,
                        before.durable() - removed,
                        after,
                        &pinned,
                        used,
                    ));
                    removed += 1;
                }
                _ => {}
            }
            for m in found {
                self.push(problem("archive", at, Some(&id), m));
            }
        }
    }

    /// A dream commit removed no fact from memory without archiving it.
    fn nothing_deleted(&mut self, at: &str, stage: &str, before: &Snap, after: &Snap) {
        let archived: BTreeSet<String> = after.archived().map(|a| a.fact.id).collect();
        for id in before.facts.keys() {
            if !after.facts.contains_key(id) && !archived.contains(id) {
                self.push(problem(
                    "deleted",
                    Some(at),
                    Some(id),
                    format!("{id} left memory in a {stage} commit without an archive entry: nothing may be deleted outright"),
                ));
            }
        }
    }

    /// Every active fact: no secret, and traceable to its supporting events unless the
    /// owner wrote it. Pending cards: no secret.
    fn active(&mut self, root: &Path) -> Result<()> {
        let mut blocks = Vec::new();
        for b in Block::ALL {
            if let Some(text) = self.store.read(&b.path())? {
                if let Some((line, marker)) = schema::conflict_marker(&text) {
                    self.push(problem(
                        "conflict",
                        None,
                        None,
                        format!(
                            "{} line {line} is a merge-conflict marker ({marker:?}); resolve the merge",
                            b.path()
                        ),
                    ));
                }
                self.secret_lines(&b.path(), &text);
                blocks.push(BlockFile::parse(b, &text, NaiveDate::MIN));
            }
        }
        if let Some(text) = self.store.read(schema::ARCHIVE)? {
            self.secret_lines(schema::ARCHIVE, &text);
        }
        // An invalid dream.toml is a finding: every cycle would refuse to run on it.
        let config = match crate::config::load(root) {
            Ok(c) => c,
            Err(e) => {
                self.push(problem(
                    "config",
                    None,
                    None,
                    format!("{e}; fix dream.toml (every `dream run` refuses it as it is); the rest was audited with the defaults"),
                ));
                Config::default()
            }
        };
        let state = State::open_read_only(root)?;
        if state.is_none() {
            self.v.notes.push(
                "no state database (.dream/state.sqlite): supporting events could not be read, so traceability was not checked".into(),
            );
        }
        let mut seen: BTreeMap<String, &'static str> = BTreeMap::new();
        for bf in &blocks {
            for f in bf.facts() {
                self.v.active_facts += 1;
                if !f.id.is_empty() {
                    if let Some(other) = seen.insert(f.id.clone(), bf.block.as_str()) {
                        self.push(problem(
                            "trace",
                            None,
                            Some(&f.id),
                            format!(
                                "id {} appears twice (in {other} and {})",
                                f.id,
                                bf.block.as_str()
                            ),
                        ));
                    }
                }
                if f.origin == Origin::Owner || f.id.is_empty() {
                    self.v.trusted += 1;
                    continue;
                }
                let Some(state) = &state else { continue };
                self.v.traced += 1;
                for m in trace(f, bf.block, &state.conn, &config)? {
                    self.push(problem("trace", None, Some(&f.id), m));
                }
            }
        }
        let (cards, unreadable) = self.store.pending_cards()?;
        for u in unreadable {
            self.v
                .notes
                .push(format!("a review card does not parse: {u}"));
        }
        for c in cards {
            if let Some(name) = secrets::gate(&c.text) {
                self.push(problem(
                    "secret",
                    None,
                    Some(&c.id),
                    format!("pending card {} contains a secret ({name})", c.id),
                ));
            }
        }
        Ok(())
    }

    /// A problem for every line of a memory file that holds a secret (or a redaction
    /// marker): the file, the line and the rule, never the text, which may be the secret.
    fn secret_lines(&mut self, path: &str, text: &str) {
        for (n, line) in text.lines().enumerate() {
            let Some(name) = secrets::gate(line) else {
                continue;
            };
            let id = line
                .split("id=")
                .nth(1)
                .and_then(|r| r.split([' ', ';']).next())
                .filter(|id| !id.is_empty() && secrets::gate(id).is_none());
            let what = match id {
                Some(id) => format!("fact {id}"),
                None => "a hand-written line".to_string(),
            };
            self.push(problem(
                "secret",
                None,
                id,
                format!("{path} line {}: {what} contains a secret ({name}); remove it, then take it out of the history with `dream purge --stdin`", n + 1),
            ));
        }
    }

    /// Counts of every cycle report the state database recorded.
    fn cycle_reports(&mut self, root: &Path) -> Result<()> {
        let Some(state) = State::open_read_only(root)? else {
            return Ok(());
        };
        for c in state::recent_cycles(&state.conn, 1_000_000)? {
            self.v.cycle_reports += 1;
            let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap_or(0);
            let k = &c.report["candidates"];
            let sum = n(k, "promoted")
                + n(k, "episodes")
                + n(k, "queued")
                + n(k, "reinforced")
                + n(k, "refused");
            if n(k, "proposed") != sum {
                self.push(problem(
                    "counts",
                    None,
                    None,
                    format!(
                        "cycle {}: {} proposed but {} promoted + {} episodes + {} queued + {} reinforced + {} refused = {sum}",
                        c.id,
                        n(k, "proposed"),
                        n(k, "promoted"),
                        n(k, "episodes"),
                        n(k, "queued"),
                        n(k, "reinforced"),
                        n(k, "refused")
                    ),
                ));
            }
            for p in c.report["passes"].as_array().into_iter().flatten() {
                if n(p, "proposed") != n(p, "accepted") + n(p, "refused") {
                    self.push(problem(
                        "counts",
                        None,
                        None,
                        format!(
                            "cycle {}: pass {} has {} proposed but {} accepted + {} refused",
                            c.id,
                            p["pass"].as_str().unwrap_or("?"),
                            n(p, "proposed"),
                            n(p, "accepted"),
                            n(p, "refused")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The archive entries `after` has and `before` had not.
fn added_entries(before: &Snap, after: &Snap) -> Vec<Archived> {
    let old: BTreeSet<&String> = before.archive.iter().collect();
    after
        .archive
        .iter()
        .filter(|l| !old.contains(l))
        .filter_map(|l| Archived::parse(l))
        .collect()
}

/// Salience, recomputed: block weight + protected bonus + recency (1 when seen that day,
/// falling to 0 at `stale_after_days`).
fn salience(block: Block, fact: &Fact, r: &Retention, day: NaiveDate) -> f64 {
    let w = &r.block_weights;
    let weight = match block {
        Block::Persona => w.persona,
        Block::Human => w.human,
        Block::Episodes => w.episodes,
        Block::Scratch => w.scratch,
    };
    let bonus = if protected(fact, r) {
        r.protected_bonus
    } else {
        0.0
    };
    let age = (day - fact.last_seen).num_days().max(0) as f64;
    weight + bonus + (1.0 - age / f64::from(r.stale_after_days.max(1))).max(0.0)
}

fn protected(fact: &Fact, r: &Retention) -> bool {
    r.protected.contains(&fact.category) || fact.origin == Origin::Owner
}

/// What is wrong with forgetting `fact` under `policy` on `day`, with `active` facts
/// active at that point.
#[allow(clippy::too_many_arguments)]
fn forget_problems(
    id: &str,
    block: Block,
    fact: &Fact,
    policy: &str,
    r: &Retention,
    day: NaiveDate,
    active: usize,
    after: &Snap,
    pinned: &BTreeSet<String>,
    last_used: Option<NaiveDate>,
) -> Vec<String> {
    let mut found = Vec::new();
    if r.protected.contains(&fact.category) {
        found.push(format!(
            "{id} was forgotten but its category {} is protected",
            fact.category
        ));
    } else if fact.origin == Origin::Owner {
        found.push(format!("{id} was forgotten but the owner wrote it"));
    }
    let age = (day - fact.last_seen).num_days();
    if policy.starts_with("stale_after_days") {
        if age <= i64::from(r.stale_after_days) {
            found.push(format!(
                "{id} was forgotten as stale, but it was last seen {age} days before (stale_after_days {})",
                r.stale_after_days
            ));
        }
    } else if policy.starts_with("unused_after_days") {
        let last = last_used.map_or(fact.last_seen, |u| u.max(fact.last_seen));
        let idle = (day - last).num_days();
        match r.unused_after_days {
            None => found.push(format!(
                "{id} was forgotten as unused, but retention.unused_after_days was not set at that commit"
            )),
            Some(n) if idle <= i64::from(n) => found.push(format!(
                "{id} was forgotten as unused, but it was used or seen {idle} days before (on {last}; unused_after_days {n})"
            )),
            Some(_) => {}
        }
    } else if policy.starts_with("max_active_facts") {
        if active <= r.max_active_facts {
            found.push(format!(
                "{id} was forgotten for capacity, but only {active} facts were active (max_active_facts {})",
                r.max_active_facts
            ));
        }
        let mine = salience(block, fact, r, day);
        if let Some((other, s)) = after
            .facts
            .iter()
            .filter(|(oid, (b, f))| {
                *b != Block::Episodes && !protected(f, r) && !pinned.contains(*oid)
            })
            .map(|(oid, (b, f))| (oid, salience(*b, f, r, day)))
            .find(|(_, s)| *s + TOLERANCE < mine)
        {
            found.push(format!(
                "{id} (salience {mine:.3}) was forgotten for capacity while {other} (salience {s:.3}) stayed: not lowest salience first"
            ));
        }
    } else {
        found.push(format!(
            "{id} was forgotten under {policy:?}, which is not a retention policy"
        ));
    }
    found
}

/// Who wrote an event and when, as the words a fact citing it may use. This restates the
/// rule the cycle's gates apply rather than calling them: the event's actor, the owner's
/// names (`owner.names`), its day written "Monday 8 May 2023", "8 May 2023", "May 8, 2023"
/// and "2023-05-08", and the day each relative date in its text names ("yesterday" in an
/// event of 8 May 2023 is "on 7 May 2023"; `when::relatives` reads them).
pub(crate) fn who_and_when(e: &dream_core::sources::event::Event, names: &[String]) -> String {
    let d = e.ts.date_naive();
    let mut out = format!(
        "{} {}. {} {} {} {}",
        e.actor.as_deref().unwrap_or_default(),
        names.join(" "),
        d.format("%A"),
        d.format("%-d %B %Y"),
        d.format("%B %-d, %Y"),
        d.format("%Y-%m-%d")
    );
    for r in dream_core::text::when::relatives(&e.text, d) {
        out.push_str(". ");
        out.push_str(&r.absolute);
    }
    out
}

/// What is wrong with an episode's expiry (`why=expired`), restated from the tier's rule:
/// under `retention_days=N` it was last seen more than N days before it was archived;
/// under `max_facts=M` the episodes held more than M before it left, and none a cycle
/// wrote that was last seen earlier stayed.
fn expiry_problems(e: &Archived, day: NaiveDate, before: &Snap, after: &Snap) -> Vec<String> {
    let id = &e.fact.id;
    let cfg = &after.config.episodes;
    let mut found = Vec::new();
    if e.block != Block::Episodes {
        found.push(format!(
            "{id} expired from {}, but only episodes expire",
            e.block.as_str()
        ));
    }
    if matches!(e.fact.origin, Origin::Owner | Origin::Review) {
        found.push(format!(
            "{id} expired, but a person put it there (by={})",
            e.fact.origin.as_str()
        ));
    }
    let age = (day - e.fact.last_seen).num_days();
    if e.policy.starts_with("retention_days") {
        if age <= i64::from(cfg.retention_days) {
            found.push(format!(
                "{id} expired as not said again, but it was last seen {age} days before (episodes.retention_days {})",
                cfg.retention_days
            ));
        }
    } else if e.policy.starts_with("max_facts") {
        let left = after
            .facts
            .values()
            .filter(|(b, _)| *b == Block::Episodes)
            .count();
        let expired_now = after
            .archived()
            .filter(|a| a.why == "expired" && a.policy.starts_with("max_facts"))
            .filter(|a| !before.archive.contains(&a.render()))
            .count();
        if left + expired_now <= cfg.max_facts {
            found.push(format!(
                "{id} expired over the cap, but {} episodes would have been within episodes.max_facts {}",
                left + expired_now,
                cfg.max_facts
            ));
        }
        if let Some((other, (_, f))) = after.facts.iter().find(|(_, (b, f))| {
            *b == Block::Episodes
                && matches!(f.origin, Origin::Auto | Origin::Pass)
                && f.last_seen < e.fact.last_seen
        }) {
            found.push(format!(
                "{id} (last seen {}) expired over the cap while {other} (last seen {}) stayed: not oldest first",
                e.fact.last_seen, f.last_seen
            ));
        }
    } else {
        found.push(format!(
            "{id} expired under {:?}, which is not an episodes policy",
            e.policy
        ));
    }
    found
}

/// What keeps an active fact from being traceable to its supporting events.
/// The seed's rule for the durable blocks, restated: a fact a cycle (or a pass) put in
/// persona, human or scratch rests on at least `promote.min_support` distinct supporting
/// events (none read back from memory) on at least `promote.min_days` days. Episodes are
/// exempt: they are where single mentions live.
fn durable_rule(
    f: &Fact,
    block: Block,
    events: &[Stored],
    p: &dream_core::schema::settings::Promote,
) -> Vec<String> {
    if block == Block::Episodes || !matches!(f.origin, Origin::Auto | Origin::Pass) {
        return Vec::new();
    }
    // The gates count the owner's statements only; so does this.
    let support: BTreeSet<&str> = owner_statements(events)
        .map(|s| s.event.id.as_str())
        .collect();
    let days: BTreeSet<NaiveDate> = owner_statements(events)
        .map(|s| s.event.ts.date_naive())
        .collect();
    if support.len() < p.min_support || days.len() < p.min_days {
        vec![format!(
            "{} (by={}) is in {} on {} statements of the owner's over {} days; the durable blocks need {} on {} (promote.min_support, promote.min_days) unless a person put it there",
            f.id,
            f.origin.as_str(),
            block.as_str(),
            support.len(),
            days.len(),
            p.min_support,
            p.min_days
        )]
    } else {
        Vec::new()
    }
}

/// The owner's own statements among `events` (`turn::owner_statement`): what the gates
/// count and trace a cycle's fact to, and so what `verify` counts and traces it to.
fn owner_statements(events: &[state::Stored]) -> impl Iterator<Item = &state::Stored> {
    events.iter().filter(|s| {
        dream_core::sources::turn::owner_statement(s.event.trust, &s.event.kind, s.event.recalled)
    })
}

fn trace(f: &Fact, block: Block, conn: &state::Connection, config: &Config) -> Result<Vec<String>> {
    let mut found = Vec::new();
    if f.support.is_empty() {
        found.push(format!(
            "{} (by={}) cites no supporting event",
            f.id,
            f.origin.as_str()
        ));
        return Ok(found);
    }
    let events = state::events_by_ids(conn, &f.support)?;
    let known: BTreeSet<&str> = events.iter().map(|s| s.event.id.as_str()).collect();
    let missing: Vec<&str> = f
        .support
        .iter()
        .map(String::as_str)
        .filter(|id| !known.contains(id))
        .collect();
    if !missing.is_empty() {
        found.push(format!(
            "{} cites events not in the state database: {}",
            f.id,
            missing.join(", ")
        ));
    }
    // What a cycle wrote is traced to the owner's statements alone, as the gates traced
    // it: a sentence of a tool's output is not the owner's because an owner's message is
    // cited beside it. What a person wrote or accepted is traced to everything it cites.
    let by_cycle = matches!(f.origin, Origin::Auto | Origin::Pass);
    let owners: Vec<&state::Stored> = owner_statements(&events).collect();
    if by_cycle && owners.is_empty() {
        found.push(format!(
            "{} (by={}) rests on no statement of the owner's: agent messages, tool output, pastes and harness text never establish a fact",
            f.id,
            f.origin.as_str()
        ));
    }
    let basis: Vec<&Stored> = if by_cycle {
        owners
    } else {
        events.iter().collect()
    };
    let mut owned: Vec<String> = Vec::new();
    for s in &basis {
        owned.push(s.event.text.clone());
        owned.push(who_and_when(&s.event, &config.owner.names));
    }
    let sources: Vec<&str> = owned.iter().map(String::as_str).collect();
    for e in measures::invented_entities(&f.text, &sources) {
        found.push(format!(
            "{} names {} {:?}, absent from its supporting events",
            f.id,
            e.kind.as_str(),
            e.text
        ));
    }
    if f.origin != Origin::Review {
        found.extend(durable_rule(f, block, &events, &config.promote));
    }
    let need = match f.origin {
        Origin::Review => config.promote.min_coverage,
        _ => 1.0,
    };
    let cov = measures::coverage(&f.text, sources.iter().copied());
    if cov.value < need {
        found.push(format!(
            "{} (by={}) has words absent from its supporting events: {} (coverage {:.3} < {need})",
            f.id,
            f.origin.as_str(),
            cov.missing.join(", "),
            cov.value
        ));
    }
    Ok(found)
}
