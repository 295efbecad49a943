//! The schedule (SPEC S11): the systemd user units and launchd agents that run
//! `dream run --cycle morning|evening` every day, as pure functions.
//!
//! The unit files ship in `systemd/` and `launchd/` as templates and are embedded here with
//! `include_str!`, so an installed binary needs no source tree. [`render`] fills them in
//! with absolute paths and times; [`parse_installed`] reads back what an installed file
//! says; [`next_run`] computes when a daily time next comes; [`enable_commands`] and
//! [`disable_commands`] are the exact commands that load and unload the units. All of it
//! is pure; writing the files and running the commands is `human::schedule::install`'s
//! job, reading back what is installed `human::schedule::inspect`'s, both through
//! `edges::units`.
//!
//! For a machine that keeps many memory repositories there are template units
//! (`dream-evening@.service` and the rest, [`render_templates`]): the instance is the
//! repository's path escaped as `systemd-escape --path` does ([`escape_path`]), and each
//! instance's timer gets its own start time in a drop-in ([`instance_dropin`]), one
//! `--stagger` step after the previous repository's ([`assign_times`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::LazyLock;

use chrono::{DateTime, Duration, NaiveTime, TimeZone};
use regex::Regex;
use serde::Serialize;

use dream_core::schema::settings::CycleKind;

/// The two daily cycles, in the order they are listed.
pub const CYCLES: [CycleKind; 2] = [CycleKind::Morning, CycleKind::Evening];

/// Default times of day (local time).
pub const DEFAULT_MORNING: TimeOfDay = TimeOfDay { hour: 7, minute: 0 };
pub const DEFAULT_EVENING: TimeOfDay = TimeOfDay {
    hour: 22,
    minute: 0,
};

/// The systemd timers' `RandomizedDelaySec`, in minutes: a run starts up to this late.
pub const RANDOMIZED_DELAY_MIN: u32 = 10;

const SYSTEMD_MORNING_SERVICE: &str = include_str!("../../../systemd/dream-morning.service");
const SYSTEMD_MORNING_TIMER: &str = include_str!("../../../systemd/dream-morning.timer");
const SYSTEMD_EVENING_SERVICE: &str = include_str!("../../../systemd/dream-evening.service");
const SYSTEMD_EVENING_TIMER: &str = include_str!("../../../systemd/dream-evening.timer");
const SYSTEMD_MORNING_TEMPLATE_SERVICE: &str =
    include_str!("../../../systemd/dream-morning@.service");
const SYSTEMD_MORNING_TEMPLATE_TIMER: &str = include_str!("../../../systemd/dream-morning@.timer");
const SYSTEMD_EVENING_TEMPLATE_SERVICE: &str =
    include_str!("../../../systemd/dream-evening@.service");
const SYSTEMD_EVENING_TEMPLATE_TIMER: &str = include_str!("../../../systemd/dream-evening@.timer");
const LAUNCHD_MORNING: &str = include_str!("../../../launchd/local.dream.morning.plist");
const LAUNCHD_EVENING: &str = include_str!("../../../launchd/local.dream.evening.plist");

/// Which service manager runs the timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    Systemd,
    Launchd,
}

impl Scheduler {
    /// The scheduler of the platform dream was built for, if it has one.
    pub fn for_platform() -> Option<Scheduler> {
        if cfg!(target_os = "macos") {
            Some(Scheduler::Launchd)
        } else if cfg!(target_os = "linux") {
            Some(Scheduler::Systemd)
        } else {
            None
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scheduler::Systemd => "systemd",
            Scheduler::Launchd => "launchd",
        }
    }

    /// Where the current user's units live: `$XDG_CONFIG_HOME/systemd/user` (default
    /// `~/.config/systemd/user`), or `~/Library/LaunchAgents`.
    pub fn unit_dir(self, home: &Path, xdg_config_home: Option<&Path>) -> PathBuf {
        match self {
            Scheduler::Systemd => xdg_config_home
                .filter(|p| p.is_absolute())
                .map(Path::to_path_buf)
                .unwrap_or_else(|| home.join(".config"))
                .join("systemd/user"),
            Scheduler::Launchd => home.join("Library/LaunchAgents"),
        }
    }

