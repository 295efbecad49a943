//! Step 3 of a candidate: its route applied to memory and the cards, and recorded (a
//! commit line, a report row, the candidate's record for the state). One helper a route:
//! [`graduate`], [`keep_episode`], [`promote`], [`queue`], [`reinforce`], and a refusal.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use chrono::{DateTime, NaiveDate, Utc};

use crate::consolidation::decide::Decided;
use crate::consolidation::{CardWrite, Cycle, NotActive, Policy, Record};
use crate::memory::episodes;
use crate::operations::report::DecisionRow;
use crate::schema::{
    excerpt, text_id, unique_id, Block, Card, Decision, Excerpt, Fact, GateName, GateResult,
    Memory, Origin, MAX_CITED,
};
use crate::selection::gates::Gated;
use crate::selection::keep;
use crate::selection::route::Outcome;
use crate::sources::event::Stored;
use crate::sources::turn::owner_statement;
use crate::text::measures::{self, Citation};

/// The candidate a route is applied to: its gating, the pending card it restates (by
/// position in the cycle's cards), and the events it cites, stored and as excerpts.
#[derive(Clone, Copy)]
struct Applying<'a> {
    g: &'a Gated,
    matched: Option<usize>,
    stored: &'a [Rc<Stored>],
    events: &'a [Excerpt],
}

/// Apply a decided route to memory and the cards, and record it: a commit line, a report
/// row, and the candidate's record (which the engine stores).
pub fn apply(p: &Policy<'_>, cycle: &mut Cycle<'_>, d: Decided) -> Result<Record, NotActive> {
    let Decided {
        g,
        cand_id,
        matched,
        outcome,
        judge_text,
        gates: all_gates,
        stored,
        older,
        graduate: graduating,
    } = d;
    let events = excerpts(&stored);
    let c = Applying {
        g: &g,
        matched,
        stored: &stored,
        events: &events,
    };
    let (target, reason) = match &outcome {
        Outcome::Promote if graduating.is_some() => {
            graduate(p, cycle, c, graduating.as_deref().unwrap_or_default())?
        }
        Outcome::Episode { reason } => keep_episode(p, cycle, c, reason),
        Outcome::Promote => promote(p, cycle, c),
        Outcome::Queue { reason, supersedes } => {
            queue(p, cycle, c, reason, supersedes, &judge_text, &all_gates)
        }
        Outcome::Reinforce { fact_id } => reinforce(p, cycle, c, fact_id, &older)?,
        Outcome::Refuse { reason } => {
            cycle.lines.push(format!(
                "refused    {cand_id}  {:?}  -- {reason}",
                excerpt(&g.text, 120)
            ));
            (None, reason.clone())
        }
    };
    let label = outcome.label();
    cycle.report.candidates.add(label);
    if label == "reinforced" {
        if let Some(t) = &target {
            cycle.reinforced.insert(t.clone());
        }
    }
    cycle.report.decide(DecisionRow {
        candidate: cand_id.clone(),
        route: label.into(),
        target: target.clone(),
        text: g.text.clone(),
        block: g.block.as_str().into(),
        category: g.category.clone(),
        reason: reason.clone(),
        proposer: g.reason.clone(),
        gate: match &outcome {
            // Refused by routing, not by a hard gate: by its salience or its session's cap.
            Outcome::Refuse { .. } if g.refused.is_none() => {
                Some(GateName::Salience.as_str().to_string())
            }
            Outcome::Refuse { .. } => all_gates.iter().find(|r| !r.passed).map(|r| r.gate.clone()),
            _ => None,
        },
    });
    let json = serde_json::json!({
        "text": g.text,
        "route": label,
        "target": target,
        "reason": reason,
        "block": g.block.as_str(),
        "category": g.category,
        "confidence": g.confidence,
        "proposerReason": g.reason,
        "supportingEventIds": g.support,
        "measures": g.measures,
        "gates": all_gates,
        "judge": judge_text,
    });
    Ok(Record {
        id: cand_id,
        route: label,
        text: g.text,
        json,
    })
}

