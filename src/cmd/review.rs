//! `dream review`: the interactive review on a terminal, and `list`, `show`, `accept`,
//! `reject`, `edit` for scripts.

use std::io::IsTerminal;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::cli::{BatchArgs, Global, ReviewAction, ReviewArgs};
use dream_core::schema::{excerpt, Card, Decision, Excerpt, GateResult, Measures};
use dream_engine::error::{Error, Result, EXIT_OK};
use dream_engine::human::oversight::{Decided, Desk, Request, Selector};

use super::tui;

/// A card as `--json` prints it (SPEC S13: at least id, text, block, category, reason,
/// supportingEventIds).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CardJson<'a> {
    pub id: &'a str,
    pub text: &'a str,
    pub block: &'a str,
    pub category: &'a str,
    pub reason: &'a str,
    pub supporting_event_ids: &'a [String],
    pub confidence: f64,
    pub judge: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub proposer_reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supersedes_text: Option<&'a str>,
    pub created: DateTime<Utc>,
    pub updated: DateTime<Utc>,
    pub cycle: &'a str,
    pub path: String,
    pub measures: &'a Measures,
    pub gates: &'a [GateResult],
    pub events: &'a [Excerpt],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<&'a Decision>,
}

impl<'a> CardJson<'a> {
    pub fn new(c: &'a Card) -> CardJson<'a> {
        CardJson {
            id: &c.id,
            text: &c.text,
            block: c.block.as_str(),
            category: &c.category,
            reason: &c.reason,
            supporting_event_ids: &c.supporting_event_ids,
            confidence: c.confidence,
            judge: &c.judge,
            proposer_reason: &c.proposer_reason,
            supersedes: c.supersedes.as_deref(),
            supersedes_text: c.supersedes_text.as_deref(),
            created: c.created,
            updated: c.updated,
            cycle: &c.cycle,
            path: c.path(),
            measures: &c.measures,
            gates: &c.gates,
            events: &c.excerpts,
            decision: c.decision.as_ref(),
        }
    }
}

pub fn run(g: &Global, a: &ReviewArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let config = dream_engine::config::load(&root)?;
    let desk = Desk::open(&root, config, super::now(g)?)?;
    let member = dream_engine::edges::remote::membership(&root)?
        .is_some_and(|m| m.role == dream_core::operations::machines::Role::Member);
    if member {
        if let Some(code) = on_member(&desk, a)? {
            return Ok(code);
        }
    }
    match &a.action {
        None => interactive(&desk),
        Some(ReviewAction::List { json, waiting }) => list(&desk, *json, *waiting),
        Some(ReviewAction::Show { id, json }) => show(&desk, id, *json),
        Some(ReviewAction::Accept { ids, reason, batch }) => decide(
            &desk,
            ids,
            batch,
            Request::Accept {
                reason: reason.clone().unwrap_or_default(),
            },
        ),
        Some(ReviewAction::Reject { ids, reason, batch }) => decide(
            &desk,
            ids,
            batch,
            Request::Reject {
                reason: reason.clone().unwrap_or_default(),
            },
        ),
        Some(ReviewAction::Edit { id, text }) => decided(desk.decide(
            id,
            None,
            &Request::Edit {
                text: text.clone(),
                reason: String::new(),
            },
        )?),
    }
}

/// A decision on a member of a shared memory: it travels to the dreamer (one card at a
/// time); `None` for what reads only (list, show), which runs as anywhere.
fn on_member(desk: &Desk, a: &ReviewArgs) -> Result<Option<i32>> {
    let (ids, verb, reason, batch) = match &a.action {
        Some(ReviewAction::Accept { ids, reason, batch }) => {
            (ids, "accept", reason.clone(), batch.any())
        }
        Some(ReviewAction::Reject { ids, reason, batch }) => {
            (ids, "reject", reason.clone(), batch.any())
        }
        Some(ReviewAction::Edit { id, text }) => {
            return travel(desk, id, "edit", "", Some(text)).map(Some);
        }
        Some(_) => return Ok(None),
        None => {
            return Err(Error::Usage(
                "this machine is a member of a shared memory: decide one card at a time with \
                 `dream review accept ID`, `reject ID --reason TEXT` or `edit ID TEXT`; each \
                 decision travels to the machine that dreams the memory"
                    .into(),
            ))
        }
    };
    if ids.len() != 1 || batch {
        return Err(Error::Usage(
            "on a member of a shared memory a decision is one card at a time (`dream review accept ID`); \
             batches are decided on the machine that dreams it"
                .into(),
        ));
    }
    travel(desk, &ids[0], verb, reason.as_deref().unwrap_or(""), None).map(Some)
}

/// Record a member's decision on its branch and push it.
fn travel(desk: &Desk, id: &str, verb: &str, reason: &str, text: Option<&str>) -> Result<i32> {
    let card = desk.find(id)?;
    let (d, synced) = dream_engine::machines::decide_on_member(
        &desk.root, &card.id, verb, reason, text, desk.now,
    )?;
    println!(
        "{verb} {}: decision {} travels to the machine that dreams this memory, which applies it at its next sync or cycle (the first decision on a card wins)",
        card.id, d.id
    );
    for n in &synced.notes {
        eprintln!("dream: {n}");
    }
    Ok(EXIT_OK)
}

fn interactive(desk: &Desk) -> Result<i32> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(Error::Usage(
            "dream review needs a terminal to ask you card by card (standard input and output are not a terminal); \
             in scripts use `dream review list [--json]`, `dream review show ID`, `dream review accept ID`, \
             `dream review reject ID --reason TEXT` or `dream review edit ID TEXT`"
                .into(),
        ));
    }
    desk.check_lock()?;
    let summary = tui::run(desk)?;
    println!("{summary}");
    Ok(EXIT_OK)
}

