//! The core's folders call only downwards. Each top-level module of `dream-core` sits on a
//! floor; a module may use its own items and anything on a lower floor, never one on its
//! own floor or above, so no two folders import each other. Shared vocabulary lives on the
//! `schema` floor, under every stage that speaks it. A second rule holds inside the
//! folders: no two modules (files) import each other.
//!
//! This test reads every source file with `syn` (comments, strings and macros' text are not
//! code), resolves each `crate::`, `super::` and `self::` path (`support/import_paths.rs`,
//! which the engine's `tests/layers.rs` shares), and fails naming the file, the line and
//! the two modules. `the_checker_finds_what_it_must` runs the same checks on synthetic
//! sources, so a check that could no longer fail would fail there.

// A test reads the core's own sources; the core library itself reads no file.
#![allow(clippy::disallowed_methods)]

#[path = "support/import_paths.rs"]
mod import_paths;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use import_paths::{module_of, rust_files, Paths, Use};
use syn::visit::Visit;

/// The floors, lowest first. A module may use modules of lower floors only.
const FLOORS: &[&[&str]] = &[
    // The words every stage measures.
    &["text"],
    // Lines to events: what every later stage reads.
    &["sources"],
    // The shapes the stages share: settings, memory's files, cards, gate rows, the model's
    // contracts.
    &["schema"],
    // Events to candidates to routes.
    &["selection"],
    // Beside one another, each on top of selection: the episodes and a person's decisions,
    // the maintenance passes, recurring procedures.
    &["memory", "passes", "skills"],
    // The model seam: prompts built from what the stages hold, the offline provider, the
    // plan of calls, the budget.
    &["llm"],
    // What agents are shown of memory, and the quiz.
    &["recall"],
    // Report, commits, heartbeat, digest: about every stage.
    &["operations"],
    // What a cycle does to memory, decided and applied: it uses every stage and records
    // into the report.
    &["consolidation"],
];

fn floor(module: &str) -> Option<usize> {
    FLOORS.iter().position(|l| l.contains(&module))
}

/// One source file: where it is (for messages), its module path, and its text.
struct Source {
    file: String,
    module: Vec<String>,
    text: String,
}

/// Every source file of the core, in order.
fn sources(src: &Path) -> Vec<Source> {
    let mut files: Vec<PathBuf> = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(src).expect("under src");
            Source {
                file: format!("crates/core/src/{}", rel.display()),
                module: module_of(rel),
                text: std::fs::read_to_string(&f).expect("a source file"),
            }
        })
        .collect()
}

/// Every module path a source names, or why it does not parse.
fn uses(s: &Source) -> Result<Vec<Use>, String> {
    let ast = syn::parse_file(&s.text).map_err(|e| format!("{}: does not parse: {e}", s.file))?;
    let mut paths = Paths {
        module: s.module.clone(),
        found: Vec::new(),
    };
    paths.visit_file(&ast);
    Ok(paths.found)
}

/// Every use of a folder on the same floor or above, as `file:line: a (floor i) uses
/// crate::b (floor j)`.
fn upward_uses(sources: &[Source]) -> Vec<String> {
    let mut wrong = Vec::new();
    for s in sources {
        let Some(own) = s.module.first().cloned() else {
            continue; // lib.rs declares the folders
        };
        let Some(own_floor) = floor(&own) else {
            wrong.push(format!(
                "{}: module {own} is on no floor: add it to FLOORS in tests/floors.rs",
                s.file
            ));
            continue;
        };
        let found = match uses(s) {
            Ok(found) => found,
            Err(e) => {
                wrong.push(e);
                continue;
            }
        };
        for u in found {
            if u.top == own {
                continue;
            }
            let Some(their) = floor(&u.top) else {
                continue; // an item of lib.rs itself
            };
            if their >= own_floor {
                wrong.push(format!(
                    "{}:{}: {own} (floor {own_floor}) uses crate::{} (floor {their})",
                    s.file, u.line, u.top
                ));
            }
        }
    }
    wrong
}