    /// The file names this scheduler's units have, per cycle.
    pub fn file_names(self, cycle: CycleKind) -> Vec<String> {
        let c = cycle.as_str();
        match self {
            Scheduler::Systemd => vec![format!("dream-{c}.service"), format!("dream-{c}.timer")],
            Scheduler::Launchd => vec![format!("{}.plist", launchd_label(cycle))],
        }
    }
}

impl fmt::Display for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The launchd job label of a cycle.
pub fn launchd_label(cycle: CycleKind) -> String {
    format!("local.dream.{}", cycle.as_str())
}

/// A time of day, `HH:MM` on a 24-hour clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeOfDay {
    pub hour: u32,
    pub minute: u32,
}

impl FromStr for TimeOfDay {
    type Err = String;

    fn from_str(s: &str) -> Result<TimeOfDay, String> {
        let bad = || {
            format!(
                "{s:?} is not a time of day: use HH:MM on a 24-hour clock, for example 07:00 or 22:30"
            )
        };
        let (h, m) = s.trim().split_once(':').ok_or_else(bad)?;
        let digits = |p: &str, max_len: usize| {
            !p.is_empty() && p.len() <= max_len && p.bytes().all(|b| b.is_ascii_digit())
        };
        if !(digits(h, 2) && m.len() == 2 && digits(m, 2)) {
            return Err(bad());
        }
        let (hour, minute): (u32, u32) =
            (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
        if hour > 23 || minute > 59 {
            return Err(bad());
        }
        Ok(TimeOfDay { hour, minute })
    }
}

impl fmt::Display for TimeOfDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}:{:02}", self.hour, self.minute)
    }
}

impl TimeOfDay {
    /// The systemd `OnCalendar=` value: every day at this time.
    pub fn on_calendar(self) -> String {
        format!("*-*-* {:02}:{:02}:00", self.hour, self.minute)
    }

    /// This time `minutes` later, wrapping at midnight.
    pub fn plus_minutes(self, minutes: u32) -> TimeOfDay {
        let m = (self.hour * 60 + self.minute + minutes) % (24 * 60);
        TimeOfDay {
            hour: m / 60,
            minute: m % 60,
        }
    }
}

/// One rendered unit file.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitFile {
    pub cycle: CycleKind,
    pub name: String,
    pub contents: String,
}

/// The unit files for a scheduler, with absolute paths to the binary and the repository.
/// Fails (with a sentence for a person) when a path cannot be written safely into them.
pub fn render(
    scheduler: Scheduler,
    bin: &Path,
    repo: &Path,
    morning: TimeOfDay,
    evening: TimeOfDay,
) -> Result<Vec<UnitFile>, String> {
    let bin = path_text(bin, "the dream binary")?;
    let repo = path_text(repo, "the repository")?;
    let mut out = Vec::new();
    for cycle in CYCLES {
        let time = match cycle {
            CycleKind::Morning => morning,
            CycleKind::Evening => evening,
        };
        let names = scheduler.file_names(cycle);
        match scheduler {
            Scheduler::Systemd => {
                let (service, timer) = match cycle {
                    CycleKind::Morning => (SYSTEMD_MORNING_SERVICE, SYSTEMD_MORNING_TIMER),
                    CycleKind::Evening => (SYSTEMD_EVENING_SERVICE, SYSTEMD_EVENING_TIMER),
                };
                let service = service
                    .replace("@BIN@", &systemd_quote(&bin, true)?)
                    .replace(
                        "--repo @REPO@",
                        &format!("--repo {}", systemd_quote(&repo, true)?),
                    )
                    .replace("@REPO@", &systemd_quote(&repo, false)?);
                let timer = timer
                    .replace("@ON_CALENDAR@", &time.on_calendar())
                    .replace("@TIME@", &time.to_string());
                out.push(UnitFile {
                    cycle,
                    name: names[0].clone(),
                    contents: service,
                });
                out.push(UnitFile {
                    cycle,
                    name: names[1].clone(),
                    contents: timer,
                });
            }
            Scheduler::Launchd => {
                let template = match cycle {
                    CycleKind::Morning => LAUNCHD_MORNING,
                    CycleKind::Evening => LAUNCHD_EVENING,
                };
                let log_dir = format!("{}/{}", repo.trim_end_matches('/'), LOG_DIR);
                let plist = template
                    .replace("@BIN@", &xml_escape(&bin))
                    .replace("@REPO@", &xml_escape(&repo))
                    .replace("@LOG_DIR@", &xml_escape(&log_dir))
                    .replace("@HOUR@", &time.hour.to_string())
                    .replace("@MINUTE@", &time.minute.to_string())
                    .replace("@TIME@", &time.to_string());
                out.push(UnitFile {
                    cycle,
                    name: names[0].clone(),
                    contents: plist,
                });
            }
        }
    }
    Ok(out)
}

