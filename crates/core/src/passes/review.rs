//! What the merge and promote passes are shown (SPEC S4 step 9): only what changed. A
//! model that was shown a fact by a pass and left it alone would leave it alone again, so
//! a pass is shown the facts this cycle added, reworded or moved (against memory as the
//! cycle found it), and the merge pass also the facts of the same block that share a
//! content word with one of them (a new fragment may complete an old one). With nothing
//! changed the pass makes no call. A pass shows every fact when it cannot know what it
//! reviewed: the first cycle, a cycle that recorded hand edits, or one after a cycle in
//! which that pass degraded (its call failed or did not fit the budget). The engine's
//! backstops still run over all of memory.

use std::collections::BTreeSet;

use crate::memory::{Block, Memory};
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

/// The facts the merge pass is shown: the changed ones, and every fact of their block
/// that shares a content word with one of them. Empty when nothing changed.
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
                words
                    .iter()
                    .any(|(cb, cw)| cb == b && !cw.is_disjoint(&mine))
            }
        })
        .map(|(_, f)| f.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{BlockFile, Fact, Origin};

    fn fact(id: &str, text: &str) -> Fact {
        let day = chrono::NaiveDate::from_ymd_opt(2026, 3, 1).unwrap();
        Fact {
            id: id.into(),
            text: text.into(),
            category: "knowledge".into(),
            origin: Origin::Auto,
            support: Vec::new(),
            first_seen: day,
            last_seen: day,
            valid_from: None,
            valid_to: None,
            home: None,
            extra: Default::default(),
        }
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
        // Merge also sees f_1, which shares "Lisbon" with the new f_4 in its block; not
        // f_5, which shares no word with any changed fact.
        let scope = merge_scope(&now, &c);
        assert!(scope.contains("f_1"));
        assert!(!scope.contains("f_5"));
    }
}
