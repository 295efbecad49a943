//! `dream context` and the file each cycle writes: read memory and what waits for the
//! person, measure the query against the facts with the configured embedder, and hand
//! everything to the pure `dream_core::recall::context::build`. Read-only: no lock, no git
//! write, no state; safe while a cycle runs (every file dream writes is replaced whole by
//! a rename, so a read sees the old version or the new one).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use chrono::NaiveDate;

use dream_core::recall::context::{self, Context, Request, Waiting};
use dream_core::schema::settings::Config;
use dream_core::schema::{self, Block, BlockFile, Memory};

use crate::edges::store::{Change, Store};
use crate::error::{Context as _, Error, Result};
use crate::providers::embed::Embedder;

/// What `dream context` prints.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Tokens at most; `None`: the config's `context.budget_tokens`.
    pub budget: Option<u64>,
    pub query: Option<String>,
    /// Every fact, no budget.
    pub all: bool,
    /// The session's project (`edges::project::resolve`d): global facts and this project's
    /// are shown, other projects' are not. `None`: global facts only.
    pub project: Option<String>,
    /// Every project's facts (no scope filter).
    pub every_project: bool,
    /// The line saying so, shown under the marker (`dream context` sets it).
    pub scope_line: Option<String>,
}

/// Pending review cards (both kinds) and skill drafts, counted from the file names alone
/// (a busy review queue is megabytes of front matter; the count needs none of it).
pub fn waiting(root: &Path) -> Result<Waiting> {
    let count = |dir: &Path, pred: &dyn Fn(&Path) -> bool| -> Result<usize> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(0);
        };
        let mut n = 0;
        for e in entries {
            let path = e.context(|| format!("listing {}", dir.display()))?.path();
            if pred(&path) {
                n += 1;
            }
        }
        Ok(n)
    };
    Ok(Waiting {
        cards: count(&root.join(schema::REVIEW_DIR), &|p| {
            p.is_file() && p.extension().is_some_and(|e| e == "md")
        })?,
        skill_drafts: count(&root.join(dream_core::skills::DRAFTS_DIR), &|p| {
            p.join(dream_core::skills::SKILL_FILE).is_file()
        })?,
    })
}

/// Vectors of fact texts, kept across calls (the MCP server embeds each text once).
#[derive(Default)]
pub struct VectorCache {
    by_text: HashMap<String, Vec<f32>>,
}

