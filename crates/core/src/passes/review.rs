//! What the merge and promote passes are shown (SPEC S4 step 9): only what changed. A
//! model that was shown a fact by a pass and left it alone would leave it alone again, so
//! a pass is shown the facts this cycle added, reworded or moved (against memory as the
//! cycle found it), and the merge pass also the facts of the same block that share at
//! least half the content words of the shorter of the two with one of them (a new fragment
//! may complete an old one). With nothing
//! changed the pass makes no call. A pass shows every fact when it cannot know what it
//! reviewed: the first cycle, a cycle that recorded hand edits, or one after a cycle in
//! which that pass degraded (its call failed or did not fit the budget). The engine's
//! backstops still run over all of memory.
//!
//! The forget pass is shown only what its gates could let go ([`forget_scope`]): the stale
//! facts, and when memory is over capacity the lowest-salience ones over it; and a stale
//! fact once, when it has gone stale since the pass was last answered, for the same reason.

use std::collections::BTreeSet;

use chrono::NaiveDate;

use super::gates::{self, Before, Ledger};
use crate::schema::settings::Retention;
use crate::schema::{Block, Memory};
use crate::text::measures;

/// The ids of the facts of `now` that `start` does not hold in the same block with the
/// same text.
pub fn changed(start: &Memory, now: &Memory) -> BTreeSet<String> {
    now.facts()
        .filter(|(b, f)| {
            start
                .get(&f.id)
                .is_none_or(|(sb, sf)| sb != *b || sf.text != f.text)
        })
        .map(|(_, f)| f.id.clone())
        .collect()
}

/// The least S6 similarity (shared content words over those of the shorter fact) at which
/// a fact of the same block is shown to the merge pass beside a changed one: fragments of
/// one fact share their subject ("My stack includes Airflow." and "... Postgres." share two
/// of three words), while facts that share a common word or two ("really", "great") are
/// about different things, and a long memory of them made every merge prompt hold most of
/// the block.
pub const MERGE_MIN_SIMILARITY: f64 = 0.5;

/// The facts the merge pass is shown: the changed ones, and every fact of their block at
/// least [`MERGE_MIN_SIMILARITY`] similar to one of them. Empty when nothing changed.
pub fn merge_scope(memory: &Memory, changed: &BTreeSet<String>) -> BTreeSet<String> {
    let words: Vec<(Block, BTreeSet<String>)> = memory
        .facts()
        .filter(|(_, f)| changed.contains(&f.id))
        .map(|(b, f)| (b, measures::content_tokens(&f.text)))
        .collect();
    memory
        .facts()
        .filter(|(b, f)| {
            changed.contains(&f.id) || {
                let mine = measures::content_tokens(&f.text);
                words.iter().any(|(cb, cw)| {
                    cb == b && measures::set_similarity(cw, &mine) >= MERGE_MIN_SIMILARITY
                })
            }
        })
        .map(|(_, f)| f.id.clone())
        .collect()
}

