//! `dream schedule install|uninstall|status`: write, remove and inspect the current user's
//! timer units (rendered by `schedule.rs`; read and written through `edges::units`), and
//! run the systemctl/launchctl commands that load them, or print those commands when they
//! cannot run here. One repository gets the single-repository units; several (or
//! `--instance`) get the systemd template units, one instance per repository.

use std::path::{Path, PathBuf};
use std::process::Command;

use chrono::{DateTime, Local};
use serde::Serialize;

use crate::cli::{
    Global, ScheduleAction, ScheduleArgs, ScheduleInstallArgs, ScheduleStatusArgs,
    ScheduleUninstallArgs,
};
use dream_engine::edges::units::{
    self, read_installed, run_all, run_command, uid, unit_dir, write_unit,
};
use dream_engine::error::{Context, Error, Result, EXIT_FAILURE, EXIT_OK};
use dream_engine::schedule::{self, Scheduler, TimeOfDay, CYCLES, LOG_DIR, RANDOMIZED_DELAY_MIN};

pub fn run(g: &Global, a: &ScheduleArgs) -> Result<i32> {
    match &a.action {
        ScheduleAction::Install(a) => install(g, a),
        ScheduleAction::Uninstall(a) if a.instance => uninstall_instances(g, a),
        ScheduleAction::Uninstall(a) => uninstall(a),
        ScheduleAction::Status(a) => status(g, a),
    }
}

/// The scheduler a command works with: the flag, else the platform's.
fn chosen(systemd: bool, launchd: bool) -> Result<Scheduler> {
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

fn print_commands(cmds: &[Vec<String>]) {
    for c in cmds {
        println!("    {}", schedule::shell_line(c));
    }
}

/// The repositories `--repo` names, resolved to absolute paths without links.
fn canonical_repos(g: &Global) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = Vec::new();
    for repo in super::repo_roots(g)? {
        let repo = repo
            .canonicalize()
            .context(|| format!("resolving {}", repo.display()))?;
        if !out.contains(&repo) {
            out.push(repo);
        }
    }
    Ok(out)
}

fn this_binary() -> Result<PathBuf> {
    let bin = std::env::current_exe().context(|| "finding the path of this dream binary".into())?;
    Ok(bin.canonicalize().unwrap_or(bin))
}

