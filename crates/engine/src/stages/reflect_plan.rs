//! The reflect calls of a cycle, and what each sends (SPEC S4 step 5). The decisions are
//! the pure ones of `dream_core::llm::plan`; this file reads what they need (the events'
//! text, memory's facts and pending cards) and builds the calls.
//!
//! With the offline reflector (free, and it counts restatements itself) each cluster is
//! one call, or several of at most `cluster.max_events_per_prompt` events, filled up with
//! its earlier events in full. With a model, which charges every token, each event's text
//! is sent once: a new event that says a fact again word for word is handed to the gates
//! and routing as the engine's proposal of that fact, with no call; the other new events
//! are sent in full, with what their cluster's earlier events came to (the facts and cards
//! citing them, by id and text) instead of those events' text; and small clusters share a
//! prompt, with the sessions' single mentions (a group per session, shown as one part).
//! The offline reflector gets each session's single mentions as a call of their own. With
//! a model, a new event none of whose sentences scores `salience::SEND` is not sent at all
//! (`keep::worth_sending`): it could not become a line without being said again. The
//! gates check every proposal against the full text of the events it cites.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::edges::state::{self, Connection};
use crate::error::Result;
use dream_core::llm::plan;
use dream_core::llm::Llm;
use dream_core::schema::contract::{EventView, Known, Proposal, ReflectPart, ReflectPrompt};
use dream_core::schema::settings::Config;
use dream_core::schema::{self, Card, Memory};
use dream_core::selection::gates::{self, Evidence};
use dream_core::selection::keep;
use dream_core::sources::event::Stored;

/// One reflect call: one prompt of one or more clusters.
pub struct Call {
    pub prompt: ReflectPrompt,
    /// `3`, `3 part 2/5` for a cluster larger than the prompt cap, `3+7+12` for clusters
    /// sharing a prompt.
    pub label: String,
    /// Row ids of the new events it shows: marked as seen when the call succeeds.
    pub new: Vec<i64>,
    /// What it sends ([`plan::key`]).
    pub key: String,
    /// When its oldest new event happened (Unix seconds).
    pub oldest: i64,
}

/// The calls of a cycle, and what needs none.
#[derive(Default)]
pub struct Planned {
    pub calls: Vec<Call>,
    /// The engine's proposals for new events that say a fact again word for word, each
    /// with the events the gates check it against.
    pub restated: Vec<(Proposal, Vec<EventView>)>,
    /// Row ids of those events: seen, since no model needs to read them.
    pub restated_seen: Vec<i64>,
    /// Row ids of new events no sentence of which scores `salience::SEND`
    /// (`keep::worth_sending`): looked at, and not sent to the model (issue 28).
    pub below_send: Vec<i64>,
}

/// What the cluster stage selected, as the planner reads it.
pub struct Input<'a> {
    /// The clusters holding a new event, as rows of `window`; cluster `n` is `selected[n]`.
    pub selected: &'a [Vec<usize>],
    /// New single mentions worth a look, by session (row id and event, oldest first, at
    /// most `cluster.max_events_per_prompt` a group); group `g` is numbered
    /// `selected.len() + g`.
    pub singles: &'a [Vec<(i64, EventView)>],
    pub window: &'a state::Window,
    pub memory: &'a Memory,
    pub cards: &'a [Card],
}

/// The reflect calls for the selected clusters (see the module).
pub fn plan(tx: &Connection, input: &Input<'_>, config: &Config, llm: &dyn Llm) -> Result<Planned> {
    let model = llm.tokenizer_key().unwrap_or_else(|| llm.name());
    if llm.offline() {
        let mut calls = Vec::new();
        for (n, c) in input.selected.iter().enumerate() {
            calls.extend(whole_cluster_calls(tx, n, c, input.window, config, &model)?);
        }
        for (g, group) in input.singles.iter().enumerate() {
            let n = input.selected.len() + g;
            let prompt = ReflectPrompt {
                parts: vec![ReflectPart {
                    cluster: n,
                    known: Vec::new(),
                    events: group.iter().map(|(_, e)| e.clone()).collect(),
                    singles: true,
                }],
            };
            calls.push(Call {
                key: key(&model, config, &prompt),
                prompt,
                label: format!("{n} (single mentions)"),
                new: group.iter().map(|(seq, _)| *seq).collect(),
                oldest: group
                    .iter()
                    .map(|(_, e)| e.ts.timestamp())
                    .min()
                    .unwrap_or(i64::MAX),
            });
        }
        return Ok(Planned {
            calls,
            ..Planned::default()
        });
    }
    model_calls(tx, input, config, &model)
}

