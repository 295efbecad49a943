//! The human side's sequencing (SPEC S9): review decisions and undo, each as one commit
//! under the same single-writer lock as a cycle.
//!
//! Like `cycle` for the engine, this is where the steps are put in order; the decisions
//! themselves are pure functions in `review` and `revert`. Every decision:
//!
//! 1. takes `.dream/lock` without waiting (a cycle running means exit 75, nothing written),
//!    and finishes or forgets what an interrupted command left (`guard`);
//! 2. commits hand edits first, as a cycle does, so they are never mixed into a decision;
//! 3. re-reads the card or fact it decides on, so it never acts on a stale view;
//! 4. builds its commits in git, then publishes them through `store` in one step: when it
//!    records or clears vetoes, the state transaction that does so is the commit point
//!    (it also records the commit), so vetoes and the repository never disagree after a
//!    crash; otherwise the branch moving is (one commit, `Dream-Cycle: review-...` or
//!    `undo-...`, `Dream-Stage: review` or `undo`).
//!
//! Undo never moves the inbox watermark or forgets events: they stay stored and consumed,
//! and the vetoes keep the same evidence from bringing an undone fact back.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use dream_core::operations::audit;
use dream_core::schema::settings::Config;

use crate::edges::state::{self, State};
use crate::edges::store::{Batch, Change, Point, Store};
use crate::edges::{guard, lock};
use crate::error::{Error, Result};
use dream_core::memory::revert::{self, Files, Reverted};
use dream_core::memory::review::{self, Applied, Choice};
use dream_core::operations::commit::{self, Message};
use dream_core::schema::contract::EventView;
use dream_core::schema::{self, Card, Memory, Stage};
use dream_core::selection::veto::Veto;

/// Commits looked at when searching history (a memory repo makes a few a day).
pub const HISTORY_LIMIT: usize = 1_000_000;

/// An id for one review session or undo: `review-<now>-<HEAD>`, so two decisions made in
/// the same second still get their own id, and the same replay gets the same one.
pub fn session_id(kind: &str, now: DateTime<Utc>, store: &Store) -> String {
    let head: String = store
        .head()
        .map(|h| h.to_string().chars().take(7).collect())
        .unwrap_or_else(|| "0000000".into());
    format!("{kind}-{}-{head}", now.format("%Y%m%dT%H%M%SZ"))
}

/// How the refusal of an edited text begins (the gates' reasons follow).
const EDIT_REFUSED: &str = "the edited text was refused";

/// `e` is the refusal of an edited text by the gates ([`Desk::decide`] with
/// [`Request::Edit`]): the person can fix the text and try again, the card is unchanged.
pub fn edit_refused(e: &Error) -> bool {
    matches!(e, Error::Input(msg) if msg.starts_with(EDIT_REFUSED))
}

/// A person's decision on a card, as asked.
#[derive(Debug, Clone)]
pub enum Request {
    Accept { reason: String },
    Reject { reason: String },
    Edit { text: String, reason: String },
}

/// A decision made: what it did, and its commit.
#[derive(Debug, Clone)]
pub struct Decided {
    pub applied: Applied,
    pub commit: Option<String>,
    pub session: String,
}

/// The review desk of one repository.
pub struct Desk {
    pub root: PathBuf,
    pub config: Config,
    pub now: DateTime<Utc>,
    /// The session id of this desk's decisions (fixed when it is opened).
    pub session: String,
    store: Store,
}

impl Desk {
    pub fn open(root: &Path, config: Config, now: DateTime<Utc>) -> Result<Desk> {
        let store = Store::open(root)?;
        let session = session_id("review", now, &store);
        Ok(Desk {
            root: root.to_path_buf(),
            config,
            now,
            session,
            store,
        })
    }

    /// Fail with exit 75 now, rather than at the first keystroke, when a cycle runs.
    pub fn check_lock(&self) -> Result<()> {
        lock::acquire(&self.root, false, self.now).map(drop)
    }

    /// Pending cards, best first (the most salient, then the oldest: `keep::card_rank`),
    /// and the files that did not parse.
    pub fn pending(&self) -> Result<(Vec<Card>, Vec<String>)> {
        let (mut cards, bad) = self.store.pending_cards()?;
        cards.sort_by(dream_core::selection::keep::card_rank);
        Ok((cards, bad))
    }

    /// The cards waiting for room in the review queue, best first, and the rows that did
    /// not parse.
    pub fn waiting_cards(&self) -> Result<(Vec<Card>, Vec<String>)> {
        match State::open_read_only(&self.root)? {
            Some(st) => {
                let (mut cards, bad) = state::waiting(&st.conn)?;
                cards.sort_by(dream_core::selection::keep::card_rank);
                Ok((cards, bad))
            }
            None => Ok((Vec::new(), Vec::new())),
        }
    }

    /// How many cards wait for room in the review queue (`review.max_new_cards`).
    pub fn waiting(&self) -> Result<usize> {
        match State::open_read_only(&self.root)? {
            Some(st) => state::waiting_count(&st.conn),
            None => Ok(0),
        }
    }

