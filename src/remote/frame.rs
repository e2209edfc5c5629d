//! The relay's wire: one JSON object per line over the ssh connection's standard input (home to
//! the remote host, [`Down`]) and standard output (back, [`Up`]).
//!
//! Home sends state, never commands: the roster, each of the host's members' unread inbox
//! entries, every task, the decisions on the host's permission requests. Each is idempotent (a
//! task by id, an entry by its key), so sending it again after a break is harmless. The relay
//! sends [`Op`]s, each with an id derived from what it says (the `msg_id`, the task and the
//! change, the request id), so the same operation found again in the mirror after a break has
//! the same id; home answers each with an [`Outcome`] once it is applied (or refused for good).
//! `Sync` and `Synced` mark a point: everything home sent before `Sync` is in the mirror when
//! `Synced` comes back, which is what a launch waits for before it starts a remote teammate.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::store::machine::Machine;
use crate::store::mailbox::InboxMessage;
use crate::store::names::{AgentName, TaskId, TeamName};
use crate::store::tasks::TaskStatus;

use super::Host;

/// The version both ends must run: the crate's own.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Home to the remote host.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "camelCase")]
pub(crate) enum Down {
    #[serde(rename_all = "camelCase")]
    Hello {
        version: String,
        team: TeamName,
        /// The host as the lead's machine calls it.
        host: Host,
        home: Machine,
        now_ms: u64,
        /// The members placed on this host.
        members: Vec<AgentName>,
    },
    /// The lead's roster, as parsed there.
    Roster {
        config: Value,
    },
    /// A member's unread keys at home, and the entries of them not sent on this connection yet.
    Inbox {
        member: AgentName,
        unread: Vec<String>,
        new: Vec<InboxMessage>,
    },
    /// A task as home has it; `None` when it was deleted.
    Task {
        id: TaskId,
        task: Option<Value>,
    },
    #[serde(rename = "highWater")]
    HighWater {
        n: u64,
    },
    /// The decision on a permission request of one of the host's members.
    Resolved {
        id: String,
        record: Value,
    },
    Answer {
        op: String,
        outcome: Outcome,
    },
    Sync {
        mark: u64,
    },
    #[serde(rename_all = "camelCase")]
    Ping {
        now_ms: u64,
    },
}

/// The remote host to home.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "camelCase")]
pub(crate) enum Up {
    #[serde(rename_all = "camelCase")]
    Hello {
        version: String,
        machine: Machine,
        now_ms: u64,
        /// The mirror's root on the remote host.
        root: String,
    },
    Op {
        op: String,
        body: Op,
    },
    Synced {
        mark: u64,
    },
    /// How each of the host's members is doing there.
    Report {
        members: BTreeMap<String, Life>,
    },
    #[serde(rename_all = "camelCase")]
    Pong {
        now_ms: u64,
        echo: u64,
    },
}

/// What a remote member wrote, as a request to home.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub(crate) enum Op {
    /// A message a member of the host wrote into `to`'s inbox.
    Deliver {
        to: AgentName,
        message: InboxMessage,
    },
    /// Entries of a member's inbox it has read (or Claude Code removed once read).
    Delivered {
        member: AgentName,
        keys: Vec<String>,
    },
    /// A change a member made to a task file.
    #[serde(rename_all = "camelCase")]
    TaskChange {
        id: TaskId,
        by: AgentName,
        change: TaskChange,
    },
    /// A task a member created in the mirror under `local_id`.
    #[serde(rename_all = "camelCase")]
    TaskCreate {
        by: AgentName,
        local_id: TaskId,
        subject: String,
        description: String,
        active_form: Option<String>,
        blocked_by: Vec<TaskId>,
    },
    /// A runtime's claim of `task`, decided at home.
    Claim {
        member: AgentName,
        task: TaskId,
        request: String,
    },
    /// A member's own `isActive` (busy), as Claude Code flips it.
    Active { member: AgentName, active: bool },
    /// A permission request file a member wrote (`permissions/pending/<id>.json`).
    Permission { record: Value },
}

