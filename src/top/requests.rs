//! The requests waiting for the lead, and deciding one from the dashboard.
//!
//! Permission requests are the pending records under `permissions/pending/` and those a Claude
//! Code teammate only sent as a message (`Permissions::pending` finds both). Plan
//! requests have no file of their own: a `plan_approval_request` in the lead's inbox is open
//! until a `plan_approval_response` with its id is in the requester's inbox (or its archive);
//! only a teammate's latest plan counts, as its runtime only waits for that one. Deciding goes
//! through the same code as the lead console and `swarm permission approve|deny`:
//! `Permissions::resolve` for a permission, `lead::answer_plan` for a plan.

use crate::error::Result;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TeamName, LEAD};
use crate::store::paths::Store;
use crate::store::permissions::{Decision, PermissionRecord, Permissions};
use crate::store::protocol::{Payload, PlanApprovalRequest, Protocol};

/// A request the lead has not decided.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Request {
    Permission(Box<PermissionRecord>),
    Plan(PlanApprovalRequest),
}

impl Request {
    pub(crate) fn id(&self) -> &str {
        match self {
            Request::Permission(r) => &r.id,
            Request::Plan(r) => &r.request_id,
        }
    }

    pub(crate) fn from(&self) -> &str {
        match self {
            Request::Permission(r) => &r.worker_name,
            Request::Plan(r) => &r.from,
        }
    }

    /// One line: what is asked.
    pub(crate) fn what(&self) -> String {
        match self {
            Request::Permission(r) => {
                let detail = if r.description.is_empty() {
                    r.input.to_string()
                } else {
                    r.description.clone()
                };
                format!("wants {}: {detail}", r.tool_name)
            }
            Request::Plan(r) => format!(
                "submitted a plan: {}",
                super::last_line::first_line(&r.plan_content)
            ),
        }
    }
}

/// The open requests, permissions first, each group oldest first.
pub(crate) fn pending(
    store: &Store,
    team: &TeamName,
    lead_inbox: &[InboxMessage],
) -> Result<Vec<Request>> {
    let mut open: Vec<Request> = Permissions::new(store, team)
        .pending()?
        .into_iter()
        .map(|r| Request::Permission(Box::new(r)))
        .collect();
    let mut latest: Vec<PlanApprovalRequest> = Vec::new();
    for m in lead_inbox {
        if let Payload::Protocol(p) = m.payload() {
            if let Protocol::PlanApprovalRequest(r) = *p {
                if r.from == m.from {
                    latest.retain(|l| l.from != r.from);
                    latest.push(r);
                }
            }
        }
    }
    for plan in latest {
        if !answered(store, team, &plan)? {
            open.push(Request::Plan(plan));
        }
    }
    Ok(open)
}

/// Whether the lead has answered `plan` (a response with its id in the requester's inbox or
/// archive).
fn answered(store: &Store, team: &TeamName, plan: &PlanApprovalRequest) -> Result<bool> {
    let Ok(to) = plan.from.parse::<AgentName>() else {
        return Ok(true);
    };
    let answers = |m: &InboxMessage| {
        m.from == LEAD
            && matches!(m.payload(), Payload::Protocol(p)
                if matches!(&*p, Protocol::PlanApprovalResponse(r) if r.request_id == plan.request_id))
    };
    if Mailbox::new(store, team)
        .read(&to, false)?
        .iter()
        .any(answers)
    {
        return Ok(true);
    }
    let archive =
        crate::store::fsio::read_file(&store.archive_path(team, &to))?.unwrap_or_default();
    Ok(String::from_utf8_lossy(&archive)
        .lines()
        .filter_map(|l| serde_json::from_str::<InboxMessage>(l).ok())
        .any(|m| answers(&m)))
}

/// Approves or denies `request` as the lead; returns what to tell the person.
pub(crate) fn decide(
    store: &Store,
    team: &TeamName,
    request: &Request,
    approve: bool,
    feedback: Option<String>,
) -> Result<String> {
    let verb = if approve { "approved" } else { "denied" };
    match request {
        Request::Permission(r) => {
            Permissions::new(store, team).resolve(
                &r.id,
                Decision {
                    approve,
                    feedback,
                    updated_input: None,
                    accept_suggestions: false,
                    resolved_by: LEAD.to_string(),
                },
            )?;
            Ok(format!("{verb} {}'s use of {}", r.worker_name, r.tool_name))
        }
        Request::Plan(r) => {
            crate::lead::answer_plan(store, team, r, approve, feedback)?;
            Ok(format!("{verb} {}'s plan", r.from))
        }
    }
}
