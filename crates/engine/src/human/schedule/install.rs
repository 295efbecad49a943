//! Installing and removing the current user's timer units: what `dream schedule install`
//! and `uninstall` do, as functions that return what happened.
//!
//! The units are rendered by the pure half of `schedule` and written, read and removed
//! through `edges::units`, which also runs `systemctl` and `launchctl`. Here is the order
//! of it all: which files replace which, the log folder launchd needs, the drop-ins of the
//! template instances with their staggered times, the enable links a failed `systemctl
//! disable` leaves behind, the templates that go with the last instance. Each change to the
//! unit folder is told to the caller as it is made (a [`Step`]), so a failure half-way
//! still leaves the list of what was done; what is left to say at the end (where the
//! units run, what to look out for, whether the service manager loaded them and, if not,
//! the commands to run by hand) comes back as a value. Nothing here prints.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Local, Utc};

use dream_core::schema::settings::CycleKind;

use crate::edges::units::{self, read_installed, run_all, run_command, uid, unit_dir, write_unit};
use crate::error::{Context, Error, Result};
use crate::schedule::{self, Scheduler, TimeOfDay, CYCLES, LOG_DIR};

/// One change to the unit folder, told as it is made.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The single-repository units of another repository are about to be replaced.
    Replacing { scheduler: Scheduler, repo: String },
    /// A unit file written.
    Wrote(PathBuf),
    /// A template instance's drop-in written: `repo`'s `cycle` starts daily at `time`,
    /// through `timer`.
    WroteDropin {
        path: PathBuf,
        cycle: CycleKind,
        repo: String,
        time: TimeOfDay,
        timer: String,
    },
    /// A unit file, a drop-in folder or an enable link removed.
    Removed(PathBuf),
    /// A repository to unschedule has no template instance in `dir`.
    NoInstance { repo: String, dir: PathBuf },
}

/// Whether the service manager was asked to load (or unload) the units, and how it went.
#[derive(Debug, Clone, PartialEq)]
pub enum Loading {
    /// Not asked (`--no-enable`): the commands to run by hand.
    NotAsked(Vec<Vec<String>>),
    /// Asked, and it did.
    Done,
    /// It could not be asked, or it refused: why, and the commands to run by hand.
    Failed {
        why: String,
        commands: Vec<Vec<String>>,
    },
}

impl Loading {
    /// Run `commands` unless `enable` is off.
    fn run(enable: bool, commands: Vec<Vec<String>>) -> Loading {
        if !enable {
            return Loading::NotAsked(commands);
        }
        match run_all(&commands) {
            Ok(()) => Loading::Done,
            Err(why) => Loading::Failed { why, commands },
        }
    }

    /// The units will not run until someone runs the commands.
    pub fn failed(&self) -> bool {
        matches!(self, Loading::Failed { .. })
    }
}

/// What `dream schedule install` is asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    pub scheduler: Scheduler,
    /// The program the units run (links are resolved here).
    pub binary: PathBuf,
    pub morning: TimeOfDay,
    pub evening: TimeOfDay,
    /// Minutes between the start times of the template instances.
    pub stagger: u32,
}

/// Where the login hints point: the user `loginctl enable-linger` takes (`$USER`, or the
/// literal `$USER` when it is unset) and the home folder the key files go under.
#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    pub user: String,
    pub home: PathBuf,
}

impl Account {
    fn here() -> Result<Account> {
        Ok(Account {
            user: std::env::var("USER").unwrap_or_else(|_| "$USER".into()),
            home: units::home()?,
        })
    }
}

/// What installing the single-repository units did.
#[derive(Debug, Clone)]
pub struct Installed {
    pub scheduler: Scheduler,
    pub repo: PathBuf,
    pub binary: PathBuf,
    pub morning: TimeOfDay,
    pub evening: TimeOfDay,
    /// systemd's `PrivateTmp=true` hides the repository (under /tmp or /var/tmp) from the
    /// units.
    pub repo_in_tmp: bool,
    /// ... and the binary, so every run would fail to start.
    pub binary_in_tmp: bool,
    /// The binary is inside a cargo build folder: the next `cargo clean` breaks the units.
    pub binary_in_build_folder: bool,
    /// The folder the units are in.
    pub dir: PathBuf,
    pub account: Account,
}

/// What installing the template units and their instances did.
#[derive(Debug, Clone)]
pub struct InstalledInstances {
    pub binary: PathBuf,
    /// The repositories systemd's `PrivateTmp=true` hides from the units.
    pub repos_in_tmp: Vec<String>,
    /// A repository the single-repository units also run.
    pub also_single: Option<String>,
    /// The instance names written.
    pub instances: Vec<String>,
    pub account: Account,
}

