//! Plan requests: a teammate in plan mode submits its plan, the lead approves or rejects it.
//!
//! A waiting plan has no file of its own: it is a `plan_approval_request` in the lead's inbox
//! that no `plan_approval_response` with its id answers (in the requester's inbox or archive),
//! and only a teammate's latest plan counts, as its runtime waits for that one alone. A decided
//! plan gets a record of its own in `permissions/resolved/<id>.json` beside the permission
//! decisions (swarm-only: Claude Code keeps none), which says who decided, so every view can
//! say it and `swarm permission wait` can wait on it like on a permission.
//!
//! The answer gives the teammate back its roster `mode` and carries the plan's digest
//! (`PlanApprovalResponse::answer`): Claude Code otherwise drops the launch mode, and a teammate
//! started with `--lead-verify-key` refuses an approval without the digest.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::kind::Kind;
use super::signed;
use super::verdict::Resolution;
use crate::error::Result;
use crate::store::fsio;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TeamName, LEAD};
use crate::store::paths::Store;
use crate::store::protocol::{
    parse_timestamp, Payload, PlanApprovalRequest, PlanApprovalResponse, Protocol,
};

/// A plan request, waiting (`status` `pending`, built from its message) or decided (its record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PlanRecord {
    pub(crate) id: String,
    pub(crate) worker_name: String,
    pub(crate) team_name: String,
    #[serde(default)]
    pub(crate) plan_file_path: String,
    #[serde(default)]
    pub(crate) plan_content: String,
    #[serde(flatten)]
    pub(crate) resolution: Resolution,
    /// When it was sent (ms), from its message's timestamp; 0 if that does not parse.
    #[serde(default)]
    pub(crate) created_at: u64,
    /// The mode the teammate went back to with the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) permission_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) plan_digest: Option<String>,
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

impl PlanRecord {
    /// The waiting plan `m` carries, if it is one its sender (a valid name) made for itself.
    pub(crate) fn of_message(m: &InboxMessage, team: &TeamName) -> Option<PlanRecord> {
        let Payload::Protocol(p) = m.payload() else {
            return None;
        };
        let Protocol::PlanApprovalRequest(r) = *p else {
            return None;
        };
        let own = r.from == m.from && r.from.parse::<AgentName>().is_ok();
        (own && Kind::of(&r.request_id).ok() == Some(Kind::Plan))
            .then(|| PlanRecord::pending(r, team))
    }

    /// The plan's first non-empty line, for a one-line view.
    pub(crate) fn first_line(&self) -> &str {
        self.plan_content
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or_default()
    }

    fn pending(r: PlanApprovalRequest, team: &TeamName) -> PlanRecord {
        PlanRecord {
            created_at: parse_timestamp(&r.timestamp).unwrap_or(0),
            id: r.request_id,
            worker_name: r.from,
            team_name: team.to_string(),
            plan_file_path: r.plan_file_path,
            plan_content: r.plan_content,
            resolution: Resolution::pending(),
            permission_mode: None,
            plan_digest: None,
            extra: Map::new(),
        }
    }
}

pub(crate) struct Plans<'a> {
    store: &'a Store,
    team: &'a TeamName,
}

impl<'a> Plans<'a> {
    pub(crate) fn new(store: &'a Store, team: &'a TeamName) -> Plans<'a> {
        Plans { store, team }
    }

    /// Where the decision on plan `id` is recorded (and what deciding it locks).
    pub(crate) fn record_path(&self, id: &str) -> PathBuf {
        self.store
            .resolved_dir(self.team)
            .join(format!("{id}.json"))
    }

    /// The decision recorded for plan `id`, if the lead signed one (`signed`).
    pub(crate) fn record(&self, id: &str) -> Result<Option<PlanRecord>> {
        match Kind::of(id)? {
            Kind::Plan => signed::read(self.store, self.team, signed::PLAN, &self.record_path(id)),
            Kind::Permission => Ok(None),
        }
    }

    /// Writes the lead's decision on a plan, signed.
    pub(crate) fn write_record(&self, record: &PlanRecord) -> Result<()> {
        fsio::ensure_dir(&self.store.resolved_dir(self.team))?;
        let path = self.record_path(&record.id);
        signed::write(self.store, self.team, signed::PLAN, &path, record)
    }

    /// The decided plans the lead signed, oldest first.
    pub(crate) fn resolved(&self) -> Result<Vec<PlanRecord>> {
        signed::read_all(
            self.store,
            self.team,
            signed::PLAN,
            &self.store.resolved_dir(self.team),
            |id| Kind::of(id).ok() == Some(Kind::Plan),
            |r: &PlanRecord| (r.created_at, r.id.clone()),
        )
    }

    /// Each teammate's latest plan in `lead_inbox`, oldest first.
    pub(crate) fn latest(&self, lead_inbox: &[InboxMessage]) -> Vec<PlanRecord> {
        let mut latest: Vec<PlanRecord> = Vec::new();
        for plan in lead_inbox
            .iter()
            .filter_map(|m| PlanRecord::of_message(m, self.team))
        {
            latest.retain(|l| l.worker_name != plan.worker_name);
            latest.push(plan);
        }
        latest
    }

    /// The plans waiting for the lead: each teammate's latest, unless decided.
    pub(crate) fn waiting(&self, lead_inbox: &[InboxMessage]) -> Result<Vec<PlanRecord>> {
        let mut open = Vec::new();
        for plan in self.latest(lead_inbox) {
            if self.record(&plan.id)?.is_none() && self.answer_sent(&plan)?.is_none() {
                open.push(plan);
            }
        }
        Ok(open)
    }

    /// The lead's answer to `plan` in the requester's inbox or archive, if one was sent: the
    /// only trace of a plan answered by a lead that kept no record.
    pub(crate) fn answer_sent(&self, plan: &PlanRecord) -> Result<Option<PlanApprovalResponse>> {
        let Ok(to) = plan.worker_name.parse::<AgentName>() else {
            return Ok(None);
        };
        let answer = |m: &InboxMessage| match m.payload() {
            Payload::Protocol(p) if m.from == LEAD => match *p {
                Protocol::PlanApprovalResponse(r) if r.request_id == plan.id => Some(r),
                _ => None,
            },
            _ => None,
        };
        let inbox = Mailbox::new(self.store, self.team).read(&to, false)?;
        if let Some(r) = inbox.iter().find_map(answer) {
            return Ok(Some(r));
        }
        let archive =
            fsio::read_file(&self.store.archive_path(self.team, &to))?.unwrap_or_default();
        Ok(String::from_utf8_lossy(&archive)
            .lines()
            .filter_map(|l| serde_json::from_str::<InboxMessage>(l).ok())
            .find_map(|m| answer(&m)))
    }
}
