//! What the dashboard shows, read from the store in one pass: the members with their health,
//! current task, last line and unread count; the task DAG with its progress; the requests
//! waiting for the lead.
//!
//! A member's state is `lifecycle::state`'s, the one `swarm status` shows, and a task's phase is
//! the store's (`Task::phase`, on the one rule for "available"); nothing is re-derived here.
//! Everything is plain data, so the view draws it and the line printer (`lines`) diffs two of
//! them without touching the store again.

use crate::error::Result;
use crate::lifecycle::{self, MemberState};
use crate::store::mailbox::Mailbox;
use crate::store::memory::{Figures, TeamMemory};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::roster::Roster;
use crate::store::tasks::{finished_in, Phase, Task, TaskList};
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
    /// The ssh destination it runs on, for a member on another machine.
    pub(crate) host: Option<String>,
    pub(crate) color: String,
    pub(crate) state: MemberState,
    /// `#3 subject` of the task it is on.
    pub(crate) task: Option<String>,
    /// The last line of its output, else of the last message it sent the lead.
    pub(crate) last: Option<String>,
    pub(crate) unread: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskRow {
    pub(crate) id: String,
    pub(crate) subject: String,
    pub(crate) phase: Phase,
    pub(crate) owner: Option<String>,
    /// Blockers not completed yet.
    pub(crate) waiting_on: Vec<String>,
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
                let unread = mailbox.read(&m.name, true).map_or(0, |v| v.len());
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
                    name: m.name.to_string(),
                    host: crate::remote::host_of(m).map(|h| h.to_string()),
                    color: m.color_or_default().to_string(),
                    state: lifecycle::member_state(store, team, &config, m, &tasks),
                    task: lifecycle::current_task(&tasks, m.name.as_str())
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

fn task_rows(tasks: &[Task]) -> Vec<TaskRow> {
    let finished = finished_in(tasks);
    tasks
        .iter()
        .map(|t| TaskRow {
            id: t.id.to_string(),
            subject: t.subject.clone(),
            phase: t.phase(&finished),
            owner: t.owner.clone(),
            waiting_on: t
                .blocked_by
                .iter()
                .filter(|b| !finished(b))
                .map(|b| b.to_string())
                .collect(),
        })
        .collect()
}

fn progress(rows: &[TaskRow]) -> Progress {
    let mut p = Progress {
        total: rows.len(),
        ..Progress::default()
    };
    for r in rows {
        match r.phase {
            Phase::Completed => p.completed += 1,
            Phase::InProgress => p.in_progress += 1,
            Phase::Failed => p.failed += 1,
            Phase::Blocked => p.blocked += 1,
            Phase::Available => p.available += 1,
            Phase::Assigned => {}
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::names::TaskId;
    use crate::store::tasks::TaskStatus;

    fn task(id: u64, status: TaskStatus, owner: Option<&str>, blocked_by: &[u64]) -> Task {
        Task {
            id: TaskId::new(id),
            subject: format!("task {id}"),
            description: String::new(),
            active_form: None,
            owner: owner.map(str::to_string),
            status,
            blocks: vec![],
            blocked_by: blocked_by.iter().map(|b| TaskId::new(*b)).collect(),
            metadata: Default::default(),
            extra: Default::default(),
        }
    }

    #[test]
    fn progress_tells_blocked_from_available() {
        let tasks = vec![
            task(1, TaskStatus::Completed, Some("a"), &[]),
            task(2, TaskStatus::InProgress, Some("a"), &[1]),
            task(3, TaskStatus::Pending, None, &[2]),
            task(4, TaskStatus::Pending, None, &[1, 9]),
            task(5, TaskStatus::Pending, Some("b"), &[]),
        ];
        let rows = task_rows(&tasks);
        assert_eq!(rows[2].waiting_on, ["2"]);
        assert!(
            rows[3].waiting_on.is_empty(),
            "a deleted blocker blocks nothing"
        );
        assert_eq!(rows[4].phase.as_str(), "pending");
        let p = progress(&rows);
        assert_eq!(
            (p.total, p.completed, p.in_progress, p.blocked, p.available),
            (5, 1, 1, 1, 1)
        );
        assert_eq!(p.text(), "1/5 done, 1 in progress, 1 available, 1 blocked");
    }
}