/// Where launchd jobs write their logs, relative to the repository (git-ignored).
pub const LOG_DIR: &str = ".dream/logs";

fn path_text(p: &Path, what: &str) -> Result<String, String> {
    let s = p.to_str().ok_or_else(|| {
        format!(
            "the path of {what} ({}) is not UTF-8; unit files cannot name it",
            p.display()
        )
    })?;
    if !p.is_absolute() {
        return Err(format!("the path of {what} ({s}) must be absolute"));
    }
    if let Some(c) = s
        .chars()
        .find(|c| c.is_control() || *c == '"' || *c == '\\')
    {
        return Err(format!(
            "the path of {what} ({s:?}) holds {c:?}, which unit files cannot carry safely; \
             move it to a plainer path"
        ));
    }
    Ok(s.to_string())
}

/// The instance name of a repository path, as `systemd-escape --path` writes it: the
/// path without its leading and trailing `/`, each `/` a `-`, and every byte that is not
/// an ASCII letter, digit, `:`, `_` or `.` (or a leading `.`) as `\xHH`. `/` alone is `-`.
pub fn escape_path(path: &str) -> String {
    // Simplified first, as `systemd-escape` does: no empty components.
    let trimmed: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let trimmed = trimmed.join("/");
    if trimmed.is_empty() {
        return "-".into();
    }
    let mut out = String::new();
    for (i, b) in trimmed.bytes().enumerate() {
        match b {
            b'/' => out.push('-'),
            b'.' if i == 0 => out.push_str("\\x2e"),
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b':' | b'_' | b'.' => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// The path an instance name stands for (the inverse of [`escape_path`]; systemd's `%f`).
pub fn unescape_path(instance: &str) -> Option<String> {
    if instance == "-" {
        return Some("/".into());
    }
    let mut bytes = vec![b'/'];
    let raw = instance.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'-' => bytes.push(b'/'),
            b'\\' => {
                let hex = instance.get(i + 2..i + 4)?;
                if raw.get(i + 1) != Some(&b'x') {
                    return None;
                }
                bytes.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b => bytes.push(b),
        }
        i += 1;
    }
    String::from_utf8(bytes).ok()
}

/// The template units (four files), with the absolute path of the binary.
pub fn render_templates(bin: &Path) -> Result<Vec<UnitFile>, String> {
    let bin = systemd_quote(&path_text(bin, "the dream binary")?, true)?;
    let mut out = Vec::new();
    for cycle in CYCLES {
        let (service, timer) = match cycle {
            CycleKind::Morning => (
                SYSTEMD_MORNING_TEMPLATE_SERVICE,
                SYSTEMD_MORNING_TEMPLATE_TIMER,
            ),
            CycleKind::Evening => (
                SYSTEMD_EVENING_TEMPLATE_SERVICE,
                SYSTEMD_EVENING_TEMPLATE_TIMER,
            ),
        };
        let c = cycle.as_str();
        out.push(UnitFile {
            cycle,
            name: format!("dream-{c}@.service"),
            contents: service.replace("@BIN@", &bin),
        });
        out.push(UnitFile {
            cycle,
            name: format!("dream-{c}@.timer"),
            contents: timer.to_string(),
        });
    }
    Ok(out)
}

/// The template file names.
pub fn template_names() -> Vec<String> {
    CYCLES
        .iter()
        .flat_map(|c| {
            let c = c.as_str();
            [format!("dream-{c}@.service"), format!("dream-{c}@.timer")]
        })
        .collect()
}

/// The timer unit of one repository's cycle.
pub fn instance_timer(cycle: CycleKind, instance: &str) -> String {
    format!("dream-{}@{instance}.timer", cycle.as_str())
}

/// The drop-in folder of one repository's timer, relative to the unit folder.
pub fn instance_dropin_dir(cycle: CycleKind, instance: &str) -> String {
    format!("{}.d", instance_timer(cycle, instance))
}

/// The name of the drop-in file `dream schedule install` writes in that folder.
pub const DROPIN: &str = "dream.conf";

/// The drop-in that sets when one repository's cycle runs.
pub fn instance_dropin(cycle: CycleKind, repo: &str, time: TimeOfDay) -> String {
    format!(
        "# Written by `dream schedule install`: the {} cycle of {repo} runs every day at {time}\n\
         # (local time). Installing again rewrites it.\n\n[Timer]\nOnCalendar=\nOnCalendar={}\n",
        cycle.as_str(),
        time.on_calendar()
    )
}

/// The time a drop-in (or a timer) sets: its last `OnCalendar=` daily time.
pub fn parse_time(text: &str) -> Option<TimeOfDay> {
    ON_CALENDAR_RE
        .captures_iter(text)
        .last()
        .and_then(|c| format!("{}:{}", &c[1], &c[2]).parse().ok())
}

/// Start times for `count` repositories: from `base` on, in steps of `stagger_min`
/// minutes (wrapping at midnight), the first ones no other repository has (`taken`).
pub fn assign_times(
    base: TimeOfDay,
    stagger_min: u32,
    taken: &[TimeOfDay],
    count: usize,
) -> Vec<TimeOfDay> {
    let mut out: Vec<TimeOfDay> = Vec::new();
    let step = stagger_min.max(1);
    let mut k = 0;
    while out.len() < count {
        let t = base.plus_minutes(k * step);
        k += 1;
        if (!taken.contains(&t) && !out.contains(&t)) || k > 24 * 60 {
            out.push(t);
        }
    }
    out
}

/// Commands that load and start the timers of these instances.
pub fn instance_enable_commands(instances: &[String]) -> Vec<Vec<String>> {
    let mut enable: Vec<String> = ["systemctl", "--user", "enable", "--now"]
        .map(String::from)
        .to_vec();
    for i in instances {
        enable.extend(CYCLES.map(|c| instance_timer(c, i)));
    }
    vec![
        ["systemctl", "--user", "daemon-reload"]
            .map(String::from)
            .to_vec(),
        enable,
    ]
}

/// Commands that stop and unload the timers of these instances.
pub fn instance_disable_commands(instances: &[String]) -> Vec<Vec<String>> {
    let mut disable: Vec<String> = ["systemctl", "--user", "disable", "--now"]
        .map(String::from)
        .to_vec();
    for i in instances {
        disable.extend(CYCLES.map(|c| instance_timer(c, i)));
    }
    vec![disable]
}

/// A path quoted for a systemd unit: in double quotes, `%` doubled (specifiers), and in
/// command lines `$` doubled (variable expansion). `"` and `\` are refused by `path_text`.
fn systemd_quote(s: &str, command_line: bool) -> Result<String, String> {
    let mut q = s.replace('%', "%%");
    if command_line {
        q = q.replace('$', "$$");
    }
    Ok(format!("\"{q}\""))
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

fn xml_unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// What an installed unit says: the daily time, the binary and the repository.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UnitInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
}

static ON_CALENDAR_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^OnCalendar=\*-\*-\* (\d{2}):(\d{2}):00\s*$").expect("OnCalendar pattern")
});
static EXEC_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?m)^ExecStart=(?:"([^"]*)"|(\S+)) --repo (?:"([^"]*)"|(\S+))"#)
        .expect("ExecStart pattern")
});
static PLIST_HOUR_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<key>Hour</key>\s*<integer>(\d+)</integer>").expect("Hour pattern")
});
static PLIST_MINUTE_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<key>Minute</key>\s*<integer>(\d+)</integer>").expect("Minute pattern")
});
static PLIST_ARGS_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)<key>ProgramArguments</key>\s*<array>(.*?)</array>")
        .expect("arguments pattern")
});
static PLIST_STRING_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<string>(.*?)</string>").expect("string pattern"));