/// The fields of a task a member changed, each as it now is in the mirror.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskChange {
    /// `Some(None)`: the owner was cleared (sent as `null`, told apart from "unchanged").
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) owner: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<TaskStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) subject: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) active_form: Option<String>,
    /// Keys set (a `null` value: removed).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub(crate) metadata: Map<String, Value>,
}

impl TaskChange {
    pub(crate) fn is_empty(&self) -> bool {
        *self == TaskChange::default()
    }
}

/// A field that is present, even as `null`, is `Some`.
fn present<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// Home's answer to one [`Op`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "camelCase")]
pub(crate) enum Outcome {
    Done,
    /// A [`Op::TaskCreate`]: the id home gave the task.
    Created {
        id: TaskId,
    },
    /// Not applied, and never will be (replaying it gets the same answer): the member may not
    /// write that, or a claim lost.
    Refused {
        reason: String,
    },
}

/// A remote member's state as its host sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub(crate) enum Life {
    Alive,
    Dead {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
    },
    Unknown,
}

/// Writes one frame as a line and flushes it.
pub(crate) fn send<T: Serialize>(out: &mut impl Write, frame: &T) -> Result<()> {
    let mut line = serde_json::to_vec(frame).map_err(|e| Error::Backend(e.to_string()))?;
    trace("sent", &line);
    line.push(b'\n');
    out.write_all(&line)
        .and_then(|()| out.flush())
        .map_err(|e| Error::Backend(format!("the relay connection broke: {e}")))
}

/// With `SWARM_RELAY_TRACE=1`, every frame a link or relay sends or reads goes to its error
/// output (the link's log), cut to 300 characters, after this machine's clock in ms: what to
/// look at when a host misbehaves.
fn trace(what: &str, line: &[u8]) {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *ON.get_or_init(|| std::env::var_os("SWARM_RELAY_TRACE").is_some_and(|v| v == "1")) {
        let text: String = String::from_utf8_lossy(line).chars().take(300).collect();
        eprintln!(
            "swarm trace: {} {what} {text}",
            crate::store::fsio::now_ms()
        );
    }
}

/// Reads frames from `input` on this thread until it ends, handing each to `deliver`; a line
/// that is not a frame ends the stream with an error (the other end is not this swarm).
pub(crate) fn read_all<T: for<'de> Deserialize<'de>>(
    input: impl BufRead,
    mut deliver: impl FnMut(std::result::Result<T, String>) -> bool,
) {
    for line in input.lines() {
        let frame = match line {
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => {
                trace("read", line.as_bytes());
                serde_json::from_str(&line).map_err(|e| {
                    let cut: String = line.chars().take(120).collect();
                    format!("not a relay frame ({e}): {cut}")
                })
            }
            Err(e) => Err(format!("the relay connection broke: {e}")),
        };
        let bad = frame.is_err();
        if !deliver(frame) || bad {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_as_one_line_each() {
        let op = Up::Op {
            op: "d:1".into(),
            body: Op::TaskChange {
                id: TaskId::new(3),
                by: "coder".parse().unwrap(),
                change: TaskChange {
                    owner: Some(None),
                    status: Some(TaskStatus::Pending),
                    ..TaskChange::default()
                },
            },
        };
        let mut buf = Vec::new();
        send(&mut buf, &op).unwrap();
        assert_eq!(buf.iter().filter(|b| **b == b'\n').count(), 1);
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(
            text.contains(r#""owner":null"#),
            "a released owner travels: {text}"
        );
        let mut got = Vec::new();
        read_all::<Up>(&buf[..], |f| {
            got.push(f);
            true
        });
        match &got[..] {
            [Ok(Up::Op {
                body: Op::TaskChange { change, .. },
                ..
            })] => assert_eq!(change.owner, Some(None)),
            other => panic!("{other:?}"),
        }
        let mut bad = Vec::new();
        read_all::<Up>(&b"hello\n{}\n"[..], |f| {
            bad.push(f);
            true
        });
        assert_eq!(bad.len(), 1, "a stranger's line ends the stream");
    }
}
