//! What the relay on a remote host remembers across connections, in the mirror's `relay/`.
//!
//! Two things cannot be read back from the mirror's own files after a break. Which inbox entries
//! it has already handled ([`Records::seen`]): an entry home placed (and the member may have
//! read, and Claude Code then removed) or one the host sent home and home acknowledged must not
//! be placed or sent again. And what each mirrored file last held as home sent it (the
//! *bases*): a task file or a member's `isActive` that differs from its base is a change made
//! on this host, to be sent home; one equal to it is home's, to be replaced by home's next
//! version. The seen keys are an append-only log (`seen.log`, one key a line, synced before
//! anything depends on it); bases are whole files written atomically.

use std::collections::HashSet;
use std::path::PathBuf;

use serde_json::Value;

use crate::error::Result;
use crate::store::fsio;
use crate::store::names::{TaskId, TeamName};
use crate::store::paths::Store;

/// The relay's memory for one team's mirror.
#[derive(Debug)]
pub(crate) struct Records {
    dir: PathBuf,
    seen: HashSet<String>,
}

impl Records {
    pub(crate) fn open(store: &Store, team: &TeamName) -> Result<Records> {
        let dir = store.relay_dir(team);
        fsio::ensure_dir(&dir.join("base"))?;
        let seen = fsio::read_file(&dir.join("seen.log"))?
            .map(|bytes| {
                String::from_utf8_lossy(&bytes)
                    .lines()
                    .filter(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Ok(Records { dir, seen })
    }

    /// Whether `key` (an inbox entry's key, `p:<id>` for a permission request) was handled.
    pub(crate) fn seen(&self, key: &str) -> bool {
        self.seen.contains(key)
    }

    /// Records `keys` as handled, durably, before the caller acts on it.
    pub(crate) fn mark_seen<'k>(&mut self, keys: impl IntoIterator<Item = &'k str>) -> Result<()> {
        let mut lines = String::new();
        for key in keys {
            // A key holds no newline (`msg_id`s are UUIDs; a Claude key may hold text, cut it).
            let key: String = key.replace('\n', " ");
            if self.seen.insert(key.clone()) {
                lines.push_str(&key);
                lines.push('\n');
            }
        }
        if lines.is_empty() {
            return Ok(());
        }
        fsio::append(&self.dir.join("seen.log"), lines.as_bytes())
    }

    fn task_base_path(&self, id: &TaskId) -> PathBuf {
        self.dir.join("base").join(format!("task-{id}.json"))
    }

    /// The task as home last sent it and this host wrote it.
    pub(crate) fn task_base(&self, id: &TaskId) -> Option<Value> {
        fsio::read_json(&self.task_base_path(id)).ok().flatten()
    }

    pub(crate) fn set_task_base(&self, id: &TaskId, task: Option<&Value>) -> Result<()> {
        let path = self.task_base_path(id);
        match task {
            Some(t) => fsio::write_json(&path, t),
            None => match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(crate::error::Error::io("remove", &path)(e))
                }
                _ => Ok(()),
            },
        }
    }

    /// Ids of every task with a base.
    pub(crate) fn task_bases(&self) -> Vec<TaskId> {
        let Ok(entries) = std::fs::read_dir(self.dir.join("base")) else {
            return vec![];
        };
        entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name();
                let id = name
                    .to_str()?
                    .strip_prefix("task-")?
                    .strip_suffix(".json")?;
                id.parse().ok()
            })
            .collect()
    }

    fn roster_base_path(&self) -> PathBuf {
        self.dir.join("base").join("roster.json")
    }

    /// The roster view this host last wrote.
    pub(crate) fn roster_base(&self) -> Option<Value> {
        fsio::read_json(&self.roster_base_path()).ok().flatten()
    }

    pub(crate) fn set_roster_base(&self, view: &Value) -> Result<()> {
        fsio::write_json(&self.roster_base_path(), view)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::team_with;

    #[test]
    fn seen_keys_and_bases_outlive_the_relay() {
        let (_dir, store, team) = team_with(&["coder"]);
        let mut r = Records::open(&store, &team).unwrap();
        r.mark_seen(["a", "b", "a"]).unwrap();
        let id = TaskId::new(4);
        r.set_task_base(&id, Some(&serde_json::json!({"id": "4"})))
            .unwrap();
        let again = Records::open(&store, &team).unwrap();
        assert!(again.seen("a") && again.seen("b") && !again.seen("c"));
        assert_eq!(again.task_bases(), vec![id.clone()]);
        again.set_task_base(&id, None).unwrap();
        assert!(again.task_base(&id).is_none());
        let log = std::fs::read_to_string(store.relay_dir(&team).join("seen.log")).unwrap();
        assert_eq!(log, "a\nb\n");
    }
}