/// Every pair of modules (files) that import each other, as `a <-> b (file:line, file:line)`.
/// A use names the longest module path that is a file; a folder's `mod.rs` and the modules
/// it declares are not a pair (it declares and re-exports them).
fn two_way(sources: &[Source]) -> Vec<String> {
    let modules: BTreeSet<Vec<String>> = sources.iter().map(|s| s.module.clone()).collect();
    let mut edges: BTreeMap<(Vec<String>, Vec<String>), String> = BTreeMap::new();
    let mut wrong = Vec::new();
    for s in sources {
        let found = match uses(s) {
            Ok(found) => found,
            Err(e) => {
                wrong.push(e);
                continue;
            }
        };
        for u in found {
            let Some(target) = (1..=u.path.len())
                .rev()
                .map(|n| u.path[..n].to_vec())
                .find(|p| modules.contains(p))
            else {
                continue;
            };
            if target.starts_with(&s.module) || s.module.starts_with(&target) {
                continue;
            }
            edges
                .entry((s.module.clone(), target))
                .or_insert_with(|| format!("{}:{}", s.file, u.line));
        }
    }
    for ((a, b), at) in &edges {
        if a < b {
            if let Some(back) = edges.get(&(b.clone(), a.clone())) {
                wrong.push(format!(
                    "{} <-> {} ({at}, {back})",
                    a.join("::"),
                    b.join("::")
                ));
            }
        }
    }
    wrong
}

#[test]
fn the_core_folders_only_call_downwards() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let wrong = upward_uses(&sources(&src));
    assert!(
        wrong.is_empty(),
        "a core folder uses one on its own floor or above (move the shared piece down to \
         `schema`, or pass it in):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_two_core_modules_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let wrong = two_way(&sources(&src));
    assert!(
        wrong.is_empty(),
        "two core modules import each other (move what both need into one of them, or \
         below both):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_checker_finds_what_it_must() {
    let source = |file: &str, text: &str| Source {
        file: file.to_string(),
        module: module_of(Path::new(file)),
        text: text.to_string(),
    };
    let synthetic = [
        source("lib.rs", "pub mod text; pub mod selection; pub mod memory;"),
        // Downward only, and names in comments and strings: nothing to report.
        source(
            "sources/event.rs",
            r#"
use crate::text::when;
// crate::operations in a comment is not a use
fn f() -> &'static str { "crate::recall::quiz in a string" }
"#,
        ),
        // Upward, however written: grouped, a path in code, an inline module's super chain,
        // a rename, a glob.
        source(
            "selection/gates.rs",
            r#"
use crate::{text::measures, memory::episodes};
use super::keep::Scorer;
fn f() { let _ = super::super::llm::offline::x(); }
mod inner { use super::super::super::recall::quiz as q; }
use crate::operations::*;
"#,
        ),
        // The same floor is refused too.
        source("memory/review.rs", "fn f() { crate::passes::gates::x(); }"),
        // A module of selection that imports gates, which imports it: a pair.
        source(
            "selection/keep.rs",
            "use crate::selection::gates::Check; use crate::text::phrases;",
        ),
        // A folder's mod.rs and its modules are not a pair.
        source(
            "selection/mod.rs",
            "pub mod gates; pub mod keep; pub use keep::Worth;",
        ),
    ];
    let upward: Vec<String> = upward_uses(&synthetic)
        .iter()
        .map(|w| {
            let (at, rest) = w.split_once(": ").unwrap();
            let line = at.rsplit(':').next().unwrap();
            format!("{line} {}", rest.rsplit("crate::").next().unwrap())
        })
        .collect();
    assert_eq!(
        upward,
        [
            "2 memory (floor 4)",
            "4 llm (floor 5)",
            "5 recall (floor 6)",
            "6 operations (floor 7)",
            "1 passes (floor 4)",
        ],
        "{upward:#?}"
    );
    let pairs: Vec<String> = two_way(&synthetic)
        .iter()
        .map(|w| w.split(" (").next().unwrap().to_string())
        .collect();
    assert_eq!(
        pairs,
        ["selection::gates <-> selection::keep"],
        "{pairs:#?}"
    );
}
