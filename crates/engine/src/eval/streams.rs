//! `dream eval streams PATH...`: labelled owner streams replayed the way a timer runs dream,
//! and memory read back as the person would notice it.
//!
//! What a person notices first about a memory is whether the things they told their
//! agent several times are there, once each, and whether the small talk is not. A stream
//! is dream's own inbox format (one event a line) whose every event carries a label in
//! `meta.label`: `F07` for a statement of durable fact 7, `K` a single mention worth
//! keeping, `N` one not worth keeping, `chatter`, `request`, `question`, `paste`, and
//! `agent` for the assistant's lines (`meta.lang` names the language). dream keeps
//! unknown meta keys and decides nothing by them (only `project`, `cwd` and `tool` are
//! read), so the labels ride along into the state without changing a decision.
//!
//! Each stream is replayed in a fresh repository with the default configuration (or the
//! keys of `--config`), its events written to the inbox day by day with one evening cycle
//! per day. Then every durable fact, episode, pending card and card waiting for room in
//! the queue is read back with the events it cites, and mapped to labels through the
//! owner's statements among them (only those establish anything: `turn::owner_statement`).
//! [`measure`] is pure: for each fact stated on several days, whether it is held on
//! exactly one line (and which kind), on none (refused or never proposed, with the
//! reasons the state's candidate records give, as `dream explain` reads them), split over
//! several, or merged with another fact on one line; the lines that hold only chatter,
//! requests, questions or pastes; and the precision of the single mentions kept (K against
//! N) beside the recall of K.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::{DateTime, Duration, NaiveDate, NaiveTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::cycle::{self, Options as CycleOptions};
use crate::edges::fsutil::write_atomic;
use crate::edges::state::{self, State};
use crate::edges::store::Store;
use crate::error::{Context, Error, Result};
use crate::providers;
use dream_core::schema::settings::{Config, CycleKind};
use dream_core::schema::Block;
use dream_core::sources::turn;

/// The labels of what no memory should keep as a line of its own.
pub const NOISE: &[&str] = &["chatter", "request", "question", "paste"];
/// Every label a stream's event may carry besides a fact's (`F` and digits).
pub const LABELS: &[&str] = &["K", "N", "chatter", "request", "question", "paste", "agent"];

/// A label is a fact's when it is `F` followed by digits.
pub fn is_fact(label: &str) -> bool {
    label.len() > 1 && label.starts_with('F') && label[1..].bytes().all(|b| b.is_ascii_digit())
}

/// One event of a stream as dream stores it (a person's message with a paste is several
/// events, each with the message's label).
#[derive(Debug, Clone, PartialEq)]
pub struct Labelled {
    pub id: String,
    pub label: String,
    /// One of the owner's own statements, the only events that support a fact.
    pub statement: bool,
    pub day: NaiveDate,
    /// The id of the person's message it is part of (its own id when the message is one
    /// event).
    pub message: String,
}

/// A stream read from its file: its events by label and its raw lines by day.
#[derive(Debug, Clone)]
pub struct Stream {
    pub name: String,
    pub path: PathBuf,
    /// The language most of its events say in `meta.lang` (`?` when none does).
    pub lang: String,
    pub events: Vec<Labelled>,
    /// Each day's lines as written, with the clock of that day's evening cycle: 21:00, or
    /// a minute after the day's last event when it runs later.
    pub days: Vec<(DateTime<Utc>, Vec<String>)>,
}

/// A stream's first line may say what the stream is (a JSON object with a `stream` key and
/// no `ts`: who wrote it, when, its licence); it is not an event and is never replayed.
pub fn is_header(line: &str) -> bool {
    serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .is_some_and(|o| o.contains_key("stream") && !o.contains_key("ts"))
}

