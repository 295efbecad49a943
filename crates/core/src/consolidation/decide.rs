//! Step 1 of a candidate: read what its route depends on and decide it. Nothing is changed
//! here; [`Decided`] carries the route and what applying it takes.

use std::collections::HashSet;
use std::rc::Rc;

use crate::consolidation::merge::{merge_into_card, merge_into_episode};
use crate::consolidation::{Events, Policy, Routing};
use crate::memory::episodes;
use crate::schema::contract::Verdict;
use crate::schema::settings::Config;
use crate::schema::{text_id, Block, Card, GateResult, Memory, MAX_CITED};
use crate::selection::gates::Gated;
use crate::selection::route::{self, Near, Outcome, Texts};
use crate::selection::veto::{self, Veto};
use crate::sources::event::Stored;
use crate::text::measures;

/// Facts a candidate is compared with (the judge is shown as many).
pub const NEIGHBOURS: usize = 5;

/// What the cycle knows about one gated candidate once everything it needs is read:
/// the route the pure `route` and `veto` functions chose, and the data applying it takes.
pub struct Decided {
    /// The candidate, merged into the pending card it restates when there is one.
    pub g: Gated,
    pub cand_id: String,
    /// The pending card it restates, by position in the cycle's cards.
    pub matched: Option<usize>,
    pub outcome: Outcome,
    pub judge_text: String,
    /// Every gate's row: the proposal's gates, then routing's.
    pub gates: Vec<GateResult>,
    /// The supporting events, and for a reinforcement that must choose which ids to cite,
    /// the events the fact already cites.
    pub stored: Vec<Rc<Stored>>,
    pub older: Vec<Rc<Stored>>,
    /// The episode this candidate's restatement moves to its durable block.
    pub graduate: Option<String>,
}

/// Decide one candidate's route, in six steps.
pub fn decide<E: Events>(
    p: &Policy<'_>,
    events: &mut E,
    memory: &Memory,
    cards: &[Card],
    routing: &mut Routing<'_>,
    g: &Gated,
    verdict: Option<&Verdict>,
) -> Result<Decided, E::Error> {
    let config = p.config;
    let cand_id = text_id("k", &g.text);
    let near = route::nearest_cached(
        memory,
        &g.text,
        NEIGHBOURS,
        routing.restating,
        routing.texts,
    );
    // 1. The pending card it restates, joined with it.
    let matched = if g.refused.is_none() {
        matching_card(cards, &g.text, config, routing.texts)
    } else {
        None
    };
    let mut g = match matched {
        Some(ci) => merge_into_card(p, events, &cards[ci], g)?,
        None => g.clone(),
    };
    // 2. Novelty against durable memory (S4 step 6): 1 - similarity to the nearest fact.
    g.measures.novelty = measures::round3(1.0 - near.first().map_or(0.0, |n| n.similarity));
    g.measures.nearest_fact = near.first().map(|n| n.fact_id.clone());
    // 3. The person's vetoes.
    let (g, hit) = check_vetoes(events, g, routing.vetoes, config)?;
    // 4. The route, capped by a veto with new evidence.
    let (mut outcome, judge_text, route_gates) = route::route(&g, &near, verdict, config);
    outcome = veto::cap(outcome, hit.as_ref());
    let mut gates = g.gates.clone();
    gates.extend(route_gates);
    let mut d = Decided {
        g,
        cand_id,
        matched,
        outcome,
        judge_text,
        gates,
        stored: Vec::new(),
        older: Vec::new(),
        graduate: None,
    };
    // 5. An episode said again: a card for a person, or its move to its block.
    said_again(p, events, memory, &near, verdict, &mut d)?;
    // 6. The events it cites, and for a reinforcement over the cap those the fact cites.
    d.stored = events.by_ids(&d.g.support)?;
    d.older = older_support(events, memory, &d)?;
    Ok(d)
}