    /// The pending card with this id (any prefix, or the 8-hex stem).
    pub fn find(&self, id: &str) -> Result<Card> {
        let (cards, _) = self.pending()?;
        find_card(&cards, id).cloned().ok_or_else(|| {
            let decided = decided_card(&self.store, id);
            match decided {
                Some(c) => Error::Input(format!(
                    "card {} was already decided ({}); `dream explain {}` shows how",
                    c.id,
                    c.decision
                        .as_ref()
                        .map(|d| d.verdict.as_str())
                        .unwrap_or("decided"),
                    c.id
                )),
                None => Error::Input(format!(
                    "no pending review card {id}; `dream review list` shows the queue"
                )),
            }
        })
    }

    /// The text of an active fact, if it is active.
    pub fn active_fact_text(&self, id: &str) -> Result<Option<String>> {
        let m = self.store.load_memory(self.now.date_naive())?;
        Ok(m.get(id).map(|(_, f)| f.text.clone()))
    }

    /// The card's supporting events, from the state database (the card's own excerpts
    /// when the database no longer has them).
    pub fn events(&self, card: &Card) -> Result<Vec<EventView>> {
        events_for(&self.root, card)
    }

    /// Decide on a pending card and commit. With `expected`, refuse when the card changed
    /// since the person was shown it.
    pub fn decide(&self, id: &str, expected: Option<&Card>, req: &Request) -> Result<Decided> {
        let _writer = guard::begin(&self.root, Utc::now(), Some(&self.config.inbox.path))?;
        let card = self.find(id)?;
        if let Some(seen) = expected {
            if seen != &card {
                return Err(Error::Input(format!(
                    "card {} changed since it was shown (a cycle updated it); look at it again",
                    card.id
                )));
            }
        }
        let choice = match req {
            Request::Accept { reason } => Choice::Accept {
                reason: reason.clone(),
            },
            Request::Reject { reason } => Choice::Reject {
                reason: reason.clone(),
            },
            Request::Edit { text, reason } => {
                let events = self.events(&card)?;
                let gated = review::regate_edit(text, &card, &events, &self.config)
                    .map_err(|r| Error::Input(format!("{EDIT_REFUSED}: {r}")))?;
                Choice::Edit {
                    gated: Box::new(gated),
                    reason: reason.clone(),
                }
            }
        };
        let mut batch = self.store.batch()?;
        self.store.refuse_conflicts()?;
        record_hand_edits(&self.store, &mut batch, &self.session)?;
        let today = self.now.date_naive();
        let before = self.store.load_memory(today)?;
        let mut memory = before.clone();
        let archive_before = self.store.read(schema::ARCHIVE)?;
        let mut archive = review::parse_archive(archive_before.as_deref());
        let applied = review::decide(
            &mut memory,
            &mut archive,
            &card,
            &choice,
            &decided_ids(&self.store)?,
            self.now,
            &self.session,
            &self.config,
        );
        let mut change = memory_change(
            &before,
            &memory,
            archive_before.as_deref(),
            &archive.render(),
        );
        change.delete(card.path());
        change.write(applied.card.path(), applied.card.render());
        change.message = Message::new(
            applied.subject.clone(),
            applied.lines.clone(),
            &self.session,
            Stage::Review,
        )
        .render();
        let commit = commit_with_vetoes(
            &self.root,
            &self.store,
            batch,
            &change,
            applied.veto.iter().cloned().collect(),
            &[],
            "review decision",
        )?;
        Ok(Decided {
            applied,
            commit,
            session: self.session.clone(),
        })
    }
}

/// Which cards a batch decision takes (`dream review accept|reject` with filters): a card
/// is taken when it matches every selector given.
#[derive(Debug, Clone, Default)]
pub struct Selector {
    /// These cards (ids, any prefix or the 8 hex digits).
    pub ids: Vec<String>,
    /// Cards citing an event of this session (its id, or the start of it).
    pub session: Option<String>,
    /// Cards whose salience is below this.
    pub below: Option<f32>,
    /// This card's cluster: the cards linked to it through cards saying about the same
    /// thing (their statements' `minilm` vectors within the restatement distance).
    pub cluster: Option<String>,
    /// Every card.
    pub all: bool,
    /// Take the cards waiting for room in the queue too (`review.max_new_cards`).
    pub waiting: bool,
}