fn unquote_systemd(s: &str) -> String {
    s.replace("%%", "%").replace("$$", "$")
}

/// Read the time, binary and repository back from the installed files of one cycle
/// (their texts, as written by [`render`] or edited by hand in the same shape).
pub fn parse_installed(scheduler: Scheduler, texts: &[String]) -> UnitInfo {
    let mut info = UnitInfo::default();
    for text in texts {
        match scheduler {
            Scheduler::Systemd => {
                if let Some(c) = ON_CALENDAR_RE.captures(text) {
                    info.time = Some(format!("{}:{}", &c[1], &c[2]));
                }
                if let Some(c) = EXEC_RE.captures(text) {
                    let pick = |a: usize, b: usize| {
                        c.get(a).or(c.get(b)).map(|m| unquote_systemd(m.as_str()))
                    };
                    info.binary = pick(1, 2);
                    info.repo = pick(3, 4);
                }
            }
            Scheduler::Launchd => {
                if let (Some(h), Some(m)) =
                    (PLIST_HOUR_RE.captures(text), PLIST_MINUTE_RE.captures(text))
                {
                    let (h, m): (u32, u32) = (h[1].parse().unwrap_or(0), m[1].parse().unwrap_or(0));
                    info.time = Some(format!("{h:02}:{m:02}"));
                }
                if let Some(a) = PLIST_ARGS_RE.captures(text) {
                    let args: Vec<String> = PLIST_STRING_RE
                        .captures_iter(&a[1])
                        .map(|c| xml_unescape(&c[1]))
                        .collect();
                    info.binary = args.first().cloned();
                    info.repo = args
                        .iter()
                        .position(|s| s == "--repo")
                        .and_then(|i| args.get(i + 1).cloned());
                }
            }
        }
    }
    info
}

