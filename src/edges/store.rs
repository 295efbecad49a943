//! The memory repository edge (SPEC S3, S4 step 10): the only module that touches git or
//! writes files in the repository.
//!
//! Everything else builds a [`Change`] (files to write or delete plus a commit message)
//! and hands it here. [`Store::apply`] writes each file atomically, stages exactly those
//! paths and commits; if any write fails it puts back what it already wrote, so a failed
//! cycle never leaves a half-applied change that the next run would mistake for a hand
//! edit. Commits use the repository's git identity, else `dream <dream@localhost>`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, Utc};
use git2::{IndexAddOption, Oid, Repository, Signature, StatusOptions};

use crate::edges::fsutil::write_atomic;
use crate::error::{Context, Error, Result};
use dream_core::config;
use dream_core::memory::{self, Block, BlockFile, Card, Memory};

/// Files to write (`Some`) or delete (`None`), relative to the repo root, and the message
/// of the commit that records them.
#[derive(Debug, Clone, Default)]
pub struct Change {
    pub writes: Vec<(String, Option<String>)>,
    pub message: String,
}

impl Change {
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// Write (or replace) a file; a later write to the same path wins.
    pub fn write(&mut self, path: impl Into<String>, contents: String) {
        let path = path.into();
        self.writes.retain(|(p, _)| *p != path);
        self.writes.push((path, Some(contents)));
    }

    pub fn delete(&mut self, path: impl Into<String>) {
        let path = path.into();
        self.writes.retain(|(p, _)| *p != path);
        self.writes.push((path, None));
    }

    /// The block files whose rendering differs between two memories.
    pub fn blocks(before: &Memory, after: &Memory) -> Change {
        let mut change = Change::default();
        for b in Block::ALL {
            let new = after.block(b).render();
            if before.block(b).render() != new {
                change.write(b.path(), new);
            }
        }
        change
    }
}

pub struct Store {
    pub root: PathBuf,
    repo: Repository,
}

/// The `.gitignore` of a memory repository.
pub const GITIGNORE: &str =
    "# dream: the inbox and the state are local, never committed\n/events/\n/.dream/\n";

/// Find the repo: `--repo`, else `$DREAM_REPO`, else the nearest folder upwards from `start`
/// holding `dream.toml` (as git finds `.git`).
pub fn discover(explicit: Option<&Path>, start: &Path) -> Result<PathBuf> {
    if let Some(dir) = explicit {
        if dir.join(config::FILE).is_file() {
            return Ok(dir.to_path_buf());
        }
        return Err(Error::NotARepo {
            path: dir.to_path_buf(),
        });
    }
    let mut dir = Some(start);
    while let Some(d) = dir {
        if d.join(config::FILE).is_file() {
            return Ok(d.to_path_buf());
        }
        dir = d.parent();
    }
    Err(Error::NotARepo {
        path: start.to_path_buf(),
    })
}

impl Store {
    pub fn open(root: &Path) -> Result<Store> {
        let repo = Repository::open(root).context(|| {
            format!(
                "{} has a dream.toml but is not a git repository; run `git init` there",
                root.display()
            )
        })?;
        Ok(Store {
            root: root.to_path_buf(),
            repo,
        })
    }

    /// Create a git repository at `root` (or open the one there).
    pub fn init_repo(root: &Path) -> Result<Store> {
        let repo = match Repository::open(root) {
            Ok(r) => r,
            Err(_) => Repository::init(root)
                .context(|| format!("creating a git repository in {}", root.display()))?,
        };
        Ok(Store {
            root: root.to_path_buf(),
            repo,
        })
    }

