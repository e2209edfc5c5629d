//! swarm's private state: `$XDG_STATE_HOME/swarm/` (default `~/.local/state/swarm/`).
//!
//! The team directory is shared with every teammate, and any of them can write it, so what
//! swarm must be able to believe about the user's own choices (which directories' hooks may
//! run, which session ids swarm itself minted) lives here instead: outside every store root,
//! 0700, never in a team's files. A contained teammate cannot read or write it.

use std::path::PathBuf;

#[cfg(not(test))]
use crate::error::Error;
use crate::error::Result;
use crate::store::fsio;

/// The directory, created 0700 if missing.
#[cfg(not(test))]
pub fn dir() -> Result<PathBuf> {
    let from_env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let state = from_env("XDG_STATE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| from_env("HOME").map(|h| h.join(".local/state")))
        .ok_or_else(|| {
            Error::usage(
                "cannot find swarm's private state: neither XDG_STATE_HOME nor HOME is set",
            )
        })?;
    let dir = state.join("swarm");
    fsio::ensure_dir(&dir)?;
    Ok(dir)
}

/// Unit tests never touch the user's state directory.
#[cfg(test)]
pub fn dir() -> Result<PathBuf> {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = DIR
        .get_or_init(|| tempfile::tempdir().expect("temp dir"))
        .path()
        .join("swarm");
    fsio::ensure_dir(&dir)?;
    Ok(dir)
}
