//! A person's decisions (SPEC S3, S4 step 8, S9) as pure functions over durable memory, the
//! archive and a review card: accept, reject, edit, and undo a fact. Each returns the lines
//! of the commit that records it; `oversight` reads the files, takes the lock, writes and
//! commits. Nothing here does I/O or reads a clock.
//!
//! - **Accept** applies the card's fact to its block (origin `review`). A card that restates
//!   an active fact reinforces it instead, so a fact is never doubled. A card that
//!   supersedes a contradicted fact gives the new fact a start of validity (`valid_from`:
//!   the first day of its evidence, never before the old fact began) and the old one the
//!   same day as its end (`valid_to`), and moves the old one to the archive
//!   (`why=superseded`, naming the new fact): the two never coexist.
//! - **Edit** re-gates the person's text against the card's supporting events with the same
//!   pure gates (coverage, entities, secrets, ...) and applies it as an `owner` fact.
//! - **Reject** records the reason on the card and returns a [`Veto`].
//! - **Undo** takes an active fact out to the archive (`why=undone`), puts back the fact it
//!   had superseded, if any, and returns a [`Veto`].

use std::collections::HashSet;

use chrono::{DateTime, NaiveDate, Utc};

use crate::schema::contract::{EventView, Proposal};
use crate::schema::settings::Config;
use crate::schema::{
    self, archive_header, excerpt, text_id, unique_id, Archived, Block, BlockFile, Card, Decision,
    Fact, Memory, Origin,
};
use crate::selection::gates::{self, Evidence, Gated};
use crate::selection::route;
use crate::selection::veto::Veto;
use crate::sources::event::Trust;

/// The archive file as a block of fact lines whose metadata carries the archive fields.
pub fn parse_archive(text: Option<&str>) -> BlockFile {
    let header = archive_header();
    BlockFile::parse(Block::Scratch, text.unwrap_or(&header), NaiveDate::MIN)
}

/// Add an entry at the end of the archive.
pub fn archive_push(archive: &mut BlockFile, a: &Archived) {
    let line = a.render();
    let fact = Fact::parse(&line, NaiveDate::MIN).expect("an archive entry renders as a fact line");
    archive.push(fact);
}

/// Every entry of the archive, in file order.
pub fn archived(archive: &BlockFile) -> Vec<Archived> {
    archive
        .facts()
        .filter(|f| !f.id.is_empty())
        .filter_map(|f| Archived::parse(&f.render()))
        .collect()
}

/// What a person decided about a card.
#[derive(Debug, Clone)]
pub enum Choice {
    Accept {
        reason: String,
    },
    Reject {
        reason: String,
    },
    /// Accept the person's own wording, already re-gated with [`regate_edit`].
    Edit {
        gated: Box<Gated>,
        reason: String,
    },
}

/// The result of a decision: the decided card, the fact it became, the commit lines.
#[derive(Debug, Clone)]
pub struct Applied {
    pub card: Card,
    pub fact_id: Option<String>,
    pub subject: String,
    pub lines: Vec<String>,
    pub veto: Option<Veto>,
}

