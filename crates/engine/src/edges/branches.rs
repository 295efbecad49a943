//! The branches several machines share one memory through (issue 45), as git objects:
//! a member's events branch (`dream/events/<machine>`: append-only commits, each adding one
//! file of events in dream's own JSONL format, the member its only writer), what the
//! dreamer fetched of it, and the trailers of memory's commits the remote has and this
//! machine lacks. All of it is local git2 work; the network is `remote`'s.

use std::path::Path;

use git2::{Oid, Repository};

use crate::edges::crash;
use crate::error::{Context, Error, Result};
use dream_core::operations::machines::{trailer, FETCHED_PREFIX, MACHINE_TRAILER, THROUGH_TRAILER};

pub fn open(root: &Path) -> Result<Repository> {
    Repository::open(root).context(|| format!("opening the git repository in {}", root.display()))
}

/// The commit a ref names, if it exists.
pub fn tip(repo: &Repository, refname: &str) -> Option<Oid> {
    repo.refname_to_id(refname).ok()
}

/// The last state sequence number a member's branch ships (0: nothing shipped yet).
pub fn shipped_through(repo: &Repository, branch: &str) -> Result<i64> {
    let Some(t) = tip(repo, &format!("refs/heads/{branch}")) else {
        return Ok(0);
    };
    let c = repo
        .find_commit(t)
        .context(|| format!("reading the tip of {branch}"))?;
    Ok(trailer(c.message().unwrap_or_default(), THROUGH_TRAILER)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0))
}

/// Append a commit adding `path` (holding `text`) to a member's branch, its message
/// naming the last sequence number it ships. The branch moving is the commit point (the
/// member's watermark is its tip's trailer), and it moves only from where it was read.
pub fn commit_events(
    repo: &Repository,
    branch: &str,
    machine: &str,
    path: &str,
    text: &str,
    through: i64,
    events: usize,
) -> Result<Oid> {
    let refname = format!("refs/heads/{branch}");
    let ctx = || format!("committing events to {branch}");
    let parent = tip(repo, &refname)
        .map(|p| repo.find_commit(p))
        .transpose()
        .context(ctx)?;
    let mut index = git2::Index::new().context(ctx)?;
    if let Some(p) = &parent {
        index.read_tree(&p.tree().context(ctx)?).context(ctx)?;
    }
    let blob = repo.blob(text.as_bytes()).context(ctx)?;
    let entry = crate::edges::store::index_entry(path, blob, 0o100644);
    index.add(&entry).context(ctx)?;
    let tree = repo
        .find_tree(index.write_tree_to(repo).context(ctx)?)
        .context(ctx)?;
    let sig = git2::Signature::now("dream", "dream@localhost").context(ctx)?;
    let what = if path.starts_with(dream_core::operations::machines::DECISIONS_DIR) {
        "a decision".to_string()
    } else {
        format!("{events} events")
    };
    let message = format!("dream: {what} of {machine}\n\n{THROUGH_TRAILER}: {through}\n");
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    crash::point("commit the member's events").context(ctx)?;
    let oid = repo
        .commit(None, &sig, &sig, &message, &tree, &parents)
        .context(ctx)?;
    let mut t = repo.transaction().context(ctx)?;
    t.lock_ref(&refname).context(ctx)?;
    if tip(repo, &refname) != parent.as_ref().map(|p| p.id()) {
        return Err(Error::Other(format!(
            "{branch} moved while dream shipped events; nothing was changed, run `dream sync` again"
        )));
    }
    t.set_target(&refname, oid, None, "dream: ship events")
        .context(ctx)?;
    crash::point("move the member's branch").context(ctx)?;
    t.commit().context(ctx)?;
    Ok(oid)
}

