//! Atomic file writes (SPEC S3): write a temporary file beside the target, flush it to
//! disk, then rename it over the target, so a crash leaves the old file or the new one and
//! never half of either.

use std::io::Write;
use std::path::Path;

use crate::error::{Context, Result};

/// Write `contents` to `path` atomically, creating parent folders as needed.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).context(|| format!("creating {}", parent.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".dream-tmp-")
        .tempfile_in(parent)
        .context(|| format!("creating a temporary file in {}", parent.display()))?;
    tmp.write_all(contents)
        .and_then(|_| tmp.as_file().sync_all())
        .context(|| format!("writing {}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .context(|| format!("replacing {}", path.display()))?;
    Ok(())
}
