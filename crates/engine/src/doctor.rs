//! `dream doctor`: the installation checked end to end, each check `ok`, `warn`, `fail`
//! (or `skip`, when it cannot apply here) with what it found and, when not ok, the fix.
//!
//! A job that runs from a timer fails where nobody looks: a key that expired, a source
//! folder an agent stopped writing to, a timer never enabled, a full disk. The doctor looks
//! at each in the order a person would set them up: the repository and its config, the
//! lock (and whether the file system honours it), the state database, git (branch and
//! identity), the inbox and every `[[inbox.sources]]` entry, the schedule (installed for
//! this repository, enabled), the last cycle, the model endpoint (one tiny call in JSON
//! mode, unless `--offline`), the embedder, disk space, and the heartbeat's warnings.
//! Nothing here changes the repository: the lock is taken and let go (`.dream/lock` is
//! created if it was not there), the state opened read only.

use std::path::Path;
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::Serialize;

use dream_core::schema::contract::{ChatCall, LlmErrorKind};
use dream_core::schema::settings::{Config, CycleKind};

use crate::edges::state::{self, State};
use crate::edges::store::Store;
use crate::edges::{inbox, lock, units};
use crate::error::Error;
use crate::schedule::{self, Scheduler, CYCLES};

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
    /// Not run here (`--offline`, or it does not apply).
    Skip,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
        }
    }
}

/// One check: what was looked at, the verdict, what was found, and the fix.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub status: Status,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn check(name: &str, status: Status, detail: impl Into<String>, fix: Option<String>) -> Check {
    Check {
        name: name.into(),
        status,
        detail: detail.into(),
        fix,
    }
}

fn ok(name: &str, detail: impl Into<String>) -> Check {
    check(name, Status::Ok, detail, None)
}

fn warn(name: &str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
    check(name, Status::Warn, detail, Some(fix.into()))
}

fn fail(name: &str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
    check(name, Status::Fail, detail, Some(fix.into()))
}

/// Everything the doctor found.
#[derive(Debug, Clone, Serialize)]
pub struct Diagnosis {
    pub repo: String,
    pub checks: Vec<Check>,
    pub ok: usize,
    pub warn: usize,
    pub fail: usize,
    pub skip: usize,
}

impl Diagnosis {
    fn new(repo: &str, checks: Vec<Check>) -> Diagnosis {
        let n = |s: Status| checks.iter().filter(|c| c.status == s).count();
        Diagnosis {
            repo: repo.into(),
            ok: n(Status::Ok),
            warn: n(Status::Warn),
            fail: n(Status::Fail),
            skip: n(Status::Skip),
            checks,
        }
    }

    /// The diagnosis as a person reads it.
    pub fn render(&self) -> String {
        let mut o = format!("dream doctor: {}\n", self.repo);
        for c in &self.checks {
            o.push_str(&format!(
                "  {:<5} {:<12} {}\n",
                c.status.as_str(),
                c.name,
                c.detail
            ));
            if let Some(f) = &c.fix {
                o.push_str(&format!("  {:<5} {:<12} fix: {f}\n", "", ""));
            }
        }
        o.push_str(&format!(
            "{} ok, {} warn, {} fail, {} skipped\n",
            self.ok, self.warn, self.fail, self.skip
        ));
        o
    }
}

/// How the doctor runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// No network: the model endpoint and a remote embedder are skipped.
    pub offline: bool,
    pub now: DateTime<Utc>,
}

