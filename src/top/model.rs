//! What the dashboard shows, read from the store in one pass: the members with their health,
//! current task, last line and unread count; the task DAG with its progress; the requests
//! waiting for the lead.
//!
//! A member's state comes from `lifecycle::member_health` (its liveness lock, its pane or
//! process), never from `isActive`, which says whether a Claude Code teammate is busy, not
//! whether it runs. Everything here is plain data, so the view draws it and the line printer
//! (`lines`) diffs two of them without touching the store again.

use crate::backend::PaneState;
use crate::error::Result;
use crate::lifecycle;
use crate::store::liveness::Liveness;
use crate::store::mailbox::Mailbox;
use crate::store::memory::{Figures, TeamMemory};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::roster::{Member, Roster};
use crate::store::tasks::{Task, TaskList, TaskStatus};
use crate::store::usage::TeamUsage;

use super::last_line::{last_line, message_line};
use crate::store::requests::{self, Request};

/// One reading of the team.
#[derive(Debug, Clone)]
pub(crate) struct Model {
    pub(crate) team: TeamName,
    pub(crate) description: String,
    pub(crate) members: Vec<MemberRow>,
    pub(crate) tasks: Vec<TaskRow>,
    pub(crate) progress: Progress,
    pub(crate) requests: Vec<Request>,
    /// The team memory's figures (`swarm memory`), or why they cannot be read.
    pub(crate) memory: Option<std::result::Result<Figures, String>>,
    /// Tokens and estimated cost, one line (`store::usage`).
    pub(crate) usage: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemberRow {
    pub(crate) name: String,
    pub(crate) color: String,
    pub(crate) state: State,
    /// `#3 subject` of the task it has in progress.
    pub(crate) task: Option<String>,
    /// The last line of its output, else of the last message it sent the lead.
    pub(crate) last: Option<String>,
    pub(crate) unread: usize,
}

/// Whether a member runs, as far as its lock and its pane tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum State {
    /// The lead without a pane of its own (the user's shell).
    Lead,
    Alive,
    /// Why it is judged dead: `exit 3`, `signal 9`, `pane gone`, `process gone`.
    Dead(String),
    /// Nothing tells either way (no lock, no pane swarm knows), or reading it failed.
    Unknown(String),
}

