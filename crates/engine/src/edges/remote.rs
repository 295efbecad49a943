//! The git remote edge (issue 45): the only code that talks to another machine.
//!
//! Fetch, push, clone and ls-remote run the `git` command line, as cargo's
//! `net.git-fetch-with-cli` does, so whatever the person's git already does to reach a
//! host (the ssh agent, `~/.ssh/config`, credential helpers, proxies, `insteadOf` rules)
//! works unchanged; libgit2 would need its own ssh and credential code and reach fewer
//! hosts. Each call runs with `GIT_TERMINAL_PROMPT=0` (a missing password fails instead of
//! waiting on a terminal no timer has), ssh in batch mode with a connect timeout unless the
//! person set `GIT_SSH_COMMAND`, and a hard timeout: the child's process group is killed
//! when it runs out, so no remote can make dream hang. Everything local (objects, refs,
//! commits) is git2's, in `machines`.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use dream_core::operations::machines::{self, Membership};

/// The membership file of the repository at `root` (`.dream/remote.toml`).
pub fn membership_path(root: &Path) -> std::path::PathBuf {
    root.join(".dream").join(machines::FILE)
}

/// This repository's membership in a shared memory, if it has one.
pub fn membership(root: &Path) -> Result<Option<Membership>> {
    let path = membership_path(root);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::Io {
                context: format!("reading {}", path.display()),
                source: e,
            })
        }
    };
    Membership::parse(&text, &path.display().to_string())
        .map(Some)
        .map_err(Error::Usage)
}

/// Write the membership (atomically: a kill leaves the old file or the new one).
pub fn save_membership(root: &Path, m: &Membership) -> Result<()> {
    crate::edges::fsutil::write_atomic(&membership_path(root), m.render().as_bytes())
}

/// What a push did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pushed {
    /// The remote took it (or already had it).
    Done,
    /// The remote refused it: its branch moved beyond ours (not a fast-forward).
    Refused(String),
}

/// A git command that did not get through: the remote unreachable, slow, or refusing us.
#[derive(Debug, Clone)]
pub struct Unreachable(pub String);

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a command stopped at its time limit ends its error.
const STOPPED: &str = "was stopped";

/// Run `git` with `args` in `dir` (none: the current folder), at most `limit`.
fn git(dir: Option<&Path>, args: &[&str], limit: Duration) -> Result<(bool, String, String)> {
    let mut cmd = Command::new("git");
    if let Some(d) = dir {
        cmd.arg("-C").arg(d);
    }
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("GIT_TERMINAL_PROMPT", "0");
    if std::env::var_os("GIT_SSH_COMMAND").is_none() && std::env::var_os("GIT_SSH").is_none() {
        let connect = limit.as_secs().clamp(1, 30);
        cmd.env(
            "GIT_SSH_COMMAND",
            format!("ssh -o BatchMode=yes -o ConnectTimeout={connect}"),
        );
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let what = format!("git {}", args.first().copied().unwrap_or_default());
    let mut child = cmd.spawn().map_err(|e| {
        Error::Other(format!(
            "cannot run git ({e}): several machines need the git command line installed and on PATH"
        ))
    })?;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let reader = |s: Option<&mut dyn Read>| {
        let mut text = String::new();
        if let Some(s) = s {
            let _ = s.take(1 << 20).read_to_string(&mut text);
        }
        text
    };
    let out_t = std::thread::spawn(move || reader(out.as_mut().map(|s| s as &mut dyn Read)));
    let err_t = std::thread::spawn(move || reader(err.as_mut().map(|s| s as &mut dyn Read)));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() >= limit => {
                kill(&mut child);
                return Err(Error::Other(format!(
                    "{what} took longer than {} s and {STOPPED}",
                    limit.as_secs_f32()
                )));
            }
            // Short waits first: a local remote answers in a few milliseconds.
            Ok(None) => std::thread::sleep(Duration::from_millis(
                if start.elapsed() < Duration::from_millis(100) {
                    2
                } else {
                    10
                },
            )),
            Err(e) => {
                kill(&mut child);
                return Err(Error::Other(format!("waiting for {what}: {e}")));
            }
        }
    };
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    Ok((status.success(), stdout, stderr))
}

