//! A candidate joined with what it says again: a pending card (the card's text with the
//! union of both supports) or an episode (its words proposed for its durable block). Either
//! is gated again as one proposal, against the union of the events both cite, as the first
//! gating was.

use std::collections::HashSet;

use crate::consolidation::{Events, Policy};
use crate::llm::offline;
use crate::schema::contract::{EventView, Proposal};
use crate::schema::{episode_body, Block, Card, Fact};
use crate::selection::gates::{self, Evidence, Gated, Sources};

/// A candidate that restates a pending card: the card's text with the union of both
/// supports, gated again as one proposal. A restatement that adds no new event leaves
/// the candidate as it was.
pub fn merge_into_card<E: Events>(
    p: &Policy<'_>,
    events: &mut E,
    card: &Card,
    g: &Gated,
) -> Result<Gated, E::Error> {
    let (ids, views) = union_support(events, &card.supporting_event_ids, &g.support)?;
    let proposal = Proposal {
        text: card.text.clone(),
        category: card.category.clone(),
        block: card.block.as_str().into(),
        supporting_event_ids: ids,
        confidence: card.confidence.max(g.confidence),
        reason: g.reason.clone(),
    };
    let merged = gate_merged(p, &proposal, &views, events.sources());
    Ok(if merged.refused.is_some() {
        g.clone()
    } else {
        merged
    })
}

/// An episode said again: its own words (without the day it starts with) as a proposal for
/// its durable block `home`, with the union of both supports, gated again. Its confidence
/// is the higher of the candidate's and what its independent restatements give (`1 -
/// 0.4^k`, as the offline reflector reckons it), and whether its support and days meet the
/// durable rule. `None` when fewer than two statements of the owner's support it (an
/// agent's or a tool's restatement is not the owner saying it again), or, when it meets
/// the rule, when the gates refuse it.
pub fn merge_into_episode<E: Events>(
    p: &Policy<'_>,
    events: &mut E,
    ep: &Fact,
    home: Block,
    g: &Gated,
) -> Result<Option<(Gated, bool)>, E::Error> {
    let config = p.config;
    let (ids, views) = union_support(events, &ep.support, &g.support)?;
    let refs: Vec<&EventView> = views.iter().filter(|e| !e.recalled).collect();
    let (measured, independent) = gates::support_measures(&refs);
    if measured.support < 2 {
        return Ok(None);
    }
    let proposal = Proposal {
        text: episode_body(&ep.text).to_string(),
        category: ep.category.clone(),
        block: home.as_str().into(),
        supporting_event_ids: ids,
        confidence: g.confidence.max(offline::confidence(independent)),
        reason: format!("{} said again ({})", ep.id, g.reason),
    };
    let merged = gate_merged(p, &proposal, &views, events.sources());
    // Counted as the gates count: the statements that say it again, not every one cited.
    if merged.measures.support < 2 {
        return Ok(None);
    }
    let meets = merged.measures.support >= config.promote.min_support
        && merged.measures.days >= config.promote.min_days;
    if meets && merged.refused.is_some() {
        return Ok(None);
    }
    Ok(Some((merged, meets)))
}

/// Gate a merged proposal (an episode said again, a card joined) against the union of
/// the events both cite, as the first gating did: the owner's names traceable, each
/// event's words from the part's `sources`, the statement scored.
fn gate_merged(
    p: &Policy<'_>,
    proposal: &Proposal,
    events: &[EventView],
    sources: &Sources,
) -> Gated {
    let none = HashSet::new();
    gates::gate_proposal(
        proposal,
        &Evidence::new(events, &none)
            .owned_by(&p.config.owner.names)
            .with_sources(sources)
            .scored_by(p.scorer),
        p.config,
    )
}

/// The union of what an episode or a card already cites (`earlier`) and a candidate's
/// support (`added`), and those events as the gates see them (the added ones new).
fn union_support<E: Events>(
    events: &mut E,
    earlier: &[String],
    added: &[String],
) -> Result<(Vec<String>, Vec<EventView>), E::Error> {
    let mut ids = earlier.to_vec();
    for id in added {
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    let views = events
        .by_ids(&ids)?
        .iter()
        .map(|s| {
            let mut v = EventView::of(&s.event, !s.reflected);
            v.new = added.contains(&v.id) && !earlier.contains(&v.id);
            v
        })
        .collect();
    Ok((ids, views))
}
