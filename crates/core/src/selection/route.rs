//! Score and route (SPEC S4 steps 6 and 8): where a gated candidate goes.
//!
//! Five routes, and every proposal takes exactly one, so the cycle's counts balance
//! (`proposed = promoted + episodes + queued + reinforced + refused`):
//! - **reinforce** an active fact or episode it restates (S6 similarity >=
//!   `reinforce_similarity`, same polarity): add support, refresh last-seen, no new fact;
//! - **promote** into its durable block (persona, human, scratch) when confidence,
//!   support, days, traceability, an owner's own words and the judge all allow it;
//! - **episode**: kept in `memory/episodes.md` when it is fully traceable, the owner's own
//!   words establish it and the judge finds no conflict, but it lacks the corroboration a
//!   durable block needs (confidence, support, days), or it is an event to begin with;
//! - **queue** a review card for what a person should decide: words the events do not
//!   hold, no owner's word for it, a contradiction (a card proposing to supersede the old
//!   fact) or a duplicate the judge named;
//! - **refuse** what a hard gate refused.
//!
//! Pure functions over the gated candidate, the active facts and the judge's verdict.

use std::collections::{BTreeSet, HashMap};

use rustc_hash::FxHashMap;

use crate::schema::contract::Verdict;
use crate::schema::settings::{Config, Promote};
use crate::schema::{episode_body, Block, GateName, GateResult, Memory};
use crate::selection::gates::Gated;
use crate::text::measures::{self, round3};

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Promote,
    /// Kept in the episodes; the reason says what a durable block would need.
    Episode {
        reason: String,
    },
    Queue {
        reason: String,
        /// The active fact this candidate would replace, for a contradiction.
        supersedes: Option<String>,
    },
    Reinforce {
        fact_id: String,
    },
    Refuse {
        reason: String,
    },
}

impl Outcome {
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Promote => "promoted",
            Outcome::Episode { .. } => "episode",
            Outcome::Queue { .. } => "queued",
            Outcome::Reinforce { .. } => "reinforced",
            Outcome::Refuse { .. } => "refused",
        }
    }
}

/// An active fact near a candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Near {
    pub fact_id: String,
    /// S6 similarity.
    pub similarity: f64,
    pub same_polarity: bool,
    /// Euclidean distance between the two texts' vectors, when the embedder's are used.
    pub distance: Option<f64>,
    /// The candidate restates the fact ([`restates`]); never across different numbers.
    pub restates: bool,
    /// Both state the same numbers (see [`measures::numbers_agree`]).
    pub same_numbers: bool,
    /// The candidate takes the fact back ([`measures::retracts`]): a swapped preference,
    /// "no longer": a contradiction whatever the judge says.
    pub retracts: Option<&'static str>,
}

/// How candidates are compared with facts: S6 similarity, and the vectors of an embedder
/// whose restatement distance was measured.
#[derive(Debug, Clone, Copy)]
pub struct Restating<'a> {
    pub reinforce_similarity: f64,
    /// The embedder's restatement distance, and vectors by text (the candidate's and the
    /// facts'); a text without one is compared by S6 alone.
    pub vectors: Option<(f64, &'a HashMap<String, Vec<f32>>)>,
}

impl Restating<'_> {
    /// S6 alone, with the config's `promote.reinforce_similarity`.
    pub fn s6(config: &Config) -> Restating<'static> {
        Restating {
            reinforce_similarity: config.promote.reinforce_similarity,
            vectors: None,
        }
    }
}

/// Whether the S6 measures let two texts be one fact: they agree in polarity, do not
/// disagree in entities (`measures::entity_keys`: names, numbers, paths, identifiers;
/// "I live in Lisbon" / "I live in Porto"), and do not give one thing two values
/// (`measures::swapped`: "I prefer dark mode" / "I prefer light mode").
pub fn s6_agrees(
    a: &measures::Prepared,
    b: &measures::Prepared,
    entities_a: &BTreeSet<String>,
    entities_b: &BTreeSet<String>,
) -> bool {
    measures::polarity_agrees_prepared(a, b)
        && !measures::names_differ(entities_a, entities_b)
        && measures::swapped(a, b).is_none()
}

/// Whether a candidate restates a fact (and so reinforces it): the S6 measures agree
/// ([`s6_agrees`], and the two state the same numbers: `agree` says both), and either the
/// two share their content words (S6 similarity >= `promote.reinforce_similarity`) or
/// they share one at least and their vectors lie within the embedder's restatement
/// distance (`within`; none for an embedder whose distances were never measured).
///
/// Two texts with no content word in common are never a restatement, however close their
/// vectors: a short remark in general words ("We can all do something to make a
/// difference.") lies near the middle of the space, within the distance of sentences
/// about anything ("we had to say goodbye to Max", 0.76), and took their support.
pub fn restates(
    agree: bool,
    similarity: f64,
    reinforce_similarity: f64,
    distance: Option<f64>,
    within: Option<f64>,
) -> bool {
    agree
        && (similarity >= reinforce_similarity
            || (similarity > 0.0 && matches!((distance, within), (Some(d), Some(w)) if d <= w)))
}