fn key(model: &str, config: &Config, prompt: &ReflectPrompt) -> String {
    plan::key(
        model,
        config.llm.max_tokens,
        config.llm.timeout_secs,
        prompt.ids(),
    )
}

/// The offline reflector's calls for one cluster: its new events split into prompts of at
/// most `cluster.max_events_per_prompt` (see [`plan::prompts`]), each filled up with the
/// cluster's most recent earlier events in full.
fn whole_cluster_calls(
    tx: &Connection,
    n: usize,
    members: &[usize],
    window: &state::Window,
    config: &Config,
    model: &str,
) -> Result<Vec<Call>> {
    let view: Vec<plan::Member<'_>> = members
        .iter()
        .map(|&i| plan::Member {
            id: &window.ids[i],
            ts: window.ts[i],
            reflected: window.reflected[i],
        })
        .collect();
    let prompts = plan::prompts(&view, config.cluster.max_events_per_prompt);
    let parts = prompts.len();
    let mut out = Vec::with_capacity(parts);
    for (p, prompt) in prompts.into_iter().enumerate() {
        let seqs: Vec<i64> = prompt
            .events
            .iter()
            .map(|&k| window.seq[members[k]])
            .collect();
        let events: Vec<EventView> = state::events_by_seq(tx, &seqs)?
            .iter()
            .map(view_of)
            .collect();
        let prompt_ = ReflectPrompt {
            parts: vec![ReflectPart {
                cluster: n,
                known: Vec::new(),
                events,
                singles: false,
            }],
        };
        out.push(Call {
            key: key(model, config, &prompt_),
            prompt: prompt_,
            label: part_label(n, p, parts),
            new: prompt.new.iter().map(|&k| window.seq[members[k]]).collect(),
            oldest: prompt
                .new
                .iter()
                .map(|&k| window.ts[members[k]])
                .min()
                .unwrap_or(i64::MAX),
        });
    }
    Ok(out)
}

fn part_label(n: usize, p: usize, parts: usize) -> String {
    if parts == 1 {
        n.to_string()
    } else {
        format!("{n} part {}/{parts}", p + 1)
    }
}

fn view_of(s: &Stored) -> EventView {
    EventView::of(&s.event, !s.reflected)
}

/// One selected cluster (or one session's single mentions), read for a model.
struct Cluster {
    n: usize,
    /// New events (not restatements), oldest first, with their row ids.
    new: Vec<(i64, EventView)>,
    known: Vec<Known>,
    singles: bool,
}

/// A model's calls: restatements first (no call), then the other new events packed into
/// prompts with their clusters' known items.
fn model_calls(
    tx: &Connection,
    input: &Input<'_>,
    config: &Config,
    model: &str,
) -> Result<Planned> {
    let window = input.window;
    let facts: Vec<(schema::Block, &schema::Fact)> = input.memory.facts().collect();
    let index = plan::FactIndex::new(facts.iter().map(|(_, f)| f.text.as_str()));
    let items: Vec<(&str, &str, bool, &[String])> = facts
        .iter()
        .map(|(_, f)| (f.id.as_str(), f.text.as_str(), false, f.support.as_slice()))
        .chain(input.cards.iter().map(|c| {
            (
                c.id.as_str(),
                c.text.as_str(),
                true,
                c.supporting_event_ids.as_slice(),
            )
        }))
        .collect();
    let supports = plan::Supports::new(items.iter().map(|i| i.3));
    let mut out = Planned::default();
    let mut clusters: Vec<Cluster> = Vec::new();
    // The events facts cite, read once however many clusters restate them.
    let mut cited: HashMap<usize, Vec<EventView>> = HashMap::new();
    for (n, members) in input.selected.iter().enumerate() {
        let (earlier, events) = cluster_rows(tx, window, members)?;
        let (restates, taken) =
            take_restatements(tx, &facts, &index, config, &events, &mut cited, &mut out)?;
        let new = to_send(events, &restates, &taken, &mut out);
        if new.is_empty() {
            continue;
        }

        let known = known_items(tx, window, &items, &supports, &earlier, &new)?;
        clusters.push(Cluster {
            n,
            new,
            known,
            singles: false,
        });
    }
    // One session's single mentions share the prompts too: a call pays the instructions.
    for (g, group) in input.singles.iter().enumerate() {
        clusters.push(Cluster {
            n: input.selected.len() + g,
            new: group.clone(),
            known: Vec::new(),
            singles: true,
        });
    }

    pack_calls(&clusters, config, model, &mut out);
    Ok(out)
}

