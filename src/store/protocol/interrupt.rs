//! `interrupt_request` (swarm-only, PROTOCOL.md section 7c): the lead stops one running turn
//! and keeps the teammate.
//!
//! Killing a member was the only stop there was, and reassigning a task left the turn on it
//! working to a result nobody took. The lead side sends this frame, signed like every lead
//! control message; the teammate's runtime stops the running turn (its process group: SIGTERM,
//! a grace, SIGKILL), ends the turn's task as asked (back to pending, or parked as failed with
//! the reason), and answers with an `idle_notification` whose `idleReason` is `interrupted`
//! and whose `requestId` names this request.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::store::names::AgentName;

/// The field of the answering `idle_notification` that names the request (swarm-only).
pub(crate) const REQUEST_ID_FIELD: &str = "requestId";
/// The `idleReason` of a turn the lead interrupted.
pub(crate) const INTERRUPTED: &str = "interrupted";

/// An `interrupt_request` id, `interrupt-<ms>@<target>`: the only place one is minted.
pub(crate) fn interrupt_request_id(target: &AgentName) -> String {
    super::addressed_id("interrupt", target)
}

/// The teammate an interrupt request id is addressed to, if the id has the shape
/// [`interrupt_request_id`] mints.
pub(crate) fn interrupt_request_target(request_id: &str) -> Option<&str> {
    super::addressed_target("interrupt", request_id)
}

/// What becomes of the interrupted turn's task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AfterInterrupt {
    /// Back to pending with no owner, for anyone to take.
    #[default]
    Release,
    /// Parked as failed (`swarmFailed`, with the reason), as a failed turn parks it.
    Fail,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterruptRequest {
    pub request_id: String,
    pub from: String,
    /// Interrupt only while the turn works on this task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default)]
    pub then: AfterInterrupt,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub timestamp: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