impl Selector {
    /// What it selects, in words (the commit subject and the command's output say it).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.ids.is_empty() {
            parts.push(self.ids.join(", "));
        }
        if let Some(s) = &self.session {
            parts.push(format!("session {s}"));
        }
        if let Some(b) = self.below {
            parts.push(format!("salience below {b}"));
        }
        if let Some(c) = &self.cluster {
            parts.push(format!("the cluster of {c}"));
        }
        if self.all || parts.is_empty() {
            parts.push("every card".into());
        }
        let mut out = parts.join(", ");
        if self.waiting {
            out.push_str(", waiting ones too");
        }
        out
    }

    fn check(&self) -> Result<()> {
        if self.ids.is_empty()
            && self.session.is_none()
            && self.below.is_none()
            && self.cluster.is_none()
            && !self.all
        {
            return Err(Error::Usage(
                "say which cards: one or more ids, --session S, --below SALIENCE, --cluster ID or --all".into(),
            ));
        }
        if let Some(b) = self.below {
            if !(b.is_finite() && b > 0.0 && b <= 1.0) {
                return Err(Error::Usage(format!(
                    "--below takes a salience in (0, 1], not {b}"
                )));
            }
        }
        if self.session.as_deref().is_some_and(|s| s.trim().is_empty()) {
            return Err(Error::Usage("--session takes a session id".into()));
        }
        Ok(())
    }
}

/// A card a batch takes, with what it was measured at.
#[derive(Debug, Clone)]
pub struct Chosen {
    pub card: Card,
    /// It waited for room in the queue (no file under `review/`).
    pub waiting: bool,
    pub salience: Option<f32>,
}

/// What a batch decision did (or, in a dry run, would do).
#[derive(Debug, Clone)]
pub struct Batched {
    pub selector: String,
    pub chosen: Vec<Chosen>,
    pub decided: Vec<Applied>,
    pub commit: Option<String>,
    pub session: String,
    pub dry_run: bool,
}

impl Desk {
    /// The salience of a card: its recorded row, else scored now as a cycle would
    /// (`keep::statements` of its text and its owner's statements).
    pub fn salience(&self, card: &Card) -> Result<Option<f32>> {
        if let Some(s) = dream_core::selection::keep::recorded(&card.gates) {
            return Ok(Some(s));
        }
        let events = self.events(card)?;
        let owners: Vec<&str> = events
            .iter()
            .filter(|e| e.is_owner_statement())
            .map(|e| e.text.as_str())
            .collect();
        let scorer = crate::providers::salience::scorer();
        let mut best: Option<f32> = None;
        for said in dream_core::selection::keep::statements(&card.text, owners) {
            let s = scorer.score(&said)?;
            best = Some(best.map_or(s, |b: f32| b.max(s)));
        }
        Ok(best)
    }

    /// The cards `sel` takes, best first.
    pub fn select(&self, sel: &Selector) -> Result<Vec<Chosen>> {
        sel.check()?;
        let (pending, _) = self.pending()?;
        let mut pool: Vec<(Card, bool)> = pending.into_iter().map(|c| (c, false)).collect();
        if sel.waiting {
            if let Some(st) = State::open_read_only(&self.root)? {
                pool.extend(state::waiting(&st.conn)?.0.into_iter().map(|c| (c, true)));
            }
        }
        let cards: Vec<Card> = pool.iter().map(|(c, _)| c.clone()).collect();
        for id in &sel.ids {
            if find_card(&cards, id).is_none() {
                // Says whether it was decided already, or is unknown.
                self.find(id)?;
            }
        }
        let near: Option<Vec<bool>> =
            match &sel.cluster {
                None => None,
                Some(id) => {
                    let anchor =
                        find_card(&cards, id).cloned().ok_or_else(|| {
                            Error::Input(format!(
                        "no {}card {id} to take the cluster of; `dream review list` shows them",
                        if sel.waiting { "pending or waiting " } else { "pending " }
                    ))
                        })?;
                    Some(cluster_of(&cards, &anchor.id)?)
                }
            };
        let mut chosen = Vec::new();
        for (i, (card, waiting)) in pool.into_iter().enumerate() {
            if !sel.ids.is_empty()
                && !sel
                    .ids
                    .iter()
                    .any(|id| find_card(std::slice::from_ref(&card), id).is_some())
            {
                continue;
            }
            if near.as_ref().is_some_and(|n| !n[i]) {
                continue;
            }
            if let Some(session) = &sel.session {
                let events = self.events(&card)?;
                let sessions: Vec<&str> = events
                    .iter()
                    .map(|e| e.session.as_str())
                    .chain(card.excerpts.iter().map(|e| e.session.as_str()))
                    .collect();
                if !sessions
                    .iter()
                    .any(|s| !s.is_empty() && (s == session || s.starts_with(session.as_str())))
                {
                    continue;
                }
            }
            let salience = self.salience(&card)?;
            if let Some(b) = sel.below {
                if salience.is_none_or(|s| s >= b) {
                    continue;
                }
            }
            chosen.push(Chosen {
                card,
                waiting,
                salience,
            });
        }
        chosen.sort_by(|a, b| dream_core::selection::keep::card_rank(&a.card, &b.card));
        Ok(chosen)
    }

