//! `--approvals lead`: the lead agent decides teammates' permission and plan requests.
//!
//! Each request becomes a turn of its own whose answer must be explicit: one line, `approve` or
//! `deny: REASON`. Anything else decides nothing and the request stays with the person at the
//! console, who can answer it at any time (whoever decides first wins: a permission request is
//! resolved once, under its lock). Every decision the lead runtime makes or sees made
//! automatically is recorded in `teams/<team>/lead/decisions.jsonl` with who made it
//! (`lead-agent` or `auto`); a permission decision is also in its resolved record
//! (`resolvedBy`).

use serde_json::json;

use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::mailbox::InboxMessage;
use crate::store::names::{TeamName, LEAD};
use crate::store::paths::Store;
use crate::store::permissions::{Decision, Permissions};
use crate::store::protocol::{
    timestamp_now, Payload, PermissionRequest, PlanApprovalRequest, Protocol,
};
use crate::teammate::turn::{attr, body};

/// Who a decision is recorded as made by.
pub(super) const BY_AGENT: &str = "lead-agent";
pub(super) const BY_AUTO: &str = "auto";

/// A request waiting for a decision.
#[derive(Debug, Clone)]
pub(super) enum Request {
    Permission(PermissionRequest),
    Plan(PlanApprovalRequest),
}

/// The request `m` carries, if it is one its sender made for itself.
pub(super) fn request_of(m: &InboxMessage) -> Option<Request> {
    let Payload::Protocol(p) = m.payload() else {
        return None;
    };
    match *p {
        Protocol::PermissionRequest(r) if r.agent_id == m.from => Some(Request::Permission(r)),
        Protocol::PlanApprovalRequest(r) if r.from == m.from => Some(Request::Plan(r)),
        _ => None,
    }
}

impl Request {
    fn id(&self) -> &str {
        match self {
            Request::Permission(r) => &r.request_id,
            Request::Plan(r) => &r.request_id,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Request::Permission(_) => "permission",
            Request::Plan(_) => "plan",
        }
    }

    /// The decision turn's prompt.
    pub(super) fn prompt(&self) -> String {
        let block = match self {
            Request::Permission(r) => format!(
                "<permission-request request_id=\"{}\" teammate_id=\"{}\" tool=\"{}\">\n\
                 <description>{}</description>\n<input>{}</input>\n</permission-request>",
                attr(&r.request_id),
                attr(&r.agent_id),
                attr(&r.tool_name),
                body(&r.description),
                body(&r.input.to_string())
            ),
            Request::Plan(r) => format!(
                "<plan-approval-request request_id=\"{}\" teammate_id=\"{}\">\n{}\n</plan-approval-request>",
                attr(&r.request_id),
                attr(&r.from),
                body(&r.plan_content)
            ),
        };
        format!(
            "{block}\n\nDecide this {} request. Answer with exactly one line: `approve`, or \
             `deny: REASON`. Nothing else in this answer is acted on.",
            self.kind()
        )
    }
}

/// The explicit answer in a decision turn's output: its last non-empty line, `approve` or
/// `deny[: reason]`.
pub(super) fn parse_answer(output: &str) -> Option<(bool, Option<String>)> {
    let line = output.lines().rev().find(|l| !l.trim().is_empty())?.trim();
    let line = line.trim_matches('`');
    if line.eq_ignore_ascii_case("approve") {
        return Some((true, None));
    }
    let lower = line.to_ascii_lowercase();
    let rest = lower.strip_prefix("deny")?;
    if !(rest.is_empty() || rest.starts_with(':') || rest.starts_with(' ')) {
        return None;
    }
    let reason = line[4..].trim_start_matches(':').trim();
    Some((false, (!reason.is_empty()).then(|| reason.to_string())))
}

/// Carries out a decision; returns the line for the pane.
pub(super) fn apply(
    store: &Store,
    team: &TeamName,
    request: &Request,
    approve: bool,
    feedback: Option<String>,
) -> Result<String> {
    let verb = if approve { "approved" } else { "denied" };
    match request {
        Request::Permission(r) => {
            let decision = Decision {
                approve,
                feedback: feedback.clone(),
                updated_input: None,
                accept_suggestions: false,
                resolved_by: format!("{LEAD} ({BY_AGENT})"),
            };
            match Permissions::new(store, team).resolve(&r.request_id, decision) {
                Ok(_) => {}
                Err(Error::Usage(_) | Error::NoSuchPermission(_)) => {
                    return Ok(format!("{} was already decided", r.request_id))
                }
                Err(e) => return Err(e),
            }
        }
        Request::Plan(r) => {
            crate::lead::answer_plan(store, team, r, approve, feedback.clone())?;
        }
    }
    record(store, team, request, approve, feedback.as_deref(), BY_AGENT)?;
    Ok(format!("the lead agent {verb} {}", request.id()))
}

/// Appends a decision to `lead/decisions.jsonl`.
pub(super) fn record(
    store: &Store,
    team: &TeamName,
    request: &Request,
    approve: bool,
    feedback: Option<&str>,
    by: &str,
) -> Result<()> {
    let path = super::goal_path(store, team).with_file_name("decisions.jsonl");
    let mut text = fsio::read_file(&path)?.unwrap_or_default();
    let line = json!({"requestId": request.id(), "kind": request.kind(), "approved": approve,
                      "feedback": feedback, "by": by, "timestamp": timestamp_now()});
    text.extend_from_slice(line.to_string().as_bytes());
    text.push(b'\n');
    fsio::write_atomic(&path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_explicit_last_line_decides() {
        assert_eq!(parse_answer("thinking...\napprove\n"), Some((true, None)));
        assert_eq!(
            parse_answer("deny: not on main"),
            Some((false, Some("not on main".into())))
        );
        assert_eq!(parse_answer("`deny`"), Some((false, None)));
        for vague in ["", "I approve of this", "approved!", "denying", "ok"] {
            assert_eq!(parse_answer(vague), None, "{vague:?}");
        }
    }
}
