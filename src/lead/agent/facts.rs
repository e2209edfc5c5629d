//! What a `<task-notification>` says beside the teammate's own report: how long the task took,
//! where the teammate's output is, and the worktree it worked in.
//!
//! Claude Code's notification to its coordinator carries `<output-file>`, `<usage>` with
//! `<duration_ms>` and `<worktree>` (`<worktreePath>`, `<worktreeBranch>`), so the lead can read
//! the whole output and find the work without asking. swarm reads them from the team's files,
//! never from the teammate's say-so: the duration from the task history (from the claim that
//! set the task in progress to the write that finished it), the output from the teammate's log
//! (`teams/<team>/logs/<name>.log`: an in-process teammate's output, a closed pane's last
//! lines; `swarm logs NAME` shows a live pane), the worktree from its roster entry. The history
//! is read on from where the last look stopped, so a long run costs one pass over it.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::lifecycle::worktree::Worktree;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::parse_timestamp;
use crate::store::roster::TeamConfig;
use crate::store::tasks::history::{self, Transition};
use crate::store::tasks::TaskStatus;
use crate::teammate::turn::body;

/// What the notification of one task adds.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct TaskFacts {
    pub(crate) duration_ms: Option<u64>,
    pub(crate) output_file: Option<PathBuf>,
    /// Path and branch.
    pub(crate) worktree: Option<(PathBuf, String)>,
}

impl TaskFacts {
    /// `<output-file>`, before the summary, as Claude Code orders it.
    pub(crate) fn head(&self) -> String {
        match &self.output_file {
            Some(path) => format!(
                "<output-file>{}</output-file>\n",
                body(&path.to_string_lossy())
            ),
            None => String::new(),
        }
    }

    /// `<usage>` and `<worktree>`, after the result.
    pub(crate) fn tail(&self) -> String {
        let mut tail = String::new();
        if let Some(ms) = self.duration_ms {
            tail.push_str(&format!("<usage><duration_ms>{ms}</duration_ms></usage>\n"));
        }
        if let Some((path, branch)) = &self.worktree {
            tail.push_str(&format!(
                "<worktree><worktreePath>{}</worktreePath><worktreeBranch>{}</worktreeBranch></worktree>\n",
                body(&path.to_string_lossy()),
                body(branch)
            ));
        }
        tail
    }
}

/// The task history as far as it was read: when each task was last set in progress and last
/// finished (ms).
#[derive(Debug)]
pub(crate) struct Facts {
    store: Store,
    team: TeamName,
    offset: u64,
    started: HashMap<String, u64>,
    finished: HashMap<String, u64>,
}

impl Facts {
    pub(crate) fn new(store: &Store, team: &TeamName) -> Facts {
        Facts {
            store: store.clone(),
            team: team.clone(),
            offset: 0,
            started: HashMap::new(),
            finished: HashMap::new(),
        }
    }

    /// Reads what the history gained since the last look; a history that cannot be read adds
    /// nothing (it is a record, never the truth).
    pub(crate) fn refresh(&mut self) {
        let path = self.store.task_history_path(&self.team);
        let (started, finished) = (&mut self.started, &mut self.finished);
        if let Ok(offset) = history::read_from(&path, self.offset, |e| {
            let Some(at) = parse_timestamp(&e.timestamp) else {
                return;
            };
            let id = e.task.to_string();
            match e.event {
                Transition::Completed | Transition::Failed => {
                    finished.insert(id, at);
                }
                _ if e.status == TaskStatus::InProgress => {
                    started.insert(id, at);
                }
                _ => {}
            }
        }) {
            self.offset = offset;
        }
    }

    /// What the notification of task `id`, finished by `teammate`, adds.
    pub(crate) fn of(&self, id: &str, teammate: &str, roster: &TeamConfig) -> TaskFacts {
        let duration_ms = match (self.started.get(id), self.finished.get(id)) {
            (Some(start), Some(end)) if end >= start => Some(end - start),
            _ => None,
        };
        let output_file = AgentName::teammate(teammate)
            .ok()
            .map(|name| self.store.log_path(&self.team, &name))
            .filter(|path| path.is_file());
        let worktree = roster
            .member(teammate)
            .and_then(Worktree::of_member)
            .map(|wt| (wt.path, wt.branch));
        TaskFacts {
            duration_ms,
            output_file,
            worktree,
        }
    }
}