/// Read a stream: every line but a header must be an event dream accepts and carry a known
/// label.
pub fn read_stream(path: &Path, max_bytes: usize) -> Result<Stream> {
    let text = std::fs::read_to_string(path).context(|| format!("reading {}", path.display()))?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "stream".into());
    let mut events = Vec::new();
    let mut langs: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_day: BTreeMap<NaiveDate, (DateTime<Utc>, Vec<String>)> = BTreeMap::new();
    let mut first_line = true;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if std::mem::take(&mut first_line) && is_header(line) {
            continue;
        }
        let at = || format!("{} line {}", path.display(), i + 1);
        let parts = turn::parse_line(line.as_bytes(), max_bytes)
            .map_err(|e| Error::Input(format!("{}: {e}", at())))?;
        let Some(first) = parts.first() else {
            continue;
        };
        let meta = first.event.meta.as_ref();
        let label = meta
            .and_then(|m| m.get("label"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if !is_fact(&label) && !LABELS.contains(&label.as_str()) {
            return Err(Error::Input(format!(
                "{}: `meta.label` must be F and a number (a durable fact's statement) or one of {}, not {label:?}; a stream is labelled event by event",
                at(),
                LABELS.join(", ")
            )));
        }
        if let Some(lang) = meta.and_then(|m| m.get("lang")).and_then(Value::as_str) {
            *langs.entry(lang.to_string()).or_default() += 1;
        }
        let ts = first.event.ts;
        let day = by_day
            .entry(ts.date_naive())
            .or_insert_with(|| (ts, Vec::new()));
        day.0 = day.0.max(ts);
        day.1.push(line.to_string());
        for p in &parts {
            let e = &p.event;
            events.push(Labelled {
                id: e.id.clone(),
                label: label.clone(),
                statement: turn::owner_statement(e.trust, &e.kind, e.recalled),
                day: e.ts.date_naive(),
                message: first.event.id.clone(),
            });
        }
    }
    if events.is_empty() {
        return Err(Error::Input(format!(
            "{} holds no event: a stream is one labelled event a line",
            path.display()
        )));
    }
    let lang = langs
        .iter()
        .max_by_key(|(l, n)| (**n, std::cmp::Reverse((*l).clone())))
        .map(|(l, _)| l.clone())
        .unwrap_or_else(|| "?".into());
    let days = by_day
        .into_iter()
        .map(|(date, (last, lines))| {
            let evening = date
                .and_time(NaiveTime::from_hms_opt(21, 0, 0).expect("a valid time"))
                .and_utc();
            (evening.max(last + Duration::minutes(1)), lines)
        })
        .collect();
    Ok(Stream {
        name,
        path: path.to_path_buf(),
        lang,
        events,
        days,
    })
}

/// A line of memory as the replay left it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemLine {
    /// `persona`, `human`, `scratch` (durable), `episodes`, `card` (pending in
    /// `review/`) or `waiting` (a card waiting for room in the queue).
    pub kind: String,
    pub text: String,
    pub cites: Vec<String>,
}

impl MemLine {
    /// What a person reading memory calls it: a durable fact, an episode or a card.
    pub fn held_as(&self) -> &'static str {
        match self.kind.as_str() {
            "episodes" => "episode",
            "card" | "waiting" => "card",
            _ => "durable",
        }
    }
}

/// A cycle's record of a candidate: its route, its reason, the events it cites.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub route: String,
    pub reason: String,
    pub cites: Vec<String>,
}

/// Figures that add up over streams.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Figures {
    pub streams: usize,
    pub events: usize,
    /// Events that are the owner's own statements.
    pub statements: usize,
    /// Facts stated on two days or more (the ones measured).
    pub facts: usize,
    /// ... held on exactly one line citing no other fact's statement, by what it is.
    pub one_durable: usize,
    pub one_episode: usize,
    pub one_card: usize,
    /// ... of those on one line, the ones whose line cites every statement of it: its
    /// restatements joined.
    pub joined: usize,
    /// ... cited by two lines or more (none of them holding another fact too).
    pub split: usize,
    /// ... on a line that also cites a statement of another fact.
    pub merged: usize,
    /// ... that no line cites: refused or never proposed.
    pub absent: usize,
    /// Facts whose statements all fall on one day (not measured).
    pub one_day_facts: usize,
    /// Lines in memory (facts, episodes, cards, waiting cards).
    pub lines: usize,
    /// Lines whose cited owner statements are all chatter, requests, questions, pastes.
    pub noise_lines: usize,
    /// ... by label (`mixed` when a line cites two of them).
    pub noise_by_label: BTreeMap<String, usize>,
    /// Lines citing no statement of the owner's.
    pub lines_without_owner: usize,
    /// Lines of single mentions: citing a K (and no fact), or only N.
    pub k_lines: usize,
    pub n_lines: usize,
    /// The person's K messages, and those some line cites (a statement of theirs: a K
    /// message read as a paste is a miss).
    pub k_said: usize,
    pub k_cited: usize,
}

