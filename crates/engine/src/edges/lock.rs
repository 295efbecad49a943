//! The single-writer lock (SPEC S4 step 1): an exclusive, non-blocking `flock` on
//! `.dream/lock`. The operating system releases it when the process dies, so there are no
//! stale locks to clean up. Who holds it (pid, since, and the stage the cycle is in) is
//! kept in `.dream/lock.info`, so the refusal can say so and `dream status` can show a
//! running cycle; a dry run takes the lock but writes nothing, not even that, and on a
//! repository without `.dream/lock` yet it takes none (there is no state to guard, and
//! creating the file would be a write).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fs2::FileExt;

use crate::edges::fsutil::write_atomic;
use crate::error::{Context, Error, Result};

/// Held for as long as this value lives.
#[derive(Debug)]
pub struct Lock {
    _file: Option<File>,
    /// The note's path and its first part (`pid N, since T`), when the holder is recorded.
    info: Option<(PathBuf, String)>,
    /// Serialises note updates from the cycle's worker threads.
    writing: Mutex<()>,
}

/// Take the lock on the repo at `root`, or fail with [`Error::LockHeld`].
pub fn acquire(
    root: &Path,
    record_holder: bool,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Lock> {
    let dir = root.join(".dream");
    let path = dir.join("lock");
    let info = dir.join("lock.info");
    if !path.exists() {
        if !record_holder {
            return Ok(Lock {
                _file: None,
                info: None,
                writing: Mutex::new(()),
            });
        }
        std::fs::create_dir_all(&dir).context(|| format!("creating {}", dir.display()))?;
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .context(|| format!("opening {}", path.display()))?;
    if file.try_lock_exclusive().is_err() {
        let holder = std::fs::read_to_string(&info)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "pid unknown".into());
        return Err(Error::LockHeld { holder });
    }
    let info = if record_holder {
        let head = format!(
            "pid {}, since {}",
            std::process::id(),
            now.format("%Y-%m-%d %H:%M:%S UTC")
        );
        write_atomic(&info, head.as_bytes())?;
        Some((info, head))
    } else {
        None
    };
    Ok(Lock {
        _file: Some(file),
        info,
        writing: Mutex::new(()),
    })
}

/// Whether the lock's note names a holder that never released it (a process killed while
/// it held the lock: a clean release empties the note). Read before acquiring.
pub fn left_by_a_killed_holder(root: &Path) -> bool {
    std::fs::read_to_string(root.join(".dream").join("lock.info"))
        .is_ok_and(|s| !s.trim().is_empty())
}

impl Lock {
    /// Say in the note what the cycle is doing now (`reflect (3 of 22 calls)`), written as
    /// every file is ([`write_atomic`]: a temporary file, flushed, renamed into place). Best
    /// effort: the note only informs `dream status` and a refused run, so a failed write
    /// is logged and the cycle goes on.
    pub fn note(&self, doing: &str) {
        let Some((path, head)) = &self.info else {
            return;
        };
        let _guard = self.writing.lock();
        if let Err(e) = write_atomic(path, format!("{head}, stage {doing}").as_bytes()) {
            tracing::debug!("the lock's note was not updated ({e}); the cycle goes on");
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if let Some((info, _)) = &self.info {
            // Best effort: a stale note only makes a later refusal name an old holder.
            if let Err(e) = write_atomic(info, b"") {
                tracing::warn!("the lock's note was not cleared ({e}); the command's work is done");
            }
        }
    }
}

/// The kind of network file system `root` is on, if it is one the lock cannot be trusted
/// on across machines: `flock` over NFS is emulated with byte-range locks (Linux 2.6.12
/// on), which only work when every machine's client and the server support them, and SMB,
/// FUSE (sshfs and the like), Ceph and 9p each have their own rules. Linux only; `None`
/// elsewhere and on local file systems.
pub fn network_fs(root: &Path) -> Option<&'static str> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(root.as_os_str().as_bytes()).ok()?;
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: `path` is a valid C string and `st` a writable statfs buffer.
        if unsafe { libc::statfs(path.as_ptr(), &mut st) } != 0 {
            return None;
        }
        match st.f_type as u64 {
            0x6969 => Some("NFS"),
            0x517b => Some("SMB"),
            0xff53_4d42 => Some("CIFS"),
            0xfe53_4d42 => Some("SMB2"),
            0x6573_5546 => Some("FUSE"),
            0x00c3_6400 => Some("Ceph"),
            0x0102_1997 => Some("9p"),
            _ => None,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = root;
        None
    }
}

/// A cycle that holds the lock, as its note describes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Running {
    pub pid: u32,
    /// The note as written: `pid N, since T, stage S`.
    pub note: String,
}

/// The cycle running on the repo at `root`, if any: the note names a pid and that process
/// is alive. (A cycle that crashed leaves its note, but its pid is gone. A dry run leaves
/// no note, so it is not shown.)
pub fn running(root: &Path) -> Option<Running> {
    let note = std::fs::read_to_string(root.join(".dream").join("lock.info")).ok()?;
    let note = note.trim().to_string();
    let pid: u32 = note
        .strip_prefix("pid ")?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    (pid > 0 && alive(pid)).then_some(Running { pid, note })
}

#[cfg(unix)]
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn alive(_pid: u32) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_names_the_holder_and_its_stage_while_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let now = "2026-11-06T21:00:00Z".parse().unwrap();
        let lock = acquire(dir.path(), true, now).unwrap();
        lock.note("reflect (3 of 22 calls, 4210 tokens)");
        let r = running(dir.path()).expect("this process holds it");
        assert_eq!(r.pid, std::process::id());
        assert_eq!(
            r.note,
            format!(
                "pid {}, since 2026-11-06 21:00:00 UTC, stage reflect (3 of 22 calls, 4210 tokens)",
                std::process::id()
            )
        );
        let held = acquire(dir.path(), true, now).unwrap_err().to_string();
        assert!(held.contains("stage reflect"), "{held}");
        drop(lock);
        assert_eq!(running(dir.path()), None, "released: nothing runs");
        // A note left by a process that died names a pid that no longer exists.
        std::fs::write(
            dir.path().join(".dream/lock.info"),
            "pid 2147483646, since x",
        )
        .unwrap();
        assert_eq!(running(dir.path()), None);
    }
}
