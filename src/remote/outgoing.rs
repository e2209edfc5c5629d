//! Finding in the mirror what the host's members wrote, as operations for home.
//!
//! Nothing is queued: every scan reads the mirror's files and derives the operations again,
//! each under an id made from what it says, so one already in flight is skipped and one lost
//! with a connection is found and sent again after the next hello. What counts as written here:
//! inbox entries from a member on this host that `records` has not seen (a copy placed from
//! home has been seen); read marks on a member's own entries that home still calls unread; task
//! files that differ from their base (a change) or have none (a new task); a member's
//! `isActive` that differs from the roster base; permission request files of the host's
//! members; and claim requests of their runtimes. Anything else in the mirror (another member's
//! roster entry, a decision, a lead entry) is never sent: home would refuse it anyway.

use std::collections::BTreeMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::frame::{Life, Op, TaskChange};
use super::relay::{Pending, Relay};
use super::{claims, local};
use crate::backend::PaneState;
use crate::error::Result;
use crate::store::fsio;
use crate::store::liveness::{self, Liveness};
use crate::store::lock::FileLock;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TaskId};
use crate::store::requests::PermissionRecord;
use crate::store::roster::RETIRED_FIELD;
use crate::store::tasks::TaskStatus;

/// An operation with its id and what to do on its answer.
pub(super) type Outgoing = (String, Op, Pending);

