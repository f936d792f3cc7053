use std::path::PathBuf;

use crate::{Error, Result};

/// The root of assay's per-user cache: `ASSAY_CACHE_DIR`, else `$XDG_CACHE_HOME/assay`, else
/// `$HOME/.cache/assay` (the XDG base-directory defaults).
pub fn cache_root() -> Result<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("ASSAY_CACHE_DIR") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = var("XDG_CACHE_HOME").map(PathBuf::from) {
        // The spec says relative values are invalid and must be ignored.
        if dir.is_absolute() {
            return Ok(dir.join("assay"));
        }
    }
    var("HOME")
        .map(|home| PathBuf::from(home).join(".cache").join("assay"))
        .ok_or(Error::NoCacheDir)
}