    fn signature(&self) -> Result<Signature<'static>> {
        match self.repo.signature() {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Signature::now("dream", "dream@localhost")
                .context(|| "making a commit signature".into()),
        }
    }

    /// Read a file of the repo, `None` when it does not exist.
    pub fn read(&self, rel: &str) -> Result<Option<String>> {
        let path = self.root.join(rel);
        match std::fs::read_to_string(&path) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).context(|| format!("reading {}", path.display())),
        }
    }

    /// True when the working tree has changes git would commit (tracked edits, deletions,
    /// or new files that are not ignored).
    pub fn is_dirty(&self) -> Result<bool> {
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false);
        let statuses = self
            .repo
            .statuses(Some(&mut opts))
            .context(|| "reading git status".into())?;
        Ok(!statuses.is_empty())
    }

    /// [`Store::is_dirty`], also writing back to the git index the file times it
    /// re-checked. Files written in the same instant as the index are "racily clean": git
    /// cannot trust their times and re-hashes them on every status until the index is
    /// written again, so without this a timer's idle run would re-hash every file the last
    /// commit wrote. Writes only `.git/index` (never for a dry run).
    pub fn is_dirty_refreshing_index(&self) -> Result<bool> {
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .update_index(true);
        let statuses = self
            .repo
            .statuses(Some(&mut opts))
            .context(|| "reading git status".into())?;
        Ok(!statuses.is_empty())
    }

    /// Leave a git index the next run can trust without re-hashing: wait until the file
    /// clock has moved past the files just committed (file times are coarse, a few
    /// milliseconds), then refresh the index so its entries are no longer "racily clean".
    /// The busy cycle pays this once instead of every following idle run.
    pub fn settle_index(&self) -> Result<()> {
        let settle = std::time::Duration::from_millis(15);
        std::thread::sleep(settle);
        self.is_dirty_refreshing_index().map(|_| ())
    }

    /// Paths with uncommitted changes, for messages.
    pub fn dirty_paths(&self) -> Result<Vec<String>> {
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false);
        let statuses = self
            .repo
            .statuses(Some(&mut opts))
            .context(|| "reading git status".into())?;
        Ok(statuses
            .iter()
            .filter_map(|s| s.path().map(str::to_string))
            .collect())
    }

    /// Commit everything in the working tree (a person's hand edits), as `git add -A`.
    pub fn commit_all(&self, message: &str) -> Result<Option<Oid>> {
        let mut index = self
            .repo
            .index()
            .context(|| "opening the git index".into())?;
        index
            .add_all(["*"], IndexAddOption::DEFAULT, None)
            .and_then(|_| index.update_all(["*"], None))
            .and_then(|_| index.write())
            .context(|| "staging hand edits".into())?;
        self.commit_index(&mut index, message)
    }

    fn commit_index(&self, index: &mut git2::Index, message: &str) -> Result<Option<Oid>> {
        let tree_id = index
            .write_tree()
            .context(|| "writing the git tree".into())?;
        let tree = self
            .repo
            .find_tree(tree_id)
            .context(|| "reading the git tree".into())?;
        let parent = match self.repo.head() {
            Ok(h) => Some(h.peel_to_commit().context(|| "reading HEAD".into())?),
            Err(_) => None,
        };
        if let Some(p) = &parent {
            if p.tree_id() == tree_id {
                return Ok(None);
            }
        }
        let sig = self.signature()?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let oid = self
            .repo
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .context(|| "committing".into())?;
        Ok(Some(oid))
    }

    /// Write the change's files atomically and commit exactly those paths. Returns `None`
    /// when the files already had that content (nothing to commit). On failure, files
    /// already written are put back as they were.
    pub fn apply(&self, change: &Change) -> Result<Option<Oid>> {
        if change.is_empty() {
            return Ok(None);
        }
        let mut done: Vec<(PathBuf, Option<Vec<u8>>)> = Vec::new();
        let result = self.write_and_commit(change, &mut done);
        if result.is_err() {
            for (path, before) in done.into_iter().rev() {
                let _ = match before {
                    Some(bytes) => write_atomic(&path, &bytes),
                    None => std::fs::remove_file(&path).context(String::new),
                };
            }
            if let Ok(mut index) = self.repo.index() {
                let _ = index.read(true);
            }
        }
        result
    }

    fn write_and_commit(
        &self,
        change: &Change,
        done: &mut Vec<(PathBuf, Option<Vec<u8>>)>,
    ) -> Result<Option<Oid>> {
        let mut index = self
            .repo
            .index()
            .context(|| "opening the git index".into())?;
        for (rel, contents) in &change.writes {
            let path = self.root.join(rel);
            let before = std::fs::read(&path).ok();
            match contents {
                Some(text) => {
                    write_atomic(&path, text.as_bytes())?;
                    done.push((path, before));
                    index
                        .add_path(Path::new(rel))
                        .context(|| format!("staging {rel}"))?;
                }
                None => {
                    if before.is_some() {
                        std::fs::remove_file(&path)
                            .context(|| format!("removing {}", path.display()))?;
                        // A folder the removal left empty goes too (a moved skill's draft folder).
                        let mut dir = path.parent();
                        while let Some(d) =
                            dir.filter(|d| *d != self.root && d.starts_with(&self.root))
                        {
                            if std::fs::remove_dir(d).is_err() {
                                break;
                            }
                            dir = d.parent();
                        }
                        done.push((path, before));
                    }
                    let _ = index.remove_path(Path::new(rel));
                }
            }
        }
        index.write().context(|| "writing the git index".into())?;
        self.commit_index(&mut index, &change.message)
    }

    /// Every block of durable memory; a missing block file reads as an empty block.
    pub fn load_memory(&self, today: NaiveDate) -> Result<Memory> {
        let mut blocks = Vec::new();
        for b in Block::ALL {
            let bf = match self.read(&b.path())? {
                Some(text) => BlockFile::parse(b, &text, today),
                None => BlockFile::empty(b),
            };
            blocks.push(bf);
        }
        Ok(Memory::new(blocks))
    }

    /// Pending review cards, oldest first. A card that does not parse is reported, not
    /// fatal: the cycle goes on without it.
    pub fn pending_cards(&self) -> Result<(Vec<Card>, Vec<String>)> {
        let dir = self.root.join(memory::REVIEW_DIR);
        let mut cards = Vec::new();
        let mut problems = Vec::new();
        if !dir.exists() {
            return Ok((cards, problems));
        }
        let entries = std::fs::read_dir(&dir).context(|| format!("listing {}", dir.display()))?;
        for entry in entries {
            let entry = entry.context(|| format!("listing {}", dir.display()))?;
            let path = entry.path();
            if !path.is_file() || path.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let text =
                std::fs::read_to_string(&path).context(|| format!("reading {}", path.display()))?;
            if memory::card_kind(&text) == memory::CardKind::Skill {
                continue; // skill proposals are read by `skills`
            }
            match Card::parse(&text) {
                Ok(c) => cards.push(c),
                Err(e) => problems.push(format!("{}: {e}", path.display())),
            }
        }
        cards.sort_by(|a, b| a.created.cmp(&b.created).then(a.id.cmp(&b.id)));
        Ok((cards, problems))
    }

    /// Who commits: the repository's git identity (`Name <email>`), or `None` when there is
    /// none (commits then use `dream <dream@localhost>`).
    pub fn identity(&self) -> Option<String> {
        self.repo.signature().ok().map(|s| {
            format!(
                "{} <{}>",
                s.name().unwrap_or_default(),
                s.email().unwrap_or_default()
            )
        })
    }

    /// Where HEAD points: `Ok(branch)` on a branch (with or without commits), `Err(what)`
    /// when it is detached (or unreadable).
    pub fn branch(&self) -> std::result::Result<String, String> {
        if self.repo.head_detached().unwrap_or(false) {
            return Err(match self.head() {
                Some(oid) => format!("HEAD is detached at {}", &oid.to_string()[..10]),
                None => "HEAD is detached".into(),
            });
        }
        let head = self
            .repo
            .find_reference("HEAD")
            .map_err(|e| format!("HEAD cannot be read: {}", e.message()))?;
        let target = head
            .symbolic_target()
            .map(str::to_string)
            .ok_or_else(|| "HEAD is not a branch".to_string())?;
        Ok(target
            .strip_prefix("refs/heads/")
            .unwrap_or(&target)
            .to_string())
    }

    /// The id of HEAD, if there is a commit.
    pub fn head(&self) -> Option<Oid> {
        self.repo.head().ok().and_then(|h| h.target())
    }

    /// The first-parent history from HEAD, oldest first (empty before the first commit).
    pub fn history(&self) -> Result<Vec<HistoryCommit>> {
        if self.head().is_none() {
            return Ok(Vec::new());
        }
        let mut walk = self
            .repo
            .revwalk()
            .context(|| "walking the history".into())?;
        walk.push_head().context(|| "walking the history".into())?;
        walk.simplify_first_parent()
            .context(|| "walking the history".into())?;
        let mut out = Vec::new();
        for id in walk {
            let id = id.context(|| "walking the history".into())?;
            let c = self
                .repo
                .find_commit(id)
                .context(|| format!("reading commit {id}"))?;
            out.push(HistoryCommit::of(&c));
        }
        out.reverse();
        Ok(out)
    }

    /// The id of a file's blob at a commit (`None`: not there), to tell cheaply whether a
    /// commit changed it.
    pub fn blob_at(&self, commit: Oid, rel: &str) -> Result<Option<Oid>> {
        let tree = self
            .repo
            .find_commit(commit)
            .and_then(|c| c.tree())
            .context(|| format!("reading the tree of {commit}"))?;
        Ok(tree.get_path(Path::new(rel)).ok().map(|e| e.id()))
    }

    /// A text file as it was at a commit (`None`: not there).
    pub fn read_at(&self, commit: Oid, rel: &str) -> Result<Option<String>> {
        let Some(id) = self.blob_at(commit, rel)? else {
            return Ok(None);
        };
        let blob = self
            .repo
            .find_blob(id)
            .context(|| format!("reading {rel} at {commit}"))?;
        Ok(Some(String::from_utf8_lossy(blob.content()).into_owned()))
    }

    /// The facts that pending review cards at a commit propose to supersede (a pass never
    /// touches those: the person decides them). Cards that do not parse are left out.
    pub fn pinned_at(&self, commit: Oid) -> Result<BTreeSet<String>> {
        let tree = self
            .repo
            .find_commit(commit)
            .and_then(|c| c.tree())
            .context(|| format!("reading the tree of {commit}"))?;
        let mut pinned = BTreeSet::new();
        let Ok(entry) = tree.get_path(Path::new(memory::REVIEW_DIR)) else {
            return Ok(pinned);
        };
        let Ok(review) = self.repo.find_tree(entry.id()) else {
            return Ok(pinned);
        };
        for e in review.iter() {
            if e.kind() != Some(git2::ObjectType::Blob)
                || !e.name().is_some_and(|n| n.ends_with(".md"))
            {
                continue;
            }
            let blob = self
                .repo
                .find_blob(e.id())
                .context(|| format!("reading a card at {commit}"))?;
            let text = String::from_utf8_lossy(blob.content());
            // Most cards supersede nothing: only those are parsed.
            if !text.contains("supersedes") {
                continue;
            }
            if let Some(id) = Card::parse(&text).ok().and_then(|c| c.supersedes) {
                pinned.insert(id);
            }
        }
        Ok(pinned)
    }

    /// Durable memory as it was at a commit; a missing block reads as empty.
    pub fn memory_at(&self, commit: Oid, today: NaiveDate) -> Result<Memory> {
        let mut blocks = Vec::new();
        for b in Block::ALL {
            let bf = match self.read_at(commit, &b.path())? {
                Some(text) => BlockFile::parse(b, &text, today),
                None => BlockFile::empty(b),
            };
            blocks.push(bf);
        }
        Ok(Memory::new(blocks))
    }
}

