//! Telling the lead how a turn ended.
//!
//! After every turn the lead gets an `idle_notification` (PROTOCOL.md section 7) with the
//! turn's result, and a task turn also settles the task: completed, or parked as failed until
//! the lead clears it, unless the task stopped being ours meanwhile. A completed task is also
//! reported with Claude Code's `task_completed`, after the idle notification (which carries the
//! result), so a Claude Code lead sees what its own teammates' frames would show it. The
//! summary ends with what the turn told other teammates (`peers`). A planning turn's output is
//! the plan itself: it is written to the team's plans directory and sent for approval.

use std::time::Instant;

use serde_json::Map;

use super::Runtime;
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::mailbox::InboxMessage;
use crate::store::names::AgentName;
use crate::store::protocol::{
    timestamp_now, truncate, IdleNotification, PlanApprovalRequest, Protocol, TaskCompleted,
    RESULT_LIMIT,
};
use crate::store::tasks::{Task, TaskOutcome, TaskStatus};
use crate::teammate::hooks::{blocked_line, HookContext, HookEvent, Verdict};
use crate::teammate::peers;
use crate::teammate::plan::PlanState;
use crate::teammate::turn::{Turn, TurnKind};
use crate::teammate::work::Outcome;

impl Runtime {
    /// Records how a turn ended (task status, plan request) and tells the lead.
    pub(super) fn complete(
        &mut self,
        turn: Turn,
        started: Instant,
        outcome: Outcome,
    ) -> Result<()> {
        self.turns += 1;
        // A `claude -p --output-format json` turn ends with its token usage: `swarm usage`.
        let (store, team, name) = (&self.cfg.store, &self.cfg.team, &self.cfg.name);
        if let Err(e) = crate::store::usage::record_turn(store, team, name, &outcome.output) {
            self.pane
                .say(format!("could not record the turn's token usage: {e}"));
        }
        let secs = started.elapsed().as_secs_f64();
        let describe = turn.describe();
        let mut idle = IdleNotification {
            from: self.cfg.name.to_string(),
            timestamp: String::new(),
            idle_reason: Some(
                if outcome.success {
                    "available"
                } else {
                    "failed"
                }
                .into(),
            ),
            summary: None,
            completed_task_id: None,
            completed_status: None,
            failure_reason: outcome.failure.clone(),
            result: Some(truncate(&outcome.output, RESULT_LIMIT)).filter(|r| !r.is_empty()),
            extra: Map::new(),
        };
        let mut task_completed = None;
        let task = match &turn.kind {
            TurnKind::Task(task)
            | TurnKind::Feedback {
                task: Some(task), ..
            } => Some(task.clone()),
            _ => None,
        };
        match turn.kind {
            _ if task.is_some() => {
                let task = task.expect("matched");
                if outcome.success && self.completion_blocked(&task)? {
                    // Still in progress, and not idle: the hook's feedback is the next turn.
                    return Ok(());
                }
                let result = match &outcome.failure {
                    None => TaskOutcome::Completed,
                    Some(reason) => TaskOutcome::Failed {
                        reason: reason.clone(),
                    },
                };
                let written = self.tasks().finish(&task.id, &self.cfg.name, &result)?;
                let completed = written
                    .as_ref()
                    .is_some_and(|t| t.status == TaskStatus::Completed);
                idle.completed_task_id = Some(task.id.to_string());
                idle.completed_status = Some(if completed { "resolved" } else { "failed" }.into());
                if completed {
                    task_completed = Some(TaskCompleted::new(
                        self.cfg.name.as_str(),
                        &task.id.to_string(),
                        &task.subject,
                    ));
                }
                let what = format!("task #{} ({})", task.id, task.subject);
                let why = outcome.failure.as_deref().unwrap_or_default();
                let line = match (&written, completed) {
                    (None, _) => format!(
                        "■ {what} ended after {secs:.1} s, but it is no longer ours (released, reassigned or deleted); left as it is"
                    ),
                    (Some(_), true) if outcome.success => {
                        format!("✔ {what} completed in {secs:.1} s")
                    }
                    (Some(_), true) => format!(
                        "✔ {what} was marked completed by the agent, though the turn failed: {why}"
                    ),
                    (Some(_), false) => format!(
                        "✘ {what} FAILED after {secs:.1} s: {why}; parked (swarmFailed) until the lead clears it"
                    ),
                };
                self.pane.say(&line);
                idle.summary = Some(match &outcome.failure {
                    None => format!("completed task #{}", task.id),
                    Some(why) => format!("task #{} failed: {why}", task.id),
                });
            }
            TurnKind::Plan { .. } => {
                if outcome.success {
                    let request_id = self.send_plan(&outcome.output)?;
                    idle.summary = Some(format!("sent a plan for approval ({request_id})"));
                    self.plan = PlanState::Pending {
                        request_id,
                        plan: outcome.output.clone(),
                    };
                } else {
                    self.pane.say(format!(
                        "✘ planning failed after {secs:.1} s: {}; waiting for a new message",
                        outcome.failure.as_deref().unwrap_or("unknown")
                    ));
                    self.plan.stall();
                    idle.summary = Some("planning failed".into());
                }
            }
            kind => {
                if matches!(kind, TurnKind::Execute { .. }) {
                    self.plan = PlanState::Done;
                }
                let line = match &outcome.failure {
                    None => format!("■ turn done in {secs:.1} s"),
                    Some(why) => format!("✘ turn failed after {secs:.1} s: {why}"),
                };
                self.pane.say(line);
                idle.summary = Some(describe);
            }
        }
        // What it told other teammates meanwhile, as Claude Code's `[to NAME] ...` (`peers`).
        if let Some(peers) = self.peer_summary(started) {
            idle.summary = Some(match idle.summary.take() {
                Some(s) => format!("{s}; {peers}"),
                None => peers,
            });
        }
        if self.idle_blocked(&mut idle) {
            // The idle notification waits for the hook; the completion does not.
            return self.report_completed(task_completed);
        }
        if idle.completed_task_id.is_none() {
            if let Some((id, status)) = self.held_completion.take() {
                idle.completed_task_id = Some(id);
                idle.completed_status = Some(status);
            }
        }
        idle.timestamp = timestamp_now();
        self.to_lead(&Protocol::IdleNotification(idle), None)?;
        self.report_completed(task_completed)
    }

