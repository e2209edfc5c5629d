//! The limits a teammate works under: `--max-turns` and `--turn-timeout` (`args::Limits`).
//!
//! A turn that runs past its timeout is stopped as an interrupt stops it (`stop`: SIGTERM to
//! its process group, a grace, SIGKILL); a teammate that has run its most turns starts no
//! more. Either way the teammate goes idle and says why in an `idle_notification` with
//! `idleReason: "failed"` and the limit as its `failureReason`, and the task it was working on
//! (or still owns) ends as `--on-limit` says: parked as failed (`swarmFailed`, with the reason),
//! or back to pending, after which it takes nothing from the pool until the lead writes to it
//! (else it would take the same task straight back). Without limits nothing here runs.

use std::time::Duration;

use serde_json::Map;

use super::Runtime;
use crate::error::Result;
use crate::store::names::TaskId;
use crate::store::protocol::{timestamp_now, AfterInterrupt, IdleNotification, Protocol};
use crate::store::tasks::TaskOutcome;
use crate::teammate::args::OnLimit;
use crate::teammate::plan::PlanState;
use crate::teammate::turn::TurnKind;

/// Waits until `deadline`, or for ever without one (a `select!` branch that never fires).
pub(super) async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// "5 s", "2 min", "1.5 h".
fn span(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s => format!("{:.1} h", s as f64 / 3600.0),
    }
}

impl Runtime {
    /// When the running turn reaches its timeout, if it has one.
    pub(super) fn turn_deadline(&self) -> Option<tokio::time::Instant> {
        let timeout = self.cfg.limits.timeout()?;
        let current = self.current.as_ref()?;
        Some(tokio::time::Instant::from_std(current.started + timeout))
    }

    fn after_limit(&self) -> AfterInterrupt {
        match self.cfg.limits.on_limit.unwrap_or(OnLimit::Fail) {
            OnLimit::Fail => AfterInterrupt::Fail,
            OnLimit::Release => AfterInterrupt::Release,
        }
    }

    /// The running turn ran past `--turn-timeout`: stop it, end its task as configured, tell
    /// the lead.
    pub(super) async fn turn_timed_out(&mut self) -> Result<()> {
        let Some((timeout, current)) = self.cfg.limits.timeout().zip(self.current.as_ref()) else {
            return Ok(());
        };
        let why = format!("turn timed out after {} (turnTimeout)", span(timeout));
        let task = match &current.turn.kind {
            TurnKind::Task(task)
            | TurnKind::Feedback {
                task: Some(task), ..
            } => Some(task.id.clone()),
            TurnKind::Plan { .. } => {
                // Planned again only when a new message comes, not at once.
                self.plan.stall();
                None
            }
            TurnKind::Execute { .. } => {
                self.plan = PlanState::Done;
                None
            }
            _ => None,
        };
        self.pane.say(format!("{why}; stopping it"));
        self.stop_turn().await;
        self.turns += 1;
        let ids: Vec<TaskId> = task.into_iter().collect();
        self.went_idle_at_limit(&why, &ids)
    }

    /// Whether the teammate has run its `--max-turns`: it starts no turn then. The first time,
    /// the tasks it still owns end as configured and the lead is told.
    pub(super) fn out_of_turns(&mut self) -> Result<bool> {
        let Some(max) = self.cfg.limits.max_turns else {
            return Ok(false);
        };
        if self.turns < max.get() {
            return Ok(false);
        }
        if std::mem::replace(&mut self.at_turn_limit, true) {
            return Ok(true);
        }
        // A hook's feedback (a task kept in progress) is a turn it will not run.
        self.feedback = None;
        self.index.refresh()?;
        let me = self.cfg.name.as_str();
        let mine: Vec<TaskId> = self
            .index
            .tasks()
            .filter(|t| t.unfinished_by(me) && !t.parked())
            .map(|t| t.id.clone())
            .collect();
        let why = format!(
            "reached its limit of {max} turn{} (maxTurns); it takes no more turns until it is started again",
            if max.get() == 1 { "" } else { "s" }
        );
        self.went_idle_at_limit(&why, &mine)?;
        Ok(true)
    }

    /// Ends `tasks` as `--on-limit` says and sends the lead the `idle_notification` saying why.
    fn went_idle_at_limit(&mut self, why: &str, tasks: &[TaskId]) -> Result<()> {
        let then = self.after_limit();
        let mut said = vec![why.to_string()];
        let mut failed = None;
        for id in tasks {
            let (line, parked) = self.end_task(id, then, why)?;
            if parked {
                failed.get_or_insert_with(|| id.to_string());
            }
            said.push(line);
        }
        if then == AfterInterrupt::Release && !tasks.is_empty() {
            self.pool_paused = true;
        }
        let summary = said.join("; ");
        self.pane.say(format!("✘ {summary}; idle"));
        let idle = IdleNotification {
            from: self.cfg.name.to_string(),
            timestamp: timestamp_now(),
            idle_reason: Some("failed".into()),
            summary: Some(summary),
            completed_status: failed.as_ref().map(|_| "failed".to_string()),
            completed_task_id: failed,
            failure_reason: Some(why.to_string()),
            result: None,
            extra: Map::new(),
        };
        self.to_lead(&Protocol::IdleNotification(idle), None)
    }

    /// Ends task `id`, ours, as `then` says (back to pending, or parked as failed with
    /// `reason`); says how, and whether it was parked.
    pub(super) fn end_task(
        &self,
        id: &TaskId,
        then: AfterInterrupt,
        reason: &str,
    ) -> Result<(String, bool)> {
        let name = &self.cfg.name;
        Ok(match then {
            AfterInterrupt::Release => match self.tasks().release(id, name)? {
                true => (format!("task #{id} went back to pending"), false),
                false => (format!("task #{id} was no longer ours"), false),
            },
            AfterInterrupt::Fail => {
                let outcome = TaskOutcome::Failed {
                    reason: reason.to_string(),
                };
                match self.tasks().finish(id, name, &outcome)? {
                    Some(_) => (format!("task #{id} failed ({reason})"), true),
                    None => (format!("task #{id} was no longer ours"), false),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_as_people_say_them() {
        assert_eq!(span(Duration::from_secs(5)), "5 s");
        assert_eq!(span(Duration::from_secs(600)), "10 min");
        assert_eq!(span(Duration::from_secs(9000)), "2.5 h");
    }
}