/// Apply a person's decision on `card` to `memory` and `archive`. `decided_ids` are the ids
/// already used under `review/decided/`, so an earlier decision on the same text is kept.
#[allow(clippy::too_many_arguments)]
pub fn decide(
    memory: &mut Memory,
    archive: &mut BlockFile,
    card: &Card,
    choice: &Choice,
    decided_ids: &[String],
    now: DateTime<Utc>,
    decision_id: &str,
    config: &Config,
) -> Applied {
    let mut decided = card.clone();
    decided.id = unique_id(card.id.clone(), decided_ids);
    decided.updated = now;
    let mut lines = Vec::new();
    let (verdict, reason, fact_id, subject, veto) = match choice {
        Choice::Reject { reason } => {
            lines.push(format!(
                "rejected   {}  [{}/{}] {}  -- {}",
                card.id,
                card.block.as_str(),
                card.category,
                card.text,
                if reason.trim().is_empty() {
                    "no reason given"
                } else {
                    reason.trim()
                }
            ));
            let veto = Veto {
                id: card.id.clone(),
                kind: "rejected".into(),
                text: card.text.clone(),
                events: card.supporting_event_ids.clone(),
                reason: reason.trim().to_string(),
                at: now,
                decision: decision_id.into(),
            };
            (
                "rejected",
                reason.trim().to_string(),
                None,
                format!(
                    "dream: review: rejected {}: {}",
                    card.id,
                    excerpt(&card.text, 60)
                ),
                Some(veto),
            )
        }
        Choice::Accept { reason } | Choice::Edit { reason, .. } => {
            // The card's own words as a person accepted them, or their rewording of it.
            let (text, support, origin, verdict, how) = match choice {
                Choice::Edit { gated, .. } => {
                    (&gated.text, &gated.support, Origin::Owner, "edited", "into")
                }
                _ => (
                    &card.text,
                    &card.supporting_event_ids,
                    Origin::Review,
                    "accepted",
                    "as",
                ),
            };
            let today = now.date_naive();
            let id = apply_fact(
                memory, archive, card, text, support, origin, today, config, &mut lines,
            );
            (
                verdict,
                reason.trim().to_string(),
                Some(id.clone()),
                format!(
                    "dream: review: {verdict} {} {how} {id}: {}",
                    card.id,
                    excerpt(text, 50)
                ),
                None,
            )
        }
    };
    decided.decision = Some(Decision {
        verdict: verdict.into(),
        at: now,
        reason,
        fact_id: fact_id.clone(),
    });
    Applied {
        card: decided,
        fact_id,
        subject,
        lines,
        veto,
    }
}

/// Put the card's fact (or the person's edit of it) into memory; returns the fact's id.
#[allow(clippy::too_many_arguments)]
fn apply_fact(
    memory: &mut Memory,
    archive: &mut BlockFile,
    card: &Card,
    text: &str,
    support: &[String],
    origin: Origin,
    today: NaiveDate,
    config: &Config,
    lines: &mut Vec<String>,
) -> String {
    let verb = if origin == Origin::Owner {
        "edited    "
    } else {
        "accepted  "
    };
    let dates: Vec<NaiveDate> = card
        .excerpts
        .iter()
        .filter(|e| support.contains(&e.id))
        .map(|e| e.ts.date_naive())
        .collect();
    let first = dates.iter().min().copied().unwrap_or(today);
    let last = dates.iter().max().copied().unwrap_or(today);

    // A restatement of an active fact (other than the one it supersedes) reinforces it.
    let restated = route::nearest(memory, text, 1, &route::Restating::s6(config))
        .into_iter()
        .find(|n| n.restates && card.supersedes.as_deref() != Some(n.fact_id.as_str()));
    if let Some(n) = restated {
        let fact = memory
            .get_mut(&n.fact_id)
            .expect("nearest facts are active");
        let before = fact.support.len();
        for id in support {
            if !fact.support.contains(id) {
                fact.support.push(id.clone());
            }
        }
        if last > fact.last_seen {
            fact.last_seen = last;
        }
        lines.push(format!(
            "{verb} {} -> {}  restates it (similarity {:.3}): +{} supporting events, no new fact",
            card.id,
            n.fact_id,
            n.similarity,
            fact.support.len() - before
        ));
        return n.fact_id;
    }

    let mut taken: Vec<String> = memory.facts().map(|(_, f)| f.id.clone()).collect();
    taken.extend(archive.facts().map(|f| f.id.clone()));
    let id = unique_id(text_id("f", text), &taken);
    let mut fact = Fact::new(
        id.clone(),
        schema::one_line(text),
        card.category.clone(),
        origin,
        support.to_vec(),
        first,
        last,
    );
    let mut superseded = None;
    if let Some(old_id) = &card.supersedes {
        match memory.get(old_id).map(|(b, _)| b) {
            // An episode said again and accepted into a durable block was not wrong: it
            // graduated, and stays true for its day.
            Some(Block::Episodes) => {
                let reason = format!("said again and accepted as {id}: {}", excerpt(text, 120));
                let old = memory
                    .retire(old_id, today, "graduated", reason, id.clone())
                    .expect("an active fact");
                superseded = Some(format!(
                    "graduated {old_id}  {:?} -- said again, now {id}",
                    excerpt(&old.fact.text, 100)
                ));
                archive_push(archive, &old);
            }
            Some(_) => {
                let reason = format!("superseded by {id}: {}", excerpt(text, 120));
                let mut old = memory
                    .retire(old_id, today, "superseded", reason, id.clone())
                    .expect("an active fact");
                let start = first.max(old.fact.first_seen);
                old.fact.valid_to = Some(start);
                fact.valid_from = Some(start);
                superseded = Some(format!(
                    "superseded {old_id}  {:?} -- replaced by {id}, valid to {start}",
                    excerpt(&old.fact.text, 100)
                ));
                archive_push(archive, &old);
            }
            None => {
                superseded = Some(format!(
                    "supersedes {old_id}  no longer active; nothing to archive"
                ));
            }
        }
    }
    lines.push(format!(
        "{verb} {} -> {id}  [{}/{}] {}",
        card.id,
        card.block.as_str(),
        card.category,
        fact.text
    ));
    if origin == Origin::Owner && fact.text != card.text {
        lines.push(format!("           was: {:?}", excerpt(&card.text, 120)));
    }
    lines.extend(superseded);
    memory.block_mut(card.block).push(fact);
    id
}