/// What routing compares of a text it meets again and again in one stage (an active
/// fact, a pending card, a candidate judged and then routed), found once: its tokens, its
/// content words as numbers, its entity keys and numbers, and its vector. Content words
/// are numbered in the order they are first met, so two texts' shared words are a merge of
/// two short sorted lists of integers, not a comparison of strings; the figure is S6
/// similarity exactly ([`measures::sorted_similarity`]).
#[derive(Debug, Default)]
pub struct Texts {
    words: FxHashMap<String, u32>,
    entries: Vec<Compared>,
    /// Texts compared as they are (candidates, cards), by text.
    texts: FxHashMap<String, usize>,
    /// Facts by id, each with the text of its line when it was prepared (compared by what
    /// it says: an episode without its day, [`episode_body`]). An id is shorter to hash
    /// than a text, and the text is compared to be sure it did not change.
    facts: FxHashMap<String, (String, usize)>,
}

/// One text as [`Texts`] holds it.
#[derive(Debug)]
pub struct Compared {
    pub prepared: measures::Prepared,
    /// The content words' numbers, sorted, each once.
    pub words: Vec<u32>,
    /// [`measures::entity_keys`] of the text.
    pub entity_keys: BTreeSet<String>,
    /// [`measures::numbers`] of the text, sorted.
    pub numbers: Vec<String>,
    /// Its vector, once looked up (`None`: not yet; `Some(None)`: it has none).
    vector: Option<Option<Vec<f32>>>,
}

impl Compared {
    fn vector(&self) -> Option<&[f32]> {
        self.vector.as_ref().and_then(|v| v.as_deref())
    }
}

/// Vectors by text, as [`Restating`] holds them.
type Vectors = HashMap<String, Vec<f32>>;

impl Texts {
    fn prepare(&mut self, text: &str) -> Compared {
        let prepared = measures::Prepared::new(text);
        let mut words: Vec<u32> = prepared
            .content
            .iter()
            .map(|w| {
                let next = self.words.len() as u32;
                *self.words.entry(w.clone()).or_insert(next)
            })
            .collect();
        words.sort_unstable();
        Compared {
            prepared,
            words,
            entity_keys: measures::entity_keys(text),
            numbers: measures::numbers(text).into_iter().collect(),
            vector: None,
        }
    }

    /// The entry of `text`, made when new, its vector looked up when `vectors` are given.
    fn entry(&mut self, text: &str, vectors: Option<&Vectors>) -> usize {
        let i = match self.texts.get(text) {
            Some(&i) => i,
            None => {
                let compared = self.prepare(text);
                self.entries.push(compared);
                self.texts.insert(text.to_string(), self.entries.len() - 1);
                self.entries.len() - 1
            }
        };
        self.look_up_vector(i, text, false, vectors);
        i
    }

    /// The entry of fact `id` whose line reads `line`, compared by what it says
    /// ([`episode_body`]): made when new or when the line changed.
    fn fact(&mut self, id: &str, line: &str, vectors: Option<&Vectors>) -> usize {
        let i = match self.facts.get(id) {
            Some((known, i)) if known == line => *i,
            _ => {
                let compared = self.prepare(episode_body(line));
                self.entries.push(compared);
                let i = self.entries.len() - 1;
                self.facts.insert(id.to_string(), (line.to_string(), i));
                i
            }
        };
        self.look_up_vector(i, line, true, vectors);
        i
    }

    /// Look up entry `i`'s vector once: by `text`, or by a fact line's body.
    fn look_up_vector(&mut self, i: usize, text: &str, line: bool, vectors: Option<&Vectors>) {
        if let (None, Some(vectors)) = (&self.entries[i].vector, vectors) {
            let text = if line { episode_body(text) } else { text };
            self.entries[i].vector = Some(vectors.get(text).cloned());
        }
    }
}

/// The `k` active facts nearest `text`: those it restates first, then by S6 similarity,
/// then by vector distance (an episode by what it says without its day). A fact is near when it shares a content word, or when its
/// vector lies within the restatement distance.
pub fn nearest(memory: &Memory, text: &str, k: usize, rule: &Restating<'_>) -> Vec<Near> {
    nearest_cached(memory, text, k, rule, &mut Texts::default())
}