/// The facts the forget pass is shown, out of memory as the pass found it (`before`):
/// those its gates could let go (`gates::check_forget`), that is the stale facts and, when
/// memory holds more than `retention.max_active_facts`, the lowest-salience facts over it
/// (`gates::capacity_order`); of the stale ones, only those gone stale after `asked`, the
/// day of the last forget call that was answered (a fact stale by then was shown then, and
/// was kept). Protected and pinned facts are never among them. Empty: no call.
pub fn forget_scope(
    before: &Before,
    retention: &Retention,
    today: NaiveDate,
    asked: Option<NaiveDate>,
) -> BTreeSet<String> {
    let ledger = Ledger::default();
    let order = gates::capacity_order(before, &ledger, retention, today);
    let over = before.len().saturating_sub(retention.max_active_facts);
    let stale_after = i64::from(retention.stale_after_days);
    let mut out: BTreeSet<String> = order
        .iter()
        .take(over)
        .map(|(id, _)| id.to_string())
        .collect();
    for (id, _) in &order {
        let Some((_, fact)) = before.get(id) else {
            continue;
        };
        if gates::days_since(fact, today) <= stale_after {
            continue;
        }
        // The first day it was stale on: more than stale_after days after it was last seen.
        let stale_from = fact.last_seen + chrono::Duration::days(stale_after + 1);
        if asked.is_none_or(|a| stale_from > a) {
            out.insert(id.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{BlockFile, Fact, Origin};

    fn fact(id: &str, text: &str) -> Fact {
        let day = chrono::NaiveDate::from_ymd_opt(2026, 3, 1).unwrap();
        Fact::new(
            id.into(),
            text.into(),
            "knowledge".into(),
            Origin::Auto,
            Vec::new(),
            day,
            day,
        )
    }

    fn memory(facts: &[(Block, Fact)]) -> Memory {
        let mut m = Memory::new(Block::ALL.iter().map(|b| BlockFile::empty(*b)).collect());
        for (b, f) in facts {
            m.block_mut(*b).push(f.clone());
        }
        m
    }

    #[test]
    fn a_pass_is_shown_what_the_cycle_added_reworded_or_moved() {
        let start = memory(&[
            (Block::Human, fact("f_1", "I live in Lisbon.")),
            (Block::Human, fact("f_2", "My sister Ana is a nurse.")),
            (Block::Scratch, fact("f_3", "The build uses cargo nextest.")),
            (Block::Human, fact("f_5", "I drink green tea.")),
        ]);
        assert!(changed(&start, &start).is_empty(), "nothing changed");
        assert!(merge_scope(&start, &BTreeSet::new()).is_empty());

        let mut now = start.clone();
        now.block_mut(Block::Human)
            .push(fact("f_4", "I work as a nurse in Lisbon."));
        now.get_mut("f_2").unwrap().text = "My sister Ana is a pilot.".into();
        let (_, moved) = now.remove("f_3").unwrap();
        now.block_mut(Block::Persona).push(moved);
        let c = changed(&start, &now);
        assert_eq!(c, ["f_2", "f_3", "f_4"].map(String::from).into());
        // Merge also sees f_1, which shares "Lisbon" with the new f_4 in its block (one of
        // f_1's two content words); not f_5, which shares no word with any changed fact,
        // nor f_6, which shares one common word in six with f_4.
        now.block_mut(Block::Human).push(fact(
            "f_6",
            "I work remotely on Fridays from a cafe near the beach.",
        ));
        let scope = merge_scope(&now, &c);
        assert!(scope.contains("f_1"));
        assert!(!scope.contains("f_5"));
        assert!(!scope.contains("f_6"), "{scope:?}");
    }

    #[test]
    fn forget_is_shown_what_its_gates_could_let_go_and_a_stale_fact_once() {
        let today = chrono::NaiveDate::from_ymd_opt(2026, 3, 1).unwrap();
        let seen = |id: &str, days_ago: i64, category: &str| {
            let mut f = fact(id, &format!("Fact {id} about the garden."));
            f.last_seen = today - chrono::Duration::days(days_ago);
            f.category = category.into();
            (Block::Scratch, f)
        };
        let m = memory(&[
            seen("f_old", 100, "knowledge"),   // stale since 39 days ago
            seen("f_recent", 65, "knowledge"), // stale since 4 days ago
            seen("f_fresh", 10, "knowledge"),  // not stale
            seen("f_kept", 300, "identity"),   // stale, but protected
        ]);
        let before = Before::new(&m, BTreeSet::new(), Default::default());
        let retention = Retention::default();
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        // Never answered: every stale fact the gates could let go.
        assert_eq!(
            forget_scope(&before, &retention, today, None),
            ids(&["f_old", "f_recent"])
        );
        // Answered ten days ago: f_old was stale then and was shown; f_recent was not.
        let ten_days_ago = today - chrono::Duration::days(10);
        assert_eq!(
            forget_scope(&before, &retention, today, Some(ten_days_ago)),
            ids(&["f_recent"])
        );
        // Answered today: nothing new to ask, no call.
        assert!(forget_scope(&before, &retention, today, Some(today)).is_empty());
        // Over capacity by two: the two lowest in salience are shown too, whatever was asked
        // before (never a protected fact).
        let small = Retention {
            max_active_facts: 2,
            ..Retention::default()
        };
        assert_eq!(
            forget_scope(&before, &small, today, Some(today)),
            ids(&["f_old", "f_recent"])
        );
    }
}
