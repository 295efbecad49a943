//! `dream schedule install|uninstall|status`: write, remove and inspect the current user's
//! timer units (rendered by `schedule.rs`), and run the systemctl/launchctl commands that
//! load them, or print those commands when they cannot run here.

use std::path::{Path, PathBuf};
use std::process::Command;

use chrono::{DateTime, Local};
use serde::Serialize;

use crate::cli::{
    Global, ScheduleAction, ScheduleArgs, ScheduleInstallArgs, ScheduleStatusArgs, ScheduleTarget,
};
use crate::error::{Context, Error, Result, EXIT_OK};
use crate::schedule::{self, Scheduler, TimeOfDay, CYCLES, LOG_DIR, RANDOMIZED_DELAY_MIN};

pub fn run(g: &Global, a: &ScheduleArgs) -> Result<i32> {
    match &a.action {
        ScheduleAction::Install(a) => install(g, a),
        ScheduleAction::Uninstall(t) => uninstall(t),
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

fn home() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| {
            Error::Usage(
                "HOME is not set, so there is no user folder to install the units in; set HOME"
                    .into(),
            )
        })
}

fn unit_dir(s: Scheduler) -> Result<PathBuf> {
    let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
    Ok(s.unit_dir(&home()?, xdg.as_deref()))
}

/// The numeric user id, for launchd's `gui/<uid>` domain.
fn uid() -> String {
    Command::new("id")
        .arg("-u")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "$(id -u)".into())
}

/// Run one command; on failure, a sentence saying why.
fn run_command(argv: &[String]) -> std::result::Result<String, String> {
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .map_err(|e| format!("`{}` could not start: {e}", argv[0]))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let err = err.trim();
    Err(format!(
        "`{}` failed ({}){}",
        schedule::shell_line(argv),
        out.status,
        if err.is_empty() {
            String::new()
        } else {
            format!(": {err}")
        }
    ))
}

/// Run commands in order; stop at the first failure and return it.
fn run_all(cmds: &[Vec<String>]) -> std::result::Result<(), String> {
    for c in cmds {
        tracing::info!("running {}", schedule::shell_line(c));
        run_command(c)?;
    }
    Ok(())
}

/// Write a file atomically and make it readable by the service manager (mode 644).
fn write_unit(path: &Path, contents: &str) -> Result<()> {
    crate::edges::fsutil::write_atomic(path, contents.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))
            .context(|| format!("setting the mode of {}", path.display()))?;
    }
    Ok(())
}

fn print_commands(cmds: &[Vec<String>]) {
    for c in cmds {
        println!("    {}", schedule::shell_line(c));
    }
}

fn install(g: &Global, a: &ScheduleInstallArgs) -> Result<i32> {
    let scheduler = chosen(a.target.systemd, a.target.launchd)?;
    let repo = super::repo_root(g)?;
    let repo = repo
        .canonicalize()
        .context(|| format!("resolving {}", repo.display()))?;
    let bin = std::env::current_exe().context(|| "finding the path of this dream binary".into())?;
    let bin = bin.canonicalize().unwrap_or(bin);
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
        println!("replacing the {scheduler} schedule of {other} (one repository per user; see docs/operations.md for more)");
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
    if bin.components().any(|c| c.as_os_str() == "target") {
        println!(
            "  note: this binary is inside a cargo build folder; install dream (`cargo install --path .`) \
             and run `dream schedule install` again, or the units break on the next `cargo clean`"
        );
    }

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
            home()?.display()
        );
    }
    print_next_runs(scheduler, super::now(g)?, a.morning, a.evening);
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

/// The files of one cycle that exist, and what they say.
fn read_installed(
    scheduler: Scheduler,
    dir: &Path,
    cycle: dream_core::config::CycleKind,
) -> (Vec<PathBuf>, schedule::UnitInfo) {
    let mut files = Vec::new();
    let mut texts = Vec::new();
    for name in scheduler.file_names(cycle) {
        let path = dir.join(name);
        if let Ok(text) = std::fs::read_to_string(&path) {
            texts.push(text);
            files.push(path);
        }
    }
    (files, schedule::parse_installed(scheduler, &texts))
}

fn uninstall(t: &ScheduleTarget) -> Result<i32> {
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
    /// What the service manager itself says (`systemctl --user list-timers`, `launchctl
    /// print`), when it can be asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    manager: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    problems: Vec<String>,
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
            manager: None,
            problems: Vec::new(),
        };
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
                if !Path::new(r).join(dream_core::config::FILE).is_file() {
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
        let any = s.cycles.iter().any(|c| c.installed);
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
        let any = s.cycles.iter().any(|c| c.installed);
        if !any {
            println!(
                "{}: not installed (in {}); run `dream schedule install`",
                s.scheduler, s.dir
            );
            continue;
        }
        println!("{}: units in {}", s.scheduler, s.dir);
        for c in &s.cycles {
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
