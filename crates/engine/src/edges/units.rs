//! The current user's timer units on disk, and the service manager's commands: where the
//! unit files live, what the installed ones say (read back with `schedule`'s pure
//! parsers), which repositories have template instances, whether a timer is enabled, and
//! running `systemctl` / `launchctl`. `human::schedule::install` writes and removes units
//! through these, `human::schedule::inspect` and `dream doctor` read them.

use std::path::{Path, PathBuf};
use std::process::Command;

use dream_core::schema::settings::CycleKind;

use crate::error::{Context, Error, Result};
use crate::schedule::{self, Scheduler, TimeOfDay, CYCLES};

pub fn home() -> Result<PathBuf> {
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

/// Where this user's units of `s` live.
pub fn unit_dir(s: Scheduler) -> Result<PathBuf> {
    let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
    Ok(s.unit_dir(&home()?, xdg.as_deref()))
}

/// The numeric user id, for launchd's `gui/<uid>` domain.
pub fn uid() -> String {
    Command::new("id")
        .arg("-u")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "$(id -u)".into())
}

/// The program running now, with links resolved: the binary the units will run.
pub fn this_binary() -> Result<PathBuf> {
    let bin = std::env::current_exe().context(|| "finding the path of this dream binary".into())?;
    Ok(bin.canonicalize().unwrap_or(bin))
}

/// Run one command; on failure, a sentence saying why.
pub fn run_command(argv: &[String]) -> std::result::Result<String, String> {
    let Some((program, args)) = argv.split_first() else {
        return Err("an empty command cannot run".into());
    };
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("`{program}` could not start: {e}"))?;
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
pub fn run_all(cmds: &[Vec<String>]) -> std::result::Result<(), String> {
    for c in cmds {
        tracing::info!("running {}", schedule::shell_line(c));
        run_command(c)?;
    }
    Ok(())
}

/// Write a file atomically and make it readable by the service manager (mode 644).
pub fn write_unit(path: &Path, contents: &str) -> Result<()> {
    crate::edges::fsutil::write_atomic(path, contents.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))
            .context(|| format!("setting the mode of {}", path.display()))?;
    }
    Ok(())
}

/// Remove a unit file or an enable link (the link itself, not what it points to).
pub fn remove_file(path: &Path) -> Result<()> {
    std::fs::remove_file(path).context(|| format!("removing {}", path.display()))
}

/// Remove an instance's drop-in folder and what it holds.
pub fn remove_dir(path: &Path) -> Result<()> {
    std::fs::remove_dir_all(path).context(|| format!("removing {}", path.display()))
}

/// Create a folder (and its parents) the units need: a drop-in folder, launchd's log
/// folder.
pub fn create_dir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).context(|| format!("creating {}", path.display()))
}

/// The files of one cycle's single-repository units that exist, and what they say.
pub fn read_installed(
    scheduler: Scheduler,
    dir: &Path,
    cycle: CycleKind,
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

/// One repository scheduled through the systemd template units.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    /// The escaped instance name.
    pub instance: String,
    /// The repository it stands for.
    pub repo: String,
    /// Each cycle's start time, from its drop-in (`None`: no drop-in for that cycle).
    pub times: Vec<(CycleKind, Option<TimeOfDay>)>,
}

/// The repositories with template instances in `dir` (a drop-in written by `dream schedule
/// install`, for either cycle), by instance name.
pub fn instances(dir: &Path) -> Vec<Instance> {
    let mut names: Vec<String> = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        for c in CYCLES {
            let prefix = format!("dream-{}@", c.as_str());
            if let Some(inst) = name
                .strip_prefix(&prefix)
                .and_then(|r| r.strip_suffix(".timer.d"))
            {
                if !inst.is_empty() && !names.iter().any(|n| n == inst) {
                    names.push(inst.to_string());
                }
            }
        }
    }
    names.sort();
    names
        .into_iter()
        .filter_map(|instance| {
            let repo = schedule::unescape_path(&instance)?;
            let times = CYCLES
                .iter()
                .map(|&c| {
                    let p = dir
                        .join(schedule::instance_dropin_dir(c, &instance))
                        .join(schedule::DROPIN);
                    let t = std::fs::read_to_string(p)
                        .ok()
                        .and_then(|t| schedule::parse_time(&t));
                    (c, t)
                })
                .collect();
            Some(Instance {
                instance,
                repo,
                times,
            })
        })
        .collect()
}

/// Whether `systemctl --user enable` linked this timer (`timers.target.wants/`).
pub fn linked(dir: &Path, timer: &str) -> bool {
    dir.join("timers.target.wants")
        .join(timer)
        .symlink_metadata()
        .is_ok()
}

/// What systemd says of a timer (`systemctl --user is-enabled` and `is-active`), when it
/// can be asked: `Ok((enabled, active))`, else why it could not.
pub fn systemd_state(timer: &str) -> std::result::Result<(String, String), String> {
    let ask = |verb: &str| {
        let out = Command::new("systemctl")
            .args(["--user", verb, timer])
            .output()
            .map_err(|e| format!("`systemctl` could not start: {e}"))?;
        let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if said.is_empty() {
            let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(format!(
                "`systemctl --user {verb}` answered nothing ({err})"
            ));
        }
        Ok(said)
    };
    Ok((ask("is-enabled")?, ask("is-active")?))
}

/// What the service manager itself says about dream's timers, when it can be asked:
/// `systemctl --user list-timers` of the single-repository and template timers, or each
/// launchd agent's `launchctl print` state and last exit code. `None` when the manager
/// cannot be run here.
pub fn manager_view(scheduler: Scheduler) -> Option<String> {
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