/// The next time a daily `time` comes after `now`, in `now`'s time zone. On a day when the
/// clock skips that time (a daylight-saving change), the first moment after the gap.
pub fn next_run<Tz: TimeZone>(time: TimeOfDay, now: &DateTime<Tz>) -> DateTime<Tz> {
    let tz = now.timezone();
    let at = NaiveTime::from_hms_opt(time.hour, time.minute, 0).unwrap_or_default();
    let mut day = now.date_naive();
    for _ in 0..3 {
        let naive = day.and_time(at);
        let local = tz.from_local_datetime(&naive).earliest().or_else(|| {
            tz.from_local_datetime(&(naive + Duration::hours(1)))
                .earliest()
        });
        if let Some(t) = local {
            if t > *now {
                return t;
            }
        }
        day = day.succ_opt().unwrap_or(day);
    }
    now.clone() + Duration::days(1)
}

/// When a daily `time` next comes after `now`, as `dream schedule` shows it: the day and
/// time in `now`'s zone, and for systemd the window its randomized delay adds.
pub fn describe_next<Tz: TimeZone>(
    scheduler: Scheduler,
    time: TimeOfDay,
    now: &DateTime<Tz>,
) -> String
where
    Tz::Offset: fmt::Display,
{
    let next = next_run(time, now);
    let within = if scheduler == Scheduler::Systemd {
        format!(" (starting within {RANDOMIZED_DELAY_MIN} minutes)")
    } else {
        String::new()
    };
    format!("{}{within}", next.format("%a %Y-%m-%d %H:%M %Z"))
}

