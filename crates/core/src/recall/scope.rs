//! Project scope: which project a fact belongs to, and which facts a session sees.
//!
//! A person works in several projects (git repositories, or folders outside any), and a
//! rule learned in one must not be applied silently in another. Each event carries the
//! project it was said in (resolved at ingest: the repository's folder, worktrees of one
//! repository being one project); a fact learned in one project belongs to it, and is
//! marked so in its metadata comment (`scope="/home/ana/src/shop"`); a fact said in two or
//! more projects, or one about the owner themselves (who they are, how they like to work,
//! not a codebase's conventions), is global: it has no `scope` key, or `scope=global` when
//! a person set it so. A session in a project sees the global facts and that project's.
//!
//! The rules only ever widen a scope (a project fact said again in another project becomes
//! global; a global fact never narrows by itself), so a person's move to global sticks, and
//! a fact whose evidence is unknown (events older than scope, hand-written facts) stays as
//! it is. Everything here is pure: the caller resolves paths and reads the events.

use std::collections::BTreeSet;

use crate::schema::{Fact, Memory};

/// The metadata key of a fact's scope.
pub const KEY: &str = "scope";
/// The value a person writes to make a fact global explicitly.
pub const GLOBAL: &str = "global";

/// The project a fact belongs to; `None` for a global fact.
pub fn of(f: &Fact) -> Option<&str> {
    f.extra
        .get(KEY)
        .map(String::as_str)
        .filter(|s| !s.is_empty() && *s != GLOBAL)
}

/// Whether a session in `current` (a project, or none known) sees `f`: global facts
/// always; a project's facts in that project only.
pub fn visible(f: &Fact, current: Option<&str>) -> bool {
    match of(f) {
        None => true,
        Some(p) => current == Some(p),
    }
}

/// Leave in `memory` only what a session in `current` sees; returns how many facts of
/// other projects were left out.
pub fn retain(memory: &mut Memory, current: Option<&str>) -> usize {
    let hidden: Vec<String> = memory
        .facts()
        .filter(|(_, f)| !visible(f, current))
        .map(|(_, f)| f.id.clone())
        .collect();
    for id in &hidden {
        memory.remove(id);
    }
    hidden.len()
}

/// Whether a fact of this category and text is about the owner themselves, wherever they
/// said it: who they are (`identity`), how the assistant is to behave (`persona`), and
/// preferences that are not about a codebase (`phrases::about_a_codebase`).
pub fn about_the_owner(category: &str, text: &str) -> bool {
    match category {
        "identity" | "persona" => true,
        "preferences" => !crate::text::phrases::about_a_codebase(text),
        _ => false,
    }
}

/// The scope a fact should have after this cycle: `projects` are the known projects of its
/// supporting events. `None` is global. A fact `was` in a scope keeps it unless its evidence
/// widens it; a new fact (`was` = `Some(None)` never happens for it) takes its evidence's.
pub fn decide(
    was: Option<Option<&str>>,
    category: &str,
    text: &str,
    projects: &BTreeSet<String>,
) -> Option<String> {
    let global_by_kind = about_the_owner(category, text);
    match was {
        // Already global (or set global by a person): it stays global.
        Some(None) => None,
        // A project fact: global once said in another project, or when it is about the
        // owner.
        Some(Some(p)) => {
            if global_by_kind || projects.iter().any(|q| q != p) {
                None
            } else {
                Some(p.to_string())
            }
        }
        // A new fact: its one project, else global.
        None => {
            if global_by_kind || projects.len() != 1 {
                None
            } else {
                projects.iter().next().cloned()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ps: &[&str]) -> BTreeSet<String> {
        ps.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_fact_belongs_to_its_one_project_and_widens_to_global_when_said_elsewhere() {
        let code = "We deploy the repo with make ship.";
        assert_eq!(
            decide(None, "project", code, &set(&["/a"])),
            Some("/a".into())
        );
        assert_eq!(decide(None, "project", code, &set(&["/a", "/b"])), None);
        assert_eq!(decide(None, "project", code, &set(&[])), None);
        assert_eq!(
            decide(Some(Some("/a")), "project", code, &set(&["/a"])),
            Some("/a".into())
        );
        assert_eq!(
            decide(Some(Some("/a")), "project", code, &set(&["/b"])),
            None
        );
        // Global never narrows.
        assert_eq!(decide(Some(None), "project", code, &set(&["/a"])), None);
    }

    #[test]
    fn what_is_about_the_owner_is_global_wherever_it_was_said() {
        assert_eq!(
            decide(None, "identity", "My name is Ana.", &set(&["/a"])),
            None
        );
        assert_eq!(
            decide(
                None,
                "preferences",
                "I prefer short answers.",
                &set(&["/a"])
            ),
            None
        );
        // A preference about a codebase stays with its project.
        assert_eq!(
            decide(
                None,
                "preferences",
                "I prefer tabs in our codebase.",
                &set(&["/a"])
            ),
            Some("/a".into())
        );
    }
}