/// An episode said again moves to its block as a fact (keeping its id, its first-seen day
/// and its validity), and the card that asked about it is closed.
fn graduate(
    p: &Policy<'_>,
    cycle: &mut Cycle<'_>,
    c: Applying<'_>,
    id: &str,
) -> Result<(Option<String>, String), NotActive> {
    let Applying {
        g,
        matched,
        stored,
        events,
    } = c;
    let (_, old) = cycle.memory.remove(id).ok_or_else(|| {
        NotActive(format!(
            "routing chose to move episode {id}, which is not an active fact"
        ))
    })?;
    let (first, last) = span(p, events);
    cycle.memory.block_mut(g.block).push(Fact {
        valid_from: old.valid_from,
        valid_to: old.valid_to,
        extra: old.extra,
        ..Fact::new(
            id.to_string(),
            g.text.clone(),
            g.category.clone(),
            Origin::Auto,
            cite(&g.text, &g.support, stored),
            first.min(old.first_seen),
            last.max(old.last_seen),
        )
    });
    cycle.lines.push(format!(
        "promoted   {id}  [{}/{}] {}  (an episode said again: support {}, days {}, confidence {:.3}{})",
        g.block.as_str(),
        g.category,
        g.text,
        g.measures.support,
        g.measures.days,
        g.confidence,
        salience_note(g.salience)
    ));
    // The card that asked the person about it (said again, short of the rule)
    // is decided by the fact it now is.
    let asked = matched.or_else(|| {
        cycle
            .cards
            .iter()
            .position(|c| c.supersedes.as_deref() == Some(id))
    });
    if let Some(ci) = asked {
        let reason = "said again on enough days: it met the durable rule";
        close_card(p, cycle, ci, "promoted", reason, id, &g.support);
    }
    Ok((
        Some(id.to_string()),
        format!("{id} was an episode; said again, it meets the durable rule"),
    ))
}

/// The candidate kept in the episodes, dated by its first event.
fn keep_episode(
    p: &Policy<'_>,
    cycle: &mut Cycle<'_>,
    c: Applying<'_>,
    reason: &str,
) -> (Option<String>, String) {
    let Applying {
        g,
        matched,
        stored,
        events,
    } = c;
    let (first, last) = span(p, events);
    let text = episodes::text(first, &g.text);
    let id = fresh_id(cycle.memory, &text);
    let mut support = cite(&g.text, &g.support, stored);
    // The day it starts with traces to its first event: keep citing that one.
    if let Some(e) = stored.iter().min_by_key(|s| s.event.ts) {
        if !support.contains(&e.event.id) {
            support.truncate(MAX_CITED - 1);
            support.insert(0, e.event.id.clone());
        }
    }
    cycle.memory.block_mut(Block::Episodes).push(Fact {
        home: (g.block != Block::Episodes).then_some(g.block),
        ..Fact::new(
            id.clone(),
            text.clone(),
            g.category.clone(),
            Origin::Auto,
            support,
            first,
            last,
        )
    });
    if let Some(ci) = matched {
        let reason =
            "fully traceable to the owner's own words; it moves to its block when said again";
        close_card(p, cycle, ci, "kept as an episode", reason, &id, &g.support);
    }
    cycle.lines.push(format!(
        "episode    {id}  [episodes/{}] {text}  -- {reason}{}",
        g.category,
        salience_note(g.salience)
    ));
    (Some(id), reason.to_string())
}

/// The candidate becomes a fact of its block.
fn promote(p: &Policy<'_>, cycle: &mut Cycle<'_>, c: Applying<'_>) -> (Option<String>, String) {
    let Applying {
        g,
        matched,
        stored,
        events,
    } = c;
    let id = fresh_id(cycle.memory, &g.text);
    let (first, last) = span(p, events);
    cycle.memory.block_mut(g.block).push(Fact::new(
        id.clone(),
        g.text.clone(),
        g.category.clone(),
        Origin::Auto,
        cite(&g.text, &g.support, stored),
        first,
        last,
    ));
    if let Some(ci) = matched {
        let reason = "new evidence made it qualify for auto-promotion";
        close_card(p, cycle, ci, "auto-promoted", reason, &id, &g.support);
    }
    cycle.lines.push(format!(
        "promoted   {id}  [{}/{}] {}  (support {}, days {}, confidence {:.3}{})",
        g.block.as_str(),
        g.category,
        g.text,
        g.measures.support,
        g.measures.days,
        g.confidence,
        salience_note(g.salience)
    ));
    (Some(id), String::new())
}

