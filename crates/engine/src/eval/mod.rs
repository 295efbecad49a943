//! Evaluations of memory quality on public datasets (`dream eval ...`).
//!
//! A dataset is replayed the way a timer would run dream over it: its events are written
//! to the inbox of a fresh repository day by day, one evening cycle runs per day with the
//! cycle clock (`--now`) at that evening, and the measures are taken from what the
//! repository holds afterwards: durable facts in `memory/*.md` and pending review cards.
//! Each conversation gets its own repository, so nothing leaks between them. The
//! conversion and the measures are pure ([`locomo`]); this module does the replay.

pub mod grounded;
pub mod locomo;
pub mod pairs;
pub mod sessions;
pub mod streams;
pub mod turns;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::cycle::{self, Options as CycleOptions};
use crate::edges::fsutil::write_atomic;
use crate::edges::store::Store;
use crate::error::{Context, Error, Result};
use crate::providers::{self};
use dream_core::operations::report::DecisionRow;
use dream_core::schema::settings::{Config, CycleKind};
use dream_core::schema::{Block, Memory};
use std::collections::BTreeMap;

use locomo::{Counts, Figures, Item};

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Only these sample ids (all when empty).
    pub only: Vec<String>,
    /// A dream.toml to use instead of the defaults.
    pub config: Option<PathBuf>,
    /// Keep the replay repositories here.
    pub keep: Option<PathBuf>,
    /// Point the `openai` provider at this server instead of the configured one (the
    /// benchmark's reference reflector serves the dataset's own observations this way).
    pub llm: Option<Endpoint>,
}

/// An OpenAI-compatible server on this machine, which needs no key.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub base_url: String,
    pub model: String,
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
    /// Grounded retention, size, precision, cards per cycle and tokens per event of memory
    /// and of its anchors (the transcript, the authors' observations and session
    /// summaries), all conversations together.
    pub precision: grounded::Precision,
    pub routes: BTreeMap<String, usize>,
    pub refusals: BTreeMap<String, usize>,
    /// The median time of one `recall` (the query embedded, ranked over memory), in ms.
    pub recall_median_ms: f64,
    pub seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConversationResult {
    pub sample_id: String,
    #[serde(flatten)]
    pub result: Result1,
    /// Memory and its anchors measured the same way ([`grounded`]).
    pub precision: grounded::Precision,
    /// Every candidate's route (promoted, episode, queued, reinforced, refused), counted.
    pub routes: BTreeMap<String, usize>,
    /// Refusals by reason, with the measured values left out so that like reasons count
    /// together.
    pub refusals: BTreeMap<String, usize>,
    /// Every candidate of every cycle, in order (for the benchmark's fate of each
    /// reference candidate).
    #[serde(skip)]
    pub decisions: Vec<DecisionRow>,
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
    let convs = read_conversations(path, opts)?;
    let config_text = read_config_text(opts)?;
    let (_scratch, base) = replay_base(opts, "dream-eval-")?;
    let mut provider_name = String::new();
    let mut embedder_name = String::new();
    let mut eps = 0.0;
    let mut overall = Counts::default();
    let mut overall_precision = grounded::Measures::default();
    let mut results = Vec::new();
    let mut recall_ms: Vec<f64> = Vec::new();
    for conv in &convs {
        let (dir, config) = prepare_replay(&base, conv, &config_text, opts)?;
        let provider = providers::llm(&config)?;
        let embedder = providers::embedder(&config)?;
        provider_name = provider.name();
        embedder_name = embedder.id();
        eps = crate::providers::embed::eps(&config, embedder.as_ref());
        let Replay {
            cycles,
            last_now,
            decisions,
            new_cards,
            tokens,
            calls,
        } = replay_evenings(&dir, &config, provider.as_ref(), embedder.as_ref(), conv)?;
        let store = Store::open(&dir)?;
        let today = last_now.map(|t| t.date_naive()).unwrap_or_default();
        let memory = store.load_memory(today)?;
        let (facts, cards) = memory_items(&dir, &store, &memory)?;
        let mut counts = locomo::measure(conv, &facts, &cards, &config.owner.names);
        ask_recall(
            conv,
            &config,
            embedder.as_ref(),
            &memory,
            today,
            &mut counts,
            &mut recall_ms,
        )?;
        counts.cycles = cycles;
        counts.tokens = tokens;
        counts.calls = calls;
        let (clustered, largest) = clustering(&dir, &config, embedder.as_ref(), conv)?;
        counts.evidence_clustered = locomo::evidence_events(conv)
            .iter()
            .filter(|id| clustered.contains(*id))
            .count();
        counts.largest_cluster = largest;
        let precision = precision_of(conv, &counts, new_cards, &facts);
        overall_precision.add(&precision);
        overall.add(&counts);
        let (routes, refusals) = count_routes(&decisions);
        results.push(ConversationResult {
            sample_id: conv.sample_id.clone(),
            result: counts.into(),
            precision: precision.into(),
            routes,
            refusals,
            decisions,
            skipped: conv.skipped.clone(),
            repo: opts.keep.as_ref().map(|_| dir.display().to_string()),
        });
    }
    let (routes, refusals) = sum_routes(&results);
    Ok(EvalReport {
        routes,
        refusals,
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
        precision: overall_precision.into(),
        recall_median_ms: median(&mut recall_ms),
        seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    })
}

