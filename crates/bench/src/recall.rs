//! `dream-bench recall`: how fast `recall` answers, and how often its top results hold what
//! was asked, over a memory of a given size.
//!
//! The read path is what an agent waits on mid-session (`dream mcp`'s recall tool) and what
//! every cycle's quiz asks, so its latency is a target of its own (median under 10 ms at
//! 1,000 facts). Memory here is the first `facts` distinct owner sentences of the test
//! kit's synthetic workload (40 themes said again and again in other words, so many facts
//! share their words: a hard case for ranking), written as durable facts; each question is
//! a quiz cloze of every `facts / questions`-th fact, asked through
//! `dream_core::recall::context::recall` with the configured embedder, its fact vectors cached as
//! the MCP server caches them (the first recall, which embeds every fact, is timed apart).

use std::time::Instant;

use chrono::NaiveDate;
use serde::Serialize;

use dream_core::recall::quiz::{self, Expect};
use dream_core::schema::settings::Config;
use dream_core::schema::{Block, BlockFile, Memory};
use dream_engine::agents::context::VectorCache;
use dream_engine::error::Result;

/// What one run measured.
#[derive(Debug, Serialize)]
pub struct RecallReport {
    pub facts: usize,
    pub questions: usize,
    pub embedder: String,
    /// The first recall: every fact embedded, then ranked.
    pub first_ms: f64,
    pub median_ms: f64,
    pub p90_ms: f64,
    /// Questions whose fact's hidden answer was in one of the first 5 lines recall returned.
    pub hit_at_5: f64,
}

/// Build a memory of `facts` facts and ask `questions` cloze questions of it.
pub fn measure_recall(
    config: &Config,
    facts: usize,
    questions: usize,
    seed: u64,
) -> Result<RecallReport> {
    let workload = crate::bench::token_workload_of(seed, 7, facts * 8 + 100);
    let mut seen = std::collections::HashSet::new();
    let texts: Vec<String> = workload
        .events
        .iter()
        .filter(|e| e.actor.as_deref() == Some("user"))
        .map(|e| dream_core::schema::one_line(&e.text))
        .filter(|t| t.len() > 12 && quiz::cloze(t).is_some() && seen.insert(t.to_lowercase()))
        .take(facts)
        .collect();
    let day = NaiveDate::from_ymd_opt(2026, 11, 6).expect("a valid day");
    let mut lines = String::from("# human\n\n");
    for (i, t) in texts.iter().enumerate() {
        lines.push_str(&format!(
            "- {t} <!-- id=f_{i:08x} cat=knowledge by=auto first={day} last={day} ev=e_{i} -->\n"
        ));
    }
    let mut blocks = vec![BlockFile::parse(Block::Human, &lines, day)];
    for b in Block::ALL {
        if b != Block::Human {
            blocks.push(BlockFile::empty(b));
        }
    }
    let memory = Memory::new(blocks);
    let embedder = dream_engine::providers::embedder(config)?;
    let mut cache = VectorCache::default();
    let step = (texts.len() / questions.max(1)).max(1);
    let mut times = Vec::new();
    let mut hits = 0;
    let mut first_ms = 0.0;
    let asked: Vec<quiz::Question> = memory
        .facts()
        .step_by(step)
        .take(questions)
        .filter_map(|(b, f)| quiz::question(f, b, Expect::Recalled, "bench", ""))
        .collect();
    for (n, q) in asked.iter().enumerate() {
        let query = q.query();
        let t = Instant::now();
        let cosines = cache.cosines(embedder.as_ref(), &memory, &query, config.embed.batch_size)?;
        let found = dream_core::recall::context::recall(
            &memory,
            &config.retention,
            day,
            &query,
            &cosines,
            5,
        );
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        if n == 0 {
            first_ms = ms;
        } else {
            times.push(ms);
        }
        let lines: Vec<&str> = found.iter().map(|h| h.text.as_str()).collect();
        if quiz::judge(q, &lines).0.is_some() {
            hits += 1;
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |p: f64| {
        if times.is_empty() {
            0.0
        } else {
            times[((times.len() - 1) as f64 * p).round() as usize]
        }
    };
    let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
    Ok(RecallReport {
        facts: texts.len(),
        questions: asked.len(),
        embedder: embedder.id(),
        first_ms: r3(first_ms),
        median_ms: r3(at(0.5)),
        p90_ms: r3(at(0.9)),
        hit_at_5: r3(hits as f64 / asked.len().max(1) as f64),
    })
}
