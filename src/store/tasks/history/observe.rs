//! Catching the history up with task writes made by writers that do not keep it.
//!
//! Claude Code teammates (TaskUpdate, TaskCreate) and hand edits change task files without a
//! word to the history. An [`Observer`] compares the task list, as a long-lived process reads it
//! anyway (the lead console, from its task index), with what the history last said of each
//! task, and appends what is missing, marked `"seen": true` with no actor. Two changes between
//! two looks show as one transition: the observer sees states, not writes.
//!
//! A disagreement is usually a swarm writer between its write and its history line, which
//! follows within microseconds. So the observer locks nothing while it looks: a task whose file
//! and history disagree is only noted, and appended once the same disagreement has lasted
//! [`GRACE`] (by the next look, normally). Only then does it take the task's lock, which every
//! writer that keeps the history holds from its write to its append (PROTOCOL.md section 3:
//! Claude Code takes it too), read the file and the history again, and append what is still
//! unexplained. So a team whose writers all keep the history costs the observer no lock at all,
//! and two observers cannot both append one change. Each observer follows the history from
//! where it last read, so a change one of them recorded is explained for the other.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant, UNIX_EPOCH};

use super::{first_seen, read_from, transition, Entry, State};
use crate::error::Result;
use crate::store::fsio;
use crate::store::names::{TaskId, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{format_timestamp, timestamp_now};
use crate::store::tasks::{Task, TaskList};

/// How long a task file must disagree with the history, in the same way, before the observer
/// takes it for a write by someone who keeps no history.
pub(crate) const GRACE: Duration = Duration::from_millis(500);

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
    /// Tasks whose file disagrees with the history: the file's state (`None`: gone) and since
    /// when it has disagreed so.
    doubts: HashMap<TaskId, (Option<State>, Instant)>,
}

impl Observer {
    pub(crate) fn new(store: &Store, team: &TeamName) -> Observer {
        Observer {
            path: store.task_history_path(team),
            offset: 0,
            known: HashMap::new(),
            doubts: HashMap::new(),
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

    /// Appends what `tasks` (the whole list, just read) has shown for [`GRACE`] and the
    /// history does not say; returns how many entries it appended.
    pub(crate) fn observe(&mut self, list: &TaskList, tasks: &[Task]) -> Result<usize> {
        self.observe_at(list, tasks, Instant::now())
    }

    fn observe_at(&mut self, list: &TaskList, tasks: &[Task], now: Instant) -> Result<usize> {
        self.catch_up()?;
        let present: HashSet<&TaskId> = tasks.iter().map(|t| &t.id).collect();
        let mut disagreeing: Vec<(TaskId, Option<State>)> = tasks
            .iter()
            .map(|t| (t.id.clone(), Some(State::of(t))))
            .filter(|(id, state)| self.said(id) != state.as_ref())
            .collect();
        disagreeing.extend(
            self.known
                .iter()
                .filter(|(id, k)| k.state.is_some() && !present.contains(id))
                .map(|(id, _)| (id.clone(), None)),
        );
        let mut settled = Vec::new();
        let mut doubts = HashMap::new();
        for (id, state) in disagreeing {
            let since = match self.doubts.get(&id) {
                Some((s, since)) if *s == state => *since,
                _ => now,
            };
            if now.duration_since(since) >= GRACE {
                settled.push(id);
            } else {
                doubts.insert(id, (state, since));
            }
        }
        // What agrees again (its writer's line came) is forgotten.
        self.doubts = doubts;
        settled.sort();
        let mut appended = 0;
        for id in settled {
            if self.settle(list, &id)? {
                appended += 1;
            }
        }
        Ok(appended)
    }

    /// Appends the change of `id` that has disagreed with the history for [`GRACE`], if it
    /// still does under the task's lock; whether it appended.
    fn settle(&mut self, list: &TaskList, id: &TaskId) -> Result<bool> {
        let _task = list.task_lock(id)?;
        self.catch_up()?;
        let path = list.store.task_path(list.team, id);
        // A file that does not parse (or holds another id) is the task list's to deal with.
        let Ok(on_disk) = fsio::read_json::<Task>(&path) else {
            return Ok(false);
        };
        let on_disk = on_disk.filter(|t| &t.id == id);
        let now = on_disk.as_ref().map(State::of);
        let before = self.said(id).cloned();
        let event = match (&before, &now) {
            (None, Some(now)) => first_seen(now),
            _ => match transition(before.as_ref(), now.as_ref(), None) {
                Some(event) => event,
                None => return Ok(false),
            },
        };
        let mut entry = match &on_disk {
            Some(task) => Entry::new(event, before.as_ref(), task, None, modified(&path)),
            None => {
                let subject = self.known.get(id).map_or("", |k| k.subject.as_str());
                let before = before.as_ref().expect("a deletion follows a known state");
                Entry::deleted(id.clone(), before, subject, None, timestamp_now())
            }
        };
        entry.seen = true;
        super::append_entry(&self.path, &entry)?;
        self.catch_up()?;
        Ok(true)
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
        let start = Instant::now();
        let later = start + GRACE;
        assert_eq!(
            observer
                .observe_at(&tl, &tl.list().unwrap(), start)
                .unwrap(),
            0
        );
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
        // First only noted (a swarm writer's line may be on its way), then recorded.
        assert_eq!(observer.observe_at(&tl, &tasks, start).unwrap(), 0);
        assert_eq!(rival.observe_at(&tl, &tasks, start).unwrap(), 0);
        assert_eq!(observer.observe_at(&tl, &tasks, later).unwrap(), 1);
        assert_eq!(
            rival.observe_at(&tl, &tasks, later).unwrap(),
            0,
            "already recorded"
        );
        // A swarm write is explained before the grace is over: nothing is appended.
        tl.update(
            &a.id,
            crate::store::tasks::TaskPatch {
                status: Some(TaskStatus::Completed),
                ..Default::default()
            },
        )
        .unwrap();
        let tasks = tl.list().unwrap();
        assert_eq!(observer.observe_at(&tl, &tasks, later).unwrap(), 0);
        assert_eq!(observer.observe_at(&tl, &tasks, later + GRACE).unwrap(), 0);
        std::fs::remove_file(store.task_path(&team, &a.id)).unwrap();
        assert_eq!(rival.observe_at(&tl, &[], later).unwrap(), 0);
        assert_eq!(rival.observe_at(&tl, &[], later + GRACE).unwrap(), 1);
        let events: Vec<(Transition, Option<String>, bool)> = entries(&store, &team)
            .into_iter()
            .map(|e| (e.event, e.by, e.seen))
            .collect();
        assert_eq!(
            events,
            vec![
                (Transition::Created, Some("team-lead".into()), false),
                (Transition::Claimed, None, true),
                (Transition::Completed, Some("team-lead".into()), false),
                (Transition::Deleted, None, true),
            ]
        );
    }
}