/// The candidate as a pending card for a person (a new one, or the card it restates,
/// updated); its file is written once, as it stands at the end of the cycle.
fn queue(
    p: &Policy<'_>,
    cycle: &mut Cycle<'_>,
    c: Applying<'_>,
    reason: &str,
    supersedes: &Option<String>,
    judge_text: &str,
    gates: &[GateResult],
) -> (Option<String>, String) {
    let Applying {
        g, matched, events, ..
    } = c;
    let existing = matched.map(|ci| &cycle.cards[ci]);
    let card = build_card(
        p,
        g,
        existing,
        reason,
        supersedes,
        cycle.memory,
        judge_text,
        gates,
        events,
    );
    let unchanged = existing.is_some_and(|old| same_card(old, &card));
    if !unchanged {
        cycle.card_writes.insert(card.path(), CardWrite::Pending);
        cycle.lines.push(format!(
            "queued     {}  [{}/{}] {}  -- {}{}",
            card.id,
            g.block.as_str(),
            g.category,
            g.text,
            reason,
            salience_note(g.salience)
        ));
    }
    let id = card.id.clone();
    match matched {
        Some(ci) if !unchanged => cycle.cards[ci] = card,
        Some(_) => {}
        None => cycle.cards.push(card),
    }
    (Some(id), reason.to_string())
}

/// The restated fact cites the new events and is seen as late as they are.
fn reinforce(
    p: &Policy<'_>,
    cycle: &mut Cycle<'_>,
    c: Applying<'_>,
    fact_id: &str,
    older: &[Rc<Stored>],
) -> Result<(Option<String>, String), NotActive> {
    let Applying {
        g, stored, events, ..
    } = c;
    let fact = cycle.memory.get_mut(fact_id).ok_or_else(|| {
        NotActive(format!(
            "routing chose to reinforce {fact_id}, which is not an active fact"
        ))
    })?;
    // What the restatement adds: the owner's statements that say it again, not every
    // event a model cited beside them (those would keep the fact alive, `last_seen`, on
    // talk that only touches it).
    let before = fact.support.len();
    for id in &g.establishing {
        if !fact.support.contains(id) {
            fact.support.push(id.clone());
        }
    }
    let added = fact.support.len() - before;
    if fact.support.len() > MAX_CITED {
        fact.support = cite(&fact.text, &fact.support, stored.iter().chain(older));
    }
    let saying = events.iter().filter(|e| g.establishing.contains(&e.id));
    let (_, last) = if saying.clone().next().is_some() {
        span(p, saying)
    } else {
        span(p, events)
    };
    if last > fact.last_seen {
        fact.last_seen = last;
    }
    if added > 0 {
        cycle.lines.push(format!(
            "reinforced {fact_id}  +{added} supporting events, last seen {}",
            fact.last_seen
        ));
    }
    Ok((
        Some(fact_id.to_string()),
        format!("restates {fact_id} (+{added} supporting events)"),
    ))
}

/// A new fact's id: the hash of its text, made unique among the active facts.
fn fresh_id(memory: &Memory, text: &str) -> String {
    let taken: Vec<String> = memory.facts().map(|(_, f)| f.id.clone()).collect();
    unique_id(text_id("f", text), &taken)
}

/// What a kept line's commit line says of its salience (`dream verify` reads it back).
fn salience_note(worth: Option<keep::Worth>) -> String {
    worth.map(|w| format!("; {}", w.note())).unwrap_or_default()
}

/// Decide the pending card `ci` by the fact a candidate just became (`fact_id`, cited by
/// `support`): the card leaves `review/` and is written under `review/decided/` with
/// `verdict` and `reason`.
fn close_card(
    p: &Policy<'_>,
    cycle: &mut Cycle<'_>,
    ci: usize,
    verdict: &str,
    reason: &str,
    fact_id: &str,
    support: &[String],
) {
    let mut card = cycle.cards.remove(ci);
    cycle.card_writes.insert(card.path(), CardWrite::Delete);
    card.decision = Some(Decision {
        verdict: verdict.into(),
        at: p.now,
        reason: reason.into(),
        fact_id: Some(fact_id.into()),
    });
    card.supporting_event_ids = support.to_vec();
    cycle
        .card_writes
        .insert(card.path(), CardWrite::Text(card.render()));
}

/// Two versions of a card say the same thing (ignoring when they were written).
fn same_card(a: &Card, b: &Card) -> bool {
    let strip = |c: &Card| Card {
        updated: c.created,
        cycle: String::new(),
        excerpts: Vec::new(),
        ..c.clone()
    };
    let mut a = strip(a);
    let mut b = strip(b);
    a.supporting_event_ids.sort();
    b.supporting_event_ids.sort();
    a == b
}

