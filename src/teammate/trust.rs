//! Which directories' project hooks may run: the trust step Claude Code takes before it runs
//! anything from a project's `.claude/settings*.json`.
//!
//! swarm runs a project's hooks in every teammate's cwd or worktree, and a teammate (or
//! whoever wrote the repository) can put a settings file there, so an untrusted directory's
//! hooks would be code run with the user's rights by nobody's choice. A directory is trusted
//! when Claude Code recorded the user's answer to its trust dialog (`projects[<path>]
//! .hasTrustDialogAccepted: true` in `~/.claude.json`, or `$CLAUDE_CONFIG_DIR/.claude.json`),
//! for the directory or a folder above it, as Claude Code reads it, or when the user ran
//! `swarm trust DIR` for it or a folder above it. swarm's own list lives in its private state
//! (`$XDG_STATE_HOME/swarm/trusted-dirs.json`), never in a team's files, which every teammate
//! can write. The home directory itself is never trusted through a record (Claude Code keeps
//! no record for it either), so one answer there cannot trust everything below.
//!
//! Claude Code's record can be believed because no teammate swarm contains can write it: the
//! teammate's home is writable (its agent's own config must work), but the sandbox binds a
//! private copy over each `.claude.json` (`launch::sandbox`'s `claude_files`), so what Claude
//! Code inside records, or a teammate writes there, stays in the copy. What is in the user's
//! file was written by the user's own Claude Code, outside, and the directories above it cannot
//! be moved away to make another (`pins`). Not covered: a `.claude.json` that is a symlink can
//! be replaced (a bind lands on the file it names), and a teammate run with `--no-sandbox`, on
//! another host or on macOS is not contained at all.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::store::{fsio, private_state};

/// The largest `~/.claude.json` read (Claude Code's grows with its project history).
const CLAUDE_CONFIG_LIMIT: u64 = 64 * 1024 * 1024;

/// Why a directory is trusted.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Trusted {
    /// `swarm trust` was run for this folder (the directory or one above it).
    BySwarm(PathBuf),
    /// Claude Code's trust dialog was accepted for this folder.
    ByClaude(PathBuf),
}

/// Whether `dir`'s project hooks may run, and through which record.
pub(crate) fn trusted(dir: &Path) -> Option<Trusted> {
    let candidates = candidates(dir);
    if let Ok(list) = TrustList::load() {
        for c in &candidates {
            if list.dirs.iter().any(|d| d == c) {
                return Some(Trusted::BySwarm(c.clone()));
            }
        }
    }
    let config = claude_config_path()
        .and_then(|p| fsio::read_foreign(&p, CLAUDE_CONFIG_LIMIT).ok().flatten())
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())?;
    candidates
        .into_iter()
        .find(|c| {
            c.to_str()
                .and_then(|key| config["projects"][key]["hasTrustDialogAccepted"].as_bool())
                == Some(true)
        })
        .map(Trusted::ByClaude)
}

/// `dir` (as given, made absolute, and resolved) and the folders above it, the home directory
/// and `/` left out.
fn candidates(dir: &Path) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut starts = vec![absolute];
    if let Ok(real) = dir.canonicalize() {
        if !starts.contains(&real) {
            starts.push(real);
        }
    }
    let mut out = Vec::new();
    for start in starts {
        for a in start.ancestors() {
            let is_home = home.as_deref().is_some_and(|h| h == a);
            if a.parent().is_some() && !is_home && !out.iter().any(|o: &PathBuf| o == a) {
                out.push(a.to_path_buf());
            }
        }
    }
    out
}

/// Where Claude Code keeps its global config, with its per-project trust records.
fn claude_config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join(".claude.json"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude.json"))
}

/// The command that trusts `dir`, for the note that says its hooks were skipped.
pub(crate) fn how_to_trust(dir: &Path) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    format!(
        "run `swarm trust {}` (or accept Claude Code's trust dialog there) to let them run",
        dir.display()
    )
}

/// swarm's own list of trusted directories.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct TrustList {
    pub(crate) dirs: Vec<PathBuf>,
}

impl TrustList {
    fn path() -> Result<PathBuf> {
        Ok(private_state::dir()?.join("trusted-dirs.json"))
    }

    pub(crate) fn load() -> Result<TrustList> {
        Ok(fsio::read_json(&Self::path()?)?.unwrap_or_default())
    }

    fn save(&self) -> Result<()> {
        fsio::write_json(&Self::path()?, self)
    }

    /// Adds `dir` (resolved; it must be a directory); `false` when it was there already.
    pub(crate) fn add(dir: &Path) -> Result<(PathBuf, bool)> {
        let real = dir
            .canonicalize()
            .ok()
            .filter(|d| d.is_dir())
            .ok_or_else(|| {
                Error::usage(format!(
                    "{} is not a directory; pass the project directory whose hooks may run",
                    dir.display()
                ))
            })?;
        let mut list = TrustList::load()?;
        if list.dirs.contains(&real) {
            return Ok((real, false));
        }
        list.dirs.push(real.clone());
        list.save()?;
        Ok((real, true))
    }

    /// Removes `dir` (as given, or resolved, since the directory may be gone); `false` when it
    /// was not on the list.
    pub(crate) fn remove(dir: &Path) -> Result<bool> {
        let mut list = TrustList::load()?;
        let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let real = dir.canonicalize().unwrap_or_else(|_| absolute.clone());
        let before = list.dirs.len();
        list.dirs.retain(|d| *d != absolute && *d != real);
        if list.dirs.len() == before {
            return Ok(false);
        }
        list.save()?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_and_the_folders_above_it_are_candidates_but_not_home_or_root() {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let got = candidates(Path::new("/nonexistent/a/b"));
        assert_eq!(
            got,
            [
                PathBuf::from("/nonexistent/a/b"),
                PathBuf::from("/nonexistent/a"),
                PathBuf::from("/nonexistent")
            ]
        );
        if let Some(home) = home.filter(|h| h.parent().is_some()) {
            assert!(!candidates(&home.join("x")).contains(&home));
        }
    }
}
