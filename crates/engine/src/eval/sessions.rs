//! `dream eval sessions`: real agent transcripts replayed the way a user's timer would
//! run dream over them, and every line memory kept read back against what the person
//! wrote.
//!
//! Claude Code session files and Codex rollout files are the inputs a user's
//! `[[inbox.sources]]` point at. Each file is played forward day by day: the lines written
//! by a day's evening are appended to a copy in the replay repository's source folders,
//! and one evening cycle runs at that clock, so the incremental reads, the watermarks and
//! the window are the ones a user gets. Afterwards every durable fact, episode and
//! pending card is measured: which kinds of event it cites, whether the owner's
//! statements among them establish it, and whether its text is a verbatim span of one of
//! them (what the offline path must write). The command exits 1 when a fact or episode
//! is not a verbatim span, or rests on no statement of the owner's.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;

use crate::cycle::{self, Options as CycleOptions};
use crate::edges::fsutil::write_atomic;
use crate::edges::state::{self, State};
use crate::edges::store::Store;
use crate::error::{Context, Error, Result};
use crate::providers;
use dream_core::schema::settings::{Config, CycleKind};
use dream_core::schema::{is_verbatim, Block};
use dream_core::sources::adapters::Format;

/// One line of memory as the replay left it.
#[derive(Debug, Clone, Serialize)]
pub struct Line {
    /// `persona`, `human`, `scratch`, `episodes`, or `card`.
    pub block: String,
    pub text: String,
    /// The cited events by kind (`message`, `paste`, `tool_result`, ...), counted.
    pub cited: BTreeMap<String, usize>,
    /// Cited statements of the owner's.
    pub owner_statements: usize,
    /// A verbatim span of one of those statements.
    pub verbatim: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionsReport {
    pub files: Vec<String>,
    pub days: usize,
    pub cycles: usize,
    /// Stored events by kind.
    pub events: BTreeMap<String, usize>,
    pub facts: Vec<Line>,
    pub episodes: Vec<Line>,
    pub cards: Vec<Line>,
    /// Facts and episodes that are not a verbatim span of an owner's statement they cite.
    pub not_verbatim: usize,
    /// Facts and episodes that cite no statement of the owner's.
    pub without_owner: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
}

/// The transcript formats a replay feeds, in the order its `[[inbox.sources]]` name them:
/// the harnesses whose sessions `dream hooks install` points a user's cycle at.
const REPLAYED: [Format; 2] = [Format::ClaudeCode, Format::Codex];

/// What says a line is of a replayed format, tried in this order on each line: a Codex
/// rollout puts each record under `payload` (or opens with a bare `record_type` header);
/// Claude Code lines carry `sessionId` or `uuid`.
const SIGNS: [(Format, &[&str]); 2] = [
    (Format::Codex, &["payload", "record_type"]),
    (Format::ClaudeCode, &["sessionId", "uuid"]),
];

/// Every file under the paths that a replayed format reads (`Descriptor::reads`), with
/// the format its first lines say.
fn transcripts(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Format)>> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = walk(p, p)?;
            found.sort();
            files.extend(found);
        } else if p.is_file() {
            files.push(p.clone());
        } else {
            return Err(Error::Input(format!(
                "{} is neither a transcript file nor a folder of them",
                p.display()
            )));
        }
    }
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).context(|| format!("reading {}", f.display()))?;
        if let Some(format) = format_of(&text) {
            out.push((f, format));
        }
    }
    if out.is_empty() {
        return Err(Error::Input(
            "no Claude Code or Codex transcript (*.jsonl) found under the paths given".into(),
        ));
    }
    Ok(out)
}

/// The files under `dir` (a folder under `root`, the folder given) that a replayed format
/// reads, as its descriptor says.
fn walk(root: &Path, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).context(|| format!("reading {}", dir.display()))? {
        let path = entry
            .context(|| format!("reading {}", dir.display()))?
            .path();
        if path.is_dir() {
            out.extend(walk(root, &path)?);
        } else {
            let rel = path.strip_prefix(root).unwrap_or(&path);
            if REPLAYED.iter().any(|f| f.reads(rel)) {
                out.push(path);
            }
        }
    }
    Ok(out)
}

