//! The episodic tier (`memory/episodes.md`): where what was said or happened lives, dated,
//! until it has earned a durable block or is no longer worth loading.
//!
//! - A candidate that passes every hard gate and is fully traceable to the owner's own
//!   words, but has less support than the durable rule asks (`promote.min_support`
//!   events on `promote.min_days` days), is kept here; so is an event, however well
//!   supported. Its text starts with the day it was first said ([`text`]).
//! - Said again, it is reinforced (support added, last seen refreshed); once its support
//!   meets the durable rule it moves to its durable block (`home=`), keeping its id, its
//!   first-seen day and its supporting events.
//! - It expires when it has not come up for `episodes.retention_days` days, and when the
//!   file holds more than `episodes.max_facts` episodes the oldest (by last seen) go first:
//!   the file an agent loads stays bounded (`consolidation::expiry`). Expired episodes move to
//!   `archive/facts.md` (`why=expired`), like every fact that leaves memory.
//!
//! Lines a person wrote or accepted into the file are theirs: they never expire and are
//! never moved. Pure functions; `consolidation` applies them.

use chrono::NaiveDate;

use crate::schema::contract::EventView;
use crate::schema::{is_speaker_name, Origin};
use crate::text::phrases::{not_a_fact, sentences};
use crate::text::when;

/// The cheap pre-filter a single mention passes before any reflector sees it: the owner's
/// own message (not a tool's output, not text read back from memory) with at least one
/// sentence that is not chatter ([`not_a_fact`]). The rest is passed over without a call.
pub fn worth_reflecting_once(e: &EventView) -> bool {
    e.is_owner_statement() && sentences(&e.text).iter().any(|s| !not_a_fact(s))
}

/// An episode's text: the day it was said, then what was said. A speaker named at the
/// start ("Ana: I sold my bike.") joins the day ("8 May 2023, Ana: I sold my bike.").
pub fn text(day: NaiveDate, body: &str) -> String {
    let d = when::day(day);
    match body.split_once(": ") {
        Some((speaker, rest)) if is_speaker_name(speaker) => format!("{d}, {speaker}: {rest}"),
        _ => format!("{d}: {body}"),
    }
}

/// Whether the rules of the tier govern this fact: a cycle (or a pass) wrote it; a
/// person's lines are theirs.
pub fn governed(origin: Origin) -> bool {
    matches!(origin, Origin::Auto | Origin::Pass)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn texts_start_with_the_day_and_join_a_speaker() {
        let day = d("2023-05-08");
        assert_eq!(text(day, "I sold my bike."), "8 May 2023: I sold my bike.");
        assert_eq!(
            text(day, "Caroline: I went to a support group on 7 May 2023."),
            "8 May 2023, Caroline: I went to a support group on 7 May 2023."
        );
        assert_eq!(
            text(day, "Note: the cache is warm."),
            "8 May 2023, Note: the cache is warm."
        );
        assert_eq!(
            text(day, "We use ports 80: and 443."),
            "8 May 2023: We use ports 80: and 443."
        );
        for t in [
            text(day, "I sold my bike."),
            text(day, "Ana: I sold my bike."),
        ] {
            assert!(crate::schema::episode_body(&t).ends_with("I sold my bike."));
        }
    }
}
