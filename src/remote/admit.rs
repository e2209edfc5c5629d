//! Applying a remote host's operations to the home store: the trust boundary of remote hosts.
//!
//! Everything a relay sends was written on a host swarm does not control, by agents that may be
//! wrong or hostile, so every operation is checked here against the home roster before it
//! touches anything, and a remote member can only ever write as itself: messages *from* a
//! member placed on that host (never as `team-lead` or `system`, and never carrying a lead
//! signature), read marks on its own inbox, changes to tasks it owns or claims for itself
//! (decided on home's task files, with the busy check, so a claim is exactly-once across
//! hosts), its own `isActive`, and its own permission requests. Lead-written records (the
//! roster beyond that one flag, permission decisions, anything signed) never come from a host.
//! What is refused is answered `Refused` and logged, so the relay stops sending it.
//!
//! Each operation is idempotent: a delivery is keyed by its `msg_id` (and recorded in
//! `remote/<host>.applied.jsonl` with the outcome, so a replay after the recipient read it and
//! it was archived is still recognised); a task change sets fields to values; a claim of a task
//! the member already owns is granted again; a created task is recorded with its new id.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::frame::{Op, Outcome, TaskChange};
use super::{host_of, Host};
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::lead_key::{SIG_FIELD, SWARM_SIG_FIELD};
use crate::store::mailbox::Mailbox;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::requests::{PermissionRecord, Permissions};
use crate::store::roster::{Roster, TeamConfig};
use crate::store::tasks::{NewTask, TaskList, TaskPatch, TaskStatus};

/// Operations whose outcome home must remember, by op id.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    path: PathBuf,
    done: HashMap<String, Outcome>,
}

#[derive(Serialize, Deserialize)]
struct AppliedLine {
    op: String,
    outcome: Outcome,
}

