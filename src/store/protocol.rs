//! Structured protocol messages (PROTOCOL.md section 7).
//!
//! They travel as a JSON string in an inbox message's `text`. `Payload::parse` turns a `text`
//! into either one of the typed messages or plain text, so callers match on one enum and never
//! guess from substrings. Unknown fields are kept so a message from a newer Claude Code survives
//! a round trip. The frames that report rather than ask (`task_completed`,
//! `teammate_terminated`) live in `lifecycle`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::store::fsio::now_ms;
use crate::store::names::{AgentName, TeamName};

mod interrupt;
mod lifecycle;
pub(crate) use interrupt::{
    interrupt_request_id, interrupt_request_target, AfterInterrupt, InterruptRequest, INTERRUPTED,
    REQUEST_ID_FIELD,
};
pub(crate) use lifecycle::{lifecycle_frame, TaskCompleted, TeammateTerminated, PEER_MARK};

/// A `shutdown_request` id, `shutdown-<ms>@<target>`: the only place one is minted.
pub(crate) fn shutdown_request_id(target: &AgentName) -> String {
    addressed_id("shutdown", target)
}

/// The teammate a shutdown request id is addressed to (the part after the last `@`), if the id
/// has the shape [`shutdown_request_id`] mints.
pub(crate) fn shutdown_request_target(request_id: &str) -> Option<&str> {
    addressed_target("shutdown", request_id)
}

/// `<kind>-<ms>@<target>`: the id of a request addressed to one member, so the member can
/// tell one meant for another.
fn addressed_id(kind: &str, target: &AgentName) -> String {
    format!("{kind}-{}@{target}", now_ms())
}

/// The member an [`addressed_id`] of `kind` names.
fn addressed_target<'a>(kind: &str, request_id: &'a str) -> Option<&'a str> {
    request_id
        .strip_prefix(kind)?
        .strip_prefix('-')?
        .rsplit_once('@')
        .map(|(_, target)| target)
}

/// A `plan_approval_request` id, `plan_approval-<ms>@<name>@<team>`.
pub(crate) fn plan_request_id(from: &AgentName, team: &TeamName) -> String {
    format!("plan_approval-{}@{from}@{team}", now_ms())
}

