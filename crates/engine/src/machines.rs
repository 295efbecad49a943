//! One memory across machines and people (issue 45), in the order its steps run. Git is
//! the engine: exactly one machine dreams (runs the cycles and writes memory's branch,
//! fast-forward only); every other machine is a member that ships what happened on a
//! branch of its own and reads the memory the dreamer pushed. Nothing here waits on the
//! network longer than the membership's timeout (a session's hook, a second or two):
//! what cannot reach the remote stays local, committed, and goes at the next sync.
//!
//! The pure decisions (names, trailers, who moved the remote, the project filter) are
//! `dream_core::operations::machines`; the git command line is `edges::remote`, the
//! branches as git objects `edges::branches`, a member's events taken in
//! `edges::ingest::ingest_members`. The protocol and why it cannot conflict:
//! docs/ARCHITECTURE.md, "Machines".

use std::path::Path;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::edges::remote::{self, Pushed, Unreachable};
use crate::edges::state::{self, State};
use crate::edges::store::Store;
use crate::edges::{branches, guard, ingest, repo};
use crate::error::{Error, Result};
use dream_core::operations::machines::{
    self as protocol, Decision, Membership, Moved, Role, FETCHED_MEMORY, MEMORY_BRANCH,
};

/// At most this many events go in one commit of a member's branch.
const SHIP_BATCH: usize = 5000;

/// What a sync (or the dreamer's sync around a cycle) did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Synced {
    pub role: String,
    pub machine: String,
    pub remote: String,
    /// Member: events committed to its branch by this sync.
    pub shipped: usize,
    /// The push got through (or had nothing to send).
    pub pushed: bool,
    pub fetched: bool,
    /// Member: the local copy moved to this commit.
    pub updated: Option<String>,
    /// Dreamer: a person's edits at the remote taken in (the merge commit).
    pub took_in: Option<String>,
    /// Dreamer: members' events stored by this sync.
    pub ingested: usize,
    /// What did not get through, each with why; it is retried at the next sync.
    pub notes: Vec<String>,
}

/// The time a sync may spend on the network: each git command gets what is left of it,
/// at most the membership's timeout.
struct Clock {
    start: Instant,
    total: Duration,
    per_call: Duration,
}

impl Clock {
    fn new(m: &Membership, bound: Option<Duration>) -> Clock {
        let per_call = Duration::from_secs(m.timeout_secs);
        Clock {
            start: Instant::now(),
            total: bound.unwrap_or(per_call * 4),
            per_call,
        }
    }

    /// What the next call may take; `None` when the time is spent.
    fn left(&self) -> Option<Duration> {
        let left = self.total.checked_sub(self.start.elapsed())?;
        (left >= Duration::from_millis(50)).then(|| left.min(self.per_call))
    }
}

/// This repository's membership, or a usage error saying how to get one.
pub fn membership(root: &Path) -> Result<Membership> {
    remote::membership(root)?.ok_or_else(|| {
        Error::Usage(format!(
            "{} is not shared with other machines (no .dream/{}): run `dream init PATH --remote URL` \
             on the machine that dreams, `dream join URL PATH` on the others",
            root.display(),
            protocol::FILE
        ))
    })
}

/// This machine's name when none is given: the host's, made into a usable name.
pub fn default_machine() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    protocol::machine_from_host(host.trim())
}

/// `dream init PATH --remote URL`: make (or take) the memory at `root`, this machine its
/// dreamer, and create memory at the remote with the first push. A remote that already
/// holds a memory is refused: this machine joins it instead.
pub fn init_remote(
    root: &Path,
    url: &str,
    machine: &str,
    now: DateTime<Utc>,
) -> Result<(repo::Created, Synced)> {
    protocol::check_name("machine", machine).map_err(Error::Usage)?;
    let m = Membership::new(Role::Dreamer, url, machine);
    if let Some(old) = remote::membership(root)? {
        if old.remote != url || old.role != Role::Dreamer {
            return Err(Error::Usage(format!(
                "{} is already a {} of the memory at {}; nothing was changed",
                root.display(),
                old.role.as_str(),
                old.remote
            )));
        }
    }
    let limit = Duration::from_secs(m.timeout_secs);
    let refs = remote::ls_remote(url, limit)?.map_err(|e| {
        Error::Usage(format!(
            "{e}; check the URL and your access to it (nothing was created)"
        ))
    })?;
    let local = branches::open(root)
        .ok()
        .and_then(|r| branches::tip(&r, "HEAD"));
    let theirs = refs
        .iter()
        .find(|(name, _)| name == &format!("refs/heads/{MEMORY_BRANCH}"));
    if let Some((_, id)) = theirs {
        if local.map(|l| l.to_string()).as_deref() != Some(id.as_str()) && !is_ours(root, id) {
            return Err(Error::Usage(format!(
                "{url} already holds a memory (its {MEMORY_BRANCH} branch is at {}): one machine \
                 dreams it already; make this machine a member with `dream join {url} {}`",
                &id[..id.len().min(10)],
                root.display()
            )));
        }
    }
    let created = repo::create_at(root, now)?;
    remote::save_membership(root, &m)?;
    let synced = dreamer_sync(root, &m, now, None, false)?;
    Ok((created, synced))
}