/// Kill the child and everything it started (ssh), then reap it.
fn kill(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        // SAFETY: a plain kill(2) of the process group this child leads (process_group(0)).
        unsafe {
            libc::kill(-(child.id() as i32), libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The last meaningful line git printed, for an error.
fn said(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("hint:"))
        .collect();
    lines
        .iter()
        .rev()
        .take(2)
        .rev()
        .copied()
        .collect::<Vec<_>>()
        .join(" / ")
}

/// The refs at the remote (`ref name`, `commit`), or why it could not be reached.
pub fn ls_remote(
    url: &str,
    limit: Duration,
) -> Result<std::result::Result<Vec<(String, String)>, Unreachable>> {
    let (ok, out, err) = match git(None, &["ls-remote", "--", url], limit) {
        Ok(r) => r,
        Err(Error::Other(m)) if m.contains(STOPPED) => {
            return Ok(Err(Unreachable(format!("cannot reach {url}: {m}"))))
        }
        Err(e) => return Err(e),
    };
    if !ok {
        return Ok(Err(Unreachable(format!(
            "cannot reach {url}: {}",
            said(&err)
        ))));
    }
    Ok(Ok(out
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(id, name)| (name.trim().to_string(), id.trim().to_string()))
        .collect()))
}

/// Clone `url`'s `branch` into `dir` (which must not exist yet).
pub fn clone(
    url: &str,
    branch: &str,
    dir: &Path,
    limit: Duration,
) -> Result<std::result::Result<(), Unreachable>> {
    let d = dir.display().to_string();
    let (ok, _, err) = match git(
        None,
        &["clone", "--quiet", "--branch", branch, "--", url, &d],
        limit,
    ) {
        Ok(r) => r,
        Err(Error::Other(m)) if m.contains(STOPPED) => {
            return Ok(Err(Unreachable(format!("cloning {url}: {m}"))))
        }
        Err(e) => return Err(e),
    };
    Ok(if ok {
        Ok(())
    } else {
        Err(Unreachable(format!("cloning {url}: {}", said(&err))))
    })
}

/// Fetch `refspecs` from `url` into the repository at `dir`.
pub fn fetch(
    dir: &Path,
    url: &str,
    refspecs: &[String],
    limit: Duration,
) -> Result<std::result::Result<(), Unreachable>> {
    let mut args = vec![
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--",
        url,
    ];
    args.extend(refspecs.iter().map(String::as_str));
    match git(Some(dir), &args, limit) {
        Ok((true, _, _)) => Ok(Ok(())),
        Ok((false, _, err)) => Ok(Err(Unreachable(format!(
            "fetching from {url}: {}",
            said(&err)
        )))),
        Err(Error::Other(m)) if m.contains(STOPPED) => {
            Ok(Err(Unreachable(format!("fetching from {url}: {m}"))))
        }
        Err(e) => Err(e),
    }
}

/// Push `refspec` (never forced) from the repository at `dir` to `url`.
pub fn push(
    dir: &Path,
    url: &str,
    refspec: &str,
    limit: Duration,
) -> Result<std::result::Result<Pushed, Unreachable>> {
    let args = ["push", "--porcelain", "--quiet", "--", url, refspec];
    let (ok, out, err) = match git(Some(dir), &args, limit) {
        Ok(r) => r,
        Err(Error::Other(m)) if m.contains(STOPPED) => {
            return Ok(Err(Unreachable(format!("pushing to {url}: {m}"))))
        }
        Err(e) => return Err(e),
    };
    // `--porcelain`: one line per ref, `!` when it was rejected.
    let rejected = out
        .lines()
        .find(|l| l.starts_with('!'))
        .map(|l| l.rsplit('\t').next().unwrap_or(l).trim().to_string());
    Ok(match (ok, rejected) {
        (true, _) => Ok(Pushed::Done),
        (false, Some(why))
            if why.contains("fetch first")
                || why.contains("non-fast-forward")
                || why.contains("stale info") =>
        {
            Ok(Pushed::Refused(why))
        }
        (false, Some(why)) => Err(Unreachable(format!("pushing to {url}: {why}"))),
        (false, None) => Err(Unreachable(format!("pushing to {url}: {}", said(&err)))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_that_is_not_there_is_unreachable_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}/nothing.git", dir.path().display());
        let r = ls_remote(&url, Duration::from_secs(10)).unwrap();
        assert!(r.is_err(), "{r:?}");
    }

    #[test]
    fn a_command_over_its_time_is_stopped() {
        let start = Instant::now();
        // A shell alias that sleeps: git, then sh, then sleep, all in one process group.
        let r = git(
            None,
            &["-c", "alias.nap=!sleep 20", "nap"],
            Duration::from_millis(300),
        );
        let e = r.unwrap_err().to_string();
        assert!(e.contains(STOPPED), "{e}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }
}
