//! Episodes leave memory (SPEC S4 step 8, the episodic tier): one not said again for
//! `episodes.retention_days`, then, while the file holds more than `episodes.max_facts`,
//! the oldest by last seen, each to the archive (`why=expired`) with the policy it was
//! verified against. A person's lines never expire. The consolidation stage expires them
//! after routing, and the passes when a pass moved an event into the episodes.

use chrono::NaiveDate;

use crate::memory::episodes::governed;
use crate::schema::settings::Episodes;
use crate::schema::{excerpt, Archive, Block, Memory};

/// An episode that leaves memory, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Expiry {
    pub id: String,
    /// In a sentence, with the figures.
    pub reason: String,
    /// What the archive records as the policy the code verified.
    pub policy: String,
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

/// Move the episodes `due` names (from [`expiring`]) to the archive, `why=expired`, with
/// the policy verified; returns the commit line of each that left.
pub fn expire(
    memory: &mut Memory,
    archive: &mut Archive,
    today: NaiveDate,
    due: Vec<Expiry>,
) -> Vec<String> {
    let mut lines = Vec::new();
    for e in due {
        let Some(gone) = memory.retire(&e.id, today, "expired", e.reason.clone(), e.policy) else {
            continue;
        };
        lines.push(format!(
            "expired    {}  {}  -- {}",
            e.id,
            excerpt(&gone.fact.text, 100),
            e.reason
        ));
        archive.push(gone);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{archive_header, Archived, BlockFile, Fact, Origin};

    fn d(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    fn fact(id: &str, last: &str, origin: Origin) -> Fact {
        let text = format!("1 March 2027: episode {id}");
        let support = vec!["e1".into()];
        Fact::new(
            id.into(),
            text,
            "event".into(),
            origin,
            support,
            d("2027-01-01"),
            d(last),
        )
    }

    fn memory(facts: Vec<Fact>) -> Memory {
        let mut blocks: Vec<BlockFile> = Block::ALL.iter().map(|b| BlockFile::empty(*b)).collect();
        for f in facts {
            blocks[2].push(f);
        }
        Memory::new(blocks)
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

    #[test]
    fn expired_episodes_move_to_the_archive_with_their_policy() {
        let cfg = Episodes {
            enabled: true,
            retention_days: 30,
            ..Episodes::default()
        };
        let mut m = memory(vec![
            fact("f_old", "2027-01-02", Origin::Auto),
            fact("f_new", "2027-02-25", Origin::Auto),
        ]);
        let mut archive = Archive::of(archive_header());
        let due = expiring(&m, d("2027-03-01"), &cfg);
        let lines = expire(&mut m, &mut archive, d("2027-03-01"), due);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with(
                "expired    f_old  1 March 2027: episode f_old  -- not said again for 58 days"
            ),
            "{}",
            lines[0]
        );
        assert!(m.get("f_old").is_none() && m.get("f_new").is_some());
        assert!(archive.ids.contains("f_old"));
        let entry = archive.text.lines().find_map(Archived::parse).unwrap();
        assert_eq!(
            (entry.why.as_str(), entry.policy.as_str()),
            ("expired", "retention_days=30")
        );
        assert_eq!(entry.archived, d("2027-03-01"));
    }
}