fn install(g: &Global, a: &ScheduleInstallArgs) -> Result<i32> {
    let scheduler = chosen(a.target.systemd, a.target.launchd)?;
    if a.instance || g.repo.len() > 1 {
        if scheduler != Scheduler::Systemd {
            return Err(Error::Usage(
                "several repositories (or --instance) need the systemd template units; with launchd \
                 schedule one repository per user account, or write one agent per repository by hand \
                 (docs/operations.md, \"Many memories\")"
                    .into(),
            ));
        }
        return install_instances(g, a);
    }
    let repo = super::repo_root(g)?;
    let repo = repo
        .canonicalize()
        .context(|| format!("resolving {}", repo.display()))?;
    let bin = this_binary()?;
    let units =
        schedule::render(scheduler, &bin, &repo, a.morning, a.evening).map_err(Error::Usage)?;
    let dir = unit_dir(scheduler)?;

    let previous: Vec<schedule::UnitInfo> = CYCLES
        .iter()
        .map(|&c| read_installed(scheduler, &dir, c).1)
        .collect();
    if let Some(other) = previous
        .iter()
        .filter_map(|i| i.repo.as_deref())
        .find(|r| Path::new(r) != repo)
    {
        println!("replacing the {scheduler} schedule of {other} (the single-repository units run one repository; for several, `dream schedule install --repo A --repo B`)");
    }
    if scheduler == Scheduler::Launchd {
        let logs = repo.join(LOG_DIR);
        std::fs::create_dir_all(&logs).context(|| format!("creating {}", logs.display()))?;
    }
    for u in &units {
        let path = dir.join(&u.name);
        write_unit(&path, &u.contents)?;
        println!("wrote {}", path.display());
    }
    println!(
        "  morning cycle at {} and evening cycle at {} (local time), for {}",
        a.morning,
        a.evening,
        repo.display()
    );
    println!("  running {}", bin.display());
    if scheduler == Scheduler::Systemd && (repo.starts_with("/tmp") || repo.starts_with("/var/tmp"))
    {
        println!(
            "  note: the units run with PrivateTmp=true, which hides {} from them; keep the \
             repository outside /tmp and /var/tmp",
            repo.display()
        );
    }
    if scheduler == Scheduler::Systemd && (bin.starts_with("/tmp") || bin.starts_with("/var/tmp")) {
        println!(
            "  note: the units run with PrivateTmp=true, which hides {} from them: every run \
             would fail to start; install dream outside /tmp (`cargo install --path .`) and run \
             `dream schedule install` again",
            bin.display()
        );
    }
    if bin.components().any(|c| c.as_os_str() == "target") {
        println!(
            "  note: this binary is inside a cargo build folder; install dream (`cargo install --path .`) \
             and run `dream schedule install` again, or the units break on the next `cargo clean`"
        );
    }

    let mut failed = false;
    let enable = enable_commands(scheduler, &dir);
    if a.target.no_enable {
        println!("not enabled (--no-enable); to enable, run:");
        print_commands(&enable);
    } else {
        // launchd refuses to bootstrap a label that is loaded: unload the old one first.
        if scheduler == Scheduler::Launchd {
            for c in schedule::disable_commands(scheduler, &uid()) {
                let _ = run_command(&c);
            }
        }
        match run_all(&enable) {
            Ok(()) => println!("enabled: the timers are active"),
            Err(why) => {
                println!("could not enable the timers here: {why}");
                println!("the unit files are in place; to enable them, run as this user:");
                print_commands(&enable);
                // Nothing will run until those commands do: not a success.
                failed = true;
            }
        }
    }
    if scheduler == Scheduler::Systemd {
        println!(
            "  so that the timers run while you are logged out, run once: loginctl enable-linger {}",
            std::env::var("USER").unwrap_or_else(|_| "$USER".into())
        );
        println!(
            "  an API key for the model goes in {}/.config/dream/env (KEY=value lines, mode 600)",
            units::home()?.display()
        );
    }
    print_next_runs(scheduler, super::now(g)?, a.morning, a.evening);
    Ok(if failed { EXIT_FAILURE } else { EXIT_OK })
}