/// Examine the repository `found` points at (or the error finding one gave).
pub fn diagnose(found: Result<&Path, &Error>, opts: &Options) -> Diagnosis {
    let root = match found {
        Ok(r) => r,
        Err(e) => {
            let c = fail(
                "repository",
                e.to_string(),
                e.hint()
                    .unwrap_or_else(|| "run `dream init DIR`, or pass --repo DIR".into()),
            );
            return Diagnosis::new("(none)", vec![c]);
        }
    };
    let shown = root.display().to_string();
    let mut checks = Vec::new();
    let config = match crate::config::load(root) {
        Ok(c) => {
            checks.push(ok("repository", format!("{shown}; dream.toml loads")));
            Some(c)
        }
        Err(e) => {
            checks.push(fail(
                "repository",
                format!("{shown}: {e}"),
                e.hint().unwrap_or_else(|| "fix dream.toml".into()),
            ));
            None
        }
    };
    checks.push(lock_check(root, opts.now));
    let st = state_check(root, &mut checks);
    checks.push(git_check(root));
    match &config {
        Some(c) => sources_checks(root, c, &mut checks),
        None => checks.push(skipped("sources", "dream.toml does not load")),
    }
    // A member of a shared memory runs no cycles: its dreamer's doctor checks them, and
    // its own timer runs `dream sync` (the shared memory's check says when it last did).
    let member = crate::edges::remote::membership(root)
        .ok()
        .flatten()
        .is_some_and(|m| m.role == dream_core::operations::machines::Role::Member);
    if member {
        checks.push(skipped(
            "schedule",
            "a member of a shared memory: schedule `dream sync`, not cycles",
        ));
    } else {
        checks.push(schedule_check(root));
    }
    match (&config, &st) {
        _ if member => checks.push(skipped(
            "last cycle",
            "a member of a shared memory: its cycles run on the machine that dreams it",
        )),
        (Some(c), Some(s)) => checks.push(last_cycle_check(root, c, s, opts.now)),
        (_, None) => checks.push(warn(
            "last cycle",
            "no cycle has run yet",
            format!("run one now: `dream --repo {shown} run`; the schedule runs them after that"),
        )),
        (None, _) => checks.push(skipped("last cycle", "dream.toml does not load")),
    }
    match &config {
        Some(c) => {
            checks.push(model_check(c, opts.offline));
            checks.push(embedder_check(c, opts.offline));
        }
        None => {
            checks.push(skipped("model", "dream.toml does not load"));
            checks.push(skipped("embedder", "dream.toml does not load"));
        }
    }
    checks.push(disk_check(root));
    if let Some(c) = shared_check(root, opts.offline) {
        checks.push(c);
    }
    match (&config, &st) {
        _ if member => checks.push(skipped(
            "heartbeat",
            "a member of a shared memory: the dreamer's heartbeat watches the cycles",
        )),
        (Some(c), Some(s)) => heartbeat_checks(root, c, s, opts.now, &mut checks),
        _ => checks.push(skipped("heartbeat", "no cycle has run yet")),
    }
    Diagnosis::new(&shown, checks)
}

fn skipped(name: &str, why: &str) -> Check {
    check(name, Status::Skip, why, None)
}

fn lock_check(root: &Path, now: DateTime<Utc>) -> Check {
    let fs = lock::network_fs(root);
    let held = lock::acquire(root, false, now);
    match (held, fs) {
        (Err(Error::LockHeld { holder }), _) => warn(
            "lock",
            format!("a dream process holds .dream/lock ({holder}): a cycle or a review is running"),
            "nothing to do if it is running; a lock never goes stale (the kernel drops it with the process)",
        ),
        (Err(e), _) => fail(
            "lock",
            format!(".dream/lock cannot be taken: {e}"),
            "make .dream/ writable for this user",
        ),
        (Ok(_), Some(kind)) => warn(
            "lock",
            format!("free, but the repository is on {kind}, where flock may not exclude a writer on another machine"),
            "keep a repository on a local disk (or block storage) of the one machine that runs its cycles; see docs/operations.md",
        ),
        (Ok(_), None) => ok("lock", "free, on a local file system"),
    }
}

/// The state database: its schema and integrity. Returns it, open read only, when it exists.
fn state_check(root: &Path, checks: &mut Vec<Check>) -> Option<State> {
    match State::open_read_only(root) {
        Ok(None) => {
            checks.push(warn(
                "state",
                "no .dream/state.sqlite yet: no cycle has run",
                "the first `dream run` creates it",
            ));
            None
        }
        Err(e) => {
            checks.push(fail(
                "state",
                e.to_string(),
                "upgrade dream if the database is newer; otherwise restore .dream/state.sqlite from a backup (docs/operations.md)",
            ));
            None
        }
        Ok(Some(st)) => {
            let version = state::schema_version(&st.conn);
            let integrity = state::integrity(&st.conn);
            let c = if integrity != "ok" {
                fail(
                    "state",
                    format!("schema version {version}; the integrity check says: {integrity}"),
                    "restore .dream/state.sqlite from a backup, or move it away: the next cycle reads every inbox file again and rebuilds it",
                )
            } else if version < state::SCHEMA_VERSION {
                ok(
                    "state",
                    format!(
                        "schema version {version}; the next cycle migrates it to {}",
                        state::SCHEMA_VERSION
                    ),
                )
            } else {
                ok("state", format!("schema version {version}, integrity ok"))
            };
            checks.push(c);
            Some(st)
        }
    }
}