impl Applied {
    pub(crate) fn load(store: &Store, team: &TeamName, host: &Host) -> Result<Applied> {
        let path = store
            .remote_dir(team)
            .join(format!("{}.applied.jsonl", host.slug()));
        let done = fsio::read_file(&path)?
            .map(|bytes| {
                String::from_utf8_lossy(&bytes)
                    .lines()
                    .filter_map(|l| serde_json::from_str::<AppliedLine>(l).ok())
                    .map(|l| (l.op, l.outcome))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Applied { path, done })
    }

    fn record(&mut self, op: &str, outcome: &Outcome) -> Result<()> {
        let line = serde_json::to_string(&AppliedLine {
            op: op.to_string(),
            outcome: outcome.clone(),
        })
        .map_err(|e| Error::Backend(e.to_string()))?;
        fsio::append(&self.path, format!("{line}\n").as_bytes())?;
        self.done.insert(op.to_string(), outcome.clone());
        Ok(())
    }
}

/// Applies `op` (id `op_id`) from `host`; the answer for the relay.
pub(crate) fn apply(
    store: &Store,
    team: &TeamName,
    host: &Host,
    applied: &mut Applied,
    op_id: &str,
    op: Op,
) -> Result<Outcome> {
    if let Some(done) = applied.done.get(op_id) {
        return Ok(done.clone());
    }
    let config = Roster::new(store, team).load()?;
    let refused = |reason: String| Ok(Outcome::Refused { reason });
    let on_host = |name: &str| -> Option<AgentName> {
        let m = config.member(name)?;
        (host_of(m).as_ref() == Some(host)).then(|| m.name.clone())
    };
    let outcome = match op {
        Op::Deliver { to, mut message } => {
            if on_host(message.from.as_str()).is_none() {
                return refused(format!(
                    "a message from {:?}: only members placed on {host} may send from it",
                    message.from
                ));
            }
            if config.member(to.as_str()).is_none() {
                return refused(format!("{to} is not on team {team}'s roster"));
            }
            // Nothing from a host is the lead's: a signature there is not honoured but dropped.
            message.extra.remove(SIG_FIELD);
            message.extra.remove(SWARM_SIG_FIELD);
            Mailbox::new(store, team).relay_in(&to, vec![message])?;
            let done = Outcome::Done;
            applied.record(op_id, &done)?;
            return Ok(done);
        }
        Op::Delivered { member, keys } => {
            if on_host(member.as_str()).is_none() {
                return refused(format!("{member} is not placed on {host}"));
            }
            Mailbox::new(store, team).mark_delivered(&member, &keys)?;
            Outcome::Done
        }
        Op::TaskChange { id, by, change } => {
            let Some(by) = on_host(by.as_str()) else {
                return refused(format!("{by} is not placed on {host}"));
            };
            task_change(store, team, &id, &by, change)?
        }
        Op::TaskCreate {
            by,
            local_id: _,
            subject,
            description,
            active_form,
            blocked_by,
        } => {
            if on_host(by.as_str()).is_none() {
                return refused(format!("{by} is not placed on {host}"));
            }
            let list = TaskList::new(store, team);
            let known: Vec<_> = blocked_by
                .into_iter()
                .filter(|d| list.get(d).is_ok())
                .collect();
            let mut metadata = serde_json::Map::new();
            metadata.insert("swarmCreatedBy".into(), Value::from(by.as_str()));
            let created = match list.create(NewTask {
                subject,
                description,
                active_form,
                blocked_by: known,
                metadata,
            }) {
                Ok(task) => Outcome::Created { id: task.id },
                Err(e) if e.exit_code() == 2 || e.is_not_found() => Outcome::Refused {
                    reason: e.to_string(),
                },
                Err(e) => return Err(e),
            };
            applied.record(op_id, &created)?;
            return Ok(created);
        }
        Op::Claim { member, task, .. } => {
            let Some(member) = on_host(member.as_str()) else {
                return refused(format!("{member} is not placed on {host}"));
            };
            match TaskList::new(store, team).claim(&task, &member, true) {
                Ok(_) => Outcome::Done,
                Err(e @ (Error::ClaimRefused { .. } | Error::NoSuchTask { .. })) => {
                    Outcome::Refused {
                        reason: e.to_string(),
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Op::Active { member, active } => {
            let Some(member) = on_host(member.as_str()) else {
                return refused(format!("{member} is not placed on {host}"));
            };
            Roster::new(store, team).update_member(&member, |m| m.is_active = Some(active))?;
            Outcome::Done
        }
        Op::Permission { record } => permission(store, team, &config, host, record)?,
    };
    Ok(outcome)
}

/// A member's change to a task: a claim of it (decided here, on home's files) or a release
/// first, then the fields; only on a task that is, or just became, the member's.
fn task_change(
    store: &Store,
    team: &TeamName,
    id: &crate::store::names::TaskId,
    by: &AgentName,
    change: TaskChange,
) -> Result<Outcome> {
    let list = TaskList::new(store, team);
    let task = match list.get(id) {
        Ok(t) => t,
        Err(Error::NoSuchTask { .. }) => {
            return Ok(Outcome::Refused {
                reason: format!("task #{id} no longer exists"),
            })
        }
        Err(e) => return Err(e),
    };
    let refused = |reason: String| Ok(Outcome::Refused { reason });
    let mine = task.owner.as_deref() == Some(by.as_str());
    let mut release = false;
    match &change.owner {
        Some(Some(o)) if o != by.as_str() => {
            return refused(format!("{by} may take a task for itself only, not for {o}"))
        }
        Some(Some(_)) if !mine => match list.claim(id, by, true) {
            Ok(_) => {}
            Err(e @ Error::ClaimRefused { .. }) => return refused(e.to_string()),
            Err(e) => return Err(e),
        },
        Some(None) if !mine => return refused(format!("task #{id} is not {by}'s to give back")),
        Some(None) => release = true,
        _ if !mine => {
            let owner = task
                .owner
                .as_deref()
                .map_or("nobody's".to_string(), |o| format!("{o}'s"));
            return refused(format!("task #{id} is {owner}, not {by}'s"));
        }
        _ => {}
    }
    let status = match (release, change.status) {
        (true, None) if task.status != TaskStatus::Completed => Some(TaskStatus::Pending),
        (_, status) => status,
    };
    list.update(
        id,
        TaskPatch {
            subject: change.subject,
            description: change.description,
            active_form: change.active_form,
            status,
            owner: release.then_some(None),
            metadata: change.metadata,
        },
    )?;
    Ok(Outcome::Done)
}

/// A member's own permission request, filed as pending unless it is filed already.
fn permission(
    store: &Store,
    team: &TeamName,
    config: &TeamConfig,
    host: &Host,
    record: Value,
) -> Result<Outcome> {
    let Ok(record) = serde_json::from_value::<PermissionRecord>(record) else {
        return Ok(Outcome::Refused {
            reason: "not a permission request".into(),
        });
    };
    let worker_here = config
        .member(&record.worker_name)
        .is_some_and(|m| host_of(m).as_ref() == Some(host));
    let id_ok = !record.id.is_empty()
        && record.id.len() <= 128
        && record
            .id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !worker_here
        || !id_ok
        || record.resolution.status != "pending"
        || record.team_name != team.as_str()
    {
        return Ok(Outcome::Refused {
            reason: format!(
                "permission request {:?} is not a pending request of a member on {host}",
                record.id
            ),
        });
    }
    let permissions = Permissions::new(store, team);
    if permissions.filed(&record.id)? {
        return Ok(Outcome::Done);
    }
    fsio::ensure_dir(&store.pending_dir(team))?;
    fsio::write_json(&permissions.pending_path(&record.id), &record)?;
    Ok(Outcome::Done)
}
