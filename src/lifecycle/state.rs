//! A member's state, judged once and named by one word: `busy`, `idle`, `stopped`, `dead` or
//! `unknown` ([`MemberState`]).
//!
//! Every view asks here and renders the value it gets: `swarm status` (its table, `--json` and
//! `--watch` lines), `swarm top`, `team show`, `team list` and the census behind it, the lead
//! console's `/status`; and the decisions that depend on it (prune, the lead's dispatcher) match
//! on it. None of them reads a state back out of another's display text.
//!
//! It rests on three things, each from where it is true: whether the member runs is its health
//! ([`Runs`]: liveness lock, pane, pid; the recorded `leadProcess` for a Claude Code lead);
//! stopped or dead is the roster's retired mark (swarm shut it down, killed or reaped it, or
//! nobody did); busy or idle is the task list. Busy means it owns a task it has not finished:
//! the same rule by which a claimer with the busy check is refused another task
//! ([`Task::unfinished_by`]), so an idle member is one that would be given work. It is not the
//! roster's `isActive`: Claude Code flips that on every turn of its own teammates, but swarm's
//! runtimes never write it, so it said "busy" for ever of a shell teammate that had finished.

use std::fmt;

use super::health::{lead_health, member_health, Ended, Health, Runs, Unsure};
use crate::store::names::{TaskId, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::truncate;
use crate::store::roster::{Member, TeamConfig, CLAUDE_LEAD_PANE};
use crate::store::tasks::{Task, TaskStatus};

/// Where a member stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MemberState {
    /// Runs and owns this unfinished task (the one in progress, if it has one).
    Busy(TaskId),
    /// Runs and owns no unfinished task.
    Idle,
    /// Does not run, and swarm retired it: shut down, killed, or found dead and reaped.
    Stopped(Ended),
    /// Does not run, though nobody retired it: crashed, or its pane went away unseen (what
    /// `swarm prune` retires).
    Dead(Ended),
    /// Nothing swarm can look at says whether it runs: never called dead, never acted on.
    Unknown(Unsure),
}

impl MemberState {
    /// The state of `member`, given whether it runs and the team's tasks.
    pub(crate) fn new(member: &Member, runs: Runs, tasks: &[Task]) -> MemberState {
        match runs {
            Runs::Yes => match current_task(tasks, member.name.as_str()) {
                Some(task) => MemberState::Busy(task.id.clone()),
                None => MemberState::Idle,
            },
            Runs::No(ended) if member.retired() => MemberState::Stopped(ended),
            Runs::No(ended) => MemberState::Dead(ended),
            Runs::Unknown(why) => MemberState::Unknown(why),
        }
    }

    /// The one word for it, in every view and in `--json`.
    pub(crate) fn word(&self) -> &'static str {
        match self {
            MemberState::Busy(_) => "busy",
            MemberState::Idle => "idle",
            MemberState::Stopped(_) => "stopped",
            MemberState::Dead(_) => "dead",
            MemberState::Unknown(_) => "unknown",
        }
    }

    /// What the word leaves out, when it says something: how a dead member ended, the exit
    /// status of a stopped one (not a pane closed on purpose), why nobody can tell.
    pub(crate) fn why(&self) -> Option<String> {
        match self {
            MemberState::Busy(_) | MemberState::Idle => None,
            MemberState::Stopped(e @ (Ended::Exit(_) | Ended::Signal(_))) => Some(e.to_string()),
            MemberState::Stopped(_) => None,
            MemberState::Dead(e) => Some(e.to_string()),
            MemberState::Unknown(why) => Some(why.to_string()),
        }
    }

    /// The exit code and signal it ended with, when its pane kept them.
    pub(crate) fn exit(&self) -> (Option<i32>, Option<i32>) {
        match self {
            MemberState::Stopped(e) | MemberState::Dead(e) => match *e {
                Ended::Exit(code) => (Some(code), None),
                Ended::Signal(signal) => (None, Some(signal)),
                _ => (None, None),
            },
            _ => (None, None),
        }
    }

    /// The fields `--json` gives it: `state` (the word), `why`, `exitCode`, `signal`.
    pub(crate) fn json(&self) -> serde_json::Value {
        let (code, signal) = self.exit();
        serde_json::json!({"state": self.word(), "why": self.why(), "exitCode": code,
            "signal": signal})
    }
}

