//! Permission requests on disk: a teammate asks, the lead decides (PROTOCOL.md section 9).
//!
//! The request is a file in `permissions/pending/` plus a `permission_request` message to the
//! lead; the decision is a file in `permissions/resolved/` plus a `permission_response` message
//! to the requester (written by `decide`). The files make open questions visible with `ls` and
//! survive a lead that restarts.
//!
//! A Claude Code teammate files nothing: its request is only the `permission_request` message in
//! the lead's inbox. Listing shows such requests too, and deciding one files it first
//! ([`Permissions::file_from_inbox`], [`Permissions::adopt`]), so every command works on them
//! without a lead console running.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::kind::Kind;
use super::signed;
use super::verdict::Resolution;
use crate::error::{Error, Result};
use crate::store::fsio::{self, now_ms};
use crate::store::lead_key::digest;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{parse_timestamp, Payload, PermissionRequest, Protocol};
use crate::store::roster::Roster;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PermissionRecord {
    pub(crate) id: String,
    pub(crate) worker_id: String,
    pub(crate) worker_name: String,
    #[serde(default)]
    pub(crate) worker_color: String,
    pub(crate) team_name: String,
    pub(crate) tool_name: String,
    #[serde(default)]
    pub(crate) tool_use_id: String,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) input: Value,
    #[serde(default)]
    pub(crate) permission_suggestions: Vec<Value>,
    #[serde(flatten)]
    pub(crate) resolution: Resolution,
    pub(crate) created_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) updated_input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) permission_updates: Option<Value>,
    /// Decided records: `lead_key::digest` of `input`, the input the lead was shown (and the
    /// one the requester must be asking to run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) input_digest: Option<String>,
    /// Decided records: the lead's signature (`signed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lead_sig: Option<String>,
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

impl PermissionRecord {
    /// A new pending record for `ask` from `worker`.
    fn pending(
        id: String,
        team: &TeamName,
        worker: &AgentName,
        color: String,
        ask: Ask,
        suggestions: Vec<Value>,
    ) -> PermissionRecord {
        PermissionRecord {
            id,
            worker_id: worker.agent_id(team),
            worker_name: worker.to_string(),
            worker_color: color,
            team_name: team.to_string(),
            tool_name: ask.tool_name,
            tool_use_id: ask.tool_use_id,
            description: ask.description,
            input: ask.input,
            permission_suggestions: suggestions,
            resolution: Resolution::pending(),
            created_at: now_ms(),
            updated_input: None,
            permission_updates: None,
            input_digest: None,
            lead_sig: None,
            extra: Map::new(),
        }
    }

    /// Why this decision does not let `worker` run `tool` with `input`, if it does not: the
    /// lead decided on another requester, tool or input than the one now asking (a pending
    /// record rewritten before the lead read it, or a decision on someone else's request).
    pub(crate) fn mismatch(&self, worker: &str, tool: &str, input: &Value) -> Option<String> {
        if self.worker_name != worker {
            return Some(format!("it answers {}, not {worker}", self.worker_name));
        }
        if self.tool_name != tool {
            return Some(format!("it is for {}, not {tool}", self.tool_name));
        }
        if self.input_digest.as_deref() != Some(digest(input).as_str()) {
            return Some(
                "the lead decided on another input than this call's (the request was changed \
                 after it was filed)"
                    .to_string(),
            );
        }
        None
    }
}

/// What a teammate asks for.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ask {
    pub(crate) tool_name: String,
    pub(crate) tool_use_id: String,
    pub(crate) description: String,
    pub(crate) input: Value,
}

/// `perm-<ms>-<7 base36>`
fn new_request_id() -> String {
    let mut n = uuid::Uuid::new_v4().as_u128();
    let mut tail = String::with_capacity(7);
    for _ in 0..7 {
        tail.push(char::from_digit((n % 36) as u32, 36).unwrap_or('0'));
        n /= 36;
    }
    format!("perm-{}-{tail}", now_ms())
}

fn valid_id(id: &str) -> Result<()> {
    match Kind::of(id)? {
        Kind::Permission => Ok(()),
        Kind::Plan => Err(Error::usage(format!(
            "{id} names a plan, not a permission request"
        ))),
    }
}

pub(crate) struct Permissions<'a> {
    store: &'a Store,
    team: &'a TeamName,
}

