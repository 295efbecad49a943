//! Step 2 of a candidate: a new episode held to its session's cap
//! (`episodes.max_per_session`). Candidates come most salient first, so a session keeps its
//! best and the rest are refused with why. The cap counts across cycles: a session resumed
//! the next day does not start again.

use std::collections::HashMap;
use std::rc::Rc;

use chrono::{DateTime, NaiveDate, Utc};

use crate::consolidation::decide::Decided;
use crate::consolidation::{Events, Policy};
use crate::memory::episodes;
use crate::schema::{Block, GateName, Memory};
use crate::selection::keep;
use crate::selection::route::Outcome;
use crate::sources::event::Stored;
use crate::sources::turn::owner_statement;

/// The session a kept line counts against (`keep::session_key`): that of its first
/// statement of the owner's (the one its day comes from).
pub fn session_of(
    local_day: fn(DateTime<Utc>) -> NaiveDate,
    stored: &[Rc<Stored>],
) -> Option<String> {
    let owner = |s: &&Rc<Stored>| owner_statement(s.event.trust, &s.event.kind, s.event.recalled);
    let first = stored
        .iter()
        .filter(owner)
        .min_by_key(|s| s.event.ts)
        .or_else(|| stored.iter().min_by_key(|s| s.event.ts))?;
    let day = local_day(first.event.ts);
    Some(keep::session_key(&first.event.session_key(), day))
}

/// How many episodes each session already added: each episode a cycle kept, by the session
/// of the event it cites first.
pub fn episodes_per_session<E: Events>(
    p: &Policy<'_>,
    events: &mut E,
    memory: &Memory,
) -> Result<HashMap<String, usize>, E::Error> {
    let firsts: Vec<String> = memory
        .block(Block::Episodes)
        .facts()
        .filter(|f| episodes::governed(f.origin))
        .filter_map(|f| f.support.first().cloned())
        .collect();
    let mut out = HashMap::new();
    for s in events.by_ids(&firsts)? {
        if let Some(key) = session_of(p.local_day, &[s]) {
            *out.entry(key).or_insert(0) += 1;
        }
    }
    Ok(out)
}

/// Hold a new episode to its session's cap: past it, the salience row says why and the
/// candidate is refused.
pub fn cap(p: &Policy<'_>, d: &mut Decided, per_session: &mut HashMap<String, usize>) {
    if !matches!(d.outcome, Outcome::Episode { .. }) {
        return;
    }
    let Some(key) = session_of(p.local_day, &d.stored) else {
        return;
    };
    let kept = per_session.entry(key.clone()).or_insert(0);
    let max = p.config.episodes.max_per_session;
    match keep::over_cap(&key, *kept, max, d.g.salience.map(|w| w.score)) {
        Some(reason) => {
            if let Some(row) = d
                .gates
                .iter_mut()
                .rev()
                .find(|r| r.gate == GateName::Salience.as_str())
            {
                row.passed = false;
                row.why = reason.clone();
            }
            d.outcome = Outcome::Refuse { reason };
        }
        None => *kept += 1,
    }
}
