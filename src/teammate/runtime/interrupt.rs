//! The lead's `interrupt_request` (PROTOCOL.md section 7c): stop the running turn and keep the
//! teammate.
//!
//! The turn is stopped as any ending runtime stops it (`stop`: SIGTERM to its process group, a
//! grace, SIGKILL), its task ends as the lead asked (back to pending for anyone, or parked as
//! failed with the lead's reason), and the lead hears it in an `idle_notification` with
//! `idleReason: "interrupted"` naming the request. Then the runtime is idle: it reads its inbox
//! as ever, but takes no task from the pool until the lead writes to it or assigns it one (it
//! would take the task just released straight back). A request for a task the turn is not working on, or
//! with no turn running, stops nothing and says so the same way.

use serde_json::{Map, Value};

use super::Runtime;
use crate::error::Result;
use crate::store::names::TaskId;
use crate::store::protocol::{
    timestamp_now, AfterInterrupt, IdleNotification, InterruptRequest, Protocol, INTERRUPTED,
    REQUEST_ID_FIELD,
};
use crate::teammate::pane::suffix;
use crate::teammate::turn::TurnKind;

impl Runtime {
    pub(super) async fn interrupt(&mut self, req: InterruptRequest) -> Result<()> {
        let reason = req.reason.clone();
        self.pane.say(format!(
            "interrupt requested by {}{}",
            req.from,
            suffix(reason.as_deref())
        ));
        let working_on = self.current.as_ref().map(|c| match &c.turn.kind {
            TurnKind::Task(task)
            | TurnKind::Feedback {
                task: Some(task), ..
            } => Some((**task).clone()),
            _ => None,
        });
        let wanted: Option<TaskId> = req.task_id.as_deref().and_then(|id| id.parse().ok());
        let summary = match (working_on, wanted) {
            (None, _) => "nothing to interrupt: no turn was running".to_string(),
            (Some(task), Some(wanted)) if task.as_ref().map(|t| &t.id) != Some(&wanted) => {
                let now = task.map_or("no task".into(), |t| format!("task #{}", t.id));
                format!("not interrupted: the running turn works on {now}, not task #{wanted}")
            }
            (Some(task), _) => {
                self.stop_turn().await;
                self.pool_paused = true;
                match task {
                    None => "turn interrupted".to_string(),
                    Some(task) => self.end_interrupted(&task.id, req.then, reason.as_deref())?,
                }
            }
        };
        self.pane.say(format!("{summary}; idle"));
        let mut extra = Map::new();
        extra.insert(REQUEST_ID_FIELD.into(), Value::from(req.request_id));
        let idle = IdleNotification {
            from: self.cfg.name.to_string(),
            timestamp: timestamp_now(),
            idle_reason: Some(INTERRUPTED.into()),
            summary: Some(summary),
            completed_task_id: None,
            completed_status: None,
            failure_reason: None,
            result: None,
            extra,
        };
        self.to_lead(&Protocol::IdleNotification(idle), None)
    }

    /// Ends the interrupted turn's task as the lead asked; says how.
    fn end_interrupted(
        &self,
        id: &TaskId,
        then: AfterInterrupt,
        reason: Option<&str>,
    ) -> Result<String> {
        let reason = format!(
            "interrupted by the lead{}",
            reason.map(|r| format!(": {r}")).unwrap_or_default()
        );
        let (line, _) = self.end_task(id, then, &reason)?;
        Ok(format!("turn interrupted; {line}"))
    }
}
