//! Memory quality on the two dev sets, for maintainers (docs/BENCHMARKS.md):
//!
//! - `dream-bench eval-locomo FILE --reference`: the LoCoMo replay of `dream eval locomo`
//!   with a **reference reflector**: the scripted fake server of the tests answers every
//!   reflect call with the LoCoMo authors' own observations of the turns in it (a
//!   stand-in for a good model), so the whole model path runs (prompts, parsing, gates,
//!   routes, the judge) and what it loses is measured: the fate of every observation by
//!   reason. Without `--reference` the replay uses the configured provider, as `dream eval
//!   locomo` does.
//! - `dream-bench eval-agent`: the seeded coding-agent sessions of
//!   [`dream_testkit::agent`] replayed one evening cycle per working day, and what memory
//!   kept against their labels: durable facts, episodes, and noise that must be nowhere.
//!
//! The fake server lives in the test kit, which never ships in `dream`; that is why the
//! reference mode is here and not in `dream eval`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{json, Value};

use dream_core::schema::settings::{Config, CycleKind};
use dream_core::schema::Block;
use dream_core::text::measures;
use dream_engine::cycle::{self, Options as CycleOptions};
use dream_engine::edges::fsutil::write_atomic;
use dream_engine::edges::store::Store;
use dream_engine::error::{Context, Error, Result};
use dream_engine::eval::{self, ConversationResult, EvalReport};
use dream_testkit::agent::{self, AgentSpec, Kind, Noise};
use dream_testkit::fake_llm::{self, Answer, Call, FakeLlm};

/// One observation of the LoCoMo authors: who it is about, its text, the turns it cites.
#[derive(Debug, Clone)]
struct Observation {
    sample: String,
    text: String,
    cites: Vec<String>,
}

/// The authors' observations, and what the fake server did with them.
pub(crate) struct Reference {
    observations: Vec<Observation>,
    by_turn: HashMap<String, Vec<usize>>,
    /// A turn as a reflect prompt shows it (its day, speaker and text, spaces collapsed) ->
    /// the turns it may be: the prompt gives events numbers, never their ids.
    by_line: HashMap<(String, String, String), Vec<String>>,
    served: Mutex<HashSet<usize>>,
    sent: Mutex<HashSet<String>>,
}