/// [`nearest`], with the texts prepared once per `cache` (a stage compares every candidate
/// with every active fact). The S6 agreement checks (polarity, names, swapped values) are
/// made only for a fact the candidate could restate: one it shares enough words with, or a
/// durable fact its vector is close to.
pub fn nearest_cached(
    memory: &Memory,
    text: &str,
    k: usize,
    rule: &Restating<'_>,
    cache: &mut Texts,
) -> Vec<Near> {
    let vectors = rule.vectors.map(|(_, v)| v);
    let q = cache.entry(text, vectors);
    let facts: Vec<(Block, &str, usize)> = memory
        .facts()
        .map(|(block, f)| (block, f.id.as_str(), cache.fact(&f.id, &f.text, vectors)))
        .collect();
    let query = &cache.entries[q];
    // Each near fact's id beside its Near (whose id is filled in for the k kept).
    let mut out: Vec<(&str, Near)> = Vec::new();
    for (block, id, i) in facts {
        let fact = &cache.entries[i];
        let shared = measures::sorted_similarity(&query.words, &fact.words);
        let similarity = if shared > 0.0 { round3(shared) } else { 0.0 };
        // The restatement distance applies where both texts have a vector of one length.
        let (distance, within) = match (query.vector(), fact.vector(), rule.vectors) {
            (Some(q), Some(v), Some((w, _))) if q.len() == v.len() => {
                // Most facts share no word and lie far: a quick distance in single
                // precision leaves them out, and the rest are measured exactly.
                if similarity <= 0.0 && f64::from(quick_distance(q, v)) > w + 1e-3 {
                    continue;
                }
                (Some(euclidean(q, v)), Some(w))
            }
            _ => (None, None),
        };
        let close = matches!((distance, within), (Some(d), Some(w)) if d <= w);
        if similarity <= 0.0 && !close {
            continue;
        }
        // An episode is one dated happening, and a sentence close to it in meaning is
        // most often another happening of the same kind: only a restatement in its own
        // words (S6) reinforces it. Meaning alone joins durable facts.
        let within = if block == Block::Episodes {
            None
        } else {
            within
        };
        let may_restate = restates(
            true,
            similarity,
            rule.reinforce_similarity,
            distance,
            within,
        );
        let same_numbers = query.numbers == fact.numbers;
        let retracts = measures::retracts(&query.prepared, &fact.prepared);
        let agrees = may_restate
            && same_numbers
            && s6_agrees(
                &query.prepared,
                &fact.prepared,
                &query.entity_keys,
                &fact.entity_keys,
            );
        out.push((
            id,
            Near {
                fact_id: String::new(),
                similarity,
                same_polarity: measures::polarity_agrees_prepared(&query.prepared, &fact.prepared),
                distance: distance.map(round3),
                restates: retracts.is_none()
                    && restates(
                        agrees,
                        similarity,
                        rule.reinforce_similarity,
                        distance,
                        within,
                    ),
                same_numbers,
                retracts,
            },
        ));
    }
    let order = |a: &(&str, Near), b: &(&str, Near)| {
        let ((ida, a), (idb, b)) = (a, b);
        b.restates
            .cmp(&a.restates)
            .then(b.similarity.total_cmp(&a.similarity))
            .then(
                a.distance
                    .unwrap_or(f64::INFINITY)
                    .total_cmp(&b.distance.unwrap_or(f64::INFINITY)),
            )
            .then(ida.cmp(idb))
    };
    // The order is total (fact ids are unique), so selecting the first k and sorting
    // them gives what sorting everything would.
    if k < out.len() {
        out.select_nth_unstable_by(k, order);
        out.truncate(k);
    }
    out.sort_by(order);
    out.into_iter()
        .map(|(id, n)| Near {
            fact_id: id.to_string(),
            ..n
        })
        .collect()
}