/// The template units, and one instance per repository with its staggered start times.
fn install_instances(g: &Global, a: &ScheduleInstallArgs) -> Result<i32> {
    let repos = canonical_repos(g)?;
    let bin = this_binary()?;
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
        println!("wrote {}", path.display());
    }
    for cycle in CYCLES {
        let base = match cycle {
            dream_core::operations::config::CycleKind::Morning => a.morning,
            dream_core::operations::config::CycleKind::Evening => a.evening,
        };
        // Times of the repositories installed before and not reinstalled now.
        let taken: Vec<TimeOfDay> = existing
            .iter()
            .filter(|i| !names.iter().any(|(_, n)| *n == i.instance))
            .flat_map(|i| i.times.iter().filter(|(c, _)| *c == cycle))
            .filter_map(|(_, t)| *t)
            .collect();
        let times = schedule::assign_times(base, a.stagger, &taken, names.len());
        for ((repo, inst), time) in names.iter().zip(times) {
            let d = dir.join(schedule::instance_dropin_dir(cycle, inst));
            std::fs::create_dir_all(&d).context(|| format!("creating {}", d.display()))?;
            let path = d.join(schedule::DROPIN);
            write_unit(&path, &schedule::instance_dropin(cycle, repo, time))?;
            println!("wrote {}", path.display());
            println!(
                "  {} cycle of {repo} daily at {time} (local time): {}",
                cycle.as_str(),
                schedule::instance_timer(cycle, inst)
            );
        }
    }
    println!("  running {}", bin.display());
    for (repo, _) in &names {
        if repo.starts_with("/tmp") || repo.starts_with("/var/tmp") {
            println!(
                "  note: the units run with PrivateTmp=true, which hides {repo} from them; keep \
                 repositories outside /tmp and /var/tmp"
            );
        }
    }
    let single = read_installed(
        Scheduler::Systemd,
        &dir,
        dream_core::operations::config::CycleKind::Evening,
    );
    if let Some(r) = single.1.repo {
        if names.iter().any(|(n, _)| *n == r) {
            println!(
                "  note: the single-repository units (dream-evening.timer) run {r} too; remove them \
                 with `dream schedule uninstall` (two timers on one repository only make one of them \
                 exit 75)"
            );
        }
    }
    let instances: Vec<String> = names.iter().map(|(_, i)| i.clone()).collect();
    let mut failed = false;
    let enable = schedule::instance_enable_commands(&instances);
    if a.target.no_enable {
        println!("not enabled (--no-enable); to enable, run:");
        print_commands(&enable);
    } else {
        match run_all(&enable) {
            Ok(()) => println!("enabled: the timers are active"),
            Err(why) => {
                println!("could not enable the timers here: {why}");
                println!("the unit files are in place; to enable them, run as this user:");
                print_commands(&enable);
                // Nothing will run until those commands do: not a success.
                failed = true;
            }
        }
    }
    println!(
        "  so that the timers run while you are logged out, run once: loginctl enable-linger {}",
        std::env::var("USER").unwrap_or_else(|_| "$USER".into())
    );
    println!(
        "  API keys go in {}/.config/dream/env, or per repository in {}/.config/dream/<instance>.env",
        units::home()?.display(),
        units::home()?.display()
    );
    Ok(if failed { EXIT_FAILURE } else { EXIT_OK })
}

/// Stop and remove the instances of the `--repo` repositories; the templates go with the
/// last one.
fn uninstall_instances(g: &Global, a: &ScheduleUninstallArgs) -> Result<i32> {
    if a.target.launchd {
        return Err(Error::Usage(
            "--instance is for the systemd template units".into(),
        ));
    }
    let dir = unit_dir(Scheduler::Systemd)?;
    let cwd = std::env::current_dir().context(|| "reading the current folder".into())?;
    // A repository that is gone can still be unscheduled: its path names the instance.
    let repos: Vec<String> = if g.repo.is_empty() {
        canonical_repos(g)?
            .iter()
            .map(|p| p.display().to_string())
            .collect()
    } else {
        g.repo
            .iter()
            .map(|p| {
                let p = super::absolute(&cwd, p);
                p.canonicalize().unwrap_or(p).display().to_string()
            })
            .collect()
    };
    let installed = units::instances(&dir);
    let mut gone = Vec::new();
    for repo in &repos {
        let inst = schedule::escape_path(repo);
        if !installed.iter().any(|i| i.instance == inst) {
            println!(
                "no dream instance for {repo} in {}; nothing to remove",
                dir.display()
            );
            continue;
        }
        gone.push(inst);
    }
    if gone.is_empty() {
        return Ok(EXIT_OK);
    }
    let stop = schedule::instance_disable_commands(&gone);
    let failed = if a.target.no_enable {
        None
    } else {
        run_all(&stop).err()
    };
    for inst in &gone {
        for cycle in CYCLES {
            let d = dir.join(schedule::instance_dropin_dir(cycle, inst));
            if d.exists() {
                std::fs::remove_dir_all(&d).context(|| format!("removing {}", d.display()))?;
                println!("removed {}", d.display());
            }
            let link = dir
                .join("timers.target.wants")
                .join(schedule::instance_timer(cycle, inst));
            if link.symlink_metadata().is_ok() {
                std::fs::remove_file(&link).context(|| format!("removing {}", link.display()))?;
                println!("removed {}", link.display());
            }
        }
    }
    if units::instances(&dir).is_empty() {
        for name in schedule::template_names() {
            let path = dir.join(name);
            if path.exists() {
                std::fs::remove_file(&path).context(|| format!("removing {}", path.display()))?;
                println!("removed {}", path.display());
            }
        }
    }
    let reload = vec![["systemctl", "--user", "daemon-reload"]
        .map(String::from)
        .to_vec()];
    match (failed, a.target.no_enable) {
        (None, false) => {
            let _ = run_all(&reload);
            println!(
                "stopped and removed the timers of {} repositories",
                gone.len()
            );
        }
        (Some(why), _) => {
            println!("could not unload the timers here: {why}");
            println!("if they were loaded, run as this user:");
            print_commands(&stop);
            print_commands(&reload);
        }
        (None, true) => {
            println!("not unloaded (--no-enable); if the timers were loaded, run:");
            print_commands(&stop);
            print_commands(&reload);
        }
    }
    Ok(EXIT_OK)
}