/// Longest `result` an idle notification carries.
pub(crate) const RESULT_LIMIT: usize = 4000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Protocol {
    IdleNotification(IdleNotification),
    ShutdownRequest(ShutdownRequest),
    ShutdownApproved(ShutdownApproved),
    ShutdownRejected(ShutdownRejected),
    PlanApprovalRequest(PlanApprovalRequest),
    PlanApprovalResponse(PlanApprovalResponse),
    PermissionRequest(PermissionRequest),
    PermissionResponse(PermissionResponse),
    TaskAssignment(TaskAssignment),
    TaskCompleted(TaskCompleted),
    TeammateTerminated(TeammateTerminated),
    InterruptRequest(InterruptRequest),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdleNotification {
    pub from: String,
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownRequest {
    pub request_id: String,
    pub from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub timestamp: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// swarm-only `shutdown_request` field (section 7d): the seconds a busy teammate's running turn
/// may take to finish before its runtime stops it and approves; 0 stops it at once.
pub(crate) const GRACE_FIELD: &str = "swarmGrace";

/// The grace of a request that names none (the lead console's `/shutdown`, a lead that is not
/// swarm): what `swarm shutdown` gives with its default 30 s wait.
pub(crate) const DEFAULT_GRACE: std::time::Duration = std::time::Duration::from_secs(25);

impl ShutdownRequest {
    /// How long the running turn may take to finish ([`GRACE_FIELD`], else [`DEFAULT_GRACE`]).
    pub(crate) fn grace(&self) -> std::time::Duration {
        self.extra
            .get(GRACE_FIELD)
            .and_then(Value::as_f64)
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map_or(DEFAULT_GRACE, |s| {
                std::time::Duration::from_secs_f64(s.min(u32::MAX as f64))
            })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownApproved {
    pub request_id: String,
    pub from: String,
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_type: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownRejected {
    pub request_id: String,
    pub from: String,
    pub reason: String,
    pub timestamp: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanApprovalRequest {
    pub from: String,
    pub timestamp: String,
    pub plan_file_path: String,
    pub plan_content: String,
    pub request_id: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanApprovalResponse {
    pub request_id: String,
    pub approved: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// [`plan_digest`] of the request's `planContent`: binds the verdict to the plan shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_digest: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PlanApprovalResponse {
    /// The lead's verdict on `request`. `permission_mode` is the mode the teammate returns to
    /// after an approval: without it Claude Code falls back to `default` and drops, e.g., the
    /// launch's `acceptEdits`. The digest is what a teammate started with `--lead-verify-key`
    /// requires before it leaves plan mode.
    pub fn answer(
        request_id: &str,
        plan_content: &str,
        approved: bool,
        feedback: Option<String>,
        permission_mode: Option<String>,
    ) -> PlanApprovalResponse {
        PlanApprovalResponse {
            request_id: request_id.to_string(),
            approved,
            feedback,
            timestamp: timestamp_now(),
            permission_mode,
            plan_digest: Some(plan_digest(plan_content)),
            extra: Map::new(),
        }
    }
}

/// The mode a teammate leaves plan mode into: its roster `mode` (what it was launched with),
/// except `plan` itself, which would keep it planning; `default` when there is none.
pub(crate) fn mode_after_plan(roster_mode: Option<&str>) -> String {
    match roster_mode {
        Some(m) if !m.is_empty() && m != "plan" => m.to_string(),
        _ => "default".to_string(),
    }
}

/// `planDigest`: lowercase hex SHA-256 of the plan text's UTF-8 bytes, as Claude Code computes
/// it over the `planContent` it mailed.
pub(crate) fn plan_digest(plan_content: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(plan_content.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Field names are snake_case here, as Claude Code writes them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequest {
    pub request_id: String,
    pub agent_id: String,
    pub tool_name: String,
    #[serde(default)]
    pub tool_use_id: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub input: Value,
    #[serde(default)]
    pub permission_suggestions: Vec<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The lead's answer to a [`PermissionRequest`], in the schema Claude Code 2.1.328 parses:
/// `subtype` `success` with an optional `response`, or `error` with the (required) `error`, which
/// the teammate's model reads as what the user said. `tool_use_id` names the call decided; Claude
/// refuses a verdict whose `tool_use_id` names another call. Built only by [`Self::approve`] and
/// [`Self::deny`], used by the one decider (`requests::decide`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionResponse {
    pub request_id: String,
    /// `success` or `error`.
    pub subtype: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<PermissionGrant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What an approval lets run: the (possibly edited) input, and rule changes the requester
/// applies, e.g. its own `permission_suggestions` passed back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionGrant {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_updates: Option<Vec<Value>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PermissionResponse {
    pub fn approve(
        request_id: &str,
        tool_use_id: &str,
        updated_input: Value,
        permission_updates: Vec<Value>,
    ) -> PermissionResponse {
        PermissionResponse {
            request_id: request_id.to_string(),
            subtype: "success".into(),
            tool_use_id: non_empty(tool_use_id),
            response: Some(PermissionGrant {
                updated_input: Some(updated_input),
                permission_updates: Some(permission_updates),
                extra: Map::new(),
            }),
            error: None,
            extra: Map::new(),
        }
    }

    pub fn deny(request_id: &str, tool_use_id: &str, error: String) -> PermissionResponse {
        PermissionResponse {
            request_id: request_id.to_string(),
            subtype: "error".into(),
            tool_use_id: non_empty(tool_use_id),
            response: None,
            error: Some(error),
            extra: Map::new(),
        }
    }
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskAssignment {
    pub task_id: String,
    pub subject: String,
    #[serde(default)]
    pub description: String,
    pub assigned_by: String,
    pub timestamp: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Protocol {
    pub fn type_name(&self) -> &'static str {
        match self {
            Protocol::IdleNotification(_) => "idle_notification",
            Protocol::ShutdownRequest(_) => "shutdown_request",
            Protocol::ShutdownApproved(_) => "shutdown_approved",
            Protocol::ShutdownRejected(_) => "shutdown_rejected",
            Protocol::PlanApprovalRequest(_) => "plan_approval_request",
            Protocol::PlanApprovalResponse(_) => "plan_approval_response",
            Protocol::PermissionRequest(_) => "permission_request",
            Protocol::PermissionResponse(_) => "permission_response",
            Protocol::TaskAssignment(_) => "task_assignment",
            Protocol::TaskCompleted(_) => "task_completed",
            Protocol::TeammateTerminated(_) => "teammate_terminated",
            Protocol::InterruptRequest(_) => "interrupt_request",
        }
    }

    /// The JSON string that goes into an inbox message's `text`.
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).expect("protocol messages always serialize")
    }
}

/// What an inbox `text` holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    Protocol(Box<Protocol>),
    Text(String),
}

impl Payload {
    pub fn parse(text: &str) -> Payload {
        let trimmed = text.trim_start();
        if trimmed.starts_with('{') {
            if let Ok(p) = serde_json::from_str::<Protocol>(text) {
                return Payload::Protocol(Box::new(p));
            }
        }
        Payload::Text(text.to_string())
    }
}

/// ISO-8601 UTC with milliseconds, as Claude Code writes timestamps.
pub(crate) fn timestamp_now() -> String {
    format_timestamp(crate::store::fsio::now_ms())
}

pub(crate) fn format_timestamp(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!(
        "{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}.{:03}Z",
        ms % 1000
    )
}

/// Milliseconds since the epoch of a [`format_timestamp`]-shaped `YYYY-MM-DDTHH:MM:SS[.mmm]Z`.
pub(crate) fn parse_timestamp(s: &str) -> Option<u64> {
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, mo, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, ms) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = hms.splitn(3, ':').map(|p| p.parse::<u64>().ok());
    let (h, mi, sec) = (t.next()??, t.next()??, t.next()??);
    let ms: u64 = format!("{ms:0<3}").get(..3)?.parse().ok()?;
    if !(1..=12).contains(&mo) || !(1..=31).contains(&day) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    // Days-from-civil (Howard Hinnant's algorithm), the inverse of `format_timestamp`.
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = u64::try_from(era * 146_097 + doe - 719_468).ok()?;
    Some(((days * 86_400 + h * 3600 + mi * 60 + sec) * 1000) + ms)
}

/// Cuts `s` to at most `limit` bytes on a character boundary.
pub(crate) fn truncate(s: &str, limit: usize) -> String {
    if s.len() <= limit {
        return s.to_string();
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_shutdown_request_id_names_its_target() {
        let coder: AgentName = "coder".parse().unwrap();
        let id = shutdown_request_id(&coder);
        assert_eq!(shutdown_request_target(&id), Some("coder"));
        assert_eq!(shutdown_request_target("plan_approval-1@coder@t"), None);
        assert_eq!(shutdown_request_target("shutdown-1"), None);
    }

    #[test]
    fn timestamps_match_claude_code_format() {
        assert_eq!(
            format_timestamp(1_767_225_600_000),
            "2026-01-01T00:00:00.000Z"
        );
        assert_eq!(
            format_timestamp(951_782_400_123),
            "2000-02-29T00:00:00.123Z"
        );
    }

    #[test]
    fn texts_parse_as_protocol_or_plain_text() {
        let text = r#"{"type":"shutdown_request","requestId":"shutdown-1@coder","from":"team-lead","timestamp":"t","futureField":1}"#;
        let Payload::Protocol(p) = Payload::parse(text) else {
            panic!("not parsed")
        };
        let Protocol::ShutdownRequest(req) = &*p else {
            panic!("wrong type")
        };
        assert_eq!(req.request_id, "shutdown-1@coder");
        assert_eq!(req.extra["futureField"], 1);
        let back: Value = serde_json::from_str(&p.to_text()).unwrap();
        assert_eq!(back["futureField"], 1);
        assert_eq!(back["type"], "shutdown_request");

        assert_eq!(Payload::parse("hello"), Payload::Text("hello".into()));
        assert_eq!(
            Payload::parse("{not json"),
            Payload::Text("{not json".into())
        );
        assert_eq!(
            Payload::parse(r#"{"type":"unknown_kind"}"#),
            Payload::Text(r#"{"type":"unknown_kind"}"#.into())
        );
    }

    #[test]
    fn permission_messages_use_snake_case_fields() {
        let text = r#"{"type":"permission_request","request_id":"perm-1-abc","agent_id":"coder","tool_name":"Bash","tool_use_id":"t","description":"d","input":{"command":"ls"},"permission_suggestions":[]}"#;
        let Payload::Protocol(p) = Payload::parse(text) else {
            panic!()
        };
        assert!(matches!(*p, Protocol::PermissionRequest(ref r) if r.tool_name == "Bash"));
    }

    #[test]
    fn timestamps_parse_back() {
        for ms in [1_767_225_600_000, 951_782_400_123, 1_796_126_376_347] {
            assert_eq!(parse_timestamp(&format_timestamp(ms)), Some(ms));
        }
        assert_eq!(
            parse_timestamp("2026-12-01T11:59:36Z"),
            Some(1_796_126_376_000)
        );
        assert_eq!(parse_timestamp("yesterday"), None);
        assert_eq!(parse_timestamp("2026-13-01T00:00:00.000Z"), None);
    }

    #[test]
    fn plan_digest_is_hex_sha256_of_the_plan_text() {
        // `printf '# Plan' | sha256sum`
        assert_eq!(
            plan_digest("# Plan"),
            "1ee55b7ae632bd99dfea4f2d791ff06b1119975e96d4f822050923e7499f44cb"
        );
    }

    #[test]
    fn a_plan_verdict_carries_the_launch_mode_and_the_plan_digest() {
        let mode = mode_after_plan(Some("acceptEdits"));
        let answer = PlanApprovalResponse::answer(
            "plan_approval-1@coder@t",
            "# Plan",
            true,
            None,
            Some(mode),
        );
        let v: Value =
            serde_json::from_str(&Protocol::PlanApprovalResponse(answer).to_text()).unwrap();
        assert_eq!(v["permissionMode"], "acceptEdits");
        assert_eq!(v["planDigest"], plan_digest("# Plan"));
        assert_eq!(v["requestId"], "plan_approval-1@coder@t");
        assert_eq!(mode_after_plan(Some("plan")), "default");
        assert_eq!(mode_after_plan(None), "default");
    }

    #[test]
    fn permission_responses_have_the_schema_claude_parses() {
        let ok =
            PermissionResponse::approve("perm-1-a", "toolu_1", json!({"command": "ls"}), vec![]);
        let v: Value = serde_json::from_str(&Protocol::PermissionResponse(ok).to_text()).unwrap();
        assert_eq!(
            v,
            json!({"type": "permission_response", "request_id": "perm-1-a", "subtype": "success",
                   "tool_use_id": "toolu_1",
                   "response": {"updated_input": {"command": "ls"}, "permission_updates": []}})
        );
        let no = PermissionResponse::deny("perm-1-a", "", "not that".into());
        let v: Value = serde_json::from_str(&Protocol::PermissionResponse(no).to_text()).unwrap();
        assert_eq!(
            v,
            json!({"type": "permission_response", "request_id": "perm-1-a", "subtype": "error",
                   "error": "not that"})
        );
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("abc", 10), "abc");
    }
}