/// Eight hex digits naming `value`, for operation ids.
fn digest(value: &impl serde::Serialize) -> String {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    Sha256::digest(&bytes)[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Relay<'_> {
    pub(super) fn outgoing(&mut self) -> Result<Vec<Outgoing>> {
        let roster: Option<Value> = fsio::read_json(&self.store.config_path(self.team))
            .ok()
            .flatten();
        let Some(roster) = roster else {
            return Ok(vec![]);
        };
        let here: Vec<String> = self.members_in(&roster);
        let mut ops = Vec::new();
        self.messages(&here, &mut ops)?;
        if self.synced_once {
            self.tasks(&here, &mut ops)?;
        }
        self.activity(&roster, &here, &mut ops);
        self.permissions(&here, &mut ops)?;
        for (request, r) in claims::waiting(self.store, self.team) {
            if here.iter().any(|h| h == r.member.as_str()) {
                ops.push((
                    format!("q:{request}:{}", r.task),
                    Op::Claim {
                        member: r.member,
                        task: r.task,
                        request: request.clone(),
                    },
                    Pending::Claim { request },
                ));
            }
        }
        ops.retain(|(id, _, _)| !self.in_flight.contains_key(id));
        Ok(ops)
    }

    /// New entries from the host's members in any inbox, and read marks on their own.
    fn messages(&self, here: &[String], ops: &mut Vec<Outgoing>) -> Result<()> {
        let dir = self.store.inboxes_dir(self.team);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok(());
        };
        let mailbox = Mailbox::new(self.store, self.team);
        for entry in entries.filter_map(|e| e.ok()) {
            let name = entry.file_name();
            let Some(to) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|n| n.parse::<AgentName>().ok())
            else {
                continue;
            };
            let on_host = here.iter().any(|h| h == to.as_str());
            let inbox: Vec<InboxMessage> = mailbox.read(&to, false)?;
            for m in &inbox {
                let key = m.key();
                let from_here = here.iter().any(|h| h == m.from.as_str());
                if from_here && !self.records.seen(&key) && (on_host || !m.read) {
                    ops.push((
                        format!("m:{}", digest(&(&key, to.as_str()))),
                        Op::Deliver {
                            to: to.clone(),
                            message: m.clone(),
                        },
                        Pending::Deliver {
                            to: to.clone(),
                            key,
                            on_host,
                        },
                    ));
                }
            }
            if !on_host {
                continue;
            }
            let Some(unread) = self.home_unread.get(to.as_str()) else {
                continue;
            };
            let mut done: Vec<String> = unread
                .iter()
                .filter(|k| self.records.seen(k))
                .filter(|k| !inbox.iter().any(|m| m.key() == **k && !m.read))
                .cloned()
                .collect();
            if !done.is_empty() {
                done.sort();
                ops.push((
                    format!("r:{to}:{}", digest(&done)),
                    Op::Delivered {
                        member: to.clone(),
                        keys: done,
                    },
                    Pending::Delivered,
                ));
            }
        }
        Ok(())
    }

    /// Task files that differ from their base: a change, a new task, or one removed here
    /// (put back: a remote member cannot delete a task).
    fn tasks(&mut self, here: &[String], ops: &mut Vec<Outgoing>) -> Result<()> {
        let mut ids: Vec<TaskId> = self.records.task_bases();
        if let Ok(entries) = std::fs::read_dir(self.store.tasks_dir(self.team)) {
            ids.extend(entries.filter_map(|e| e.ok()).filter_map(|e| {
                let name = e.file_name();
                name.to_str()?.strip_suffix(".json")?.parse().ok()
            }));
        }
        ids.sort();
        ids.dedup();
        for id in ids {
            let busy = self.in_flight.values().any(|p| match p {
                Pending::Task { id: t, .. } | Pending::Create { local_id: t, .. } => *t == id,
                _ => false,
            });
            if busy {
                continue;
            }
            let path = self.store.task_path(self.team, &id);
            let current: Option<Value> = fsio::read_json(&path).ok().flatten();
            let base = self.records.task_base(&id);
            match (current, base) {
                (Some(cur), None) => {
                    let by = who(&cur, None, here);
                    let text = |k: &str| cur.get(k).and_then(Value::as_str).map(str::to_string);
                    let blocked_by = cur
                        .get("blockedBy")
                        .and_then(|v| serde_json::from_value(v.clone()).ok())
                        .unwrap_or_default();
                    let Some(by) = by else { continue };
                    ops.push((
                        format!("c:{id}:{}", digest(&cur)),
                        Op::TaskCreate {
                            by,
                            local_id: id.clone(),
                            subject: text("subject").unwrap_or_else(|| format!("Task {id}")),
                            description: text("description").unwrap_or_default(),
                            active_form: text("activeForm"),
                            blocked_by,
                        },
                        Pending::Create {
                            local_id: id,
                            sent: cur,
                        },
                    ));
                }
                (None, Some(base)) => {
                    let _lock = FileLock::acquire(&path)?;
                    if !path.exists() {
                        fsio::write_json(&path, &base)?;
                    }
                }
                (Some(cur), Some(base)) if cur != base => {
                    let change = diff(&base, &cur);
                    if change.is_empty() {
                        // Only fields home keeps to itself changed (dependencies, formatting):
                        // nothing to send, and home's next version replaces it.
                        self.records.set_task_base(&id, Some(&cur))?;
                        continue;
                    }
                    let Some(by) = who(&cur, Some(&base), here) else {
                        continue;
                    };
                    ops.push((
                        format!("t:{id}:{}", digest(&change)),
                        Op::TaskChange {
                            id: id.clone(),
                            by,
                            change,
                        },
                        Pending::Task { id, sent: cur },
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A member's own `isActive` that differs from what home last sent.
    fn activity(&self, roster: &Value, here: &[String], ops: &mut Vec<Outgoing>) {
        let base = self.records.roster_base();
        for name in here {
            let active = |c: Option<&Value>| {
                c?.get("members")?
                    .as_array()?
                    .iter()
                    .find(|m| m.get("name").and_then(Value::as_str) == Some(name))?
                    .get("isActive")?
                    .as_bool()
            };
            let (Some(now), was) = (active(Some(roster)), active(base.as_ref())) else {
                continue;
            };
            let Ok(member) = name.parse::<AgentName>() else {
                continue;
            };
            if was != Some(now) {
                ops.push((
                    format!("a:{name}:{now}"),
                    Op::Active {
                        member,
                        active: now,
                    },
                    Pending::Active,
                ));
            }
        }
    }

    /// Permission requests the host's members filed here.
    fn permissions(&self, here: &[String], ops: &mut Vec<Outgoing>) -> Result<()> {
        let Ok(entries) = std::fs::read_dir(self.store.pending_dir(self.team)) else {
            return Ok(());
        };
        for entry in entries.filter_map(|e| e.ok()) {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let Some(value): Option<Value> = fsio::read_json(&path).ok().flatten() else {
                continue;
            };
            let Ok(record) = serde_json::from_value::<PermissionRecord>(value.clone()) else {
                continue;
            };
            let key = format!("p:{}", record.id);
            if here.contains(&record.worker_name) && !self.records.seen(&key) {
                ops.push((
                    key,
                    Op::Permission { record: value },
                    Pending::Permission { id: record.id },
                ));
            }
        }
        Ok(())
    }

    /// Stops the pane of every member on this host that home retired after it started here: a
    /// kill home could not deliver while the host was cut off.
    pub(super) fn stop_retired(&self) -> Result<()> {
        let roster: Option<Value> = fsio::read_json(&self.store.config_path(self.team))
            .ok()
            .flatten();
        let Some(roster) = roster else {
            return Ok(());
        };
        let panes = local::load(self.store, self.team);
        for m in roster
            .get("members")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = m.get("name").and_then(Value::as_str).unwrap_or_default();
            let here =
                m.get(super::HOST_FIELD).and_then(Value::as_str) == Some(self.alias.as_str());
            let retired = m.get(RETIRED_FIELD).and_then(Value::as_u64);
            let (Some(pane), Some(retired), true) = (panes.get(name), retired, here) else {
                continue;
            };
            let Ok(agent) = name.parse::<AgentName>() else {
                continue;
            };
            if pane.started_ms < retired
                && matches!(
                    local::state(self.store, self.team, &agent),
                    PaneState::Alive { .. }
                )
            {
                eprintln!("swarm relay: {name} was retired at home; stopping its pane here");
                local::kill(self.store, self.team, &agent)?;
            }
        }
        Ok(())
    }

    /// How each member on this host is doing: its runtime's liveness lock, else its pane here.
    pub(super) fn report(&self) -> BTreeMap<String, Life> {
        let roster: Option<Value> = fsio::read_json(&self.store.config_path(self.team))
            .ok()
            .flatten();
        let Some(roster) = roster else {
            return BTreeMap::new();
        };
        let panes = local::load(self.store, self.team);
        let mut report = BTreeMap::new();
        for name in self.members_in(&roster) {
            let Ok(agent) = name.parse::<AgentName>() else {
                continue;
            };
            let lock = liveness::probe(self.store, self.team, &agent).unwrap_or(Liveness::Unknown);
            let pane = if panes.contains_key(&name) {
                local::state(self.store, self.team, &agent)
            } else {
                PaneState::Unknown
            };
            // A free lock whose record names another process than the pane's is an earlier
            // runtime's: the pane's own (the same pid: the trampoline and a sandbox step exec
            // into it) is starting, started again by `up` or `restart`, or slow in its
            // sandbox, and takes the lock in a moment (as `lifecycle::health` judges at home).
            let earlier = match pane {
                PaneState::Alive { pid: Some(pid) } => {
                    liveness::recorded_holder(self.store, self.team, &agent)
                        .is_some_and(|h| h != pid)
                }
                _ => false,
            };
            let life = match (lock, pane) {
                (_, PaneState::Dead { code, signal }) => Life::Dead { code, signal },
                (_, PaneState::Gone) => Life::Dead {
                    code: None,
                    signal: None,
                },
                (Liveness::Dead, _) if earlier => Life::Unknown,
                (Liveness::Dead, _) => Life::Dead {
                    code: None,
                    signal: None,
                },
                (Liveness::Alive, _) | (_, PaneState::Alive { .. }) => Life::Alive,
                _ => Life::Unknown,
            };
            report.insert(name, life);
        }
        report
    }
}

/// Which member on this host a change of a task is from: its owner now if that is one of
/// them, else its owner before (a release), else the first of them (home checks it anyway).
fn who(cur: &Value, base: Option<&Value>, here: &[String]) -> Option<AgentName> {
    let owner = |v: &Value| v.get("owner").and_then(Value::as_str).map(str::to_string);
    let on_host = |o: &Option<String>| o.as_ref().filter(|o| here.contains(o)).cloned();
    on_host(&owner(cur))
        .or_else(|| base.and_then(|b| on_host(&owner(b))))
        .or_else(|| here.first().cloned())
        .and_then(|n| n.parse().ok())
}

/// The fields home takes from a member that differ between `base` and `cur`.
fn diff(base: &Value, cur: &Value) -> TaskChange {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let mut change = TaskChange::default();
    if text(base, "owner") != text(cur, "owner") {
        change.owner = Some(text(cur, "owner"));
    }
    if base.get("status") != cur.get("status") {
        change.status = cur
            .get("status")
            .and_then(|s| serde_json::from_value::<TaskStatus>(s.clone()).ok());
    }
    for (key, slot) in [
        ("subject", &mut change.subject),
        ("description", &mut change.description),
        ("activeForm", &mut change.active_form),
    ] {
        if text(base, key) != text(cur, key) {
            *slot = text(cur, key);
        }
    }
    let meta = |v: &Value| v.get("metadata").and_then(Value::as_object).cloned();
    let (b, c) = (
        meta(base).unwrap_or_default(),
        meta(cur).unwrap_or_default(),
    );
    for (k, v) in &c {
        if b.get(k) != Some(v) {
            change.metadata.insert(k.clone(), v.clone());
        }
    }
    for k in b.keys().filter(|k| !c.contains_key(*k)) {
        change.metadata.insert(k.clone(), Value::Null);
    }
    change
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_change_carries_only_the_fields_a_member_may_set() {
        let base = json!({"id": "3", "subject": "s", "status": "pending", "blocks": [],
                          "metadata": {"a": 1, "gone": true}});
        let cur = json!({"id": "3", "subject": "s", "status": "in_progress", "owner": "coder",
                         "blocks": ["9"], "metadata": {"a": 2}});
        let change = diff(&base, &cur);
        assert_eq!(change.owner, Some(Some("coder".into())));
        assert_eq!(change.status, Some(TaskStatus::InProgress));
        assert_eq!(change.subject, None);
        assert_eq!(change.metadata.get("a"), Some(&json!(2)));
        assert_eq!(change.metadata.get("gone"), Some(&Value::Null));
        let released = diff(&cur, &base);
        assert_eq!(released.owner, Some(None));
        assert!(diff(
            &base,
            &json!({"id": "3", "subject": "s", "status": "pending",
            "blocks": ["1"], "metadata": {"a": 1, "gone": true}})
        )
        .is_empty());
    }
}