/// The scheduler a command works with: the flag, else the platform's.
pub fn chosen(systemd: bool, launchd: bool) -> Result<Scheduler> {
    if systemd {
        return Ok(Scheduler::Systemd);
    }
    if launchd {
        return Ok(Scheduler::Launchd);
    }
    Scheduler::for_platform().ok_or_else(|| {
        Error::Usage(format!(
            "dream can schedule itself with systemd (Linux) or launchd (macOS), and this is {}; \
             run `dream run --cycle morning` and `dream run --cycle evening` once a day each from \
             this platform's own scheduler (exit code 75 means another run held the lock: treat it \
             as success), or pass --systemd or --launchd to write those units anyway",
            std::env::consts::OS
        ))
    })
}

/// The scheduler `dream schedule install` works with; `several` repositories (or
/// `--instance`) need systemd's template units.
pub fn chosen_to_install(systemd: bool, launchd: bool, several: bool) -> Result<Scheduler> {
    let scheduler = chosen(systemd, launchd)?;
    if several && scheduler != Scheduler::Systemd {
        return Err(Error::Usage(
            "several repositories (or --instance) need the systemd template units; with launchd \
             schedule one repository per user account, or write one agent per repository by hand \
             (docs/operations.md, \"Many memories\")"
                .into(),
        ));
    }
    Ok(scheduler)
}

/// `path` is under /tmp or /var/tmp, which systemd's `PrivateTmp=true` hides.
fn in_tmp(path: impl AsRef<Path>) -> bool {
    let path = path.as_ref();
    path.starts_with("/tmp") || path.starts_with("/var/tmp")
}

/// Write the single-repository units of `repo` (replacing any, of this or another
/// repository); [`Installed::load`] loads them.
pub fn single(repo: &Path, o: &Options, report: &mut dyn FnMut(Step)) -> Result<Installed> {
    let scheduler = o.scheduler;
    let repo = repo
        .canonicalize()
        .context(|| format!("resolving {}", repo.display()))?;
    let bin = o.binary.canonicalize().unwrap_or_else(|_| o.binary.clone());
    let files =
        schedule::render(scheduler, &bin, &repo, o.morning, o.evening).map_err(Error::Usage)?;
    let dir = unit_dir(scheduler)?;
    let other = CYCLES
        .iter()
        .filter_map(|&c| read_installed(scheduler, &dir, c).1.repo)
        .find(|r| Path::new(r) != repo);
    if let Some(other) = other {
        report(Step::Replacing {
            scheduler,
            repo: other,
        });
    }
    if scheduler == Scheduler::Launchd {
        units::create_dir(&repo.join(LOG_DIR))?;
    }
    for u in &files {
        let path = dir.join(&u.name);
        write_unit(&path, &u.contents)?;
        report(Step::Wrote(path));
    }
    Ok(Installed {
        scheduler,
        repo_in_tmp: scheduler == Scheduler::Systemd && in_tmp(&repo),
        binary_in_tmp: scheduler == Scheduler::Systemd && in_tmp(&bin),
        binary_in_build_folder: bin.components().any(|c| c.as_os_str() == "target"),
        repo,
        binary: bin,
        morning: o.morning,
        evening: o.evening,
        dir,
        account: Account::here()?,
    })
}

impl Installed {
    /// Load the units just written, unless `enable` is off. launchd refuses to bootstrap
    /// a label that is loaded, so the old one is unloaded first (whether it was loaded or
    /// not).
    pub fn load(&self, enable: bool) -> Loading {
        let commands = enable_commands(self.scheduler, &self.dir);
        if enable && self.scheduler == Scheduler::Launchd {
            for c in schedule::disable_commands(self.scheduler, &uid()) {
                let _ = run_command(&c);
            }
        }
        Loading::run(enable, commands)
    }

    /// When each cycle runs next after `now`, as [`schedule::describe_next`] says it, in
    /// local time.
    pub fn next_runs(&self, now: DateTime<Utc>) -> Vec<(CycleKind, String)> {
        let now = now.with_timezone(&Local);
        [
            (CycleKind::Morning, self.morning),
            (CycleKind::Evening, self.evening),
        ]
        .into_iter()
        .map(|(c, t)| (c, schedule::describe_next(self.scheduler, t, &now)))
        .collect()
    }
}

/// The commands that load the single-repository units in `dir` (launchd's need the user
/// id).
fn enable_commands(scheduler: Scheduler, dir: &Path) -> Vec<Vec<String>> {
    let uid = if scheduler == Scheduler::Launchd {
        uid()
    } else {
        String::new()
    };
    schedule::enable_commands(scheduler, dir, &uid)
}