impl Reference {
    pub(crate) fn parse(text: &str) -> Result<Reference> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| Error::Input(format!("not a LoCoMo file: {e}")))?;
        let mut observations = Vec::new();
        for conv in v.as_array().into_iter().flatten() {
            let sample = conv["sample_id"].as_str().unwrap_or_default().to_string();
            let Some(obs) = conv["observation"].as_object() else {
                continue;
            };
            let mut sessions: Vec<(&String, &Value)> = obs.iter().collect();
            sessions.sort_by_key(|(k, _)| {
                k.trim_start_matches("session_")
                    .trim_end_matches("_observation")
                    .parse::<u32>()
                    .unwrap_or(0)
            });
            for (_, by_speaker) in sessions {
                for (_, items) in by_speaker.as_object().into_iter().flatten() {
                    for item in items.as_array().into_iter().flatten() {
                        let text = item[0].as_str().unwrap_or_default().trim().to_string();
                        let raw = match &item[1] {
                            Value::String(s) => s.clone(),
                            Value::Array(a) => a
                                .iter()
                                .filter_map(|x| x.as_str())
                                .collect::<Vec<_>>()
                                .join(";"),
                            _ => String::new(),
                        };
                        let cites: Vec<String> = eval::locomo::canonical_dia_ids(&raw)
                            .into_iter()
                            .map(|d| format!("{sample}:{d}"))
                            .collect();
                        if !text.is_empty() && !cites.is_empty() {
                            observations.push(Observation {
                                sample: sample.clone(),
                                text,
                                cites,
                            });
                        }
                    }
                }
            }
        }
        let mut by_turn: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, o) in observations.iter().enumerate() {
            for c in &o.cites {
                by_turn.entry(c.clone()).or_default().push(i);
            }
        }
        let mut by_line: HashMap<(String, String, String), Vec<String>> = HashMap::new();
        let convs = eval::locomo::parse(text)
            .map_err(|e| Error::Input(format!("not a LoCoMo file: {e}")))?;
        for e in convs.iter().flat_map(|c| c.events()) {
            let key = line_key(
                &e.ts.format("%A %-d %B %Y").to_string(),
                e.actor.as_deref().unwrap_or_default(),
                &e.text,
            );
            by_line.entry(key).or_default().push(e.id.clone());
        }
        Ok(Reference {
            observations,
            by_turn,
            by_line,
            served: Mutex::new(HashSet::new()),
            sent: Mutex::new(HashSet::new()),
        })
    }

    /// The reflect answer: every observation not served yet whose cited turns are in the
    /// call, one of them new, citing those turns by the numbers the call gives them.
    pub(crate) fn reflect(&self, call: &Call) -> Answer {
        // Each shown event's turns (by day, speaker and text), and each turn's number.
        let mut label: HashMap<String, String> = HashMap::new();
        let mut fresh: HashSet<String> = HashSet::new();
        let mut turns: Vec<String> = Vec::new();
        for e in call.events() {
            let key = line_key(&e.day, &e.actor, &e.text);
            for id in self.by_line.get(&key).into_iter().flatten() {
                if label.insert(id.clone(), e.id.clone()).is_none() {
                    turns.push(id.clone());
                }
                if e.new {
                    fresh.insert(id.clone());
                }
            }
        }
        let ids: HashSet<&str> = label.keys().map(String::as_str).collect();
        let fresh: HashSet<&str> = fresh.iter().map(String::as_str).collect();
        self.sent.lock().unwrap().extend(label.keys().cloned());
        let mut served = self.served.lock().unwrap();
        let mut candidates = Vec::new();
        for turn in &turns {
            for &i in self.by_turn.get(turn).into_iter().flatten() {
                let o = &self.observations[i];
                let cited: Vec<&String> = o
                    .cites
                    .iter()
                    .filter(|c| ids.contains(c.as_str()))
                    .collect();
                if served.contains(&i) || !cited.iter().any(|c| fresh.contains(c.as_str())) {
                    continue;
                }
                served.insert(i);
                let (category, block) = dream_core::schema::classify(&o.text);
                candidates.push(json!({
                    "text": o.text,
                    "category": category,
                    "block": block.as_str(),
                    "ids": cited.iter().map(|c| label[c.as_str()].clone()).collect::<Vec<_>>(),
                    "confidence": 0.9,
                    "reason": format!("locomo observation {i}"),
                }));
            }
        }
        Answer::json(json!({ "candidates": candidates }))
    }
}

/// A turn as the reflect prompt shows it: its day, its speaker, and its text with every run
/// of white space one space (the prompt puts an image's caption on a line of its own).
fn line_key(day: &str, speaker: &str, text: &str) -> (String, String, String) {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (day.to_string(), speaker.to_string(), text)
}

/// What happened to the reference candidates of one conversation, by reason.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Fates {
    pub sample_id: String,
    pub observations: usize,
    pub fates: BTreeMap<String, usize>,
    /// A few observations of each fate, for reading.
    pub examples: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LocomoQuality {
    pub eval: EvalReport,
    /// With `--reference`: the fate of every observation, per conversation and overall.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fates: Vec<Fates>,
}

/// Options of `dream-bench eval-locomo`.
#[derive(Debug, Clone)]
pub struct LocomoOptions {
    pub path: PathBuf,
    pub reference: bool,
    pub eval: eval::Options,
}

pub fn locomo(o: &LocomoOptions) -> Result<LocomoQuality> {
    if !o.reference {
        return Ok(LocomoQuality {
            eval: eval::run_locomo(&o.path, &o.eval)?,
            fates: Vec::new(),
        });
    }
    let text =
        std::fs::read_to_string(&o.path).context(|| format!("reading {}", o.path.display()))?;
    let reference = Arc::new(Reference::parse(&text)?);
    let fake = FakeLlm::start();
    {
        let r = reference.clone();
        fake.on("reflect", move |call| r.reflect(call));
    }
    fake.on("judge", fake_llm::agreeable_judge);
    let mut opts = o.eval.clone();
    opts.llm = Some(eval::Endpoint {
        base_url: fake.base_url(),
        model: "reference-observations".into(),
    });
    let report = eval::run_locomo(&o.path, &opts)?;
    let served = reference.served.lock().unwrap().clone();
    let sent = reference.sent.lock().unwrap().clone();
    let mut fates = Vec::new();
    let mut overall = Fates {
        sample_id: "overall".into(),
        ..Fates::default()
    };
    for conv in &report.conversations {
        let f = conversation_fates(conv, &reference, &served, &sent);
        overall.observations += f.observations;
        for (k, v) in &f.fates {
            *overall.fates.entry(k.clone()).or_insert(0) += v;
        }
        for (k, v) in &f.examples {
            let ex = overall.examples.entry(k.clone()).or_default();
            for e in v {
                if ex.len() < 8 {
                    ex.push(e.clone());
                }
            }
        }
        fates.push(f);
    }
    fates.push(overall);
    Ok(LocomoQuality {
        eval: report,
        fates,
    })
}