/// A fact or card as a cluster is read against it: its id, its text, whether it is a
/// pending card, and the events it cites.
type KnownItem<'a> = (&'a str, &'a str, bool, &'a [String]);

/// A new event with its row id.
type NewEvent = (i64, EventView);

/// The rows step: a selected cluster's earlier rows (newest first) and its new events
/// (oldest first, with their row ids).
fn cluster_rows(
    tx: &Connection,
    window: &state::Window,
    members: &[usize],
) -> Result<(Vec<usize>, Vec<NewEvent>)> {
    let by_time = |a: &usize, b: &usize| {
        window.ts[*a]
            .cmp(&window.ts[*b])
            .then_with(|| window.ids[*a].cmp(&window.ids[*b]))
    };
    let mut new_rows: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&i| !window.reflected[i])
        .collect();
    new_rows.sort_by(by_time);
    let mut earlier: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&i| window.reflected[i])
        .collect();
    earlier.sort_by(|a, b| by_time(b, a));
    let seqs: Vec<i64> = new_rows.iter().map(|&i| window.seq[i]).collect();
    let stored = state::events_by_seq(tx, &seqs)?;
    let events: Vec<(i64, EventView)> = seqs
        .iter()
        .copied()
        .zip(stored.iter().map(view_of))
        .collect();

    Ok((earlier, events))
}

/// The restatements step: new events that say a fact again word for word, proposed by the
/// engine with the fact when the gates pass it; returns what each event restates and the
/// facts taken.
fn take_restatements(
    tx: &Connection,
    facts: &[(schema::Block, &schema::Fact)],
    index: &plan::FactIndex,
    config: &Config,
    events: &[(i64, EventView)],
    cited: &mut HashMap<usize, Vec<EventView>>,
    out: &mut Planned,
) -> Result<(Vec<Vec<usize>>, HashSet<usize>)> {
    // New events that say a fact again word for word, by the fact. Each fact's
    // proposal is gated here as it will be in the stage: one the gates would refuse
    // (support below the floor, say) leaves its events to the model.
    let restates: Vec<Vec<usize>> = events
        .iter()
        .map(|(_, e)| index.restated(&e.text))
        .collect();
    let mut by_fact: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (k, fs) in restates.iter().enumerate() {
        for &f in fs {
            by_fact.entry(f).or_default().push(k);
        }
    }
    let mut taken: HashSet<usize> = HashSet::new();
    for (&f, ks) in &by_fact {
        let (block, fact) = facts[f];
        if let std::collections::hash_map::Entry::Vacant(slot) = cited.entry(f) {
            let older = state::events_by_ids(tx, &fact.support)?;
            slot.insert(older.iter().map(view_of).collect());
        }
        let fresh: HashSet<&str> = ks.iter().map(|&k| events[k].1.id.as_str()).collect();
        let mut evidence: Vec<EventView> = ks.iter().map(|&k| events[k].1.clone()).collect();
        evidence.extend(
            cited[&f]
                .iter()
                .filter(|e| !fresh.contains(e.id.as_str()))
                .cloned(),
        );
        let proposal = Proposal {
            text: fact.text.clone(),
            category: fact.category.clone(),
            block: block.as_str().into(),
            supporting_event_ids: evidence.iter().map(|e| e.id.clone()).collect(),
            confidence: 1.0,
            reason: format!(
                "engine: says {} again word for word, so no model was asked",
                fact.id
            ),
        };
        let none = HashSet::new();
        let g = gates::gate_proposal(&proposal, &Evidence::new(&evidence, &none), config);
        if g.refused.is_none() {
            out.restated.push((proposal, evidence));
            taken.insert(f);
        }
    }
    Ok((restates, taken))
}

