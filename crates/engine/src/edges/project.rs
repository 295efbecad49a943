//! Which project a folder belongs to, for project scope (`dream_core::recall::scope`).
//!
//! An event says where it was said: a transcript's own working folder (Claude Code's
//! `cwd`, Codex's `session_meta.cwd`, kept in the event's `meta.cwd`), or an inbox event's
//! `meta.project` or `meta.cwd`. The project is the git repository around that folder,
//! named by its main working folder, so that every worktree of one repository is one
//! project (a worktree's `.git` file points to its git dir, whose `commondir` names the
//! repository's own); outside any repository, the folder itself. A folder that does not
//! exist on this machine (a transcript copied from another) is used as given. Resolution
//! reads only the folders' `.git` entries, and is cached for the life of the process.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

static CACHE: Mutex<Option<HashMap<String, String>>> = Mutex::new(None);

/// The project an event's metadata names, resolved: `meta.project`, else `meta.cwd`.
pub fn of_meta(meta: Option<&Value>) -> Option<String> {
    let m = meta?.as_object()?;
    let raw = ["project", "cwd"]
        .iter()
        .find_map(|k| m.get(*k).and_then(Value::as_str))
        .map(str::trim)
        // A NUL ends a path on every system: such a value names no folder.
        .filter(|s| !s.is_empty() && !s.contains('\0'))?;
    Some(resolve(raw))
}

/// The project of a folder: the repository around it (by its main working folder), else
/// the folder; a path that does not exist here, as given (without a trailing slash).
pub fn resolve(path: &str) -> String {
    if let Ok(mut cache) = CACHE.lock() {
        if let Some(p) = cache.get_or_insert_with(HashMap::new).get(path) {
            return p.clone();
        }
    }
    let resolved = resolve_uncached(path);
    if let Ok(mut cache) = CACHE.lock() {
        cache
            .get_or_insert_with(HashMap::new)
            .insert(path.to_string(), resolved.clone());
    }
    resolved
}

fn resolve_uncached(path: &str) -> String {
    let given = Path::new(path);
    let Ok(dir) = given.canonicalize() else {
        let t = path.trim_end_matches('/');
        return if t.is_empty() {
            path.to_string()
        } else {
            t.to_string()
        };
    };
    let mut at: Option<&Path> = Some(dir.as_path());
    while let Some(d) = at {
        let dot_git = d.join(".git");
        if dot_git.is_dir() {
            return shown(d);
        }
        if dot_git.is_file() {
            if let Some(main) = worktree_main(d, &dot_git) {
                return shown(&main);
            }
            return shown(d);
        }
        at = d.parent();
    }
    shown(&dir)
}

/// The main working folder of the repository a worktree's `.git` file points into.
fn worktree_main(worktree: &Path, dot_git: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dot_git).ok()?;
    let gitdir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let gitdir = worktree.join(gitdir);
    let common = match std::fs::read_to_string(gitdir.join("commondir")) {
        Ok(c) => gitdir.join(c.trim()),
        // A submodule's .git file points to its own git dir: it is its own project.
        Err(_) => return None,
    };
    let common = common.canonicalize().ok()?;
    // A repository's git dir is `<main>/.git`; a bare repository is its own name.
    if common.file_name().is_some_and(|n| n == ".git") {
        common.parent().map(Path::to_path_buf)
    } else {
        Some(common)
    }
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_folder_is_used_as_given_and_a_plain_folder_is_itself() {
        assert_eq!(resolve("/no/such/place/here/"), "/no/such/place/here");
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(
            resolve(&sub.display().to_string()),
            sub.canonicalize().unwrap().display().to_string()
        );
    }
}
