//! `dream status`: what is waiting, at a glance, and the heartbeat's warnings (with
//! `--check`, exit code 10 when there is any). The engine gathers the picture
//! (`human::status`); this file prints it as text or JSON.

use crate::cli::{Global, StatusArgs};
use dream_engine::error::{Result, EXIT_OK, EXIT_WARNING};
use dream_engine::human::status::{self, Status};

/// How many files with unread bytes the text lists (`--json` lists all).
const LAG_SHOWN: usize = 10;

pub fn run(g: &Global, a: &StatusArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let config = dream_engine::config::load(&root)?;
    let s = status::gather(&root, &config, super::now(g)?)?;
    let code = if a.check && !s.warnings.is_empty() {
        EXIT_WARNING
    } else {
        EXIT_OK
    };
    if a.json {
        super::print_json(&s)?;
        return Ok(code);
    }
    print_memory(&s);
    print_shared(&s);
    print_input(&s);
    print_cycles(&s);
    print_heartbeat(&s);
    Ok(code)
}

/// The repository, what holds the lock, memory, the review queue and skill drafts.
fn print_memory(s: &Status) {
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
        "  review queue     {} cards{}{}",
        s.review_queue,
        if s.review_waiting > 0 {
            format!(
                ", {} more waiting for room (the best are queued as you decide)",
                s.review_waiting
            )
        } else {
            String::new()
        },
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
}

/// A shared memory: remote, role, the last fetch and push, the machines seen, what waits.
fn print_shared(s: &Status) {
    let Some(sh) = &s.shared else { return };
    let m = &sh.membership;
    println!(
        "  shared           {} as {} {:?}{}",
        m.remote,
        m.role.as_str(),
        m.machine,
        m.person
            .as_deref()
            .map(|p| format!(" (person {p:?})"))
            .unwrap_or_default()
    );
    for l in [&sh.fetch, &sh.push].into_iter().flatten() {
        println!(
            "  last {:<11} tried {}, got through {}{}",
            l.what,
            l.tried,
            l.done.as_deref().unwrap_or("never"),
            l.problem
                .as_deref()
                .map(|p| format!("; failed: {p}"))
                .unwrap_or_default()
        );
    }
    println!(
        "  waiting          {} commits not yet at the remote{}",
        sh.commits_waiting,
        if m.role == dream_core::operations::machines::Role::Member {
            format!(", {} events not yet shipped", sh.events_waiting)
        } else {
            String::new()
        }
    );
    for x in &sh.members {
        println!(
            "  machine          {}{}: {} events, last said {}",
            x.machine,
            x.person
                .as_deref()
                .map(|p| format!(" ({p})"))
                .unwrap_or_default(),
            x.events,
            x.last_event.as_deref().unwrap_or("never")
        );
    }
}

/// Events, the inbox bytes not yet read, the embedder and its cache, quarantined lines.
fn print_input(s: &Status) {
    println!(
        "  events           {} stored, {} not yet reflected on",
        s.events_stored, s.events_unreflected
    );
    println!(
        "  inbox lag        {} bytes not yet read",
        s.inbox_lag_bytes
    );
    for l in s.inbox_lag.iter().take(LAG_SHOWN) {
        println!("                   {} ({} bytes)", l.file, l.bytes);
    }
    if s.inbox_lag.len() > LAG_SHOWN {
        println!(
            "                   … and {} more files (--json lists all)",
            s.inbox_lag.len() - LAG_SHOWN
        );
    }
    println!(
        "  embedder         {} ({} vectors cached)",
        s.embedder,
        s.cached(&s.embedder)
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
}

/// The last cycles, newest first: counts or the failure, and the quiz's score.
fn print_cycles(s: &Status) {
    if s.last_cycles.is_empty() {
        println!("  last cycles      none yet");
        return;
    }
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

/// The heartbeat's warnings, each with its fix.
fn print_heartbeat(s: &Status) {
    if s.warnings.is_empty() {
        println!("  heartbeat        no warnings");
        return;
    }
    println!("  heartbeat        {} warnings:", s.warnings.len());
    for w in &s.warnings {
        println!("    [{}] {}", w.rule, w.cause);
        println!("      fix: {}", w.fix);
    }
}
