//! `dream context` and the file each cycle writes: read memory and what waits for the
//! person, measure the query against the facts with the configured embedder, and hand
//! everything to the pure `dream_core::context::build`. Read-only: no lock, no git
//! write, no state; safe while a cycle runs (every file dream writes is replaced whole by
//! a rename, so a read sees the old version or the new one).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use chrono::NaiveDate;

use dream_core::config::Config;
use dream_core::context::{self, Context, Request, Waiting};
use dream_core::memory::{self, Memory};

use crate::edges::store::Store;
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
        cards: count(&root.join(memory::REVIEW_DIR), &|p| {
            p.is_file() && p.extension().is_some_and(|e| e == "md")
        })?,
        skill_drafts: count(&root.join(crate::stages::skills::DRAFTS_DIR), &|p| {
            p.join(crate::stages::skills::SKILL_FILE).is_file()
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
        let missing: Vec<&str> = {
            let mut seen = std::collections::HashSet::new();
            memory
                .facts()
                .map(|(_, f)| f.text.as_str())
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
        let live: std::collections::HashSet<&str> =
            memory.facts().map(|(_, f)| f.text.as_str()).collect();
        // Forget texts no fact holds any more, so a long-running server stays small.
        self.by_text.retain(|t, _| live.contains(t.as_str()));
        Ok(memory
            .facts()
            .filter_map(|(_, f)| {
                let v = self.by_text.get(&f.text)?;
                Some((f.id.clone(), cosine(&q, v)))
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
    let memory = Store::open(root)?.load_memory(today)?;
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
    })
}