/// Where the replay repositories go: the `--keep` folder, or a temporary one (kept alive
/// by the returned guard, removed when it drops).
fn replay_base(opts: &Options, prefix: &str) -> Result<(tempfile::TempDir, PathBuf)> {
    let scratch = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .context(|| "creating a temporary folder".into())?;
    let base = match &opts.keep {
        Some(d) => {
            std::fs::create_dir_all(d).context(|| format!("creating {}", d.display()))?;
            d.clone()
        }
        None => scratch.path().to_path_buf(),
    };
    Ok((scratch, base))
}

/// A fresh repository `base/name` (an earlier one removed) with the `--config` file's
/// text as its dream.toml when one was given.
fn fresh_repo(base: &Path, name: &str, config_text: &Option<String>) -> Result<PathBuf> {
    let dir = base.join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).context(|| format!("removing {}", dir.display()))?;
    }
    crate::edges::repo::create(&dir)?;
    if let Some(t) = &config_text {
        write_atomic(&dir.join(dream_core::schema::settings::FILE), t.as_bytes())?;
    }
    Ok(dir)
}

/// The config step: the text of the `--config` file, checked, if one was given.
fn read_config_text(opts: &Options) -> Result<Option<String>> {
    let config_text = match &opts.config {
        Some(p) => {
            let t = std::fs::read_to_string(p).context(|| format!("reading {}", p.display()))?;
            Config::parse(&t, &p.display().to_string(), &Default::default())?;
            Some(t)
        }
        None => None,
    };
    Ok(config_text)
}

/// The precision step: memory and its anchors measured for one conversation.
fn precision_of(
    conv: &locomo::Conversation,
    counts: &Counts,
    new_cards: usize,
    facts: &[Item],
) -> grounded::Measures {
    grounded::Measures {
        questions: grounded::questions(conv).len(),
        transcript_words: counts.transcript_words,
        events: counts.events,
        cycles: counts.cycles,
        queued: new_cards,
        tokens: counts.tokens,
        memory: grounded::memory(conv, facts),
        anchors: grounded::anchors(conv),
    }
}

/// The reading step: the LoCoMo file parsed, kept to the conversations `--only` names.
fn read_conversations(path: &Path, opts: &Options) -> Result<Vec<locomo::Conversation>> {
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
    Ok(convs)
}

/// The preparing step: a fresh repository for one conversation, and its config (the
/// given file's, the speakers as owners, the `--llm` server).
fn prepare_replay(
    base: &Path,
    conv: &locomo::Conversation,
    config_text: &Option<String>,
    opts: &Options,
) -> Result<(PathBuf, Config)> {
    let dir = fresh_repo(base, &conv.sample_id, config_text)?;
    let mut config = crate::config::load(&dir)?;
    // The two speakers are the people this memory belongs to, as a user names
    // themselves in `owner.names`.
    if config.owner.names.is_empty() {
        config.owner.names = conv.speakers.clone();
    }
    if let Some(e) = &opts.llm {
        config.llm.provider = "openai".into();
        config.llm.base_url = e.base_url.clone();
        config.llm.model = e.model.clone();
        config.llm.api_key_env = String::new();
    }
    Ok((dir, config))
}

/// What replaying a conversation's evenings left: the cycles run, the last one's time,
/// every decision, and the cards, tokens and calls they came to.
struct Replay {
    cycles: usize,
    last_now: Option<chrono::DateTime<chrono::Utc>>,
    decisions: Vec<DecisionRow>,
    new_cards: usize,
    tokens: u64,
    calls: u64,
}

