//! Evaluations of memory quality on public datasets (`dream eval ...`).
//!
//! A dataset is replayed the way a timer would run dream over it: its events are written
//! to the inbox of a fresh repository day by day, one evening cycle runs per day with the
//! cycle clock (`--now`) at that evening, and the measures are taken from what the
//! repository holds afterwards: durable facts in `memory/*.md` and pending review cards.
//! Each conversation gets its own repository, so nothing leaks between them. The
//! conversion and the measures are pure ([`locomo`]); this module does the replay.

pub mod locomo;
pub mod pairs;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::cycle::{self, Options as CycleOptions};
use crate::edges::fsutil::write_atomic;
use crate::edges::store::Store;
use crate::error::{Context, Error, Result};
use crate::providers::{self};
use dream_core::config::{Config, CycleKind};

use locomo::{Counts, Figures, Item};

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Only these sample ids (all when empty).
    pub only: Vec<String>,
    /// A dream.toml to use instead of the defaults.
    pub config: Option<PathBuf>,
    /// Keep the replay repositories here.
    pub keep: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub dataset: String,
    pub config: String,
    pub provider: String,
    pub embedder: String,
    /// The DBSCAN radius the replay clustered at.
    pub eps: f64,
    pub conversations: Vec<ConversationResult>,
    pub overall: Result1,
    pub seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConversationResult {
    pub sample_id: String,
    #[serde(flatten)]
    pub result: Result1,
    pub skipped: Vec<String>,
    /// Where the replay repository was kept, if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
}

/// Counts and the figures derived from them.
#[derive(Debug, Clone, Serialize)]
pub struct Result1 {
    pub figures: Figures,
    pub counts: Counts,
}

impl From<Counts> for Result1 {
    fn from(counts: Counts) -> Result1 {
        Result1 {
            figures: counts.figures(),
            counts,
        }
    }
}