impl Figures {
    pub fn add(&mut self, o: &Figures) {
        self.streams += o.streams;
        self.events += o.events;
        self.statements += o.statements;
        self.facts += o.facts;
        self.one_durable += o.one_durable;
        self.one_episode += o.one_episode;
        self.one_card += o.one_card;
        self.joined += o.joined;
        self.split += o.split;
        self.merged += o.merged;
        self.absent += o.absent;
        self.one_day_facts += o.one_day_facts;
        self.lines += o.lines;
        self.noise_lines += o.noise_lines;
        for (k, v) in &o.noise_by_label {
            *self.noise_by_label.entry(k.clone()).or_default() += v;
        }
        self.lines_without_owner += o.lines_without_owner;
        self.k_lines += o.k_lines;
        self.n_lines += o.n_lines;
        self.k_said += o.k_said;
        self.k_cited += o.k_cited;
    }

    /// Facts held on exactly one line, whatever it is.
    pub fn one_line(&self) -> usize {
        self.one_durable + self.one_episode + self.one_card
    }

    /// Of the single mentions' lines, the share that are worth keeping (K).
    pub fn k_precision(&self) -> Option<f64> {
        let n = self.k_lines + self.n_lines;
        (n > 0).then(|| self.k_lines as f64 / n as f64)
    }

    /// Of the K messages, the share some line cites.
    pub fn k_recall(&self) -> Option<f64> {
        (self.k_said > 0).then(|| self.k_cited as f64 / self.k_said as f64)
    }
}

/// Why a candidate citing a fact's statements went where it went, counted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reason {
    pub route: String,
    /// The first such reason in full, as `dream explain` shows it.
    pub reason: String,
    pub count: usize,
}

/// What became of one fact.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FactFate {
    pub label: String,
    pub statements: usize,
    /// Events with its label that dream does not take for the owner's own words (a
    /// message the turn splitter read as a paste, say): they can support nothing.
    pub not_statements: usize,
    pub days: usize,
    /// Its statements some line cites.
    pub cited: usize,
    /// `one`, `split`, `merged`, `absent`, or `one-day` (stated on one day: not measured).
    pub fate: String,
    /// For `one`: `durable`, `episode` or `card`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_as: Option<String>,
    /// The lines citing its statements (indices into the stream's lines).
    pub lines: Vec<usize>,
    /// For `merged`: the other facts on those lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub merged_with: Vec<String>,
    /// For `absent`: every route and reason of the candidates that cited its statements
    /// (none: no candidate was ever proposed from them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<Reason>,
}

/// A line of memory with the labels of the owner's statements it cites.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineRead {
    #[serde(flatten)]
    pub line: MemLine,
    /// Labels of the cited owner statements, counted.
    pub labels: BTreeMap<String, usize>,
    /// `fact`, `merged` (two facts), `K`, `N`, `noise`, or `no owner statement`.
    pub class: String,
}

/// One stream measured.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    pub figures: Figures,
    pub facts: Vec<FactFate>,
    pub lines: Vec<LineRead>,
}

