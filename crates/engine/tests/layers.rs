//! The engine's folders call only downwards. Each top-level module of `dream-engine` sits
//! on a layer; a module may use its own items and anything on a lower layer, never one on
//! its own layer or above. This test reads every source file with `syn` (so comments,
//! strings and macros' text are not mistaken for code), resolves each `crate::`, `super::`
//! and `use` path to the top-level module it names (`crates/core/tests/support/
//! import_paths.rs`, shared with the core's `tests/floors.rs`), and fails naming the file,
//! the line and the two modules. The crate graph keeps the rest: the engine cannot name the command
//! line (`dream`) at all, and the core (`dream-core`) cannot name the engine.
//!
//! The same reading keeps a second wall: the engine never prints. Its `lib.rs` denies
//! clippy's print lints too, but clippy over the engine's dependency tree costs CI minutes a
//! test run already spends building them, so this test is the check CI relies on.
//!
//! And a third: the state database is an edge. Only `edges/` names the database library
//! (`rusqlite`) or calls the methods that run SQL; everything above hands a
//! `edges::state::Connection` to `edges::state`'s functions, which hold every statement.

#[path = "../../core/tests/support/import_paths.rs"]
mod import_paths;

use std::path::{Path, PathBuf};

use import_paths::{module_of, rust_files, Paths};
use syn::visit::Visit;

/// The layers, lowest first. A module may use modules of lower layers only.
const LAYERS: &[&[&str]] = &[
    // What everything may return, and what a timer unit looks like.
    &["error", "schedule"],
    // Reading dream.toml.
    &["config"],
    // The world: inbox, sources, state, repository, lock, units; models and embedders.
    &["edges", "providers"],
    // What agents load and how it reaches them.
    &["agents"],
    // What a cycle does, stage by stage.
    &["stages"],
    // The one place that orders the stages; the steps several machines share memory by.
    &["cycle", "machines"],
    // The person's side, and the installation checked end to end.
    &["human", "doctor"],
    // Evaluations replay whole cycles.
    &["eval"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Every source file under `src`, in order, parsed; one that does not parse is a line in
/// `wrong` instead.
fn parsed(src: &Path, wrong: &mut Vec<String>) -> Vec<(PathBuf, syn::File)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a source file");
        match syn::parse_file(&text) {
            Ok(ast) => out.push((file, ast)),
            Err(e) => wrong.push(format!("{}: does not parse: {e}", file.display())),
        }
    }
    out
}

/// Every use of a module on the same layer or above, as `file:line: a -> b`.
fn upward_uses(src: &Path) -> Vec<String> {
    let mut wrong = Vec::new();
    for (file, ast) in parsed(src, &mut wrong) {
        let module = module_of(file.strip_prefix(src).expect("under src"));
        let Some(own) = module.first().cloned() else {
            continue; // lib.rs declares the modules
        };
        let Some(own_layer) = layer(&own) else {
            wrong.push(format!(
                "{}: module {own} is on no layer: add it to LAYERS in tests/layers.rs",
                file.display()
            ));
            continue;
        };
        let mut paths = Paths {
            module: module.clone(),
            found: Vec::new(),
        };
        paths.visit_file(&ast);
        for u in paths.found {
            if u.top == own {
                continue;
            }
            let Some(their) = layer(&u.top) else {
                continue; // an item of lib.rs itself (the `Error` re-export)
            };
            if their >= own_layer {
                wrong.push(format!(
                    "{}:{}: {own} (layer {own_layer}) uses crate::{} (layer {their})",
                    file.display(),
                    u.line,
                    u.top
                ));
            }
        }
    }
    wrong
}

/// The macros that write to a standard stream.
const PRINTS: &[&str] = &["print", "println", "eprint", "eprintln", "dbg"];