fn enable_commands(scheduler: Scheduler, dir: &Path) -> Vec<Vec<String>> {
    let uid = if scheduler == Scheduler::Launchd {
        uid()
    } else {
        String::new()
    };
    schedule::enable_commands(scheduler, dir, &uid)
}

fn print_next_runs(
    scheduler: Scheduler,
    now: DateTime<chrono::Utc>,
    morning: TimeOfDay,
    evening: TimeOfDay,
) {
    let now = now.with_timezone(&Local);
    for (name, t) in [("morning", morning), ("evening", evening)] {
        println!("  next {name} run: {}", describe_next(scheduler, t, &now));
    }
}

fn describe_next(scheduler: Scheduler, t: TimeOfDay, now: &DateTime<Local>) -> String {
    let next = schedule::next_run(t, now);
    let within = if scheduler == Scheduler::Systemd {
        format!(" (starting within {RANDOMIZED_DELAY_MIN} minutes)")
    } else {
        String::new()
    };
    format!("{}{within}", next.format("%a %Y-%m-%d %H:%M %Z"))
}

fn uninstall(a: &ScheduleUninstallArgs) -> Result<i32> {
    let t = &a.target;
    let schedulers: Vec<Scheduler> = if t.systemd || t.launchd {
        vec![chosen(t.systemd, t.launchd)?]
    } else {
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
            vec![chosen(false, false)?]
        } else {
            installed
        }
    };
    for scheduler in schedulers {
        let dir = unit_dir(scheduler)?;
        let files: Vec<PathBuf> = CYCLES
            .iter()
            .flat_map(|&c| read_installed(scheduler, &dir, c).0)
            .collect();
        if files.is_empty() {
            println!(
                "no dream {scheduler} units in {}; nothing to remove",
                dir.display()
            );
            if scheduler == Scheduler::Systemd && !units::instances(&dir).is_empty() {
                println!(
                    "  template instances are installed (`dream schedule status` lists them); remove \
                     them with `dream schedule uninstall --instance --repo DIR`"
                );
            }
            continue;
        }
        let uid = if scheduler == Scheduler::Launchd {
            uid()
        } else {
            String::new()
        };
        let stop = schedule::disable_commands(scheduler, &uid);
        let mut failed = if t.no_enable {
            None
        } else {
            run_all(&stop).err()
        };
        for f in &files {
            std::fs::remove_file(f).context(|| format!("removing {}", f.display()))?;
            println!("removed {}", f.display());
        }
        // What `systemctl --user disable` removes, when it could not run.
        for link in CYCLES
            .iter()
            .flat_map(|&c| schedule::enable_links(scheduler, c))
        {
            let path = dir.join(link);
            if path.symlink_metadata().is_ok() {
                std::fs::remove_file(&path).context(|| format!("removing {}", path.display()))?;
                println!("removed {}", path.display());
            }
        }
        if !t.no_enable && failed.is_none() {
            failed = run_all(&schedule::after_uninstall_commands(scheduler)).err();
        }
        match (&failed, t.no_enable) {
            (None, false) => println!("stopped and removed the {scheduler} timers"),
            (Some(why), _) => {
                println!("could not unload the timers here: {why}");
                println!("if they were loaded, run as this user:");
                print_commands(&schedule::unload_removed_commands(scheduler, &uid));
            }
            (None, true) => {
                println!("not unloaded (--no-enable); if the timers were loaded, run:");
                print_commands(&schedule::unload_removed_commands(scheduler, &uid));
            }
        }
    }
    Ok(EXIT_OK)
}

