//! Claiming tasks: who may take which task, and giving tasks back.
//!
//! A claim sets `owner` and `in_progress` in one atomic write under the task's lock, so two
//! claimers racing in separate processes can never both win. With the busy check the claimer
//! also holds the list lock, so an agent never ends up owning two unfinished tasks.

use std::collections::HashSet;

use serde_json::Value;

use super::{Task, TaskList, TaskOutcome, TaskStatus, SWARM_FAILED};
use crate::error::{ClaimFailure, Error, Result};
use crate::store::names::{AgentName, TaskId};

impl TaskList<'_> {
    /// Whether every task `task` waits for is completed (or gone).
    pub(super) fn unblocked(&self, task: &Task) -> Result<bool> {
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
        let mut task = self.get_locked(id)?;
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
        let before = task.clone();
        task.owner = Some(agent.to_string());
        task.status = TaskStatus::InProgress;
        self.write(&before, &task)?;
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
