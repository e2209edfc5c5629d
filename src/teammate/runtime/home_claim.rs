//! Choosing and claiming the next task when this runtime's store is a remote host's mirror.
//!
//! The order is `claim`'s (a task the lead assigned, then one already ours, then the lowest
//! available one), but the decision is home's: a claim in a mirror would exclude nobody on
//! another host, so every claim is a request to home through the relay
//! (`remote::claims`), granted or refused there on the home task files. A task the mirror
//! already shows as ours was granted before and is resumed without asking. With no relay
//! running (the host is cut off) nothing new is claimed: the runtime keeps doing what it can
//! locally, and asks again on a later wake.

use std::collections::VecDeque;
use std::time::Duration;

use super::Runtime;
use crate::error::Result;
use crate::remote::claims::{self, ClaimAnswer};
use crate::store::names::TaskId;
use crate::store::tasks::{Task, TaskStatus};

/// How long one claim may wait for home; a connected relay answers in milliseconds.
const ASK_FOR: Duration = Duration::from_secs(10);
/// Candidates asked for per wake before waiting for the mirror to catch up.
const TRIES: usize = 3;

/// What home said about one task.
enum Heard {
    Granted(Box<Task>),
    Refused(String),
    Nothing,
}

impl Runtime {
    pub(super) fn take_task_from_home(&mut self) -> Result<Option<Task>> {
        let mut waiting = VecDeque::new();
        let mut found = None;
        while let Some(id) = self.assigned.pop_front() {
            if found.is_some() {
                waiting.push_back(id);
                continue;
            }
            match self.ask_home(&id)? {
                Heard::Granted(task) => found = Some(*task),
                Heard::Nothing => waiting.push_back(id),
                Heard::Refused(_) if self.blocked_here(&id) => waiting.push_back(id),
                Heard::Refused(why) => {
                    self.pane
                        .say(format!("cannot take assigned task #{id}: {why}"));
                    self.tell_lead(format!("I cannot take task #{id}: {why}"))?;
                }
            }
        }
        self.assigned = waiting;
        if found.is_some() {
            return Ok(found);
        }
        let me = self.cfg.name.clone();
        self.index.refresh()?;
        let mine = self
            .index
            .tasks()
            .find(|t| {
                t.owner.as_deref() == Some(me.as_str())
                    && t.status != TaskStatus::Completed
                    && !t.parked()
            })
            .cloned();
        if mine.is_some() {
            return Ok(mine);
        }
        if !self.index.any_available()? {
            return Ok(None);
        }
        for task in self.tasks().available()?.into_iter().take(TRIES) {
            match self.ask_home(&task.id)? {
                Heard::Granted(task) => return Ok(Some(*task)),
                Heard::Refused(_) => continue,
                Heard::Nothing => return Ok(None),
            }
        }
        Ok(None)
    }

    /// Asks home for task `id`; nothing is asked while no relay runs.
    fn ask_home(&self, id: &TaskId) -> Result<Heard> {
        let (store, team) = (&self.cfg.store, &self.cfg.team);
        if !claims::relay_running(store, team) {
            return Ok(Heard::Nothing);
        }
        Ok(
            match claims::ask(store, team, &self.cfg.name, id, ASK_FOR)? {
                Some(ClaimAnswer::Granted { task }) => match serde_json::from_value::<Task>(task) {
                    Ok(task) => Heard::Granted(Box::new(task)),
                    // Granted, but the copy did not come with it: the mirror has it next wake.
                    Err(_) => Heard::Nothing,
                },
                Some(ClaimAnswer::Refused { reason }) => Heard::Refused(reason),
                None => Heard::Nothing,
            },
        )
    }

    /// Whether the mirror shows task `id` waiting for an unfinished one.
    fn blocked_here(&self, id: &TaskId) -> bool {
        let Ok(task) = self.tasks().get(id) else {
            return false;
        };
        task.blocked_by.iter().any(|b| {
            self.tasks()
                .get(b)
                .is_ok_and(|t| t.status != TaskStatus::Completed)
        })
    }
}
