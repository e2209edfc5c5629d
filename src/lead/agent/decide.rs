//! `--approvals lead`: the lead agent decides teammates' permission and plan requests.
//!
//! Each request (a `store::requests::Request`) becomes a turn of its own whose answer must be
//! explicit: one line, `approve` or `deny: REASON`. Anything else decides nothing and the
//! request stays with the person at the console, who can answer it at any time (whoever decides
//! first wins: `requests::decide` decides a request once, under its lock). Every decision the
//! lead runtime makes or sees made automatically is recorded in
//! `teams/<team>/lead/decisions.jsonl` with who made it (`lead-agent` or `auto`); the resolved
//! record says it too (`resolvedBy`).

use serde_json::json;

use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::lead_key::{LeadKey, DECISION_RECORD};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::timestamp_now;
use crate::store::requests::{self, Decider, Request, Verdict};
use crate::teammate::turn::{attr, body};

/// Who a decision is recorded as made by.
pub(super) const BY_AGENT: &str = "lead-agent";
pub(super) const BY_AUTO: &str = "auto";

/// The decision turn's prompt for `request`.
pub(super) fn prompt(request: &Request) -> String {
    let block = match request {
        Request::Permission(r) => format!(
            "<permission-request request_id=\"{}\" teammate_id=\"{}\" tool=\"{}\">\n\
             <description>{}</description>\n<input>{}</input>\n</permission-request>",
            attr(&r.id),
            attr(&r.worker_name),
            attr(&r.tool_name),
            body(&r.description),
            body(&r.input.to_string())
        ),
        Request::Plan(r) => format!(
            "<plan-approval-request request_id=\"{}\" teammate_id=\"{}\">\n{}\n</plan-approval-request>",
            attr(&r.id),
            attr(&r.worker_name),
            body(&r.plan_content)
        ),
    };
    format!(
        "{block}\n\nDecide this {} request. Answer with exactly one line: `approve`, or \
         `deny: REASON`. Nothing else in this answer is acted on.",
        request.kind().as_str()
    )
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

/// Carries out a decision through `requests::decide`; returns the line for the pane.
pub(super) fn apply(
    store: &Store,
    team: &TeamName,
    request: &Request,
    approve: bool,
    feedback: Option<String>,
) -> Result<String> {
    let verdict = Verdict::new(approve, feedback.clone());
    match requests::decide(store, team, request, verdict, &Decider::LeadAgent) {
        Ok(decided) => {
            record(store, team, request, approve, feedback.as_deref(), BY_AGENT)?;
            Ok(format!("the lead agent {}", decided.line()))
        }
        // The person (or another shell) decided first; theirs stands.
        Err(Error::AlreadyDecided { id, verdict, by }) => {
            Ok(format!("{id} was already {verdict} by {by}"))
        }
        Err(Error::NoSuchRequest(id)) => Ok(format!("{id} is no longer waiting")),
        // Rewritten by its requester since the agent was shown it: refused, and the lead goes on.
        Err(e @ Error::RequestChanged { .. }) => Ok(format!("! {e}")),
        Err(e) => Err(e),
    }
}

/// Appends a decision to `lead/decisions.jsonl`. Something that is not a regular file there (a
/// directory a teammate made, a link) is moved aside, noted for `swarm status`, and a fresh
/// file begun: one planted path must not end the lead agent.
pub(super) fn record(
    store: &Store,
    team: &TeamName,
    request: &Request,
    approve: bool,
    feedback: Option<&str>,
    by: &str,
) -> Result<()> {
    let path = store.decisions_path(team);
    let mut text = match fsio::read_file(&path) {
        Ok(text) => text.unwrap_or_default(),
        Err(e @ (Error::NotARegularFile { .. } | Error::HardLinked { .. })) => {
            let why = e.to_string();
            let moved = fsio::quarantine(&path, &why)?;
            let note = format!(
                "{why}; moved it to {} and began a fresh one",
                moved.display()
            );
            let _ = crate::store::notes::record(store, team, &AgentName::lead(), &note);
            Vec::new()
        }
        Err(e) => return Err(e),
    };
    let mut line = json!({"requestId": request.id(), "kind": request.kind().as_str(),
                          "approved": approve, "feedback": feedback, "by": by,
                          "timestamp": timestamp_now()});
    // Each line is signed: the timeline shows only decisions the lead side recorded.
    if let Some(key) = LeadKey::for_caller(store, team)? {
        key.sign_record(team.as_str(), DECISION_RECORD, &mut line);
    }
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