impl<'a> Permissions<'a> {
    pub(crate) fn new(store: &'a Store, team: &'a TeamName) -> Permissions<'a> {
        Permissions { store, team }
    }

    pub(crate) fn pending_path(&self, id: &str) -> PathBuf {
        self.store.pending_dir(self.team).join(format!("{id}.json"))
    }

    pub(crate) fn resolved_path(&self, id: &str) -> PathBuf {
        self.store
            .resolved_dir(self.team)
            .join(format!("{id}.json"))
    }

    /// Files the request and tells the lead.
    pub(crate) fn request(&self, worker: &AgentName, ask: Ask) -> Result<PermissionRecord> {
        if ask.tool_name.trim().is_empty() {
            return Err(Error::usage(
                "a permission request needs --tool, the tool that wants to run",
            ));
        }
        let member = Roster::new(self.store, self.team).require_member(worker.as_str())?;
        fsio::ensure_dir(&self.store.pending_dir(self.team))?;
        fsio::ensure_dir(&self.store.resolved_dir(self.team))?;
        let id = new_request_id();
        let tool_use_id = if ask.tool_use_id.is_empty() {
            format!("swarm-{}", uuid::Uuid::new_v4())
        } else {
            ask.tool_use_id
        };
        let record = PermissionRecord::pending(
            id.clone(),
            self.team,
            worker,
            member.color_or_default().to_string(),
            Ask { tool_use_id, ..ask },
            vec![],
        );
        fsio::write_json(&self.pending_path(&id), &record)?;
        let message = Protocol::PermissionRequest(PermissionRequest {
            request_id: id,
            agent_id: worker.to_string(),
            tool_name: record.tool_name.clone(),
            tool_use_id: record.tool_use_id.clone(),
            description: record.description.clone(),
            input: record.input.clone(),
            permission_suggestions: vec![],
            extra: Map::new(),
        });
        let envelope = InboxMessage::protocol(worker, &message)
            .with_color(member.color.clone())
            .with_summary(Some(format!("permission: {}", record.tool_name)));
        Mailbox::new(self.store, self.team).send(&AgentName::lead(), envelope)?;
        Ok(record)
    }

    /// Files a request that arrived only as a message (Claude Code teammates send no file), so
    /// it shows in `ls pending/` and resolves like any other. Does nothing if it is filed.
    pub(crate) fn adopt(&self, request: &PermissionRequest, from: &AgentName) -> Result<()> {
        valid_id(&request.request_id)?;
        if self.filed(&request.request_id)? {
            return Ok(());
        }
        let record = self.record_of(request, from, None)?;
        fsio::ensure_dir(&self.store.pending_dir(self.team))?;
        fsio::write_json(&self.pending_path(&record.id), &record)
    }

    /// Whether `id` has a pending file or a decision (a resolved file the lead did not sign
    /// does not hide the request).
    pub(crate) fn filed(&self, id: &str) -> Result<bool> {
        Ok(fsio::check_regular(&self.pending_path(id))? || self.decision(id)?.is_some())
    }

    /// The pending record for a request message from `from`, dated `sent_ms` (else now).
    fn record_of(
        &self,
        request: &PermissionRequest,
        worker: &AgentName,
        sent_ms: Option<u64>,
    ) -> Result<PermissionRecord> {
        let color = Roster::new(self.store, self.team)
            .load()?
            .member(worker.as_str())
            .map(|m| m.color_or_default().to_string())
            .unwrap_or_default();
        let ask = Ask {
            tool_name: request.tool_name.clone(),
            tool_use_id: request.tool_use_id.clone(),
            description: request.description.clone(),
            input: request.input.clone(),
        };
        let mut record = PermissionRecord::pending(
            request.request_id.clone(),
            self.team,
            worker,
            color,
            ask,
            request.permission_suggestions.clone(),
        );
        if let Some(ms) = sent_ms {
            record.created_at = ms;
        }
        Ok(record)
    }

    /// Requests that are only a message in the lead's inbox, neither pending nor decided on
    /// disk, as pending records dated by their message. A request whose `agent_id` is not its
    /// envelope's sender is not one (the console ignores it the same way).
    pub(crate) fn unfiled(&self, lead_inbox: &[InboxMessage]) -> Result<Vec<PermissionRecord>> {
        let mut records: Vec<PermissionRecord> = Vec::new();
        for m in lead_inbox {
            let Payload::Protocol(p) = m.payload() else {
                continue;
            };
            let Protocol::PermissionRequest(r) = *p else {
                continue;
            };
            if r.agent_id != m.from
                || valid_id(&r.request_id).is_err()
                || records.iter().any(|k| k.id == r.request_id)
                || self.filed(&r.request_id)?
            {
                continue;
            }
            if let Ok(record) = self.record_of(&r, &m.from, parse_timestamp(&m.timestamp)) {
                records.push(record);
            }
        }
        Ok(records)
    }

    /// Files `id` from the lead's inbox if it is only a message there; whether it is filed now.
    pub(crate) fn file_from_inbox(&self, id: &str) -> Result<bool> {
        if self.filed(id)? {
            return Ok(true);
        }
        let lead_inbox = Mailbox::new(self.store, self.team).read(&AgentName::lead(), false)?;
        let Some(record) = self.unfiled(&lead_inbox)?.into_iter().find(|r| r.id == id) else {
            return Ok(false);
        };
        fsio::ensure_dir(&self.store.pending_dir(self.team))?;
        match fsio::write_json_new(&self.pending_path(id), &record) {
            Ok(()) => Ok(true),
            // Another decider or the console filed it meanwhile.
            Err(_) if self.filed(id)? => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// Open requests, oldest first: the pending files and the requests that are only a message
    /// in `lead_inbox`.
    pub(crate) fn pending_in(&self, lead_inbox: &[InboxMessage]) -> Result<Vec<PermissionRecord>> {
        let mut records = self.read_dir(&self.store.pending_dir(self.team))?;
        records.extend(self.unfiled(lead_inbox)?);
        records.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(records)
    }

    /// The decided requests the lead signed, oldest first.
    pub(crate) fn resolved(&self) -> Result<Vec<PermissionRecord>> {
        signed::read_all(
            self.store,
            self.team,
            signed::PERMISSION,
            &self.store.resolved_dir(self.team),
            |id| Kind::of(id).ok() == Some(Kind::Permission),
            |r: &PermissionRecord| (r.created_at, r.id.clone()),
        )
    }

    /// The permission records in `dir`; plan records, which share `resolved/`, are not read.
    fn read_dir(&self, dir: &Path) -> Result<Vec<PermissionRecord>> {
        super::records::read_records(
            dir,
            |id| Kind::of(id).ok() == Some(Kind::Permission),
            |r: &PermissionRecord| (r.created_at, r.id.clone()),
        )
    }

    /// The pending record of `id`, if its file is there.
    pub(crate) fn pending_record(&self, id: &str) -> Result<Option<PermissionRecord>> {
        valid_id(id)?;
        fsio::read_json(&self.pending_path(id))
    }

    /// The decision, if the lead made one: a resolved record without the lead's signature is
    /// no decision (`signed`).
    pub(crate) fn decision(&self, id: &str) -> Result<Option<PermissionRecord>> {
        valid_id(id)?;
        signed::read(
            self.store,
            self.team,
            signed::PERMISSION,
            &self.resolved_path(id),
        )
    }

    /// Writes the lead's decision on `record`, signed.
    pub(crate) fn write_decision(&self, record: &PermissionRecord) -> Result<()> {
        fsio::ensure_dir(&self.store.resolved_dir(self.team))?;
        let path = self.resolved_path(&record.id);
        signed::write(self.store, self.team, signed::PERMISSION, &path, record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_keeps_unknown_fields_and_its_resolution_apart() {
        let text = r#"{"id": "perm-1-a", "workerId": "coder@t", "workerName": "coder",
            "teamName": "t", "toolName": "Bash", "status": "rejected", "createdAt": 5,
            "resolvedBy": "operator", "feedback": "no", "fromNewerClaude": 1}"#;
        let record: PermissionRecord = serde_json::from_str(text).unwrap();
        assert_eq!(record.resolution.status, "rejected");
        assert_eq!(record.resolution.resolved_by.as_deref(), Some("operator"));
        assert_eq!(record.resolution.feedback.as_deref(), Some("no"));
        assert_eq!(
            Value::Object(record.extra.clone()),
            serde_json::json!({"fromNewerClaude": 1})
        );
        let back: Value = serde_json::to_value(&record).unwrap();
        assert_eq!(back["status"], "rejected");
        assert_eq!(back["fromNewerClaude"], 1);
        assert!(back.get("resolvedAt").is_none(), "{back}");
    }
}
