//! Atomic file writes (SPEC S3): write a temporary file beside the target, flush it to
//! disk, rename it over the target, then flush the folder, so a crash leaves the old file
//! or the new one and never half of either. The temporary files are named `.dream-tmp-*`;
//! a crash can leave one behind, and `store` never mistakes one for a person's file.

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
        .prefix(TMP_PREFIX)
        .tempfile_in(parent)
        .context(|| format!("creating a temporary file in {}", parent.display()))?;
    tmp.write_all(contents)
        .and_then(|_| tmp.as_file().sync_all())
        .context(what)?;
    crash::point(&format!("rename over {}", path.display())).context(what)?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .context(|| format!("replacing {}", path.display()))?;
    sync_dir(parent);
    Ok(())
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
    if let Some(p) = path.parent() {
        sync_dir(p);
    }
    Ok(())
}

/// Flush a folder's entries (a rename or unlink in it) to disk; best effort.
pub fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(f) = std::fs::File::open(dir) {
        let _ = f.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Whether a path (relative or absolute) names one of dream's temporary files, or lies in
/// a folder that is one.
pub fn is_temp(rel: &str) -> bool {
    rel.split(['/', '\\']).any(|c| c.starts_with(TMP_PREFIX))
}
