//! The shared task list, `tasks/<team>/<id>.json` (PROTOCOL.md section 8).
//!
//! Tasks form a DAG through `blocks` / `blockedBy`, kept symmetric, with cycles refused. Idle
//! teammates claim available tasks; a claim sets `owner` and `in_progress` in one atomic write
//! under the task's lock, so two claimers racing in separate processes can never both win.
//!
//! Lock order is always list lock, then task lock, so creators and claimers cannot deadlock.

use std::collections::{BTreeMap, HashSet};
use std::fs;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ClaimFailure, Error, Result};
use crate::store::fsio;
use crate::store::lock::FileLock;
use crate::store::names::{AgentName, TaskId, TeamName};
use crate::store::paths::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    InProgress,
    Completed,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Completed => "completed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: TaskId,
    pub subject: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    pub status: TaskStatus,
    #[serde(default)]
    pub blocks: Vec<TaskId>,
    #[serde(default)]
    pub blocked_by: Vec<TaskId>,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Task {
    /// A teammate runtime failed this task and parked it (metadata `swarmFailed: true`): it is
    /// pending but not offered to claimers until the lead clears the flag with
    /// `swarm task update ID --metadata '{"swarmFailed": null}'`.
    pub fn parked(&self) -> bool {
        self.metadata.get(SWARM_FAILED) == Some(&Value::Bool(true))
    }
}

/// Metadata key of a task a teammate failed; see [`Task::parked`].
pub const SWARM_FAILED: &str = "swarmFailed";

/// How a teammate's turn on a task ended, for [`TaskList::finish`].
#[derive(Debug, Clone, PartialEq)]
pub enum TaskOutcome {
    Completed,
    Failed { reason: String },
}

/// What `update` changes; `None` leaves a field alone.
#[derive(Debug, Default, Clone)]
pub struct TaskPatch {
    pub subject: Option<String>,
    pub description: Option<String>,
    pub active_form: Option<String>,
    pub status: Option<TaskStatus>,
    /// `Some(None)` clears the owner.
    pub owner: Option<Option<String>>,
    /// Merged into `metadata`; a `null` value deletes the key.
    pub metadata: Map<String, Value>,
}

/// A task to create.
#[derive(Debug, Default, Clone)]
pub struct NewTask {
    pub subject: String,
    pub description: String,
    pub active_form: Option<String>,
    pub blocked_by: Vec<TaskId>,
    pub metadata: Map<String, Value>,
}

pub struct TaskList<'a> {
    store: &'a Store,
    team: &'a TeamName,
}

impl<'a> TaskList<'a> {
    pub fn new(store: &'a Store, team: &'a TeamName) -> TaskList<'a> {
        TaskList { store, team }
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