/// Gate a person's rewording of a card against the card's supporting events, with the
/// gates every candidate passes (text, ids, trust, secrets, entities, coverage). The events
/// count as new: the edit is a new proposal about them.
pub fn regate_edit(
    text: &str,
    card: &Card,
    events: &[EventView],
    config: &Config,
) -> Result<Gated, String> {
    let events: Vec<EventView> = events
        .iter()
        .map(|e| EventView {
            new: true,
            ..e.clone()
        })
        .collect();
    let proposal = Proposal {
        text: text.to_string(),
        category: card.category.clone(),
        block: card.block.as_str().into(),
        supporting_event_ids: card.supporting_event_ids.clone(),
        confidence: 1.0,
        reason: "edited by a person in review".into(),
    };
    let none = HashSet::new();
    let g = gates::gate_proposal(
        &proposal,
        &Evidence::new(&events, &none).owned_by(&config.owner.names),
        config,
    );
    match &g.refused {
        Some(r) => Err(r.clone()),
        None => Ok(g),
    }
}

/// The card's excerpts as events, for when the state database no longer has them.
pub fn events_from_excerpts(card: &Card) -> Vec<EventView> {
    card.excerpts
        .iter()
        .map(|e| EventView {
            id: e.id.clone(),
            ts: e.ts,
            session: e.session.clone(),
            kind: "message".into(),
            trust: Trust::parse(&e.trust).unwrap_or(Trust::External),
            recalled: false,
            new: true,
            text: e.text.clone(),
            actor: e.actor.clone(),
        })
        .collect()
}

/// An undone fact.
#[derive(Debug, Clone)]
pub struct Undone {
    pub subject: String,
    pub lines: Vec<String>,
    pub veto: Veto,
}

