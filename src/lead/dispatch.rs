//! Handing tasks to idle Claude Code teammates, on the lead's side.
//!
//! swarm's own runtime claims the next available task whenever its agent is idle, but a native
//! `claude` teammate never claims one by itself (Claude Code 2.1.328, PROTOCOL.md section 7): it
//! sits idle with tasks pending. So the lead does it for them. A claude teammate is handed a task
//! when its state is `idle` (`lifecycle::state`: it runs and owns no unfinished task) and its
//! roster entry says `isActive: false` (Claude writes that every time it finishes a turn, next
//! to its `idle_notification`, so the assignment waits for the turn to end). For each such
//! teammate, [`dispatch`] claims the lowest available task for it through the lead's task index
//! with the busy check (under the list lock and the task lock, so it never owns two unfinished
//! tasks and two dispatchers can never both win one task), then sends it a `task_assignment`
//! from the lead, signed like every lead entry. The claim happens once per task, so the
//! assignment is sent once per task; a teammate that owns an unfinished task is busy and gets
//! nothing, whatever its `isActive` says. Tasks a claude teammate claims
//! itself with TaskUpdate already have an owner, so the `task_assignment` Claude then writes into
//! its own inbox is the only one.
//!
//! It is a plain function of the store so the lead console's loop and a future agent-lead
//! runtime can both call it on every pass. A lead killed between a claim and its announcement
//! leaves a record the next pass takes up ([`inflight`]).

mod inflight;

use serde_json::Map;

use crate::error::Result;
use crate::lifecycle::{self, MemberState};
use crate::store::colour::LEAD_COLOR;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{timestamp_now, Protocol, TaskAssignment};
use crate::store::roster::{Member, Roster};
use crate::store::tasks::{Task, TaskIndex};

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
pub(crate) fn dispatch(
    store: &Store,
    team: &TeamName,
    tasks: &mut TaskIndex,
) -> Result<Vec<Assigned>> {
    let mut assigned = inflight::recover(store, team)?;
    // The cheap check first: most passes have nothing to hand out, and then no pane is probed.
    if !tasks.any_available()? {
        return Ok(assigned);
    }
    let config = Roster::new(store, team).load()?;
    let owned: Vec<Task> = tasks.tasks().cloned().collect();
    for member in config.teammates().filter(|m| idle_claude(m)) {
        // Running and owning no unfinished task (the busy check below decides again, under
        // the list lock).
        if lifecycle::member_state(store, team, &config, member, &owned) != MemberState::Idle {
            continue;
        }
        let to = member.name.clone();
        let mut announcing = inflight::Inflight::begin(store, team, &to)?;
        let Some(task) = tasks.assign_next(&to)? else {
            announcing.done()?;
            continue;
        };
        announcing.claimed(&task.id)?;
        send_assignment(store, team, &to, &task)?;
        announcing.done()?;
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
