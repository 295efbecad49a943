//! The memory repository edge (SPEC S3, S4 step 10): the only module that touches git or
//! writes files in the repository.
//!
//! Everything else builds a [`Change`] (files to write or delete plus a commit message)
//! and hands it here. A change is never written file by file into the working tree and
//! then committed: a crash between two files would leave half of it, which the next run
//! would commit as a person's hand edit. Instead a [`Batch`] builds every commit inside
//! git (blobs, trees, commits; nothing in the working tree, the branch not moved), and
//! [`Store::publish`] makes it happen in an order a crash cannot break: the intent journal
//! (`journal`), the commit point (the state transaction, or the branch moving), then the
//! working-tree files and the index, then the journal removed. [`Store::recover`], run by
//! every writing command before anything else, finishes or forgets what a crash left.
//!
//! dream never commits its inbox, its state or its temporary files, whatever `.gitignore`
//! says: they are left out of every status and every commit here, and listed in
//! `.git/info/exclude` so a person's own `git add -A` leaves them out too. Commits use the
//! repository's git identity, else `dream <dream@localhost>`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, Utc};
use git2::{Index, IndexEntry, IndexTime, ObjectType, Oid, Repository, Signature, StatusOptions};

use crate::edges::crash;
use crate::edges::fsutil::{self, write_atomic};
use crate::edges::journal::{self, CommitPoint, Journal};
use crate::error::{Context, Error, Result};
use dream_core::schema::{self, settings, Block, BlockFile, Card, Memory};

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
    /// Folders (relative to the root) that are never committed: `.dream` and the inbox.
    private: Vec<String>,
    /// The dreaming machine's name, when this memory is shared (issue 45): every commit
    /// made here carries it in a `Dream-Machine:` trailer, the fence a second dreamer
    /// is recognised by.
    machine: Option<String>,
    /// The remote, when this machine is a member of a shared memory: it never writes
    /// memory (only moves its copy forward to what it fetched).
    member_of: Option<String>,
}

/// The `.gitignore` of a memory repository.
pub const GITIGNORE: &str =
    "# dream: the inbox and the state are local, never committed\n/events/\n/.dream/\n";

/// Commits built inside git and not yet published: the branch they go on, its commit
/// when the batch began, and the tip of the chain built so far.
#[derive(Debug, Clone)]
pub struct Batch {
    branch: String,
    previous: Option<Oid>,
    tip: Option<Oid>,
    commits: Vec<Oid>,
}

impl Batch {
    /// The commits built so far, oldest first.
    pub fn commits(&self) -> &[Oid] {
        &self.commits
    }

    pub fn is_empty(&self) -> bool {
        self.commits.is_empty()
    }
}

/// What passes a batch's commit point (see `journal`): the branch moving, or a state
/// transaction that records the target commit (given `None` when there is nothing to
/// publish, so it still commits its own rows).
pub enum Point<'a> {
    Ref,
    State(Box<dyn FnOnce(Option<Oid>) -> Result<()> + 'a>),
}

/// A blob and its git file mode.
type Entry = (Oid, u32);

const MODE_FILE: u32 = 0o100644;
const MODE_EXEC: u32 = 0o100755;
const MODE_LINK: u32 = 0o120000;

/// Find the repo: `--repo`, else `$DREAM_REPO`, else the nearest folder upwards from `start`
/// holding `dream.toml` (as git finds `.git`).
pub fn discover(explicit: Option<&Path>, start: &Path) -> Result<PathBuf> {
    if let Some(dir) = explicit {
        if dir.join(settings::FILE).is_file() {
            return Ok(dir.to_path_buf());
        }
        return Err(Error::NotARepo {
            path: dir.to_path_buf(),
        });
    }
    let mut dir = Some(start);
    while let Some(d) = dir {
        if d.join(settings::FILE).is_file() {
            return Ok(d.to_path_buf());
        }
        dir = d.parent();
    }
    Err(Error::NotARepo {
        path: start.to_path_buf(),
    })
}

/// Ask libgit2 to flush every object, ref and index it writes to disk (once per process),
/// so a commit the journal names survives a power cut, not only a crash.
fn enable_fsync() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: a libgit2 global option set once, before this process uses a repository
        // from more than one thread; libgit2 is initialised by git2 on first use.
        unsafe {
            libgit2_sys::init();
            libgit2_sys::git_libgit2_opts(libgit2_sys::GIT_OPT_ENABLE_FSYNC_GITDIR as _, 1);
        }
    });
}

impl Store {
    pub fn open(root: &Path) -> Result<Store> {
        enable_fsync();
        let repo = Repository::open(root).context(|| {
            format!(
                "{} has a dream.toml but is not a git repository; run `git init` there",
                root.display()
            )
        })?;
        use dream_core::operations::machines::Role;
        let mut store = Store::with(root, repo);
        if let Some(m) = crate::edges::remote::membership(root)? {
            match m.role {
                Role::Dreamer => store.machine = Some(m.machine),
                Role::Member => store.member_of = Some(m.remote),
            }
        }
        Ok(store)
    }

    fn with(root: &Path, repo: Repository) -> Store {
        Store {
            root: root.to_path_buf(),
            repo,
            private: vec![".dream".into(), "events".into()],
            machine: None,
            member_of: None,
        }
    }

    /// Create a git repository at `root` (or open the one there).
    pub fn init_repo(root: &Path) -> Result<Store> {
        enable_fsync();
        let repo = match Repository::open(root) {
            Ok(r) => r,
            Err(_) => Repository::init(root)
                .context(|| format!("creating a git repository in {}", root.display()))?,
        };
        Ok(Store::with(root, repo))
    }