fn conversation_fates(
    conv: &ConversationResult,
    reference: &Reference,
    served: &HashSet<usize>,
    sent: &HashSet<String>,
) -> Fates {
    let mut by_reason: HashMap<&str, &dream_core::operations::report::DecisionRow> = HashMap::new();
    for d in &conv.decisions {
        by_reason.entry(d.proposer.as_str()).or_insert(d);
    }
    let mut out = Fates {
        sample_id: conv.sample_id.clone(),
        ..Fates::default()
    };
    for (i, o) in reference.observations.iter().enumerate() {
        if o.sample != conv.sample_id {
            continue;
        }
        out.observations += 1;
        let fate = if !served.contains(&i) {
            if o.cites.iter().any(|c| sent.contains(c)) {
                "not proposed: its turn was shown only as old context".to_string()
            } else {
                "not proposed: its turn was never shown to the model".to_string()
            }
        } else {
            match by_reason.get(format!("locomo observation {i}").as_str()) {
                Some(d) if d.route == "refused" || d.route == "queued" => {
                    format!("{}: {}", d.route, eval::reason_class(&d.reason))
                }
                Some(d) => d.route.clone(),
                None => "proposed, but no decision recorded".into(),
            }
        };
        let ex = out.examples.entry(fate.clone()).or_default();
        if ex.len() < 5 {
            ex.push(format!("{} [{}]", o.text, o.cites.join(", ")));
        }
        *out.fates.entry(fate).or_insert(0) += 1;
    }
    out
}

pub fn render_locomo(q: &LocomoQuality) -> String {
    use std::fmt::Write as _;
    let mut o = eval::render(&q.eval);
    if !q.fates.is_empty() {
        let _ = writeln!(
            o,
            "\n  reference candidates (the authors' observations) by fate:"
        );
        for f in &q.fates {
            let _ = writeln!(o, "  {} ({} observations)", f.sample_id, f.observations);
            let mut rows: Vec<(&String, &usize)> = f.fates.iter().collect();
            rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            for (k, v) in rows {
                let _ = writeln!(o, "    {v:>5}  {k}");
            }
        }
    }
    o
}

/// Options of `dream-bench eval-agent`.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub seeds: Vec<u64>,
    pub days: u32,
    pub config: Option<PathBuf>,
    pub keep: Option<PathBuf>,
}

/// What memory kept of one generated agent set, against its labels.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AgentQuality {
    pub seed: u64,
    pub events: usize,
    pub cycles: usize,
    /// Labelled durable facts, and those found in a durable block (persona, human,
    /// scratch) or in the episodes.
    pub durable: usize,
    pub durable_in_durable_blocks: usize,
    pub durable_in_episodes: usize,
    /// Labelled informative single mentions, and those kept (in the episodes, or anywhere
    /// in memory).
    pub episodes: usize,
    pub episodes_kept: usize,
    pub episodes_in_durable_blocks: usize,
    /// Facts in durable blocks and episodes, and how many of each match no durable or
    /// episode label.
    pub durable_block_facts: usize,
    pub episode_facts: usize,
    pub unlabelled_durable: usize,
    pub unlabelled_episodes: usize,
    /// Noise found, by kind: in durable blocks, in the episodes, on pending cards.
    pub noise_in_durable: BTreeMap<String, usize>,
    pub noise_in_episodes: BTreeMap<String, usize>,
    pub noise_on_cards: BTreeMap<String, usize>,
    pub cards: usize,
    /// Whether the pasted secret's text is anywhere in the repository's files.
    pub secret_found: bool,
    /// Words in memory as a share of the words of the stream.
    pub memory_size: f64,
    pub tokens: u64,
    pub verify_problems: usize,
    /// The texts of what noise memory holds, for reading.
    pub noise_texts: Vec<String>,
}