/// One card or a batch: a single id and no filter is one decision, as before; more ids or
/// any filter is a batch (one commit).
fn decide(desk: &Desk, ids: &[String], batch: &BatchArgs, req: Request) -> Result<i32> {
    if ids.len() == 1 && !batch.any() {
        return decided(desk.decide(&ids[0], None, &req)?);
    }
    let sel = Selector {
        ids: ids.to_vec(),
        session: batch.session.clone(),
        below: batch.below,
        cluster: batch.cluster.clone(),
        all: batch.all,
        waiting: batch.waiting,
    };
    let b = desk.decide_batch(&sel, &req, batch.dry_run)?;
    let verb = match req {
        Request::Accept { .. } => "accept",
        _ => "reject",
    };
    if b.dry_run {
        if b.chosen.is_empty() {
            println!("No card matches ({}); nothing would change.", b.selector);
            return Ok(EXIT_OK);
        }
        println!(
            "Would {verb} {} card{} ({}); nothing was changed:",
            b.chosen.len(),
            if b.chosen.len() == 1 { "" } else { "s" },
            b.selector
        );
        for c in &b.chosen {
            println!("  {}", card_line(&c.card, c.salience, c.waiting));
        }
        return Ok(EXIT_OK);
    }
    println!(
        "{verb}ed {} card{} ({}):",
        b.decided.len(),
        if b.decided.len() == 1 { "" } else { "s" },
        b.selector
    );
    for a in &b.decided {
        for l in &a.lines {
            println!("  {l}");
        }
    }
    if let Some(c) = &b.commit {
        println!(
            "commit {} ({}); `dream undo --cycle {}` takes the whole batch back",
            &c[..7.min(c.len())],
            b.session,
            b.session
        );
    }
    Ok(EXIT_OK)
}

/// A card on one line: id, salience, day, place and text.
fn card_line(c: &Card, salience: Option<f32>, waiting: bool) -> String {
    format!(
        "{}  {}  {}  [{}/{}]  {}{}",
        c.id,
        salience.map_or_else(|| "  -  ".to_string(), |s| format!("{s:.3}")),
        c.created.format("%Y-%m-%d"),
        c.block.as_str(),
        c.category,
        excerpt(&c.text, 80),
        if waiting { "  (waiting)" } else { "" }
    )
}

fn list(desk: &Desk, json: bool, waiting: bool) -> Result<i32> {
    let (cards, problems) = if waiting {
        desk.waiting_cards()?
    } else {
        desk.pending()?
    };
    for p in &problems {
        tracing::warn!("skipped a card that does not parse: {p}");
    }
    if json {
        let out: Vec<CardJson<'_>> = cards.iter().map(CardJson::new).collect();
        super::print_json(&out)?;
        return Ok(EXIT_OK);
    }
    let more = if waiting { 0 } else { desk.waiting()? };
    if cards.is_empty() {
        if waiting {
            println!("No cards wait for room in the review queue.");
        } else if more > 0 {
            println!(
                "No cards are waiting for review; {more} wait for room and are queued by the next evening cycle."
            );
        } else {
            println!("No cards are waiting for review.");
        }
        return Ok(EXIT_OK);
    }
    println!(
        "{} card{} {}, best first (salience beside each):\n",
        cards.len(),
        if cards.len() == 1 { "" } else { "s" },
        if waiting {
            "waiting for room in the review queue"
        } else {
            "waiting for review"
        }
    );
    for c in &cards {
        println!("{}", card_line(c, desk.salience(c)?, false));
        if let Some(old) = &c.supersedes {
            println!("            supersedes {old}");
        }
        println!("            why: {}", excerpt(&c.reason, 110));
    }
    if more > 0 {
        println!(
            "\nand {more} more waiting for room in the queue (review.max_new_cards): the best are queued as you decide (`dream review list --waiting`)."
        );
    }
    println!(
        "\nDecide with `dream review` (on a terminal), `dream review accept|reject ID`, or in batches (`dream review reject --below 0.5 --dry-run`)."
    );
    Ok(EXIT_OK)
}

fn show(desk: &Desk, id: &str, json: bool) -> Result<i32> {
    let card = desk.find(id)?;
    if json {
        super::print_json(&CardJson::new(&card))?;
        return Ok(EXIT_OK);
    }
    let events = desk.events(&card)?;
    let superseded_now = match &card.supersedes {
        Some(old) => desk.active_fact_text(old)?,
        None => None,
    };
    println!(
        "{}  pending since {}",
        card.id,
        card.created.format("%Y-%m-%d %H:%M UTC")
    );
    for line in tui::card_page(&card, &events, superseded_now.as_deref(), 100) {
        let text: String = line.into_iter().map(|(t, _)| t).collect();
        println!("{}", text.trim_end());
    }
    println!(
        "\nDecide with `dream review accept {id}`, `dream review reject {id} --reason TEXT` or `dream review edit {id} TEXT`.",
        id = card.id
    );
    Ok(EXIT_OK)
}

fn decided(d: Decided) -> Result<i32> {
    let a = &d.applied;
    let verdict = a
        .card
        .decision
        .as_ref()
        .map(|x| x.verdict.as_str())
        .unwrap_or("decided");
    match &a.fact_id {
        Some(f) => println!("{verdict} {} as {f}", a.card.id),
        None => println!("{verdict} {}", a.card.id),
    }
    for l in &a.lines {
        println!("  {l}");
    }
    if let Some(c) = &d.commit {
        println!("commit {} ({})", &c[..7.min(c.len())], d.session);
    }
    Ok(EXIT_OK)
}