/// The commands that load and start the installed units, in order. `uid` is the numeric
/// user id (launchd's `gui/<uid>` domain).
pub fn enable_commands(scheduler: Scheduler, dir: &Path, uid: &str) -> Vec<Vec<String>> {
    match scheduler {
        Scheduler::Systemd => {
            let mut enable: Vec<String> = ["systemctl", "--user", "enable", "--now"]
                .map(String::from)
                .to_vec();
            enable.extend(CYCLES.map(|c| format!("dream-{}.timer", c.as_str())));
            vec![
                ["systemctl", "--user", "daemon-reload"]
                    .map(String::from)
                    .to_vec(),
                enable,
            ]
        }
        Scheduler::Launchd => CYCLES
            .iter()
            .map(|&c| {
                vec![
                    "launchctl".into(),
                    "bootstrap".into(),
                    format!("gui/{uid}"),
                    dir.join(format!("{}.plist", launchd_label(c)))
                        .display()
                        .to_string(),
                ]
            })
            .collect(),
    }
}

/// The commands that stop and unload the units (before their files are removed).
pub fn disable_commands(scheduler: Scheduler, uid: &str) -> Vec<Vec<String>> {
    match scheduler {
        Scheduler::Systemd => {
            let mut disable: Vec<String> = ["systemctl", "--user", "disable", "--now"]
                .map(String::from)
                .to_vec();
            disable.extend(CYCLES.map(|c| format!("dream-{}.timer", c.as_str())));
            vec![disable]
        }
        Scheduler::Launchd => CYCLES
            .iter()
            .map(|&c| {
                vec![
                    "launchctl".into(),
                    "bootout".into(),
                    format!("gui/{uid}/{}", launchd_label(c)),
                ]
            })
            .collect(),
    }
}

/// The commands after the files are gone: systemd forgets the removed units.
pub fn after_uninstall_commands(scheduler: Scheduler) -> Vec<Vec<String>> {
    match scheduler {
        Scheduler::Systemd => vec![["systemctl", "--user", "daemon-reload"]
            .map(String::from)
            .to_vec()],
        Scheduler::Launchd => Vec::new(),
    }
}

/// The commands that unload units whose files were already removed (when the service
/// manager could not be reached during `uninstall`).
pub fn unload_removed_commands(scheduler: Scheduler, uid: &str) -> Vec<Vec<String>> {
    match scheduler {
        Scheduler::Systemd => {
            let mut stop: Vec<String> = ["systemctl", "--user", "stop"].map(String::from).to_vec();
            stop.extend(CYCLES.map(|c| format!("dream-{}.timer", c.as_str())));
            let mut cmds = vec![stop];
            cmds.extend(after_uninstall_commands(scheduler));
            cmds
        }
        Scheduler::Launchd => disable_commands(scheduler, uid),
    }
}

/// The links `systemctl enable` makes for a cycle's timer, relative to the unit folder
/// (removed with the units when systemctl cannot do it).
pub fn enable_links(scheduler: Scheduler, cycle: CycleKind) -> Vec<String> {
    match scheduler {
        Scheduler::Systemd => vec![format!(
            "timers.target.wants/dream-{}.timer",
            cycle.as_str()
        )],
        Scheduler::Launchd => Vec::new(),
    }
}