/// The repositories, resolved to absolute paths without links, each once.
fn canonical(repos: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = Vec::new();
    for repo in repos {
        let repo = repo
            .canonicalize()
            .context(|| format!("resolving {}", repo.display()))?;
        if !out.contains(&repo) {
            out.push(repo);
        }
    }
    Ok(out)
}

/// Write the systemd template units, and for each of `repos` its instance's drop-ins with
/// its staggered start times (the times of repositories installed before and not given now
/// stay theirs); [`InstalledInstances::load`] loads them.
pub fn instances(
    repos: &[PathBuf],
    o: &Options,
    report: &mut dyn FnMut(Step),
) -> Result<InstalledInstances> {
    let repos = canonical(repos)?;
    let bin = o.binary.canonicalize().unwrap_or_else(|_| o.binary.clone());
    let templates = schedule::render_templates(&bin).map_err(Error::Usage)?;
    let dir = unit_dir(Scheduler::Systemd)?;
    let mut names = Vec::new();
    for repo in &repos {
        let text = repo.to_str().ok_or_else(|| {
            Error::Usage(format!(
                "the path {} is not UTF-8; unit names cannot carry it",
                repo.display()
            ))
        })?;
        names.push((text.to_string(), schedule::escape_path(text)));
    }
    let existing = units::instances(&dir);
    for u in &templates {
        let path = dir.join(&u.name);
        write_unit(&path, &u.contents)?;
        report(Step::Wrote(path));
    }
    for cycle in CYCLES {
        write_dropins(&dir, cycle, &names, &existing, o, report)?;
    }
    let single = read_installed(Scheduler::Systemd, &dir, CycleKind::Evening).1;
    Ok(InstalledInstances {
        binary: bin,
        repos_in_tmp: names
            .iter()
            .map(|(r, _)| r.clone())
            .filter(|r| in_tmp(r))
            .collect(),
        also_single: single.repo.filter(|r| names.iter().any(|(n, _)| n == r)),
        instances: names.into_iter().map(|(_, i)| i).collect(),
        account: Account::here()?,
    })
}

impl InstalledInstances {
    /// Enable and start the instances' timers, unless `enable` is off.
    pub fn load(&self, enable: bool) -> Loading {
        Loading::run(enable, schedule::instance_enable_commands(&self.instances))
    }
}

/// One cycle's drop-ins: each repository (`names`: path and instance) gets the first start
/// time from the cycle's base on, in `--stagger` steps, that no other installed instance
/// has.
fn write_dropins(
    dir: &Path,
    cycle: CycleKind,
    names: &[(String, String)],
    existing: &[units::Instance],
    o: &Options,
    report: &mut dyn FnMut(Step),
) -> Result<()> {
    let base = match cycle {
        CycleKind::Morning => o.morning,
        CycleKind::Evening => o.evening,
    };
    let taken: Vec<TimeOfDay> = existing
        .iter()
        .filter(|i| !names.iter().any(|(_, n)| *n == i.instance))
        .flat_map(|i| i.times.iter().filter(|(c, _)| *c == cycle))
        .filter_map(|(_, t)| *t)
        .collect();
    let times = schedule::assign_times(base, o.stagger, &taken, names.len());
    for ((repo, inst), time) in names.iter().zip(times) {
        let d = dir.join(schedule::instance_dropin_dir(cycle, inst));
        units::create_dir(&d)?;
        let path = d.join(schedule::DROPIN);
        write_unit(&path, &schedule::instance_dropin(cycle, repo, time))?;
        report(Step::WroteDropin {
            path,
            cycle,
            repo: repo.clone(),
            time,
            timer: schedule::instance_timer(cycle, inst),
        });
    }
    Ok(())
}

/// What removing one scheduler's single-repository units did.
#[derive(Debug, Clone, PartialEq)]
pub enum Uninstalled {
    /// None of its units were in `dir`; `instances`: template instances are there.
    Nothing { dir: PathBuf, instances: bool },
    /// They were removed; how unloading them went (the commands to run by hand are those
    /// that unload units already removed).
    Removed(Loading),
}

/// The schedulers `dream schedule uninstall` works on: the flag's; else every one with
/// single-repository units installed; else the platform's.
pub fn to_uninstall(systemd: bool, launchd: bool) -> Result<Vec<Scheduler>> {
    if systemd || launchd {
        return Ok(vec![chosen(systemd, launchd)?]);
    }
    let installed: Vec<Scheduler> = [Scheduler::Systemd, Scheduler::Launchd]
        .into_iter()
        .filter(|&s| {
            unit_dir(s).is_ok_and(|d| {
                CYCLES
                    .iter()
                    .any(|&c| !read_installed(s, &d, c).0.is_empty())
            })
        })
        .collect();
    if installed.is_empty() {
        Ok(vec![chosen(false, false)?])
    } else {
        Ok(installed)
    }
}