/// Map memory's lines to labels through the owner's statements they cite, and measure
/// what a person notices (see the module docs). Pure.
pub fn measure(events: &[Labelled], lines: &[MemLine], candidates: &[Candidate]) -> Measured {
    let by_id: HashMap<&str, &Labelled> = events.iter().map(|e| (e.id.as_str(), e)).collect();
    let statements: Vec<&Labelled> = events.iter().filter(|e| e.statement).collect();
    let mut f = Figures {
        streams: 1,
        events: events.len(),
        statements: statements.len(),
        lines: lines.len(),
        ..Figures::default()
    };
    // Each line's cited owner statements, by label.
    let read: Vec<LineRead> = lines
        .iter()
        .map(|l| {
            let mut labels: BTreeMap<String, usize> = BTreeMap::new();
            let mut seen = HashSet::new();
            for id in &l.cites {
                if let Some(e) = by_id.get(id.as_str()).filter(|e| e.statement) {
                    if seen.insert(id.as_str()) {
                        *labels.entry(e.label.clone()).or_default() += 1;
                    }
                }
            }
            let facts = labels.keys().filter(|k| is_fact(k)).count();
            let class = if facts > 1 {
                "merged"
            } else if facts == 1 {
                "fact"
            } else if labels.contains_key("K") {
                "K"
            } else if labels.contains_key("N") {
                "N"
            } else if labels.keys().any(|k| NOISE.contains(&k.as_str())) {
                "noise"
            } else {
                "no owner statement"
            };
            LineRead {
                line: l.clone(),
                labels,
                class: class.into(),
            }
        })
        .collect();
    for l in &read {
        match l.class.as_str() {
            "K" => f.k_lines += 1,
            "N" => f.n_lines += 1,
            "no owner statement" => f.lines_without_owner += 1,
            "noise" => {
                f.noise_lines += 1;
                let key = if l.labels.len() == 1 {
                    l.labels.keys().next().cloned().unwrap_or_default()
                } else {
                    "mixed".into()
                };
                *f.noise_by_label.entry(key).or_default() += 1;
            }
            _ => {}
        }
    }
    let cited: HashSet<&str> = lines
        .iter()
        .flat_map(|l| l.cites.iter().map(String::as_str))
        .collect();
    let k = |keep: &dyn Fn(&Labelled) -> bool| {
        events
            .iter()
            .filter(|e| e.label == "K" && keep(e))
            .map(|e| e.message.as_str())
            .collect::<HashSet<_>>()
            .len()
    };
    f.k_said = k(&|_| true);
    f.k_cited = k(&|e| e.statement && cited.contains(e.id.as_str()));

    // Each fact: the days the person said it (however dream read their messages), its
    // statements, the lines citing them, and its fate.
    let mut by_fact: BTreeMap<&str, Vec<&Labelled>> = BTreeMap::new();
    for e in events.iter().filter(|e| is_fact(&e.label)) {
        by_fact.entry(e.label.as_str()).or_default().push(e);
    }
    let mut fates = Vec::new();
    for (label, all) in by_fact {
        let days = all.iter().map(|e| e.day).collect::<BTreeSet<_>>().len();
        let said: Vec<&Labelled> = all.iter().copied().filter(|e| e.statement).collect();
        // A candidate citing any part of its messages is about it, a pasted part too.
        let ids: HashSet<&str> = all.iter().map(|e| e.id.as_str()).collect();
        let holding: Vec<usize> = read
            .iter()
            .enumerate()
            .filter(|(_, l)| l.labels.contains_key(label))
            .map(|(i, _)| i)
            .collect();
        let n_cited = said
            .iter()
            .filter(|e| cited.contains(e.id.as_str()))
            .count();
        let merged_with: Vec<String> = holding
            .iter()
            .flat_map(|&i| read[i].labels.keys())
            .filter(|k| is_fact(k) && k.as_str() != label)
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut held_as = None;
        let mut reasons = Vec::new();
        let fate = if days < 2 {
            f.one_day_facts += 1;
            "one-day"
        } else if holding.is_empty() {
            f.absent += 1;
            reasons = reasons_for(&ids, candidates);
            "absent"
        } else if !merged_with.is_empty() {
            f.merged += 1;
            "merged"
        } else if holding.len() > 1 {
            f.split += 1;
            "split"
        } else {
            let kind = read[holding[0]].line.held_as();
            match kind {
                "durable" => f.one_durable += 1,
                "episode" => f.one_episode += 1,
                _ => f.one_card += 1,
            }
            held_as = Some(kind.to_string());
            if n_cited == said.len() && !said.is_empty() {
                f.joined += 1;
            }
            "one"
        };
        if days >= 2 {
            f.facts += 1;
        }
        fates.push(FactFate {
            label: label.to_string(),
            statements: said.len(),
            not_statements: all.len() - said.len(),
            days,
            cited: n_cited,
            fate: fate.into(),
            held_as,
            lines: holding,
            merged_with,
            reasons,
        });
    }
    Measured {
        figures: f,
        facts: fates,
        lines: read,
    }
}

/// The routes and reasons of the candidates that cite one of `ids`, like ones counted
/// together (`super::reason_class`), the most frequent first.
fn reasons_for(ids: &HashSet<&str>, candidates: &[Candidate]) -> Vec<Reason> {
    let mut out: Vec<(String, Reason)> = Vec::new();
    for c in candidates
        .iter()
        .filter(|c| c.cites.iter().any(|id| ids.contains(id.as_str())))
    {
        let key = format!("{} {}", c.route, super::reason_class(&c.reason));
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, r)) => r.count += 1,
            None => out.push((
                key,
                Reason {
                    route: c.route.clone(),
                    reason: c.reason.clone(),
                    count: 1,
                },
            )),
        }
    }
    let mut out: Vec<Reason> = out.into_iter().map(|(_, r)| r).collect();
    out.sort_by_key(|r| std::cmp::Reverse(r.count));
    out
}

/// One stream replayed and measured.
#[derive(Debug, Clone, Serialize)]
pub struct StreamResult {
    pub name: String,
    pub path: String,
    pub lang: String,
    pub days: usize,
    pub cycles: usize,
    #[serde(flatten)]
    pub measured: Measured,
    /// Where the replay repository was kept, if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StreamsReport {
    pub config: String,
    pub provider: String,
    pub embedder: String,
    pub streams: Vec<StreamResult>,
    /// The streams of each language added up.
    pub languages: BTreeMap<String, Figures>,
    pub overall: Figures,
    pub seconds: f64,
}

