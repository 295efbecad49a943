//! Project scope at consolidation: give each fact this cycle added or supported anew the
//! scope its evidence says (`dream_core::recall::scope::decide`: its one project, or global when it
//! was said in two or more projects or is about the owner), from the projects ingest stored
//! with its events. It runs on memory as the stage leaves it, before the stage's change is
//! built, so the scope is in the same commit as the fact.

use std::collections::BTreeSet;

use dream_core::recall::scope;
use dream_core::schema::Memory;

use crate::edges::state::{self, Connection};
use crate::error::Result;

/// Set the scope of every fact whose support differs from `before`'s (new facts too);
/// returns how many facts' scope changed.
pub fn assign(tx: &Connection, before: &Memory, memory: &mut Memory) -> Result<usize> {
    let mut changes: Vec<(String, Option<String>)> = Vec::new();
    for (_, f) in memory.facts() {
        let old = before.get(&f.id).map(|(_, b)| b);
        if old.is_some_and(|b| b.support == f.support) {
            continue;
        }
        let projects: BTreeSet<String> =
            state::projects_of(tx, &f.support)?.into_values().collect();
        let was = old.map(scope::of);
        let now = scope::decide(was, &f.category, &f.text, &projects);
        if now.as_deref() != scope::of(f) {
            changes.push((f.id.clone(), now));
        }
    }
    let n = changes.len();
    for (id, now) in changes {
        if let Some(f) = memory.get_mut(&id) {
            match now {
                Some(p) => {
                    f.extra.insert(scope::KEY.into(), p);
                }
                None => {
                    f.extra.remove(scope::KEY);
                }
            }
        }
    }
    Ok(n)
}
