//! Permission requests: a teammate asks, the lead decides (PROTOCOL.md section 9).
//!
//! The request is a file in `permissions/pending/` plus a `permission_request` message to the
//! lead; the decision is a file in `permissions/resolved/` plus a `permission_response` message
//! to the requester. The files make open questions visible with `ls` and survive a lead that
//! restarts; resolving takes the pending file's lock and refuses a second decision, so each
//! request ends in exactly one resolved file.
//!
//! A decision is three steps: write the resolved file, answer the requester, remove the pending
//! file. The pending file goes last, so a decider killed halfway leaves both files, and the next
//! decider (any `approve` or `deny`) finishes the first decision before refusing its own: the
//! requester is always answered, at worst twice with the same answer.
//!
//! A Claude Code teammate files nothing: its request is only the `permission_request` message in
//! the lead's inbox. Listing shows such requests too, and deciding or waiting on one files it
//! first ([`Permissions::adopt`]), so every command works on them without a lead console running.

use std::fs;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::store::fsio::{self, now_ms};
use crate::store::lock::FileLock;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{
    parse_timestamp, Payload, PermissionRequest, PermissionResponse, Protocol,
};
use crate::store::roster::Roster;
use crate::store::watcher::DirWatcher;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRecord {
    pub id: String,
    pub worker_id: String,
    pub worker_name: String,
    #[serde(default)]
    pub worker_color: String,
    pub team_name: String,
    pub tool_name: String,
    #[serde(default)]
    pub tool_use_id: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub input: Value,
    #[serde(default)]
    pub permission_suggestions: Vec<Value>,
    /// `pending`, `approved` or `rejected`.
    pub status: String,
    pub created_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_updates: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
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
            status: "pending".into(),
            created_at: now_ms(),
            resolved_by: None,
            resolved_at: None,
            feedback: None,
            updated_input: None,
            permission_updates: None,
            extra: Map::new(),
        }
    }

    pub fn approved(&self) -> bool {
        self.status == "approved"
    }
}

/// What a teammate asks for.
#[derive(Debug, Clone, Default)]
pub struct Ask {
    pub tool_name: String,
    pub tool_use_id: String,
    pub description: String,
    pub input: Value,
}

/// The lead's answer.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    pub approve: bool,
    pub feedback: Option<String>,
    pub updated_input: Option<Value>,
    /// Pass the request's own `permission_suggestions` back as `permission_updates`, so the
    /// requester applies them (e.g. Claude's "allow this directory for the session").
    pub accept_suggestions: bool,
    pub resolved_by: String,
}

/// `perm-<ms>-<7 base36>`
pub fn new_request_id() -> String {
    let mut n = uuid::Uuid::new_v4().as_u128();
    let mut tail = String::with_capacity(7);
    for _ in 0..7 {
        tail.push(char::from_digit((n % 36) as u32, 36).unwrap_or('0'));
        n /= 36;
    }
    format!("perm-{}-{tail}", now_ms())
}

fn valid_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "invalid permission request id {id:?}: ids look like perm-1767225600000-k3j9x2a"
        )))
    }
}

pub struct Permissions<'a> {
    store: &'a Store,
    team: &'a TeamName,
}

