//! One task file, `tasks/<team>/<id>.json` (PROTOCOL.md section 8): its fields, its status,
//! the shapes of a new task and of a change to one, and the rules every reader of the list
//! shares: which task is available ([`Task::available`]), which agent a task keeps busy
//! ([`Task::unfinished_by`]), and the phase a view shows ([`Task::phase`]). The claimers (the
//! task index, `swarm task claim`), `swarm task list`, `swarm top` and the lead's dispatcher all
//! ask here, so "available" cannot mean one thing to a claimer and another to a view.

use std::convert::Infallible;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::store::names::TaskId;

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

    /// Whether `agent` owns this task and has not finished it. An agent that owns such a task
    /// is busy: the busy check refuses it another one, and `swarm status` says `busy`.
    pub fn unfinished_by(&self, agent: &str) -> bool {
        self.owner.as_deref() == Some(agent) && self.status != TaskStatus::Completed
    }

    /// The one rule for "available": anyone may claim it now. Pending, no owner, not parked by
    /// a failure, and every task it waits for finished, as `finished` says of a blocker id
    /// (completed, or gone: a deleted blocker blocks nothing). `finished` is asked only about
    /// a task that passes the other tests, so a claimer reading blockers from disk reads them
    /// only for a real candidate.
    pub fn available<E>(
        &self,
        finished: impl FnMut(&TaskId) -> Result<bool, E>,
    ) -> Result<bool, E> {
        if self.status != TaskStatus::Pending || self.owner.is_some() || self.parked() {
            return Ok(false);
        }
        self.unblocked(finished)
    }

    /// [`available`](Self::available) with blockers looked up in memory.
    pub fn available_given(&self, finished: impl Fn(&TaskId) -> bool) -> bool {
        let Ok(available) = self.available(|b| Ok::<_, Infallible>(finished(b)));
        available
    }

    /// Whether every task this one waits for is finished, as `finished` says.
    pub fn unblocked<E>(
        &self,
        mut finished: impl FnMut(&TaskId) -> Result<bool, E>,
    ) -> Result<bool, E> {
        for blocker in &self.blocked_by {
            if !finished(blocker)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Where the task stands for someone reading the list, with blockers looked up in memory.
    pub fn phase(&self, finished: impl Fn(&TaskId) -> bool) -> Phase {
        match self.status {
            TaskStatus::Completed => Phase::Completed,
            TaskStatus::InProgress => Phase::InProgress,
            TaskStatus::Pending if self.parked() => Phase::Failed,
            TaskStatus::Pending if self.available_given(&finished) => Phase::Available,
            TaskStatus::Pending => {
                let Ok(unblocked) = self.unblocked(|b| Ok::<_, Infallible>(finished(b)));
                if unblocked {
                    Phase::Assigned
                } else {
                    Phase::Blocked
                }
            }
        }
    }
}

/// Where a task stands, as `swarm top` and `swarm status --watch` show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Completed,
    InProgress,
    /// Pending but parked by a teammate's failure (see [`Task::parked`]).
    Failed,
    /// Pending and waiting for an unfinished task.
    Blocked,
    /// Anyone may claim it now ([`Task::available`]).
    Available,
    /// Pending with an owner that has not started it.
    Assigned,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Completed => "completed",
            Phase::InProgress => "in_progress",
            Phase::Failed => "failed",
            Phase::Blocked => "blocked",
            Phase::Available => "available",
            // The word `swarm top` has always shown for it: pending, just not for anyone.
            Phase::Assigned => "pending",
        }
    }
}

/// Whether a blocker is finished, given the whole list: completed, or not in it (deleted).
pub(crate) fn finished_in(tasks: &[Task]) -> impl Fn(&TaskId) -> bool + '_ {
    let unfinished: std::collections::HashSet<&TaskId> = tasks
        .iter()
        .filter(|t| t.status != TaskStatus::Completed)
        .map(|t| &t.id)
        .collect();
    move |id| !unfinished.contains(id)
}

/// Metadata key of a task a teammate failed; see [`Task::parked`].
pub(crate) const SWARM_FAILED: &str = "swarmFailed";

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
