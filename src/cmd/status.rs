//! `dream status`: what is waiting, at a glance, and the heartbeat's warnings (with
//! `--check`, exit code 10 when there is any).

use serde::Serialize;

use crate::cli::{Global, StatusArgs};
use dream_core::operations::heartbeat::Warning;
use dream_core::sources::ingested::Quarantined;
use dream_engine::edges::inbox;
use dream_engine::edges::inbox::file_key;
use dream_engine::edges::state::{self, State};
use dream_engine::edges::store::Store;
use dream_engine::error::{Result, EXIT_OK, EXIT_WARNING};

#[derive(Debug, Serialize)]
struct Status {
    repo: String,
    /// The cycle (or other writer) holding the lock now: its pid, since when, and stage.
    #[serde(skip_serializing_if = "Option::is_none")]
    running: Option<dream_engine::edges::lock::Running>,
    events_stored: u64,
    /// Stored events no cycle has reflected on yet.
    events_unreflected: u64,
    /// Inbox bytes not yet read by a cycle, per file with any.
    inbox_lag: Vec<Lag>,
    inbox_lag_bytes: u64,
    review_queue: usize,
    /// Skill drafts and proposals awaiting a decision (`dream skills list`).
    skills_awaiting: usize,
    quarantined: u64,
    recent_quarantine: Vec<Quarantined>,
    active_facts: usize,
    /// Of them, in memory/episodes.md.
    episodes: usize,
    /// The configured embedder's id (vectors are cached under it).
    embedder: String,
    /// Vectors the cache holds, per embedder id.
    vector_cache: Vec<CacheLine>,
    last_cycles: Vec<CycleLine>,
    /// What the heartbeat warns about now: a quiet failure, with its cause and fix.
    warnings: Vec<Warning>,
}

#[derive(Debug, Serialize)]
struct CacheLine {
    embedder: String,
    vectors: u64,
}

#[derive(Debug, Serialize)]
struct Lag {
    file: String,
    bytes: u64,
}

#[derive(Debug, Serialize)]
struct CycleLine {
    id: String,
    kind: String,
    finished: String,
    promoted: u64,
    /// Kept as episodes (memory/episodes.md).
    episodes: u64,
    reinforced: u64,
    queued: u64,
    refused: u64,
    tokens: u64,
    /// Its recall quiz's score, when one ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    quiz: Option<dream_core::recall::quiz::Summary>,
    /// The error, when the cycle failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    failed: Option<String>,
}