/// One commit of the history, for read-only audits (`log`, `explain`, `undo`, `verify`).
#[derive(Debug, Clone)]
pub struct HistoryCommit {
    pub id: Oid,
    /// The first parent (`None` for the first commit).
    pub parent: Option<Oid>,
    pub message: String,
    pub time: DateTime<Utc>,
}

impl HistoryCommit {
    fn of(c: &git2::Commit<'_>) -> HistoryCommit {
        HistoryCommit {
            id: c.id(),
            parent: c.parent_ids().next(),
            message: String::from_utf8_lossy(c.message_bytes()).into_owned(),
            time: DateTime::from_timestamp(c.time().seconds(), 0).unwrap_or_default(),
        }
    }

    /// The message read back: mutation lines and `Dream-*` trailers.
    pub fn note(&self) -> dream_core::audit::CommitNote {
        dream_core::audit::parse(&self.id.to_string(), self.time, &self.message)
    }

    /// The value of a trailer such as `Dream-Stage`, if the message has it.
    pub fn trailer(&self, key: &str) -> Option<&str> {
        let prefix = format!("{key}:");
        self.message
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix(prefix.as_str()).map(str::trim))
    }

    pub fn subject(&self) -> &str {
        self.message.lines().next().unwrap_or_default()
    }

    pub fn short(&self) -> String {
        self.id.to_string()[..10].to_string()
    }
}

