//! Decisions on review cards made on members of a shared memory (issue 45), applied on the
//! dreamer. A member never writes memory: its `dream review accept|reject|edit` travels as
//! a decision file on its own branch (`machines::decide_on_member`), the dreamer's ingest
//! stores it with the member's mark, and this applies every stored decision, oldest first,
//! through the same review desk a person on the dreamer uses, its reason saying who decided
//! and on which machine. A card decided twice (on two machines, or here first) is decided
//! once: the first decision applied wins, a later one is recorded as refused, with why.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::edges::state::{self, State};
use crate::error::{Error, Result};
use crate::human::oversight::{Desk, Request};
use dream_core::operations::machines::Decision;
use dream_core::schema::settings::Config;

/// What became of one member's decision.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub decision: Decision,
    pub applied: bool,
    /// The commit when applied; why not otherwise.
    pub note: String,
}

/// Apply every stored decision not yet applied, oldest first.
pub fn apply(root: &Path, config: &Config, now: DateTime<Utc>) -> Result<Vec<Outcome>> {
    let pending = match State::open_read_only(root)? {
        Some(st) => state::pending_decisions(&st.conn)?,
        None => Vec::new(),
    };
    if pending.is_empty() {
        return Ok(Vec::new());
    }
    let desk = Desk::open(root, config.clone(), now)?;
    let mut out = Vec::new();
    for d in pending {
        let reason = d.signed_reason();
        let req = match d.verb.as_str() {
            "accept" => Request::Accept { reason },
            "reject" => Request::Reject { reason },
            _ => Request::Edit {
                text: d.text.clone().unwrap_or_default(),
                reason,
            },
        };
        let (applied, note) = match desk.decide(&d.card, None, &req) {
            Ok(done) => (true, done.commit.unwrap_or_default()),
            // The card was decided first (or is gone, or the edit does not pass the gates):
            // this decision is reported, not applied.
            Err(Error::Input(why)) => (false, why),
            Err(e) => return Err(e),
        };
        let st = State::open(root)?;
        let outcome = if applied { "applied" } else { "refused" };
        state::decision_outcome(&st.conn, &d.id, outcome, &note, now)?;
        out.push(Outcome {
            decision: d,
            applied,
            note,
        });
    }
    Ok(out)
}
