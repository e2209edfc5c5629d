//! Applying what home sends to the mirror on a remote host.
//!
//! Each file is written under the same lock and the same way (atomically) as anywhere else in
//! swarm, so the host's agents and Claude Code see ordinary files. The roster goes in as a view:
//! home's roster with each member's pane facts made true for this host (the host's own
//! members point at their panes here; everyone else's panes and pids are dropped, since they
//! mean nothing on this machine), and with a member's own `isActive` kept while a change of it
//! is on its way home. Inbox entries are placed once ever (`records` remembers them, so one the
//! member read, or Claude Code removed, is not placed again). A task with a change of ours on
//! its way home is not overwritten until home has answered; otherwise home's version replaces
//! the mirror's and becomes the new base.

use serde_json::{Map, Value};

use super::frame::{Down, Outcome, Up};
use super::relay::{Pending, Relay};
use super::{local, HOST_FIELD, REMOTE_FIELD};
use crate::backend::tmux::SOCKET_FIELD;
use crate::error::Result;
use crate::process::pid::{EXIT_FIELD, PID_FIELD, PID_HOST_FIELD, PID_START_FIELD};
use crate::store::fsio;
use crate::store::lock::FileLock;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TaskId};

impl Relay<'_> {
    pub(super) fn apply(&mut self, frame: Down) -> Result<()> {
        match frame {
            Down::Hello { .. } => {}
            Down::Roster { config } => self.roster(config)?,
            Down::Inbox {
                member,
                unread,
                new,
            } => {
                self.home_unread
                    .insert(member.to_string(), unread.into_iter().collect());
                self.place(&member, new)?;
            }
            Down::Task { id, task } => self.task(&id, task)?,
            Down::HighWater { n } => {
                let path = self.store.highwatermark_path(self.team);
                let here = fsio::read_file(&path)?
                    .and_then(|b| String::from_utf8_lossy(&b).trim().parse::<u64>().ok())
                    .unwrap_or(0);
                if n > here {
                    fsio::write_atomic(&path, n.to_string().as_bytes())?;
                }
            }
            Down::Resolved { id, record } => {
                let name = format!("{id}.json");
                if id.contains('/') || id.starts_with('.') {
                    return Ok(());
                }
                let path = self.store.resolved_dir(self.team).join(&name);
                if fsio::read_json::<Value>(&path).ok().flatten().as_ref() != Some(&record) {
                    fsio::write_json(&path, &record)?;
                }
                let _ = std::fs::remove_file(self.store.pending_dir(self.team).join(&name));
                self.records.mark_seen([format!("p:{id}").as_str()])?;
            }
            Down::Answer { op, outcome } => self.answered(&op, outcome)?,
            Down::Sync { mark } => {
                self.synced_once = true;
                self.send(&Up::Synced { mark })?;
            }
            Down::Ping { now_ms } => self.send(&Up::Pong {
                now_ms: super::relay::clock_ms(),
                echo: now_ms,
            })?,
        }
        Ok(())
    }

    /// Writes the roster view of home's `config`.
    fn roster(&mut self, config: Value) -> Result<()> {
        let path = self.store.config_path(self.team);
        let _lock = FileLock::acquire(&path)?;
        let current: Option<Value> = fsio::read_json(&path).ok().flatten();
        let before = self.records.roster_base();
        let base = self.view(config);
        let mut written = base.clone();
        // A member's own isActive changed here and not yet acknowledged stays as it is here.
        for name in self.members_in(&base) {
            let here = active_of(current.as_ref(), &name);
            if here != active_of(before.as_ref(), &name) {
                if let (Some(here), Some(m)) = (here, member_mut(&mut written, &name)) {
                    m.insert("isActive".into(), Value::Bool(here));
                }
            }
        }
        if current.as_ref() != Some(&written) {
            fsio::write_json(&path, &written)?;
        }
        self.records.set_roster_base(&base)
    }

    /// Home's roster with the pane facts true on this host.
    fn view(&self, mut config: Value) -> Value {
        let panes = local::load(self.store, self.team);
        let alias = self.alias.as_str();
        if let Some(members) = config.get_mut("members").and_then(Value::as_array_mut) {
            for m in members.iter_mut().filter_map(Value::as_object_mut) {
                let name = m.get("name").and_then(Value::as_str).unwrap_or_default();
                let here = m.get(HOST_FIELD).and_then(Value::as_str) == Some(alias);
                let pane = panes.get(name).filter(|_| here).cloned();
                // How home reaches a member's pane is no business of the host itself: its own
                // members' panes are local here.
                for field in [
                    SOCKET_FIELD,
                    PID_FIELD,
                    PID_START_FIELD,
                    PID_HOST_FIELD,
                    EXIT_FIELD,
                    REMOTE_FIELD,
                ] {
                    m.remove(field);
                }
                match pane {
                    Some(p) => {
                        m.insert("tmuxPaneId".into(), Value::from(p.pane));
                        m.insert(SOCKET_FIELD.into(), Value::from(p.socket));
                        m.insert("backendType".into(), Value::from("tmux"));
                    }
                    None => {
                        m.insert("tmuxPaneId".into(), Value::from(""));
                    }
                }
            }
        }
        config
    }

    /// Names of the members of roster `config` placed on this host.
    pub(super) fn members_in(&self, config: &Value) -> Vec<String> {
        config
            .get("members")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|m| m.get(HOST_FIELD).and_then(Value::as_str) == Some(self.alias.as_str()))
            .filter_map(|m| m.get("name").and_then(Value::as_str).map(str::to_string))
            .collect()
    }

    /// Places home's entries for `member` that were never placed here.
    fn place(&mut self, member: &AgentName, new: Vec<InboxMessage>) -> Result<()> {
        let fresh: Vec<InboxMessage> = new
            .into_iter()
            .filter(|m| !self.records.seen(&m.key()))
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = fresh.iter().map(InboxMessage::key).collect();
        Mailbox::new(self.store, self.team).relay_in(member, fresh)?;
        self.records.mark_seen(keys.iter().map(String::as_str))
    }

    /// Home's version of task `id` (`None`: deleted), unless a change of ours is on its way.
    fn task(&mut self, id: &TaskId, task: Option<Value>) -> Result<()> {
        let busy = self.in_flight.values().any(|p| match p {
            Pending::Task { id: t, .. } | Pending::Create { local_id: t, .. } => t == id,
            _ => false,
        });
        if busy {
            self.stashed.insert(id.clone(), task);
            return Ok(());
        }
        let path = self.store.task_path(self.team, id);
        let _lock = FileLock::acquire(&path)?;
        let current: Option<Value> = fsio::read_json(&path).ok().flatten();
        let base = self.records.task_base(id);
        let changed_here = match (&current, &base) {
            (Some(c), Some(b)) => c != b,
            // A file with no base that home does not hold as it is: made here.
            (Some(c), None) => task.as_ref() != Some(c),
            _ => false,
        };
        if changed_here {
            // The next scan sends the change; home's version waits for its answer.
            self.stashed.insert(id.clone(), task);
            return Ok(());
        }
        self.write_task(id, current.as_ref(), task.as_ref())
    }

    /// Puts home's `task` in place of `current` (under the caller's lock) and makes it the base.
    pub(super) fn write_task(
        &self,
        id: &TaskId,
        current: Option<&Value>,
        task: Option<&Value>,
    ) -> Result<()> {
        let path = self.store.task_path(self.team, id);
        // The base first: killed in between, a base with no file is put back by the next
        // scan, where a file with no base would be taken for a task made here.
        self.records.set_task_base(id, task)?;
        match task {
            Some(t) if current != Some(t) => fsio::write_json(&path, t)?,
            Some(_) => {}
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
        Ok(())
    }

    /// Home answered operation `op`.
    fn answered(&mut self, op: &str, outcome: Outcome) -> Result<()> {
        let Some(pending) = self.in_flight.remove(op) else {
            return Ok(());
        };
        if let Outcome::Refused { reason } = &outcome {
            eprintln!("swarm relay: home refused {op}: {reason}");
        }
        match pending {
            Pending::Deliver { to, key, on_host } => {
                self.records.mark_seen([key.as_str()])?;
                if !on_host {
                    // Home has it now; here it is only a copy, marked so it is archived.
                    Mailbox::new(self.store, self.team).mark_delivered(&to, &[key])?;
                }
            }
            Pending::Delivered | Pending::Active => {}
            Pending::Task { id, sent } => {
                if let Outcome::Refused { reason } = &outcome {
                    self.tell_owner(&sent, &format!("Your change to task #{id} was not applied by the lead's machine: {reason}"))?;
                }
                self.settle(&id, Some(&sent), &outcome)?;
            }
            Pending::Create { local_id, sent } => {
                let path = self.store.task_path(self.team, &local_id);
                let _lock = FileLock::acquire(&path)?;
                let current: Option<Value> = fsio::read_json(&path).ok().flatten();
                match &outcome {
                    Outcome::Created { id } if *id == local_id => {}
                    _ => {
                        // Home gave it another id (that task comes down as such), or refused
                        // it: the copy made here under this id goes.
                        if current.as_ref() == Some(&sent) {
                            let _ = std::fs::remove_file(&path);
                        }
                        self.records.set_task_base(&local_id, None)?;
                    }
                }
                drop(_lock);
                if let Outcome::Refused { reason } = &outcome {
                    self.tell_owner(&sent, &format!("The task you created (#{local_id}) was not taken by the lead's machine: {reason}"))?;
                }
                if let Some(task) = self.stashed.remove(&local_id) {
                    self.task(&local_id, task)?;
                }
            }
            Pending::Claim { request } => {
                let answer = match outcome {
                    Outcome::Refused { reason } => super::claims::ClaimAnswer::Refused { reason },
                    _ => {
                        let task = self.claimed_task(op)?;
                        super::claims::ClaimAnswer::Granted { task }
                    }
                };
                super::claims::answer(self.store, self.team, &request, &answer)?;
            }
            Pending::Permission { id } => self.records.mark_seen([format!("p:{id}").as_str()])?,
        }
        Ok(())
    }

    /// The task a granted claim names, as the mirror now has it (home sent it before the
    /// answer).
    fn claimed_task(&self, op: &str) -> Result<Value> {
        let id: Option<TaskId> = op
            .strip_prefix("q:")
            .and_then(|rest| rest.split(':').nth(1))
            .and_then(|id| id.parse().ok());
        Ok(id
            .and_then(|id| {
                fsio::read_json::<Value>(&self.store.task_path(self.team, &id))
                    .ok()
                    .flatten()
            })
            .unwrap_or(Value::Null))
    }

    /// After home answered a change of task `id` (sent as `sent`): home's version, stashed
    /// while we waited, goes in unless the file changed again meanwhile (then it becomes the
    /// base, and the next scan sends the newer change).
    fn settle(&mut self, id: &TaskId, sent: Option<&Value>, outcome: &Outcome) -> Result<()> {
        let path = self.store.task_path(self.team, id);
        let _lock = FileLock::acquire(&path)?;
        let current: Option<Value> = fsio::read_json(&path).ok().flatten();
        let untouched = current.as_ref() == sent;
        match self.stashed.remove(id) {
            Some(home) if untouched => self.write_task(id, current.as_ref(), home.as_ref()),
            Some(home) => self.records.set_task_base(id, home.as_ref()),
            // Home sent nothing new: what we sent is what it holds (done), or its base stands
            // (refused) and goes back in place.
            None => match outcome {
                Outcome::Refused { .. } if untouched => {
                    let base = self.records.task_base(id);
                    self.write_task(id, current.as_ref(), base.as_ref())
                }
                Outcome::Refused { .. } => Ok(()),
                _ => self.records.set_task_base(id, sent),
            },
        }
    }

    /// A note from `system` to the member of this host a task change came from, in its inbox
    /// here (never sent home: it is not from a member).
    fn tell_owner(&self, task: &Value, text: &str) -> Result<()> {
        let Some(owner) = task.get("owner").and_then(Value::as_str) else {
            return Ok(());
        };
        let Ok(owner) = owner.parse::<AgentName>() else {
            return Ok(());
        };
        let note = InboxMessage::new(&AgentName::system(), text);
        Mailbox::new(self.store, self.team).relay_in(&owner, vec![note])?;
        Ok(())
    }
}

/// The `isActive` of member `name` in roster `config`.
fn active_of(config: Option<&Value>, name: &str) -> Option<bool> {
    config?
        .get("members")?
        .as_array()?
        .iter()
        .find(|m| m.get("name").and_then(Value::as_str) == Some(name))?
        .get("isActive")?
        .as_bool()
}

fn member_mut<'v>(config: &'v mut Value, name: &str) -> Option<&'v mut Map<String, Value>> {
    config
        .get_mut("members")?
        .as_array_mut()?
        .iter_mut()
        .filter_map(Value::as_object_mut)
        .find(|m| m.get("name").and_then(Value::as_str) == Some(name))
}