    /// Keep a folder of the repository out of every commit (the configured inbox).
    pub fn keep_out(&mut self, dir: &str) {
        let p = Path::new(dir);
        let rel = if p.is_absolute() {
            match p.strip_prefix(&self.root) {
                Ok(r) => r.to_path_buf(),
                Err(_) => return,
            }
        } else {
            p.to_path_buf()
        };
        let rel = rel
            .to_string_lossy()
            .trim_start_matches("./")
            .trim_end_matches('/')
            .to_string();
        if !rel.is_empty() && !rel.starts_with("..") && !self.private.contains(&rel) {
            self.private.push(rel);
        }
    }

    /// Whether a path (relative to the root) is dream's own: its state, its inbox, or one
    /// of its temporary files. Such a path is never committed.
    pub fn is_private(&self, rel: &str) -> bool {
        fsutil::is_temp(rel)
            || self.private.iter().any(|p| {
                rel == p
                    || rel
                        .strip_prefix(p.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            })
    }

    /// List dream's private paths in `.git/info/exclude` (once; a no-op when they are
    /// there), so git status never walks them and a person's `git add -A` leaves them out.
    pub fn exclude_private(&self) -> Result<()> {
        let path = self.repo.path().join("info").join("exclude");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut want: Vec<String> = self.private.iter().map(|p| format!("/{p}/")).collect();
        want.push(format!("{}*", fsutil::TMP_PREFIX));
        let missing: Vec<&String> = want
            .iter()
            .filter(|w| !text.lines().any(|l| l.trim() == w.as_str()))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let mut out = text.clone();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("# dream: its inbox, state and temporary files are never committed\n");
        for m in missing {
            out.push_str(m);
            out.push('\n');
        }
        write_atomic(&path, out.as_bytes())
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

    /// Paths git would commit (tracked edits, deletions, new files that are not ignored),
    /// dream's own paths left out; `refresh` also writes back to the git index the file
    /// times it re-checked (see [`Store::is_dirty_refreshing_index`]).
    fn status(&self, refresh: bool) -> Result<Vec<String>> {
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .update_index(refresh);
        if refresh {
            crash::point("refresh the git index").context(|| "refreshing the git index".into())?;
        }
        let statuses = self
            .repo
            .statuses(Some(&mut opts))
            .context(|| "reading git status".into())?;
        Ok(statuses
            .iter()
            .filter_map(|s| s.path().map(str::to_string))
            .filter(|p| !self.is_private(p))
            .collect())
    }

    /// True when the working tree has changes git would commit (dream's own paths aside).
    pub fn is_dirty(&self) -> Result<bool> {
        Ok(!self.status(false)?.is_empty())
    }

    /// [`Store::is_dirty`], also writing back to the git index the file times it
    /// re-checked. Files written in the same instant as the index are "racily clean": git
    /// cannot trust their times and re-hashes them on every status until the index is
    /// written again, so without this a timer's idle run would re-hash every file the last
    /// commit wrote. Writes only `.git/index` (never for a dry run).
    pub fn is_dirty_refreshing_index(&self) -> Result<bool> {
        Ok(!self.status(true)?.is_empty())
    }

    /// Leave a git index the next run can trust without re-hashing: wait until the file
    /// clock has moved past the files just committed (file times are coarse, a few
    /// milliseconds), then refresh the index so its entries are no longer "racily clean".
    /// The busy cycle pays this once instead of every following idle run.
    /// Only a cache is written, after the change happened: a failure is logged, never an
    /// error (the next status re-checks the files).
    pub fn settle_index(&self) {
        let settle = std::time::Duration::from_millis(15);
        std::thread::sleep(settle);
        if let Err(e) = self.is_dirty_refreshing_index() {
            tracing::warn!("the git index was not refreshed ({e}); the next run refreshes it");
        }
    }

    /// Paths with uncommitted changes, for messages (dream's own paths left out).
    pub fn dirty_paths(&self) -> Result<Vec<String>> {
        self.status(false)
    }

    /// The branch HEAD is on and its commit (`None` before the first commit). dream only
    /// ever commits onto a branch: a detached HEAD (or one on a commit of the past) would
    /// leave the branch behind, and a HEAD naming a branch that does not exist, in a
    /// repository that has history, would start an unrelated history; both are refused
    /// with what to do.
    pub fn branch(&self) -> Result<(String, Option<Oid>)> {
        let head = self
            .repo
            .find_reference("HEAD")
            .context(|| "reading HEAD".into())?;
        let branches = || -> Vec<String> {
            self.repo
                .branches(Some(git2::BranchType::Local))
                .map(|it| {
                    it.flatten()
                        .filter_map(|(b, _)| b.name().ok().flatten().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let Some(name) = head.symbolic_target().map(str::to_string) else {
            let at = head
                .target()
                .map(|o| o.to_string()[..10].to_string())
                .unwrap_or_default();
            let names = branches();
            let switch = names.first().map(String::as_str).unwrap_or("main");
            return Err(Error::Other(format!(
                "HEAD is detached at {at} (not on a branch): dream's commits would leave the branch behind. \
                 Run `git -C {} switch {switch}` (branches: {}) and run dream again; nothing was changed",
                self.root.display(),
                if names.is_empty() { "none".into() } else { names.join(", ") }
            )));
        };
        let target = self.repo.refname_to_id(&name).ok();
        if target.is_none() {
            let names = branches();
            if !names.is_empty() {
                let short = name.strip_prefix("refs/heads/").unwrap_or(&name);
                return Err(Error::Other(format!(
                    "HEAD names the branch {short}, which does not exist, while the memory's history is on {}: \
                     a commit here would start an unrelated history. Run `git -C {} switch {}` and run dream again; nothing was changed",
                    names.join(", "),
                    self.root.display(),
                    names[0]
                )));
            }
        }
        Ok((name, target))
    }

    /// Start a batch on the current branch.
    pub fn batch(&self) -> Result<Batch> {
        let (branch, previous) = self.branch()?;
        Ok(Batch {
            branch,
            previous,
            tip: previous,
            commits: Vec::new(),
        })
    }

    fn tree_of_commit(&self, commit: Option<Oid>) -> Result<Option<git2::Tree<'_>>> {
        match commit {
            None => Ok(None),
            Some(c) => self
                .repo
                .find_commit(c)
                .and_then(|c| c.tree())
                .map(Some)
                .context(|| format!("reading the tree of {c}")),
        }
    }

    /// The tree of `base` with `edits` applied (`None`: remove the path).
    fn tree_with(&self, base: Option<Oid>, edits: &[(String, Option<Entry>)]) -> Result<Oid> {
        let ctx = || "building a git tree".to_string();
        let mut index = Index::new().context(ctx)?;
        if let Some(tree) = self.tree_of_commit(base)? {
            index.read_tree(&tree).context(ctx)?;
        }
        for (path, _) in edits.iter().filter(|(_, e)| e.is_none()) {
            let _ = index.remove(Path::new(path), 0);
        }
        for (path, e) in edits {
            if let Some((id, mode)) = e {
                index.add(&index_entry(path, *id, *mode)).context(ctx)?;
            }
        }
        index.write_tree_to(&self.repo).context(ctx)
    }

    /// Commit `tree` on top of the batch (`None` when it changes nothing).
    fn commit_on(&self, batch: &mut Batch, tree: Oid, message: &str) -> Result<Option<Oid>> {
        let parent = match batch.tip {
            Some(p) => Some(
                self.repo
                    .find_commit(p)
                    .context(|| format!("reading commit {p}"))?,
            ),
            None => None,
        };
        if parent.as_ref().is_some_and(|p| p.tree_id() == tree) {
            return Ok(None);
        }
        let tree = self
            .repo
            .find_tree(tree)
            .context(|| "reading the git tree".into())?;
        let sig = self.signature()?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let message = self.signed(message);
        crash::point("git commit object").context(|| "committing".into())?;
        let oid = self
            .repo
            .commit(None, &sig, &sig, &message, &tree, &parents)
            .context(|| "committing".into())?;
        batch.tip = Some(oid);
        batch.commits.push(oid);
        Ok(Some(oid))
    }

    /// Add a commit of `change` to the batch: the tip's tree with exactly these paths
    /// written or removed. `None` when the files already had that content.
    pub fn stage(&self, batch: &mut Batch, change: &Change) -> Result<Option<Oid>> {
        if change.is_empty() {
            return Ok(None);
        }
        let tip = self.tree_of_commit(batch.tip)?;
        let mut edits = Vec::new();
        for (rel, contents) in &change.writes {
            if self.is_private(rel) || rel.starts_with('/') || rel.split('/').any(|c| c == "..") {
                return Err(Error::Other(format!(
                    "refusing to commit {rel}: dream never commits its state, its inbox or a path outside the repository"
                )));
            }
            let entry = match contents {
                Some(text) => {
                    let id = self
                        .repo
                        .blob(text.as_bytes())
                        .context(|| format!("storing {rel} in git"))?;
                    let mode = tip
                        .as_ref()
                        .and_then(|t| t.get_path(Path::new(rel)).ok())
                        .map(|e| e.filemode() as u32)
                        .filter(|m| *m == MODE_EXEC)
                        .unwrap_or(MODE_FILE);
                    Some((id, mode))
                }
                None => None,
            };
            edits.push((rel.clone(), entry));
        }
        drop(tip);
        let tree = self.tree_with(batch.tip, &edits)?;
        self.commit_on(batch, tree, &change.message)
    }

    /// Add a commit of the person's uncommitted edits to the batch (as `git add -A` would,
    /// dream's own paths left out). Returns the commit and the paths, `None` when the tree
    /// is clean. `message` is given the paths.
    pub fn stage_hand_edits(
        &self,
        batch: &mut Batch,
        refresh: bool,
        message: impl FnOnce(&[String]) -> String,
    ) -> Result<Option<(Oid, Vec<String>)>> {
        let paths = self.status(refresh)?;
        if paths.is_empty() {
            return Ok(None);
        }
        let mut edits = Vec::new();
        for rel in &paths {
            edits.push((rel.clone(), self.store_worktree_file(rel)?));
        }
        let tree = self.tree_with(batch.tip, &edits)?;
        match self.commit_on(batch, tree, &message(&paths))? {
            Some(oid) => Ok(Some((oid, paths))),
            None => {
                // Same tree as HEAD: only the index was stale (a crash after a commit).
                // A repair of a cache: the commit goes on without it if it fails.
                let _ = self.update_index(&edits_as_files(&edits));
                Ok(None)
            }
        }
    }

    /// A working-tree file stored as a blob (`None`: it is not there).
    fn store_worktree_file(&self, rel: &str) -> Result<Option<Entry>> {
        let abs = self.root.join(rel);
        let Ok(meta) = std::fs::symlink_metadata(&abs) else {
            return Ok(None);
        };
        let ctx = || format!("storing {rel} in git");
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&abs).context(ctx)?;
            let id = self
                .repo
                .blob(target.to_string_lossy().as_bytes())
                .context(ctx)?;
            return Ok(Some((id, MODE_LINK)));
        }
        if !meta.is_file() {
            return Ok(None);
        }
        let id = self.repo.blob_path(&abs).context(ctx)?;
        Ok(Some((id, file_mode(&meta))))
    }

    /// The blob a working-tree file would be (`None`: no file there).
    fn worktree_blob(&self, rel: &str) -> Option<Oid> {
        let abs = self.root.join(rel);
        let meta = std::fs::symlink_metadata(&abs).ok()?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&abs).ok()?;
            return Oid::hash_object(ObjectType::Blob, target.to_string_lossy().as_bytes()).ok();
        }
        if !meta.is_file() {
            return None;
        }
        Oid::hash_file(ObjectType::Blob, &abs).ok()
    }

    /// The files that differ between two commits, with what the working tree holds now.
    fn journal_files(&self, from: Option<Oid>, to: Oid) -> Result<Vec<journal::File>> {
        let old = self.tree_of_commit(from)?;
        let new = self.tree_of_commit(Some(to))?;
        let diff = self
            .repo
            .diff_tree_to_tree(old.as_ref(), new.as_ref(), None)
            .context(|| "diffing the change".into())?;
        let mut files = Vec::new();
        for d in diff.deltas() {
            let Some(path) = d.new_file().path().or(d.old_file().path()) else {
                continue;
            };
            let path = path.to_string_lossy().into_owned();
            let after = d.new_file();
            let (after, mode) = if after.exists() {
                (Some(after.id().to_string()), u32::from(after.mode()))
            } else {
                (None, 0)
            };
            files.push(journal::File {
                before: self.worktree_blob(&path).map(|o| o.to_string()),
                path,
                after,
                mode,
            });
        }
        Ok(files)
    }

    /// A commit message as this machine signs it: with its `Dream-Machine:` trailer when
    /// it dreams a shared memory.
    fn signed(&self, message: &str) -> String {
        match &self.machine {
            Some(m) => dream_core::operations::machines::with_machine(message, m),
            None => message.to_string(),
        }
    }

    /// Move the branch forward to `target` (a descendant of its tip: the memory a member
    /// fetched), files and index with it, through the journal like any change.
    pub fn fast_forward(&self, target: Oid) -> Result<Option<Oid>> {
        let mut batch = self.batch()?;
        if batch.previous == Some(target) {
            return Ok(None);
        }
        if let Some(p) = batch.previous {
            if !self.repo.graph_descendant_of(target, p).unwrap_or(false) {
                return Err(Error::Other(format!(
                    "the local copy has commits of its own that memory at the remote lacks \
                     (its branch is at {}); a member never writes memory: keep them with \
                     `git -C {} branch mine` and run `git -C {} reset --hard {}`",
                    &p.to_string()[..10],
                    self.root.display(),
                    self.root.display(),
                    &target.to_string()[..10]
                )));
            }
        }
        batch.tip = Some(target);
        batch.commits.push(target);
        self.publish(batch, "update", Point::Ref)
    }

    /// Take in `theirs` (memory at the remote, moved by a person's edits on the git host):
    /// a merge commit, or a fast-forward when this branch has nothing of its own. Where
    /// both changed the same lines the person's version is kept (as a hand edit made here
    /// is). Returns the new tip, `None` when `theirs` was already in.
    pub fn merge_in(&self, theirs: Oid, message: &str) -> Result<Option<Oid>> {
        let mut batch = self.batch()?;
        let Some(ours) = batch.previous else {
            return self.fast_forward(theirs);
        };
        if ours == theirs || self.repo.graph_descendant_of(ours, theirs).unwrap_or(false) {
            return Ok(None);
        }
        if self.repo.graph_descendant_of(theirs, ours).unwrap_or(false) {
            return self.fast_forward(theirs);
        }
        let ctx = || format!("merging the remote's {}", &theirs.to_string()[..10]);
        let (a, b) = (
            self.repo.find_commit(ours).context(ctx)?,
            self.repo.find_commit(theirs).context(ctx)?,
        );
        let mut opts = git2::MergeOptions::new();
        opts.file_favor(git2::FileFavor::Theirs);
        let mut index = self.repo.merge_commits(&a, &b, Some(&opts)).context(ctx)?;
        if index.has_conflicts() {
            return Err(Error::Other(format!(
                "memory at the remote was edited in a way that cannot be merged with this \
                 machine's cycles (a file removed on one side and changed on the other); \
                 merge `{}` into the branch by hand in {}, then run `dream sync`",
                theirs,
                self.root.display()
            )));
        }
        let tree = self
            .repo
            .find_tree(index.write_tree_to(&self.repo).context(ctx)?)
            .context(ctx)?;
        let sig = self.signature()?;
        let message = self.signed(message);
        crash::point("git merge commit").context(ctx)?;
        let oid = self
            .repo
            .commit(None, &sig, &sig, &message, &tree, &[&a, &b])
            .context(ctx)?;
        batch.tip = Some(oid);
        batch.commits.push(oid);
        self.publish(batch, "merge", Point::Ref)
    }

    /// Publish a batch (see the module comment): journal, commit point, working tree and
    /// index, journal removed. An error before the commit point leaves everything as it
    /// was; one after it leaves the journal, and the next command finishes the change.
    pub fn publish(&self, batch: Batch, kind: &str, point: Point<'_>) -> Result<Option<Oid>> {
        if let (Some(remote), false) = (&self.member_of, kind == "update") {
            return Err(Error::Usage(format!(
                "this machine is a member of the memory at {remote}: memory is written only by \
                 the machine that dreams it (a second writer would fork it). A card decided here \
                 (`dream review accept|reject|edit ID`) travels to it; undo and purge there, or \
                 edit memory at the git host (the dreamer takes the edit in at its next sync); \
                 nothing was changed here"
            )));
        }
        let target = match batch.tip {
            Some(t) if Some(t) != batch.previous => t,
            _ => {
                if let Point::State(commit) = point {
                    commit(None)?;
                }
                return Ok(None);
            }
        };
        let j = Journal {
            kind: kind.into(),
            commit_point: match point {
                Point::Ref => CommitPoint::Ref,
                Point::State(_) => CommitPoint::State,
            },
            branch: batch.branch.clone(),
            previous: batch.previous.map(|o| o.to_string()),
            target: target.to_string(),
            files: self.journal_files(batch.previous, target)?,
        };
        let forget = |e: Error| {
            let _ = journal::remove(&self.root);
            e
        };
        journal::write(&self.root, &j).map_err(forget)?;
        // The branch is locked before the commit point, so a branch git holds (a person's
        // git command running) fails the change while nothing has happened yet.
        let mover = self.lock_branch(&j, batch.previous).map_err(forget)?;
        match point {
            Point::Ref => {
                if let Err(e) = self.move_checked(mover, &j) {
                    return Err(forget(e));
                }
            }
            Point::State(commit) => {
                if let Err(e) = commit(Some(target)) {
                    // An error from the commit itself may come after the database made
                    // it durable: what decides is what the state records, read afresh.
                    match self.state_applied(target) {
                        Ok(false) => return Err(forget(e)),
                        Ok(true) => {
                            tracing::warn!("{e}; the state recorded the change all the same, so dream finishes it")
                        }
                        Err(e2) => return Err(undecided(e, e2)),
                    }
                }
                self.move_checked(mover, &j)
                    .map_err(|e| unfinished(e, &j))?;
            }
        }
        self.finish(&j, false).map_err(|e| unfinished(e, &j))?;
        Ok(Some(target))
    }

    /// Whether the state database records `target` as applied (a fresh connection, so it
    /// reads what is durable, not what a failed transaction held).
    fn state_applied(&self, target: Oid) -> Result<bool> {
        let path = crate::edges::state::path(&self.root);
        if !path.exists() {
            return Ok(false);
        }
        let st = crate::edges::state::State::open(&self.root)?;
        crate::edges::state::is_applied(&st.conn, &target.to_string())
    }

    /// Move the branch, and decide by where it is whether an error came before or after
    /// the move: libgit2 renames the new ref into place and only then flushes its folder,
    /// so a failed flush (an I/O error, a full disk) is reported for a branch that moved.
    /// Such a change happened: it is finished, never forgotten nor reported as failed.
    fn move_checked(&self, mover: BranchMove<'_>, j: &Journal) -> Result<()> {
        match mover.move_it(j) {
            Ok(()) => Ok(()),
            Err(e) if self.branch_at(j) => {
                tracing::warn!(
                    "{e}; {} is at {} all the same, so the change happened and dream finishes it",
                    j.branch,
                    &j.target[..10]
                );
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Whether the journal's branch is at its target, read from disk.
    fn branch_at(&self, j: &Journal) -> bool {
        self.repo
            .refname_to_id(&j.branch)
            .is_ok_and(|o| o.to_string() == j.target)
    }

    /// Commit one change on its own (the branch is its commit point).
    pub fn apply(&self, change: &Change) -> Result<Option<Oid>> {
        if change.is_empty() {
            return Ok(None);
        }
        let mut batch = self.batch()?;
        self.stage(&mut batch, change)?;
        self.publish(batch, "change", Point::Ref)
    }

    /// Lock the branch for moving it from `previous` to the journal's target: a branch that
    /// moved meanwhile, or one another process holds, is an error, never overwritten.
    fn lock_branch(&self, j: &Journal, previous: Option<Oid>) -> Result<BranchMove<'_>> {
        let target = parse_oid(&j.target)?;
        let ctx = || format!("moving {} to {}", j.branch, &j.target[..10]);
        crash::point(&format!("lock {}", j.branch)).context(ctx)?;
        let mut t = self.repo.transaction().context(ctx)?;
        t.lock_ref(&j.branch).context(ctx)?;
        let now = self.repo.refname_to_id(&j.branch).ok();
        if now != previous {
            return Err(Error::Other(format!(
                "{} moved while dream worked (to {}); nothing was changed, run again",
                j.branch,
                now.map(|o| o.to_string())
                    .unwrap_or_else(|| "nothing".into())
            )));
        }
        let log = format!("dream: {}", j.kind);
        t.set_target(&j.branch, target, None, &log).context(ctx)?;
        let folder = self
            .repo
            .path()
            .join(&j.branch)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.repo.path().to_path_buf());
        Ok(BranchMove { t, folder })
    }

    /// Move the branch from `previous` to the journal's target (see [`Store::lock_branch`]).
    fn move_branch(&self, j: &Journal, previous: Option<Oid>) -> Result<()> {
        let mover = self.lock_branch(j, previous)?;
        self.move_checked(mover, j)
    }

    /// Bring the working tree and the index to the journal's target, then remove the
    /// journal. When `recovering`, a file that holds neither what the change found nor
    /// what it writes was edited by a person since the crash: it is left as they made it
    /// (the next run records it as their edit; the change's version stays in git).
    fn finish(&self, j: &Journal, recovering: bool) -> Result<Vec<String>> {
        let mut kept = Vec::new();
        for f in &j.files {
            let now = self.worktree_blob(&f.path).map(|o| o.to_string());
            if now == f.after {
                continue;
            }
            if recovering && now != f.before {
                kept.push(f.path.clone());
                continue;
            }
            let abs = self.root.join(&f.path);
            match &f.after {
                None => fsutil::remove_file(&abs, &self.root)?,
                Some(id) => {
                    let blob = self
                        .repo
                        .find_blob(parse_oid(id)?)
                        .context(|| format!("reading {} from git", f.path))?;
                    write_worktree(&abs, blob.content(), f.mode)?;
                }
            }
        }
        // The index is only a cache, but one `git status` trusts: a change whose index was
        // not written is not finished, and the journal stays for the next command.
        self.update_index(&j.files)?;
        journal::remove(&self.root)?;
        Ok(kept)
    }

    /// Point the index entries of `files` at the working tree where it matches the commit
    /// (so status stays cheap), else at the commit's blob. A failure is logged and
    /// returned (see [`Store::finish`]).
    fn update_index(&self, files: &[journal::File]) -> Result<()> {
        let result = (|| -> std::result::Result<(), git2::Error> {
            let mut index = self.repo.index()?;
            index.read(true)?;
            for f in files {
                let rel = Path::new(&f.path);
                match &f.after {
                    None => {
                        let _ = index.remove_path(rel);
                    }
                    Some(id) => {
                        let now = self.worktree_blob(&f.path).map(|o| o.to_string());
                        if now.as_ref() == Some(id) && f.mode != MODE_LINK {
                            index.add_path(rel)?;
                        } else {
                            index.add(&index_entry(&f.path, Oid::from_str(id)?, f.mode))?;
                        }
                    }
                }
            }
            if crash::point("write the git index").is_err() {
                return Err(git2::Error::from_str("injected failure writing the index"));
            }
            index.write()
        })();
        result.map_err(|e| {
            tracing::warn!("the git index was not updated ({e}); the next dream command writes it");
            Error::Git {
                context: "writing the git index".into(),
                source: e,
            }
        })
    }

    /// Finish or forget the change an interrupted command left in the journal (see the
    /// module comment). `applied` says whether the state recorded a commit; it is asked
    /// only for changes whose commit point is the state. Returns a note for the report.
    pub fn recover(&self, applied: &mut dyn FnMut(Oid) -> Result<bool>) -> Result<Option<String>> {
        let Some(j) = journal::read(&self.root)? else {
            return Ok(None);
        };
        let target = parse_oid(&j.target)?;
        let previous = j.previous.as_deref().map(parse_oid).transpose()?;
        let head = self.repo.refname_to_id(&j.branch).ok();
        let reached = |h: Option<Oid>| {
            h.is_some_and(|h| {
                h == target || self.repo.graph_descendant_of(h, target).unwrap_or(false)
            })
        };
        let happened = match j.commit_point {
            CommitPoint::Ref => reached(head),
            CommitPoint::State => applied(target)?,
        };
        let short = j.target[..10].to_string();
        if !happened {
            journal::remove(&self.root)?;
            self.sweep_temp_files();
            tracing::warn!(kind = %j.kind, "an interrupted {} was discarded: it had not reached its commit point", j.kind);
            return Ok(Some(format!(
                "an interrupted {} had not reached its commit point: it was discarded, and nothing of it was kept",
                j.kind
            )));
        }
        let mut j = j;
        if !reached(head) {
            if head == previous {
                self.move_branch(&j, previous)?;
            } else {
                // The branch moved since the crash (a person's own commit): replay the
                // change's commits on top of it.
                let onto = head.ok_or_else(|| {
                    Error::Other(format!(
                        "the branch {} disappeared since an interrupted {}",
                        j.branch, j.kind
                    ))
                })?;
                let new_target = self.replay(previous, target, onto)?;
                j.files = self.journal_files(Some(onto), new_target)?;
                j.target = new_target.to_string();
                j.previous = Some(onto.to_string());
                journal::write(&self.root, &j)?;
                self.move_branch(&j, Some(onto))?;
            }
        }
        let kept = self.finish(&j, true)?;
        self.sweep_temp_files();
        tracing::warn!(kind = %j.kind, commit = %short, "an interrupted {} was completed", j.kind);
        let mut note = format!(
            "an interrupted {} (commit {short}) was completed: its files are now written",
            j.kind
        );
        if !kept.is_empty() {
            note.push_str(&format!(
                "; {} edited since were left as they are: {}",
                kept.len(),
                kept.join(", ")
            ));
        }
        Ok(Some(note))
    }

    /// Cherry-pick the first-parent chain `previous..target` onto `onto`.
    fn replay(&self, previous: Option<Oid>, target: Oid, onto: Oid) -> Result<Oid> {
        let mut chain = Vec::new();
        let mut at = Some(target);
        while let Some(id) = at.filter(|id| Some(*id) != previous) {
            let c = self
                .repo
                .find_commit(id)
                .context(|| format!("reading commit {id}"))?;
            at = c.parent_ids().next();
            chain.push(id);
        }
        chain.reverse();
        let mut tip = onto;
        for id in chain {
            let c = self
                .repo
                .find_commit(id)
                .context(|| format!("reading commit {id}"))?;
            let base = self
                .repo
                .find_commit(tip)
                .context(|| format!("reading commit {tip}"))?;
            let mut index = self
                .repo
                .cherrypick_commit(&c, &base, 0, None)
                .context(|| format!("replaying commit {id}"))?;
            if index.has_conflicts() {
                return Err(Error::Other(format!(
                    "an interrupted change (commit {id}) could not be replayed on the branch, which moved since: \
                     they change the same lines. Merge it by hand (`git cherry-pick {id}`), then remove .dream/journal.json"
                )));
            }
            let tree_id = index
                .write_tree_to(&self.repo)
                .context(|| "writing the git tree".into())?;
            let tree = self
                .repo
                .find_tree(tree_id)
                .context(|| "reading the git tree".into())?;
            crash::point("git commit object").context(|| "committing".into())?;
            tip = self
                .repo
                .commit(
                    None,
                    &c.author(),
                    &c.committer(),
                    &String::from_utf8_lossy(c.message_bytes()),
                    &tree,
                    &[&base],
                )
                .context(|| "committing".into())?;
        }
        Ok(tip)
    }

    /// Remove the temporary files a crash left in the working tree (dream's own, never
    /// a person's: they carry dream's prefix). Best effort.
    pub fn sweep_temp_files(&self) {
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                let Ok(rel) = p.strip_prefix(&self.root) else {
                    continue;
                };
                let rel = rel.to_string_lossy();
                if rel == ".git" || self.private.iter().any(|x| *x == rel) {
                    continue;
                }
                let Ok(ft) = e.file_type() else { continue };
                if fsutil::is_temp(&rel) && ft.is_file() {
                    let _ = std::fs::remove_file(&p);
                } else if ft.is_dir() {
                    stack.push(p);
                }
            }
        }
    }

