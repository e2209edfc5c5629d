//! Catching the history up with task writes made by writers that do not keep it.
//!
//! Claude Code teammates (TaskUpdate, TaskCreate) and hand edits change task files without a
//! word to the history. An [`Observer`] compares the task list, as a long-lived process reads it
//! anyway (the lead console, from its task index), with what the history last said of each
//! task, and appends what is missing, marked `"seen": true` with no actor. Two changes between
//! two looks show as one transition: the observer sees states, not writes.
//!
//! A disagreement is often only a swarm writer between its write and its append. So before
//! appending, the observer takes the list lock and then the task's lock, which every writer that
//! keeps the history holds from its write to its append (PROTOCOL.md section 3: Claude Code
//! takes the same locks), and reads both files again: what is still unexplained then was
//! written by someone else. Each observer follows the history from where it last read, so a
//! change one observer recorded is explained for every other.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::UNIX_EPOCH;

use super::{first_seen, read_from, transition, Entry, State};
use crate::error::Result;
use crate::store::fsio;
use crate::store::names::{TaskId, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{format_timestamp, timestamp_now};
use crate::store::tasks::{Task, TaskList};

/// What the history last said of one task.
struct Known {
    /// `None` once deleted.
    state: Option<State>,
    subject: String,
}

/// Follows one team's history and appends the task changes it lacks.
pub(crate) struct Observer {
    path: PathBuf,
    /// How far the history has been read.
    offset: u64,
    known: HashMap<TaskId, Known>,
}

impl Observer {
    pub(crate) fn new(store: &Store, team: &TeamName) -> Observer {
        Observer {
            path: store.task_history_path(team),
            offset: 0,
            known: HashMap::new(),
        }
    }

    /// Reads what was appended since the last look.
    fn catch_up(&mut self) -> Result<()> {
        let known = &mut self.known;
        self.offset = read_from(&self.path, self.offset, |e| {
            known.insert(
                e.task.clone(),
                Known {
                    state: e.state(),
                    subject: e.subject.clone(),
                },
            );
        })?;
        Ok(())
    }

    fn said(&self, id: &TaskId) -> Option<&State> {
        self.known.get(id).and_then(|k| k.state.as_ref())
    }

    /// Appends what `tasks` (the whole list, just read) shows and the history does not say;
    /// returns how many entries it appended.
    pub(crate) fn observe(&mut self, list: &TaskList, tasks: &[Task]) -> Result<usize> {
        self.catch_up()?;
        let present: HashSet<&TaskId> = tasks.iter().map(|t| &t.id).collect();
        let mut doubtful: Vec<TaskId> = tasks
            .iter()
            .filter(|t| self.said(&t.id) != Some(&State::of(t)))
            .map(|t| t.id.clone())
            .collect();
        doubtful.extend(
            self.known
                .iter()
                .filter(|(id, k)| k.state.is_some() && !present.contains(id))
                .map(|(id, _)| id.clone()),
        );
        if doubtful.is_empty() {
            return Ok(0);
        }
        doubtful.sort();
        let _list = list.list_lock()?;
        let mut appended = 0;
        for id in doubtful {
            let _task = list.task_lock(&id)?;
            self.catch_up()?;
            let path = list.store.task_path(list.team, &id);
            // A file that does not parse (or holds another id) is the task list's to deal with.
            let Ok(on_disk) = fsio::read_json::<Task>(&path) else {
                continue;
            };
            let on_disk = on_disk.filter(|t| t.id == id);
            let now = on_disk.as_ref().map(State::of);
            let before = self.said(&id).cloned();
            let event = match (&before, &now) {
                (None, Some(now)) => first_seen(now),
                _ => match transition(before.as_ref(), now.as_ref(), None) {
                    Some(event) => event,
                    None => continue,
                },
            };
            let mut entry = match &on_disk {
                Some(task) => Entry::new(event, before.as_ref(), task, None, modified(&path)),
                None => {
                    let subject = self.known.get(&id).map_or("", |k| k.subject.as_str());
                    let before = before.as_ref().expect("a deletion follows a known state");
                    Entry::deleted(id.clone(), before, subject, None, timestamp_now())
                }
            };
            entry.seen = true;
            super::append_entry(&self.path, &entry)?;
            appended += 1;
            self.catch_up()?;
        }
        Ok(appended)
    }
}

/// When `path` was last written, as a timestamp; now if that cannot be told.
fn modified(path: &std::path::Path) -> String {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or_else(timestamp_now, |d| format_timestamp(d.as_millis() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tasks::history::Transition;
    use crate::store::tasks::{NewTask, TaskStatus};

    fn entries(store: &Store, team: &TeamName) -> Vec<Entry> {
        let mut out = Vec::new();
        read_from(&store.task_history_path(team), 0, |e| out.push(e)).unwrap();
        out
    }

    #[test]
    fn a_write_that_skipped_the_history_is_appended_once_as_seen() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let tl = TaskList::new(&store, &team);
        let a = tl
            .create(NewTask {
                subject: "a".into(),
                ..Default::default()
            })
            .unwrap();
        let mut observer = Observer::new(&store, &team);
        let mut rival = Observer::new(&store, &team);
        assert_eq!(observer.observe(&tl, &tl.list().unwrap()).unwrap(), 0);
        // Claude Code's TaskUpdate: the file changes, the history does not.
        let mut claimed = a.clone();
        claimed.owner = Some("coder".into());
        claimed.status = TaskStatus::InProgress;
        std::fs::write(
            store.task_path(&team, &a.id),
            serde_json::to_vec(&claimed).unwrap(),
        )
        .unwrap();
        let tasks = tl.list().unwrap();
        assert_eq!(observer.observe(&tl, &tasks).unwrap(), 1);
        assert_eq!(rival.observe(&tl, &tasks).unwrap(), 0, "already recorded");
        std::fs::remove_file(store.task_path(&team, &a.id)).unwrap();
        assert_eq!(rival.observe(&tl, &[]).unwrap(), 1);
        let events: Vec<(Transition, Option<String>, bool)> = entries(&store, &team)
            .into_iter()
            .map(|e| (e.event, e.by, e.seen))
            .collect();
        assert_eq!(
            events,
            vec![
                (Transition::Created, Some("team-lead".into()), false),
                (Transition::Claimed, None, true),
                (Transition::Deleted, None, true),
            ]
        );
    }
}
