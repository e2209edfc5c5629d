//! What home sends a host: the frames that bring its mirror up to the home store.
//!
//! Each round reads the home files a mirror follows (the roster, the unread entries of the
//! host's members' inboxes, every task and the high-water mark, the decisions on the host's
//! members' permission requests) and returns what this connection has not carried yet, noting
//! it in [`Sent`]; a new connection starts from nothing and so sends everything again, which
//! the relay takes idempotently. After an operation only what it can have changed ([`Scope`])
//! is read again.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use super::frame::{Down, Op};
use super::{host_of, Host};
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::mailbox::Mailbox;
use crate::store::names::{AgentName, TaskId, TeamName};
use crate::store::paths::Store;
use crate::store::requests::Permissions;
use crate::store::roster::{Roster, TeamConfig};
use crate::store::tasks::TaskList;

/// What this connection has carried, so a round sends only what changed.
#[derive(Default)]
pub(super) struct Sent {
    roster: Option<Value>,
    /// Per member: the unread keys last sent, and every entry key sent.
    inbox: HashMap<String, (Vec<String>, HashSet<String>)>,
    tasks: BTreeMap<TaskId, Value>,
    high_water: u64,
    resolved: HashSet<String>,
}

/// The frames that bring the mirror up to home, within `scope`, noted in `sent`.
pub(super) fn changes(
    store: &Store,
    team: &TeamName,
    host: &Host,
    sent: &mut Sent,
    scope: Scope,
) -> Result<Vec<Down>> {
    let mut frames = Vec::new();
    let config = Roster::new(store, team).load()?;
    let members = members_on(&config, host);
    if matches!(scope, Scope::All | Scope::Roster) {
        let value = serde_json::to_value(&config).map_err(|e| Error::Backend(e.to_string()))?;
        if sent.roster.as_ref() != Some(&value) {
            sent.roster = Some(value.clone());
            frames.push(Down::Roster { config: value });
        }
    }
    let mailbox = Mailbox::new(store, team);
    for m in &members {
        if !(matches!(scope, Scope::All) || scope == Scope::Inbox(m.clone())) {
            continue;
        }
        let unread: Vec<_> = mailbox.read(m, true)?;
        let keys: Vec<String> = unread.iter().map(|e| e.key()).collect();
        let (last, sent_keys) = sent.inbox.entry(m.to_string()).or_default();
        let new: Vec<_> = unread
            .into_iter()
            .filter(|e| !sent_keys.contains(&e.key()))
            .collect();
        if new.is_empty() && *last == keys {
            continue;
        }
        sent_keys.extend(new.iter().map(|e| e.key()));
        *last = keys.clone();
        frames.push(Down::Inbox {
            member: m.clone(),
            unread: keys,
            new,
        });
    }
    if matches!(scope, Scope::All | Scope::Tasks) {
        let tasks = TaskList::by_stat(store, team).list()?;
        let mut now = BTreeMap::new();
        for t in tasks {
            let v = serde_json::to_value(&t).map_err(|e| Error::Backend(e.to_string()))?;
            now.insert(t.id, v);
        }
        for (id, v) in &now {
            if sent.tasks.get(id) != Some(v) {
                frames.push(Down::Task {
                    id: id.clone(),
                    task: Some(v.clone()),
                });
            }
        }
        for id in sent.tasks.keys().filter(|id| !now.contains_key(*id)) {
            frames.push(Down::Task {
                id: id.clone(),
                task: None,
            });
        }
        sent.tasks = now;
        let hwm = fsio::read_file(&store.highwatermark_path(team))?
            .and_then(|b| String::from_utf8_lossy(&b).trim().parse::<u64>().ok())
            .unwrap_or(0);
        if hwm > sent.high_water {
            sent.high_water = hwm;
            frames.push(Down::HighWater { n: hwm });
        }
    }
    if matches!(scope, Scope::All) {
        for r in Permissions::new(store, team).resolved()? {
            let ours = members.iter().any(|m| m.as_str() == r.worker_name);
            if ours && !sent.resolved.contains(&r.id) {
                sent.resolved.insert(r.id.clone());
                let record = serde_json::to_value(&r).map_err(|e| Error::Backend(e.to_string()))?;
                frames.push(Down::Resolved {
                    id: r.id.clone(),
                    record,
                });
            }
        }
    }
    Ok(frames)
}

/// What an operation can change at home, so only that is sent after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Scope {
    All,
    Roster,
    Tasks,
    Inbox(AgentName),
    Nothing,
}

impl Scope {
    pub(super) fn of(op: &Op) -> Scope {
        match op {
            Op::Deliver { to, .. } => Scope::Inbox(to.clone()),
            Op::Delivered { member, .. } => Scope::Inbox(member.clone()),
            Op::TaskChange { .. } | Op::TaskCreate { .. } | Op::Claim { .. } => Scope::Tasks,
            Op::Active { .. } => Scope::Roster,
            Op::Permission { .. } => Scope::Nothing,
        }
    }
}

/// The members of `config` placed on `host`.
pub(crate) fn members_on(config: &TeamConfig, host: &Host) -> Vec<AgentName> {
    config
        .teammates()
        .filter(|m| host_of(m).as_ref() == Some(host))
        .map(|m| m.name.clone())
        .collect()
}