/// A memory text's body: what it says without the date and speaker an episode starts
/// with.
fn body(text: &str) -> &str {
    dream_core::schema::episode_body(text)
}

fn matches(label: &str, fact: &str) -> bool {
    measures::similarity(label, body(fact)) >= 0.9
}

pub fn agent(o: &AgentOptions) -> Result<Vec<AgentQuality>> {
    let scratch = tempfile::Builder::new()
        .prefix("dream-eval-agent-")
        .tempdir()
        .context(|| "creating a temporary folder".into())?;
    let base = o
        .keep
        .clone()
        .unwrap_or_else(|| scratch.path().to_path_buf());
    let config_text = match &o.config {
        Some(p) => Some(std::fs::read_to_string(p).context(|| format!("reading {}", p.display()))?),
        None => None,
    };
    let mut out = Vec::new();
    for &seed in &o.seeds {
        let set = agent::generate(&AgentSpec {
            seed,
            days: o.days,
            ..AgentSpec::default()
        });
        let dir = base.join(format!("agent-{seed}"));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).context(|| format!("removing {}", dir.display()))?;
        }
        dream_engine::edges::repo::create(&dir)?;
        if let Some(t) = &config_text {
            write_atomic(&dir.join(dream_core::schema::settings::FILE), t.as_bytes())?;
        }
        let config: Config = dream_engine::config::load(&dir)?;
        let llm = dream_engine::providers::llm(&config)?;
        let embedder = dream_engine::providers::embedder(&config)?;
        let mut q = AgentQuality {
            seed,
            events: set.events(),
            ..AgentQuality::default()
        };
        for day in &set.days {
            write_atomic(
                &dir.join(&config.inbox.path)
                    .join(format!("{}.jsonl", day.date)),
                day.to_jsonl().as_bytes(),
            )?;
            let opts = CycleOptions {
                kind: CycleKind::Evening,
                dry_run: false,
                now: day.evening(),
                allow_loss: false,
            };
            let r = cycle::run_cycle(&dir, &config, llm.as_ref(), embedder.as_ref(), &opts)?;
            q.tokens += r.tokens.spent;
            q.cycles += 1;
        }
        score(&dir, &set, &mut q)?;
        out.push(q);
    }
    Ok(out)
}

