//! The claim path as it was before the task index, kept runnable so that `swarm-bench claims`
//! measures the index against it in the same run (`swarm-bench worker claim-loop --baseline`): each
//! claim lists the task files again (under the list lock with the busy check, walking ids
//! upwards without it). It claims by the same rule as everything else ([`Task::available`],
//! then the checks of `claim` under the task's lock). Never used outside the benchmarks: swarm
//! claims the next task through `TaskIndex::claim_next`.

use super::claim::{available_in, BusyCheck};
use super::{Task, TaskList};
use crate::error::{ClaimFailure, Error, Result};
use crate::store::names::AgentName;

impl TaskList<'_> {
    /// Claims the lowest-numbered available task; `None` when there is none. Losing a race for
    /// one task moves on to the next. Every task file is read at most once per call: with the
    /// busy check, one `list` under the list lock serves as both the busy check and the
    /// candidates; without it, the walk stops at the first task that can be claimed.
    pub fn claim_next_baseline(&self, agent: &AgentName, busy_check: bool) -> Result<Option<Task>> {
        if busy_check {
            let _list = self.list_lock()?;
            let tasks = self.list()?;
            for task in available_in(&tasks) {
                let attempt = self.claim_locked(&task.id, agent, BusyCheck::Snapshot(&tasks));
                if let Some(claimed) = outcome(attempt)? {
                    return Ok(claimed);
                }
            }
            return Ok(None);
        }
        for id in self.ids()? {
            let Some(task) = self.read_listed(&id)? else {
                continue;
            };
            if !task.available(|b| self.finished(b))? {
                continue;
            }
            if let Some(claimed) = outcome(self.claim_locked(&id, agent, BusyCheck::Off))? {
                return Ok(claimed);
            }
        }
        Ok(None)
    }
}

/// What one attempt means: `Some(result)` ends the search (a claim, or `None` for a busy
/// agent), `None` moves on to the next candidate.
fn outcome(attempt: Result<Task>) -> Result<Option<Option<Task>>> {
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
