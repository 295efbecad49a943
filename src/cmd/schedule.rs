//! `dream schedule install|uninstall|status`: the current user's timer units. The engine
//! writes, removes and reads them and runs systemctl/launchctl (`human::schedule`); this
//! file turns the arguments into its options and prints what it did, or the commands to run
//! when they cannot run here. One repository gets the single-repository units; several (or
//! `--instance`) get the systemd template units, one instance per repository.

use std::path::PathBuf;

use crate::cli::{
    Global, ScheduleAction, ScheduleArgs, ScheduleInstallArgs, ScheduleStatusArgs,
    ScheduleUninstallArgs,
};
use dream_engine::edges::units;
use dream_engine::error::{Context, Error, Result, EXIT_FAILURE, EXIT_OK};
use dream_engine::human::schedule::inspect::{self, SchedulerStatus};
use dream_engine::human::schedule::install::{
    self, Account, Installed, InstalledInstances, Loading, Options, Step, Uninstalled,
};
use dream_engine::schedule::{self, Scheduler};

pub fn run(g: &Global, a: &ScheduleArgs) -> Result<i32> {
    match &a.action {
        ScheduleAction::Install(a) => install(g, a),
        ScheduleAction::Uninstall(a) if a.instance => uninstall_instances(g, a),
        ScheduleAction::Uninstall(a) => uninstall(a),
        ScheduleAction::Status(a) => status(g, a),
    }
}

fn print_commands(cmds: &[Vec<String>]) {
    for c in cmds {
        println!("    {}", schedule::shell_line(c));
    }
}

/// A change to the unit folder, as it is made.
fn print_step(step: Step) {
    match step {
        Step::Replacing { scheduler, repo } => println!("replacing the {scheduler} schedule of {repo} (the single-repository units run one repository; for several, `dream schedule install --repo A --repo B`)"),
        Step::Wrote(path) => println!("wrote {}", path.display()),
        Step::WroteDropin {
            path,
            cycle,
            repo,
            time,
            timer,
        } => {
            println!("wrote {}", path.display());
            println!(
                "  {} cycle of {repo} daily at {time} (local time): {timer}",
                cycle.as_str()
            );
        }
        Step::Removed(path) => println!("removed {}", path.display()),
        Step::NoInstance { repo, dir } => println!(
            "no dream instance for {repo} in {}; nothing to remove",
            dir.display()
        ),
    }
}

fn install(g: &Global, a: &ScheduleInstallArgs) -> Result<i32> {
    let several = a.instance || g.repo.len() > 1;
    let scheduler = install::chosen_to_install(a.target.systemd, a.target.launchd, several)?;
    let repos = if several {
        super::repo_roots(g)?
    } else {
        vec![super::repo_root(g)?]
    };
    for r in &repos {
        refuse_member(r)?;
    }
    let opts = Options {
        scheduler,
        binary: units::this_binary()?,
        morning: a.morning,
        evening: a.evening,
        stagger: a.stagger,
    };
    let loading = if several {
        let done = install::instances(&repos, &opts, &mut print_step)?;
        print_instances_notes(&done);
        let loading = done.load(!a.target.no_enable);
        print_loading(&loading);
        print_instances_hints(&done.account);
        loading
    } else {
        let done = install::single(&repos[0], &opts, &mut print_step)?;
        print_single_notes(&done);
        let loading = done.load(!a.target.no_enable);
        print_loading(&loading);
        print_single_hints(&done);
        for (cycle, next) in done.next_runs(super::now(g)?) {
            println!("  next {} run: {next}", cycle.as_str());
        }
        loading
    };
    Ok(if loading.failed() {
        EXIT_FAILURE
    } else {
        EXIT_OK
    })
}

/// A member of a shared memory runs no cycles (its dreamer does): the cycles' units would
/// fail at every run, so they are refused, with the sync line to schedule instead.
fn refuse_member(repo: &std::path::Path) -> Result<()> {
    let Some(m) = dream_engine::edges::remote::membership(repo)? else {
        return Ok(());
    };
    if m.role != dream_core::operations::machines::Role::Member {
        return Ok(());
    }
    let bin = units::this_binary()?;
    Err(Error::Usage(format!(
        "{} is a member of the memory at {}: its cycles run on the machine that dreams it, so no \
         cycle is scheduled here. Run its sync from a timer instead, every 10 minutes, for example \
         this crontab line (`crontab -e`):\n  */10 * * * * {} --repo {} --quiet sync",
        repo.display(),
        m.remote,
        schedule::shell_line(&[bin.display().to_string()]),
        schedule::shell_line(&[repo.display().to_string()])
    )))
}

/// Where the single-repository units run, and what would break them.
fn print_single_notes(d: &Installed) {
    println!(
        "  morning cycle at {} and evening cycle at {} (local time), for {}",
        d.morning,
        d.evening,
        d.repo.display()
    );
    println!("  running {}", d.binary.display());
    if d.repo_in_tmp {
        println!(
            "  note: the units run with PrivateTmp=true, which hides {} from them; keep the \
             repository outside /tmp and /var/tmp",
            d.repo.display()
        );
    }
    if d.binary_in_tmp {
        println!(
            "  note: the units run with PrivateTmp=true, which hides {} from them: every run \
             would fail to start; install dream outside /tmp (`cargo install --path .`) and run \
             `dream schedule install` again",
            d.binary.display()
        );
    }
    if d.binary_in_build_folder {
        println!(
            "  note: this binary is inside a cargo build folder; install dream (`cargo install --path .`) \
             and run `dream schedule install` again, or the units break on the next `cargo clean`"
        );
    }
}

