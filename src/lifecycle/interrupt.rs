//! Interrupting a teammate's running turn and keeping the teammate (`swarm interrupt`, the lead
//! console's `/interrupt`): the lead side of `interrupt_request` (PROTOCOL.md section 7c).
//!
//! The request goes to the teammate's inbox, signed as every lead control message is; the
//! teammate's runtime stops the turn, ends its task as asked and answers with an
//! `idle_notification` (`idleReason: "interrupted"`) naming the request, which is waited for
//! here when the caller can wait. Only a swarm runtime understands the request: a member
//! without one running (a `claude` teammate, which Claude Code's protocol gives no interrupt
//! message, or one that is not running) is refused up front, with what works instead.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::store::colour::LEAD_COLOR;
use crate::store::liveness::{self, Liveness};
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TaskId, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{
    interrupt_request_id, timestamp_now, AfterInterrupt, InterruptRequest, Payload, Protocol,
    INTERRUPTED, REQUEST_ID_FIELD,
};
use crate::store::roster::Member;
use crate::store::watcher::DirWatcher;

/// What to interrupt, what becomes of its task, and how long to wait for the answer.
#[derive(Debug, Clone, Default)]
pub(crate) struct InterruptOptions {
    /// Interrupt only a turn on this task.
    pub task: Option<TaskId>,
    pub then: AfterInterrupt,
    pub reason: Option<String>,
    /// `None`: send and return (the console, which shows the answer when it comes).
    pub wait: Option<Duration>,
}

/// A sent interrupt request, and the teammate's answer if it came within the wait.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Interrupted {
    pub name: String,
    pub request_id: String,
    /// What the teammate said it did ("turn interrupted; task #3 went back to pending").
    pub answer: Option<String>,
}

pub(crate) fn interrupt(
    store: &Store,
    team: &TeamName,
    member: &Member,
    opts: &InterruptOptions,
) -> Result<Interrupted> {
    let name = &member.name;
    if member.is_lead() {
        return Err(Error::usage(
            "the lead's turns are not interrupted with `swarm interrupt`; name a teammate",
        ));
    }
    if liveness::probe(store, team, name)? != Liveness::Alive {
        return Err(Error::usage(format!(
            "{name} has no swarm runtime running, so nothing can take an interrupt request: a \
             `claude` teammate has no such message in Claude Code's protocol (press Esc in its \
             pane, `swarm attach {name}`), and a stopped teammate has no turn; `swarm shutdown \
             {name}` or `swarm kill {name}` stop a teammate whole"
        )));
    }
    let request_id = interrupt_request_id(name);
    let request = Protocol::InterruptRequest(InterruptRequest {
        request_id: request_id.clone(),
        from: crate::store::names::LEAD.into(),
        task_id: opts.task.as_ref().map(ToString::to_string),
        then: opts.then,
        reason: opts.reason.clone(),
        timestamp: timestamp_now(),
        extra: Default::default(),
    });
    let message =
        InboxMessage::protocol(&AgentName::lead(), &request).with_color(Some(LEAD_COLOR.into()));
    Mailbox::new(store, team).send(name, message)?;
    let answer = match opts.wait {
        Some(limit) => wait_for_answer(store, team, name, &request_id, limit)?,
        None => None,
    };
    Ok(Interrupted {
        name: name.to_string(),
        request_id,
        answer,
    })
}

/// Waits up to `limit` for `name`'s interrupted `idle_notification` naming `request_id` in the
/// lead's inbox (read or not: a lead console may have shown it already); its summary.
fn wait_for_answer(
    store: &Store,
    team: &TeamName,
    name: &AgentName,
    request_id: &str,
    limit: Duration,
) -> Result<Option<String>> {
    let watcher = DirWatcher::new(&store.inboxes_dir(team))?;
    let until = Instant::now() + limit;
    loop {
        let lead = Mailbox::new(store, team).read(&AgentName::lead(), false)?;
        let answer = lead
            .iter()
            .filter(|m| m.from == name.as_str())
            .find_map(|m| {
                let Payload::Protocol(p) = m.payload() else {
                    return None;
                };
                let Protocol::IdleNotification(idle) = *p else {
                    return None;
                };
                let names_it =
                    idle.extra.get(REQUEST_ID_FIELD).and_then(|v| v.as_str()) == Some(request_id);
                (names_it && idle.idle_reason.as_deref() == Some(INTERRUPTED))
                    .then(|| idle.summary.unwrap_or_default())
            });
        if answer.is_some() || Instant::now() >= until {
            return Ok(answer);
        }
        watcher.wait(Some(until.min(Instant::now() + Duration::from_millis(500))));
    }
}
