//! `dream purge`: take a string (a secret that reached the repository before a detector
//! knew its shape, or was typed in by hand) out of memory, cards, the archive, the digests,
//! the whole history and the state database.
//!
//! The person's uncommitted edits are committed first, as before any decision. Then every
//! commit of the branch is rebuilt with the string replaced by `[purged]` in every file and
//! message (`store`), the old tip is kept under `refs/dream/purge-backup/<time>` so a
//! mistaken purge loses nothing, and the branch and working tree move to the new history
//! through the journal like any change. The state's rows are rewritten and the database
//! compacted, so no free page keeps the old bytes. The inbox is never touched (it is the
//! agents' own record); how many of its files still hold the string is reported.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::Serialize;

use std::collections::HashMap;

use dream_core::schema::{Fact, Memory};
use dream_core::selection::keep;

use crate::edges::state::{self, State};
use crate::edges::store::{Point, Purged, Store};
use crate::edges::{guard, inbox, lock};
use crate::error::{Error, Result};
use crate::human::verify;
use dream_core::schema::settings::Config;

/// What replaces the string.
pub const REPLACEMENT: &str = "[purged]";

/// The shortest string dream purges (a shorter one would rewrite ordinary words).
pub const MIN_CHARS: usize = 6;

#[derive(Debug, Clone, Serialize)]
pub struct PurgeReport {
    pub applied: bool,
    pub history: Purged,
    /// State rows that held the string.
    pub state_rows: usize,
    /// Inbox files that still hold it (never rewritten by dream).
    pub inbox_files: Vec<String>,
}

/// Purge `needle` (with `apply`; otherwise say what a purge would change and write nothing).
pub fn purge(
    root: &Path,
    config: &Config,
    needle: &str,
    now: DateTime<Utc>,
    apply: bool,
) -> Result<PurgeReport> {
    if needle.chars().count() < MIN_CHARS {
        return Err(Error::Usage(format!(
            "the string to purge must be at least {MIN_CHARS} characters (a shorter one would rewrite ordinary words)"
        )));
    }
    if needle.contains('\n') {
        return Err(Error::Usage(
            "the string to purge must be one line; purge each line of a multi-line secret".into(),
        ));
    }
    let _lock = if apply {
        guard::begin(root, now, Some(&config.inbox.path))?.lock
    } else {
        lock::acquire(root, false, now)?
    };
    let mut store = Store::open(root)?;
    store.keep_out(&config.inbox.path);
    // Each step is a change of its own; an error after one happened says so, and the same
    // purge run again finishes the rest (each step finds its part done and does nothing).
    let mut done: Option<String> = None;
    let after = |done: &Option<String>| {
        let d = done.clone();
        move |e: Error| match d {
            Some(d) => Error::partial(d)(e),
            None => e,
        }
    };
    if apply {
        let mut batch = store.batch()?;
        store.stage_hand_edits(&mut batch, false, |paths| {
            dream_core::operations::commit::hand_edits(
                paths,
                &format!("purge-{}", now.format("%Y%m%dT%H%M%SZ")),
            )
            .render()
        })?;
        if let Some(c) = store.publish(batch, "hand edits before a purge", Point::Ref)? {
            done = Some(format!(
                "your uncommitted edits were committed first ({})",
                &c.to_string()[..10]
            ));
        }
    }
    let backup = format!("refs/dream/purge-backup/{}", now.format("%Y%m%dT%H%M%SZ"));
    let history = {
        // Each rewritten commit's kept lines are scored again on their new words, with
        // their events as the state will hold them (it is purged after the history).
        let st = if apply {
            State::open_read_only(root)?
        } else {
            None
        };
        let mut reword = |message: &str, tree: git2::Oid| -> Result<String> {
            rescored(
                message,
                || store.memory_in_tree(tree, chrono::NaiveDate::MIN),
                st.as_ref().map(|s| &s.conn),
                needle,
            )
        };
        store
            .purge(needle, REPLACEMENT, &backup, apply, &mut reword)
            .map_err(after(&done))?
    };
    if let Some(h) = &history.head {
        done = Some(format!(
            "the history was purged (the branch is at {}, the old one kept under {backup})",
            &h[..10.min(h.len())]
        ));
    }
    let state_rows = if !state::path(root).exists() {
        0
    } else if apply {
        let mut st = State::open(root).map_err(after(&done))?;
        state::purge(&mut st.conn, needle, REPLACEMENT).map_err(after(&done))?
    } else {
        match State::open_read_only(root)? {
            Some(st) => state::count_containing(&st.conn, needle)?,
            None => 0,
        }
    };
    let mut inbox_files = Vec::new();
    for f in inbox::scan(&root.join(&config.inbox.path)).files {
        if std::fs::read(&f).is_ok_and(|b| memchr::memmem::find(&b, needle.as_bytes()).is_some()) {
            inbox_files.push(inbox::file_key(root, &f));
        }
    }
    Ok(PurgeReport {
        applied: apply,
        history,
        state_rows,
        inbox_files,
    })
}