/// Take an active fact out of memory into the archive (`why=undone`) and put back the fact
/// it had superseded, if that one is in the archive and its id is free.
pub fn undo_fact(
    memory: &mut Memory,
    archive: &mut BlockFile,
    fact_id: &str,
    reason: &str,
    now: DateTime<Utc>,
    decision_id: &str,
) -> Result<Undone, String> {
    let gone = memory
        .retire(
            fact_id,
            now.date_naive(),
            "undone",
            reason.into(),
            String::new(),
        )
        .ok_or_else(|| format!("{fact_id} is not an active fact"))?;
    let fact = &gone.fact;
    let mut lines = vec![format!(
        "undone     {fact_id}  [{}/{}] {}  -- {reason}",
        gone.block.as_str(),
        fact.category,
        fact.text
    )];
    let superseded = archive
        .facts()
        .filter(|f| {
            matches!(
                f.extra.get("why").map(String::as_str),
                Some("superseded" | "graduated")
            ) && f.extra.get("policy").map(String::as_str) == Some(fact_id)
        })
        .last()
        .map(|f| f.id.clone());
    if let Some(old_id) = superseded {
        if memory.get(&old_id).is_some() {
            lines.push(format!(
                "kept       {old_id}  it was superseded by {fact_id}, but an active fact has its id again"
            ));
        } else {
            let entry = archive
                .remove_where(|f| {
                    f.id == old_id
                        && matches!(
                            f.extra.get("why").map(String::as_str),
                            Some("superseded" | "graduated")
                        )
                        && f.extra.get("policy").map(String::as_str) == Some(fact_id)
                })
                .expect("found above");
            let a = Archived::parse(&entry.render()).expect("archive entries parse");
            let mut old = a.fact;
            old.valid_to = None;
            lines.push(format!(
                "restored   {old_id}  [{}/{}] {}  (superseded by {fact_id}, valid again)",
                a.block.as_str(),
                old.category,
                old.text
            ));
            memory.block_mut(a.block).push(old);
        }
    }
    let veto = Veto {
        id: fact_id.into(),
        kind: "undone".into(),
        text: fact.text.clone(),
        events: fact.support.clone(),
        reason: reason.into(),
        at: now,
        decision: decision_id.into(),
    };
    archive_push(archive, &gone);
    Ok(Undone {
        subject: format!("dream: undo {fact_id}: {}", excerpt(&fact.text, 60)),
        lines,
        veto,
    })
}