/// The replaying step: each evening's sessions written to the inbox, then an evening cycle.
fn replay_evenings(
    dir: &Path,
    config: &Config,
    provider: &dyn dream_core::llm::Llm,
    embedder: &dyn crate::providers::embed::Embedder,
    conv: &locomo::Conversation,
) -> Result<Replay> {
    let mut cycles = 0;
    let mut last_now = None;
    let mut decisions = Vec::new();
    let mut new_cards = 0;
    let mut tokens = 0;
    let mut calls = 0;
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
        let report = cycle::run_cycle(dir, config, provider, embedder, &opts)?;
        tokens += report.tokens.spent;
        new_cards += report.review.new_cards;
        calls += report.tokens.calls;
        decisions.extend(report.decisions);
        cycles += 1;
        last_now = Some(now);
    }
    Ok(Replay {
        cycles,
        last_now,
        decisions,
        new_cards,
        tokens,
        calls,
    })
}

/// The memory step: memory's facts, and the cards pending or waiting for room, as items to measure.
fn memory_items(dir: &Path, store: &Store, memory: &Memory) -> Result<(Vec<Item>, Vec<Item>)> {
    let facts: Vec<Item> = memory
        .facts()
        .map(|(b, f)| Item {
            text: f.text.clone(),
            support: f.support.clone(),
            episode: b == Block::Episodes,
        })
        .collect();
    let (mut cards, _) = store.pending_cards()?;
    // Cards waiting for room in the review queue are a person's to decide as the
    // queue drains (`review.max_new_cards`): retention counting cards counts them too.
    if let Some(st) = crate::edges::state::State::open_read_only(dir)? {
        cards.extend(crate::edges::state::waiting(&st.conn)?.0);
    }
    let cards: Vec<Item> = cards
        .into_iter()
        .map(|c| Item {
            text: c.text,
            support: c.supporting_event_ids,
            episode: false,
        })
        .collect();
    Ok((facts, cards))
}

/// The recall step: each question asked through `recall`, its hits counted into `counts`
/// and its time into `recall_ms`.
fn ask_recall(
    conv: &locomo::Conversation,
    config: &Config,
    embedder: &dyn crate::providers::embed::Embedder,
    memory: &Memory,
    today: chrono::NaiveDate,
    counts: &mut Counts,
    recall_ms: &mut Vec<f64>,
) -> Result<()> {
    // Each question through `recall` as an agent asks it (what `dream mcp`'s tool
    // answers), the fact vectors cached as the server caches them.
    let mut cache = crate::agents::context::VectorCache::default();
    let support: BTreeMap<&str, &[String]> = memory
        .facts()
        .map(|(_, f)| (f.id.as_str(), f.support.as_slice()))
        .collect();
    for case in locomo::recall_questions(conv) {
        let (question, answer) = (case.question, case.answer);
        let t = Instant::now();
        let cosines = cache.cosines(embedder, memory, question, config.embed.batch_size)?;
        let hits = dream_core::recall::context::recall(
            memory,
            &config.retention,
            today,
            question,
            &cosines,
            locomo::RECALL_DEPTH,
        );
        recall_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let lines: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
        // The first k of a deeper recall are what a recall with limit k returns.
        let found = |k: usize| locomo::answer_in(answer, &lines[..k.min(lines.len())]);
        counts.recall_hits += usize::from(found(locomo::RECALL_K));
        counts.recall_hits_at_10 += usize::from(found(10));
        counts.recall_hits_at_20 += usize::from(found(20));
        let cited: Vec<(&str, &[String])> = hits
            .iter()
            .take(locomo::RECALL_K)
            .map(|h| {
                let s: &[String] = support.get(h.id.as_str()).copied().unwrap_or(&[]);
                (h.text.as_str(), s)
            })
            .collect();
        if locomo::answer_cited_in(answer, &case.evidence, &cited) {
            counts.recall_hits_cited += 1;
        }
    }
    Ok(())
}

/// The routes step: one conversation's decisions counted by route, and its refusals by reason.
fn count_routes(decisions: &[DecisionRow]) -> (BTreeMap<String, usize>, BTreeMap<String, usize>) {
    let mut routes = BTreeMap::new();
    let mut refusals = BTreeMap::new();
    for d in decisions {
        *routes.entry(d.route.clone()).or_insert(0) += 1;
        if d.route == "refused" {
            *refusals.entry(reason_class(&d.reason)).or_insert(0) += 1;
        }
    }
    (routes, refusals)
}