/// Whether commit `id` is in the local history (an init run again after its push).
fn is_ours(root: &Path, id: &str) -> bool {
    let (Ok(r), Ok(oid)) = (branches::open(root), git2::Oid::from_str(id)) else {
        return false;
    };
    branches::tip(&r, "HEAD")
        .is_some_and(|h| h == oid || r.graph_descendant_of(h, oid).unwrap_or(false))
}

/// Who a member is, as `dream join` is told.
#[derive(Debug, Clone, Default)]
pub struct Joining {
    pub machine: String,
    pub person: Option<String>,
    pub projects: Vec<String>,
}

/// `dream join URL PATH`: a local copy of memory at `root` for reading, this machine a
/// member whose events are shipped to it. The copy is made beside `root` and renamed into
/// place whole, so a join killed at any point leaves nothing at `root` (only a temporary
/// folder, which the next join replaces).
pub fn join(url: &str, root: &Path, j: &Joining, now: DateTime<Utc>) -> Result<Membership> {
    protocol::check_name("machine", &j.machine).map_err(Error::Usage)?;
    if let Some(p) = &j.person {
        protocol::check_name("person", p).map_err(Error::Usage)?;
    }
    let mut m = Membership::new(Role::Member, url, &j.machine);
    m.person = j.person.clone();
    m.projects = j.projects.clone();
    if root.exists()
        && std::fs::read_dir(root)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(Error::Usage(format!(
            "{} is not an empty folder; give a new path for this memory's local copy",
            root.display()
        )));
    }
    let limit = Duration::from_secs(m.timeout_secs);
    // Cloned beside the path and renamed into place whole: a join killed mid-clone leaves
    // no half copy where the next `dream join` would find a folder that is not empty.
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = root.with_file_name(format!(
        "{}{}-{name}",
        crate::edges::fsutil::TMP_PREFIX,
        std::process::id()
    ));
    sweep_killed_joins(root, &name);
    let cloned = remote::clone(url, MEMORY_BRANCH, &tmp, limit)?;
    if let Err(e) = cloned {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(Error::Other(format!(
            "{e}; check the URL and your access to it, and that its dreamer ran `dream init PATH --remote {url}` (nothing was created)"
        )));
    }
    if !tmp.join(dream_core::schema::settings::FILE).is_file() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(Error::Usage(format!(
            "{url} is a git repository but not a dream memory (no dream.toml on its {MEMORY_BRANCH} branch); nothing was created"
        )));
    }
    // The local part (inbox, state) and the membership are made in the clone before it
    // takes its name, so the copy appears whole or not at all.
    let made = repo::create_at(&tmp, now).and_then(|_| remote::save_membership(&tmp, &m));
    if let Err(e) = made {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    if root.exists() {
        let _ = std::fs::remove_dir(root);
    }
    std::fs::rename(&tmp, root).map_err(|e| {
        let _ = std::fs::remove_dir_all(&tmp);
        Error::Io {
            context: format!("moving the clone into {}", root.display()),
            source: e,
        }
    })?;
    Ok(m)
}