#[derive(Debug, Serialize)]
struct Status {
    /// The platform's own scheduler, if it has one.
    platform: Option<Scheduler>,
    schedulers: Vec<SchedulerStatus>,
}

#[derive(Debug, Serialize)]
struct SchedulerStatus {
    scheduler: Scheduler,
    dir: String,
    cycles: Vec<CycleStatus>,
    /// Repositories scheduled through the template units (systemd).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    instances: Vec<InstanceStatus>,
    /// What the service manager itself says (`systemctl --user list-timers`, `launchctl
    /// print`), when it can be asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    manager: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    problems: Vec<String>,
}

#[derive(Debug, Serialize)]
struct InstanceStatus {
    repo: String,
    instance: String,
    cycles: Vec<InstanceCycle>,
}

#[derive(Debug, Serialize)]
struct InstanceCycle {
    cycle: &'static str,
    timer: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    time: Option<String>,
    /// `systemctl --user enable` linked it (timers.target.wants/).
    enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_run: Option<String>,
}

#[derive(Debug, Serialize)]
struct CycleStatus {
    cycle: &'static str,
    installed: bool,
    files: Vec<String>,
    #[serde(flatten)]
    info: schedule::UnitInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_run: Option<String>,
}

fn status(g: &Global, a: &ScheduleStatusArgs) -> Result<i32> {
    let now = super::now(g)?.with_timezone(&Local);
    let platform = Scheduler::for_platform();
    let wanted: Vec<Scheduler> = if a.systemd || a.launchd {
        vec![chosen(a.systemd, a.launchd)?]
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
            let templates = schedule::template_names()
                .iter()
                .all(|n| dir.join(n).is_file());
            for i in units::instances(&dir) {
                if !templates {
                    s.problems.push(format!(
                        "{} has drop-ins but the template units are missing; run `dream schedule install --instance --repo {}` again",
                        i.instance, i.repo
                    ));
                }
                if !Path::new(&i.repo)
                    .join(dream_core::operations::config::FILE)
                    .is_file()
                {
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
                            enabled: units::linked(&dir, &timer),
                            timer,
                            time: t.map(|t| t.to_string()),
                            next_run: t.map(|t| describe_next(scheduler, t, &now)),
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
        for cycle in CYCLES {
            let (files, info) = read_installed(scheduler, &dir, cycle);
            let expected = scheduler.file_names(cycle).len();
            if !files.is_empty() && files.len() < expected {
                s.problems.push(format!(
                    "the {} cycle has {} of its {expected} files; run `dream schedule install` again",
                    cycle.as_str(),
                    files.len()
                ));
            }
            if let Some(b) = &info.binary {
                if !Path::new(b).exists() {
                    s.problems.push(format!(
                        "the {} unit runs {b}, which no longer exists; run `dream schedule install` again",
                        cycle.as_str()
                    ));
                }
            }
            if let Some(r) = &info.repo {
                if !Path::new(r)
                    .join(dream_core::operations::config::FILE)
                    .is_file()
                {
                    s.problems.push(format!(
                        "the {} unit works on {r}, which is not a dream repository any more",
                        cycle.as_str()
                    ));
                }
            }
            let next_run = info
                .time
                .as_deref()
                .and_then(|t| t.parse::<TimeOfDay>().ok())
                .map(|t| describe_next(scheduler, t, &now));
            s.cycles.push(CycleStatus {
                cycle: cycle.as_str(),
                installed: !files.is_empty(),
                files: files.iter().map(|f| f.display().to_string()).collect(),
                info,
                next_run,
            });
        }
        let any = s.cycles.iter().any(|c| c.installed) || !s.instances.is_empty();
        if any {
            s.manager = ask_manager(scheduler);
        }
        if any || (a.systemd || a.launchd) || Some(scheduler) == platform {
            st.schedulers.push(s);
        }
    }
    if a.json {
        super::print_json(&st)?;
        return Ok(EXIT_OK);
    }
    if st.schedulers.is_empty() {
        println!(
            "no dream units installed, and this platform ({}) has neither systemd nor launchd",
            std::env::consts::OS
        );
    }
    for s in &st.schedulers {
        let single = s.cycles.iter().any(|c| c.installed);
        if !single && s.instances.is_empty() {
            println!(
                "{}: not installed (in {}); run `dream schedule install`",
                s.scheduler, s.dir
            );
            continue;
        }
        println!("{}: units in {}", s.scheduler, s.dir);
        for i in &s.instances {
            println!("  {} (instance {})", i.repo, i.instance);
            for c in &i.cycles {
                println!(
                    "    {:<8} daily at {}{}",
                    c.cycle,
                    c.time.as_deref().unwrap_or("(the template's time)"),
                    if c.enabled { "" } else { ", not enabled" }
                );
                if let Some(n) = &c.next_run {
                    println!("    {:<8} next run {n}", "");
                }
            }
        }
        for c in s.cycles.iter().filter(|_| single) {
            if !c.installed {
                println!("  {:<8} not installed", c.cycle);
                continue;
            }
            println!(
                "  {:<8} daily at {} for {}",
                c.cycle,
                c.info.time.as_deref().unwrap_or("(unknown time)"),
                c.info.repo.as_deref().unwrap_or("(unknown repository)")
            );
            if let Some(n) = &c.next_run {
                println!("  {:<8} next run {n}", "");
            }
        }
        for p in &s.problems {
            println!("  problem: {p}");
        }
        match &s.manager {
            Some(m) => {
                println!("  {} says:", manager_name(s.scheduler));
                for line in m.lines() {
                    println!("    {line}");
                }
            }
            None => println!(
                "  ({} cannot be asked here; the times above are computed from the unit files)",
                manager_name(s.scheduler)
            ),
        }
    }
    Ok(EXIT_OK)
}

fn manager_name(s: Scheduler) -> &'static str {
    match s {
        Scheduler::Systemd => "systemctl --user list-timers",
        Scheduler::Launchd => "launchctl",
    }
}

/// What the service manager says about the units, when it can be asked.
fn ask_manager(scheduler: Scheduler) -> Option<String> {
    match scheduler {
        Scheduler::Systemd => {
            let mut argv: Vec<String> =
                ["systemctl", "--user", "list-timers", "--all", "--no-pager"]
                    .map(String::from)
                    .to_vec();
            argv.extend(CYCLES.map(|c| format!("dream-{}.timer", c.as_str())));
            argv.extend(CYCLES.map(|c| format!("dream-{}@*.timer", c.as_str())));
            run_command(&argv).ok().map(|s| s.trim_end().to_string())
        }
        Scheduler::Launchd => {
            let uid = uid();
            let mut lines = Vec::new();
            for c in CYCLES {
                let label = schedule::launchd_label(c);
                match Command::new("launchctl")
                    .arg("print")
                    .arg(format!("gui/{uid}/{label}"))
                    .output()
                {
                    Ok(o) if o.status.success() => {
                        let text = String::from_utf8_lossy(&o.stdout);
                        let last = text
                            .lines()
                            .find(|l| l.trim_start().starts_with("last exit code"))
                            .map(|l| l.trim().to_string())
                            .unwrap_or_else(|| "not run yet".into());
                        lines.push(format!("{label}: loaded, {last}"));
                    }
                    Ok(_) => lines.push(format!("{label}: not loaded")),
                    Err(_) => return None,
                }
            }
            Some(lines.join("\n"))
        }
    }
}
