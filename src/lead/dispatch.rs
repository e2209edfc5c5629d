//! Handing tasks to idle Claude Code teammates, on the lead's side.
//!
//! swarm's own runtime claims the next available task whenever its agent is idle, but a native
//! `claude` teammate never claims one by itself (Claude Code 2.1.328, PROTOCOL.md section 7): it
//! sits idle with tasks pending. So the lead does it for them. A claude teammate is idle when its
//! roster entry says `isActive: false` (Claude writes that every time it finishes a turn, next to
//! its `idle_notification`) and its pane is alive. For each such teammate, [`dispatch`] claims
//! the lowest available task for it with the busy check (under the list lock and the task lock,
//! so it never owns two unfinished tasks and two dispatchers can never both win one task), then
//! sends it a `task_assignment` from the lead, signed like every lead entry. The claim happens
//! once per task, so the assignment is sent once per task; a teammate that owns an unfinished
//! task is busy and gets nothing, whatever its `isActive` says. Tasks a claude teammate claims
//! itself with TaskUpdate already have an owner, so the `task_assignment` Claude then writes into
//! its own inbox is the only one.
//!
//! It is a plain function of the store so the lead console's loop and a future agent-lead
//! runtime can both call it on every pass.

use serde_json::Map;

use crate::error::Result;
use crate::lifecycle;
use crate::store::colour::LEAD_COLOR;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{timestamp_now, Protocol, TaskAssignment};
use crate::store::roster::{Member, Roster};
use crate::store::tasks::{Task, TaskList};

/// A task handed to a teammate by one pass.
#[derive(Debug, Clone)]
pub(crate) struct Assigned {
    pub(crate) to: AgentName,
    pub(crate) task: Task,
}

/// The agent label `swarm launch` records for a native Claude Code teammate.
const CLAUDE_AGENT: &str = "claude";

/// Whether `member` is a native Claude Code teammate that says it is idle.
fn idle_claude(member: &Member) -> bool {
    member.agent_label() == Some(CLAUDE_AGENT) && member.is_active == Some(false)
}

/// One pass: every idle, live claude teammate that owns no unfinished task gets the lowest
/// available task, claimed for it and announced with a `task_assignment`. Returns what it
/// handed out.
pub(crate) fn dispatch(store: &Store, team: &TeamName) -> Result<Vec<Assigned>> {
    let tasks = TaskList::new(store, team);
    // The cheap check first: most passes have nothing to hand out, and then no pane is probed.
    if tasks.available()?.is_empty() {
        return Ok(vec![]);
    }
    let config = Roster::new(store, team).load()?;
    let mut assigned = Vec::new();
    for member in config.teammates().filter(|m| idle_claude(m)) {
        if lifecycle::member_health(store, team, member)?.dead {
            continue;
        }
        let to = member.name.clone();
        let Some(task) = tasks.claim_next(&to, true)? else {
            continue;
        };
        send_assignment(store, team, &to, &task)?;
        assigned.push(Assigned { to, task });
    }
    Ok(assigned)
}

/// The `task_assignment` in exactly the fields Claude writes itself; the summary is the one
/// readable line the teammate's model sees next to the raw JSON.
fn send_assignment(store: &Store, team: &TeamName, to: &AgentName, task: &Task) -> Result<()> {
    let lead = AgentName::lead();
    let message = Protocol::TaskAssignment(TaskAssignment {
        task_id: task.id.to_string(),
        subject: task.subject.clone(),
        description: task.description.clone(),
        assigned_by: lead.to_string(),
        timestamp: timestamp_now(),
        extra: Map::new(),
    });
    let envelope = InboxMessage::protocol(&lead, &message)
        .with_color(Some(LEAD_COLOR.into()))
        .with_summary(Some(format!(
            "Task #{} is yours: {}. Do it, then mark it completed with TaskUpdate.",
            task.id, task.subject
        )));
    Mailbox::new(store, team).send(to, envelope)
}