pub fn run(g: &Global, a: &StatusArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let config = dream_engine::config::load(&root)?;
    let store = Store::open(&root)?;
    let state = State::open_read_only(&root)?;
    let watermarks = match &state {
        Some(s) => state::watermarks(&s.conn)?,
        None => Vec::new(),
    };
    let mut inbox_lag = Vec::new();
    let mut files = inbox::list_files(&root.join(&config.inbox.path))?;
    files.retain(|p| !dream_engine::edges::sources::claims(&config, &root, p));
    for source in &config.inbox.sources {
        let dir = dream_engine::edges::sources::source_path(source, &root);
        if dir.exists() {
            files.extend(dream_engine::edges::sources::list(
                &dir,
                source.format,
                &source.include,
                &source.exclude,
            )?);
        }
    }
    for path in files {
        let key = file_key(&root, &path);
        let prev = watermarks.iter().find(|w| w.file == key);
        let bytes = inbox::lag(&path, prev);
        if bytes > 0 {
            inbox_lag.push(Lag { file: key, bytes });
        }
    }
    let (cards, _) = store.pending_cards()?;
    let now = super::now(g)?;
    let memory = store.load_memory(now.date_naive())?;
    let mut s = Status {
        repo: root.display().to_string(),
        running: dream_engine::edges::lock::running(&root),
        events_stored: 0,
        events_unreflected: 0,
        inbox_lag_bytes: inbox_lag.iter().map(|l| l.bytes).sum(),
        inbox_lag,
        review_queue: cards.len(),
        skills_awaiting: dream_engine::stages::skills::awaiting(&root)?.len(),
        quarantined: 0,
        recent_quarantine: Vec::new(),
        active_facts: memory.len(),
        episodes: memory
            .block(dream_core::memory::Block::Episodes)
            .facts()
            .count(),
        embedder: dream_engine::providers::embedder(&config)
            .map(|e| e.id())
            .unwrap_or_else(|e| format!("{} (not usable: {e})", config.embed.provider)),
        vector_cache: Vec::new(),
        last_cycles: Vec::new(),
        warnings: Vec::new(),
    };
    if let Some(st) = &state {
        s.events_stored = state::count(&st.conn, "SELECT COUNT(*) FROM events")?;
        s.events_unreflected = state::count(
            &st.conn,
            "SELECT COUNT(*) FROM events WHERE reflected_cycle IS NULL",
        )?;
        s.quarantined = state::count(&st.conn, "SELECT COUNT(*) FROM quarantine")?;
        s.recent_quarantine = state::quarantined(&st.conn, 5)?;
        s.vector_cache = state::vector_cache(&st.conn)?
            .into_iter()
            .map(|(embedder, vectors)| CacheLine { embedder, vectors })
            .collect();
        let mut recent = state::recent_cycles(&st.conn, 5)?;
        recent.extend(
            dream_engine::edges::heartbeat::failures(&root)?
                .into_iter()
                .map(|f| f.record()),
        );
        recent.sort_by_key(|c| std::cmp::Reverse(c.finished));
        recent.truncate(5);
        for c in recent {
            let n = |k: &str| c.report["candidates"][k].as_u64().unwrap_or(0);
            s.last_cycles.push(CycleLine {
                id: c.id.clone(),
                kind: c.kind.clone(),
                finished: c.finished.format("%Y-%m-%d %H:%M UTC").to_string(),
                promoted: n("promoted"),
                episodes: n("episodes"),
                reinforced: n("reinforced"),
                queued: n("queued"),
                refused: n("refused"),
                tokens: c.report["tokens"]["spent"].as_u64().unwrap_or(0),
                quiz: serde_json::from_value(c.report["quiz"].clone()).ok(),
                failed: c.report["failed"].as_str().map(str::to_string),
            });
        }
        s.warnings = dream_engine::edges::heartbeat::warnings(&st.conn, &root, &config, now, None)?;
    }
    let code = if a.check && !s.warnings.is_empty() {
        EXIT_WARNING
    } else {
        EXIT_OK
    };
    if a.json {
        super::print_json(&s)?;
        return Ok(code);
    }
    println!("dream repository {}", s.repo);
    match &s.running {
        Some(r) => println!("  running now      {}", r.note),
        None => println!("  running now      nothing"),
    }
    println!(
        "  active facts     {} ({} of them episodes)",
        s.active_facts, s.episodes
    );
    println!(
        "  review queue     {} cards{}",
        s.review_queue,
        if s.review_queue > 0 {
            " (run `dream review`)"
        } else {
            ""
        }
    );
    if s.skills_awaiting > 0 {
        println!(
            "  skill drafts     {} awaiting a decision (run `dream skills list`)",
            s.skills_awaiting
        );
    }
    println!(
        "  events           {} stored, {} not yet reflected on",
        s.events_stored, s.events_unreflected
    );
    println!(
        "  inbox lag        {} bytes not yet read",
        s.inbox_lag_bytes
    );
    for l in s.inbox_lag.iter().take(10) {
        println!("                   {} ({} bytes)", l.file, l.bytes);
    }
    if s.inbox_lag.len() > 10 {
        println!(
            "                   … and {} more files (--json lists all)",
            s.inbox_lag.len() - 10
        );
    }
    let held = |id: &str| {
        s.vector_cache
            .iter()
            .find(|c| c.embedder == id)
            .map_or(0, |c| c.vectors)
    };
    println!(
        "  embedder         {} ({} vectors cached)",
        s.embedder,
        held(&s.embedder)
    );
    for c in s.vector_cache.iter().filter(|c| c.embedder != s.embedder) {
        println!(
            "                   also {} vectors of {} (not used; kept for a switch back)",
            c.vectors, c.embedder
        );
    }
    println!("  quarantined      {} lines", s.quarantined);
    for q in &s.recent_quarantine {
        println!("                   {}:{}: {}", q.file, q.line, q.reason);
    }
    if s.last_cycles.is_empty() {
        println!("  last cycles      none yet");
    } else {
        println!("  last cycles");
        for c in &s.last_cycles {
            match &c.failed {
                Some(e) => println!(
                    "                   {} {:<7} failed: {e} ({})",
                    c.id, c.kind, c.finished
                ),
                None => println!(
                    "                   {} {:<7} {} promoted, {} episodes, {} reinforced, {} queued, {} refused, {} tokens ({})",
                    c.id,
                    c.kind,
                    c.promoted,
                    c.episodes,
                    c.reinforced,
                    c.queued,
                    c.refused,
                    c.tokens,
                    c.finished
                ),
            }
            if let Some(q) = &c.quiz {
                println!(
                    "                     quiz: {}{}",
                    q.render(),
                    if q.failed() > 0 {
                        format!("; {} failed (`dream log` names them)", q.failed())
                    } else {
                        String::new()
                    }
                );
            }
        }
    }
    if s.warnings.is_empty() {
        println!("  heartbeat        no warnings");
    } else {
        println!("  heartbeat        {} warnings:", s.warnings.len());
        for w in &s.warnings {
            println!("    [{}] {}", w.rule, w.cause);
            println!("      fix: {}", w.fix);
        }
    }
    Ok(code)
}