fn git_check(root: &Path) -> Check {
    let store = match Store::open(root) {
        Ok(s) => s,
        Err(e) => return fail("git", e.to_string(), "run `git init` in the repository"),
    };
    let who = store.identity().unwrap_or_else(|| {
        "dream <dream@localhost> (no git identity is configured; set user.name and user.email to commit as yourself)".into()
    });
    let dirty = match store.is_dirty() {
        Ok(true) => "; hand edits in the tree will be committed first by the next cycle",
        _ => "",
    };
    match store.branch() {
        Ok((b, None)) => warn(
            "git",
            format!("on branch {}, which has no commit yet", short(&b)),
            format!("recreate the repository with `dream init`, or commit once (`git -C {} commit --allow-empty -m init`)", root.display()),
        ),
        Ok((b, Some(_))) => ok(
            "git",
            format!("on branch {}; commits as {who}{dirty}", short(&b)),
        ),
        Err(e) => {
            let what = e.to_string();
            let fix = what
                .split_once("Run `")
                .and_then(|(_, rest)| rest.split_once('`'))
                .map_or_else(
                    || format!("`git -C {} switch main` (or the branch you use)", root.display()),
                    |(cmd, _)| format!("`{cmd}`"),
                );
            warn("git", what, fix)
        }
    }
}

