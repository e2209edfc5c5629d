//! swarm's private state: `$XDG_STATE_HOME/swarm/` (default `~/.local/state/swarm/`).
//!
//! The team directory is shared with every teammate, and any of them can write it, so what
//! swarm must be able to believe about the user's own choices (which directories' hooks may
//! run, which session ids swarm itself minted) lives here instead: outside every store root,
//! 0700, never in a team's files. A contained teammate cannot read or write it. Its records
//! for one team of one store (the lead key, spawn records, minted session ids) are named by
//! [`team_key`], the one hash of the store's resolved root and the team's name.

use std::path::PathBuf;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use sha2::{Digest, Sha256};

#[cfg(not(test))]
use crate::error::Error;
use crate::error::Result;
use crate::store::fsio;
use crate::store::names::TeamName;
use crate::store::paths::Store;

/// The directory, created 0700 if missing.
pub(crate) fn dir() -> Result<PathBuf> {
    let dir = path()?;
    fsio::ensure_dir(&dir)?;
    Ok(dir)
}

/// `<private state>/<name>`, nothing created (a lookup must not write, a dry run among them).
pub(crate) fn join(name: &str) -> Result<PathBuf> {
    Ok(path()?.join(name))
}

/// The name of team `team` of `store` among the private records: a hash of the resolved root
/// (`paths::resolve`: the same before and after the root directory exists) and the team name,
/// then of each of `more` (a member's name).
pub(crate) fn team_key(store: &Store, team: &TeamName, more: &[&str]) -> String {
    let root = crate::store::paths::resolve(store.root());
    let mut hash = Sha256::new();
    hash.update(root.as_os_str().as_encoded_bytes());
    hash.update([0]);
    hash.update(team.as_str());
    for part in more {
        hash.update([0]);
        hash.update(part);
    }
    URL_SAFE_NO_PAD.encode(&hash.finalize()[..18])
}

/// The directory's path.
#[cfg(not(test))]
fn path() -> Result<PathBuf> {
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
    Ok(state.join("swarm"))
}

/// Unit tests never touch the user's state directory.
#[cfg(test)]
fn path() -> Result<PathBuf> {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    Ok(DIR
        .get_or_init(|| tempfile::tempdir().expect("temp dir"))
        .path()
        .join("swarm"))
}
