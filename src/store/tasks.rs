//! The shared task list, `tasks/<team>/<id>.json` (PROTOCOL.md section 8).
//!
//! Tasks form a DAG through `blocks` / `blockedBy`, kept symmetric, with cycles refused. Idle
//! teammates claim available tasks ([`Task::available`], the one rule); a claim sets `owner` and
//! `in_progress` in one atomic write under the task's lock, so two claimers racing in separate
//! processes can never both win. Claiming the next task is [`TaskIndex::claim_next`], for
//! long-lived claimers and one-shot commands alike.
//!
//! Lock order is always list lock, then task lock, so creators and claimers cannot deadlock.

#[cfg(feature = "seams")]
mod baseline;
mod by_stat;
mod claim;
mod edges;
mod events;
mod hints;
pub(crate) mod history;
mod index;
mod task;

use std::fs;

use serde_json::Map;

pub use index::TaskIndex;
pub(crate) use task::{finished_in, NewTask, Phase, TaskOutcome, SWARM_FAILED};
pub use task::{Task, TaskPatch, TaskStatus};

use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::lock::FileLock;
use crate::store::names::{TaskId, TeamName, MAX_TASK_ID};
use crate::store::paths::Store;
pub struct TaskList<'a> {
    store: &'a Store,
    team: &'a TeamName,
    /// Whole-list reads trust a file's cached content while its `stat` is unchanged (see
    /// `by_stat`).
    by_stat: bool,
}