    /// Accept or reject every card `sel` takes, as one commit under the lock (one review
    /// session: `dream undo --cycle` takes the whole batch back). `Request::Edit` is one
    /// card's. A dry run says what it would take and writes nothing.
    pub fn decide_batch(&self, sel: &Selector, req: &Request, dry_run: bool) -> Result<Batched> {
        let choice = match req {
            Request::Accept { reason } => Choice::Accept {
                reason: reason.clone(),
            },
            Request::Reject { reason } => Choice::Reject {
                reason: reason.clone(),
            },
            Request::Edit { .. } => {
                return Err(Error::Usage(
                    "an edit rewords one card: `dream review edit ID TEXT`".into(),
                ))
            }
        };
        let mut out = Batched {
            selector: sel.describe(),
            chosen: Vec::new(),
            decided: Vec::new(),
            commit: None,
            session: self.session.clone(),
            dry_run,
        };
        if dry_run {
            self.check_lock()?;
            out.chosen = self.select(sel)?;
            return Ok(out);
        }
        let _writer = guard::begin(&self.root, Utc::now(), Some(&self.config.inbox.path))?;
        out.chosen = self.select(sel)?;
        if out.chosen.is_empty() {
            return Err(Error::Input(format!(
                "no card matches ({}); `dream review list` shows the queue",
                out.selector
            )));
        }
        let mut batch = self.store.batch()?;
        self.store.refuse_conflicts()?;
        record_hand_edits(&self.store, &mut batch, &self.session)?;
        let today = self.now.date_naive();
        let before = self.store.load_memory(today)?;
        let mut memory = before.clone();
        let archive_before = self.store.read(schema::ARCHIVE)?;
        let mut archive = review::parse_archive(archive_before.as_deref());
        let mut used = decided_ids(&self.store)?;
        let mut lines = Vec::new();
        let mut vetoes = Vec::new();
        let mut unwait = Vec::new();
        let mut files: Vec<(String, Option<String>)> = Vec::new();
        for c in &out.chosen {
            let applied = review::decide(
                &mut memory,
                &mut archive,
                &c.card,
                &choice,
                &used,
                self.now,
                &self.session,
                &self.config,
            );
            used.push(applied.card.id.clone());
            if c.waiting {
                unwait.push(c.card.id.clone());
            } else {
                files.push((c.card.path(), None));
            }
            files.push((applied.card.path(), Some(applied.card.render())));
            lines.extend(applied.lines.iter().cloned());
            vetoes.extend(applied.veto.iter().cloned());
            out.decided.push(applied);
        }
        let mut change = memory_change(
            &before,
            &memory,
            archive_before.as_deref(),
            &archive.render(),
        );
        for (path, text) in files {
            match text {
                Some(t) => change.write(path, t),
                None => change.delete(path),
            }
        }
        let verdict = match req {
            Request::Accept { .. } => "accepted",
            _ => "rejected",
        };
        let subject = format!(
            "dream: review: {verdict} {} cards ({})",
            out.decided.len(),
            schema::excerpt(&out.selector, 80)
        );
        change.message = Message::new(subject, lines, &self.session, Stage::Review).render();
        out.commit = commit_decisions(
            &self.root,
            &self.store,
            batch,
            &change,
            vetoes,
            &[],
            Requeue {
                unwait,
                rewait: Vec::new(),
            },
            "review decision",
        )?;
        Ok(out)
    }
}

/// The cards of `anchor`'s cluster: those linked to it through cards whose statements say
/// about the same thing (`minilm` vectors within its restatement distance,
/// `embed_minilm::RESTATES`), as density clustering links events with one neighbour.
fn cluster_of(cards: &[Card], anchor: &str) -> Result<Vec<bool>> {
    let scorer = crate::providers::salience::scorer();
    let vectors: Vec<Vec<f32>> = cards
        .iter()
        .map(|c| scorer.embedding(&dream_core::selection::keep::statement(&c.text)))
        .collect::<Result<_>>()?;
    let near = |a: &[f32], b: &[f32]| {
        let d: f64 = a
            .iter()
            .zip(b)
            .map(|(x, y)| f64::from(x - y).powi(2))
            .sum::<f64>()
            .sqrt();
        d <= crate::providers::embed_minilm::RESTATES
    };
    let mut taken: Vec<bool> = cards.iter().map(|c| c.id == anchor).collect();
    let mut todo: Vec<usize> = (0..cards.len()).filter(|&i| taken[i]).collect();
    while let Some(i) = todo.pop() {
        for j in 0..cards.len() {
            if !taken[j] && near(&vectors[i], &vectors[j]) {
                taken[j] = true;
                todo.push(j);
            }
        }
    }
    Ok(taken)
}

/// The card with this id (or stem) in a list.
pub fn find_card<'a>(cards: &'a [Card], id: &str) -> Option<&'a Card> {
    let stem = review::stem(id);
    cards
        .iter()
        .find(|c| c.id == id)
        .or_else(|| cards.iter().find(|c| review::stem(&c.id) == stem))
}

/// A decided card with this id (or stem), newest decision first.
pub fn decided_card(store: &Store, id: &str) -> Option<Card> {
    decided_cards(store)
        .into_iter()
        .filter(|c| {
            c.id == id
                || review::stem(&c.id) == review::stem(id)
                || base(&c.id) == base(review::stem(id))
        })
        .max_by_key(|c| c.decision.as_ref().map(|d| d.at))
}

fn base(id: &str) -> &str {
    let s = review::stem(id);
    s.split('-').next().unwrap_or(s)
}