/// A command as a person would type it (arguments with spaces quoted).
pub fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c)) {
                format!("'{}'", a.replace('\'', r"'\''"))
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn t(s: &str) -> TimeOfDay {
        s.parse().unwrap()
    }

    #[test]
    fn times_of_day_are_hh_mm_on_a_24_hour_clock() {
        assert_eq!(t("07:00"), TimeOfDay { hour: 7, minute: 0 });
        assert_eq!(t("7:05"), TimeOfDay { hour: 7, minute: 5 });
        assert_eq!(t("23:59").to_string(), "23:59");
        for bad in [
            "24:00", "07:60", "7", "7pm", "07:5", "-1:00", "07:00:00", "", " : ",
        ] {
            let err = bad.parse::<TimeOfDay>().unwrap_err();
            assert!(err.contains("HH:MM on a 24-hour clock"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_next_run_is_today_when_the_time_is_still_ahead_else_tomorrow() {
        let now: DateTime<Utc> = "2026-11-06T21:00:00Z".parse().unwrap();
        assert_eq!(
            next_run(t("22:00"), &now).to_rfc3339(),
            "2026-11-06T22:00:00+00:00"
        );
        assert_eq!(
            next_run(t("07:00"), &now).to_rfc3339(),
            "2026-11-07T07:00:00+00:00"
        );
        assert_eq!(
            next_run(t("21:00"), &now).to_rfc3339(),
            "2026-11-07T21:00:00+00:00"
        );
    }

    #[test]
    fn systemd_units_are_rendered_with_quoted_absolute_paths() {
        let units = render(
            Scheduler::Systemd,
            Path::new("/opt/dream/bin/dream"),
            Path::new("/home/ana/my memory%1"),
            t("06:30"),
            t("22:15"),
        )
        .unwrap();
        let names: Vec<&str> = units.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "dream-morning.service",
                "dream-morning.timer",
                "dream-evening.service",
                "dream-evening.timer"
            ]
        );
        for u in &units {
            assert!(
                !u.contents.contains('@'),
                "a placeholder is left in {}:\n{}",
                u.name,
                u.contents
            );
        }
        let service = &units[0].contents;
        assert!(service.contains(
            "ExecStart=\"/opt/dream/bin/dream\" --repo \"/home/ana/my memory%%1\" run --cycle morning --verbose"
        ), "{service}");
        assert!(
            service.contains("ReadWritePaths=\"/home/ana/my memory%%1\"\n"),
            "{service}"
        );
        assert!(service.contains("SuccessExitStatus=75 10\n"));
        assert!(units[1].contents.contains("OnCalendar=*-*-* 06:30:00\n"));
        assert!(units[3].contents.contains("OnCalendar=*-*-* 22:15:00\n"));
        assert!(units[3].contents.contains("Persistent=true\n"));

        let info = parse_installed(
            Scheduler::Systemd,
            &[units[2].contents.clone(), units[3].contents.clone()],
        );
        assert_eq!(info.time.as_deref(), Some("22:15"));
        assert_eq!(info.binary.as_deref(), Some("/opt/dream/bin/dream"));
        assert_eq!(info.repo.as_deref(), Some("/home/ana/my memory%1"));
    }

    #[test]
    fn launchd_agents_are_rendered_and_read_back() {
        let units = render(
            Scheduler::Launchd,
            Path::new("/usr/local/bin/dream"),
            Path::new("/Users/ana/R&D memory"),
            t("07:00"),
            t("21:45"),
        )
        .unwrap();
        assert_eq!(units.len(), 2);
        assert_eq!(units[1].name, "local.dream.evening.plist");
        let plist = &units[1].contents;
        assert!(!plist.contains('@'), "{plist}");
        assert!(
            plist.contains("<string>/Users/ana/R&amp;D memory</string>"),
            "{plist}"
        );
        assert!(
            plist.contains("<string>/Users/ana/R&amp;D memory/.dream/logs/evening.log</string>")
        );
        let info = parse_installed(Scheduler::Launchd, std::slice::from_ref(plist));
        assert_eq!(info.time.as_deref(), Some("21:45"));
        assert_eq!(info.repo.as_deref(), Some("/Users/ana/R&D memory"));
        assert_eq!(info.binary.as_deref(), Some("/usr/local/bin/dream"));
    }

    #[test]
    fn paths_units_cannot_carry_are_refused_with_a_reason() {
        let err = render(
            Scheduler::Systemd,
            Path::new("/bin/dream"),
            Path::new("/home/a\"b"),
            DEFAULT_MORNING,
            DEFAULT_EVENING,
        )
        .unwrap_err();
        assert!(err.contains("cannot carry safely"), "{err}");
        let err = render(
            Scheduler::Systemd,
            Path::new("dream"),
            Path::new("/r"),
            DEFAULT_MORNING,
            DEFAULT_EVENING,
        )
        .unwrap_err();
        assert!(err.contains("must be absolute"), "{err}");
    }

    #[test]
    fn paths_escape_as_systemd_escape_does() {
        for (path, inst) in [
            ("/home/ana/memory", "home-ana-memory"),
            ("/home/ana/my memory", "home-ana-my\\x20memory"),
            ("/home/ana/my-memory.x/_a", "home-ana-my\\x2dmemory.x-_a"),
            ("/srv/.hidden/é", "srv-.hidden-\\xc3\\xa9"),
            ("/.dot", "\\x2edot"),
            ("/", "-"),
        ] {
            assert_eq!(escape_path(path), inst, "{path}");
            assert_eq!(unescape_path(inst).as_deref(), Some(path), "{inst}");
        }
        assert_eq!(escape_path("/a//b/"), "a-b");
        assert_eq!(unescape_path("a\\xzz"), None);
        // The real tool agrees, where it is installed.
        if let Ok(out) = std::process::Command::new("systemd-escape")
            .args(["--path", "/home/ana/my memory-2/é.d"])
            .output()
        {
            if out.status.success() {
                assert_eq!(
                    String::from_utf8_lossy(&out.stdout).trim(),
                    escape_path("/home/ana/my memory-2/é.d")
                );
            }
        }
    }

    #[test]
    fn repositories_take_the_first_free_staggered_start() {
        let base = t("22:00");
        assert_eq!(
            assign_times(base, 10, &[], 3),
            [t("22:00"), t("22:10"), t("22:20")]
        );
        assert_eq!(
            assign_times(base, 10, &[t("22:00"), t("22:20")], 2),
            [t("22:10"), t("22:30")]
        );
        assert_eq!(assign_times(t("23:55"), 10, &[t("23:55")], 1), [t("00:05")]);
        let units = render_templates(Path::new("/opt/dream")).unwrap();
        let names: Vec<&str> = units.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, template_names());
        assert!(units[2]
            .contents
            .contains("ExecStart=\"/opt/dream\" --repo \"%f\" run --cycle evening --verbose\n"));
        let dropin = instance_dropin(CycleKind::Evening, "/home/ana/memory", t("22:10"));
        assert_eq!(parse_time(&dropin), Some(t("22:10")));
        assert!(dropin.contains("\nOnCalendar=\nOnCalendar=*-*-* 22:10:00\n"));
    }

    #[test]
    fn commands_are_the_ones_a_person_would_type() {
        let dir = Path::new("/Users/ana/Library/LaunchAgents");
        let lines: Vec<String> = enable_commands(Scheduler::Launchd, dir, "501")
            .iter()
            .map(|c| shell_line(c))
            .collect();
        assert_eq!(
            lines[0],
            "launchctl bootstrap gui/501 /Users/ana/Library/LaunchAgents/local.dream.morning.plist"
        );
        let lines: Vec<String> = enable_commands(Scheduler::Systemd, dir, "501")
            .iter()
            .map(|c| shell_line(c))
            .collect();
        assert_eq!(
            lines,
            [
                "systemctl --user daemon-reload",
                "systemctl --user enable --now dream-morning.timer dream-evening.timer"
            ]
        );
        assert_eq!(shell_line(&["ls".into(), "a b".into()]), "ls 'a b'");
    }
}