impl<'a> TaskList<'a> {
    pub fn new(store: &'a Store, team: &'a TeamName) -> TaskList<'a> {
        TaskList {
            store,
            team,
            by_stat: false,
        }
    }

    /// `new` for one-shot commands: listing the tasks stats every file and parses only those
    /// that changed since a listing last read them (see `by_stat`).
    pub fn by_stat(store: &'a Store, team: &'a TeamName) -> TaskList<'a> {
        TaskList {
            by_stat: true,
            ..TaskList::new(store, team)
        }
    }

    fn list_lock(&self) -> Result<FileLock> {
        fsio::ensure_dir(&self.store.tasks_dir(self.team))?;
        let path = self.store.task_list_lock_path(self.team);
        fsio::create_if_missing(&path, b"")?;
        FileLock::acquire(&path)
    }

    fn task_lock(&self, id: &TaskId) -> Result<FileLock> {
        FileLock::acquire(&self.store.task_path(self.team, id))
    }

    fn no_such(&self, id: &TaskId) -> Error {
        Error::NoSuchTask {
            team: self.team.to_string(),
            id: id.to_string(),
        }
    }

    /// Writes `task`, which was `before`, and records the transition in the history (the caller
    /// holds the task's lock).
    fn write(&self, before: &Task, task: &Task) -> Result<()> {
        fsio::write_json(&self.store.task_path(self.team, &task.id), task)?;
        self.recorded(Some(before), Some(task));
        Ok(())
    }

    /// Appends the transition from `before` to `after` to the history; every writer of a task
    /// file calls this right after its write, under the same lock.
    fn recorded(&self, before: Option<&Task>, after: Option<&Task>) {
        history::record(self.store, self.team, before, after);
    }

    /// The largest id the list has issued: its files, the high-water mark (deleted tasks) and
    /// quarantined files. The next task gets the one after; a launch's `--dry-run` shows it.
    pub fn largest_issued(&self) -> Result<u64> {
        let largest = self.ids()?.last().map_or(0, TaskId::number);
        Ok(largest
            .max(self.highwatermark()?)
            .max(self.largest_quarantined()?))
    }

    /// The largest id ever issued, from `.highwatermark`. Missing or empty is 0; anything else
    /// that is not a number is refused, since guessing could issue a deleted id again.
    fn highwatermark(&self) -> Result<u64> {
        let path = self.store.highwatermark_path(self.team);
        let Some(bytes) = fsio::read_file(&path)? else {
            return Ok(0);
        };
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim();
        if text.is_empty() {
            return Ok(0);
        }
        text.parse()
            .ok()
            .filter(|n| *n <= MAX_TASK_ID)
            .ok_or_else(|| {
                Error::usage(format!(
                    "{} holds {text:?}, not a task number up to {MAX_TASK_ID}; write the largest task id ever issued into it",
                    path.display()
                ))
            })
    }

    /// The largest id among quarantined task files (`<id>.json.corrupt-<ms>`): their ids were
    /// issued, so they must not be issued again.
    fn largest_quarantined(&self) -> Result<u64> {
        let dir = self.store.tasks_dir(self.team);
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(Error::io("list", &dir)(e)),
        };
        Ok(entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name();
                let (stem, _) = name.to_str()?.split_once(".json.corrupt-")?;
                stem.parse::<TaskId>().ok().map(|id| id.number())
            })
            .max()
            .unwrap_or(0))
    }

    /// Ids of every task file, ascending.
    fn ids(&self) -> Result<Vec<TaskId>> {
        let dir = self.store.tasks_dir(self.team);
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(Error::io("list", &dir)(e)),
        };
        let mut ids: Vec<TaskId> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name();
                let stem = name.to_str()?.strip_suffix(".json")?.to_string();
                stem.parse().ok()
            })
            .collect();
        ids.sort();
        Ok(ids)
    }

    pub fn get(&self, id: &TaskId) -> Result<Task> {
        self.get_opt(id)?.ok_or_else(|| self.no_such(id))
    }

    /// A file whose `id` is not its name (`5.json` holding task 1) is refused: writing it back
    /// would go to the other task's file without its lock.
    fn get_opt(&self, id: &TaskId) -> Result<Option<Task>> {
        let path = self.store.task_path(self.team, id);
        match fsio::read_json::<Task>(&path)? {
            Some(task) if &task.id != id => Err(Error::usage(format!(
                "{} holds task #{}, not #{id}; `swarm task list` moves it aside",
                path.display(),
                task.id
            ))),
            other => Ok(other),
        }
    }

    /// `get` for a holder of the task's lock: a file that holds another task's id is
    /// quarantined and the task is then missing (one that does not parse is refused, as by `get`).
    fn get_locked(&self, id: &TaskId) -> Result<Task> {
        let path = self.store.task_path(self.team, id);
        let task = fsio::read_json::<Task>(&path)?;
        self.unless_mismatched(id, task)?
            .ok_or_else(|| self.no_such(id))
    }

    /// `task`, read from `id`'s file, unless it holds another id: then the file is quarantined.
    fn unless_mismatched(&self, id: &TaskId, task: Option<Task>) -> Result<Option<Task>> {
        match task {
            Some(task) if &task.id != id => {
                let path = self.store.task_path(self.team, id);
                fsio::quarantine(&path, &format!("it holds task #{}", task.id))?;
                Ok(None)
            }
            other => Ok(other),
        }
    }

    /// Every task, by id. A task file that does not parse is quarantined (under its lock) and
    /// left out, with a warning on stderr.
    pub fn list(&self) -> Result<Vec<Task>> {
        if self.by_stat {
            return Ok(self.list_by_stat()?.into_iter().map(|(t, _)| t).collect());
        }
        let mut tasks = Vec::new();
        for id in self.ids()? {
            tasks.extend(self.read_listed(&id)?);
        }
        Ok(tasks)
    }

    /// One task as `list` reads it: gone is `None`, and a file that does not parse or holds
    /// another id is quarantined (under its lock) and also `None`.
    fn read_listed(&self, id: &TaskId) -> Result<Option<Task>> {
        match self.get_opt(id) {
            Err(Error::Usage(_)) => {
                let _lock = self.task_lock(id)?;
                let path = self.store.task_path(self.team, id);
                let task = fsio::read_json_or_quarantine::<Task>(&path)?;
                self.unless_mismatched(id, task)
            }
            other => other,
        }
    }

    pub fn create(&self, new: NewTask) -> Result<Task> {
        if new.subject.trim().is_empty() {
            return Err(Error::usage("a task needs a subject"));
        }
        let _list = self.list_lock()?;
        for dep in &new.blocked_by {
            self.get(dep)?;
        }
        let issued = self.largest_issued()?;
        if issued >= MAX_TASK_ID {
            return Err(Error::usage(format!(
                "team {} has issued task id {issued}, the largest there can be; no task can be created",
                self.team
            )));
        }
        let id = TaskId::new(issued + 1);
        let task = Task {
            id: id.clone(),
            subject: new.subject,
            description: new.description,
            active_form: new.active_form,
            owner: None,
            status: TaskStatus::Pending,
            blocks: vec![],
            blocked_by: edges::dedup(new.blocked_by),
            metadata: new.metadata,
            extra: Map::new(),
        };
        // Never over an existing file: a damaged list must fail a create, not lose a task.
        fsio::write_json_new(&self.store.task_path(self.team, &id), &task)?;
        self.recorded(None, Some(&task));
        for dep in &task.blocked_by {
            self.modify(dep, |t| edges::push_unique(&mut t.blocks, &id))?;
        }
        Ok(task)
    }

    /// Read-modify-write of one task under its lock.
    fn edit<T>(&self, id: &TaskId, f: impl FnOnce(&mut Task) -> Result<T>) -> Result<T> {
        let _lock = self.task_lock(id)?;
        let mut task = self.get_locked(id)?;
        let before = task.clone();
        let out = f(&mut task)?;
        if task != before {
            self.write(&before, &task)?;
        }
        Ok(out)
    }

    fn modify(&self, id: &TaskId, f: impl FnOnce(&mut Task)) -> Result<()> {
        self.edit(id, |t| {
            f(t);
            Ok(())
        })
    }

    pub fn update(&self, id: &TaskId, patch: TaskPatch) -> Result<Task> {
        self.edit(id, |t| {
            if let Some(s) = patch.subject {
                t.subject = s;
            }
            if let Some(d) = patch.description {
                t.description = d;
            }
            if let Some(a) = patch.active_form {
                t.active_form = Some(a);
            }
            if let Some(s) = patch.status {
                t.status = s;
            }
            if let Some(o) = patch.owner {
                t.owner = o;
            }
            for (k, v) in patch.metadata {
                if v.is_null() {
                    t.metadata.remove(&k);
                } else {
                    t.metadata.insert(k, v);
                }
            }
            Ok(t.clone())
        })
    }

    /// Deletes a task, raising the high-water mark so its id is never issued again, and removes
    /// it from every other task's edges.
    pub fn delete(&self, id: &TaskId) -> Result<Task> {
        let _list = self.list_lock()?;
        let task = self.get(id)?;
        let hwm = self.highwatermark()?.max(id.number());
        fsio::write_atomic(
            &self.store.highwatermark_path(self.team),
            hwm.to_string().as_bytes(),
        )?;
        {
            let _lock = self.task_lock(id)?;
            let path = self.store.task_path(self.team, id);
            fs::remove_file(&path).map_err(Error::io("delete", &path))?;
            self.recorded(Some(&task), None);
        }
        for other in task.blocks.iter().chain(&task.blocked_by) {
            if self.get_opt(other)?.is_some() {
                self.modify(other, |t| {
                    t.blocks.retain(|b| b != id);
                    t.blocked_by.retain(|b| b != id);
                })?;
            }
        }
        Ok(task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ClaimFailure;
    use crate::store::names::AgentName;
    use serde_json::Value;

    fn list() -> (tempfile::TempDir, Store, TeamName) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        (dir, store, "t".parse().unwrap())
    }

    fn new(subject: &str, blocked_by: &[&TaskId]) -> NewTask {
        NewTask {
            subject: subject.into(),
            blocked_by: blocked_by.iter().map(|&i| i.clone()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn dependencies_are_symmetric_and_cycles_refused() {
        let (_d, store, team) = list();
        let tl = TaskList::new(&store, &team);
        let a = tl.create(new("a", &[])).unwrap().id;
        let b = tl.create(new("b", &[&a])).unwrap().id;
        let c = tl.create(new("c", &[&b])).unwrap().id;
        assert_eq!(tl.get(&a).unwrap().blocks, vec![b.clone()]);
        assert!(matches!(
            tl.add_dependency(&a, &c),
            Err(Error::DependencyCycle { .. })
        ));
        assert!(matches!(
            tl.add_dependency(&a, &a),
            Err(Error::DependencyCycle { .. })
        ));
        tl.remove_dependency(&c, &b).unwrap();
        assert!(tl.get(&b).unwrap().blocks.is_empty());
        tl.add_dependency(&a, &c).unwrap();
        assert_eq!(tl.get(&c).unwrap().blocks, vec![a]);
    }

    #[test]
    fn deleted_ids_are_never_reused() {
        let (_d, store, team) = list();
        let tl = TaskList::new(&store, &team);
        let a = tl.create(new("a", &[])).unwrap().id;
        let b = tl.create(new("b", &[&a])).unwrap().id;
        tl.delete(&b).unwrap();
        assert!(tl.get(&a).unwrap().blocks.is_empty());
        assert_eq!(tl.create(new("c", &[])).unwrap().id.number(), 3);
    }

    #[test]
    fn claims_respect_blockers_owners_and_busy_agents() {
        let (_d, store, team) = list();
        let tl = TaskList::new(&store, &team);
        let coder: AgentName = "coder".parse().unwrap();
        let other: AgentName = "other".parse().unwrap();
        let a = tl.create(new("a", &[])).unwrap().id;
        let b = tl.create(new("b", &[&a])).unwrap().id;
        let c = tl.create(new("c", &[])).unwrap().id;
        let refused = |r: Result<Task>| match r {
            Err(Error::ClaimRefused { reason, .. }) => reason,
            other => panic!("expected refusal, got {other:?}"),
        };
        assert_eq!(refused(tl.claim(&b, &coder, false)), ClaimFailure::Blocked);
        let t = tl.claim(&a, &coder, true).unwrap();
        assert_eq!(
            (t.owner.as_deref(), t.status),
            (Some("coder"), TaskStatus::InProgress)
        );
        assert_eq!(
            refused(tl.claim(&a, &other, false)),
            ClaimFailure::AlreadyClaimed
        );
        assert_eq!(refused(tl.claim(&c, &coder, true)), ClaimFailure::AgentBusy);
        tl.update(
            &a,
            TaskPatch {
                status: Some(TaskStatus::Completed),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            refused(tl.claim(&a, &other, false)),
            ClaimFailure::AlreadyResolved
        );
        let mut index = TaskIndex::open(&store, &team).unwrap();
        assert_eq!(index.claim_next(&other, true).unwrap().unwrap().id, b);
        assert_eq!(tl.release_agent("other").unwrap(), vec![b.clone()]);
        assert_eq!(tl.get(&b).unwrap().status, TaskStatus::Pending);
    }

    #[test]
    fn a_failed_task_is_parked_until_the_flag_is_cleared() {
        let (_d, store, team) = list();
        let tl = TaskList::new(&store, &team);
        let coder: AgentName = "coder".parse().unwrap();
        let other: AgentName = "other".parse().unwrap();
        let a = tl.create(new("a", &[])).unwrap().id;
        let b = tl.create(new("b", &[&a])).unwrap().id;
        tl.claim(&a, &coder, true).unwrap();
        let failed = TaskOutcome::Failed {
            reason: "exit 1".into(),
        };
        assert!(tl.finish(&a, &other, &failed).unwrap().is_none());
        let t = tl.finish(&a, &coder, &failed).unwrap().unwrap();
        assert_eq!((t.status, t.owner), (TaskStatus::Pending, None));
        assert_eq!(t.metadata["failedBy"], "coder");
        assert!(tl.available().unwrap().is_empty());
        let mut index = TaskIndex::open(&store, &team).unwrap();
        assert!(index.claim_next(&other, true).unwrap().is_none());
        let mut m = Map::new();
        m.insert(SWARM_FAILED.into(), Value::Null);
        tl.update(
            &a,
            TaskPatch {
                metadata: m,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(index.claim_next(&other, true).unwrap().unwrap().id, a);
        let done = tl.finish(&a, &other, &TaskOutcome::Completed).unwrap();
        assert_eq!(done.unwrap().status, TaskStatus::Completed);
        assert_eq!(tl.available().unwrap()[0].id, b);
    }

    #[test]
    fn the_benchmarks_baseline_claims_by_the_same_rules_as_the_index() {
        let (_d, store, team) = list();
        let tl = TaskList::new(&store, &team);
        let coder: AgentName = "coder".parse().unwrap();
        let other: AgentName = "other".parse().unwrap();
        let a = tl.create(new("a", &[])).unwrap().id;
        let b = tl.create(new("b", &[&a])).unwrap().id;
        let c = tl.create(new("c", &[])).unwrap().id;
        let d = tl.create(new("d", &[])).unwrap().id;
        tl.claim(&a, &other, false).unwrap();
        // a is owned and b waits for a: c is next, for both kinds of claim.
        assert_eq!(
            tl.claim_next_baseline(&coder, false).unwrap().unwrap().id,
            c
        );
        // coder now owns c, so the busy check refuses it another task...
        assert!(tl.claim_next_baseline(&coder, true).unwrap().is_none());
        // ...and without it coder gets d, the next one.
        assert_eq!(
            tl.claim_next_baseline(&coder, false).unwrap().unwrap().id,
            d
        );
        assert!(
            tl.claim_next_baseline(&other, false).unwrap().is_none(),
            "b is blocked"
        );
        // A blocker that is deleted no longer blocks.
        tl.delete(&a).unwrap();
        assert_eq!(tl.claim_next_baseline(&other, true).unwrap().unwrap().id, b);
        let done = TaskPatch {
            status: Some(TaskStatus::Completed),
            ..Default::default()
        };
        for id in [&b, &c, &d] {
            tl.update(id, done.clone()).unwrap();
        }
        assert!(tl.claim_next_baseline(&coder, true).unwrap().is_none());
        assert!(tl.claim_next_baseline(&coder, false).unwrap().is_none());
    }

    #[test]
    fn a_quarantined_task_keeps_its_id_and_a_garbage_highwatermark_is_refused() {
        let (_d, store, team) = list();
        let tl = TaskList::new(&store, &team);
        tl.create(new("a", &[])).unwrap();
        let b = tl.create(new("b", &[])).unwrap().id;
        fs::write(store.task_path(&team, &b), "{\"id\": ").unwrap();
        assert_eq!(tl.list().unwrap().len(), 1, "the torn task is quarantined");
        assert_eq!(tl.create(new("c", &[])).unwrap().id.number(), 3);
        fs::write(store.highwatermark_path(&team), "abc").unwrap();
        let err = tl.create(new("d", &[])).unwrap_err();
        assert!(err.to_string().contains("not a task number"), "{err}");
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn metadata_null_deletes_a_key() {
        let (_d, store, team) = list();
        let tl = TaskList::new(&store, &team);
        let a = tl.create(new("a", &[])).unwrap().id;
        let mut m = Map::new();
        m.insert("k".into(), Value::from(1));
        m.insert("j".into(), Value::from(2));
        tl.update(
            &a,
            TaskPatch {
                metadata: m,
                ..Default::default()
            },
        )
        .unwrap();
        let mut m = Map::new();
        m.insert("k".into(), Value::Null);
        let t = tl
            .update(
                &a,
                TaskPatch {
                    metadata: m,
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(Value::Object(t.metadata), serde_json::json!({"j": 2}));
    }
}