/// Every card under `review/decided/`.
pub fn decided_cards(store: &Store) -> Vec<Card> {
    let dir = store.root.join(schema::DECIDED_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "md") {
            if let Ok(text) = std::fs::read_to_string(&p) {
                if let Ok(c) = Card::parse(&text) {
                    out.push(c);
                }
            }
        }
    }
    out
}

fn decided_ids(store: &Store) -> Result<Vec<String>> {
    let dir = store.root.join(schema::DECIDED_DIR);
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "md") {
                if let Some(s) = p.file_stem().and_then(|s| s.to_str()) {
                    out.push(s.to_string());
                }
            }
        }
    }
    Ok(out)
}

/// The supporting events of a card as the gates see them.
pub fn events_for(root: &Path, card: &Card) -> Result<Vec<EventView>> {
    let mut events = Vec::new();
    if let Some(st) = State::open_read_only(root)? {
        for s in state::events_by_ids(&st.conn, &card.supporting_event_ids)? {
            events.push(EventView::of(&s.event, true));
        }
    }
    if events.len() < card.supporting_event_ids.len() {
        for e in review::events_from_excerpts(card) {
            if !events.iter().any(|x| x.id == e.id) {
                events.push(e);
            }
        }
    }
    Ok(events)
}

/// Commit a person's uncommitted edits first (the batch's first commit), as a cycle does,
/// so a decision's commit holds only the decision.
fn record_hand_edits(store: &Store, batch: &mut Batch, session: &str) -> Result<()> {
    store.stage_hand_edits(batch, false, |paths| {
        commit::hand_edits(paths, session).render()
    })?;
    Ok(())
}

/// Block files and the archive that differ between before and after.
fn memory_change(
    before: &Memory,
    after: &Memory,
    archive_before: Option<&str>,
    archive_after: &str,
) -> Change {
    let mut change = Change::blocks(before, after);
    let unchanged = match archive_before {
        Some(t) => t == archive_after,
        None => archive_after == schema::archive_header(),
    };
    if !unchanged {
        change.write(schema::ARCHIVE, archive_after.to_string());
    }
    change
}

/// Add the decision's commit to the batch and publish it with its vetoes (see the module
/// comment): the vetoes' state transaction, when there is one, is the commit point.
/// Returns the decision's commit.
fn commit_with_vetoes(
    root: &Path,
    store: &Store,
    batch: Batch,
    change: &Change,
    add: Vec<Veto>,
    clear: &[String],
    kind: &str,
) -> Result<Option<String>> {
    commit_decisions(
        root,
        store,
        batch,
        change,
        add,
        clear,
        Requeue::default(),
        kind,
    )
}

/// What a decision or an undo does to the cards waiting for room in the review queue
/// (`stages::queue`): the ids that no longer wait, and the cards that wait again.
#[derive(Debug, Default)]
struct Requeue {
    unwait: Vec<String>,
    rewait: Vec<Card>,
}

impl Requeue {
    fn is_empty(&self) -> bool {
        self.unwait.is_empty() && self.rewait.is_empty()
    }
}

/// [`commit_with_vetoes`], also taking `unwait` (cards decided while they waited for room
/// in the queue) out of the state's waiting rows in the same transaction.
#[allow(clippy::too_many_arguments)]
fn commit_decisions(
    root: &Path,
    store: &Store,
    mut batch: Batch,
    change: &Change,
    add: Vec<Veto>,
    clear: &[String],
    waiting: Requeue,
    kind: &str,
) -> Result<Option<String>> {
    let mut change = change.clone();
    crate::agents::context::refresh_file(root, &mut change)?;
    let oid = store.stage(&mut batch, &change)?;
    let point = if add.is_empty() && clear.is_empty() && waiting.is_empty() {
        Point::Ref
    } else {
        let mut st = State::open(root)?;
        let clear: Vec<String> = clear
            .iter()
            .filter(|id| !add.iter().any(|v| &v.id == *id))
            .cloned()
            .collect();
        let kind = kind.to_string();
        Point::State(Box::new(move |target| {
            let tx = st.begin()?;
            for v in &add {
                state::put_veto(&tx, v)?;
            }
            for id in &clear {
                state::delete_veto(&tx, id)?;
            }
            for id in &waiting.unwait {
                state::delete_waiting(&tx, id)?;
            }
            for c in &waiting.rewait {
                state::put_waiting(&tx, c)?;
            }
            if let Some(t) = target {
                state::put_applied(&tx, &t.to_string(), &kind, Utc::now())?;
            }
            state::commit(tx, "committing the vetoes")
        }))
    };
    store.publish(batch, kind, point)?;
    Ok(oid.map(|o| o.to_string()))
}

/// What an undo did (or, in a dry run, would do).
#[derive(Debug, Clone, serde::Serialize)]
pub struct UndoReport {
    /// The undo's own id (`Dream-Cycle` of its commit): undo that to bring it all back.
    pub id: String,
    pub undoes: String,
    pub subject: String,
    pub lines: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    pub dry_run: bool,
    pub vetoed: Vec<String>,
    pub cleared: Vec<String>,
}