/// Which of `others` `text` restates in their words (S6 similarity >=
/// `reinforce_similarity`, the same polarity): the most similar, the last of equals. A
/// pending card is matched so, and the candidate's evidence joins it.
pub fn restated_in_words<'a>(
    cache: &mut Texts,
    text: &str,
    others: impl IntoIterator<Item = &'a str>,
    reinforce_similarity: f64,
) -> Option<usize> {
    let q = cache.entry(text, None);
    let others: Vec<usize> = others.into_iter().map(|t| cache.entry(t, None)).collect();
    let query = &cache.entries[q];
    others
        .iter()
        .enumerate()
        .filter_map(|(i, &e)| {
            let other = &cache.entries[e];
            let sim = measures::sorted_similarity(&query.words, &other.words);
            (sim >= reinforce_similarity
                && measures::polarity_agrees_prepared(&query.prepared, &other.prepared))
            .then_some((i, sim))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

/// Euclidean distance in single precision, summed in eight lanes (vector registers): within
/// a millionth of [`euclidean`], for leaving out what is clearly far. Built for AVX2 too
/// (eight lanes in one register), picked at run time.
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn quick_distance(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            lanes[k] += (x[k] - y[k]) * (x[k] - y[k]);
        }
    }
    let rest: f32 = ra.iter().zip(rb).map(|(x, y)| (x - y) * (x - y)).sum();
    (lanes.iter().sum::<f32>() + rest).sqrt()
}

/// Euclidean distance between two vectors of one length, summed in four lanes (which the
/// compiler can keep in vector registers: routing measures every candidate against every
/// fact).
fn euclidean(a: &[f32], b: &[f32]) -> f64 {
    let mut lanes = [0f64; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..4 {
            lanes[k] += f64::from(x[k] - y[k]).powi(2);
        }
    }
    let rest: f64 = ra
        .iter()
        .zip(rb)
        .map(|(x, y)| f64::from(x - y).powi(2))
        .sum();
    (lanes.iter().sum::<f64>() + rest).sqrt()
}

/// Decide the route of one gated candidate. `near` are the facts sent to the judge (most
/// similar first); `verdict` is the judge's answer for this candidate, if any. Returns the
/// outcome, the judge's verdict as shown on cards, and the routing gates.
pub fn route(
    g: &Gated,
    near: &[Near],
    verdict: Option<&Verdict>,
    config: &Config,
) -> (Outcome, String, Vec<GateResult>) {
    let mut gates = Vec::new();
    if let Some(reason) = &g.refused {
        return (
            Outcome::Refuse {
                reason: reason.clone(),
            },
            "not judged (refused by a gate)".into(),
            gates,
        );
    }
    let p = &config.promote;
    let (judge, contradicts, duplicate_of) = read_verdict(near, verdict);

    let top = near.first();
    gates.push(novelty_gate(top, p));

    if let Some(n) =
        top.filter(|n| n.restates && contradicts.as_deref() != Some(n.fact_id.as_str()))
    {
        return (
            Outcome::Reinforce {
                fact_id: n.fact_id.clone(),
            },
            judge,
            gates,
        );
    }

    let unmet = rule_gates(g, near, &contradicts, &duplicate_of, p, &mut gates);
    let (decided, corroboration_only) = decide(g, config, &unmet, contradicts, judge, gates);
    salience_rule(g, corroboration_only, decided)
}

/// The verdict step: the judge's reason, and the facts it named as contradicted or
/// duplicated if they were among those sent (a fact whose words take it back counts as
/// contradicted whatever the judge found).
fn read_verdict(
    near: &[Near],
    verdict: Option<&Verdict>,
) -> (String, Option<String>, Option<String>) {
    let sent = |id: &Option<String>| -> Option<String> {
        id.as_ref()
            .filter(|id| near.iter().any(|n| &n.fact_id == *id))
            .cloned()
    };
    let mut judge = verdict
        .map(|v| v.reason.clone())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| "no contradiction found".into());
    let mut notes = Vec::new();
    let contradicts = verdict.and_then(|v| {
        let valid = sent(&v.contradicts);
        if v.contradicts.is_some() && valid.is_none() {
            notes.push(format!(
                "the judge named {} as contradicted, but it was not among the facts sent (ignored)",
                v.contradicts.as_deref().unwrap_or_default()
            ));
        }
        valid
    });
    let duplicate_of = verdict.and_then(|v| {
        let valid = sent(&v.duplicate_of);
        if v.duplicate_of.is_some() && valid.is_none() {
            notes.push(format!(
                "the judge named {} as a duplicate, but it was not among the facts sent (ignored)",
                v.duplicate_of.as_deref().unwrap_or_default()
            ));
        }
        valid
    });
    // What takes a fact back is a contradiction by its words, whatever the judge found.
    let contradicts = contradicts.or_else(|| {
        near.iter().find_map(|n| {
            n.retracts.map(|why| {
                notes.push(format!("{}: {why}", n.fact_id));
                n.fact_id.clone()
            })
        })
    });
    if !notes.is_empty() {
        judge = format!("{judge}; {}", notes.join("; "));
    }
    (judge, contradicts, duplicate_of)
}