impl State {
    pub(crate) fn text(&self) -> String {
        match self {
            State::Lead => "lead".into(),
            State::Alive => "alive".into(),
            State::Dead(why) => format!("dead ({why})"),
            State::Unknown(why) if why.is_empty() => "unknown".into(),
            State::Unknown(why) => format!("unknown ({why})"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskRow {
    pub(crate) id: String,
    pub(crate) subject: String,
    pub(crate) status: TaskStatus,
    pub(crate) owner: Option<String>,
    /// Blockers not completed yet.
    pub(crate) waiting_on: Vec<String>,
    /// Failed by a teammate and parked (`swarmFailed`).
    pub(crate) failed: bool,
}

impl TaskRow {
    /// `completed`, `in_progress`, `failed`, `blocked`, `available` or `pending` (owned, not
    /// started).
    pub(crate) fn phase(&self) -> &'static str {
        match self.status {
            TaskStatus::Completed => "completed",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Pending if self.failed => "failed",
            TaskStatus::Pending if !self.waiting_on.is_empty() => "blocked",
            TaskStatus::Pending if self.owner.is_none() => "available",
            TaskStatus::Pending => "pending",
        }
    }
}

/// Counts over the task list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Progress {
    pub(crate) total: usize,
    pub(crate) completed: usize,
    pub(crate) in_progress: usize,
    pub(crate) blocked: usize,
    pub(crate) available: usize,
    pub(crate) failed: usize,
}

impl Progress {
    pub(crate) fn text(&self) -> String {
        format!(
            "{}/{} done, {} in progress, {} available, {} blocked{}",
            self.completed,
            self.total,
            self.in_progress,
            self.available,
            self.blocked,
            if self.failed > 0 {
                format!(", {} failed", self.failed)
            } else {
                String::new()
            }
        )
    }
}

impl Model {
    /// The team memory line: `3 topics, last written by coder at ...`.
    pub(crate) fn memory_text(&self) -> Option<String> {
        self.memory.as_ref().map(|m| match m {
            Ok(f) => f.text(),
            Err(e) => format!("unreadable: {e}"),
        })
    }

    /// Reads the roster, the members' health, the tasks and the open requests; with
    /// `last_lines`, also each member's last line of output (which asks tmux for tmux panes).
    pub(crate) fn load(store: &Store, team: &TeamName, last_lines: bool) -> Result<Model> {
        let config = Roster::new(store, team).load()?;
        let tasks = TaskList::new(store, team).list()?;
        let mailbox = Mailbox::new(store, team);
        let lead_inbox = mailbox.read(&AgentName::lead(), false)?;
        let members = config
            .members
            .iter()
            .map(|m| {
                let unread = m
                    .name
                    .parse::<AgentName>()
                    .ok()
                    .and_then(|n| mailbox.read(&n, true).ok())
                    .map_or(0, |v| v.len());
                let output = if last_lines {
                    last_line(store, team, m)
                } else {
                    None
                };
                let last = output.or_else(|| {
                    lead_inbox
                        .iter()
                        .rev()
                        .find(|msg| msg.from == m.name)
                        .map(message_line)
                });
                MemberRow {
                    name: m.name.clone(),
                    color: m.color_or_default().to_string(),
                    state: state_of(store, team, m),
                    task: tasks
                        .iter()
                        .find(|t| {
                            t.owner.as_deref() == Some(&m.name)
                                && t.status == TaskStatus::InProgress
                        })
                        .map(|t| format!("#{} {}", t.id, t.subject)),
                    last,
                    unread,
                }
            })
            .collect();
        let rows = task_rows(&tasks);
        Ok(Model {
            team: team.clone(),
            description: config.description.clone(),
            members,
            progress: progress(&rows),
            tasks: rows,
            requests: requests::pending_in(store, team, &lead_inbox)?,
            memory: TeamMemory::of_team(store, &config)
                .map(|m| m.figures().map_err(|e| e.to_string())),
            usage: TeamUsage::read(store, team, &config)
                .map_or_else(|e| format!("usage unknown: {e}"), |u| u.summary()),
        })
    }
}

fn state_of(store: &Store, team: &TeamName, m: &Member) -> State {
    if m.is_lead() && m.tmux_pane_id.is_empty() {
        return State::Lead;
    }
    let health = match lifecycle::member_health(store, team, m) {
        Ok(h) => h,
        Err(e) => return State::Unknown(crate::store::protocol::truncate(&e.to_string(), 40)),
    };
    match health.pane {
        PaneState::Dead { .. } => State::Dead(
            health
                .pane
                .to_string()
                .trim_start_matches("dead (")
                .trim_end_matches(')')
                .to_string(),
        ),
        PaneState::Gone => State::Dead("pane gone".into()),
        _ if health.dead => State::Dead("process gone".into()),
        PaneState::Alive { .. } => State::Alive,
        PaneState::Unknown => match health.liveness {
            Liveness::Alive => State::Alive,
            _ => State::Unknown(String::new()),
        },
    }
}

fn task_rows(tasks: &[Task]) -> Vec<TaskRow> {
    tasks
        .iter()
        .map(|t| TaskRow {
            id: t.id.to_string(),
            subject: t.subject.clone(),
            status: t.status,
            owner: t.owner.clone(),
            waiting_on: t
                .blocked_by
                .iter()
                .filter(|b| {
                    tasks
                        .iter()
                        .find(|o| o.id == **b)
                        .is_some_and(|o| o.status != TaskStatus::Completed)
                })
                .map(|b| b.to_string())
                .collect(),
            failed: t.parked(),
        })
        .collect()
}

fn progress(rows: &[TaskRow]) -> Progress {
    let mut p = Progress {
        total: rows.len(),
        ..Progress::default()
    };
    for r in rows {
        match r.phase() {
            "completed" => p.completed += 1,
            "in_progress" => p.in_progress += 1,
            "failed" => p.failed += 1,
            "blocked" => p.blocked += 1,
            "available" => p.available += 1,
            _ => {}
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, status: TaskStatus, owner: Option<&str>, waiting: &[&str]) -> TaskRow {
        TaskRow {
            id: id.into(),
            subject: format!("task {id}"),
            status,
            owner: owner.map(str::to_string),
            waiting_on: waiting.iter().map(|s| s.to_string()).collect(),
            failed: false,
        }
    }

    #[test]
    fn progress_tells_blocked_from_available() {
        let rows = vec![
            row("1", TaskStatus::Completed, Some("a"), &[]),
            row("2", TaskStatus::InProgress, Some("a"), &[]),
            row("3", TaskStatus::Pending, None, &["2"]),
            row("4", TaskStatus::Pending, None, &[]),
            row("5", TaskStatus::Pending, Some("b"), &[]),
        ];
        let p = progress(&rows);
        assert_eq!(
            (p.total, p.completed, p.in_progress, p.blocked, p.available),
            (5, 1, 1, 1, 1)
        );
        assert_eq!(p.text(), "1/5 done, 1 in progress, 1 available, 1 blocked");
    }
}