fn excerpts(stored: &[Rc<Stored>]) -> Vec<Excerpt> {
    stored.iter().map(|s| Excerpt::of(&s.event)).collect()
}

/// The ids a fact with this text cites out of `ids` (at most [`MAX_CITED`]: those that
/// trace it, then recent ones), from the events in `stored`. An id with no stored event
/// (which verify would report) is kept, so nothing hides it.
fn cite<'a>(
    text: &str,
    ids: &[String],
    stored: impl IntoIterator<Item = &'a Rc<Stored>>,
) -> Vec<String> {
    if ids.len() <= MAX_CITED {
        return ids.to_vec();
    }
    let by_id: HashMap<&str, &Stored> = stored
        .into_iter()
        .map(|s| (s.event.id.as_str(), &**s))
        .collect();
    // Over the cap, the owner's statements are what a fact rests on: context goes first.
    let owners: Vec<String> = ids
        .iter()
        .filter(|id| {
            by_id
                .get(id.as_str())
                .is_none_or(|s| owner_statement(s.event.trust, &s.event.kind, s.event.recalled))
        })
        .cloned()
        .collect();
    let ids = if owners.is_empty() { ids } else { &owners[..] };
    if ids.len() <= MAX_CITED {
        return ids.to_vec();
    }
    let (found, lost): (Vec<&String>, Vec<&String>) =
        ids.iter().partition(|id| by_id.contains_key(id.as_str()));
    let events: Vec<Citation> = found
        .iter()
        .map(|id| {
            let e = &by_id[id.as_str()].event;
            Citation {
                text: &e.text,
                day: e.ts.timestamp().div_euclid(86_400),
            }
        })
        .collect();
    let room = MAX_CITED.saturating_sub(lost.len());
    let keep: HashSet<usize> = measures::cited(text, &events, room).into_iter().collect();
    let kept: HashSet<&str> = found
        .iter()
        .enumerate()
        .filter(|(i, _)| keep.contains(i))
        .map(|(_, id)| id.as_str())
        .chain(lost.iter().map(|id| id.as_str()))
        .collect();
    ids.iter()
        .filter(|id| kept.contains(id.as_str()))
        .cloned()
        .collect()
}

/// The first and last day of the events, as the person lived them ([`Policy::local_day`]),
/// not the UTC day, so a session at 00:24 local time is dated that day; the cycle's day
/// when there are none. (Transcripts give their times in UTC; an event's own offset is
/// not kept once it is parsed.)
fn span<'a>(
    p: &Policy<'_>,
    events: impl IntoIterator<Item = &'a Excerpt> + Clone,
) -> (NaiveDate, NaiveDate) {
    let local = |ts: DateTime<Utc>| (p.local_day)(ts);
    let days = || events.clone().into_iter().map(|e| local(e.ts));
    (
        days().min().unwrap_or(p.today),
        days().max().unwrap_or(p.today),
    )
}

/// The card a queued candidate is: a new one, or the card it restates with its id and the
/// day it was made kept.
#[allow(clippy::too_many_arguments)]
fn build_card(
    p: &Policy<'_>,
    g: &Gated,
    existing: Option<&Card>,
    reason: &str,
    supersedes: &Option<String>,
    memory: &Memory,
    judge: &str,
    gates: &[GateResult],
    excerpts: &[Excerpt],
) -> Card {
    Card {
        id: existing
            .map(|c| c.id.clone())
            .unwrap_or_else(|| text_id("c", &g.text)),
        created: existing.map_or(p.now, |c| c.created),
        updated: p.now,
        cycle: p.cycle_id.into(),
        text: g.text.clone(),
        block: g.block,
        category: g.category.clone(),
        confidence: g.confidence,
        reason: reason.into(),
        proposer_reason: g.reason.clone(),
        judge: judge.into(),
        supersedes: supersedes.clone(),
        supersedes_text: supersedes
            .as_ref()
            .and_then(|id| memory.get(id))
            .map(|(_, f)| f.text.clone()),
        supporting_event_ids: g.support.clone(),
        measures: g.measures.clone(),
        gates: gates.to_vec(),
        excerpts: excerpts.to_vec(),
        decision: None,
    }
}