    /// The summary of the messages the turn that began at `started` sent other teammates, as
    /// `swarm send` noted them (`teammate::peers`).
    fn peer_summary(&self, started: Instant) -> Option<String> {
        let since = std::time::SystemTime::now() - started.elapsed();
        let (store, team, name) = (&self.cfg.store, &self.cfg.team, &self.cfg.name);
        peers::summary(&peers::take_sent(store, team, name, since))
    }

    fn report_completed(&self, done: Option<TaskCompleted>) -> Result<()> {
        match done {
            Some(done) => self.to_lead(&Protocol::TaskCompleted(done), None),
            None => Ok(()),
        }
    }

    fn hook_context(&self) -> HookContext {
        HookContext {
            project_dir: self.cfg.cwd.clone(),
            team: self.cfg.team.to_string(),
            teammate: Some(self.cfg.name.to_string()),
            session_id: self.session.as_ref().map(|s| s.id.clone()),
        }
    }

    /// Runs the `TaskCompleted` hooks before the runtime marks `task` completed; `true` when
    /// one blocked, and its feedback is then the next turn. A task the agent already marked
    /// completed (through `swarm task update`, whose own hook ran) or that is no longer ours is
    /// left to `finish`.
    fn completion_blocked(&mut self, task: &Task) -> Result<bool> {
        let current = match self.tasks().get(&task.id) {
            Ok(t) => t,
            Err(Error::NoSuchTask { .. }) => return Ok(false),
            Err(e) => return Err(e),
        };
        if current.status != TaskStatus::InProgress
            || current.owner.as_deref() != Some(self.cfg.name.as_str())
        {
            return Ok(false);
        }
        let pane = self.pane.clone();
        let verdict =
            self.hook_context()
                .run(HookEvent::TaskCompleted, Some(&current), &|line: &str| {
                    pane.say(line)
                });
        let Verdict::Blocked { command, reason } = verdict else {
            return Ok(false);
        };
        let what = format!("completing task #{}", current.id);
        self.pane.say(blocked_line(
            HookEvent::TaskCompleted,
            &what,
            &command,
            &reason,
        ));
        self.feedback = Some(TurnKind::Feedback {
            event: HookEvent::TaskCompleted,
            feedback: reason,
            task: Some(Box::new(current)),
        });
        Ok(true)
    }

    /// Runs the `TeammateIdle` hooks before the teammate goes idle; `true` when one blocked:
    /// no idle notification then, and the hook's feedback is the next turn. A task completion
    /// `idle` carried is held for the next notification.
    fn idle_blocked(&mut self, idle: &mut IdleNotification) -> bool {
        let pane = self.pane.clone();
        let verdict = self
            .hook_context()
            .run(HookEvent::TeammateIdle, None, &|line: &str| pane.say(line));
        let Verdict::Blocked { command, reason } = verdict else {
            return false;
        };
        self.pane.say(blocked_line(
            HookEvent::TeammateIdle,
            "going idle",
            &command,
            &reason,
        ));
        if let (Some(id), Some(status)) =
            (idle.completed_task_id.take(), idle.completed_status.take())
        {
            self.held_completion = Some((id, status));
        }
        self.feedback = Some(TurnKind::Feedback {
            event: HookEvent::TeammateIdle,
            feedback: reason,
            task: None,
        });
        true
    }

    /// Writes the plan file and sends `plan_approval_request`; returns its request id.
    fn send_plan(&mut self, plan: &str) -> Result<String> {
        let (store, team, name) = (&self.cfg.store, &self.cfg.team, &self.cfg.name);
        fsio::ensure_dir(&store.plans_dir(team))?;
        let path = store.plan_path(team, name);
        fsio::write_atomic(&path, plan.as_bytes())?;
        let request_id = crate::store::protocol::plan_request_id(name, team);
        let request = Protocol::PlanApprovalRequest(PlanApprovalRequest {
            from: name.to_string(),
            timestamp: timestamp_now(),
            plan_file_path: path.display().to_string(),
            plan_content: plan.to_string(),
            request_id: request_id.clone(),
            extra: Map::new(),
        });
        self.to_lead(&request, Some("plan for approval".into()))?;
        self.pane.say(format!(
            "plan written to {} and sent to the lead for approval",
            path.display()
        ));
        Ok(request_id)
    }

    pub(super) fn to_lead(&self, message: &Protocol, summary: Option<String>) -> Result<()> {
        let envelope = InboxMessage::protocol(&self.cfg.name, message)
            .with_color(Some(self.cfg.color.clone()))
            .with_summary(summary);
        self.mailbox().send(&AgentName::lead(), envelope)
    }

    pub(super) fn tell_lead(&self, text: String) -> Result<()> {
        let envelope =
            InboxMessage::new(&self.cfg.name, text).with_color(Some(self.cfg.color.clone()));
        self.mailbox().send(&AgentName::lead(), envelope)
    }
}