/// The novelty step: the gate that measures the candidate against its nearest fact.
fn novelty_gate(top: Option<&Near>, p: &Promote) -> GateResult {
    let top_sim = top.map_or(0.0, |n| n.similarity);
    GateResult::new(
        "novelty",
        format!("{:.3}", 1.0 - top_sim),
        format!(
            "> {:.3} and no restatement (else reinforce)",
            1.0 - p.reinforce_similarity
        ),
        !top.is_some_and(|n| n.restates),
    )
    .detail(
        top.map(|n| {
            let mut d = format!("nearest {} at similarity {:.3}", n.fact_id, n.similarity);
            if let Some(distance) = n.distance {
                d.push_str(&format!(", vector distance {distance:.3}"));
            }
            if n.restates && n.similarity < p.reinforce_similarity {
                d.push_str(" (restates it by meaning: the S6 measures and the vectors agree)");
            }
            d
        })
        .unwrap_or_default(),
    )
}

/// The rule step: the gates a durable block needs beyond novelty, pushed onto `gates`;
/// returns the unmet ones, each marked whether it is corroboration.
fn rule_gates(
    g: &Gated,
    near: &[Near],
    contradicts: &Option<String>,
    duplicate_of: &Option<String>,
    p: &Promote,
    gates: &mut Vec<GateResult>,
) -> Vec<(bool, String)> {
    // What a durable block needs beyond what an episode does (corroboration), and what
    // a person must decide (review).
    let mut unmet: Vec<(bool, String)> = Vec::new();
    let mut check = |gates: &mut Vec<GateResult>,
                     name: GateName,
                     value: String,
                     threshold: String,
                     ok: bool,
                     why: String| {
        gates.push(GateResult::new(name.as_str(), value, threshold, ok));
        if !ok {
            let corroboration = matches!(
                name,
                GateName::Confidence | GateName::Support | GateName::Days
            );
            unmet.push((corroboration, why));
        }
    };
    let m = &g.measures;
    check(
        gates,
        GateName::Confidence,
        format!("{:.3}", g.confidence),
        format!(">= {}", p.min_confidence),
        g.confidence >= p.min_confidence,
        format!(
            "confidence {:.3} < min_confidence {}",
            g.confidence, p.min_confidence
        ),
    );
    check(
        gates,
        GateName::Support,
        m.support.to_string(),
        format!(">= {}", p.min_support),
        m.support >= p.min_support,
        format!("support {} < min_support {}", m.support, p.min_support),
    );
    check(
        gates,
        GateName::Days,
        m.days.to_string(),
        format!(">= {}", p.min_days),
        m.days >= p.min_days,
        format!("days {} < min_days {}", m.days, p.min_days),
    );
    check(
        gates,
        GateName::Traceable,
        format!("{:.3}", m.coverage),
        "1.0".into(),
        m.coverage >= 1.0,
        format!(
            "coverage {:.3} < 1.0 (untraceable: {})",
            m.coverage,
            m.untraceable.join(", ")
        ),
    );
    check(
        gates,
        GateName::Owner,
        m.owner_support.to_string(),
        ">= 1".into(),
        m.owner_support >= 1,
        "no event from the owner supports it (the agent's own statements need a person's confirmation)".into(),
    );
    let judge_ok = contradicts.is_none() && duplicate_of.is_none();
    check(
        gates,
        GateName::Judge,
        if let Some(c) = &contradicts {
            format!("contradicts {c}")
        } else if let Some(d) = &duplicate_of {
            format!("duplicate of {d}")
        } else {
            "no contradiction".into()
        },
        "no contradiction".into(),
        judge_ok,
        match (&contradicts, &duplicate_of) {
            (Some(c), _) => format!("the judge found a possible contradiction with {c}"),
            (None, Some(d)) => {
                let sim = near
                    .iter()
                    .find(|n| &n.fact_id == d)
                    .map_or(0.0, |n| n.similarity);
                format!(
                    "the judge called it a duplicate of {d}, but similarity {sim:.3} < {}",
                    p.reinforce_similarity
                )
            }
            _ => String::new(),
        },
    );
    unmet
}