    /// Refuse to work on memory that is in the middle of a git merge: a block file or the
    /// archive holding conflict markers would be read as facts from both sides.
    pub fn refuse_conflicts(&self) -> Result<()> {
        let mut files: Vec<String> = Block::ALL.iter().map(|b| b.path()).collect();
        files.push(schema::ARCHIVE.into());
        for rel in files {
            let Some(text) = self.read(&rel)? else {
                continue;
            };
            if let Some((line, marker)) = schema::conflict_marker(&text) {
                return Err(Error::Input(format!(
                    "{rel} line {line} is a merge-conflict marker ({marker:?}): resolve the conflict \
                     (keep the lines you want, delete the marker lines), then run again; nothing was changed"
                )));
            }
        }
        Ok(())
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
        let dir = self.root.join(schema::REVIEW_DIR);
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
            if schema::card_kind(&text) == schema::CardKind::Skill {
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
        let Ok(entry) = tree.get_path(Path::new(schema::REVIEW_DIR)) else {
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
    /// The memory a tree holds (a commit's, or one not committed yet).
    pub fn memory_in_tree(&self, tree: Oid, today: NaiveDate) -> Result<Memory> {
        let tree = self
            .repo
            .find_tree(tree)
            .context(|| format!("reading the tree {tree}"))?;
        let mut blocks = Vec::new();
        for b in Block::ALL {
            let text = match tree.get_path(Path::new(&b.path())) {
                Ok(entry) => Some(
                    self.repo
                        .find_blob(entry.id())
                        .map(|blob| String::from_utf8_lossy(blob.content()).into_owned())
                        .context(|| format!("reading {}", b.path()))?,
                ),
                Err(_) => None,
            };
            blocks.push(match text {
                Some(text) => BlockFile::parse(b, &text, today),
                None => BlockFile::empty(b),
            });
        }
        Ok(Memory::new(blocks))
    }

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

/// What rewriting the history to take a string out of it did (see [`Store::purge`]).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Purged {
    /// Commits of the branch, and how many of them were rewritten.
    pub commits: usize,
    pub rewritten: usize,
    /// Files (at any commit) that held the string.
    pub files: Vec<String>,
    /// The ref that keeps the old history, when there was something to rewrite.
    pub backup: Option<String>,
    /// The branch's new tip.
    pub head: Option<String>,
}

/// Taking a string out of the history (`dream purge`): every commit of the branch is
/// rebuilt with the string replaced in every file and message, the old tip is kept under a
/// backup ref, and the branch moves to the new tip through the journal like any change.
impl Store {
    /// What a purge of `needle` would rewrite (nothing is written when `apply` is false).
    /// `reword` gives each commit's message (when applied), from its message with the
    /// string replaced and its new tree: what a message records of the words the purge
    /// changed (a kept line's salience) is measured again on what they now say.
    pub fn purge(
        &self,
        needle: &str,
        replacement: &str,
        backup: &str,
        apply: bool,
        reword: &mut dyn FnMut(&str, Oid) -> Result<String>,
    ) -> Result<Purged> {
        let (branch, tip) = self.branch()?;
        let mut out = Purged::default();
        let Some(tip) = tip else {
            return Ok(out);
        };
        let needle_b = needle.as_bytes();
        let mut walk = self
            .repo
            .revwalk()
            .context(|| "walking the history".into())?;
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)
            .context(|| "walking the history".into())?;
        walk.push(tip).context(|| "walking the history".into())?;
        let mut map: std::collections::HashMap<Oid, Oid> = std::collections::HashMap::new();
        let mut trees: std::collections::HashMap<Oid, Oid> = std::collections::HashMap::new();
        let mut files = BTreeSet::new();
        let mut chain = Vec::new();
        for id in walk {
            let id = id.context(|| "walking the history".into())?;
            let c = self
                .repo
                .find_commit(id)
                .context(|| format!("reading commit {id}"))?;
            out.commits += 1;
            let tree = c.tree().context(|| format!("reading commit {id}"))?;
            let new_tree = self.purge_tree(
                &tree,
                "",
                needle_b,
                replacement,
                &mut trees,
                &mut files,
                apply,
            )?;
            let parents: Vec<Oid> = c.parent_ids().map(|p| *map.get(&p).unwrap_or(&p)).collect();
            let message = String::from_utf8_lossy(c.message_bytes()).into_owned();
            let mut new_message = message.replace(needle, replacement);
            if apply {
                new_message = reword(&new_message, new_tree)?;
            }
            let same = new_tree == tree.id()
                && new_message == message
                && parents.iter().eq(c.parent_ids().collect::<Vec<_>>().iter());
            if same {
                map.insert(id, id);
                continue;
            }
            out.rewritten += 1;
            if !apply {
                map.insert(id, id);
                continue;
            }
            let tree = self
                .repo
                .find_tree(new_tree)
                .context(|| "reading the git tree".into())?;
            let parent_commits: Vec<git2::Commit<'_>> = parents
                .iter()
                .map(|p| self.repo.find_commit(*p))
                .collect::<std::result::Result<_, _>>()
                .context(|| "reading a parent commit".into())?;
            let refs: Vec<&git2::Commit<'_>> = parent_commits.iter().collect();
            crash::point("git commit object").context(|| "committing".into())?;
            let new = self
                .repo
                .commit(
                    None,
                    &c.author(),
                    &c.committer(),
                    &new_message,
                    &tree,
                    &refs,
                )
                .context(|| format!("rewriting commit {id}"))?;
            map.insert(id, new);
            chain.push(new);
        }
        out.files = files.into_iter().collect();
        let new_tip = *map.get(&tip).unwrap_or(&tip);
        if !apply || new_tip == tip {
            return Ok(out);
        }
        crash::point("write the backup ref").context(|| "writing the backup ref".into())?;
        self.repo
            .reference(
                backup,
                tip,
                true,
                "dream purge: the history before the purge",
            )
            .context(|| format!("writing {backup}"))?;
        out.backup = Some(backup.to_string());
        let batch = Batch {
            branch,
            previous: Some(tip),
            tip: Some(new_tip),
            commits: chain,
        };
        self.publish(batch, "purge", Point::Ref)?;
        self.purge_reflogs(needle, replacement);
        out.head = Some(new_tip.to_string());
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn purge_tree(
        &self,
        tree: &git2::Tree<'_>,
        prefix: &str,
        needle: &[u8],
        replacement: &str,
        memo: &mut std::collections::HashMap<Oid, Oid>,
        files: &mut BTreeSet<String>,
        apply: bool,
    ) -> Result<Oid> {
        if let Some(done) = memo.get(&tree.id()) {
            return Ok(*done);
        }
        let ctx = || "rewriting a git tree".to_string();
        let mut entries = Vec::new();
        let mut changed = false;
        for e in tree.iter() {
            let name = String::from_utf8_lossy(e.name_bytes()).into_owned();
            let path = format!("{prefix}{name}");
            let id = match e.kind() {
                Some(ObjectType::Tree) => {
                    let sub = self.repo.find_tree(e.id()).context(ctx)?;
                    self.purge_tree(
                        &sub,
                        &format!("{path}/"),
                        needle,
                        replacement,
                        memo,
                        files,
                        apply,
                    )?
                }
                Some(ObjectType::Blob) => {
                    let blob = self.repo.find_blob(e.id()).context(ctx)?;
                    let content = blob.content();
                    if contains(content, needle) {
                        files.insert(path.clone());
                        let replaced = replace_bytes(content, needle, replacement.as_bytes());
                        if apply {
                            self.repo.blob(&replaced).context(ctx)?
                        } else {
                            Oid::hash_object(ObjectType::Blob, &replaced).context(ctx)?
                        }
                    } else {
                        e.id()
                    }
                }
                _ => e.id(),
            };
            changed |= id != e.id();
            entries.push((e.name_bytes().to_vec(), id, e.filemode()));
        }
        let new = if !changed {
            tree.id()
        } else if apply {
            let mut builder = self.repo.treebuilder(None).context(ctx)?;
            for (name, id, mode) in entries {
                builder.insert(name, id, mode).context(ctx)?;
            }
            builder.write().context(ctx)?
        } else {
            // A dry run only needs to know that it changes.
            Oid::hash_object(
                ObjectType::Blob,
                format!("{}{}", tree.id(), prefix).as_bytes(),
            )
            .context(ctx)?
        };
        memo.insert(tree.id(), new);
        Ok(new)
    }

    /// Take the string out of the reflogs (their messages are commit subjects).
    fn purge_reflogs(&self, needle: &str, replacement: &str) {
        let mut stack = vec![self.repo.path().join("logs")];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if let Ok(text) = std::fs::read_to_string(&p) {
                    if text.contains(needle) {
                        let _ = write_atomic(&p, text.replace(needle, replacement).as_bytes());
                    }
                }
            }
        }
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && memchr::memmem::find(hay, needle).is_some()
}

fn replace_bytes(hay: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut at = 0;
    for i in memchr::memmem::find_iter(hay, needle) {
        if i < at {
            continue;
        }
        out.extend_from_slice(&hay[at..i]);
        out.extend_from_slice(with);
        at = i + needle.len();
    }
    out.extend_from_slice(&hay[at..]);
    out
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
    pub fn note(&self) -> dream_core::operations::audit::CommitNote {
        dream_core::operations::audit::parse(&self.id.to_string(), self.time, &self.message)
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

/// A branch locked and set, moved when committed (dropped: unlocked, unmoved).
struct BranchMove<'r> {
    t: git2::Transaction<'r>,
    /// The folder of the branch's loose ref, flushed after the move.
    folder: PathBuf,
}

impl BranchMove<'_> {
    /// Move the branch, then flush its folder (libgit2 does too when asked to, but says
    /// nothing of which side of the rename a failure was on; see `Store::move_checked`).
    fn move_it(self, j: &Journal) -> Result<()> {
        let ctx = || format!("moving {} to {}", j.branch, &j.target[..10]);
        crash::point(&format!("move {}", j.branch)).context(ctx)?;
        self.t.commit().context(ctx)?;
        fsutil::sync_dir(&self.folder)
    }
}

/// An error while passing a commit point whose outcome could not be read back: the journal
/// stays, and the next command finishes or forgets the change by what the state records.
fn undecided(e: Error, read: Error) -> Error {
    Error::Other(format!(
        "{e}; whether the change was recorded could not be read back ({read}): the next dream \
         command finishes it or forgets it from .dream/journal.json, and nothing is lost"
    ))
}

/// An error after a change's commit point: the change happened, its files are not all
/// written yet, and the next command finishes them.
fn unfinished(e: Error, j: &Journal) -> Error {
    Error::Unfinished {
        commit: j.target[..10].to_string(),
        source: Box::new(e),
    }
}

fn parse_oid(s: &str) -> Result<Oid> {
    Oid::from_str(s).context(|| format!("{s} is not a commit id"))
}

fn file_mode(meta: &std::fs::Metadata) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o111 != 0 {
            return MODE_EXEC;
        }
    }
    let _ = meta;
    MODE_FILE
}