/// The totals step: every conversation's routes and refusals added up.
fn sum_routes(
    results: &[ConversationResult],
) -> (BTreeMap<String, usize>, BTreeMap<String, usize>) {
    let mut routes = BTreeMap::new();
    let mut refusals = BTreeMap::new();
    for c in results {
        for (k, v) in &c.routes {
            *routes.entry(k.clone()).or_insert(0) += v;
        }
        for (k, v) in &c.refusals {
            *refusals.entry(k.clone()).or_insert(0) += v;
        }
    }
    (routes, refusals)
}

/// `a` as a percentage of `b` (0 when `b` is 0).
fn ratio_pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 * 100.0 / b as f64
    }
}

/// The median of some figures (0 for none), rounded to 0.001.
fn median(xs: &mut [f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    let m = if xs.len() % 2 == 1 {
        xs[xs.len() / 2]
    } else {
        (xs[xs.len() / 2 - 1] + xs[xs.len() / 2]) / 2.0
    };
    (m * 1000.0).round() / 1000.0
}

/// A refusal's reason with what varies between candidates (quoted words, numbers, ids)
/// left out, so that refusals for the same reason are counted together.
pub fn reason_class(reason: &str) -> String {
    static QUOTED: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r#""[^"]*""#).expect("a valid regex"));
    static IDS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\b[\w.-]*\d[\w.:-]*\b").expect("a valid regex")
    });
    static UNTRACEABLE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\((untraceable|proposed because)[^)]*\)").expect("a valid regex")
    });
    let r = UNTRACEABLE.replace_all(reason, "");
    let r = QUOTED.replace_all(&r, "\u{2026}");
    let r = IDS.replace_all(&r, "N");
    let words: Vec<&str> = r.split_whitespace().collect();
    let mut out = words.join(" ");
    if out.chars().count() > 90 {
        out = out.chars().take(89).collect::<String>() + "\u{2026}";
    }
    out
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
        "\n  {:<10} {:>6} {:>6} {:>5} {:>5} {:>5}  {:>9} {:>9} {:>7}  {:>6}  {:>8} {:>7} {:>9} {:>9}  {:>7}  {:>9}  {:>7}",
        "sample",
        "events",
        "cycles",
        "facts",
        "epis",
        "cards",
        "retention",
        "+episodes",
        "+cards",
        "size",
        "evidence",
        "+cards",
        "precision",
        "clustered",
        "support",
        "traceable",
        "tok/ev"
    );
    let row = |o: &mut String, name: &str, x: &Result1| {
        let f = &x.figures;
        let c = &x.counts;
        let _ = writeln!(
            o,
            "  {:<10} {:>6} {:>6} {:>5} {:>5} {:>5}  {:>9} {:>9} {:>7}  {:>6}  {:>8} {:>7} {:>9} {:>9}  {:>7}  {:>9}  {:>7}",
            name,
            c.events,
            c.cycles,
            c.facts,
            c.episodes,
            c.cards,
            format!("{:.1}%", f.answer_retention * 100.0),
            format!("{:.1}%", f.answer_retention_with_episodes * 100.0),
            format!("{:.1}%", f.answer_retention_with_cards * 100.0),
            format!("{:.2}%", f.memory_size * 100.0),
            format!("{:.1}%", f.evidence_recall_facts_only * 100.0),
            format!("{:.1}%", f.evidence_recall * 100.0),
            format!("{:.1}%", f.evidence_precision * 100.0),
            format!("{:.1}%", f.evidence_clustered * 100.0),
            format!("{:.2}", f.average_support),
            format!("{:.1}%", f.traceability * 100.0),
            format!("{:.0}", f.tokens_per_event),
        );
    };
    for c in &r.conversations {
        row(&mut o, &c.sample_id, &c.result);
    }
    row(&mut o, "overall", &r.overall);
    render_legend(&mut o, r);
    render_precision(&mut o, &r.precision);
    if !r.routes.is_empty() {
        let routes: Vec<String> = r.routes.iter().map(|(k, v)| format!("{v} {k}")).collect();
        let _ = writeln!(o, "\n  candidates: {}", routes.join(", "));
        for (reason, n) in &r.refusals {
            let _ = writeln!(o, "    refused {n:>5}: {reason}");
        }
    }
    for conv in &r.conversations {
        if let Some(repo) = &conv.repo {
            let _ = writeln!(o, "  kept {}: {repo}", conv.sample_id);
        }
    }
    o
}

