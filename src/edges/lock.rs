//! The single-writer lock (SPEC S4 step 1): an exclusive, non-blocking `flock` on
//! `.dream/lock`. The operating system releases it when the process dies, so there are no
//! stale locks to clean up. Who holds it (pid, since) is kept in `.dream/lock.info` so the
//! refusal can say so; a dry run takes the lock but writes nothing, not even that.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use fs2::FileExt;

use crate::error::{Context, Error, Result};

/// Held for as long as this value lives.
#[derive(Debug)]
pub struct Lock {
    _file: File,
    info: Option<PathBuf>,
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
        let text = format!(
            "pid {}, since {}",
            std::process::id(),
            now.format("%Y-%m-%d %H:%M:%S UTC")
        );
        std::fs::write(&info, text).context(|| format!("writing {}", info.display()))?;
        Some(info)
    } else {
        None
    };
    Ok(Lock { _file: file, info })
}

impl Drop for Lock {
    fn drop(&mut self) {
        if let Some(info) = &self.info {
            let _ = std::fs::write(info, "");
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
