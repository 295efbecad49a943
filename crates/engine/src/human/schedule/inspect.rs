//! What is scheduled: `dream schedule status` as one plain value.
//!
//! The units on disk are read back (through `edges::units` and the pure parsers of
//! `schedule`) for each scheduler asked about: each cycle's single-repository files and
//! what they run, the template instances with their times and enable links, when each
//! runs next, and the problems a person should fix (a cycle with some of its files, a
//! binary or repository that is gone, drop-ins without their templates). Where the
//! service manager can be asked, its own view is added. [`Status`] is what the command
//! line renders as text or serialises as JSON. Nothing is written.

use std::path::Path;

use chrono::{DateTime, Local, Utc};
use serde::Serialize;

use dream_core::schema::settings::{CycleKind, FILE};

use super::install::chosen;
use crate::edges::units::{self, read_installed, unit_dir};
use crate::error::Result;
use crate::schedule::{self, Scheduler, TimeOfDay, UnitInfo, CYCLES};

/// The schedule of this user account.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// The platform's own scheduler, if it has one.
    pub platform: Option<Scheduler>,
    pub schedulers: Vec<SchedulerStatus>,
}

/// One scheduler's units.
#[derive(Debug, Clone, Serialize)]
pub struct SchedulerStatus {
    pub scheduler: Scheduler,
    pub dir: String,
    pub cycles: Vec<CycleStatus>,
    /// Repositories scheduled through the template units (systemd).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<InstanceStatus>,
    /// What the service manager itself says (`systemctl --user list-timers`, `launchctl
    /// print`), when it can be asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manager: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// One repository scheduled through the template units.
#[derive(Debug, Clone, Serialize)]
pub struct InstanceStatus {
    pub repo: String,
    pub instance: String,
    pub cycles: Vec<InstanceCycle>,
}

/// One cycle of a template instance.
#[derive(Debug, Clone, Serialize)]
pub struct InstanceCycle {
    pub cycle: &'static str,
    pub timer: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// `systemctl --user enable` linked it (timers.target.wants/).
    pub enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_run: Option<String>,
}

/// One cycle's single-repository units.
#[derive(Debug, Clone, Serialize)]
pub struct CycleStatus {
    pub cycle: &'static str,
    pub installed: bool,
    pub files: Vec<String>,
    #[serde(flatten)]
    pub info: UnitInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_run: Option<String>,
}

impl SchedulerStatus {
    /// Some single-repository unit is installed.
    pub fn single(&self) -> bool {
        self.cycles.iter().any(|c| c.installed)
    }
}

/// The schedule as installed now, with next run times from `now` (local time). Only
/// systemd, or only launchd, when one is asked for; else every scheduler with units
/// installed, and the platform's own.
pub fn status(systemd: bool, launchd: bool, now: DateTime<Utc>) -> Result<Status> {
    let now = now.with_timezone(&Local);
    let platform = Scheduler::for_platform();
    let wanted: Vec<Scheduler> = if systemd || launchd {
        vec![chosen(systemd, launchd)?]
    } else {
        [Scheduler::Systemd, Scheduler::Launchd].to_vec()
    };
    let mut st = Status {
        platform,
        schedulers: Vec::new(),
    };
    for scheduler in wanted {
        let dir = unit_dir(scheduler)?;
        let mut s = SchedulerStatus {
            scheduler,
            dir: dir.display().to_string(),
            cycles: Vec::new(),
            instances: Vec::new(),
            manager: None,
            problems: Vec::new(),
        };
        if scheduler == Scheduler::Systemd {
            read_instances(&mut s, &dir, &now);
        }
        for cycle in CYCLES {
            let c = read_cycle(&mut s.problems, scheduler, &dir, cycle, &now);
            s.cycles.push(c);
        }
        let any = s.single() || !s.instances.is_empty();
        if any {
            s.manager = units::manager_view(scheduler);
        }
        if any || (systemd || launchd) || Some(scheduler) == platform {
            st.schedulers.push(s);
        }
    }
    Ok(st)
}

/// The template instances in `dir`, each with its times and enable links, and the
/// problems of each (templates missing, repository gone).
fn read_instances(s: &mut SchedulerStatus, dir: &Path, now: &DateTime<Local>) {
    let scheduler = s.scheduler;
    let templates = schedule::template_names()
        .iter()
        .all(|n| dir.join(n).is_file());
    for i in units::instances(dir) {
        if !templates {
            s.problems.push(format!(
                "{} has drop-ins but the template units are missing; run `dream schedule install --instance --repo {}` again",
                i.instance, i.repo
            ));
        }
        if !Path::new(&i.repo).join(FILE).is_file() {
            s.problems.push(format!(
                "the instance {} works on {}, which is not a dream repository any more",
                i.instance, i.repo
            ));
        }
        let cycles = i
            .times
            .iter()
            .map(|(c, t)| {
                let timer = schedule::instance_timer(*c, &i.instance);
                InstanceCycle {
                    cycle: c.as_str(),
                    enabled: units::linked(dir, &timer),
                    timer,
                    time: t.map(|t| t.to_string()),
                    next_run: t.map(|t| schedule::describe_next(scheduler, t, now)),
                }
            })
            .collect();
        s.instances.push(InstanceStatus {
            repo: i.repo,
            instance: i.instance,
            cycles,
        });
    }
}

/// One cycle's single-repository files in `dir` and what they say, adding to `problems`
/// what is wrong with them (some files missing, a binary or repository that is gone).
fn read_cycle(
    problems: &mut Vec<String>,
    scheduler: Scheduler,
    dir: &Path,
    cycle: CycleKind,
    now: &DateTime<Local>,
) -> CycleStatus {
    let (files, info) = read_installed(scheduler, dir, cycle);
    let expected = scheduler.file_names(cycle).len();
    if !files.is_empty() && files.len() < expected {
        problems.push(format!(
            "the {} cycle has {} of its {expected} files; run `dream schedule install` again",
            cycle.as_str(),
            files.len()
        ));
    }
    if let Some(b) = &info.binary {
        if !Path::new(b).exists() {
            problems.push(format!(
                "the {} unit runs {b}, which no longer exists; run `dream schedule install` again",
                cycle.as_str()
            ));
        }
    }
    if let Some(r) = &info.repo {
        if !Path::new(r).join(FILE).is_file() {
            problems.push(format!(
                "the {} unit works on {r}, which is not a dream repository any more",
                cycle.as_str()
            ));
        }
    }
    let next_run = info
        .time
        .as_deref()
        .and_then(|t| t.parse::<TimeOfDay>().ok())
        .map(|t| schedule::describe_next(scheduler, t, now));
    CycleStatus {
        cycle: cycle.as_str(),
        installed: !files.is_empty(),
        files: files.iter().map(|f| f.display().to_string()).collect(),
        info,
        next_run,
    }
}