/// The `*.jsonl` files the paths name: files as given, folders' files sorted by name.
fn stream_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found = Vec::new();
            for entry in std::fs::read_dir(p).context(|| format!("reading {}", p.display()))? {
                let path = entry.context(|| format!("reading {}", p.display()))?.path();
                if path.is_file() && path.extension().is_some_and(|e| e == "jsonl") {
                    found.push(path);
                }
            }
            if found.is_empty() {
                return Err(Error::Input(format!(
                    "{} holds no stream (*.jsonl)",
                    p.display()
                )));
            }
            found.sort();
            out.extend(found);
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            return Err(Error::Input(format!(
                "{} is neither a stream file (*.jsonl) nor a folder of them",
                p.display()
            )));
        }
    }
    Ok(out)
}

/// Replay every stream under `paths` in its own repository, one evening cycle per day,
/// and measure what memory kept.
pub fn run_streams(paths: &[PathBuf], opts: &super::Options) -> Result<StreamsReport> {
    let started = Instant::now();
    let config_text = super::read_config_text(opts)?;
    let max_bytes = match &config_text {
        Some(t) => {
            Config::parse(t, "--config", &Default::default())?
                .inbox
                .max_event_bytes
        }
        None => Config::default().inbox.max_event_bytes,
    };
    // Every stream is read before any is replayed: one that cannot be read stops the
    // command before it spends minutes on the others.
    let mut streams = Vec::new();
    for p in stream_files(paths)? {
        streams.push(read_stream(&p, max_bytes)?);
    }
    let mut names: HashMap<String, usize> = HashMap::new();
    for s in &mut streams {
        let n = names.entry(s.name.clone()).or_default();
        *n += 1;
        if *n > 1 {
            s.name = format!("{}-{n}", s.name);
        }
    }
    let (_scratch, base) = super::replay_base(opts, "dream-eval-streams-")?;
    let mut provider_name = String::new();
    let mut embedder_name = String::new();
    let mut results = Vec::new();
    for stream in &streams {
        let dir = super::fresh_repo(&base, &stream.name, &config_text)?;
        let config = crate::config::load(&dir)?;
        let provider = providers::llm(&config)?;
        let embedder = providers::embedder(&config)?;
        provider_name = provider.name();
        embedder_name = embedder.id();
        for (now, lines) in &stream.days {
            let name = format!("{}-{}.jsonl", stream.name, now.date_naive());
            let mut text = lines.join("\n");
            text.push('\n');
            write_atomic(&dir.join(&config.inbox.path).join(name), text.as_bytes())?;
            let cycle_opts = CycleOptions {
                kind: CycleKind::Evening,
                dry_run: false,
                allow_loss: false,
                now: *now,
            };
            cycle::run_cycle(
                &dir,
                &config,
                provider.as_ref(),
                embedder.as_ref(),
                &cycle_opts,
            )?;
        }
        let today = stream
            .days
            .last()
            .map(|(t, _)| t.date_naive())
            .unwrap_or_default();
        let (lines, candidates) = read_back(&dir, today)?;
        results.push(StreamResult {
            name: stream.name.clone(),
            path: stream.path.display().to_string(),
            lang: stream.lang.clone(),
            days: stream.days.len(),
            cycles: stream.days.len(),
            measured: measure(&stream.events, &lines, &candidates),
            repo: opts.keep.as_ref().map(|_| dir.display().to_string()),
        });
    }
    let mut languages: BTreeMap<String, Figures> = BTreeMap::new();
    let mut overall = Figures::default();
    for r in &results {
        languages
            .entry(r.lang.clone())
            .or_default()
            .add(&r.measured.figures);
        overall.add(&r.measured.figures);
    }
    Ok(StreamsReport {
        config: opts
            .config
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "defaults".into()),
        provider: provider_name,
        embedder: embedder_name,
        streams: results,
        languages,
        overall,
        seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    })
}

