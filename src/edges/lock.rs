//! The single-writer lock (SPEC S4 step 1): an exclusive, non-blocking `flock` on
//! `.dream/lock`. The operating system releases it when the process dies, so there are no
//! stale locks to clean up. Who holds it (pid, since) is kept in `.dream/lock.info` so the
//! refusal can say so; a dry run takes the lock but writes nothing, not even that, and on
//! a repository without `.dream/lock` yet it takes none (there is no state to guard, and
//! creating the file would be a write).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use fs2::FileExt;

use crate::edges::fsutil::write_atomic;
use crate::error::{Context, Error, Result};

/// Held for as long as this value lives.
#[derive(Debug)]
pub struct Lock {
    _file: Option<File>,
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
        if !record_holder {
            return Ok(Lock {
                _file: None,
                info: None,
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
        let text = format!(
            "pid {}, since {}",
            std::process::id(),
            now.format("%Y-%m-%d %H:%M:%S UTC")
        );
        write_atomic(&info, text.as_bytes())?;
        Some(info)
    } else {
        None
    };
    Ok(Lock {
        _file: Some(file),
        info,
    })
}

impl Drop for Lock {
    fn drop(&mut self) {
        if let Some(info) = &self.info {
            // Best effort: a stale note only makes a later refusal name an old holder.
            let _ = write_atomic(info, b"");
        }
    }
}
