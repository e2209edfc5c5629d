//! Choosing the task a teammate works on next, and claiming it.
//!
//! A task the lead assigned comes first, then one this teammate already owns (a runtime
//! restarted after a crash resumes its task), then the lowest available one (`Task::available`,
//! claimed through `TaskIndex::claim_next`, the one way to claim the next task). The runtime keeps
//! the task list in memory (`TaskIndex`, re-read from file events), so a wake-up costs no scan of
//! every task file; claims are still decided on the files under the task list's locks (PROTOCOL.md
//! section 8), so two teammates never take the same task, and an idle teammate only takes the
//! list lock when a claimable task may exist.

use std::collections::VecDeque;

use super::Runtime;
use crate::error::{ClaimFailure, Error, Result};
use crate::store::names::TaskId;
use crate::store::tasks::Task;

impl Runtime {
    /// The next task to work on: one the lead assigned, one already ours (a restarted runtime
    /// resumes its task), else the lowest available one.
    pub(super) fn take_task(&mut self) -> Result<Option<Task>> {
        // On a remote host's mirror, claims are decided at home (`home_claim`).
        if crate::remote::claims::is_mirror(&self.cfg.store, &self.cfg.team) {
            return self.take_task_from_home();
        }
        let me = self.cfg.name.clone();
        let mut waiting = VecDeque::new();
        let mut found = None;
        while let Some(id) = self.assigned.pop_front() {
            if found.is_some() {
                waiting.push_back(id);
                continue;
            }
            match self.tasks().claim(&id, &me, false) {
                Ok(task) => found = Some(task),
                Err(Error::ClaimRefused {
                    reason: ClaimFailure::Blocked,
                    ..
                }) => waiting.push_back(id),
                Err(e @ (Error::ClaimRefused { .. } | Error::NoSuchTask { .. })) => {
                    self.pane
                        .say(format!("cannot take assigned task #{id}: {e}"));
                    self.tell_lead(format!("I cannot take task #{id}: {e}"))?;
                }
                Err(e) => return Err(e),
            }
        }
        self.assigned = waiting;
        if found.is_some() {
            return Ok(found);
        }
        self.index.refresh()?;
        let mine: Vec<TaskId> = self
            .index
            .tasks()
            .filter(|t| t.unfinished_by(me.as_str()) && !t.parked())
            .map(|t| t.id.clone())
            .collect();
        for id in mine {
            match self.tasks().claim(&id, &me, false) {
                Ok(task) => return Ok(Some(task)),
                Err(Error::ClaimRefused { .. } | Error::NoSuchTask { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        if self.pool_paused {
            return Ok(None);
        }
        // `claim_next` takes the task-list lock; an idle teammate wakes on every re-scan, so it
        // only asks when a claimable task may exist (decided again under the locks).
        if !self.index.any_available()? {
            return Ok(None);
        }
        self.index.claim_next(&me, true)
    }
}