fn score(dir: &Path, set: &agent::AgentSet, q: &mut AgentQuality) -> Result<()> {
    let store = Store::open(dir)?;
    let today = set.days.last().map(|d| d.date).unwrap_or_default();
    let memory = store.load_memory(today)?;
    let (cards, _) = store.pending_cards()?;
    q.cards = cards.len();
    let durable: Vec<&str> = memory
        .facts()
        .filter(|(b, _)| *b != Block::Episodes)
        .map(|(_, f)| f.text.as_str())
        .collect();
    let episodes: Vec<&str> = memory
        .facts()
        .filter(|(b, _)| *b == Block::Episodes)
        .map(|(_, f)| f.text.as_str())
        .collect();
    q.durable_block_facts = durable.len();
    q.episode_facts = episodes.len();
    let in_any = |texts: &[&str], label: &str| texts.iter().any(|t| matches(label, t));
    // A label as memory would write it: its relative dates read against the day it was said.
    let as_written = |l: &agent::Labelled| match l.days.iter().next() {
        Some(d) => dream_core::text::when::rewrite(&l.text, *d),
        None => l.text.clone(),
    };
    for l in &set.labels {
        let written = as_written(l);
        match l.kind {
            Kind::Durable => {
                q.durable += 1;
                if in_any(&durable, &written) {
                    q.durable_in_durable_blocks += 1;
                } else if in_any(&episodes, &written) {
                    q.durable_in_episodes += 1;
                }
            }
            Kind::Episode => {
                q.episodes += 1;
                if in_any(&episodes, &written) {
                    q.episodes_kept += 1;
                } else if in_any(&durable, &written) {
                    q.episodes_kept += 1;
                    q.episodes_in_durable_blocks += 1;
                }
            }
            Kind::Noise(kind) => {
                let name = kind.as_str().to_string();
                let probe = if kind == Noise::Secret {
                    // The secret is found by its characters, not its words.
                    None
                } else {
                    Some(l.text.as_str())
                };
                if let Some(text) = probe {
                    for (where_, texts) in [("durable", &durable), ("episodes", &episodes)] {
                        for t in texts.iter().filter(|t| matches(text, t)) {
                            let map = if where_ == "durable" {
                                &mut q.noise_in_durable
                            } else {
                                &mut q.noise_in_episodes
                            };
                            *map.entry(name.clone()).or_insert(0) += 1;
                            q.noise_texts.push(format!("{where_}: {t}"));
                        }
                    }
                    let n = cards.iter().filter(|c| matches(text, &c.text)).count();
                    if n > 0 {
                        *q.noise_on_cards.entry(name).or_insert(0) += n;
                    }
                }
            }
        }
    }
    let labelled = |t: &str| {
        set.labels
            .iter()
            .filter(|l| matches!(l.kind, Kind::Durable | Kind::Episode))
            .any(|l| matches(&as_written(l), t))
    };
    q.unlabelled_durable = durable.iter().filter(|t| !labelled(t)).count();
    q.unlabelled_episodes = episodes.iter().filter(|t| !labelled(t)).count();
    let secret = set
        .labels
        .iter()
        .find(|l| l.kind == Kind::Noise(Noise::Secret))
        .map(|l| l.text.clone())
        .unwrap_or_default();
    let mut files = Vec::new();
    for sub in ["memory", "review", "archive", "digests"] {
        collect(&dir.join(sub), &mut files);
    }
    q.secret_found = !secret.is_empty()
        && files.iter().any(|p| {
            std::fs::read_to_string(p)
                .map(|t| t.contains(&secret))
                .unwrap_or(false)
        });
    let stream_words: usize = set
        .days
        .iter()
        .flat_map(|d| d.events.iter())
        .map(|e| measures::tokens(e["text"].as_str().unwrap_or_default()).len())
        .sum();
    let memory_words: usize = memory
        .facts()
        .map(|(_, f)| measures::tokens(&f.text).len())
        .sum();
    q.memory_size = measures::round3(memory_words as f64 / stream_words.max(1) as f64);
    q.verify_problems = dream_engine::human::verify::verify(dir)?.problems.len();
    Ok(())
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else {
            out.push(p);
        }
    }
}

pub fn render_agent(rows: &[AgentQuality]) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "dream-bench eval-agent: generated coding-agent sessions, one evening cycle per working day\n"
    );
    let _ = writeln!(
        o,
        "  {:>5} {:>6} {:>7} {:>9} {:>9} {:>9} {:>8} {:>8} {:>6} {:>6} {:>5} {:>6} {:>7}",
        "seed",
        "events",
        "durable",
        "in blocks",
        "episodes",
        "kept",
        "noise:dur",
        "noise:ep",
        "cards",
        "unlab",
        "size",
        "secret",
        "verify"
    );
    for q in rows {
        let noise_d: usize = q.noise_in_durable.values().sum();
        let noise_e: usize = q.noise_in_episodes.values().sum();
        let _ = writeln!(
            o,
            "  {:>5} {:>6} {:>7} {:>9} {:>9} {:>9} {:>8} {:>8} {:>6} {:>6} {:>5} {:>6} {:>7}",
            q.seed,
            q.events,
            q.durable,
            format!("{}", q.durable_in_durable_blocks),
            q.episodes,
            q.episodes_kept,
            noise_d,
            noise_e,
            q.cards,
            q.unlabelled_durable + q.unlabelled_episodes,
            format!("{:.1}%", q.memory_size * 100.0),
            if q.secret_found { "FOUND" } else { "none" },
            q.verify_problems
        );
    }
    let _ = writeln!(
        o,
        "\n  durable: labelled durable facts (restated in >= 3 sessions on >= 2 days) / in blocks: found in persona, human or scratch"
    );
    let _ = writeln!(
        o,
        "  episodes: labelled informative single mentions / kept: found in memory; noise:dur, noise:ep: labelled noise found in durable blocks / episodes"
    );
    let _ = writeln!(
        o,
        "  unlab: facts and episodes matching no durable or episode label; size: words in memory / words of the stream"
    );
    for q in rows {
        for t in &q.noise_texts {
            let _ = writeln!(o, "  seed {} noise kept: {t}", q.seed);
        }
        for (k, v) in &q.noise_on_cards {
            let _ = writeln!(o, "  seed {} noise on cards: {v} {k}", q.seed);
        }
    }
    o
}
