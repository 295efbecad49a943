//! `dream explain ID`: everything known about a fact, a card or a candidate.

use crate::cli::{ExplainArgs, Global};
use dream_core::schema::{excerpt, Card, GateResult};
use dream_core::selection::veto::Veto;
use dream_engine::error::{Result, EXIT_OK};
use dream_engine::human::trail::{self, CandidateInfo, CommitInfo, EventInfo, FactInfo, QuizInfo};

/// Every gate's row, and under each that failed, why in words (not only the first failed
/// gate, which alone names the refusal).
fn gate_rows(gates: &[GateResult]) {
    for g in gates {
        println!(
            "    {:<3} {:<13} {:<28} {}{}",
            if g.passed { "ok" } else { "NO" },
            g.gate,
            g.value,
            g.threshold,
            if g.detail.is_empty() {
                String::new()
            } else {
                format!("  ({})", g.detail)
            }
        );
        if !g.passed {
            let why = if g.why.is_empty() {
                format!("measured {}, needs {}", g.value, g.threshold)
            } else {
                g.why.clone()
            };
            println!("        failed: {why}");
        }
    }
}

pub fn run(g: &Global, a: &ExplainArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let config = dream_engine::config::load(&root)?;
    let ex = trail::explain(&root, &config, super::now(g)?.date_naive(), &a.id)?;
    if a.json {
        super::print_json(&ex)?;
        return Ok(EXIT_OK);
    }
    for f in &ex.facts {
        print_fact(f);
    }
    for c in &ex.cards {
        // The candidates' records show the gates cycle by cycle; without them, the card's.
        print_card(c, ex.candidates.is_empty());
    }
    print_candidates(&ex.candidates);
    print_vetoes(&ex.vetoes);
    for (id, gates) in &ex.remeasured {
        println!("Gates measured now for {id}, against its supporting events");
        gate_rows(gates);
        println!();
    }
    print_quiz(&ex.quiz);
    print_events(&ex.events);
    print_commits(&ex.commits);
    Ok(EXIT_OK)
}

/// A fact: where it is, its text, metadata, and why it was archived.
fn print_fact(f: &FactInfo) {
    let place = match &f.archived {
        None => format!("active fact in memory/{}.md", f.block),
        Some(_) => format!("archived fact (was in memory/{}.md)", f.block),
    };
    println!("{}  {place}", f.id);
    println!("  {}", f.text);
    let mut meta = format!(
        "  category {} · origin {} · first seen {} · last seen {}",
        f.category, f.origin, f.first_seen, f.last_seen
    );
    if let Some(d) = f.valid_from {
        meta.push_str(&format!(" · valid from {d}"));
    }
    if let Some(d) = f.valid_to {
        meta.push_str(&format!(" · valid to {d}"));
    }
    println!("{meta}");
    if let Some(x) = &f.archived {
        println!(
            "  archived {} ({}): {}{}",
            x.on,
            x.why,
            x.reason,
            if x.policy.is_empty() {
                String::new()
            } else {
                format!(" [{}]", x.policy)
            }
        );
    }
    if f.supporting_event_ids.is_empty() {
        println!("  no supporting events: written by a person and trusted as an owner fact");
    }
    println!();
}

/// A review card: pending or decided, its text, why it was queued, the judge, what it
/// supersedes, and (`with_gates`) its gates as queued.
fn print_card(c: &Card, with_gates: bool) {
    match &c.decision {
        None => println!("{}  pending review card (review/{}.md)", c.id, c.id),
        Some(d) => println!(
            "{}  review card, {} on {}{}{}",
            c.id,
            d.verdict,
            d.at.format("%Y-%m-%d %H:%M UTC"),
            d.fact_id
                .as_ref()
                .map(|f| format!(" as {f}"))
                .unwrap_or_default(),
            if d.reason.is_empty() {
                String::new()
            } else {
                format!(": {}", d.reason)
            }
        ),
    }
    println!("  {}", c.text);
    println!("  why queued: {}", c.reason);
    println!("  judge: {}", c.judge);
    if let Some(old) = &c.supersedes {
        println!(
            "  supersedes {old}: {}",
            c.supersedes_text.as_deref().unwrap_or("(text unknown)")
        );
    }
    if with_gates {
        println!("  gates (as queued in cycle {}):", c.cycle);
        gate_rows(&c.gates);
    }
    println!();
}