/// Undo one active fact (`f_...`), or put a rejected card (`c_...`) back in the queue.
pub fn undo_item(
    root: &Path,
    now: DateTime<Utc>,
    id: &str,
    reason: Option<&str>,
    dry_run: bool,
) -> Result<UndoReport> {
    let _lock = begin(root, dry_run)?;
    let store = Store::open(root)?;
    let session = session_id("undo", now, &store);
    if id.starts_with("c_") {
        return undo_rejection(root, &store, now, id, &session, dry_run);
    }
    let today = now.date_naive();
    let before = store.load_memory(today)?;
    let stem = review::stem(id);
    let fact_id = before
        .facts()
        .map(|(_, f)| f.id.clone())
        .find(|f| f == id || review::stem(f) == stem)
        .ok_or_else(|| not_active(&store, id))?;
    let mut batch = store.batch()?;
    store.refuse_conflicts()?;
    if !dry_run {
        record_hand_edits(&store, &mut batch, &session)?;
    }
    let before = store.load_memory(today)?;
    let mut memory = before.clone();
    let archive_before = store.read(schema::ARCHIVE)?;
    let mut archive = review::parse_archive(archive_before.as_deref());
    let why = match reason {
        Some(r) if !r.trim().is_empty() => format!("undone by a person: {}", r.trim()),
        _ => "undone by a person (dream undo)".to_string(),
    };
    let mut u = review::undo_fact(&mut memory, &mut archive, &fact_id, &why, now, &session)
        .map_err(Error::Input)?;
    u.veto.reason = reason.unwrap_or_default().trim().to_string();
    let mut change = memory_change(
        &before,
        &memory,
        archive_before.as_deref(),
        &archive.render(),
    );
    change.message = Message::new(u.subject.clone(), u.lines.clone(), &session, Stage::Undo)
        .trailer("Undoes", fact_id.clone())
        .render();
    let mut report = UndoReport {
        id: session.clone(),
        undoes: fact_id.clone(),
        subject: u.subject.clone(),
        lines: u.lines.clone(),
        commit: None,
        dry_run,
        vetoed: vec![u.veto.id.clone()],
        cleared: Vec::new(),
    };
    if !dry_run {
        report.commit =
            commit_with_vetoes(root, &store, batch, &change, vec![u.veto], &[], "undo")?;
    }
    Ok(report)
}

/// The lock for an undo: for writing, with recovery first (`guard`); for a dry run, the
/// lock alone.
fn begin(root: &Path, dry_run: bool) -> Result<lock::Lock> {
    if dry_run {
        return lock::acquire(root, false, Utc::now());
    }
    let inbox = crate::config::load(root).ok().map(|c| c.inbox.path);
    Ok(guard::begin(root, Utc::now(), inbox.as_deref())?.lock)
}

/// The error for an id that is not an active fact, saying where it is and what to undo.
fn not_active(store: &Store, id: &str) -> Error {
    let archive = store.read(schema::ARCHIVE).ok().flatten();
    let entry = review::archived(&review::parse_archive(archive.as_deref()))
        .into_iter()
        .rfind(|a| a.fact.id == id || review::stem(&a.fact.id) == review::stem(id));
    match entry {
        Some(a) => {
            let needle = format!("id={} ", a.fact.id);
            let by = store.recent_commits(HISTORY_LIMIT).ok().and_then(|h| {
                h.into_iter().find_map(|c| {
                    let n = c.note();
                    let touches = store
                        .diff_mentions(&c.id.to_string(), std::slice::from_ref(&needle))
                        .unwrap_or(false);
                    (touches && n.head.cycle.is_some()).then(|| n.head.cycle.unwrap_or_default())
                })
            });
            Error::Input(format!(
                "{} is not active: it is in the archive ({}, {}: {}){}",
                a.fact.id,
                a.why,
                a.archived,
                a.reason,
                by.map(|c| format!(
                    "; to bring it back, undo what archived it: `dream undo --cycle {c}`"
                ))
                .unwrap_or_default()
            ))
        }
        None => Error::Input(format!(
            "no active fact {id} in memory/*.md; `dream explain {id}` shows what is known about it"
        )),
    }
}