/// The replayed format the first lines of a transcript say ([`SIGNS`]).
fn format_of(text: &str) -> Option<Format> {
    for line in text.lines().take(20) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        for (format, keys) in SIGNS {
            if keys.iter().any(|k| v.get(k).is_some()) {
                return Some(format);
            }
        }
    }
    None
}

/// Each line of a transcript with the UTC day it was written (a line without a
/// timestamp takes the one before it).
fn dated_lines(text: &str) -> Vec<(Option<NaiveDate>, &str)> {
    let mut last = None;
    text.lines()
        .map(|line| {
            let ts = serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| {
                    v.get("timestamp")
                        .and_then(|t| t.as_str())
                        .map(String::from)
                })
                .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
                .map(|t| t.with_timezone(&Utc).date_naive());
            if ts.is_some() {
                last = ts;
            }
            (last, line)
        })
        .collect()
}

/// Replay the transcripts under `paths` into a fresh repository, one evening cycle per
/// day, and measure what memory kept.
pub fn run_sessions(paths: &[PathBuf], opts: &super::Options) -> Result<SessionsReport> {
    let files = transcripts(paths)?;
    let scratch = tempfile::Builder::new()
        .prefix("dream-eval-sessions-")
        .tempdir()
        .context(|| "creating a temporary folder".into())?;
    let dir = match &opts.keep {
        Some(d) => {
            if d.exists() {
                std::fs::remove_dir_all(d).context(|| format!("removing {}", d.display()))?;
            }
            d.clone()
        }
        None => scratch.path().join("repo"),
    };
    let feeds = scratch.path().join("feeds");
    replay_repo(&dir, &feeds, opts)?;
    let (days, cycles) = replay(&dir, &feeds, &files)?;
    let today = days.last().copied().unwrap_or_default();
    let Kept {
        events,
        facts,
        episodes,
        cards,
    } = read_back(&dir, today)?;
    let kept = facts.iter().chain(&episodes);
    let not_verbatim = kept.clone().filter(|l| !l.verbatim).count();
    let without_owner = kept.filter(|l| l.owner_statements == 0).count();
    Ok(SessionsReport {
        files: files.iter().map(|(f, _)| f.display().to_string()).collect(),
        days: days.len(),
        cycles,
        events,
        facts,
        episodes,
        cards,
        not_verbatim,
        without_owner,
        repo: opts.keep.as_ref().map(|d| d.display().to_string()),
    })
}

/// The replay repository at `dir`: created, with `opts.config`'s keys when given, and the
/// sources a user's `dream hooks install` would add, pointing at the replay's growing
/// copies under `feeds`.
fn replay_repo(dir: &Path, feeds: &Path, opts: &super::Options) -> Result<()> {
    crate::edges::repo::create(dir)?;
    if let Some(p) = &opts.config {
        let t = std::fs::read_to_string(p).context(|| format!("reading {}", p.display()))?;
        Config::parse(&t, &p.display().to_string(), &Default::default())?;
        write_atomic(&dir.join(dream_core::schema::settings::FILE), t.as_bytes())?;
    }
    let mut toml = std::fs::read_to_string(dir.join(dream_core::schema::settings::FILE))
        .context(|| "reading dream.toml".into())?;
    for format in REPLAYED {
        let name = format.descriptor().name;
        let folder = feeds.join(name);
        std::fs::create_dir_all(&folder).context(|| format!("creating {}", folder.display()))?;
        toml.push_str(&format!(
            "\n[[inbox.sources]]\nformat = \"{}\"\npath = {:?}\n",
            name,
            folder.display().to_string()
        ));
    }
    write_atomic(
        &dir.join(dream_core::schema::settings::FILE),
        toml.as_bytes(),
    )
}