    fn write(&self, task: &Task) -> Result<()> {
        fsio::write_json(&self.store.task_path(self.team, &task.id), task)
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
        text.parse().map_err(|_| {
            Error::usage(format!(
                "{} holds {text:?}, not a task number; write the largest task id ever issued into it",
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
        let path = self.store.task_path(self.team, id);
        fsio::read_json(&path)?.ok_or_else(|| self.no_such(id))
    }

    fn get_opt(&self, id: &TaskId) -> Result<Option<Task>> {
        fsio::read_json(&self.store.task_path(self.team, id))
    }

    /// Every task, by id. A task file that does not parse is quarantined (under its lock) and
    /// left out, with a warning on stderr.
    pub fn list(&self) -> Result<Vec<Task>> {
        let mut tasks = Vec::new();
        for id in self.ids()? {
            tasks.extend(self.read_listed(&id)?);
        }
        Ok(tasks)
    }

    /// One task as `list` reads it: gone is `None`, and a file that does not parse is
    /// quarantined (under its lock) and also `None`.
    fn read_listed(&self, id: &TaskId) -> Result<Option<Task>> {
        let path = self.store.task_path(self.team, id);
        match fsio::read_json::<Task>(&path) {
            Err(Error::Usage(_)) => {
                let _lock = self.task_lock(id)?;
                fsio::read_json_or_quarantine::<Task>(&path)
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
        let largest = self.ids()?.last().map_or(0, TaskId::number);
        let issued = largest
            .max(self.highwatermark()?)
            .max(self.largest_quarantined()?);
        let id = TaskId::new(issued + 1);
        let task = Task {
            id: id.clone(),
            subject: new.subject,
            description: new.description,
            active_form: new.active_form,
            owner: None,
            status: TaskStatus::Pending,
            blocks: vec![],
            blocked_by: dedup(new.blocked_by),
            metadata: new.metadata,
            extra: Map::new(),
        };
        self.write(&task)?;
        for dep in &task.blocked_by {
            self.modify(dep, |t| push_unique(&mut t.blocks, &id))?;
        }
        Ok(task)
    }

    /// Read-modify-write of one task under its lock.
    fn edit<T>(&self, id: &TaskId, f: impl FnOnce(&mut Task) -> Result<T>) -> Result<T> {
        let _lock = self.task_lock(id)?;
        let mut task = self.get(id)?;
        let before = task.clone();
        let out = f(&mut task)?;
        if task != before {
            self.write(&task)?;
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

    /// Makes `task` wait for `blocker`. Refused if `blocker` already (transitively) waits for
    /// `task`, which would close a cycle.
    pub fn add_dependency(&self, task: &TaskId, blocker: &TaskId) -> Result<()> {
        let cycle = || Error::DependencyCycle {
            from: task.to_string(),
            to: blocker.to_string(),
        };
        if task == blocker {
            return Err(cycle());
        }
        let _list = self.list_lock()?;
        self.get(task)?;
        self.get(blocker)?;
        let graph: BTreeMap<TaskId, Vec<TaskId>> = self
            .list()?
            .into_iter()
            .map(|t| (t.id, t.blocked_by))
            .collect();
        let mut stack = vec![blocker.clone()];
        let mut seen = HashSet::new();
        while let Some(id) = stack.pop() {
            if &id == task {
                return Err(cycle());
            }
            if seen.insert(id.clone()) {
                stack.extend(graph.get(&id).into_iter().flatten().cloned());
            }
        }
        self.modify(task, |t| push_unique(&mut t.blocked_by, blocker))?;
        self.modify(blocker, |t| push_unique(&mut t.blocks, task))?;
        Ok(())
    }

    pub fn remove_dependency(&self, task: &TaskId, blocker: &TaskId) -> Result<()> {
        let _list = self.list_lock()?;
        self.modify(task, |t| t.blocked_by.retain(|b| b != blocker))?;
        if self.get_opt(blocker)?.is_some() {
            self.modify(blocker, |t| t.blocks.retain(|b| b != task))?;
        }
        Ok(())
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

    /// Whether every task `task` waits for is completed (or gone).
    fn unblocked(&self, task: &Task) -> Result<bool> {
        for dep in &task.blocked_by {
            if let Some(d) = self.get_opt(dep)? {
                if d.status != TaskStatus::Completed {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Claims `id` for `agent`: owner and `in_progress` in one write. With `busy_check`, refused
    /// while the agent owns another unfinished task.
    pub fn claim(&self, id: &TaskId, agent: &AgentName, busy_check: bool) -> Result<Task> {
        if busy_check {
            let _list = self.list_lock()?;
            self.claim_locked(id, agent, BusyCheck::Scan)
        } else {
            self.claim_locked(id, agent, BusyCheck::Off)
        }
    }

    /// `claim` once the caller holds the list lock (unless `busy` is `Off`).
    fn claim_locked(&self, id: &TaskId, agent: &AgentName, busy: BusyCheck) -> Result<Task> {
        let _lock = self.task_lock(id)?;
        let mut task = self.get(id)?;
        if task.status == TaskStatus::Completed {
            return Err(self.refused(id, ClaimFailure::AlreadyResolved));
        }
        match task.owner.as_deref() {
            Some(owner) if owner == agent.as_str() => {}
            Some(_) => return Err(self.refused(id, ClaimFailure::AlreadyClaimed)),
            None => {}
        }
        if !self.unblocked(&task)? {
            return Err(self.refused(id, ClaimFailure::Blocked));
        }
        let owns_another = |t: &Task| {
            &t.id != id
                && t.owner.as_deref() == Some(agent.as_str())
                && t.status != TaskStatus::Completed
        };
        let busy = match busy {
            BusyCheck::Off => false,
            BusyCheck::Scan => self.list()?.iter().any(owns_another),
            BusyCheck::Snapshot(tasks) => tasks.iter().any(owns_another),
        };
        if busy {
            return Err(self.refused(id, ClaimFailure::AgentBusy));
        }
        task.owner = Some(agent.to_string());
        task.status = TaskStatus::InProgress;
        self.write(&task)?;
        Ok(task)
    }

    fn refused(&self, id: &TaskId, reason: ClaimFailure) -> Error {
        Error::ClaimRefused {
            id: id.to_string(),
            reason,
        }
    }

    /// Ends `agent`'s work on `id` under the task lock: completed, or back to pending with no
    /// owner and parked (`swarmFailed`, `failureReason`, `failedBy` in metadata) so it is not
    /// retried forever and its dependents stay blocked. A task the agent already marked
    /// completed itself is left completed. `None` (nothing written) when the task is gone or no
    /// longer `agent`'s, e.g. the lead released it meanwhile.
    pub fn finish(
        &self,
        id: &TaskId,
        agent: &AgentName,
        outcome: &TaskOutcome,
    ) -> Result<Option<Task>> {
        if self.get_opt(id)?.is_none() {
            return Ok(None);
        }
        let result = self.edit(id, |t| {
            if t.owner.as_deref() != Some(agent.as_str()) {
                return Ok(None);
            }
            match t.status {
                TaskStatus::Completed => return Ok(Some(t.clone())),
                TaskStatus::Pending => return Ok(None),
                TaskStatus::InProgress => {}
            }
            match outcome {
                TaskOutcome::Completed => t.status = TaskStatus::Completed,
                TaskOutcome::Failed { reason } => {
                    t.status = TaskStatus::Pending;
                    t.owner = None;
                    t.metadata.insert(SWARM_FAILED.into(), Value::Bool(true));
                    t.metadata
                        .insert("failureReason".into(), Value::from(reason.as_str()));
                    t.metadata
                        .insert("failedBy".into(), Value::from(agent.as_str()));
                }
            }
            Ok(Some(t.clone()))
        });
        match result {
            Err(Error::NoSuchTask { .. }) => Ok(None),
            other => other,
        }
    }

    /// Tasks anyone may claim now: pending, no owner, not parked by a failure, nothing
    /// unfinished before them.
    pub fn available(&self) -> Result<Vec<Task>> {
        Ok(available_in(&self.list()?).cloned().collect())
    }

    /// Claims the lowest-numbered available task; `None` when there is none. Losing a race for
    /// one task moves on to the next.
    ///
    /// Every task file is read at most once per call (this is the hot path of idle teammates):
    /// with the busy check, one `list` under the list lock serves as both the busy check and
    /// the candidates; without it, ids are walked upwards and the walk stops at the first task
    /// that can be claimed. Either way each candidate is checked again under its own lock.
    pub fn claim_next(&self, agent: &AgentName, busy_check: bool) -> Result<Option<Task>> {
        if busy_check {
            let _list = self.list_lock()?;
            let tasks = self.list()?;
            for task in available_in(&tasks) {
                match self.claim_outcome(self.claim_locked(
                    &task.id,
                    agent,
                    BusyCheck::Snapshot(&tasks),
                ))? {
                    Some(claimed) => return Ok(claimed),
                    None => continue,
                }
            }
            return Ok(None);
        }
        for id in self.ids()? {
            let Some(task) = self.read_listed(&id)? else {
                continue;
            };
            if task.status != TaskStatus::Pending || task.owner.is_some() || task.parked() {
                continue;
            }
            if !self.unblocked(&task)? {
                continue;
            }
            match self.claim_outcome(self.claim_locked(&id, agent, BusyCheck::Off))? {
                Some(claimed) => return Ok(claimed),
                None => continue,
            }
        }
        Ok(None)
    }

    /// What one attempt of `claim_next` means: `Some(result)` ends the search (a claim, or
    /// `None` for a busy agent), `None` moves on to the next candidate.
    fn claim_outcome(&self, attempt: Result<Task>) -> Result<Option<Option<Task>>> {
        match attempt {
            Ok(t) => Ok(Some(Some(t))),
            Err(Error::ClaimRefused {
                reason: ClaimFailure::AgentBusy,
                ..
            }) => Ok(Some(None)),
            Err(Error::ClaimRefused { .. } | Error::NoSuchTask { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Returns every unfinished task of `agent` to pending with no owner; gives their ids.
    pub fn release_agent(&self, agent: &str) -> Result<Vec<TaskId>> {
        let mut released = Vec::new();
        for task in self.list()? {
            if task.owner.as_deref() != Some(agent) || task.status == TaskStatus::Completed {
                continue;
            }
            let changed = self.edit(&task.id, |t| {
                if t.owner.as_deref() == Some(agent) && t.status != TaskStatus::Completed {
                    t.owner = None;
                    t.status = TaskStatus::Pending;
                    return Ok(true);
                }
                Ok(false)
            })?;
            if changed {
                released.push(task.id);
            }
        }
        Ok(released)
    }
}

/// How a claim decides whether the agent already owns an unfinished task.
enum BusyCheck<'t> {
    /// No busy check.
    Off,
    /// Read every task now (the caller holds the list lock).
    Scan,
    /// Use tasks read under the list lock the caller still holds.
    Snapshot(&'t [Task]),
}

/// The tasks of `tasks` anyone may claim: pending, no owner, every blocker completed or gone.
fn available_in(tasks: &[Task]) -> impl Iterator<Item = &Task> {
    let done: HashSet<&TaskId> = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Completed)
        .map(|t| &t.id)
        .collect();
    let exists: HashSet<&TaskId> = tasks.iter().map(|t| &t.id).collect();
    tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Pending && t.owner.is_none() && !t.parked())
        .filter(move |t| {
            t.blocked_by
                .iter()
                .all(|d| done.contains(d) || !exists.contains(d))
        })
}

fn push_unique(v: &mut Vec<TaskId>, id: &TaskId) {
    if !v.contains(id) {
        v.push(id.clone());
    }
}

fn dedup(v: Vec<TaskId>) -> Vec<TaskId> {
    let mut out = Vec::with_capacity(v.len());
    for id in v {
        push_unique(&mut out, &id);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(tl.claim_next(&other, true).unwrap().unwrap().id, b);
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
        assert!(tl.claim_next(&other, true).unwrap().is_none());
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
        assert_eq!(tl.claim_next(&other, true).unwrap().unwrap().id, a);
        let done = tl.finish(&a, &other, &TaskOutcome::Completed).unwrap();
        assert_eq!(done.unwrap().status, TaskStatus::Completed);
        assert_eq!(tl.available().unwrap()[0].id, b);
    }

    #[test]
    fn claim_next_takes_the_lowest_available_task_with_and_without_the_busy_check() {
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
        assert_eq!(tl.claim_next(&coder, false).unwrap().unwrap().id, c);
        // coder now owns c, so the busy check refuses it another task...
        assert!(tl.claim_next(&coder, true).unwrap().is_none());
        // ...and without it coder gets d, the next one.
        assert_eq!(tl.claim_next(&coder, false).unwrap().unwrap().id, d);
        assert!(
            tl.claim_next(&other, false).unwrap().is_none(),
            "b is blocked"
        );
        // A blocker that is deleted no longer blocks.
        tl.delete(&a).unwrap();
        assert_eq!(tl.claim_next(&other, true).unwrap().unwrap().id, b);
        let done = TaskPatch {
            status: Some(TaskStatus::Completed),
            ..Default::default()
        };
        for id in [&b, &c, &d] {
            tl.update(id, done.clone()).unwrap();
        }
        assert!(tl.claim_next(&coder, true).unwrap().is_none());
        assert!(tl.claim_next(&coder, false).unwrap().is_none());
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