/// Put a rejected card back in the queue and forget its veto.
fn undo_rejection(
    root: &Path,
    store: &Store,
    now: DateTime<Utc>,
    id: &str,
    session: &str,
    dry_run: bool,
) -> Result<UndoReport> {
    let card = decided_card(store, id).ok_or_else(|| {
        Error::Input(format!("no decided review card {id} under review/decided/"))
    })?;
    let verdict = card
        .decision
        .as_ref()
        .map(|d| d.verdict.clone())
        .unwrap_or_default();
    if verdict != "rejected" {
        let fact = card
            .decision
            .as_ref()
            .and_then(|d| d.fact_id.clone())
            .unwrap_or_default();
        return Err(Error::Input(format!(
            "card {} was {verdict}, not rejected; to take back what it became, undo the fact: `dream undo {fact}`",
            card.id
        )));
    }
    let (pending, _) = store.pending_cards()?;
    let original = base(&card.id).to_string();
    let original = format!("c_{original}");
    if pending.iter().any(|c| c.id == original) {
        return Err(Error::Input(format!(
            "card {original} is pending again (a later cycle queued it); decide on that one with `dream review`"
        )));
    }
    let mut batch = store.batch()?;
    if !dry_run {
        record_hand_edits(store, &mut batch, session)?;
    }
    let mut requeued = card.clone();
    let decided_path = card.path();
    requeued.id = original.clone();
    requeued.decision = None;
    requeued.updated = now;
    let mut change = Change::default();
    change.delete(decided_path);
    change.write(requeued.path(), requeued.render());
    let subject = format!(
        "dream: undo the rejection of {original}: {}",
        schema::excerpt(&card.text, 50)
    );
    let lines = vec![format!(
        "requeued   {original}  {}  (its rejection is withdrawn)",
        card.text
    )];
    change.message = Message::new(subject.clone(), lines.clone(), session, Stage::Undo)
        .trailer("Undoes", card.id.clone())
        .render();
    let mut report = UndoReport {
        id: session.into(),
        undoes: card.id.clone(),
        subject,
        lines,
        commit: None,
        dry_run,
        vetoed: Vec::new(),
        cleared: vec![original.clone()],
    };
    if !dry_run {
        report.commit =
            commit_with_vetoes(root, store, batch, &change, Vec::new(), &[original], "undo")?;
    }
    Ok(report)
}

/// Undo every commit of a cycle (or review session, or undo) as one new commit.
pub fn undo_cycle(
    root: &Path,
    now: DateTime<Utc>,
    cycle: &str,
    dry_run: bool,
) -> Result<UndoReport> {
    let _lock = begin(root, dry_run)?;
    let store = Store::open(root)?;
    let session = session_id("undo", now, &store);
    let notes: Vec<audit::CommitNote> = store
        .recent_commits(HISTORY_LIMIT)?
        .into_iter()
        .map(|c| c.note())
        .collect();
    let mine: Vec<&audit::CommitNote> = notes
        .iter()
        .filter(|n| n.head.cycle.as_deref() == Some(cycle))
        .collect();
    let (targets, mut lines) = to_undo(&notes, &mine, cycle)?;
    let mut batch = store.batch()?;
    store.refuse_conflicts()?;
    if !dry_run {
        record_hand_edits(&store, &mut batch, &session)?;
    }
    let reason = format!("cycle {cycle} undone by a person");
    let ctx = revert::Ctx {
        now,
        decision: &session,
        reason: &reason,
    };
    let (original, head, out) = revert_commits(root, &store, &targets, &ctx)?;
    lines.extend(out.lines.iter().cloned());
    let requeue = requeue_after_undo(&targets, &original, &head);
    for id in &requeue.unwait {
        lines.push(format!(
            "unwaited   {id}  it waited for room in the review queue because of this cycle"
        ));
    }
    for c in &requeue.rewait {
        lines.push(format!(
            "rewaits    {}  back to waiting for room in the review queue: {}",
            c.id,
            schema::excerpt(&c.text, 100)
        ));
    }
    let mut change = Change::default();
    for (p, content) in &head {
        if original.get(p) != Some(content) {
            match content {
                Some(t) => change.write(p.clone(), t.clone()),
                None => change.delete(p.clone()),
            }
        }
    }
    if change.is_empty() {
        return Err(Error::Input(format!(
            "nothing left to undo in cycle {cycle}: everything it changed has changed since\n{}",
            lines.join("\n")
        )));
    }
    let what = match audit::kind_of(cycle) {
        "review" => format!("review session {cycle}"),
        "undo" => cycle.to_string(),
        kind => format!("{kind} cycle {cycle}"),
    };
    let subject = format!(
        "dream: undo {what}: {} changes reverted{}",
        out.changed,
        if out.left > 0 {
            format!(", {} left as they are", out.left)
        } else {
            String::new()
        }
    );
    change.message = Message::new(subject.clone(), lines.clone(), &session, Stage::Undo)
        .trailer("Undoes", cycle)
        .render();
    let mut report = UndoReport {
        id: session.clone(),
        undoes: cycle.into(),
        subject,
        lines,
        commit: None,
        dry_run,
        vetoed: out.vetoes.iter().map(|v| v.id.clone()).collect(),
        cleared: out.cleared.clone(),
    };
    if !dry_run {
        report.commit = commit_decisions(
            root,
            &store,
            batch,
            &change,
            out.vetoes,
            &out.cleared,
            requeue,
            "undo",
        )?;
    }
    Ok(report)
}

