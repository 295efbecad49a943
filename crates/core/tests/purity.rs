//! The core does no I/O and reads no clock. Two walls keep that, both mechanical:
//!
//! - its code: clippy's `disallowed_methods`, `disallowed_types` and `disallowed_macros`
//!   (`crates/core/clippy.toml`) and the print and dbg lints denied in `lib.rs`, run by
//!   `cargo clippy -p dream-core --all-targets -- -D warnings` in `.ci/run`. Clippy resolves
//!   every path, so a grouped, renamed or re-exported import is caught as surely as a
//!   written-out `std::fs::read_to_string`.
//! - its dependencies: this test reads every dependency table of the core's manifest
//!   (`[dependencies]`, `[build-dependencies]`, `[dev-dependencies]` and each
//!   `[target.'cfg(..)'.*]` one), takes each entry's real package name (a `package = ".."`
//!   rename included), and refuses any crate not on the list below: a crate that does I/O
//!   cannot slip in under another name or behind a target, and a new dependency is a
//!   decision someone writes down here, with why it does no I/O.

// A test reads the core's own manifest; the core library itself reads no file.
#![allow(clippy::disallowed_methods)]
use std::path::Path;

/// The crates the core may depend on, each with why it is pure. Anything else (rusqlite,
/// git2, reqwest, tempfile, fs2, tracing, tokio, libc, walkdir, ...) belongs in
/// `dream-engine`.
const PURE: &[(&str, &str)] = &[
    ("aho-corasick", "string search over a text in memory"),
    ("chrono", "dates and times as values; without its `clock` feature (checked below)"),
    ("glob", "`glob::Pattern` matching of names; its file-walking functions are disallowed by clippy.toml"),
    ("jsonc-parser", "parses and edits JSON text in memory"),
    ("linfa", "clustering over arrays in memory"),
    ("linfa-clustering", "DBSCAN over arrays in memory"),
    ("linfa-nn", "nearest-neighbour indexes in memory"),
    ("memchr", "byte search"),
    ("multiversion", "compiles a function for several instruction sets"),
    ("ndarray", "arrays"),
    ("proc-macro2", "tokens of Rust source held in memory (a dev-dependency of tests/floors.rs)"),
    ("rand", "seeded random numbers (the seed comes in; no OS entropy is read: `thread_rng` is never called)"),
    ("rand_xoshiro", "a seeded generator"),
    ("regex", "regular expressions"),
    ("regex-syntax", "parses a regular expression"),
    ("rustc-hash", "a hash function"),
    ("serde", "data model"),
    ("serde_json", "JSON text in memory"),
    ("serde_path_to_error", "error paths for serde"),
    ("sha2", "hashing"),
    ("shell-words", "splits a command line held as text"),
    ("struson", "streaming JSON from any `Read` the engine hands in"),
    ("syn", "parses Rust source text held in memory (a dev-dependency of tests/floors.rs)"),
    ("thiserror", "error types"),
    ("whatlang", "which language a text in memory is written in, from trigram tables compiled in"),
    ("toml", "TOML text in memory"),
    ("yaml-rust2", "YAML text in memory"),
];

/// One dependency entry: the table it is in, the key, and the package it names.
#[derive(Debug, PartialEq)]
struct Dep {
    table: String,
    key: String,
    package: String,
    features: Vec<String>,
    default_features: bool,
}

/// Every dependency entry of a manifest, from every table that can hold one.
fn dependencies(manifest: &str) -> Vec<Dep> {
    let doc: toml::Table = manifest.parse().expect("the manifest is TOML");
    let kinds = ["dependencies", "build-dependencies", "dev-dependencies"];
    let mut tables: Vec<(String, &toml::Table)> = Vec::new();
    for kind in kinds {
        if let Some(t) = doc.get(kind).and_then(|v| v.as_table()) {
            tables.push((kind.to_string(), t));
        }
    }
    if let Some(targets) = doc.get("target").and_then(|v| v.as_table()) {
        for (cfg, target) in targets {
            for kind in kinds {
                if let Some(t) = target.get(kind).and_then(|v| v.as_table()) {
                    tables.push((format!("target.{cfg}.{kind}"), t));
                }
            }
        }
    }
    let mut deps = Vec::new();
    for (table, entries) in tables {
        for (key, value) in entries {
            let detail = value.as_table();
            let field = |name: &str| detail.and_then(|d| d.get(name));
            deps.push(Dep {
                table: table.clone(),
                key: key.clone(),
                package: field("package")
                    .and_then(|p| p.as_str())
                    .unwrap_or(key)
                    .to_string(),
                features: field("features")
                    .and_then(|f| f.as_array())
                    .map(|a| {
                        a.iter()
                            .filter_map(|f| f.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
                default_features: field("default-features")
                    .and_then(|d| d.as_bool())
                    .unwrap_or(true),
            });
        }
    }
    deps
}

/// What is wrong with a manifest's dependencies, one line each (empty: nothing).
fn impure(manifest: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    for dep in dependencies(manifest) {
        if !PURE.iter().any(|(name, _)| *name == dep.package) {
            wrong.push(format!(
                "[{}] {} (package {}) is not a crate the core may use: if it does no I/O, add it \
                 to PURE in crates/core/tests/purity.rs with why; otherwise use it in dream-engine",
                dep.table, dep.key, dep.package
            ));
        }
        if dep.package == "chrono"
            && (dep.default_features || dep.features.iter().any(|f| f == "clock" || f == "now"))
        {
            wrong.push(format!(
                "[{}] chrono must have default-features = false and no `clock` feature: time \
                 comes in as an argument",
                dep.table
            ));
        }
    }
    wrong
}

#[test]
fn every_dependency_of_the_core_is_a_listed_pure_crate() {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .expect("the core's manifest");
    assert!(
        dependencies(&manifest).len() >= 10,
        "the manifest's dependencies were read"
    );
    let wrong = impure(&manifest);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_renamed_or_target_specific_io_crate_is_refused() {
    let manifest = r#"
[package]
name = "x"

[dependencies]
serde = "1"
db = { package = "rusqlite", version = "0.37" }
chrono = { version = "0.4", default-features = false, features = ["clock"] }

[target.'cfg(unix)'.dependencies]
libc = "0.2"

[build-dependencies]
walkdir = "2"
"#;
    let wrong = impure(manifest);
    assert_eq!(wrong.len(), 4, "{wrong:#?}");
    assert!(wrong.iter().any(|w| w.contains("db (package rusqlite)")));
    assert!(wrong.iter().any(|w| w.contains("chrono must have")));
    assert!(wrong
        .iter()
        .any(|w| w.contains("target.cfg(unix).dependencies] libc")));
    assert!(wrong
        .iter()
        .any(|w| w.contains("[build-dependencies] walkdir")));
}
