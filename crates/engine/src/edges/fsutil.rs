//! Atomic file writes (SPEC S3): write a temporary file beside the target, flush it to
//! disk, rename it over the target, then flush the folder, so a crash leaves the old file
//! or the new one and never half of either. The temporary files are named `.dream-tmp-*`;
//! a crash can leave one behind, and `store` never mistakes one for a person's file.
//!
//! Every flush is checked: a failed `fsync` of the file is an error before the rename (the
//! target is untouched), and a failed `fsync` of the folder after it is an error too, with
//! the new file in place (the caller knows which side of its commit point that is). A
//! temporary file carries the writer's process id (`.dream-tmp-<pid>-...`), so
//! [`sweep_temp`] can remove the ones a killed process left in a folder other processes
//! write too (a harness's settings folder) without touching a live writer's file.

use std::io::Write;
use std::path::Path;

use crate::edges::crash;
use crate::error::{Context, Result};

/// The prefix of every temporary file dream writes.
pub const TMP_PREFIX: &str = ".dream-tmp-";

/// Write `contents` to `path` atomically, creating parent folders as needed.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    let what = || format!("writing {}", path.display());
    crash::point(&format!("temp file for {}", path.display())).context(what)?;
    std::fs::create_dir_all(parent).context(|| format!("creating {}", parent.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(&tmp_prefix())
        .tempfile_in(parent)
        .context(|| format!("creating a temporary file in {}", parent.display()))?;
    tmp.write_all(contents)
        .and_then(|_| crash::sync_file(tmp.as_file(), path))
        .context(what)?;
    crash::point(&format!("rename over {}", path.display())).context(what)?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .context(|| format!("replacing {}", path.display()))?;
    sync_dir(parent)
}

/// This process's prefix for its temporary files.
fn tmp_prefix() -> String {
    format!("{TMP_PREFIX}{}-", std::process::id())
}

/// Remove a file (a missing one is fine), then the folders the removal left empty up to
/// (not including) `stop`.
pub fn remove_file(path: &Path, stop: &Path) -> Result<()> {
    crash::point(&format!("remove {}", path.display()))
        .context(|| format!("removing {}", path.display()))?;
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).context(|| format!("removing {}", path.display())),
    }
    let mut dir = path.parent();
    while let Some(d) = dir.filter(|d| *d != stop && d.starts_with(stop)) {
        if std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
    // Flush the nearest folder still there: the one the last unlink or rmdir changed.
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d.exists() {
            return sync_dir(d);
        }
        dir = d.parent();
    }
    Ok(())
}

/// Flush a folder's entries (a rename or unlink in it) to disk. A file system that cannot
/// flush a folder (it says so with `EINVAL` or `ENOTSUP`) is not an error; any other
/// failure is: the rename happened, whether it survives a power cut is not known.
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let what = || format!("flushing the folder {} to disk", dir.display());
        crash::point(&format!("fsync folder {}", dir.display())).context(what)?;
        let f = std::fs::File::open(dir).context(what)?;
        match f.sync_all() {
            Ok(()) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOTSUP)) => {}
            Err(e) => return Err(e).context(what),
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Remove the temporary files that processes which are gone left directly in `dir` (a
/// folder other dream processes may be writing in at the same time: only files whose
/// writer is not running are removed). Returns how many were removed. Best effort.
pub fn sweep_temp(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(TMP_PREFIX) else {
            continue;
        };
        let writer = rest
            .split_once('-')
            .and_then(|(pid, _)| pid.parse::<u32>().ok());
        let gone = match writer {
            Some(pid) => pid != std::process::id() && !process_alive(pid),
            // An older dream's name carries no writer: gone once it is a minute old.
            None => e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age.as_secs() > 60),
        };
        if gone
            && e.file_type().is_ok_and(|t| t.is_file())
            && std::fs::remove_file(e.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// Whether a process with this id is running (a process of another user counts).
pub fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only asks whether the process exists; nothing is sent.
        let r = unsafe { libc::kill(pid, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Whether a path (relative or absolute) names one of dream's temporary files, or lies in
/// a folder that is one.
pub fn is_temp(rel: &str) -> bool {
    rel.split(['/', '\\']).any(|c| c.starts_with(TMP_PREFIX))
}