/// Collects every print macro a file invokes, outside `#[cfg(test)]` items.
struct Prints {
    found: Vec<(usize, String)>,
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

impl<'ast> Visit<'ast> for Prints {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test_only(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_only(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if let Some(last) = m.path.segments.last() {
            let name = last.ident.to_string();
            if PRINTS.contains(&name.as_str()) {
                self.found.push((last.ident.span().start().line, name));
            }
        }
        // A print inside another macro's arguments (`format!("{}", dbg!(x))`).
        if let Ok(inner) = m.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        ) {
            for e in &inner {
                self.visit_expr(e);
            }
        }
    }
}

/// Every print macro outside test code, as `file:line: name!`.
fn prints(src: &Path) -> Vec<String> {
    let mut wrong = Vec::new();
    for (file, ast) in parsed(src, &mut wrong) {
        let mut v = Prints { found: Vec::new() };
        v.visit_file(&ast);
        for (line, name) in v.found {
            wrong.push(format!("{}:{line}: {name}!", file.display()));
        }
    }
    wrong
}

#[test]
fn the_engine_never_prints() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let wrong = prints(&src);
    assert!(
        wrong.is_empty(),
        "the engine writes to a standard stream; return what to show and let the command \
         line print it (or log with tracing):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_print_is_found_however_it_is_written() {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let dir = dir.path();
    std::fs::write(
        dir.join("lib.rs"),
        r#"
// println!("in a comment") is not a print
fn f(x: u8) -> String {
    let _ = "eprintln!(in a string)";
    std::println!("a");
    let s = format!("{}", dbg!(x));
    if x > 1 { eprint!("b") }
    s
}
#[cfg(test)]
mod tests { fn g() { println!("a test may print"); } }
"#,
    )
    .unwrap();
    let found: Vec<String> = prints(dir)
        .iter()
        .map(|w| w.rsplit(": ").next().unwrap().to_string())
        .collect();
    assert_eq!(found, ["println!", "dbg!", "eprint!"], "{found:#?}");
}

#[test]
fn the_engine_folders_only_call_downwards() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let wrong = upward_uses(&src);
    assert!(
        wrong.is_empty(),
        "an engine module uses one on its own layer or above (move the shared piece down, \
         or pass it in):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn an_upward_use_is_found_however_it_is_written() {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let dir = dir.path();
    std::fs::create_dir_all(dir.join("edges")).unwrap();
    std::fs::create_dir_all(dir.join("agents")).unwrap();
    std::fs::write(dir.join("lib.rs"), "pub mod edges; pub mod agents;").unwrap();
    std::fs::write(
        dir.join("edges/mod.rs"),
        r#"
// crate::cycle in a comment is not a use
use crate::{error::Result, stages::skills};
fn f() -> &'static str { let _ = super::human::x(); "crate::eval in a string" }
mod inner { use super::super::agents::context; }
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("agents/mod.rs"),
        "use crate::edges::inbox; use super::cycle as c;",
    )
    .unwrap();
    let wrong = upward_uses(dir);
    let tops: Vec<&str> = wrong
        .iter()
        .map(|w| {
            w.rsplit("crate::")
                .next()
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(tops, ["cycle", "stages", "human", "agents"], "{wrong:#?}");
}

/// The database library, which only `edges/` may name.
const DATABASE: &str = "rusqlite";

/// The methods of a database connection or statement that run SQL: a call of one of these
/// names outside `edges/` is SQL outside the edge, however the connection was named.
const SQL_METHODS: &[&str] = &[
    "prepare",
    "prepare_cached",
    "execute",
    "execute_batch",
    "query_row",
    "query_map",
    "query_and_then",
    "pragma_query",
    "pragma_query_value",
    "pragma_update",
    "transaction",
    "unchecked_transaction",
    "rollback",
];

/// Files outside `edges/` that may still name the database library, each with why. Every
/// entry must still need to be here (`an_exception_to_the_sql_wall_is_still_needed`).
const DATABASE_NAMED: &[(&str, &str)] = &[
    (
        "error.rs",
        "the one error type, below the edges, keeps the database's error as the source of \
         `Error::State`, and its hint reads the error's code",
    ),
    (
        "stages/consolidate.rs",
        "names the transaction's type by the library's path; to be \
         `edges::state::Connection` once the consolidation policy has moved to the core",
    ),
    (
        "stages/passes.rs",
        "names the transaction's type by the library's path; to be \
         `edges::state::Connection` once the pass policy has moved to the core",
    ),
];

/// Collects every path naming the database library and every call of a method that runs
/// SQL.
struct Sql {
    found: Vec<(usize, String)>,
}

impl<'ast> Visit<'ast> for Sql {
    fn visit_use_path(&mut self, u: &'ast syn::UsePath) {
        if u.ident == DATABASE {
            self.found
                .push((u.ident.span().start().line, format!("use {DATABASE}")));
        }
        syn::visit::visit_use_path(self, u);
    }

    fn visit_use_name(&mut self, u: &'ast syn::UseName) {
        if u.ident == DATABASE {
            self.found
                .push((u.ident.span().start().line, format!("use {DATABASE}")));
        }
    }

    fn visit_item_extern_crate(&mut self, c: &'ast syn::ItemExternCrate) {
        if c.ident == DATABASE {
            self.found.push((
                c.ident.span().start().line,
                format!("extern crate {DATABASE}"),
            ));
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if let Some(first) = p.segments.first().filter(|s| s.ident == DATABASE) {
            self.found
                .push((first.ident.span().start().line, format!("{DATABASE}::")));
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let name = m.method.to_string();
        if SQL_METHODS.contains(&name.as_str()) {
            self.found
                .push((m.method.span().start().line, format!(".{name}(..)")));
        }
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        syn::visit::visit_macro(self, m);
        // A call inside a macro's arguments (`format!("{}", conn.execute(..)?)`).
        if let Ok(inner) = m.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        ) {
            for e in &inner {
                self.visit_expr(e);
            }
        }
    }
}

/// Every file under `src`, relative to it, with each use of the database library in it.
fn database_uses(src: &Path) -> Vec<(String, Vec<(usize, String)>)> {
    let mut wrong = Vec::new();
    let mut out = Vec::new();
    for (file, ast) in parsed(src, &mut wrong) {
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        let rel = file
            .strip_prefix(src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        let mut v = Sql { found: Vec::new() };
        v.visit_file(&ast);
        out.push((rel, v.found));
    }
    out
}

/// Every use of the database library outside `edges/` and the files `allowed` names, as
/// `file:line: what`.
fn sql_outside_edges(src: &Path, allowed: &[(&str, &str)]) -> Vec<String> {
    let mut wrong = Vec::new();
    for (rel, found) in database_uses(src) {
        if rel.starts_with("edges/") || allowed.iter().any(|(f, _)| *f == rel) {
            continue;
        }
        for (line, what) in found {
            wrong.push(format!("{}:{line}: {what}", src.join(&rel).display()));
        }
    }
    wrong
}

#[test]
fn only_the_edges_speak_sql() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let wrong = sql_outside_edges(&src, DATABASE_NAMED);
    assert!(
        wrong.is_empty(),
        "SQL or the database library outside crates/engine/src/edges/ (write a function in \
         edges/state.rs, or an edge file of its own, and call it):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn an_exception_to_the_sql_wall_is_still_needed() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let uses = database_uses(&src);
    for (file, why) in DATABASE_NAMED {
        let found = uses.iter().find(|(rel, _)| rel == file);
        assert!(
            found.is_some_and(|(_, f)| !f.is_empty()),
            "{file} is listed in DATABASE_NAMED ({why}) but no longer names the database: \
             remove it from the list"
        );
    }
}

#[test]
fn sql_outside_the_edges_is_found_however_it_is_written() {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let dir = dir.path();
    std::fs::create_dir_all(dir.join("edges")).unwrap();
    std::fs::create_dir_all(dir.join("stages")).unwrap();
    std::fs::write(dir.join("lib.rs"), "pub mod edges; pub mod stages;").unwrap();
    std::fs::write(
        dir.join("edges/mod.rs"),
        "use rusqlite::Connection; fn f(c: &Connection) { c.execute(\"x\", []).ok(); }",
    )
    .unwrap();
    std::fs::write(
        dir.join("stages/mod.rs"),
        r#"
// rusqlite in a comment, and conn.execute(..) too, are not code
use crate::edges::state::Connection;
use rusqlite::{params, OptionalExtension};
fn f(c: &Connection) -> String {
    let _ = "rusqlite::Connection in a string";
    let n: i64 = c.query_row("SELECT 1", [], |r| r.get(0)).unwrap();
    let e: Option<::rusqlite::Error> = None;
    format!("{n} {e:?} {}", c.execute_batch("VACUUM").is_ok())
}
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("stages/allowed.rs"),
        "fn g(e: rusqlite::Error) -> rusqlite::Error { e }",
    )
    .unwrap();
    let found: Vec<String> = sql_outside_edges(dir, &[("stages/allowed.rs", "a test")])
        .iter()
        .map(|w| {
            let (place, what) = w.rsplit_once(": ").unwrap();
            let line = place.rsplit(':').next().unwrap();
            format!("{line} {what}")
        })
        .collect();
    assert_eq!(
        found,
        [
            "4 use rusqlite",
            "7 .query_row(..)",
            "8 rusqlite::",
            "9 .execute_batch(..)"
        ],
        "{found:#?}"
    );
}