/// Replay a LoCoMo file and measure it.
pub fn run_locomo(path: &Path, opts: &Options) -> Result<EvalReport> {
    let started = Instant::now();
    let text = std::fs::read_to_string(path).context(|| format!("reading {}", path.display()))?;
    let mut convs = locomo::parse(&text)
        .map_err(|e| Error::Input(format!("{} is not a LoCoMo file: {e}", path.display())))?;
    if !opts.only.is_empty() {
        let unknown: Vec<&String> = opts
            .only
            .iter()
            .filter(|id| !convs.iter().any(|c| &c.sample_id == *id))
            .collect();
        if !unknown.is_empty() {
            return Err(Error::Usage(format!(
                "--only names conversations the file does not hold: {}; it holds {}",
                unknown
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                convs
                    .iter()
                    .map(|c| c.sample_id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        convs.retain(|c| opts.only.contains(&c.sample_id));
    }
    let config_text = match &opts.config {
        Some(p) => {
            let t = std::fs::read_to_string(p).context(|| format!("reading {}", p.display()))?;
            Config::parse(&t, &p.display().to_string(), &Default::default())?;
            Some(t)
        }
        None => None,
    };
    let scratch = tempfile::Builder::new()
        .prefix("dream-eval-")
        .tempdir()
        .context(|| "creating a temporary folder".into())?;
    let base = match &opts.keep {
        Some(d) => {
            std::fs::create_dir_all(d).context(|| format!("creating {}", d.display()))?;
            d.clone()
        }
        None => scratch.path().to_path_buf(),
    };
    let mut provider_name = String::new();
    let mut embedder_name = String::new();
    let mut eps = 0.0;
    let mut overall = Counts::default();
    let mut results = Vec::new();
    for conv in &convs {
        let dir = base.join(&conv.sample_id);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).context(|| format!("removing {}", dir.display()))?;
        }
        crate::edges::repo::create(&dir)?;
        if let Some(t) = &config_text {
            write_atomic(&dir.join(dream_core::config::FILE), t.as_bytes())?;
        }
        let config = crate::config::load(&dir)?;
        let provider = providers::llm(&config)?;
        let embedder = providers::embedder(&config)?;
        provider_name = provider.name();
        embedder_name = embedder.id();
        eps = crate::providers::embed::eps(&config, embedder.as_ref());
        let mut cycles = 0;
        let mut last_now = None;
        for (now, sessions) in conv.evenings() {
            for s in sessions {
                let mut lines = String::new();
                for e in &s.events {
                    lines.push_str(&e.to_line());
                    lines.push('\n');
                }
                let name = format!("{}-S{}.jsonl", conv.sample_id, s.number);
                write_atomic(&dir.join(&config.inbox.path).join(name), lines.as_bytes())?;
            }
            let opts = CycleOptions {
                kind: CycleKind::Evening,
                dry_run: false,
                allow_loss: false,
                now,
            };
            cycle::run(&dir, &config, provider.as_ref(), embedder.as_ref(), &opts)?;
            cycles += 1;
            last_now = Some(now);
        }
        let store = Store::open(&dir)?;
        let today = last_now.map(|t| t.date_naive()).unwrap_or_default();
        let memory = store.load_memory(today)?;
        let facts: Vec<Item> = memory
            .facts()
            .map(|(_, f)| Item {
                text: f.text.clone(),
                support: f.support.clone(),
            })
            .collect();
        let (cards, _) = store.pending_cards()?;
        let cards: Vec<Item> = cards
            .into_iter()
            .map(|c| Item {
                text: c.text,
                support: c.supporting_event_ids,
            })
            .collect();
        let mut counts = locomo::measure(conv, &facts, &cards);
        counts.cycles = cycles;
        let (clustered, largest) = clustering(&dir, &config, embedder.as_ref(), conv)?;
        counts.evidence_clustered = locomo::evidence_events(conv)
            .iter()
            .filter(|id| clustered.contains(*id))
            .count();
        counts.largest_cluster = largest;
        overall.add(&counts);
        results.push(ConversationResult {
            sample_id: conv.sample_id.clone(),
            result: counts.into(),
            skipped: conv.skipped.clone(),
            repo: opts.keep.as_ref().map(|_| dir.display().to_string()),
        });
    }
    Ok(EvalReport {
        dataset: path.display().to_string(),
        config: opts
            .config
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "defaults".into()),
        provider: provider_name,
        embedder: embedder_name,
        eps,
        conversations: results,
        overall: overall.into(),
        seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    })
}

/// The turns a replay clustered with another turn (see [`locomo::clustered_turns`]),
/// from the vectors the replay cached under the embedder's id.
fn clustering(
    dir: &Path,
    config: &Config,
    embedder: &dyn crate::providers::embed::Embedder,
    conv: &locomo::Conversation,
) -> Result<(std::collections::HashSet<String>, usize)> {
    let Some(state) = crate::edges::state::State::open_read_only(dir)? else {
        return Ok(Default::default());
    };
    let ids: Vec<&str> = conv.events().map(|e| e.id.as_str()).collect();
    let vectors = crate::edges::state::embeddings(&state.conn, &embedder.id(), &ids)?;
    Ok(locomo::clustered_turns(
        conv,
        &vectors,
        config.cluster.window_days,
        config.cluster.min_points,
        crate::providers::embed::eps(config, embedder),
    ))
}

/// The evaluation as a table a person can scan.
pub fn render(r: &EvalReport) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "dream eval locomo: {} ({} config, provider {}, embedder {} at eps {}, {:.1} s)",
        r.dataset, r.config, r.provider, r.embedder, r.eps, r.seconds
    );
    let _ = writeln!(
        o,
        "\n  {:<10} {:>6} {:>6} {:>5} {:>5}  {:>9} {:>11}  {:>6}  {:>8} {:>8} {:>9}  {:>7}  {:>9}",
        "sample",
        "events",
        "cycles",
        "facts",
        "cards",
        "retention",
        "+cards",
        "size",
        "evidence",
        "+cards",
        "clustered",
        "support",
        "traceable"
    );
    let row = |o: &mut String, name: &str, x: &Result1| {
        let f = &x.figures;
        let c = &x.counts;
        let _ = writeln!(
            o,
            "  {:<10} {:>6} {:>6} {:>5} {:>5}  {:>9} {:>11}  {:>6}  {:>8} {:>8} {:>9}  {:>7}  {:>9}",
            name,
            c.events,
            c.cycles,
            c.facts,
            c.cards,
            format!("{:.1}%", f.answer_retention * 100.0),
            format!("{:.1}%", f.answer_retention_with_cards * 100.0),
            format!("{:.2}%", f.memory_size * 100.0),
            format!("{:.1}%", f.evidence_recall_facts_only * 100.0),
            format!("{:.1}%", f.evidence_recall * 100.0),
            format!("{:.1}%", f.evidence_clustered * 100.0),
            format!("{:.2}", f.average_support),
            format!("{:.1}%", f.traceability * 100.0),
        );
    };
    for c in &r.conversations {
        row(&mut o, &c.sample_id, &c.result);
    }
    row(&mut o, "overall", &r.overall);
    let c = &r.overall.counts;
    let _ = writeln!(
        o,
        "\n  retention: questions of categories 1, 2, 4 ({}) whose answer's content words are all in one fact (+cards: or one pending card)",
        c.questions
    );
    let _ = writeln!(
        o,
        "  size: words in durable facts / words in the transcript ({} / {})",
        c.memory_words, c.transcript_words
    );
    let _ = writeln!(
        o,
        "  evidence: evidence turns ({}; {} invalid ids left out) cited by a fact (+cards: or a card); support: events cited per fact",
        c.evidence_turns, c.evidence_invalid
    );
    let _ = writeln!(
        o,
        "  clustered: evidence turns a cycle reflected on in a cluster with another turn (largest cluster: {} turns)",
        c.largest_cluster
    );
    let _ = writeln!(
        o,
        "  traceable: facts whose content words all appear in the events they cite (must be 100%)"
    );
    for conv in &r.conversations {
        if let Some(repo) = &conv.repo {
            let _ = writeln!(o, "  kept {}: {repo}", conv.sample_id);
        }
    }
    o
}