/// A rewritten commit's message with each kept line's salience scored again on its fact's
/// words as they now are, and its events' with the string replaced: `dream verify` scores a
/// kept line again from those words, and a recorded score the purge made wrong failed it
/// for good (issue 46). A line whose score falls below the threshold it met records
/// [`verify::RESCORED_AFTER_PURGE`] instead of the threshold. Lines another salience model
/// scored are left as they are (verify checks those against their record only), and so are
/// lines the purge did not touch.
fn rescored(
    message: &str,
    memory: impl FnOnce() -> Result<Memory>,
    conn: Option<&crate::edges::state::Connection>,
    needle: &str,
) -> Result<String> {
    let this_model = keep::model_id();
    let same_model = message
        .lines()
        .filter_map(|l| l.strip_prefix("Dream-Salience:"))
        .any(|t| {
            t.split_whitespace()
                .any(|w| w.strip_prefix("model=") == Some(&this_model))
        });
    if !same_model {
        return Ok(message.to_string());
    }
    let memory = memory()?;
    let facts: HashMap<&str, &Fact> = memory.facts().map(|(_, f)| (f.id.as_str(), f)).collect();
    let mut out = String::with_capacity(message.len());
    for line in message.split_inclusive('\n') {
        match rescored_line(line, &facts, conn, needle)? {
            Some(l) => out.push_str(&l),
            None => out.push_str(line),
        }
    }
    Ok(out)
}

/// One kept line of [`rescored`], when its score changed.
fn rescored_line(
    line: &str,
    facts: &HashMap<&str, &Fact>,
    conn: Option<&crate::edges::state::Connection>,
    needle: &str,
) -> Result<Option<String>> {
    let mut words = line.split_whitespace();
    if !matches!(words.next(), Some("episode" | "promoted")) {
        return Ok(None);
    }
    let (Some(caps), Some(fact)) = (
        verify::RECORDED.captures(line),
        words.next().and_then(|id| facts.get(id)),
    ) else {
        return Ok(None);
    };
    let events = match conn {
        Some(c) => state::events_by_ids(c, &fact.support)?,
        None => Vec::new(),
    };
    let owners = verify::owner_texts(&events);
    if !fact.text.contains(REPLACEMENT) && !owners.iter().any(|t| t.contains(needle)) {
        return Ok(None);
    }
    let owners: Vec<String> = owners
        .into_iter()
        .map(|t| t.replace(needle, REPLACEMENT))
        .collect();
    let owners: Vec<&str> = owners.iter().map(String::as_str).collect();
    let Some(score) = verify::score_kept(&fact.text, &owners)? else {
        return Ok(None);
    };
    let recorded: f32 = caps[1].parse().unwrap_or(f32::NAN);
    if (score - recorded).abs() <= 0.0015 {
        return Ok(None);
    }
    let note = match (caps.get(2), caps.get(3)) {
        (Some(t), _) if t.as_str().parse::<f32>().is_ok_and(|t| score >= t) => {
            format!("salience {score:.3} >= {}", t.as_str())
        }
        (Some(_), _) => format!("salience {score:.3}, {}", verify::RESCORED_AFTER_PURGE),
        (None, Some(why)) => format!("salience {score:.3}, {}", why.as_str()),
        (None, None) => return Ok(None),
    };
    let whole = caps.get(0).expect("the whole match");
    Ok(Some(format!(
        "{}{note}{}",
        &line[..whole.start()],
        &line[whole.end()..]
    )))
}