impl<'a> Permissions<'a> {
    pub fn new(store: &'a Store, team: &'a TeamName) -> Permissions<'a> {
        Permissions { store, team }
    }

    fn pending_path(&self, id: &str) -> std::path::PathBuf {
        self.store.pending_dir(self.team).join(format!("{id}.json"))
    }

    fn resolved_path(&self, id: &str) -> std::path::PathBuf {
        self.store
            .resolved_dir(self.team)
            .join(format!("{id}.json"))
    }

    /// Files the request and tells the lead.
    pub fn request(&self, worker: &AgentName, ask: Ask) -> Result<PermissionRecord> {
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
    pub fn adopt(&self, request: &PermissionRequest, from: &AgentName) -> Result<()> {
        valid_id(&request.request_id)?;
        if self.filed(&request.request_id)? {
            return Ok(());
        }
        let record = self.record_of(request, from, None)?;
        fsio::ensure_dir(&self.store.pending_dir(self.team))?;
        fsio::write_json(&self.pending_path(&record.id), &record)
    }

    /// Whether `id` has a pending or a resolved file.
    fn filed(&self, id: &str) -> Result<bool> {
        Ok(fsio::check_regular(&self.pending_path(id))?
            || fsio::check_regular(&self.resolved_path(id))?)
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
    fn unfiled(&self) -> Result<Vec<PermissionRecord>> {
        let mut records: Vec<PermissionRecord> = Vec::new();
        for m in Mailbox::new(self.store, self.team).read(&AgentName::lead(), false)? {
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
    fn file_from_inbox(&self, id: &str) -> Result<bool> {
        if self.filed(id)? {
            return Ok(true);
        }
        let Some(record) = self.unfiled()?.into_iter().find(|r| r.id == id) else {
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

    /// Open requests, oldest first: the pending files and the requests that are only a message.
    pub fn pending(&self) -> Result<Vec<PermissionRecord>> {
        let mut records = self.read_dir(&self.store.pending_dir(self.team))?;
        records.extend(self.unfiled()?);
        records.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(records)
    }

    pub fn resolved(&self) -> Result<Vec<PermissionRecord>> {
        self.read_dir(&self.store.resolved_dir(self.team))
    }

    fn read_dir(&self, dir: &std::path::Path) -> Result<Vec<PermissionRecord>> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(Error::io("list", dir)(e)),
        };
        let mut records = Vec::new();
        for entry in entries.filter_map(|e| e.ok()) {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "json")
                && !entry.file_name().to_string_lossy().starts_with('.')
            {
                match fsio::read_json::<PermissionRecord>(&path) {
                    Ok(Some(r)) => records.push(r),
                    Ok(None) => {}
                    Err(e) => eprintln!("swarm: warning: skipping {}: {e}", path.display()),
                }
            }
        }
        records.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(records)
    }

    /// Decides a pending request: resolved file, pending file removed, answer to the requester.
    pub fn resolve(&self, id: &str, decision: Decision) -> Result<PermissionRecord> {
        valid_id(id)?;
        if !self.file_from_inbox(id)? {
            return Err(Error::NoSuchPermission(id.to_string()));
        }
        let pending = self.pending_path(id);
        let _lock = FileLock::acquire(&pending)?;
        let resolved_path = self.resolved_path(id);
        if let Some(prior) = fsio::read_json::<PermissionRecord>(&resolved_path)? {
            if fsio::check_regular(&pending)? {
                // The decider before us died before it finished: finish its decision.
                self.answer(&prior)?;
                fs::remove_file(&pending).map_err(Error::io("remove", &pending))?;
            }
            return Err(Error::usage(format!(
                "permission request {id} was already decided ({})",
                prior.status
            )));
        }
        let mut record: PermissionRecord =
            fsio::read_json(&pending)?.ok_or_else(|| Error::NoSuchPermission(id.to_string()))?;
        record.status = if decision.approve {
            "approved"
        } else {
            "rejected"
        }
        .into();
        record.resolved_by = Some(decision.resolved_by.clone());
        record.resolved_at = Some(now_ms());
        record.feedback = decision.feedback.clone();
        record.updated_input = decision.updated_input.clone();
        if decision.approve && decision.accept_suggestions {
            record.permission_updates = Some(Value::Array(record.permission_suggestions.clone()));
        }
        fsio::ensure_dir(&self.store.resolved_dir(self.team))?;
        fsio::write_json(&resolved_path, &record)?;
        self.answer(&record)?;
        fs::remove_file(&pending).map_err(Error::io("remove", &pending))?;
        Ok(record)
    }

    /// Sends the `permission_response` for a resolved record to its requester.
    fn answer(&self, record: &PermissionRecord) -> Result<()> {
        let response = if record.approved() {
            let updates = match &record.permission_updates {
                Some(Value::Array(updates)) => updates.clone(),
                _ => vec![],
            };
            PermissionResponse::approve(
                &record.id,
                &record.tool_use_id,
                record.updated_input.clone().unwrap_or(record.input.clone()),
                updates,
            )
        } else {
            let error = record
                .feedback
                .clone()
                .unwrap_or_else(|| "denied by the team lead".into());
            PermissionResponse::deny(&record.id, &record.tool_use_id, error)
        };
        let worker: AgentName = record.worker_name.parse()?;
        // Claude Code takes a permission answer only from `team-lead` (PROTOCOL.md section 7),
        // whoever `resolvedBy` names (the lead agent records itself there).
        let envelope =
            InboxMessage::protocol(&AgentName::lead(), &Protocol::PermissionResponse(response));
        Mailbox::new(self.store, self.team).send(&worker, envelope)
    }

    /// The decision, if made.
    pub fn decision(&self, id: &str) -> Result<Option<PermissionRecord>> {
        valid_id(id)?;
        fsio::read_json(&self.resolved_path(id))
    }

    /// Waits for the decision on `id` until `deadline`; `None` on timeout.
    pub fn wait(&self, id: &str, deadline: Option<Instant>) -> Result<Option<PermissionRecord>> {
        valid_id(id)?;
        self.file_from_inbox(id)?;
        let dir = self.store.resolved_dir(self.team);
        fsio::ensure_dir(&dir)?;
        let watcher = DirWatcher::new(&dir)?;
        loop {
            if let Some(r) = self.decision(id)? {
                return Ok(Some(r));
            }
            if !self.pending_path(id).exists() && self.decision(id)?.is_none() {
                return Err(Error::NoSuchPermission(id.to_string()));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
            watcher.wait(deadline);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::roster::Member;

    #[test]
    fn a_decision_whose_decider_died_halfway_is_finished_by_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        Roster::new(&store, &team).create("", "/", "").unwrap();
        let coder: AgentName = "coder".parse().unwrap();
        Roster::new(&store, &team)
            .add_member(Member::teammate(&team, &coder, "blue", "/"))
            .unwrap();
        let perms = Permissions::new(&store, &team);
        let ask = Ask {
            tool_name: "Bash".into(),
            ..Ask::default()
        };
        let record = perms.request(&coder, ask).unwrap();
        // A decider approved it and was killed right after writing the resolved file.
        let mut approved = record.clone();
        approved.status = "approved".into();
        approved.resolved_by = Some("team-lead".into());
        fsio::write_json(&perms.resolved_path(&record.id), &approved).unwrap();

        let second = Decision {
            approve: false,
            resolved_by: "team-lead".into(),
            ..Decision::default()
        };
        let err = perms.resolve(&record.id, second).unwrap_err();
        assert!(
            err.to_string().contains("already decided (approved)"),
            "{err}"
        );
        assert!(!perms.pending_path(&record.id).exists());
        assert_eq!(
            perms.decision(&record.id).unwrap().unwrap().status,
            "approved"
        );
        let inbox = Mailbox::new(&store, &team).read(&coder, false).unwrap();
        let answers: Vec<_> = inbox
            .iter()
            .filter_map(|m| match m.payload() {
                crate::store::protocol::Payload::Protocol(p) => match *p {
                    Protocol::PermissionResponse(r) => Some(r),
                    _ => None,
                },
                crate::store::protocol::Payload::Text(_) => None,
            })
            .collect();
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0].subtype, "success");
        assert_eq!(answers[0].request_id, record.id);
    }
}