/// Every cycle's record of the candidate: its route, reason, judge, measures and gates.
fn print_candidates(candidates: &[CandidateInfo]) {
    if candidates.is_empty() {
        return;
    }
    println!("Route, cycle by cycle");
    for c in candidates {
        println!(
            "  {}  {}  {}{}",
            c.cycle,
            c.id,
            c.route,
            c.target
                .as_ref()
                .map(|t| format!(" -> {t}"))
                .unwrap_or_default()
        );
        println!("    {:?}", excerpt(&c.text, 100));
        if !c.reason.is_empty() {
            println!("    reason: {}", c.reason);
        }
        if !c.judge.is_empty() {
            println!("    judge: {}", c.judge);
        }
        let m = &c.measures;
        if m.is_object() {
            println!(
                "    measures: support {} · sessions {} · days {} · spread {} days · confidence {} · coverage {} · novelty {} · owner {}",
                m["support"], m["sessions"], m["days"], m["spread_days"], m["confidence"], m["coverage"], m["novelty"], m["owner_support"]
            );
        }
        gate_rows(&c.gates);
    }
    println!();
}

/// The vetoes that keep the same events from bringing a rejected or undone item back.
fn print_vetoes(vetoes: &[Veto]) {
    for v in vetoes {
        println!(
            "Veto: {} {} on {} ({}){}; the same {} events will not bring it back",
            v.id,
            v.kind,
            v.at.format("%Y-%m-%d"),
            v.decision,
            if v.reason.is_empty() {
                String::new()
            } else {
                format!(": {}", v.reason)
            },
            v.events.len()
        );
    }
    if !vetoes.is_empty() {
        println!();
    }
}

/// The recall quiz's questions about the facts, each attempt with its score.
fn print_quiz(quiz: &[QuizInfo]) {
    if quiz.is_empty() {
        return;
    }
    println!("Recall quiz ({} questions, newest first)", quiz.len());
    for q in quiz {
        println!(
            "  {}  {}  {}",
            q.cycle,
            if q.outcome.passed { "passed" } else { "FAILED" },
            q.outcome.line()
        );
        for a in &q.outcome.attempts {
            println!(
                "      {} {:?}: score {:.2}{}{}",
                a.via,
                excerpt(&a.query, 80),
                a.score,
                a.hit
                    .as_ref()
                    .map(|h| format!(", found in {h}"))
                    .unwrap_or_default(),
                if a.note.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", a.note)
                }
            );
        }
    }
    println!();
}

/// The supporting events, in time order.
fn print_events(events: &[EventInfo]) {
    println!("Supporting events ({})", events.len());
    for e in events {
        println!(
            "  {}  {}  session {}  {}  {}",
            e.ts.format("%Y-%m-%d %H:%M"),
            e.id,
            if e.session.is_empty() {
                "-"
            } else {
                &e.session
            },
            e.trust,
            excerpt(&e.text, 120)
        );
    }
    println!();
}

/// The commits that touched any of it, oldest first, with their lines that name it.
fn print_commits(commits: &[CommitInfo]) {
    println!("Commits ({}), oldest first", commits.len());
    for c in commits {
        println!(
            "  {}  {}  {}{}",
            c.head.short,
            c.head.time.format("%Y-%m-%d %H:%M"),
            c.head.subject,
            c.head
                .cycle
                .as_ref()
                .map(|x| format!("  [{x}]"))
                .unwrap_or_default()
        );
        for l in &c.lines {
            println!("      {}", excerpt(l, 150));
        }
    }
}
