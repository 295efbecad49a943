//! The core does no I/O and reads no clock: the crate graph keeps the first half (no
//! dependency that touches files, the network, a database or git; chrono without its
//! `clock` feature, so `Utc::now()` does not even compile here), and this test keeps the
//! second by reading the core's own manifest and sources. It fails naming the file and
//! the line that breaks the rule.

use std::path::{Path, PathBuf};

/// Crates that do I/O, or exist to: none may be a dependency of the core.
const IO_CRATES: &[&str] = &[
    "rusqlite",
    "git2",
    "reqwest",
    "tiny_http",
    "tempfile",
    "fs2",
    "tracing",
    "tokio",
    "libc",
    "crossterm",
    "clap",
    "glob-walk",
    "walkdir",
    "memmap2",
];

/// What the core's code may not name: the standard library's I/O, processes, environment,
/// clocks and output.
const FORBIDDEN: &[&str] = &[
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
    "std::io::stdin",
    "std::io::stdout",
    "std::io::stderr",
    "File::open",
    "File::create",
    "SystemTime",
    "Instant::now",
    "Utc::now",
    "Local::now",
    "thread::sleep",
    "println!",
    "eprintln!",
    "print!(",
    "eprint!(",
    "dbg!(",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_core_depends_on_no_crate_that_does_io() {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let deps = manifest
        .split("[dependencies]")
        .nth(1)
        .unwrap()
        .split("\n[")
        .next()
        .unwrap();
    for line in deps.lines() {
        let name = line.split('=').next().unwrap_or_default().trim();
        assert!(
            !IO_CRATES.contains(&name),
            "dream-core depends on {name}, which does I/O: keep it in the dream crate"
        );
        if name == "chrono" {
            assert!(
                !line.contains("clock"),
                "dream-core enables chrono's clock: time comes in as an argument"
            );
        }
    }
}

#[test]
fn the_core_code_names_no_io_clock_or_output() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 20, "found the core's sources");
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for word in FORBIDDEN {
                if code.contains(word) {
                    found.push(format!("{}:{}: {word}", f.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the core does no I/O and reads no clock; move these to the dream crate:\n{}",
        found.join("\n")
    );
}