/// Memory's lines (durable facts, episodes, pending cards, waiting cards) and every
/// cycle's candidate records, read back from a replay repository.
fn read_back(dir: &Path, today: NaiveDate) -> Result<(Vec<MemLine>, Vec<Candidate>)> {
    let store = Store::open(dir)?;
    let memory = store.load_memory(today)?;
    let mut lines: Vec<MemLine> = memory
        .facts()
        .map(|(b, f)| MemLine {
            kind: b.as_str().into(),
            text: f.text.clone(),
            cites: f.support.clone(),
        })
        .collect();
    // Durable blocks first, then episodes, as a person reads memory.
    lines.sort_by_key(|l| l.kind == Block::Episodes.as_str());
    let (pending, _) = store.pending_cards()?;
    lines.extend(pending.into_iter().map(|c| MemLine {
        kind: "card".into(),
        text: c.text,
        cites: c.supporting_event_ids,
    }));
    let mut candidates = Vec::new();
    if let Some(st) = State::open_read_only(dir)? {
        lines.extend(state::waiting(&st.conn)?.0.into_iter().map(|c| MemLine {
            kind: "waiting".into(),
            text: c.text,
            cites: c.supporting_event_ids,
        }));
        for (id, cycle, route, record) in state::all_candidates(&st.conn)? {
            // The record as `dream explain` reads it.
            let info = crate::human::trail::candidate_info(&id, &cycle, &route, &record);
            candidates.push(Candidate {
                route: info.route,
                reason: info.reason,
                cites: info.supporting_event_ids,
            });
        }
    }
    Ok((lines, candidates))
}

fn pct(x: Option<f64>) -> String {
    x.map(|x| format!("{:.1}%", x * 100.0))
        .unwrap_or_else(|| "-".into())
}