/// Whether the service manager loaded the timers; if not, the commands to run.
fn print_loading(loading: &Loading) {
    match loading {
        Loading::NotAsked(commands) => {
            println!("not enabled (--no-enable); to enable, run:");
            print_commands(commands);
        }
        Loading::Done => println!("enabled: the timers are active"),
        Loading::Failed { why, commands } => {
            println!("could not enable the timers here: {why}");
            println!("the unit files are in place; to enable them, run as this user:");
            print_commands(commands);
        }
    }
}

/// systemd's lingering and key file.
fn print_single_hints(d: &Installed) {
    if d.scheduler == Scheduler::Systemd {
        println!(
            "  so that the timers run while you are logged out, run once: loginctl enable-linger {}",
            d.account.user
        );
        println!(
            "  an API key for the model goes in {}/.config/dream/env (KEY=value lines, mode 600)",
            d.account.home.display()
        );
    }
}

/// Where the template instances run, and what would break them.
fn print_instances_notes(d: &InstalledInstances) {
    println!("  running {}", d.binary.display());
    for repo in &d.repos_in_tmp {
        println!(
            "  note: the units run with PrivateTmp=true, which hides {repo} from them; keep \
             repositories outside /tmp and /var/tmp"
        );
    }
    if let Some(r) = &d.also_single {
        println!(
            "  note: the single-repository units (dream-evening.timer) run {r} too; remove them \
             with `dream schedule uninstall` (two timers on one repository only make one of them \
             exit 75)"
        );
    }
}

/// systemd's lingering and key files, shared and per instance.
fn print_instances_hints(account: &Account) {
    println!(
        "  so that the timers run while you are logged out, run once: loginctl enable-linger {}",
        account.user
    );
    println!(
        "  API keys go in {}/.config/dream/env, or per repository in {}/.config/dream/<instance>.env",
        account.home.display(),
        account.home.display()
    );
}

/// Stop and remove the instances of the `--repo` repositories; the templates go with the
/// last one.
fn uninstall_instances(g: &Global, a: &ScheduleUninstallArgs) -> Result<i32> {
    if a.target.launchd {
        return Err(Error::Usage(
            "--instance is for the systemd template units".into(),
        ));
    }
    // A repository that is gone can still be unscheduled: its path names the instance.
    let repos: Vec<PathBuf> = if g.repo.is_empty() {
        super::repo_roots(g)?
    } else {
        let cwd = std::env::current_dir().context(|| "reading the current folder".into())?;
        g.repo.iter().map(|p| super::absolute(&cwd, p)).collect()
    };
    let enable = !a.target.no_enable;
    let Some(done) = install::uninstall_instances(&repos, enable, &mut print_step)? else {
        return Ok(EXIT_OK);
    };
    match &done.loading {
        Loading::Done => println!(
            "stopped and removed the timers of {} repositories",
            done.repositories
        ),
        Loading::Failed { why, commands } => {
            println!("could not unload the timers here: {why}");
            println!("if they were loaded, run as this user:");
            print_commands(commands);
        }
        Loading::NotAsked(commands) => {
            println!("not unloaded (--no-enable); if the timers were loaded, run:");
            print_commands(commands);
        }
    }
    Ok(EXIT_OK)
}

fn uninstall(a: &ScheduleUninstallArgs) -> Result<i32> {
    let t = &a.target;
    for scheduler in install::to_uninstall(t.systemd, t.launchd)? {
        match install::uninstall(scheduler, !t.no_enable, &mut print_step)? {
            Uninstalled::Nothing { dir, instances } => {
                println!(
                    "no dream {scheduler} units in {}; nothing to remove",
                    dir.display()
                );
                if instances {
                    println!(
                        "  template instances are installed (`dream schedule status` lists them); remove \
                         them with `dream schedule uninstall --instance --repo DIR`"
                    );
                }
            }
            Uninstalled::Removed(Loading::Done) => {
                println!("stopped and removed the {scheduler} timers")
            }
            Uninstalled::Removed(Loading::Failed { why, commands }) => {
                println!("could not unload the timers here: {why}");
                println!("if they were loaded, run as this user:");
                print_commands(&commands);
            }
            Uninstalled::Removed(Loading::NotAsked(commands)) => {
                println!("not unloaded (--no-enable); if the timers were loaded, run:");
                print_commands(&commands);
            }
        }
    }
    Ok(EXIT_OK)
}

fn status(g: &Global, a: &ScheduleStatusArgs) -> Result<i32> {
    let st = inspect::status(a.systemd, a.launchd, super::now(g)?)?;
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
        print_scheduler(s);
    }
    Ok(EXIT_OK)
}

/// One scheduler's units: the instances, the single-repository cycles, the problems, and
/// what the service manager says.
fn print_scheduler(s: &SchedulerStatus) {
    let single = s.single();
    if !single && s.instances.is_empty() {
        println!(
            "{}: not installed (in {}); run `dream schedule install`",
            s.scheduler, s.dir
        );
        return;
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

fn manager_name(s: Scheduler) -> &'static str {
    match s {
        Scheduler::Systemd => "systemctl --user list-timers",
        Scheduler::Launchd => "launchctl",
    }
}