/// The commits of `cycle` (`mine`, among the recent `notes`) that an undo reverts, and a
/// line for each it keeps: a person's own writing is never undone. An error when the cycle
/// made no commit, was undone already, or only recorded a person's edits.
fn to_undo<'a>(
    notes: &[audit::CommitNote],
    mine: &[&'a audit::CommitNote],
    cycle: &str,
) -> Result<(Vec<&'a audit::CommitNote>, Vec<String>)> {
    if mine.is_empty() {
        return Err(Error::Input(format!(
            "no commit belongs to cycle {cycle:?}; `dream log` lists the cycles (a cycle that changed nothing made no commit)"
        )));
    }
    if let Some(u) = active_undo(notes, cycle) {
        return Err(Error::Input(format!(
            "cycle {cycle} was already undone by {u}; to bring it back, undo that: `dream undo --cycle {u}`"
        )));
    }
    let mut lines = Vec::new();
    let mut targets = Vec::new();
    for n in mine {
        match n.head.stage.as_deref() {
            Some("manual") | Some("adopt") => lines.push(format!(
                "kept       {}  {} (a person's own writing is never undone)",
                n.head.short, n.head.subject
            )),
            _ => targets.push(*n),
        }
    }
    if targets.is_empty() {
        return Err(Error::Input(format!(
            "cycle {cycle} only recorded a person's own edits; there is nothing of dream's to undo"
        )));
    }
    Ok((targets, lines))
}

/// Revert `targets`, newest first, each onto the files as the later ones left them: the
/// files as they stand (`original`), as the revert leaves them, and what it did.
fn revert_commits(
    root: &Path,
    store: &Store,
    targets: &[&audit::CommitNote],
    ctx: &revert::Ctx<'_>,
) -> Result<(Files, Files, Reverted)> {
    let mut changed_by: Vec<(String, Vec<String>)> = Vec::new();
    // The context file is a view of memory: it is rewritten for the result, not reverted.
    let view = crate::config::load(root)
        .map(|c| c.context.file.trim().to_string())
        .unwrap_or_default();
    for n in targets {
        let mut paths = store.changed_paths(&n.head.id)?;
        paths.retain(|p| view.is_empty() || *p != view);
        changed_by.push((n.head.id.clone(), paths));
    }
    let mut paths: Vec<String> = revert::fact_paths();
    for (_, ps) in &changed_by {
        for p in ps {
            if !paths.contains(p) {
                paths.push(p.clone());
            }
        }
    }
    let mut head: Files = Files::new();
    for p in &paths {
        head.insert(p.clone(), store.read(p)?);
    }
    let original = head.clone();
    let mut out = Reverted::default();
    for (id, changed) in &changed_by {
        let mut parent = Files::new();
        let mut commit = Files::new();
        for p in revert::fact_paths().iter().chain(changed.iter()) {
            parent.insert(p.clone(), store.file_at(id, p, true)?);
            commit.insert(p.clone(), store.file_at(id, p, false)?);
        }
        revert::revert_commit(&parent, &commit, changed, &mut head, ctx, &mut out);
    }
    Ok((original, head, out))
}

/// What undoing `targets` does to the cards waiting for room in the review queue, from
/// the files before (`original`) and after (`head`) the revert: a card the undone commits
/// set waiting (`waiting` lines) waits no more, as a card they queued leaves the queue; a
/// card they offered from the waiting ones (`offered`), whose file the revert removed, waits
/// again; and a card they decided while it waited (a batch decision: its decided file
/// removed, and no pending file back) waits again, undecided. Nothing that waited is lost.
fn requeue_after_undo(targets: &[&audit::CommitNote], original: &Files, head: &Files) -> Requeue {
    let ids = |verb: &str| -> Vec<String> {
        targets
            .iter()
            .flat_map(|n| n.mutations.iter())
            .filter(|m| m.verb == verb)
            .filter_map(|m| m.text.split_whitespace().next().map(str::to_string))
            .collect()
    };
    let removed = |path: &str| -> Option<Card> {
        let before = original.get(path).cloned().flatten()?;
        if head.get(path).cloned().flatten().is_some() {
            return None;
        }
        Card::parse(&before).ok()
    };
    let mut out = Requeue {
        unwait: ids("waiting"),
        rewait: Vec::new(),
    };
    for id in ids("offered") {
        if let Some(c) = removed(&format!("{}/{id}.md", schema::REVIEW_DIR)) {
            out.rewait.push(c);
        }
    }
    for (path, _) in original.iter() {
        if !path.starts_with(schema::DECIDED_DIR) {
            continue;
        }
        let Some(mut c) = removed(path) else { continue };
        c.decision = None;
        if head.get(&c.path()).cloned().flatten().is_some() {
            continue;
        }
        if !out.rewait.iter().any(|w| w.id == c.id) {
            out.rewait.push(c);
        }
    }
    out.unwait
        .retain(|id| !out.rewait.iter().any(|c| &c.id == id));
    out
}

/// The undo that currently holds `cycle` undone (one that was not itself undone).
pub fn active_undo(notes: &[audit::CommitNote], cycle: &str) -> Option<String> {
    notes
        .iter()
        .filter(|n| n.undoes.as_deref() == Some(cycle))
        .filter_map(|n| n.head.cycle.clone())
        .find(|u| active_undo(notes, u).is_none())
}
