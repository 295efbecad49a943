//! Crash points, for the tests that prove a crash at any write leaves nothing half done.
//!
//! Every durable operation dream performs on the repository or the state (a temporary file
//! written, a rename, an unlink, a git object, ref or index write, a journal write, a state
//! commit) first calls [`point`]. In a debug build, `DREAM_CRASH_AT=N` aborts the process
//! (as a `SIGKILL` would: no destructor runs, the OS drops the locks) just before the N-th
//! such operation, and `DREAM_CRASH_AT=NAME` before the first one whose name contains NAME;
//! `DREAM_CRASH_TRACE=1` lists every point on stderr, so a test can count them and sweep
//! every one. `DREAM_FAIL_AT=N` (or `NAME`) makes that operation fail with a "no space left"
//! error instead, to test what a failed write (a full disk) leaves and what it says;
//! `DREAM_FAIL_FROM=N` makes every operation from the N-th on fail (a disk that filled up,
//! a device that went away), and `DREAM_FAIL_ERRNO=EIO` (or `ENOSPC`, the default) picks
//! the error. Flushes to disk (`fsync` of a file or a folder) are points too, named
//! `fsync ...`: a kill there is the same as a kill just after the write before it, so the
//! kill sweeps skip them, while an error there is its own case (the write is in place,
//! its durability is not). Release builds compile this to nothing.

#[cfg(debug_assertions)]
use std::sync::atomic::{AtomicUsize, Ordering};

#[cfg(debug_assertions)]
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// Mark the durable operation about to happen; see the module comment.
pub fn point(what: &str) -> std::io::Result<()> {
    #[cfg(debug_assertions)]
    {
        let n = COUNT.fetch_add(1, Ordering::SeqCst) + 1;
        let var = |k: &str| std::env::var_os(k).and_then(|v| v.into_string().ok());
        if var("DREAM_CRASH_TRACE").is_some() {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "dream: crash point {n}: {what}");
        }
        let hit = |at: &str| match at.parse::<usize>() {
            Ok(k) => k == n,
            Err(_) => what.contains(at),
        };
        if let Some(at) = var("DREAM_CRASH_AT") {
            if hit(&at) {
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "dream: crashing at point {n}: {what}");
                std::process::abort();
            }
        }
        let from = var("DREAM_FAIL_FROM")
            .and_then(|v| v.parse::<usize>().ok())
            .is_some_and(|k| n >= k);
        if from || var("DREAM_FAIL_AT").is_some_and(|at| hit(&at)) {
            let errno = match var("DREAM_FAIL_ERRNO").as_deref() {
                Some("EIO") | Some("eio") => libc::EIO,
                _ => libc::ENOSPC,
            };
            return Err(std::io::Error::from_raw_os_error(errno));
        }
    }
    #[cfg(not(debug_assertions))]
    let _ = what;
    Ok(())
}

/// Flush a file to disk, a crash point first (see the module comment).
pub fn sync_file(file: &std::fs::File, what: &std::path::Path) -> std::io::Result<()> {
    point(&format!("fsync {}", what.display()))?;
    file.sync_all()
}
