//! Claiming a named task (`swarm task claim`, a task the lead assigned), listing the available
//! ones, finishing and giving tasks back. Which task is available is [`Task::available`]; the
//! next one is claimed through the task index (`TaskIndex::claim_next`).
//!
//! A claim sets `owner` and `in_progress` in one atomic write under the task's lock, so two
//! claimers racing in separate processes can never both win. With the busy check the claimer
//! also holds the list lock, so an agent never ends up owning two unfinished tasks.

use serde_json::Value;

use super::task::finished_in;
use super::{Task, TaskList, TaskOutcome, TaskStatus, SWARM_FAILED};
use crate::error::{ClaimFailure, Error, Result};
use crate::store::names::{AgentName, TaskId};

impl TaskList<'_> {
    /// Whether the task `id` is finished as a blocker, read from its file: completed, or gone.
    pub(super) fn finished(&self, id: &TaskId) -> Result<bool> {
        Ok(self
            .get_opt(id)?
            .is_none_or(|t| t.status == TaskStatus::Completed))
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
    pub(super) fn claim_locked(
        &self,
        id: &TaskId,
        agent: &AgentName,
        busy: BusyCheck,
    ) -> Result<Task> {
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
        if !task.unblocked(|b| self.finished(b))? {
            return Err(self.refused(id, ClaimFailure::Blocked));
        }
        let owns_another = |t: &Task| &t.id != id && t.unfinished_by(agent.as_str());
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

    /// Claims `id` again for `agent`, who owns it already: a claimer that asks again because it
    /// was not told how its claim went (killed, or exit 3) gets its task back. Written again, so
    /// the directory sync that confirms the claim is made now; `in_progress` if the lead had
    /// only assigned it, and then not while it is blocked. `None` when it is no longer `agent`'s
    /// unfinished task.
    pub(super) fn reclaim(&self, id: &TaskId, agent: &AgentName) -> Result<Option<Task>> {
        let _lock = self.task_lock(id)?;
        let mut task = match self.get_locked(id) {
            Err(Error::NoSuchTask { .. }) => return Ok(None),
            other => other?,
        };
        if !task.unfinished_by(agent.as_str()) {
            return Ok(None);
        }
        if task.status == TaskStatus::Pending && !task.unblocked(|b| self.finished(b))? {
            return Ok(None);
        }
        let before = task.clone();
        task.status = TaskStatus::InProgress;
        self.write(&before, &task)?;
        Ok(Some(task))
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

    /// Tasks anyone may claim now ([`Task::available`]), by id. One-shot listings ask here; a
    /// claim goes through the task index (`TaskIndex::claim_next`).
    pub fn available(&self) -> Result<Vec<Task>> {
        Ok(available_in(&self.list()?).cloned().collect())
    }

    /// Returns `agent`'s task `id` to pending with no owner (the lead interrupted the turn on
    /// it); `false` when it is not `agent`'s unfinished task any more.
    pub fn release(&self, id: &TaskId, agent: &AgentName) -> Result<bool> {
        let result = self.edit(id, |t| {
            if !t.unfinished_by(agent.as_str()) {
                return Ok(false);
            }
            t.owner = None;
            t.status = TaskStatus::Pending;
            Ok(true)
        });
        match result {
            Err(Error::NoSuchTask { .. }) => Ok(false),
            other => other,
        }
    }

    /// Returns every unfinished task of `agent` to pending with no owner; gives their ids.
    pub fn release_agent(&self, agent: &str) -> Result<Vec<TaskId>> {
        let mut released = Vec::new();
        for task in self.list()? {
            if !task.unfinished_by(agent) {
                continue;
            }
            let changed = self.edit(&task.id, |t| {
                if t.unfinished_by(agent) {
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
pub(super) enum BusyCheck<'t> {
    /// No busy check.
    Off,
    /// Read every task now (the caller holds the list lock).
    Scan,
    /// Use tasks read under the list lock the caller still holds (the benchmarks' baseline).
    #[cfg_attr(
        not(feature = "seams"),
        expect(
            dead_code,
            reason = "only the benchmarks' baseline claims from a snapshot"
        )
    )]
    Snapshot(&'t [Task]),
}

/// The tasks of `tasks` anyone may claim ([`Task::available`]), blockers looked up among them.
pub(super) fn available_in(tasks: &[Task]) -> impl Iterator<Item = &Task> {
    let finished = finished_in(tasks);
    tasks.iter().filter(move |t| t.available_given(&finished))
}
