//! One task file, `tasks/<team>/<id>.json` (PROTOCOL.md section 8): its fields, its status,
//! and the shapes of a new task and of a change to one.

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
}

/// Metadata key of a task a teammate failed; see [`Task::parked`].
pub const SWARM_FAILED: &str = "swarmFailed";

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
