//! Which modules of its own crate a Rust source file names, read as the compiler reads it:
//! every `use` (grouped, renamed, globbed) and every path in code, resolved from `crate::`,
//! `super::` and `self::` to the module path it starts from, each with its line. Comments,
//! strings and the text of macros are not code, so they name nothing. Shared by the layering
//! tests of the core (`crates/core/tests/floors.rs`) and of the engine
//! (`crates/engine/tests/layers.rs`), which include this file.

// Each test that includes this file reads the part it needs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// Every `.rs` file under `dir`, in no particular order.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the crate's sources") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file, relative to `src`: `stages/quiz.rs` is `[stages, quiz]`,
/// `stages/mod.rs` is `[stages]`, `lib.rs` is `[]`.
pub fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// One use of a module of the crate: the line, the top-level module named, and the whole
/// path from the crate's root (`crate::a::b::C` is `[a, b, C]`).
pub struct Use {
    pub line: usize,
    pub top: String,
    pub path: Vec<String>,
}

/// Collects the module every path of a file names.
pub struct Paths {
    /// The module the visitor is in (the file's, plus inline `mod`s).
    pub module: Vec<String>,
    pub found: Vec<Use>,
}

impl Paths {
    /// Resolve a path's leading `crate`/`super`/`self` segments to a path from the root.
    fn resolve(&mut self, segments: &[String], line: usize) {
        let mut here = self.module.clone();
        let mut rest = segments;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                here.clear();
                rest = &rest[1..];
            }
            Some("super") | Some("self") => {
                while let Some(s) = rest.first() {
                    match s.as_str() {
                        "super" => {
                            here.pop();
                        }
                        "self" => {}
                        _ => break,
                    }
                    rest = &rest[1..];
                }
            }
            _ => return,
        }
        let path: Vec<String> = here.iter().chain(rest).cloned().collect();
        if let Some(top) = path.first() {
            self.found.push(Use {
                line,
                top: top.clone(),
                path,
            });
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.resolve(&prefix.clone(), n.ident.span().start().line);
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.resolve(&prefix.clone(), r.ident.span().start().line);
                prefix.pop();
            }
            syn::UseTree::Glob(g) => {
                self.resolve(&prefix.clone(), g.star_token.spans[0].start().line);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.module.push(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
        self.module.pop();
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if let Some(first) = p.segments.first() {
            self.resolve(&segments, first.ident.span().start().line);
        }
        syn::visit::visit_path(self, p);
    }
}