/// The sending step: the new events a model is to read (not taken as restatements, and
/// worth sending); the others are marked as seen or below SEND.
fn to_send(
    events: Vec<(i64, EventView)>,
    restates: &[Vec<usize>],
    taken: &HashSet<usize>,
    out: &mut Planned,
) -> Vec<(i64, EventView)> {
    // An event needs no model when every fact it says again was taken.
    let to_model: HashSet<usize> = (0..events.len())
        .filter(|&k| restates[k].is_empty() || !restates[k].iter().all(|f| taken.contains(f)))
        .collect();
    for (k, (seq, _)) in events.iter().enumerate() {
        if !to_model.contains(&k) {
            out.restated_seen.push(*seq);
        }
    }
    // Only what could become a line is paid for: an event whose sentences all score
    // below SEND is looked at and not sent (a restatement above was, whatever its score).
    let scorer = crate::providers::salience::scorer();
    let mut new: Vec<(i64, EventView)> = Vec::new();
    for (k, (seq, e)) in events.into_iter().enumerate() {
        if !to_model.contains(&k) {
            continue;
        }
        if keep::worth_sending(&e.text, scorer) {
            new.push((seq, e));
        } else {
            out.below_send.push(seq);
        }
    }
    new
}

/// The known step: what the cluster's earlier events came to (facts and cards), where it
/// bears on the new events, each with the earlier events it cites.
fn known_items(
    tx: &Connection,
    window: &state::Window,
    items: &[KnownItem<'_>],
    supports: &plan::Supports<'_>,
    earlier: &[usize],
    new: &[(i64, EventView)],
) -> Result<Vec<Known>> {
    // What the cluster's earlier events came to, where it bears on the new events.
    let earlier_ids: Vec<&str> = earlier.iter().map(|&i| window.ids[i].as_str()).collect();
    let words: Vec<std::collections::BTreeSet<String>> = new
        .iter()
        .map(|(_, e)| dream_core::text::measures::content_tokens(&e.text))
        .collect();
    let found = supports.known(&earlier_ids, schema::MAX_CITED, |item| {
        plan::bears_on(items[item].1, &words)
    });
    let mut need: Vec<i64> = found
        .iter()
        .flat_map(|(_, ks)| ks.iter().map(|&k| window.seq[earlier[k]]))
        .collect();
    need.sort_unstable();
    need.dedup();
    let read: HashMap<String, EventView> = state::events_by_seq(tx, &need)?
        .iter()
        .map(|s| (s.event.id.clone(), view_of(s)))
        .collect();
    let known: Vec<Known> = found
        .iter()
        .map(|(item, ks)| {
            let (id, text, pending, _) = items[*item];
            let mut evs: Vec<EventView> = ks
                .iter()
                .filter_map(|&k| read.get(earlier_ids[k]).cloned())
                .collect();
            evs.sort_by(|a, b| a.ts.cmp(&b.ts).then_with(|| a.id.cmp(&b.id)));
            Known {
                id: id.into(),
                text: text.into(),
                pending,
                events: evs,
            }
        })
        .collect();
    Ok(known)
}

/// The packing step: the clusters' new events packed into prompts, one call each.
fn pack_calls(clusters: &[Cluster], config: &Config, model: &str, out: &mut Planned) {
    let times: Vec<Vec<i64>> = clusters
        .iter()
        .map(|c| c.new.iter().map(|(_, e)| e.ts.timestamp()).collect())
        .collect();
    // No more events a prompt than a reply has room for: a reply cut off at the token
    // limit is paid for and leaves its events pending.
    let cap = plan::events_per_prompt(config.cluster.max_events_per_prompt, config.llm.max_tokens);
    for shares in plan::pack(&times, cap, config.llm.max_tokens) {
        let mut parts = Vec::with_capacity(shares.len());
        let mut labels = Vec::with_capacity(shares.len());
        let mut new = Vec::new();
        let mut oldest = i64::MAX;
        for s in &shares {
            let c = &clusters[s.cluster];
            let whole = c.new.len().div_ceil(cap.max(1));
            labels.push(if c.singles {
                format!("{} (single mentions)", c.n)
            } else if whole > 1 {
                // Shares start at p * n / whole (see plan::pack), so p is this.
                part_label(c.n, (s.from * whole).div_ceil(c.new.len()), whole)
            } else {
                c.n.to_string()
            });
            let slice = &c.new[s.from..s.to];
            new.extend(slice.iter().map(|(seq, _)| *seq));
            oldest = oldest.min(times[s.cluster][s.from]);
            parts.push(ReflectPart {
                cluster: c.n,
                known: c.known.clone(),
                events: slice.iter().map(|(_, e)| e.clone()).collect(),
                singles: c.singles,
            });
        }
        let prompt = ReflectPrompt { parts };
        out.calls.push(Call {
            key: key(model, config, &prompt),
            prompt,
            label: labels.join("+"),
            new,
            oldest,
        });
    }
}
