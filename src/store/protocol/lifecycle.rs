//! The lifecycle frames (PROTOCOL.md section 7a): `task_completed`, `teammate_terminated` and
//! the task fields of `idle_notification`, which report what a teammate lived through rather
//! than ask or answer anything, and the sentences people read them as.
//!
//! They are Claude Code 2.1.328's shapes exactly, since its lead parses them strictly; and they
//! are what `swarm send` refuses as text ([`lifecycle_frame`]), because only the runtime that
//! lived through an event may report it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{timestamp_now, IdleNotification, Protocol};

/// A teammate marked a task completed: Claude Code 2.1.328's frame, exactly `type, from,
/// taskId, taskSubject, timestamp` (its parser is strict: a frame with any other field is shown
/// as plain text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskCompleted {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    pub task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_subject: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TaskCompleted {
    pub fn new(from: &str, task_id: &str, subject: &str) -> TaskCompleted {
        TaskCompleted {
            from: Some(from.to_string()),
            task_id: task_id.to_string(),
            task_subject: Some(subject.to_string()),
            timestamp: Some(timestamp_now()),
            extra: Map::new(),
        }
    }
}

/// A teammate is gone: Claude Code 2.1.328's frame, exactly `type, message` (its lead writes
/// one from `system` when an in-process teammate shuts down).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeammateTerminated {
    pub message: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The frames `swarm send` refuses as message text, since only the runtime that lived through
/// the event may report it. Claude Code's SendMessage refuses these and also `task_assignment`
/// and `shutdown_rejected` ("message text must not be a teammate lifecycle/task frame"); swarm
/// lets those two through, because a lead script assigns tasks and a teammate that is not
/// swarm's runtime declines a shutdown with `swarm send`, and their receivers check who sent
/// them (a lead signature, a request id).
const LIFECYCLE_FRAMES: &[&str] = &["idle_notification", "teammate_terminated", "task_completed"];

/// The lifecycle frame type `text` is, if it is a JSON object whose `type` is one of
/// [`LIFECYCLE_FRAMES`], whatever its other fields (as Claude Code checks it).
pub(crate) fn lifecycle_frame(text: &str) -> Option<&'static str> {
    let value: Value = serde_json::from_str(text.trim()).ok()?;
    let kind = value.as_object()?.get("type")?.as_str()?;
    LIFECYCLE_FRAMES.iter().copied().find(|f| *f == kind)
}

/// How a summary names a message its teammate sent another teammate: `[to b] lexer done`.
pub(crate) const PEER_MARK: &str = "[to ";

impl IdleNotification {
    /// `finished task #3 (resolved)`, `failed task #4: exit 1`, `is idle after a failed turn:
    /// exit 2`, `is idle - waiting for review`.
    pub fn describe(&self) -> String {
        let reason = || {
            self.failure_reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        };
        let mut s = match (&self.completed_task_id, self.completed_status.as_deref()) {
            (Some(id), Some("failed")) => format!("failed task #{id}{}", reason()),
            (Some(id), Some(status)) => format!("finished task #{id} ({status})"),
            (Some(id), None) => format!("finished task #{id}"),
            // A turn that was not a task's: say whether it worked, not just that it ended.
            _ => match self.idle_reason.as_deref() {
                Some("failed") => format!("is idle after a failed turn{}", reason()),
                Some("available") => "is idle after a successful turn".to_string(),
                Some(super::INTERRUPTED) => "is idle, interrupted by the lead".to_string(),
                _ => "is idle".to_string(),
            },
        };
        // A finished task's summary only repeats what the line already says, unless it tells
        // what the teammate said to others (`[to NAME] ...`, Claude Code's peer DM summary).
        if let Some(summary) = self.summary.as_deref().filter(|s| {
            !s.is_empty() && (self.completed_task_id.is_none() || s.contains(PEER_MARK))
        }) {
            s.push_str(&format!(" - {summary}"));
        }
        s
    }
}

impl Protocol {
    /// A sentence for the lifecycle frames, which people read in `swarm inbox`, `swarm top` and
    /// the lead console; `None` for requests and replies, whose ids matter more.
    pub fn describe(&self) -> Option<String> {
        match self {
            Protocol::IdleNotification(n) => Some(n.describe()),
            Protocol::TaskCompleted(c) => Some(match &c.task_subject {
                Some(subject) => format!("completed task #{} ({subject})", c.task_id),
                None => format!("completed task #{}", c.task_id),
            }),
            Protocol::TeammateTerminated(t) => Some(format!("terminated: {}", t.message)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::protocol::Payload;
    use serde_json::json;

    #[test]
    fn lifecycle_frames_have_claude_codes_shapes() {
        let done = Protocol::TaskCompleted(TaskCompleted {
            timestamp: Some("2026-01-01T00:00:00.000Z".into()),
            ..TaskCompleted::new("coder", "3", "Add tests")
        });
        let v: Value = serde_json::from_str(&done.to_text()).unwrap();
        assert_eq!(
            v,
            json!({"type": "task_completed", "from": "coder", "taskId": "3",
                   "taskSubject": "Add tests", "timestamp": "2026-01-01T00:00:00.000Z"})
        );
        let gone = r#"{"type":"teammate_terminated","message":"coder has shut down."}"#;
        let Payload::Protocol(p) = Payload::parse(gone) else {
            panic!("not parsed")
        };
        assert_eq!(p.describe().unwrap(), "terminated: coder has shut down.");
        assert_eq!(
            serde_json::from_str::<Value>(&p.to_text()).unwrap(),
            serde_json::from_str::<Value>(gone).unwrap()
        );
        assert_eq!(lifecycle_frame(&done.to_text()), Some("task_completed"));
        assert_eq!(
            lifecycle_frame(r#" {"type":"idle_notification"} "#),
            Some("idle_notification")
        );
        assert_eq!(lifecycle_frame(r#"{"type":"shutdown_request"}"#), None);
        assert_eq!(lifecycle_frame("task_completed"), None);
    }
}