/// The table a person scans: one row per stream, per language and overall, then per
/// stream every fact not held on exactly one line (with the refusals' reasons) and every
/// line of chatter, requests, questions or pastes memory kept.
pub fn render(r: &StreamsReport) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "dream eval streams: {} streams ({} config, provider {}, embedder {}, {:.1} s)",
        r.streams.len(),
        r.config,
        r.provider,
        r.embedder,
        r.seconds
    );
    let header = |o: &mut String, first: &str| {
        let _ = writeln!(
            o,
            "\n  {:<14} {:>4} {:>6} {:>5}  {:>7} {:>7} {:>4} {:>6}  {:>5} {:>6} {:>6}  {:>5}  {:>5} {:>5} {:>7} {:>8}",
            first,
            "lang",
            "events",
            "facts",
            "durable",
            "episode",
            "card",
            "joined",
            "split",
            "merged",
            "absent",
            "noise",
            "K",
            "N",
            "K prec",
            "K recall"
        );
    };
    let row = |o: &mut String, name: &str, lang: &str, f: &Figures| {
        let _ = writeln!(
            o,
            "  {:<14} {:>4} {:>6} {:>5}  {:>7} {:>7} {:>4} {:>6}  {:>5} {:>6} {:>6}  {:>5}  {:>5} {:>5} {:>7} {:>8}",
            name,
            lang,
            f.events,
            f.facts,
            f.one_durable,
            f.one_episode,
            f.one_card,
            f.joined,
            f.split,
            f.merged,
            f.absent,
            f.noise_lines,
            f.k_lines,
            f.n_lines,
            pct(f.k_precision()),
            format!("{}/{}", f.k_cited, f.k_said),
        );
    };
    header(&mut o, "stream");
    for s in &r.streams {
        row(&mut o, &s.name, &s.lang, &s.measured.figures);
    }
    if r.streams.len() > 1 {
        header(&mut o, "language");
        for (lang, f) in &r.languages {
            row(&mut o, &format!("{} ({})", lang, f.streams), lang, f);
        }
        row(&mut o, "overall", "", &r.overall);
    }
    let f = &r.overall;
    let _ = writeln!(
        o,
        "\n  facts: stated on two days or more ({} more stated on one day are not counted); durable, episode, card: held on exactly one line of that kind (a card pending or waiting) citing no other fact; joined: of those, the line cites every statement of the fact; split: on two lines or more; merged: on a line that also cites another fact's statement; absent: no line cites any of its statements (refused, or never proposed)",
        f.one_day_facts
    );
    let _ = writeln!(
        o,
        "  noise: lines whose cited owner statements are all chatter, requests, questions or pastes ({}); K, N: lines of single mentions worth keeping (a K cited, no fact) and not (only N); K prec: K of those; K recall: the person's K messages some line cites",
        if f.noise_by_label.is_empty() {
            "none".to_string()
        } else {
            f.noise_by_label
                .iter()
                .map(|(k, v)| format!("{v} {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    if f.lines_without_owner > 0 {
        let _ = writeln!(
            o,
            "  {} lines cite no statement of the owner's",
            f.lines_without_owner
        );
    }
    for s in &r.streams {
        let m = &s.measured;
        let _ = writeln!(
            o,
            "\n  {} ({}, {} days, {} lines in memory):",
            s.name, s.lang, s.days, m.figures.lines
        );
        for fate in m.facts.iter().filter(|x| x.fate != "one") {
            let lines: Vec<String> = fate
                .lines
                .iter()
                .map(|&i| {
                    let l = &m.lines[i];
                    format!("[{}] {}", l.line.kind, l.line.text)
                })
                .collect();
            let _ = writeln!(
                o,
                "    {} {} ({} statements on {} days, {} cited{}){}",
                fate.label,
                fate.fate,
                fate.statements,
                fate.days,
                fate.cited,
                if fate.not_statements > 0 {
                    format!(
                        "; {} more not read as the owner's words",
                        fate.not_statements
                    )
                } else {
                    String::new()
                },
                if fate.merged_with.is_empty() {
                    String::new()
                } else {
                    format!(" with {}", fate.merged_with.join(", "))
                }
            );
            for l in lines {
                let _ = writeln!(o, "      {l}");
            }
            if fate.fate == "absent" && fate.reasons.is_empty() {
                let _ = writeln!(o, "      never proposed: no candidate cited its statements");
            }
            for reason in &fate.reasons {
                let _ = writeln!(
                    o,
                    "      {} x{}: {}",
                    reason.route, reason.count, reason.reason
                );
            }
        }
        for l in m.lines.iter().filter(|l| l.class == "noise") {
            let labels: Vec<&str> = l.labels.keys().map(String::as_str).collect();
            let _ = writeln!(
                o,
                "    kept {}: [{}] {}",
                labels.join("+"),
                l.line.kind,
                l.line.text
            );
        }
        if let Some(repo) = &s.repo {
            let _ = writeln!(o, "    kept in {repo}");
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(id: &str, label: &str, day: u32) -> Labelled {
        Labelled {
            id: id.into(),
            label: label.into(),
            statement: label != "agent",
            day: NaiveDate::from_ymd_opt(2026, 3, day).unwrap(),
            message: id.into(),
        }
    }

    fn line(kind: &str, cites: &[&str]) -> MemLine {
        MemLine {
            kind: kind.into(),
            text: format!("a line citing {}", cites.join(" ")),
            cites: cites.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn each_fact_gets_one_fate_and_the_figures_add_up() {
        let events = vec![
            // F01 on one durable line; F02 split over an episode and a card; F03 and F04
            // joined on one line; F05 on no line; F06 said on one day only.
            ev("a1", "F01", 2),
            ev("a2", "F01", 3),
            ev("a3", "F01", 4),
            ev("b1", "F02", 2),
            ev("b2", "F02", 5),
            ev("c1", "F03", 2),
            ev("c2", "F03", 3),
            ev("d1", "F04", 3),
            ev("d2", "F04", 4),
            ev("e1", "F05", 2),
            ev("e2", "F05", 6),
            ev("g1", "F06", 2),
            ev("g2", "F06", 2),
            ev("h", "chatter", 2),
            ev("i", "request", 3),
            ev("k1", "K", 3),
            ev("k2", "K", 4),
            ev("n1", "N", 4),
            ev("x", "agent", 4),
            // F07's messages were both read as pastes: no statement, still a fact said
            // on two days that memory does not hold.
            Labelled {
                statement: false,
                ..ev("p1", "F07", 2)
            },
            Labelled {
                statement: false,
                ..ev("p2", "F07", 3)
            },
        ];
        let lines = vec![
            line("human", &["a1", "a2", "a3", "x"]),
            line("episodes", &["b1"]),
            line("waiting", &["b2"]),
            line("scratch", &["c1", "c2", "d1"]),
            line("episodes", &["h", "i"]),
            line("episodes", &["h"]),
            line("episodes", &["k1", "h"]),
            line("episodes", &["n1"]),
            line("card", &["x"]),
        ];
        let candidates = vec![
            Candidate {
                route: "refused".into(),
                reason: "salience 0.21 is below keep 0.46".into(),
                cites: vec!["e1".into()],
            },
            Candidate {
                route: "refused".into(),
                reason: "salience 0.30 is below keep 0.46".into(),
                cites: vec!["e2".into(), "h".into()],
            },
            Candidate {
                route: "episode".into(),
                reason: "said once".into(),
                cites: vec!["b1".into()],
            },
        ];
        let m = measure(&events, &lines, &candidates);
        let f = &m.figures;
        assert_eq!(f.facts, 6, "F06 was said on one day: {f:?}");
        assert_eq!(f.one_day_facts, 1);
        assert_eq!(
            (f.one_durable, f.one_episode, f.one_card),
            (1, 0, 0),
            "{f:?}"
        );
        assert_eq!((f.split, f.merged, f.absent), (1, 2, 2), "{f:?}");
        let f07 = m.facts.iter().find(|x| x.label == "F07").unwrap();
        assert_eq!(
            (f07.fate.as_str(), f07.statements, f07.not_statements),
            ("absent", 0, 2)
        );
        let fate = |l: &str| m.facts.iter().find(|x| x.label == l).unwrap();
        assert_eq!(fate("F01").held_as.as_deref(), Some("durable"));
        assert_eq!(fate("F01").cited, 3);
        assert_eq!(f.joined, 1, "F01's line cites its three statements");
        assert_eq!(fate("F02").fate, "split");
        assert_eq!(fate("F03").merged_with, vec!["F04"]);
        assert_eq!(fate("F04").merged_with, vec!["F03"]);
        let absent = fate("F05");
        assert_eq!(absent.fate, "absent");
        // Both salience refusals are one reason, counted twice; the episode of F02 is
        // not F05's.
        assert_eq!(absent.reasons.len(), 1, "{:?}", absent.reasons);
        assert_eq!(absent.reasons[0].count, 2);
        assert_eq!(absent.reasons[0].route, "refused");
        assert_eq!(fate("F06").fate, "one-day");
        // Noise: the chatter+request line and the chatter line; the K line with chatter
        // is a K line.
        assert_eq!(f.noise_lines, 2);
        assert_eq!(f.noise_by_label.get("mixed"), Some(&1));
        assert_eq!(f.noise_by_label.get("chatter"), Some(&1));
        assert_eq!((f.k_lines, f.n_lines), (1, 1));
        assert_eq!((f.k_said, f.k_cited), (2, 1));
        assert_eq!(f.k_precision(), Some(0.5));
        assert_eq!(f.k_recall(), Some(0.5));
        // The card citing only the agent's line holds no statement of the owner's.
        assert_eq!(f.lines_without_owner, 1);
        assert_eq!(f.lines, 9);
        let mut sum = Figures::default();
        sum.add(f);
        sum.add(f);
        assert_eq!(sum.absent, 4);
        assert_eq!(sum.noise_by_label.get("chatter"), Some(&2));
        assert_eq!(sum.one_line(), 2);
    }

    #[test]
    fn a_pasted_part_is_not_a_statement_and_labels_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("en-x.jsonl");
        let lines = [
            r#"{"stream":"en-x","written":"by hand"}"#,
            r#"{"ts":"2026-03-02T09:00:00Z","kind":"message","text":"getting this:\n```\nTraceback (most recent call last):\n  File \"a.py\", line 1\nValueError: bad\n```","session":"s1","actor":"user","trust":"owner","meta":{"label":"paste","lang":"en"}}"#,
            r#"{"ts":"2026-03-03T10:00:00Z","kind":"message","text":"we deploy with nomad","session":"s2","actor":"user","trust":"owner","meta":{"label":"F01","lang":"en"}}"#,
            r#"{"ts":"2026-03-03T22:30:00Z","kind":"message","text":"ok","session":"s2","actor":"assistant","trust":"agent","meta":{"label":"agent","lang":"en"}}"#,
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let s = read_stream(&path, 1 << 20).unwrap();
        assert_eq!(s.name, "en-x");
        assert_eq!(s.lang, "en");
        let paste: Vec<&Labelled> = s.events.iter().filter(|e| e.label == "paste").collect();
        assert_eq!(paste.len(), 2, "the prose and the paste: {paste:?}");
        assert_eq!(paste.iter().filter(|e| e.statement).count(), 1);
        assert!(
            !s.events
                .iter()
                .find(|e| e.label == "agent")
                .unwrap()
                .statement
        );
        // One evening per day, later than a late event.
        assert_eq!(s.days.len(), 2);
        assert_eq!(s.days[0].0.to_rfc3339(), "2026-03-02T21:00:00+00:00");
        assert_eq!(s.days[1].0.to_rfc3339(), "2026-03-03T22:31:00+00:00");
        assert_eq!(s.days[1].1.len(), 2);

        std::fs::write(
            &path,
            r#"{"ts":"2026-03-02T09:00:00Z","kind":"message","text":"hi","meta":{"label":"F"}}"#,
        )
        .unwrap();
        let e = read_stream(&path, 1 << 20).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("meta.label"), "{e}");
        std::fs::write(&path, "{\"ts\": 1}\n").unwrap();
        let e = read_stream(&path, 1 << 20).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("`ts`"), "{e}");
        assert!(is_fact("F07") && !is_fact("F") && !is_fact("Fx") && !is_fact("K"));
    }
}