/// `busy`, `dead (exit 3)`, `unknown (no tmux server recorded)`: the word, then the why.
impl fmt::Display for MemberState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.why() {
            Some(why) => write!(f, "{} ({why})", self.word()),
            None => f.write_str(self.word()),
        }
    }
}

/// The task `name` is on: the unfinished one it owns, the one in progress first.
pub(crate) fn current_task<'t>(tasks: &'t [Task], name: &str) -> Option<&'t Task> {
    let mut owned = tasks.iter().filter(|t| t.unfinished_by(name));
    let first = owned.clone().next();
    owned.find(|t| t.status == TaskStatus::InProgress).or(first)
}

/// Judges one member of `config`: its health (`None` when there is nothing to probe, or
/// probing failed) and the state it adds up to.
pub(crate) fn judge(
    store: &Store,
    team: &TeamName,
    config: &TeamConfig,
    member: &Member,
    tasks: &[Task],
) -> (Option<Health>, MemberState) {
    let lead_process = member.is_lead().then(|| config.lead_process()).flatten();
    let (health, runs) = if let Some(process) = lead_process {
        // A Claude Code lead runs in the user's terminal: its recorded process says.
        (None, lead_health(&process).runs)
    } else if member.is_lead()
        && (member.tmux_pane_id.is_empty() || member.tmux_pane_id == CLAUDE_LEAD_PANE)
    {
        // A lead with no pane of its own (swarm's in a shell, Claude's `leader`).
        (None, Runs::Unknown(Unsure::NoPane))
    } else {
        match member_health(store, team, member) {
            Ok(h) => {
                let runs = h.runs.clone();
                (Some(h), runs)
            }
            Err(e) => (
                None,
                Runs::Unknown(Unsure::Unreadable(truncate(&e.to_string(), 40))),
            ),
        }
    };
    (health, MemberState::new(member, runs, tasks))
}

/// The state of one member of `config`.
pub(crate) fn member_state(
    store: &Store,
    team: &TeamName,
    config: &TeamConfig,
    member: &Member,
    tasks: &[Task],
) -> MemberState {
    judge(store, team, config, member, tasks).1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::names::AgentName;

    fn task(id: u64, owner: Option<&str>, status: TaskStatus) -> Task {
        Task {
            id: TaskId::new(id),
            subject: format!("t{id}"),
            description: String::new(),
            active_form: None,
            owner: owner.map(str::to_string),
            status,
            blocks: vec![],
            blocked_by: vec![],
            metadata: Default::default(),
            extra: Default::default(),
        }
    }

    #[test]
    fn busy_is_an_unfinished_task_owned_and_the_rest_is_the_verdict_and_the_retired_mark() {
        let team: TeamName = "t".parse().unwrap();
        let name: AgentName = "coder".parse().unwrap();
        let mut m = Member::teammate(&team, &name, "blue", "/");
        // The roster's busy flag plays no part.
        m.is_active = Some(true);
        let tasks = vec![
            task(1, Some("coder"), TaskStatus::Completed),
            task(2, Some("other"), TaskStatus::InProgress),
        ];
        assert_eq!(MemberState::new(&m, Runs::Yes, &tasks), MemberState::Idle);
        assert_eq!(MemberState::new(&m, Runs::Yes, &tasks).to_string(), "idle");
        let mut tasks = tasks;
        tasks.push(task(3, Some("coder"), TaskStatus::Pending));
        tasks.push(task(4, Some("coder"), TaskStatus::InProgress));
        let busy = MemberState::new(&m, Runs::Yes, &tasks);
        assert_eq!(
            busy,
            MemberState::Busy(TaskId::new(4)),
            "the one in progress"
        );
        assert_eq!(current_task(&tasks, "coder").unwrap().id, TaskId::new(4));

        let dead = MemberState::new(&m, Runs::No(Ended::Exit(3)), &tasks);
        assert_eq!(dead.to_string(), "dead (exit 3)");
        assert_eq!(dead.exit(), (Some(3), None));
        m.retire();
        let closed = MemberState::new(&m, Runs::No(Ended::PaneGone), &tasks);
        assert_eq!(closed.to_string(), "stopped");
        let crashed = MemberState::new(&m, Runs::No(Ended::Signal(9)), &tasks);
        assert_eq!(crashed.to_string(), "stopped (signal 9)");
        let unsure = MemberState::new(&m, Runs::Unknown(Unsure::NoServer), &tasks);
        assert_eq!(unsure.to_string(), "unknown (no tmux server recorded)");
        assert_eq!(unsure.json()["state"], "unknown");
    }
}
