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
//!   the file an agent loads stays bounded ([`expiring`]). Expired episodes move to
//!   `archive/facts.md` (`why=expired`), like every fact that leaves memory.
//!
//! Lines a person wrote or accepted into the file are theirs: they never expire and are
//! never moved. Pure functions; the consolidation stage applies them.

use chrono::NaiveDate;

use crate::schema::contract::EventView;
use crate::schema::settings::Episodes;
use crate::schema::{Block, Memory, Origin};
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
    // A speaker is a name: one to three capitalised words of letters.
    let is_name = |s: &str| {
        let words: Vec<&str> = s.split(' ').collect();
        (1..=3).contains(&words.len())
            && words.iter().all(|w| {
                w.chars().next().is_some_and(char::is_uppercase)
                    && w.chars()
                        .all(|c| c.is_alphabetic() || c == '-' || c == '\'')
            })
    };
    match body.split_once(": ") {
        Some((speaker, rest)) if is_name(speaker) => format!("{d}, {speaker}: {rest}"),
        _ => format!("{d}: {body}"),
    }
}

/// An episode that leaves memory, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Expiry {
    pub id: String,
    /// In a sentence, with the figures.
    pub reason: String,
    /// What the archive records as the policy the code verified.
    pub policy: String,
}

/// Whether the rules of the tier govern this fact: a cycle (or a pass) wrote it; a
/// person's lines are theirs.
pub fn governed(origin: Origin) -> bool {
    matches!(origin, Origin::Auto | Origin::Pass)
}

/// The episodes that expire on `today`: first those not seen for more than
/// `retention_days`, then, while more than `max_facts` episodes would remain, the oldest
/// by last seen (then first seen, then id).
pub fn expiring(memory: &Memory, today: NaiveDate, cfg: &Episodes) -> Vec<Expiry> {
    if !cfg.enabled {
        return Vec::new();
    }
    let block = memory.block(Block::Episodes);
    let total = block.facts().filter(|f| !f.id.is_empty()).count();
    let mut out = Vec::new();
    let mut rest = Vec::new();
    for f in block.facts().filter(|f| !f.id.is_empty()) {
        if !governed(f.origin) {
            continue;
        }
        let age = (today - f.last_seen).num_days();
        if age > i64::from(cfg.retention_days) {
            out.push(Expiry {
                id: f.id.clone(),
                reason: format!(
                    "not said again for {age} days (last seen {}), over episodes.retention_days {}",
                    f.last_seen, cfg.retention_days
                ),
                policy: format!("retention_days={}", cfg.retention_days),
            });
        } else {
            rest.push(f);
        }
    }
    let mut left = total - out.len();
    rest.sort_by(|a, b| {
        a.last_seen
            .cmp(&b.last_seen)
            .then(a.first_seen.cmp(&b.first_seen))
            .then(a.id.cmp(&b.id))
    });
    for f in rest {
        if left <= cfg.max_facts {
            break;
        }
        out.push(Expiry {
            id: f.id.clone(),
            reason: format!(
                "{left} episodes, over episodes.max_facts {}: the oldest (last seen {}) goes first",
                cfg.max_facts, f.last_seen
            ),
            policy: format!("max_facts={}", cfg.max_facts),
        });
        left -= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{BlockFile, Fact};
    use std::collections::BTreeMap;

    fn d(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    fn fact(id: &str, last: &str, origin: Origin) -> Fact {
        Fact {
            id: id.into(),
            text: format!("1 March 2027: episode {id}"),
            category: "event".into(),
            origin,
            support: vec!["e1".into()],
            first_seen: d("2027-01-01"),
            last_seen: d(last),
            valid_from: None,
            valid_to: None,
            home: None,
            extra: BTreeMap::new(),
        }
    }

    fn memory(facts: Vec<Fact>) -> Memory {
        let mut blocks: Vec<BlockFile> = Block::ALL.iter().map(|b| BlockFile::empty(*b)).collect();
        for f in facts {
            blocks[2].push(f);
        }
        Memory::new(blocks)
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

    #[test]
    fn old_episodes_expire_then_the_oldest_over_the_cap_and_a_person_s_lines_never() {
        let cfg = Episodes {
            enabled: true,
            retention_days: 30,
            max_facts: 2,
            ..Episodes::default()
        };
        let m = memory(vec![
            fact("f_old", "2027-01-02", Origin::Auto),
            fact("f_a", "2027-02-20", Origin::Auto),
            fact("f_b", "2027-02-25", Origin::Auto),
            fact("f_c", "2027-02-26", Origin::Auto),
            fact("f_mine", "2027-01-01", Origin::Owner),
        ]);
        let out = expiring(&m, d("2027-03-01"), &cfg);
        let ids: Vec<&str> = out.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, vec!["f_old", "f_a", "f_b"]);
        assert_eq!(out[0].policy, "retention_days=30");
        assert!(out[0].reason.contains("58 days"), "{}", out[0].reason);
        assert_eq!(out[1].policy, "max_facts=2");
        // Within both limits, nothing expires.
        let m = memory(vec![fact("f_a", "2027-02-20", Origin::Auto)]);
        assert!(expiring(&m, d("2027-03-01"), &cfg).is_empty());
    }
}