/// The decision step: promote, keep as an episode or queue for a person, from the unmet
/// gates; also says whether only corroboration was unmet.
fn decide(
    g: &Gated,
    config: &Config,
    unmet: &[(bool, String)],
    contradicts: Option<String>,
    judge: String,
    gates: Vec<GateResult>,
) -> ((Outcome, String, Vec<GateResult>), bool) {
    let m = &g.measures;
    let review: Vec<&str> = unmet
        .iter()
        .filter(|(c, _)| !c)
        .map(|(_, w)| w.as_str())
        .collect();
    let all: Vec<&str> = unmet.iter().map(|(_, w)| w.as_str()).collect();
    let decided = if !review.is_empty() {
        (
            Outcome::Queue {
                reason: all.join("; "),
                supersedes: contradicts,
            },
            judge,
            gates,
        )
    } else if !all.is_empty() && !config.episodes.enabled {
        // The episodic tier is off: a person decides what lacks corroboration.
        (
            Outcome::Queue {
                reason: all.join("; "),
                supersedes: contradicts,
            },
            judge,
            gates,
        )
    } else if !all.is_empty() && m.support >= 2 && g.block != Block::Episodes {
        // Said by the owner twice or more, yet short of the durable rule: two statements
        // are not enough to skip the person, and more than a single mention is not an
        // episode. A person decides.
        (
            Outcome::Queue {
                reason: format!(
                    "said {} times by the owner but short of the durable rule: {}",
                    m.support,
                    all.join("; ")
                ),
                supersedes: contradicts,
            },
            judge,
            gates,
        )
    } else if !all.is_empty() {
        (
            Outcome::Episode {
                reason: format!(
                    "kept as an episode until it is said again: {}",
                    all.join("; ")
                ),
            },
            judge,
            gates,
        )
    } else if g.block == Block::Episodes && config.episodes.enabled {
        (
            Outcome::Episode {
                reason: "an event: kept in the episodes".into(),
            },
            judge,
            gates,
        )
    } else {
        (Outcome::Promote, judge, gates)
    };
    (decided, review.is_empty())
}

