//! The review queue (issue 28): a person is asked about at most `review.max_new_cards`
//! cards at a time. A cycle tops the queue up, best first (a card proposing to supersede a
//! fact, then by salience: `keep::offer`); the cards that do not fit wait in the state
//! database (`waiting`), nothing lost, and are offered as a person's decisions make room.
//! A waiting card restated by a later candidate is updated as a pending one would be, and
//! one not restated for `episodes.retention_days`, or the oldest over `episodes.max_facts`,
//! expires (the episode rules).
//!
//! `consolidate` loads the waiting cards beside the pending ones before it routes
//! ([`load`]) and settles the queue before it builds its change ([`settle`]); an evening
//! that has nothing new to reflect on still offers waiting cards to a queue that drained
//! ([`offer_waiting`], its own `queue` commit). The waiting rows change in the cycle's
//! state transaction, which commits with the cycle's commits: a crash leaves both as they
//! were or as the cycle left them.

use std::collections::{BTreeMap, HashSet};

use chrono::NaiveDate;

use crate::edges::state::{self, Connection};
use crate::edges::store::{Change, Store};
use crate::error::Result;
use crate::stages::{Ctx, Work};
use dream_core::consolidation::CardWrite;
use dream_core::schema::{self, Card, Stage};
use dream_core::selection::keep;

/// Which of `work.cards` were pending in `review/` and which were waiting when the stage
/// began.
#[derive(Debug, Default)]
pub struct Loaded {
    pub pending: HashSet<String>,
    pub waiting: HashSet<String>,
}

/// Put the waiting cards beside the pending ones in `work.cards`, so a candidate that
/// restates one joins it as it would join a pending card.
pub fn load(tx: &Connection, work: &mut Work) -> Result<Loaded> {
    let pending = work.cards.iter().map(|c| c.id.clone()).collect();
    let (cards, bad) = state::waiting(tx)?;
    for b in bad {
        work.report.notes.push(format!(
            "a waiting card does not parse and was left as it is: {b}"
        ));
    }
    let waiting: HashSet<String> = cards.iter().map(|c| c.id.clone()).collect();
    for c in cards {
        if !work.cards.iter().any(|p| p.id == c.id) {
            work.cards.push(c);
        }
    }
    Ok(Loaded { pending, waiting })
}