/// Play `files` forward day by day into their copies under `feeds`, one evening cycle at
/// 23:00 of each day; returns the days and the cycles run.
fn replay(
    dir: &Path,
    feeds: &Path,
    files: &[(PathBuf, Format)],
) -> Result<(BTreeSet<NaiveDate>, usize)> {
    let config = crate::config::load(dir)?;
    let provider = providers::llm(&config)?;
    let embedder = providers::embedder(&config)?;

    let texts: Vec<String> = files
        .iter()
        .map(|(f, _)| std::fs::read_to_string(f).context(|| format!("reading {}", f.display())))
        .collect::<Result<_>>()?;
    let dated: Vec<Vec<(Option<NaiveDate>, &str)>> = texts.iter().map(|t| dated_lines(t)).collect();
    let days: BTreeSet<NaiveDate> = dated.iter().flatten().filter_map(|(d, _)| *d).collect();
    let mut written = vec![0usize; files.len()];
    let mut cycles = 0;
    for day in &days {
        for (i, (f, format)) in files.iter().enumerate() {
            let name = format!(
                "{i:03}-{}",
                f.file_name().unwrap_or_default().to_string_lossy()
            );
            let target = feeds.join(format.descriptor().name).join(name);
            let upto = dated[i]
                .iter()
                .take_while(|(d, _)| d.is_none_or(|d| d <= *day))
                .count();
            if upto > written[i] {
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&target)
                    .context(|| format!("writing {}", target.display()))?;
                for (_, line) in &dated[i][written[i]..upto] {
                    writeln!(file, "{line}").context(|| format!("writing {}", target.display()))?;
                }
                written[i] = upto;
            }
        }
        let now = day.and_hms_opt(23, 0, 0).expect("a valid time").and_utc();
        let cycle_opts = CycleOptions {
            kind: CycleKind::Evening,
            dry_run: false,
            allow_loss: false,
            now,
        };
        cycle::run_cycle(
            dir,
            &config,
            provider.as_ref(),
            embedder.as_ref(),
            &cycle_opts,
        )?;
        cycles += 1;
    }
    Ok((days, cycles))
}

/// What a replay left in its repository.
struct Kept {
    /// Stored events by kind.
    events: BTreeMap<String, usize>,
    facts: Vec<Line>,
    episodes: Vec<Line>,
    cards: Vec<Line>,
}

/// What the replay left, read back on `today`: stored events by kind, and every durable
/// fact, episode and pending card measured against the events it cites.
fn read_back(dir: &Path, today: NaiveDate) -> Result<Kept> {
    let store = Store::open(dir)?;
    let memory = store.load_memory(today)?;
    let (cards, _) = store.pending_cards()?;
    let st = State::open(dir)?;
    let events = state::events_by_kind(&st.conn)?;
    let measure = |block: &str, text: &str, ids: &[String]| -> Result<Line> {
        let cited = state::events_by_ids(&st.conn, ids)?;
        let mut kinds = BTreeMap::new();
        let mut owners: Vec<&str> = Vec::new();
        let mut speaker = None;
        for s in &cited {
            let e = &s.event;
            *kinds.entry(e.kind.clone()).or_insert(0) += 1;
            if dream_core::sources::turn::owner_statement(e.trust, &e.kind, e.recalled) {
                owners.push(e.text.as_str());
                speaker = speaker.or(e.actor.clone());
            }
        }
        Ok(Line {
            block: block.to_string(),
            text: text.to_string(),
            cited: kinds,
            owner_statements: owners.len(),
            verbatim: is_verbatim(text, speaker.as_deref(), &owners),
        })
    };
    let mut facts = Vec::new();
    let mut episodes = Vec::new();
    for (b, f) in memory.facts() {
        let line = measure(b.as_str(), &f.text, &f.support)?;
        if b == Block::Episodes {
            episodes.push(line);
        } else {
            facts.push(line);
        }
    }
    let mut card_lines = Vec::new();
    for c in &cards {
        card_lines.push(measure("card", &c.text, &c.supporting_event_ids)?);
    }
    Ok(Kept {
        events,
        facts,
        episodes,
        cards: card_lines,
    })
}

/// The report as a person reads it: what was stored, then every line memory holds with
/// what it cites.
pub fn render(r: &SessionsReport) -> String {
    let mut out = format!(
        "{} transcripts, {} days, {} evening cycles\nevents stored: {}\n",
        r.files.len(),
        r.days,
        r.cycles,
        r.events
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    out.push_str(&format!(
        "memory: {} durable facts, {} episodes, {} pending cards; {} not verbatim, {} without an owner's statement\n",
        r.facts.len(),
        r.episodes.len(),
        r.cards.len(),
        r.not_verbatim,
        r.without_owner
    ));
    for l in r.facts.iter().chain(&r.episodes).chain(&r.cards) {
        let cited = l
            .cited
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ");
        out.push_str(&format!(
            "  [{}] {}{}  (cites {cited})\n",
            l.block,
            l.text,
            if l.verbatim || l.block == "card" {
                ""
            } else {
                "  NOT VERBATIM"
            }
        ));
    }
    out
}