/// Stop and remove the single-repository units of `scheduler`, and the enable links a
/// `systemctl --user disable` that could not run leaves behind.
pub fn uninstall(
    scheduler: Scheduler,
    enable: bool,
    report: &mut dyn FnMut(Step),
) -> Result<Uninstalled> {
    let dir = unit_dir(scheduler)?;
    let files: Vec<PathBuf> = CYCLES
        .iter()
        .flat_map(|&c| read_installed(scheduler, &dir, c).0)
        .collect();
    if files.is_empty() {
        let instances = scheduler == Scheduler::Systemd && !units::instances(&dir).is_empty();
        return Ok(Uninstalled::Nothing { dir, instances });
    }
    let uid = if scheduler == Scheduler::Launchd {
        uid()
    } else {
        String::new()
    };
    let mut failed = if enable {
        run_all(&schedule::disable_commands(scheduler, &uid)).err()
    } else {
        None
    };
    for f in files {
        units::remove_file(&f)?;
        report(Step::Removed(f));
    }
    for link in CYCLES
        .iter()
        .flat_map(|&c| schedule::enable_links(scheduler, c))
    {
        let path = dir.join(link);
        if path.symlink_metadata().is_ok() {
            units::remove_file(&path)?;
            report(Step::Removed(path));
        }
    }
    if enable && failed.is_none() {
        failed = run_all(&schedule::after_uninstall_commands(scheduler)).err();
    }
    let commands = schedule::unload_removed_commands(scheduler, &uid);
    Ok(Uninstalled::Removed(match failed {
        Some(why) => Loading::Failed { why, commands },
        None if enable => Loading::Done,
        None => Loading::NotAsked(commands),
    }))
}

/// What removing template instances did: how many repositories lost theirs, and how
/// unloading them went.
#[derive(Debug, Clone, PartialEq)]
pub struct UninstalledInstances {
    pub repositories: usize,
    pub loading: Loading,
}

/// Stop and remove the template instances of `repos` (a repository that is gone can still
/// be unscheduled: its path names the instance), and the templates with the last instance.
/// `None` when none of them had an instance.
pub fn uninstall_instances(
    repos: &[PathBuf],
    enable: bool,
    report: &mut dyn FnMut(Step),
) -> Result<Option<UninstalledInstances>> {
    let dir = unit_dir(Scheduler::Systemd)?;
    let installed = units::instances(&dir);
    let mut gone = Vec::new();
    for repo in repos {
        let repo = repo
            .canonicalize()
            .unwrap_or_else(|_| repo.clone())
            .display()
            .to_string();
        let inst = schedule::escape_path(&repo);
        if installed.iter().any(|i| i.instance == inst) {
            gone.push(inst);
        } else {
            report(Step::NoInstance {
                repo,
                dir: dir.clone(),
            });
        }
    }
    if gone.is_empty() {
        return Ok(None);
    }
    let stop = schedule::instance_disable_commands(&gone);
    let failed = if enable { run_all(&stop).err() } else { None };
    for inst in &gone {
        remove_instance(&dir, inst, report)?;
    }
    if units::instances(&dir).is_empty() {
        for name in schedule::template_names() {
            let path = dir.join(name);
            if path.exists() {
                units::remove_file(&path)?;
                report(Step::Removed(path));
            }
        }
    }
    let reload = vec![["systemctl", "--user", "daemon-reload"]
        .map(String::from)
        .to_vec()];
    let by_hand = || stop.iter().chain(&reload).cloned().collect();
    let loading = match failed {
        Some(why) => Loading::Failed {
            why,
            commands: by_hand(),
        },
        None if enable => {
            let _ = run_all(&reload);
            Loading::Done
        }
        None => Loading::NotAsked(by_hand()),
    };
    Ok(Some(UninstalledInstances {
        repositories: gone.len(),
        loading,
    }))
}

/// One instance's drop-in folders and enable links, both cycles.
fn remove_instance(dir: &Path, inst: &str, report: &mut dyn FnMut(Step)) -> Result<()> {
    for cycle in CYCLES {
        let d = dir.join(schedule::instance_dropin_dir(cycle, inst));
        if d.exists() {
            units::remove_dir(&d)?;
            report(Step::Removed(d));
        }
        let link = dir
            .join("timers.target.wants")
            .join(schedule::instance_timer(cycle, inst));
        if link.symlink_metadata().is_ok() {
            units::remove_file(&link)?;
            report(Step::Removed(link));
        }
    }
    Ok(())
}