/// A restated episode whose support now meets the durable rule moves to its block: the
/// episode's words, with the union of both supports, routed again. Said again by the owner
/// yet short of the rule, it becomes a card that proposes its durable block.
fn said_again<E: Events>(
    p: &Policy<'_>,
    events: &mut E,
    memory: &Memory,
    near: &[Near],
    verdict: Option<&Verdict>,
    d: &mut Decided,
) -> Result<(), E::Error> {
    let config = p.config;
    let Outcome::Reinforce { fact_id } = &d.outcome else {
        return Ok(());
    };
    let Some((Block::Episodes, ep)) = memory.get(fact_id) else {
        return Ok(());
    };
    let (Some(home), true) = (ep.home, episodes::governed(ep.origin)) else {
        return Ok(());
    };
    let fact_id = fact_id.clone();
    let merged = merge_into_episode(p, events, ep, home, &d.g)?;
    if let Some((merged, false)) = merged {
        // Said again by the owner, yet short of the durable rule: more than a single
        // mention is not an episode, and two statements are not enough to skip the person.
        // A card proposes its durable block; accepting it retires the episode.
        // Salience as well as corroboration: said again below KEEP, it only reinforces its
        // episode.
        if merged.refused.is_none()
            && outcome_allows_card(&d.outcome)
            && merged.salience.is_none_or(|w| w.keeps())
        {
            d.outcome = Outcome::Queue {
                reason: format!(
                    "{fact_id} said again: {} statements of the owner's on {} days, short of the durable rule (min_support {}, min_days {}); a person decides whether it belongs in {}",
                    merged.measures.support,
                    merged.measures.days,
                    config.promote.min_support,
                    config.promote.min_days,
                    home.as_str()
                ),
                supersedes: Some(fact_id.clone()),
            };
            d.gates = merged.gates.clone();
            d.g = merged;
        }
    } else if let Some((merged, true)) = merged {
        let rest: Vec<Near> = near
            .iter()
            .filter(|n| n.fact_id != fact_id)
            .cloned()
            .collect();
        let v = verdict.cloned().map(|mut v| {
            v.contradicts = v.contradicts.filter(|c| *c != fact_id);
            v.duplicate_of = v.duplicate_of.filter(|x| *x != fact_id);
            v
        });
        let (o, j, rg) = route::route(&merged, &rest, v.as_ref(), config);
        if o == Outcome::Promote {
            d.graduate = Some(fact_id);
            d.gates = merged.gates.clone();
            d.gates.extend(rg);
            d.g = merged;
            d.outcome = o;
            d.judge_text = j;
        }
    }
    Ok(())
}

/// For a reinforcement that takes its fact over [`MAX_CITED`] events, the events the fact
/// already cites (it then chooses which ids to keep citing).
fn older_support<E: Events>(
    events: &mut E,
    memory: &Memory,
    d: &Decided,
) -> Result<Vec<Rc<Stored>>, E::Error> {
    let Outcome::Reinforce { fact_id } = &d.outcome else {
        return Ok(Vec::new());
    };
    match memory.get(fact_id) {
        Some((_, fact)) if fact.support.len() + d.g.support.len() > MAX_CITED => {
            let fresh: HashSet<&str> = d.g.support.iter().map(String::as_str).collect();
            let older: Vec<String> = fact
                .support
                .iter()
                .filter(|id| !fresh.contains(id.as_str()))
                .cloned()
                .collect();
            events.by_ids(&older)
        }
        _ => Ok(Vec::new()),
    }
}

/// Whether an episode said again may become a card: not when the person vetoed it, or the
/// restatement was refused.
fn outcome_allows_card(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Reinforce { .. })
}

/// Hold a candidate that passed the gates against a person's earlier rejections and undos
/// (see `veto`): the veto's gate joins the candidate's, and a refusal refuses it.
fn check_vetoes<E: Events>(
    events: &mut E,
    mut g: Gated,
    vetoes: &[Veto],
    config: &Config,
) -> Result<(Gated, Option<veto::Hit>), E::Error> {
    if vetoes.is_empty() || g.refused.is_some() {
        return Ok((g, None));
    }
    let events = events.by_ids(&g.support)?;
    let support: Vec<(&str, &str)> = events
        .iter()
        .map(|s| (s.event.id.as_str(), s.event.text.as_str()))
        .collect();
    let hit = veto::check(&g.text, &support, vetoes, config);
    if let Some(h) = &hit {
        g.gates.push(h.gate.clone());
        if let veto::Effect::Refuse(reason) = &h.effect {
            g.refused = Some(reason.clone());
        }
    }
    Ok((g, hit))
}

/// The pending card a candidate restates, if any.
fn matching_card(cards: &[Card], text: &str, config: &Config, texts: &mut Texts) -> Option<usize> {
    route::restated_in_words(
        texts,
        text,
        cards.iter().map(|c| c.text.as_str()),
        config.promote.reinforce_similarity,
    )
}