/// The 8-hex stem of an id given with any prefix (`f_`, `c_`, `k_` or none), with any
/// `-N` suffix kept: `c_1a2b3c4d` and `1a2b3c4d` both give `1a2b3c4d`.
pub fn stem(id: &str) -> &str {
    let id = id.trim();
    match id.split_once('_') {
        Some((p, rest)) if p.len() == 1 => rest,
        _ => id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Excerpt, Measures};

    fn day(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    fn now() -> DateTime<Utc> {
        "2026-11-08T20:00:00Z".parse().unwrap()
    }

    fn fact(id: &str, text: &str) -> Fact {
        Fact::new(
            id.into(),
            text.into(),
            "identity".into(),
            Origin::Auto,
            vec!["e1".into()],
            day("2026-11-01"),
            day("2026-11-02"),
        )
    }

    fn memory_with(f: Fact) -> Memory {
        let mut m = Memory::new(Block::ALL.into_iter().map(BlockFile::empty).collect());
        m.block_mut(Block::Human).push(f);
        m
    }

    fn card(text: &str, supersedes: Option<&str>) -> Card {
        Card {
            id: text_id("c", text),
            created: now(),
            updated: now(),
            cycle: "c".into(),
            text: text.into(),
            block: Block::Human,
            category: "identity".into(),
            confidence: 0.9,
            reason: "judge".into(),
            proposer_reason: String::new(),
            judge: "possible contradiction".into(),
            supersedes: supersedes.map(str::to_string),
            supersedes_text: None,
            supporting_event_ids: vec!["e7".into(), "e8".into()],
            measures: Measures::default(),
            gates: vec![],
            excerpts: vec![
                Excerpt {
                    id: "e7".into(),
                    ts: "2026-11-05T09:00:00Z".parse().unwrap(),
                    session: "s".into(),
                    trust: "owner".into(),
                    actor: String::new(),
                    text: text.into(),
                },
                Excerpt {
                    id: "e8".into(),
                    ts: "2026-11-06T09:00:00Z".parse().unwrap(),
                    session: "s".into(),
                    trust: "owner".into(),
                    actor: String::new(),
                    text: text.into(),
                },
            ],
            decision: None,
        }
    }

    #[test]
    fn accepting_a_supersede_card_closes_the_old_fact_and_opens_the_new_one() {
        let mut mem = memory_with(fact("f_old", "I live in Lisbon."));
        let mut archive = parse_archive(None);
        let c = card("I live in Porto now.", Some("f_old"));
        let a = decide(
            &mut mem,
            &mut archive,
            &c,
            &Choice::Accept {
                reason: String::new(),
            },
            &[],
            now(),
            "review-x",
            &Config::default(),
        );
        let new_id = a.fact_id.clone().unwrap();
        assert!(mem.get("f_old").is_none(), "the old fact left memory");
        let (_, new) = mem.get(&new_id).unwrap();
        assert_eq!(new.valid_from, Some(day("2026-11-05")));
        assert_eq!(new.origin, Origin::Review);
        let entries = archived(&archive);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].why, "superseded");
        assert_eq!(entries[0].policy, new_id);
        assert_eq!(entries[0].fact.valid_to, Some(day("2026-11-05")));
        assert!(entries[0].reason.contains(&new_id));
        assert_eq!(a.card.decision.as_ref().unwrap().verdict, "accepted");

        // Undoing the new fact puts the old one back, valid again.
        let u = undo_fact(&mut mem, &mut archive, &new_id, "wrong", now(), "undo-x").unwrap();
        assert!(mem.get(&new_id).is_none());
        assert_eq!(mem.get("f_old").unwrap().1.valid_to, None);
        let entries = archived(&archive);
        assert_eq!(entries.len(), 1, "{entries:?}");
        assert_eq!(entries[0].why, "undone");
        assert_eq!(u.veto.events, vec!["e7", "e8"]);
        assert!(u.lines[1].starts_with("restored   f_old"), "{:?}", u.lines);
    }

    #[test]
    fn accepting_a_restatement_reinforces_instead_of_doubling() {
        let mut mem = memory_with(fact("f_1", "I live in Lisbon."));
        let mut archive = parse_archive(None);
        let c = card("I live in Lisbon.", None);
        let a = decide(
            &mut mem,
            &mut archive,
            &c,
            &Choice::Accept {
                reason: String::new(),
            },
            &[],
            now(),
            "r",
            &Config::default(),
        );
        assert_eq!(a.fact_id.as_deref(), Some("f_1"));
        assert_eq!(mem.len(), 1);
        assert_eq!(mem.get("f_1").unwrap().1.support, vec!["e1", "e7", "e8"]);
    }

    #[test]
    fn rejecting_returns_a_veto_and_keeps_earlier_decided_cards() {
        let mut mem = memory_with(fact("f_1", "I live in Lisbon."));
        let mut archive = parse_archive(None);
        let c = card("I have a dog.", None);
        let a = decide(
            &mut mem,
            &mut archive,
            &c,
            &Choice::Reject {
                reason: "not true".into(),
            },
            std::slice::from_ref(&c.id),
            now(),
            "r",
            &Config::default(),
        );
        assert_eq!(a.card.id, format!("{}-2", c.id));
        assert_eq!(a.veto.unwrap().reason, "not true");
        assert_eq!(mem.len(), 1);
    }

    #[test]
    fn an_edit_is_regated_against_the_cards_events() {
        let c = card("I live in Porto now.", None);
        let events = events_from_excerpts(&c);
        let cfg = Config::default();
        assert!(regate_edit("I now live in Porto.", &c, &events, &cfg).is_ok());
        let err = regate_edit("I live in Madrid now.", &c, &events, &cfg).unwrap_err();
        assert!(err.contains("invented name \"Madrid\""), "{err}");
    }

    #[test]
    fn stems_accept_any_prefix() {
        assert_eq!(stem("f_1a2b3c4d"), "1a2b3c4d");
        assert_eq!(stem("k_1a2b3c4d-2"), "1a2b3c4d-2");
        assert_eq!(stem("1a2b3c4d"), "1a2b3c4d");
    }
}