/// Remove what a killed `dream join` of `root` left beside it: its temporary copies, each
/// named after a process that is gone.
fn sweep_killed_joins(root: &Path, name: &str) {
    let (Some(parent), prefix) = (root.parent(), crate::edges::fsutil::TMP_PREFIX) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let Some((pid, rest)) = n.strip_prefix(prefix).and_then(|r| r.split_once('-')) else {
            continue;
        };
        let gone = pid
            .parse::<u32>()
            .is_ok_and(|p| p == std::process::id() || !crate::edges::fsutil::process_alive(p));
        if rest == name && gone {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// `dream sync`: a member ships what is new, then fetches memory and moves its copy
/// forward; the dreamer fetches the members' branches, takes their events in, and pushes
/// memory if it is ahead. `bound` caps the time on the network (a session's hook).
pub fn sync(root: &Path, now: DateTime<Utc>, bound: Option<Duration>) -> Result<Synced> {
    let m = membership(root)?;
    match m.role {
        Role::Member => member_sync(root, &m, now, bound, true),
        Role::Dreamer => dreamer_sync(root, &m, now, bound, true),
    }
}

/// What a member's session hook does before it shows the copy: push what is already
/// committed for the remote and fetch memory, within `bound`. New transcript lines are not
/// read here (a first sync may read months of them): the timer's `dream sync` ships them.
/// `None` on the dreamer, or when the memory is not shared.
pub fn refresh(root: &Path, now: DateTime<Utc>, bound: Duration) -> Result<Option<Synced>> {
    match remote::membership(root)? {
        Some(m) if m.role == Role::Member => {
            member_sync(root, &m, now, Some(bound), false).map(Some)
        }
        _ => Ok(None),
    }
}

/// `dream review accept|reject|edit` on a member: the decision is committed to this
/// machine's branch (the branch moving is its commit point) and pushed with what else
/// waits; the dreamer applies it at its next sync or cycle.
pub fn decide_on_member(
    root: &Path,
    card: &str,
    verb: &str,
    reason: &str,
    text: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(Decision, Synced)> {
    let m = membership(root)?;
    let at = now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let d = Decision::new(card, verb, reason, text, &m, &at).map_err(Error::Usage)?;
    {
        let config = crate::config::load(root)?;
        let _writer = guard::begin(root, now, Some(&config.inbox.path))?;
        let git = branches::open(root)?;
        let branch = m.branch();
        let through = branches::shipped_through(&git, &branch)?;
        let json = serde_json::to_string(&d)
            .map_err(|e| Error::Other(format!("encoding decision {}: {e}", d.id)))?;
        let path = format!(
            "{}{}/{}-{}.jsonl",
            protocol::DECISIONS_DIR,
            now.format("%Y-%m-%d"),
            m.machine,
            d.id
        );
        branches::commit_events(&git, &branch, &m.machine, &path, &(json + "\n"), through, 0)?;
    }
    let synced = member_sync(root, &m, now, None, false)?;
    Ok((d, synced))
}

/// Before a cycle on the dreamer: fetch, and take in a person's edits at the remote (a
/// second dreamer stops here, before the cycle). `None` when the memory is not shared.
pub fn before_cycle(root: &Path, now: DateTime<Utc>) -> Result<Option<Synced>> {
    match remote::membership(root)? {
        None => Ok(None),
        Some(m) if m.role == Role::Member => Err(Error::Usage(format!(
            "this machine is a member of the memory at {}: its cycles run on the machine that dreams it. \
             Run `dream sync` to ship this machine's events and update the local copy",
            m.remote
        ))),
        Some(m) => dreamer_fetch(root, &m, now, None, false).map(Some),
    }
}

/// After a cycle on the dreamer: push memory (taking in a person's edits at the remote
/// first if the push is refused for them).
pub fn after_cycle(root: &Path, now: DateTime<Utc>) -> Result<Option<Synced>> {
    match remote::membership(root)? {
        Some(m) if m.role == Role::Dreamer => dreamer_sync(root, &m, now, None, false).map(Some),
        _ => Ok(None),
    }
}

fn record(root: &Path, what: &str, problem: Option<&str>, now: DateTime<Utc>) -> Result<()> {
    let st = State::open(root)?;
    state::put_remote_log(&st.conn, what, problem, now)
}

/// The member's side: ship, push its branch, fetch memory, move the copy forward.
fn member_sync(
    root: &Path,
    m: &Membership,
    now: DateTime<Utc>,
    bound: Option<Duration>,
    read_new: bool,
) -> Result<Synced> {
    let config = crate::config::load(root)?;
    let _writer = guard::begin(root, now, Some(&config.inbox.path))?;
    let clock = Clock::new(m, bound);
    let mut out = synced(m);
    if read_new {
        out.shipped = ship(root, &config, m, now)?;
    }
    let git = branches::open(root)?;
    let branch = m.branch();
    let local = branches::tip(&git, &format!("refs/heads/{branch}"));
    let tracking = format!("refs/remotes/origin/{branch}");
    if local.is_some() && local != branches::tip(&git, &tracking) {
        let spec = format!("refs/heads/{branch}:refs/heads/{branch}");
        let pushed = match clock.left() {
            None => Err(Unreachable("no time left in this sync".into())),
            Some(t) => remote::push(root, &m.remote, &spec, t)?,
        };
        match pushed {
            Ok(Pushed::Done) => {
                if let Some(l) = local {
                    let _ = git.reference(&tracking, l, true, "dream: shipped");
                }
                out.pushed = true;
                record(root, "push", None, now)?;
            }
            // One writer per branch: a refusal means a second machine took this name.
            Ok(Pushed::Refused(why)) => {
                let e = format!(
                    "the remote refused {branch} ({why}): another machine ships under the name {:?}; \
                     give this one its own name (`machine` in {})",
                    m.machine,
                    remote::membership_path(root).display()
                );
                record(root, "push", Some(&e), now)?;
                return Err(Error::Other(e));
            }
            Err(e) => {
                record(root, "push", Some(&e.0), now)?;
                out.notes.push(format!(
                    "{e}; the events wait here, committed, for the next sync"
                ));
            }
        }
    } else {
        out.pushed = true;
    }
    let spec = format!("+refs/heads/{MEMORY_BRANCH}:{FETCHED_MEMORY}");
    if fetch(root, m, &clock, &[spec], now, &mut out)? {
        if let Some(theirs) = branches::tip(&git, FETCHED_MEMORY) {
            let store = Store::open(root)?;
            if store.is_dirty()? {
                out.notes.push(format!(
                    "the local copy has edits of its own ({}): it was not updated. Memory is written by the machine that dreams; undo them with `git -C {} checkout -- .`",
                    store.dirty_paths()?.join(", "),
                    root.display()
                ));
            } else if store.fast_forward(theirs)?.is_some() {
                out.updated = Some(theirs.to_string());
            }
        }
    }
    Ok(out)
}

fn synced(m: &Membership) -> Synced {
    Synced {
        role: m.role.as_str().into(),
        machine: m.machine.clone(),
        remote: m.remote.clone(),
        ..Synced::default()
    }
}

/// Fetch `specs`, recording the try; `false` (with a note) when the remote was not reached.
fn fetch(
    root: &Path,
    m: &Membership,
    clock: &Clock,
    specs: &[String],
    now: DateTime<Utc>,
    out: &mut Synced,
) -> Result<bool> {
    let got = match clock.left() {
        None => Err(Unreachable("no time left in this sync to fetch".into())),
        Some(t) => remote::fetch(root, &m.remote, specs, t)?,
    };
    match got {
        Ok(()) => {
            record(root, "fetch", None, now)?;
            out.fetched = true;
            Ok(true)
        }
        Err(e) => {
            record(root, "fetch", Some(&e.0), now)?;
            out.notes
                .push(format!("{e}; this machine goes on with the copy it has"));
            Ok(false)
        }
    }
}

/// Take this machine's new inbox and transcript lines into its state (split into turns,
/// secrets redacted: what leaves the machine is what a cycle here would store), then
/// commit every stored event not yet shipped to its branch, in batches. Returns how many
/// were committed. The branch's tip names the last one shipped, so a kill anywhere ships
/// nothing twice that the dreamer would store twice (ids are the dedupe).
fn ship(
    root: &Path,
    config: &dream_core::schema::settings::Config,
    m: &Membership,
    now: DateTime<Utc>,
) -> Result<usize> {
    let mut st = State::open(root)?;
    let cycle = format!("sync-{}", now.format("%Y%m%dT%H%M%SZ"));
    let tx = st.begin()?;
    let read = ingest::ingest_inbox(&tx, root, config, &cycle, now)?;
    for w in &read.watermarks {
        state::put_watermark(&tx, w, now)?;
    }
    state::commit(tx, "storing this machine's new events")?;
    let git = branches::open(root)?;
    let branch = m.branch();
    let mut shipped = 0;
    loop {
        let through = branches::shipped_through(&git, &branch)?;
        let batch = state::events_after(&st.conn, through, SHIP_BATCH)?;
        let Some(last) = batch.last().map(|(seq, _, _)| *seq) else {
            break;
        };
        let mut text = String::new();
        let mut n = 0;
        for (_, mut e, project) in batch {
            if !m.ships(project.as_deref()) {
                continue;
            }
            e.meta = Some(protocol::stamp(
                e.meta.take(),
                &m.machine,
                m.person.as_deref(),
            ));
            let line = serde_json::to_string(&e)
                .map_err(|err| Error::Other(format!("encoding event {}: {err}", e.id)))?;
            text.push_str(&line);
            text.push('\n');
            n += 1;
        }
        let path = format!(
            "{}/{}-{through:012}.jsonl",
            now.format("%Y-%m-%d"),
            m.machine
        );
        branches::commit_events(&git, &branch, &m.machine, &path, &text, last, n)?;
        shipped += n;
    }
    Ok(shipped)
}

/// The dreamer's fetch of memory and the members' branches, and a person's edits at the
/// remote taken in (a second dreamer's cycles stop it with an error naming both).
fn dreamer_fetch(
    root: &Path,
    m: &Membership,
    now: DateTime<Utc>,
    bound: Option<Duration>,
    ingest_members: bool,
) -> Result<Synced> {
    let config = crate::config::load(root)?;
    let _writer = guard::begin(root, now, Some(&config.inbox.path))?;
    let clock = Clock::new(m, bound);
    let mut out = synced(m);
    if fetch(root, m, &clock, &fetch_specs(), now, &mut out)? {
        out.took_in = take_in(root, m)?;
    }
    if ingest_members {
        let mut st = State::open(root)?;
        let tx = st.begin()?;
        let mut read = dream_core::sources::ingested::Ingested::default();
        let cycle = format!("sync-{}", now.format("%Y%m%dT%H%M%SZ"));
        ingest::ingest_members(&tx, root, &config, &cycle, now, &mut read)?;
        state::commit(tx, "storing the members' events")?;
        out.ingested = read.new_events;
    }
    Ok(out)
}

/// Everything at the remote, into `refs/remotes/origin/`: memory's branch and every
/// member's (missing ones are no error, unlike a named branch).
fn fetch_specs() -> Vec<String> {
    vec!["+refs/heads/*:refs/remotes/origin/*".into()]
}

/// Memory at the remote beyond this machine's: nothing, a person's edits (merged in, a
/// commit signed by this machine), or another dreamer's cycles (an error; nothing moves).
fn take_in(root: &Path, m: &Membership) -> Result<Option<String>> {
    let git = branches::open(root)?;
    let Some(theirs) = branches::tip(&git, FETCHED_MEMORY) else {
        return Ok(None);
    };
    let store = Store::open(root)?;
    let ours = store.head();
    match protocol::classify(&branches::foreign_trailers(&git, ours, theirs)?) {
        Moved::Nothing => Ok(None),
        Moved::Dreamer(other) => Err(Error::Other(protocol::second_dreamer(
            &m.machine, &other, &m.remote,
        ))),
        Moved::HandEdits if store.is_dirty()? => Ok(None),
        Moved::HandEdits => {
            let msg = "dream: take in edits made at the remote\n\nMemory's branch at the remote \
                       had commits of a person's (no dreaming machine named); they are merged \
                       here, the person's version kept where both changed a line.\n";
            Ok(store.merge_in(theirs, msg)?.map(|o| o.to_string()))
        }
    }
}

/// The dreamer's sync: fetch and take in (and, for `dream sync`, store the members'
/// events), then push memory when this machine is ahead; a push refused for a person's
/// edits is taken in and tried once more.
fn dreamer_sync(
    root: &Path,
    m: &Membership,
    now: DateTime<Utc>,
    bound: Option<Duration>,
    ingest_members: bool,
) -> Result<Synced> {
    let mut out = dreamer_fetch(root, m, now, bound, ingest_members)?;
    let clock = Clock::new(m, bound);
    for attempt in 0..2 {
        let git = branches::open(root)?;
        let (branch, ours) = Store::open(root)?.branch()?;
        if !branches::ahead(&git, ours, branches::tip(&git, FETCHED_MEMORY)) {
            out.pushed = true;
            break;
        }
        let spec = format!("{branch}:refs/heads/{MEMORY_BRANCH}");
        let pushed = match clock.left() {
            None => Err(Unreachable("no time left in this sync to push".into())),
            Some(t) => remote::push(root, &m.remote, &spec, t)?,
        };
        match pushed {
            Ok(Pushed::Done) => {
                if let Some(o) = ours {
                    let _ = git.reference(FETCHED_MEMORY, o, true, "dream: pushed");
                }
                record(root, "push", None, now)?;
                out.pushed = true;
                break;
            }
            Ok(Pushed::Refused(why)) if attempt == 0 => {
                tracing::info!("push refused ({why}): fetching what moved the remote");
                let more = dreamer_fetch(root, m, now, bound, false)?;
                out.took_in = more.took_in.or(out.took_in.take());
                out.notes.extend(more.notes);
            }
            Ok(Pushed::Refused(why)) => {
                let e = format!(
                    "the remote refused the push again ({why}); run `dream sync` once it settles"
                );
                record(root, "push", Some(&e), now)?;
                out.notes.push(e);
            }
            Err(e) => {
                record(root, "push", Some(&e.0), now)?;
                out.notes.push(format!(
                    "{e}; memory stays committed here and is pushed at the next sync"
                ));
                break;
            }
        }
    }
    Ok(out)
}

/// What `dream status` and `dream doctor` show of a shared memory.
#[derive(Debug, Clone, Serialize)]
pub struct Shared {
    pub membership: Membership,
    pub fetch: Option<state::RemoteLog>,
    pub push: Option<state::RemoteLog>,
    /// Every member whose events the dreamer took in (on a member: none).
    pub members: Vec<state::MemberMark>,
    /// Member: events stored here and not yet committed to its branch.
    pub events_waiting: i64,
    /// Commits made here and not yet at the remote (a member's branch, or memory).
    pub commits_waiting: usize,
}

/// The shared memory's state at `root`; `None` when it is not shared.
pub fn shared(root: &Path) -> Result<Option<Shared>> {
    let Some(m) = remote::membership(root)? else {
        return Ok(None);
    };
    let (logs, members, after) = match State::open_read_only(root)? {
        Some(st) => {
            let git = branches::open(root)?;
            let through = branches::shipped_through(&git, &m.branch())?;
            (
                state::remote_logs(&st.conn)?,
                state::member_marks(&st.conn)?,
                if m.role == Role::Member {
                    state::count_after(&st.conn, through)?
                } else {
                    0
                },
            )
        }
        None => (Vec::new(), Vec::new(), 0),
    };
    let git = branches::open(root)?;
    let (local, tracking) = match m.role {
        Role::Member => (
            format!("refs/heads/{}", m.branch()),
            format!("refs/remotes/origin/{}", m.branch()),
        ),
        Role::Dreamer => ("HEAD".to_string(), FETCHED_MEMORY.to_string()),
    };
    let commits_waiting = branches::count_between(
        &git,
        branches::tip(&git, &tracking),
        branches::tip(&git, &local),
    );
    let log = |w: &str| logs.iter().find(|l| l.what == w).cloned();
    Ok(Some(Shared {
        fetch: log("fetch"),
        push: log("push"),
        members,
        events_waiting: after,
        commits_waiting,
        membership: m,
    }))
}

/// How old a member's copy of a shared memory is (its last fetch that got through), as a
/// line for a session's context; `None` on the dreamer or when the memory is not shared.
pub fn copy_age(root: &Path, now: DateTime<Utc>) -> Option<String> {
    let s = shared(root).ok()??;
    if s.membership.role != Role::Member {
        return None;
    }
    let done = s
        .fetch
        .as_ref()
        .and_then(|f| f.done.as_deref())
        .and_then(|d| DateTime::parse_from_rfc3339(d).ok());
    Some(match done {
        Some(d) => format!(
            "Memory copy from {}, fetched {}.",
            s.membership.remote,
            protocol::age((now - d.with_timezone(&Utc)).num_seconds())
        ),
        None => format!(
            "Memory copy from {}, never fetched since it was cloned.",
            s.membership.remote
        ),
    })
}