fn sources_checks(root: &Path, config: &Config, checks: &mut Vec<Check>) {
    let dir = root.join(&config.inbox.path);
    let inbox_files = match std::fs::read_dir(&dir) {
        Ok(_) => match inbox::list_files(&dir) {
            Ok(f) => f.len(),
            Err(e) => {
                checks.push(fail(
                    "inbox",
                    e.to_string(),
                    format!("make {} readable for this user", dir.display()),
                ));
                return;
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => {
            checks.push(fail(
                "inbox",
                format!("{} cannot be read: {e}", dir.display()),
                format!("make {} readable for this user", dir.display()),
            ));
            return;
        }
    };
    checks.push(ok(
        "inbox",
        format!("{}: {inbox_files} event files", dir.display()),
    ));
    let mut readable_sources = 0;
    for s in &config.inbox.sources {
        let name = format!("source {}", s.format.as_str());
        let path = crate::edges::sources::source_path(s, root);
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => checks.push(warn(
                &name,
                format!(
                    "{} ({}) is not there (yet): nothing is read from it",
                    s.path,
                    path.display()
                ),
                "check the path in [[inbox.sources]]: is the agent installed, and writing there?",
            )),
            Err(e) => checks.push(fail(
                &name,
                format!("{} cannot be read: {e}", path.display()),
                format!("make {} readable for this user", path.display()),
            )),
            Ok(_) => {
                let listing =
                    crate::edges::sources::list_all(&path, s.format, &s.include, &s.exclude);
                let files = listing.files;
                if !listing.skipped.is_empty() {
                    let named: Vec<String> = listing
                        .skipped
                        .iter()
                        .take(3)
                        .map(|(p, why)| format!("{} ({why})", p.display()))
                        .collect();
                    checks.push(warn(
                        &name,
                        format!(
                            "{} entries under {} are not read: {}{}",
                            listing.skipped.len(),
                            s.path,
                            named.join("; "),
                            if listing.skipped.len() > 3 { "; ..." } else { "" }
                        ),
                        format!(
                            "a {} source reads {}: is `format` right for this folder? (`dream ingest --format {} --dry-run {}` lists them all)",
                            s.format.as_str(),
                            crate::edges::sources::reads_what(s.format),
                            s.format.as_str(),
                            s.path
                        ),
                    ));
                }
                readable_sources += 1;
                let unreadable = files.iter().find(|f| std::fs::File::open(f).is_err());
                match unreadable {
                    Some(f) => checks.push(fail(
                        &name,
                        format!("{} cannot be opened", f.display()),
                        format!(
                            "make the files under {} readable for this user",
                            path.display()
                        ),
                    )),
                    None => checks.push(ok(&name, format!("{}: {} files", s.path, files.len()))),
                }
            }
        }
    }
    if inbox_files == 0 && readable_sources == 0 {
        checks.push(warn(
            "sources",
            "nothing feeds this memory yet: no event file in the inbox and no [[inbox.sources]] entry that exists",
            format!(
                "point your agent at {} or add [[inbox.sources]] for Claude Code, Codex, Gemini CLI, opencode or Copilot CLI to dream.toml (docs/sources.md)",
                dir.display()
            ),
        ));
    }
}

/// Whether a timer runs this repository: the single-repository units or a template
/// instance (systemd), or the launchd agents; and whether they are enabled.
fn schedule_check(root: &Path) -> Check {
    let repo = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let repo_s = repo.display().to_string();
    let mut found: Vec<(Scheduler, Vec<String>, Option<String>)> = Vec::new();
    for scheduler in [Scheduler::Systemd, Scheduler::Launchd] {
        let Ok(dir) = units::unit_dir(scheduler) else {
            continue;
        };
        let mut binary = None;
        let mut timers = Vec::new();
        for cycle in CYCLES {
            let (files, info) = units::read_installed(scheduler, &dir, cycle);
            if !files.is_empty() && info.repo.as_deref() == Some(repo_s.as_str()) {
                binary = binary.or(info.binary);
                timers.push(match scheduler {
                    Scheduler::Systemd => format!("dream-{}.timer", cycle.as_str()),
                    Scheduler::Launchd => schedule::launchd_label(cycle),
                });
            }
        }
        if scheduler == Scheduler::Systemd {
            let inst = schedule::escape_path(&repo_s);
            if units::instances(&dir).iter().any(|i| i.instance == inst) {
                timers.extend(CYCLES.map(|c| schedule::instance_timer(c, &inst)));
                let template = std::fs::read_to_string(dir.join("dream-evening@.service"))
                    .ok()
                    .map(|text| schedule::parse_installed(scheduler, &[text]));
                binary = binary.or(template.and_then(|i| i.binary));
            }
        }
        if !timers.is_empty() {
            found.push((scheduler, timers, binary));
        }
    }
    let Some((scheduler, timers, binary)) = found.into_iter().next() else {
        return warn(
            "schedule",
            "no timer runs this repository: cycles happen only when you run them",
            format!("dream schedule install --repo {repo_s}"),
        );
    };
    if let Some(b) = binary.as_deref().filter(|b| !Path::new(b).exists()) {
        return fail(
            "schedule",
            format!("the units run {b}, which no longer exists"),
            format!("dream schedule install --repo {repo_s} (from the dream you want them to run)"),
        );
    }
    // systemd's units run with PrivateTmp=true: a binary under /tmp is not there for them.
    if let Some(b) = binary.as_deref().filter(|b| {
        scheduler == Scheduler::Systemd && (b.starts_with("/tmp/") || b.starts_with("/var/tmp/"))
    }) {
        return warn(
            "schedule",
            format!(
                "the units run {b}, under a temporary folder, which PrivateTmp=true hides from them: every run fails to start"
            ),
            format!(
                "install dream outside /tmp and /var/tmp (`cargo install --path .`), then run `dream schedule install --repo {repo_s}` with it"
            ),
        );
    }
    let Ok(dir) = units::unit_dir(scheduler) else {
        return ok("schedule", format!("{} installed", timers.join(", ")));
    };
    match scheduler {
        Scheduler::Systemd => {
            let mut disabled = Vec::new();
            let mut asked = None;
            let mut why_not = None;
            for t in &timers {
                match units::systemd_state(t) {
                    Ok((enabled, active)) => {
                        if enabled != "enabled" || active != "active" {
                            disabled.push(format!("{t} ({enabled}, {active})"));
                        }
                        asked = Some(true);
                    }
                    Err(why) => {
                        why_not = why_not.or(Some(why));
                        asked = asked.or(Some(false));
                        if !units::linked(&dir, t) {
                            disabled.push(format!("{t} (not enabled)"));
                        }
                    }
                }
            }
            if !disabled.is_empty() {
                // What systemctl said when it was asked (a missing user bus, say), so the
                // cause shows, not only its symptom.
                let said = why_not
                    .map(|w| format!("; systemctl could not be asked: {w}"))
                    .unwrap_or_default();
                return warn(
                    "schedule",
                    format!("installed but not running: {}{said}", disabled.join(", ")),
                    format!(
                        "systemctl --user daemon-reload && systemctl --user enable --now {}",
                        schedule::shell_line(&timers)
                    ),
                );
            }
            let how = if asked == Some(true) {
                "enabled and active (systemctl --user)"
            } else {
                "enabled (linked in timers.target.wants; systemctl --user cannot be asked here)"
            };
            ok("schedule", format!("{}: {how}", timers.join(", ")))
        }
        Scheduler::Launchd => ok(
            "schedule",
            format!("{} installed in {}", timers.join(", "), dir.display()),
        ),
    }
}

fn last_cycle_check(root: &Path, config: &Config, st: &State, now: DateTime<Utc>) -> Check {
    let mut last: Option<state::CycleRecord> = None;
    for kind in CycleKind::ALL {
        if let Ok(Some(c)) = state::last_cycle_of_kind(&st.conn, kind.as_str(), now) {
            if last.as_ref().is_none_or(|l| c.now > l.now) {
                last = Some(c);
            }
        }
    }
    let Some(c) = last else {
        return warn(
            "last cycle",
            "no cycle has finished yet",
            format!("run one now: `dream --repo {} run`", root.display()),
        );
    };
    let age = now - c.now;
    let hours = age.num_hours();
    let detail = format!(
        "{} ({} cycle), {} ago",
        c.id,
        c.kind,
        if hours >= 48 {
            format!("{} days", age.num_days())
        } else {
            format!("{hours} hours")
        }
    );
    let period = i64::from(config.heartbeat.period_hours);
    if period > 0 && hours > 2 * period {
        return warn(
            "last cycle",
            detail,
            "the timers are not firing, or their runs fail: `dream status`, `dream schedule status`",
        );
    }
    ok("last cycle", detail)
}

/// One tiny call in JSON mode: the endpoint answers, takes the key, and replies in JSON.
fn model_check(config: &Config, offline: bool) -> Check {
    if config.llm.provider == "none" {
        return ok(
            "model",
            "the offline provider (llm.provider = \"none\"): no endpoint to reach",
        );
    }
    if offline {
        return skipped(
            "model",
            &format!("--offline: {} was not called", config.llm.base_url),
        );
    }
    let mut c = config.clone();
    c.llm.max_retries = 0;
    c.llm.timeout_secs = c.llm.timeout_secs.min(30);
    let llm = match crate::providers::llm(&c) {
        Ok(l) => l,
        Err(e) => {
            return fail(
                "model",
                e.to_string(),
                e.hint()
                    .unwrap_or_else(|| "fix the [llm] section of dream.toml".into()),
            )
        }
    };
    let call = ChatCall {
        stage: "doctor".into(),
        system:
            "You are a health check. Reply with the JSON object {\"ok\": true} and nothing else."
                .into(),
        user: "{\"check\": \"dream doctor\"}".into(),
        max_tokens: 20,
    };
    let t = Instant::now();
    match llm.chat_json(&call) {
        Ok(reply) => {
            let ms = t.elapsed().as_millis();
            let unsupported = reply
                .notes
                .iter()
                .find(|n| n.contains("json mode unsupported"));
            match unsupported {
                Some(n) => warn(
                    "model",
                    format!("{} answered in {ms} ms, but {n}", llm.name()),
                    "dream works without JSON mode (it parses replies defensively); a server or model that supports response_format refuses fewer replies",
                ),
                None if reply.value.is_object() => ok(
                    "model",
                    format!("{} at {} answered in JSON mode in {ms} ms", llm.name(), config.llm.base_url),
                ),
                None => warn(
                    "model",
                    format!("{} answered, but not with a JSON object", llm.name()),
                    "check llm.model: a model that follows instructions poorly proposes little that passes the gates",
                ),
            }
        }
        Err(e) => {
            let fix = match e.kind {
                LlmErrorKind::Auth => format!(
                    "the server refused the key: set the variable {} (in ~/.config/dream/env for the timers)",
                    config.llm.api_key_env
                ),
                _ => "check llm.base_url (OpenAI-compatible servers usually end in /v1), that the server runs, and llm.model".into(),
            };
            fail("model", e.to_string(), fix)
        }
    }
}

fn embedder_check(config: &Config, offline: bool) -> Check {
    if config.embed.provider != "builtin" && offline {
        return skipped("embedder", "--offline: the embedding server was not called");
    }
    let e = match crate::providers::embedder(config) {
        Ok(e) => e,
        Err(e) => {
            return fail(
                "embedder",
                e.to_string(),
                e.hint()
                    .unwrap_or_else(|| "fix the [embed] section of dream.toml".into()),
            )
        }
    };
    match e.embed(&["dream doctor checks the embedder"]) {
        Ok(v) if v.len() == 1 && !v[0].is_empty() && v[0].iter().all(|x| x.is_finite()) => ok(
            "embedder",
            format!("{} loads and embeds ({} dimensions)", e.id(), v[0].len()),
        ),
        Ok(_) => fail(
            "embedder",
            format!("{} returned no usable vector", e.id()),
            "check embed.model",
        ),
        Err(err) => fail(
            "embedder",
            err.to_string(),
            "check embed.base_url, embed.model and the key (embed.api_key_env, else llm.api_key_env)",
        ),
    }
}

/// A shared memory (issue 45): the remote answers (unless offline), the last fetch and
/// push got through, and nothing has waited long to be shipped. `None` when not shared.
fn shared_check(root: &Path, offline: bool) -> Option<Check> {
    let s = match crate::machines::shared(root) {
        Ok(s) => s?,
        Err(e) => {
            return Some(fail(
                "shared memory",
                e.to_string(),
                format!(
                    "fix or remove {}",
                    crate::edges::remote::membership_path(root).display()
                ),
            ))
        }
    };
    let m = &s.membership;
    let mut detail = format!(
        "{} of {} as {:?}; {} commits and {} events wait to be shipped",
        m.role.as_str(),
        m.remote,
        m.machine,
        s.commits_waiting,
        s.events_waiting
    );
    for l in [&s.fetch, &s.push].into_iter().flatten() {
        detail.push_str(&format!(
            "; last {} tried {}, got through {}",
            l.what,
            l.tried,
            l.done.as_deref().unwrap_or("never")
        ));
    }
    if !s.members.is_empty() {
        let seen: Vec<String> = s
            .members
            .iter()
            .map(|x| {
                format!(
                    "{} ({} events, last {})",
                    x.machine,
                    x.events,
                    x.last_event.as_deref().unwrap_or("none")
                )
            })
            .collect();
        detail.push_str(&format!("; machines seen: {}", seen.join(", ")));
    }
    let problem = [&s.fetch, &s.push]
        .into_iter()
        .flatten()
        .find_map(|l| l.problem.clone());
    if !offline {
        let limit = std::time::Duration::from_secs(m.timeout_secs.min(10));
        match crate::edges::remote::ls_remote(&m.remote, limit) {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                return Some(warn(
                    "shared memory",
                    format!("{detail}; {e}"),
                    "check the network and your access (`git ls-remote URL` shows the same); meanwhile everything waits here, committed, and goes at the next `dream sync`",
                ))
            }
            Err(e) => return Some(fail("shared memory", format!("{detail}; {e}"), "install git")),
        }
    }
    Some(match problem {
        Some(p) => warn(
            "shared memory",
            format!("{detail}; the last try failed: {p}"),
            "run `dream sync` to try again; nothing is lost meanwhile",
        ),
        None => ok("shared memory", detail),
    })
}