/// The members whose branches the dreamer fetched: (machine, tip).
pub fn fetched_members(repo: &Repository) -> Result<Vec<(String, Oid)>> {
    let ctx = || "listing the members' fetched branches".to_string();
    let mut out = Vec::new();
    for r in repo
        .references_glob(&format!("{FETCHED_PREFIX}*"))
        .context(ctx)?
    {
        let r = r.context(ctx)?;
        let (Some(name), Some(target)) = (r.name(), r.target()) else {
            continue;
        };
        if let Some(machine) = name.strip_prefix(FETCHED_PREFIX) {
            out.push((machine.to_string(), target));
        }
    }
    out.sort();
    Ok(out)
}

/// One commit of a member's branch and the event files it added or changed.
pub struct MemberCommit {
    pub id: Oid,
    pub files: Vec<(String, Vec<u8>)>,
}

/// The commits of a member's branch after `mark`, oldest first, with the files each
/// added. A mark that is no ancestor of the tip (the branch was rewritten) is ignored and
/// the branch read whole: what was stored before is a duplicate by id, never stored twice.
pub fn new_commits(repo: &Repository, tip: Oid, mark: Option<Oid>) -> Result<Vec<MemberCommit>> {
    let ctx = || format!("reading the member commits up to {tip}");
    if mark == Some(tip) {
        return Ok(Vec::new());
    }
    let mut walk = repo.revwalk().context(ctx)?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)
        .context(ctx)?;
    walk.push(tip).context(ctx)?;
    if let Some(m) = mark {
        if repo.graph_descendant_of(tip, m).unwrap_or(false) {
            walk.hide(m).context(ctx)?;
        }
    }
    let mut out = Vec::new();
    for id in walk {
        let id = id.context(ctx)?;
        let c = repo.find_commit(id).context(ctx)?;
        let tree = c.tree().context(ctx)?;
        let parent_tree = c
            .parent(0)
            .ok()
            .map(|p| p.tree())
            .transpose()
            .context(ctx)?;
        let diff = repo
            .diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), None)
            .context(ctx)?;
        let mut files = Vec::new();
        for d in diff.deltas() {
            let f = d.new_file();
            if !f.exists() {
                continue;
            }
            let Some(path) = f.path() else { continue };
            let blob = repo.find_blob(f.id()).context(ctx)?;
            files.push((path.display().to_string(), blob.content().to_vec()));
        }
        out.push(MemberCommit { id, files });
    }
    Ok(out)
}

/// The `Dream-Machine:` trailer (if any) of every commit `theirs` has and `ours` lacks.
pub fn foreign_trailers(
    repo: &Repository,
    ours: Option<Oid>,
    theirs: Oid,
) -> Result<Vec<Option<String>>> {
    let ctx = || format!("reading the remote's commits up to {theirs}");
    let mut walk = repo.revwalk().context(ctx)?;
    walk.push(theirs).context(ctx)?;
    if let Some(o) = ours {
        walk.hide(o).context(ctx)?;
    }
    let mut out = Vec::new();
    for id in walk {
        let c = repo.find_commit(id.context(ctx)?).context(ctx)?;
        out.push(trailer(c.message().unwrap_or_default(), MACHINE_TRAILER).map(str::to_string));
    }
    Ok(out)
}

/// Whether `ours` has commits `theirs` lacks (so there is something to push).
pub fn ahead(repo: &Repository, ours: Option<Oid>, theirs: Option<Oid>) -> bool {
    match (ours, theirs) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(o), Some(t)) => o != t && !repo.graph_descendant_of(t, o).unwrap_or(false),
    }
}

/// Commits on `from` not on `base` (what waits to be shipped or pushed).
pub fn count_between(repo: &Repository, base: Option<Oid>, from: Option<Oid>) -> usize {
    let Some(f) = from else { return 0 };
    let Ok(mut walk) = repo.revwalk() else {
        return 0;
    };
    if walk.push(f).is_err() {
        return 0;
    }
    if let Some(b) = base {
        let _ = walk.hide(b);
    }
    walk.count()
}