/// Settle the queue after routing: waiting cards expire by the episode rules, the best of
/// the new and waiting cards fill the room the pending ones leave, the rest wait. Rewrites
/// `writes` (a card that waits has no file) and the commit `lines` (a new card that waits
/// says so; a waiting card queued now is `offered`), and records the waiting rows in `tx`.
pub fn settle(
    ctx: &Ctx<'_>,
    tx: &Connection,
    work: &mut Work,
    loaded: &Loaded,
    writes: &mut BTreeMap<String, CardWrite>,
    lines: &mut Vec<String>,
) -> Result<()> {
    // Waiting cards a candidate decided (promoted, kept as an episode) were never files.
    for id in &loaded.waiting {
        if !work.cards.iter().any(|c| &c.id == id) {
            writes.retain(|path, _| !is_card_path(path, id));
            state::delete_waiting(tx, id)?;
        }
    }
    let today = ctx.today;
    let cfg = &ctx.config.episodes;
    let mut expired: Vec<Card> = Vec::new();
    let cards = std::mem::take(&mut work.cards);
    let (mut pending, mut offered): (Vec<Card>, Vec<Card>) = cards
        .into_iter()
        .partition(|c| loaded.pending.contains(&c.id));
    offered.retain(|c| {
        let stale = (today - local_day(c)).num_days() > i64::from(cfg.retention_days);
        if stale && loaded.waiting.contains(&c.id) {
            expired.push(c.clone());
        }
        !(stale && loaded.waiting.contains(&c.id))
    });
    let refs: Vec<&Card> = offered.iter().collect();
    let (queue, wait) = keep::offer(&refs, pending.len(), ctx.config.review.max_new_cards);
    let queue: HashSet<usize> = queue.into_iter().collect();
    let ahead: std::collections::HashMap<usize, usize> =
        wait.iter().enumerate().map(|(r, &i)| (i, r)).collect();
    let mut waiting: Vec<Card> = Vec::new();
    for (i, c) in offered.into_iter().enumerate() {
        let was_waiting = loaded.waiting.contains(&c.id);
        if queue.contains(&i) {
            if was_waiting {
                state::delete_waiting(tx, &c.id)?;
                writes.insert(c.path(), CardWrite::Pending);
                lines.push(format!(
                    "offered    {}  [{}/{}] {}  -- waited for room in the review queue since {}{}",
                    c.id,
                    c.block.as_str(),
                    c.category,
                    c.text,
                    c.created.date_naive(),
                    score_note(&c)
                ));
            }
            work.report.review.new_cards += 1;
            pending.push(c);
        } else {
            writes.retain(|path, _| !is_card_path(path, &c.id));
            let queued = format!("queued     {} ", c.id);
            for l in lines.iter_mut().filter(|l| l.starts_with(&queued)) {
                *l = format!(
                    "waiting    {}  (waits for room in the review queue: review.max_new_cards = {}, {} waiting ahead of it)",
                    &l["queued     ".len()..],
                    ctx.config.review.max_new_cards,
                    ahead.get(&i).copied().unwrap_or(0)
                );
            }
            waiting.push(c);
        }
    }
    // Over the episodes' cap, the oldest waiting cards go first.
    if waiting.len() > cfg.max_facts {
        waiting.sort_by(|a, b| a.updated.cmp(&b.updated).then(a.id.cmp(&b.id)));
        let over = waiting.len() - cfg.max_facts;
        expired.extend(waiting.drain(..over));
    }
    for c in &waiting {
        state::put_waiting(tx, c)?;
    }
    for c in &expired {
        state::delete_waiting(tx, &c.id)?;
    }
    if !expired.is_empty() {
        work.report.notes.push(format!(
            "{} waiting review cards expired by the episode rules (not restated for episodes.retention_days {}, or the oldest over episodes.max_facts {}), for example {:?}",
            expired.len(),
            cfg.retention_days,
            cfg.max_facts,
            schema::excerpt(&expired[0].text, 60)
        ));
    }
    work.report.review.expired += expired.len();
    work.report.review.pending = pending.len();
    work.report.review.waiting = waiting.len();
    work.cards = pending;
    Ok(())
}

/// A waiting card's last restatement, as a local day.
fn local_day(c: &Card) -> NaiveDate {
    c.updated.with_timezone(&chrono::Local).date_naive()
}

fn is_card_path(path: &str, id: &str) -> bool {
    path.ends_with(&format!("/{id}.md"))
}

fn score_note(c: &Card) -> String {
    keep::recorded(&c.gates)
        .map(|s| format!("; salience {s:.3}"))
        .unwrap_or_default()
}

/// An evening with nothing new to reflect on: waiting cards still fill the room a person's
/// decisions made in the queue (its own `queue` commit).
pub fn offer_waiting(ctx: &Ctx<'_>, tx: &Connection, work: &mut Work, store: &Store) -> Result<()> {
    if state::waiting_count(tx)? == 0 {
        return Ok(());
    }
    if work.cards.is_empty() {
        let (cards, _) = store.pending_cards()?;
        work.cards = cards;
    }
    let loaded = load(tx, work)?;
    let mut writes: BTreeMap<String, CardWrite> = BTreeMap::new();
    let mut lines: Vec<String> = Vec::new();
    settle(ctx, tx, work, &loaded, &mut writes, &mut lines)?;
    let mut change = Change::default();
    let pending: std::collections::HashMap<String, &Card> =
        work.cards.iter().map(|c| (c.path(), c)).collect();
    for (path, w) in writes {
        if let (CardWrite::Pending, Some(c)) = (&w, pending.get(&path)) {
            change.write(path, c.render());
        }
    }
    if !change.is_empty() {
        let q = &work.report.review;
        let subject = format!(
            "dream: {} cycle {}: {} waiting cards queued, {} still wait",
            ctx.opts.kind.as_str(),
            ctx.today,
            q.new_cards,
            q.waiting
        );
        work.push_stage(ctx, Stage::Queue, change, &subject, &lines, 0);
    }
    Ok(())
}
