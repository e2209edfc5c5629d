//! Notes for `swarm status`: what a long-running process met and went on past.
//!
//! A runtime or the lead console that finds a damaged file (a symlink where its inbox belongs,
//! a directory where a record belongs, a lock someone keeps fresh) must not exit: one bad file
//! would otherwise stop a teammate, or the whole team. It moves the file aside or waits it out,
//! says so in its own log, and records the note here, `teams/<team>/notes/<who>.json`, the last
//! few per process, so the person reading `swarm status` learns of it too. A note is only
//! shown (with its control characters made visible), never acted on: any member can write
//! these files.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::timestamp_now;

/// Notes kept per process.
const KEEP: usize = 10;

/// One note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Note {
    pub who: String,
    pub at: String,
    pub text: String,
}

/// Records `text` as the newest note of `who`, unless it is the newest already (a process that
/// meets the same damage at every pass says it once).
pub(crate) fn record(store: &Store, team: &TeamName, who: &AgentName, text: &str) -> Result<()> {
    let path = store.notes_path(team, who);
    let mut notes = read(&path);
    if notes.last().is_some_and(|n| n.text == text) {
        return Ok(());
    }
    notes.push(Note {
        who: who.to_string(),
        at: timestamp_now(),
        text: text.to_string(),
    });
    let drop = notes.len().saturating_sub(KEEP);
    notes.drain(..drop);
    // A team deleted under a runtime that is still going: its note has nowhere to go, and
    // making `teams/<team>/notes` would bring part of the deleted team back.
    if !store.team_dir(team).is_dir() {
        return Ok(());
    }
    fsio::ensure_dir(path.parent().expect("a notes path has a directory"))?;
    fsio::write_json(&path, &notes)
}

/// Renames aside a file of the wrong kind (a symlink, a hard link, a directory, a FIFO) that
/// `error` is about, when it sits at the place of a JSON record in one of `record_dirs` (an
/// inbox, a task, a session). The rename keeps every byte (a link's target is not touched), and
/// `swarm status` lists what was moved. `None` when `error` is not about such a file.
pub(crate) fn move_aside_misplaced(error: &Error, record_dirs: &[PathBuf]) -> Option<PathBuf> {
    let (path, why) = match error {
        Error::NotARegularFile { path, found } => (path, format!("it is a {found}")),
        Error::HardLinked { path, links } => (path, format!("it has {links} hard links")),
        _ => return None,
    };
    let is_record = path
        .parent()
        .is_some_and(|p| record_dirs.iter().any(|r| r == p))
        && path.extension().is_some_and(|x| x == "json");
    if !is_record || std::fs::symlink_metadata(path).is_err() {
        return None;
    }
    fsio::quarantine(path, &why).ok()
}

/// Every process's notes, oldest first by process name; unreadable files are left out.
pub(crate) fn all(store: &Store, team: &TeamName) -> Vec<Note> {
    let dir = store.team_dir(team).join("notes");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return vec![];
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths.iter().flat_map(|p| read(p)).collect()
}

/// The notes in one file; a file larger than any `KEEP` notes can be is not read.
fn read(path: &Path) -> Vec<Note> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.len() > 1024 * 1024) {
        return vec![];
    }
    fsio::read_json(path).ok().flatten().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::team_with;

    #[test]
    fn a_note_for_a_deleted_team_brings_none_of_its_directory_back() {
        let (_dir, store, team) = team_with(&["a"]);
        let who: AgentName = "a".parse().unwrap();
        record(&store, &team, &who, "kept").unwrap();
        assert_eq!(all(&store, &team).len(), 1);
        std::fs::remove_dir_all(store.team_dir(&team)).unwrap();
        record(&store, &team, &who, "after the team was deleted").unwrap();
        assert!(!store.team_dir(&team).exists());
    }
}