pub(crate) fn index_entry(path: &str, id: Oid, mode: u32) -> IndexEntry {
    IndexEntry {
        ctime: IndexTime::new(0, 0),
        mtime: IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode,
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: 0,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    }
}

fn edits_as_files(edits: &[(String, Option<Entry>)]) -> Vec<journal::File> {
    edits
        .iter()
        .map(|(path, e)| journal::File {
            path: path.clone(),
            before: None,
            after: e.map(|(id, _)| id.to_string()),
            mode: e.map(|(_, m)| m).unwrap_or(0),
        })
        .collect()
}

/// Write a file of the working tree as git holds it (a symbolic link, an executable).
fn write_worktree(abs: &Path, content: &[u8], mode: u32) -> Result<()> {
    #[cfg(unix)]
    if mode == MODE_LINK {
        let target = String::from_utf8_lossy(content).into_owned();
        crash::point(&format!("link {}", abs.display()))
            .context(|| format!("writing {}", abs.display()))?;
        let _ = std::fs::remove_file(abs);
        if let Some(p) = abs.parent() {
            std::fs::create_dir_all(p).context(|| format!("creating {}", p.display()))?;
        }
        return std::os::unix::fs::symlink(&target, abs)
            .context(|| format!("writing {}", abs.display()));
    }
    write_atomic(abs, content)?;
    #[cfg(unix)]
    if mode == MODE_EXEC {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(abs, std::fs::Permissions::from_mode(0o755));
    }
    let _ = mode;
    Ok(())
}