/// Under the table, what each column measured, with the overall counts behind it.
fn render_legend(o: &mut String, r: &EvalReport) {
    use std::fmt::Write as _;
    let c = &r.overall.counts;
    let f = &r.overall.figures;
    let _ = writeln!(
        o,
        "\n  retention: questions of categories 1, 2, 4 ({}) whose answer's content words are all in one durable fact (+episodes: or one episode; +cards: or one pending card)",
        c.questions
    );
    let _ = writeln!(
        o,
        "  recall: each of those questions asked through `recall` (limit {}): {} returned a line holding the answer (hit@{} {:.1}%), of {} whose answer memory holds at all ({:.1}% found); median {:.2} ms per recall",
        locomo::RECALL_K,
        c.recall_hits,
        locomo::RECALL_K,
        f.recall_hit_at_k * 100.0,
        c.retained_with_episodes,
        f.recall_of_held * 100.0,
        r.recall_median_ms
    );
    let _ = writeln!(
        o,
        "  recall, cited: {} returned a line holding the answer that cites one of the question's evidence turns, of {} whose answer memory holds in such a line ({:.1}% found); deeper, a line holding the answer is in the first 10 for {} ({:.1}% of what memory holds), in the first 20 for {} ({:.1}%)",
        c.recall_hits_cited,
        c.retained_cited,
        f.recall_of_cited * 100.0,
        c.recall_hits_at_10,
        ratio_pct(c.recall_hits_at_10, c.retained_with_episodes),
        c.recall_hits_at_20,
        ratio_pct(c.recall_hits_at_20, c.retained_with_episodes),
    );
    let _ = writeln!(
        o,
        "  size: words in memory (durable facts and episodes) / words in the transcript ({} / {})",
        c.memory_words, c.transcript_words
    );
    let _ = writeln!(
        o,
        "  evidence: evidence turns ({}; {} invalid ids left out) cited by memory (+cards: or a card); precision: cited events that are evidence turns ({} of {}; base rate {:.1}%); support: events cited per fact or episode",
        c.evidence_turns,
        c.evidence_invalid,
        c.cited_evidence,
        c.cited_events,
        f.evidence_base_rate * 100.0
    );
    let _ = writeln!(
        o,
        "  clustered: evidence turns a cycle reflected on in a cluster with another turn (largest cluster: {} turns)",
        c.largest_cluster
    );
    let _ = writeln!(
        o,
        "  traceable: facts and episodes whose content words all appear in the events they cite (must be 100%); tok/ev: model tokens per event ({} tokens in {} calls)",
        c.tokens, c.calls
    );
}

/// Memory beside its anchors, one row each: the precision measures of issue 28.
fn render_precision(o: &mut String, p: &grounded::Precision) {
    use std::fmt::Write as _;
    let pct = |x: f64| format!("{:.1}%", x * 100.0);
    let _ = writeln!(
        o,
        "\n  {:<18} {:>6}  {:>8}  {:>9}  {:>6}  {:>9}  {:>11}  {:>6}",
        "source", "lines", "grounded", "retention", "size", "precision", "cards/cycle", "tok/ev"
    );
    for row in &p.figures {
        let _ = writeln!(
            o,
            "  {:<18} {:>6}  {:>8}  {:>9}  {:>6}  {:>9}  {:>11}  {:>6}",
            row.source,
            row.lines,
            pct(row.grounded_retention),
            pct(row.retention),
            pct(row.size),
            row.precision.map(pct).unwrap_or_else(|| "-".into()),
            row.cards_per_cycle
                .map(|x| format!("{x:.2}"))
                .unwrap_or_else(|| "-".into()),
            row.tokens_per_event
                .map(|x| format!("{x:.0}"))
                .unwrap_or_else(|| "-".into()),
        );
    }
    let c = &p.counts;
    let _ = writeln!(
        o,
        "  grounded: of the {} questions, those whose answer's content words are in one line with a content word of the question that is neither a speaker's name nor the answer's (a date alone answers nothing); retention: the answer's words alone",
        c.questions
    );
    let _ = writeln!(
        o,
        "  every line dated as an episode is (\"8 May 2023, Caroline: ...\"); size: its words over the transcript's ({}); precision: lines citing a turn the authors' observations or a question's evidence cite (observations cite such turns by construction; summaries cite none); cards/cycle: new review cards per cycle ({} in {} cycles)",
        c.transcript_words, c.queued, c.cycles
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_refusals_count_together() {
        assert_eq!(
            reason_class("invented name \"Andrew\" absent from the supporting events"),
            reason_class("invented name \"Audrey\" absent from the supporting events")
        );
        assert_eq!(
            reason_class("coverage 0.412 is below min_coverage 0.5 (untraceable: find, enjoy)"),
            "coverage N is below min_coverage N"
        );
    }
}