/// Salience as well as corroboration (issue 28): what memory would keep on its own (a
/// durable fact, an episode) or ask a person about only for want of corroboration (a card
/// for something said twice short of the durable rule, or, with the episodic tier off, said
/// once) is refused when its statement scores below [`keep::KEEP`], however often it was
/// said. A card for another reason (words the events do not hold, a contradiction, no
/// owner's word for it) is a person's to decide: its salience ranks it in the queue
/// (`keep::offer`). A restatement was routed to reinforce before this.
fn salience_rule(
    g: &Gated,
    corroboration_only: bool,
    (outcome, judge, gates): (Outcome, String, Vec<GateResult>),
) -> (Outcome, String, Vec<GateResult>) {
    let adds_a_line = match &outcome {
        Outcome::Promote | Outcome::Episode { .. } => true,
        Outcome::Queue { supersedes, .. } => supersedes.is_none() && corroboration_only,
        Outcome::Reinforce { .. } | Outcome::Refuse { .. } => false,
    };
    match g.salience.and_then(|w| w.refusal()) {
        Some(reason) if adds_a_line => (Outcome::Refuse { reason }, judge, gates),
        _ => (outcome, judge, gates),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Measures;
    use crate::selection::keep;

    fn gated(support: usize, days: usize, confidence: f64, coverage: f64) -> Gated {
        Gated {
            text: "I live in Lisbon.".into(),
            block: Block::Human,
            category: "identity".into(),
            confidence,
            reason: String::new(),
            support: (0..support).map(|i| format!("e{i}")).collect(),
            establishing: (0..support).map(|i| format!("e{i}")).collect(),
            measures: Measures {
                support,
                sessions: support,
                days,
                coverage,
                owner_support: support,
                confidence,
                ..Measures::default()
            },
            gates: vec![],
            refused: None,
            notes: vec![],
            salience: None,
        }
    }

    fn near(id: &str, sim: f64) -> Near {
        Near {
            fact_id: id.into(),
            similarity: sim,
            same_polarity: true,
            distance: None,
            restates: sim >= 0.9,
            same_numbers: true,
            retracts: None,
        }
    }

    #[test]
    fn routes_follow_the_spec() {
        let c = Config::default();
        assert_eq!(
            route(&gated(3, 2, 0.9, 1.0), &[], None, &c).0,
            Outcome::Promote
        );
        // Said twice but short of the durable rule: a person decides, not the episodes.
        let (o, _, _) = route(&gated(2, 1, 0.9, 1.0), &[], None, &c);
        assert_eq!(
            o,
            Outcome::Queue {
                reason: "said 2 times by the owner but short of the durable rule: support 2 < min_support 3; days 1 < min_days 2".into(),
                supersedes: None,
            }
        );
        // A single mention, at the confidence one event gives.
        let (o, _, _) = route(&gated(1, 1, 0.6, 1.0), &[], None, &c);
        assert!(matches!(o, Outcome::Episode { .. }), "{o:?}");
        // Untraceable words go to a person, with everything else that is missing.
        let (o, _, _) = route(&gated(3, 2, 0.9, 0.9), &[], None, &c);
        assert!(
            matches!(o, Outcome::Queue { ref reason, .. } if reason.starts_with("coverage 0.900 < 1.0"))
        );
        let (o, _, _) = route(&gated(1, 1, 0.6, 0.9), &[], None, &c);
        assert!(
            matches!(o, Outcome::Queue { ref reason, .. } if reason.contains("coverage 0.900 < 1.0") && reason.contains("support 1 < min_support 3")),
            "{o:?}"
        );
        // An agent's own statement needs a person, however often it is made.
        let mut agent = gated(3, 2, 0.9, 1.0);
        agent.measures.owner_support = 0;
        assert!(matches!(
            route(&agent, &[], None, &c).0,
            Outcome::Queue { .. }
        ));
        // An event fully corroborated is still an episode: episodes hold events.
        let mut event = gated(3, 2, 0.9, 1.0);
        event.block = Block::Episodes;
        assert_eq!(
            route(&event, &[], None, &c).0,
            Outcome::Episode {
                reason: "an event: kept in the episodes".into()
            }
        );
        let (o, _, _) = route(&gated(3, 2, 0.9, 1.0), &[near("f_1", 0.95)], None, &c);
        assert_eq!(
            o,
            Outcome::Reinforce {
                fact_id: "f_1".into()
            }
        );
    }

    #[test]
    fn salience_is_needed_for_a_line_whatever_the_corroboration() {
        let c = Config::default();
        let scored = |g: Gated, s: f32| Gated {
            salience: Some(keep::Worth::of(s, &g.text)),
            ..g
        };
        let low = keep::SEND - 0.01;
        // Said often on many days, fully traceable: still not durable below KEEP.
        let (o, _, _) = route(&scored(gated(6, 5, 0.99, 1.0), low), &[], None, &c);
        assert!(
            matches!(o, Outcome::Refuse { ref reason } if reason.starts_with("salience")),
            "{o:?}"
        );
        // Nor between SEND and KEEP: repetition does not lower the bar (a reaction is said
        // again as easily as a fact).
        let middle = (keep::SEND + keep::KEEP) / 2.0;
        let (o, _, _) = route(&scored(gated(6, 5, 0.99, 1.0), middle), &[], None, &c);
        assert!(
            matches!(o, Outcome::Refuse { ref reason } if reason.starts_with("salience")),
            "{o:?}"
        );
        let (o, _, _) = route(&scored(gated(6, 5, 0.99, 1.0), keep::KEEP), &[], None, &c);
        assert!(matches!(o, Outcome::Promote), "{o:?}");
        // Not an episode, not a card for something said twice.
        for g in [gated(1, 1, 0.6, 1.0), gated(2, 1, 0.9, 1.0)] {
            let (o, _, _) = route(&scored(g, low), &[], None, &c);
            assert!(matches!(o, Outcome::Refuse { .. }), "{o:?}");
        }
        let mut off = Config::default();
        off.episodes.enabled = false;
        let (o, _, _) = route(&scored(gated(1, 1, 0.6, 1.0), low), &[], None, &off);
        assert!(matches!(o, Outcome::Refuse { .. }), "{o:?}");
        // Words the events do not hold are a person's to decide: the score ranks the card.
        let (o, _, _) = route(&scored(gated(1, 1, 0.6, 0.9), low), &[], None, &c);
        assert!(matches!(o, Outcome::Queue { .. }), "{o:?}");
        // A restatement of a kept fact reinforces it whatever its score.
        let (o, _, _) = route(
            &scored(gated(1, 1, 0.6, 1.0), low),
            &[near("f_1", 0.95)],
            None,
            &c,
        );
        assert_eq!(
            o,
            Outcome::Reinforce {
                fact_id: "f_1".into()
            }
        );
        // A card proposing to supersede a fact stays a person's to decide.
        let v = Verdict {
            candidate_id: "k".into(),
            contradicts: Some("f_1".into()),
            duplicate_of: None,
            reason: "contradicts".into(),
        };
        let (o, _, _) = route(
            &scored(gated(1, 1, 0.6, 1.0), low),
            &[near("f_1", 0.5)],
            Some(&v),
            &c,
        );
        assert!(
            matches!(
                o,
                Outcome::Queue {
                    supersedes: Some(_),
                    ..
                }
            ),
            "{o:?}"
        );
        // At KEEP, the routes are what corroboration gives.
        assert_eq!(
            route(&scored(gated(3, 2, 0.9, 1.0), keep::KEEP), &[], None, &c).0,
            Outcome::Promote
        );
        assert!(matches!(
            route(&scored(gated(1, 1, 0.6, 1.0), keep::KEEP), &[], None, &c).0,
            Outcome::Episode { .. }
        ));
    }

    #[test]
    fn with_the_episodic_tier_off_a_person_decides_what_lacks_corroboration() {
        let mut c = Config::default();
        c.episodes.enabled = false;
        let (o, _, _) = route(&gated(2, 1, 0.9, 1.0), &[], None, &c);
        assert_eq!(
            o,
            Outcome::Queue {
                reason: "support 2 < min_support 3; days 1 < min_days 2".into(),
                supersedes: None
            }
        );
        let mut event = gated(3, 2, 0.9, 1.0);
        event.block = Block::Episodes;
        assert_eq!(route(&event, &[], None, &c).0, Outcome::Promote);
    }

    #[test]
    fn a_restatement_by_meaning_reinforces_only_when_the_s6_measures_agree() {
        use crate::schema::{BlockFile, Fact, Memory, Origin};
        let day = chrono::NaiveDate::from_ymd_opt(2026, 11, 2).unwrap();
        let fact = |id: &str, text: &str| {
            Fact::new(
                id.into(),
                text.into(),
                "identity".into(),
                Origin::Auto,
                vec!["e1".into()],
                day,
                day,
            )
        };
        let mut human = BlockFile::empty(Block::Human);
        human.push(fact("f_lisbon", "I live in Lisbon with my partner."));
        let memory = Memory::new(vec![human]);
        let vectors: HashMap<String, Vec<f32>> = [
            ("I live in Lisbon with my partner.", [1.0, 0.0]),
            ("My home is in Lisbon, with my partner.", [0.8, 0.6]),
            ("I live in Porto with my partner.", [0.8, 0.6]),
            ("Far away in meaning, with my partner.", [0.0, 1.0]),
            ("We had to say goodbye to our old dog.", [0.8, 0.6]),
        ]
        .into_iter()
        .map(|(t, v)| (t.to_string(), v.to_vec()))
        .collect();
        let rule = Restating {
            reinforce_similarity: 0.9,
            vectors: Some((0.8, &vectors)),
        };
        // Distance 0.632 <= 0.8, the same name: a restatement, which S6 alone misses.
        let n = nearest(&memory, "My home is in Lisbon, with my partner.", 5, &rule);
        assert!(n[0].restates && n[0].similarity < 0.9, "{n:?}");
        assert_eq!(n[0].distance, Some(0.632));
        let s6 = nearest(
            &memory,
            "My home is in Lisbon, with my partner.",
            5,
            &Restating::s6(&Config::default()),
        );
        assert!(!s6[0].restates && s6[0].distance.is_none());
        let c = Config::default();
        let (o, _, gates) = route(&gated(3, 2, 0.9, 1.0), &n, None, &c);
        assert_eq!(
            o,
            Outcome::Reinforce {
                fact_id: "f_lisbon".into()
            }
        );
        assert!(
            gates[0].detail.contains("restates it by meaning"),
            "{:?}",
            gates[0]
        );
        // As close, but another city: never.
        let n = nearest(&memory, "I live in Porto with my partner.", 5, &rule);
        assert!(!n[0].restates, "{n:?}");
        // As close, but no content word in common: close vectors alone say the two are
        // near in meaning, not that one says the other again.
        let n = nearest(&memory, "We had to say goodbye to our old dog.", 5, &rule);
        assert!(n.iter().all(|n| !n.restates), "{n:?}");
        // Far in meaning, though words are shared: near by S6, no restatement.
        let n = nearest(&memory, "Far away in meaning, with my partner.", 5, &rule);
        assert!(!n[0].restates && n[0].distance == Some(1.414), "{n:?}");
        // The same closeness to an episode (one dated happening) is another happening of
        // its kind: only a restatement in its own words reinforces an episode.
        let mut episodes = BlockFile::empty(Block::Episodes);
        episodes.push(fact("f_lisbon", "I live in Lisbon with my partner."));
        let memory = Memory::new(vec![episodes]);
        let n = nearest(&memory, "My home is in Lisbon, with my partner.", 5, &rule);
        assert!(!n[0].restates && n[0].distance == Some(0.632), "{n:?}");
        let n = nearest(&memory, "I live in Lisbon with my partner.", 5, &rule);
        assert!(n[0].restates, "{n:?}");
    }

    #[test]
    fn the_judge_can_only_name_facts_it_was_shown() {
        let c = Config::default();
        let v = Verdict {
            candidate_id: "k".into(),
            contradicts: Some("f_ghost".into()),
            duplicate_of: None,
            reason: "contradicts".into(),
        };
        let (o, judge, _) = route(&gated(3, 2, 0.9, 1.0), &[near("f_1", 0.5)], Some(&v), &c);
        assert_eq!(o, Outcome::Promote);
        assert!(judge.contains("f_ghost as contradicted, but it was not among the facts sent"));
        let v = Verdict {
            contradicts: Some("f_1".into()),
            ..v
        };
        let (o, _, _) = route(&gated(3, 2, 0.9, 1.0), &[near("f_1", 0.5)], Some(&v), &c);
        assert!(matches!(o, Outcome::Queue { supersedes: Some(ref f), .. } if f == "f_1"));
    }
}