impl VectorCache {
    /// The cosine between `query` and every fact of `memory`, by fact id, embedding only
    /// the texts not cached yet (in batches of `batch`).
    pub fn cosines(
        &mut self,
        embedder: &dyn Embedder,
        memory: &Memory,
        query: &str,
        batch: usize,
    ) -> Result<BTreeMap<String, f64>> {
        // Each fact is embedded by what it says (`context::vector_text`: no episode day,
        // no speaker's name), and cached by that text.
        let said: Vec<(&str, std::borrow::Cow<'_, str>)> = memory
            .facts()
            .map(|(_, f)| {
                (
                    f.id.as_str(),
                    dream_core::recall::context::vector_text(&f.text),
                )
            })
            .collect();
        let missing: Vec<&str> = {
            let mut seen = std::collections::HashSet::new();
            said.iter()
                .map(|(_, t)| t.as_ref())
                .filter(|t| !self.by_text.contains_key(*t) && seen.insert(*t))
                .collect()
        };
        for chunk in missing.chunks(batch.max(1)) {
            let vectors = embedder.embed(chunk)?;
            if vectors.len() != chunk.len() {
                return Err(Error::Other(format!(
                    "the embedder returned {} vectors for {} texts",
                    vectors.len(),
                    chunk.len()
                )));
            }
            for (t, v) in chunk.iter().zip(vectors) {
                self.by_text.insert((*t).to_string(), v);
            }
        }
        let q = embedder
            .embed(&[query])?
            .pop()
            .ok_or_else(|| Error::Other("the embedder returned no vector for the query".into()))?;
        let live: std::collections::HashSet<&str> = said.iter().map(|(_, t)| t.as_ref()).collect();
        // Forget texts no fact holds any more, so a long-running server stays small.
        self.by_text.retain(|t, _| live.contains(t.as_str()));
        Ok(said
            .iter()
            .filter_map(|(id, t)| {
                let v = self.by_text.get(t.as_ref())?;
                Some((id.to_string(), cosine(&q, v)))
            })
            .collect())
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    f64::from(dot)
}

/// The context of the repository at `root`.
pub fn build(
    root: &Path,
    config: &Config,
    embedder: &dyn Embedder,
    today: NaiveDate,
    opts: &Options,
) -> Result<Context> {
    let mut memory = Store::open(root)?.load_memory(today)?;
    if !opts.every_project {
        dream_core::recall::scope::retain(&mut memory, opts.project.as_deref());
    }
    let cosines = match opts.query.as_deref() {
        Some(q) if !q.trim().is_empty() => {
            VectorCache::default().cosines(embedder, &memory, q, config.embed.batch_size)?
        }
        _ => BTreeMap::new(),
    };
    Ok(of_memory(
        &memory,
        config,
        waiting(root)?,
        today,
        opts,
        &cosines,
    ))
}

/// The context of a memory already loaded (the cycle's, as it is about to commit it).
pub fn of_memory(
    memory: &Memory,
    config: &Config,
    waiting: Waiting,
    today: NaiveDate,
    opts: &Options,
    cosines: &BTreeMap<String, f64>,
) -> Context {
    let budget = if opts.all {
        None
    } else {
        Some(opts.budget.unwrap_or(config.context.budget_tokens))
    };
    context::build(&Request {
        memory,
        retention: &config.retention,
        today,
        budget,
        query: opts.query.as_deref().filter(|q| !q.trim().is_empty()),
        cosines,
        waiting,
        scope: opts.scope_line.clone(),
    })
}

/// Pending cards and skill drafts once `writes` (in order: a path, and whether it exists
/// after the write) are applied: what is on disk, plus the files they create, minus those
/// they remove.
pub fn waiting_after<'a>(
    root: &Path,
    writes: impl IntoIterator<Item = (&'a str, bool)>,
) -> Result<Waiting> {
    use dream_core::skills::{DRAFTS_DIR, SKILL_FILE};
    let on_disk = waiting(root)?;
    // The last write to each path decides whether it exists afterwards.
    let mut last: BTreeMap<&str, bool> = BTreeMap::new();
    for (path, exists_after) in writes {
        last.insert(path, exists_after);
    }
    let (mut cards, mut drafts) = (on_disk.cards as i64, on_disk.skill_drafts as i64);
    for (path, exists_after) in last {
        let is_card = path
            .strip_prefix(&format!("{}/", schema::REVIEW_DIR))
            .is_some_and(|rest| !rest.contains('/') && rest.ends_with(".md"));
        let is_draft = path
            .strip_prefix(&format!("{DRAFTS_DIR}/"))
            .is_some_and(|rest| rest.ends_with(&format!("/{SKILL_FILE}")));
        let delta = match (root.join(path).is_file(), exists_after) {
            (false, true) => 1,
            (true, false) => -1,
            _ => 0,
        };
        if is_card {
            cards += delta;
        } else if is_draft {
            drafts += delta;
        }
    }
    Ok(Waiting {
        cards: cards.max(0) as usize,
        skill_drafts: drafts.max(0) as usize,
    })
}

/// The view `context.file` holds: the context of `memory`, ranked as of the last day any
/// of its facts was seen, so the file is a function of memory and the queue alone (a day
/// passing with nothing new changes nothing, and commits nothing).
pub fn file_view(memory: &Memory, config: &Config, waiting: Waiting) -> String {
    let as_of = memory
        .facts()
        .map(|(_, f)| f.last_seen)
        .max()
        .unwrap_or(NaiveDate::MIN);
    of_memory(
        memory,
        config,
        waiting,
        as_of,
        &Options::default(),
        &BTreeMap::new(),
    )
    .render_markdown()
}

/// Add `context.file`, as memory and the queue will be once `change` is applied, to
/// `change` when it differs from the file on disk: review decisions, undos and skill
/// decisions keep the file true in their own commit.
pub fn refresh_file(root: &Path, change: &mut Change) -> Result<()> {
    let Ok(config) = crate::config::load(root) else {
        return Ok(()); // the command itself reports a broken config
    };
    let rel = config.context.file.trim().to_string();
    if rel.is_empty() {
        return Ok(());
    }
    let mut blocks = Vec::new();
    for b in Block::ALL {
        let written = change.writes.iter().rev().find(|(p, _)| *p == b.path());
        let text = match written {
            Some((_, t)) => t.clone(),
            None => std::fs::read_to_string(root.join(b.path())).ok(),
        };
        blocks.push(match text {
            Some(t) => BlockFile::parse(b, &t, NaiveDate::MIN),
            None => BlockFile::empty(b),
        });
    }
    let memory = Memory::new(blocks);
    let waiting = waiting_after(
        root,
        change.writes.iter().map(|(p, c)| (p.as_str(), c.is_some())),
    )?;
    let text = file_view(&memory, &config, waiting);
    if std::fs::read_to_string(root.join(&rel)).ok().as_deref() != Some(text.as_str()) {
        change.write(rel, text);
    }
    Ok(())
}