fn disk_check(root: &Path) -> Check {
    const MIB: u64 = 1 << 20;
    match fs2::available_space(root) {
        Err(e) => warn(
            "disk",
            format!("free space unknown: {e}"),
            "check it by hand (df)",
        ),
        Ok(free) if free < 100 * MIB => fail(
            "disk",
            format!("{} MiB free", free / MIB),
            "free some space: a cycle writes the state database, git objects and a journal; a full disk stops it before anything is committed",
        ),
        Ok(free) if free < 1024 * MIB => warn(
            "disk",
            format!("{} MiB free", free / MIB),
            "free some space before the state database and the history grow further",
        ),
        Ok(free) => ok("disk", format!("{:.1} GiB free", free as f64 / (1024.0 * MIB as f64))),
    }
}

fn heartbeat_checks(
    root: &Path,
    config: &Config,
    st: &State,
    now: DateTime<Utc>,
    checks: &mut Vec<Check>,
) {
    match crate::edges::heartbeat::warnings(&st.conn, root, config, now, None) {
        Err(e) => checks.push(fail(
            "heartbeat",
            e.to_string(),
            "the state database could not be read",
        )),
        Ok(ws) if ws.is_empty() => checks.push(ok("heartbeat", "no warnings")),
        Ok(ws) => {
            for w in ws {
                checks.push(warn(&format!("heartbeat: {}", w.rule), w.cause, w.fix));
            }
        }
    }
}

/// A branch's name without `refs/heads/`.
fn short(refname: &str) -> &str {
    refname.strip_prefix("refs/heads/").unwrap_or(refname)
}