/// Read-only history, for `dream log`, `explain` and `undo` (they never rewrite it: an undo
/// is a new commit made with [`Store::apply`]).
impl Store {
    /// Commits reachable from HEAD, newest first, at most `limit`.
    pub fn recent_commits(&self, limit: usize) -> Result<Vec<HistoryCommit>> {
        let Some(head) = self.head() else {
            return Ok(Vec::new());
        };
        let mut walk = self.repo.revwalk().context(|| "walking history".into())?;
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)
            .context(|| "walking history".into())?;
        walk.push(head).context(|| "walking history".into())?;
        let mut out = Vec::new();
        for oid in walk.take(limit) {
            let oid = oid.context(|| "walking history".into())?;
            let c = self
                .repo
                .find_commit(oid)
                .context(|| format!("reading commit {oid}"))?;
            out.push(HistoryCommit::of(&c));
        }
        Ok(out)
    }

    fn tree_of(&self, id: &str) -> Result<(Option<git2::Tree<'_>>, git2::Tree<'_>)> {
        let oid = Oid::from_str(id).context(|| format!("{id} is not a commit id"))?;
        let c = self
            .repo
            .find_commit(oid)
            .context(|| format!("reading commit {id}"))?;
        let parent = match c.parent(0) {
            Ok(p) => Some(p.tree().context(|| format!("reading the parent of {id}"))?),
            Err(_) => None,
        };
        Ok((parent, c.tree().context(|| format!("reading commit {id}"))?))
    }

    /// Paths a commit changed against its first parent.
    pub fn changed_paths(&self, id: &str) -> Result<Vec<String>> {
        let (parent, tree) = self.tree_of(id)?;
        let diff = self
            .repo
            .diff_tree_to_tree(parent.as_ref(), Some(&tree), None)
            .context(|| format!("diffing commit {id}"))?;
        let mut out = Vec::new();
        for d in diff.deltas() {
            for f in [d.old_file(), d.new_file()] {
                if let Some(p) = f.path().and_then(|p| p.to_str()) {
                    if !out.iter().any(|x| x == p) {
                        out.push(p.to_string());
                    }
                }
            }
        }
        Ok(out)
    }

    /// A file as it was in a commit (`parent = true`: in the commit's first parent).
    pub fn file_at(&self, id: &str, path: &str, parent: bool) -> Result<Option<String>> {
        let (p, tree) = self.tree_of(id)?;
        let tree = if parent {
            match p {
                Some(t) => t,
                None => return Ok(None),
            }
        } else {
            tree
        };
        let entry = match tree.get_path(Path::new(path)) {
            Ok(e) => e,
            Err(_) => return Ok(None),
        };
        let blob = entry
            .to_object(&self.repo)
            .and_then(|o| o.peel_to_blob())
            .context(|| format!("reading {path} in {id}"))?;
        Ok(Some(String::from_utf8_lossy(blob.content()).into_owned()))
    }

    /// Whether a commit added or removed a line containing one of `needles`.
    pub fn diff_mentions(&self, id: &str, needles: &[String]) -> Result<bool> {
        let (parent, tree) = self.tree_of(id)?;
        let diff = self
            .repo
            .diff_tree_to_tree(parent.as_ref(), Some(&tree), None)
            .context(|| format!("diffing commit {id}"))?;
        let mut found = false;
        let _ = diff.foreach(
            &mut |_, _| true,
            None,
            None,
            Some(&mut |_, _, line| {
                if matches!(line.origin(), '+' | '-') {
                    let text = String::from_utf8_lossy(line.content());
                    if needles.iter().any(|n| text.contains(n.as_str())) {
                        found = true;
                        return false;
                    }
                }
                true
            }),
        );
        Ok(found)
    }
}
