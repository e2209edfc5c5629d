//! What the in-process supervisor reports as it goes ([`Event`]): one line each for people
//! (`Event::line`), or one JSON object each with `--json`.

use serde::Serialize;

use super::RETRY_AFTER;
use crate::launch::verify::NotUp;
use crate::store::names::TaskId;

/// What the supervisor reports as it goes.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum Event {
    Running {
        name: String,
        pid: u32,
        /// None for the lead agent's runtime, whose console is on this terminal.
        #[serde(skip_serializing_if = "Option::is_none")]
        log: Option<String>,
    },
    Exited {
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
    },
    ShutdownStarted {
        teammates: Vec<String>,
    },
    Approved {
        name: String,
    },
    Rejected {
        name: String,
        reason: String,
    },
    TimedOut {
        name: String,
    },
    Retired {
        name: String,
        released: Vec<TaskId>,
    },
    Worktree {
        name: String,
        outcome: String,
    },
    /// Teammates that did not come up after the launch (see `verify`).
    NotUp {
        teammates: Vec<NotUp>,
    },
    /// A write the supervisor needs failed (a full disk): it goes on and tries again.
    Deferred {
        error: String,
    },
}

impl Event {
    /// One status line for people.
    pub(crate) fn line(&self) -> String {
        match self {
            Event::Running {
                name,
                pid,
                log: Some(log),
            } => format!("{name}: running (pid {pid}, log {log})"),
            Event::Running { name, pid, .. } => {
                format!("{name}: running (pid {pid}, its console on this terminal)")
            }
            Event::Exited {
                name,
                code: Some(c),
                ..
            } => format!("{name}: exited with status {c}"),
            Event::Exited {
                name,
                signal: Some(s),
                ..
            } => format!("{name}: killed by signal {s}"),
            Event::Exited { name, .. } => format!("{name}: exited"),
            Event::ShutdownStarted { teammates } => format!(
                "shutting down {} (asking each to stop; Ctrl-C again to kill now)",
                teammates.join(", ")
            ),
            Event::Approved { name } => format!("{name}: approved the shutdown"),
            Event::Rejected { name, reason } => {
                format!("{name}: rejected the shutdown ({reason}); stopping it anyway")
            }
            Event::TimedOut { name } => format!("{name}: no answer in time; stopping it"),
            Event::Retired { name, released } if released.is_empty() => {
                format!("{name}: marked inactive")
            }
            Event::Retired { name, released } => format!(
                "{name}: marked inactive; tasks back to pending: {}",
                released
                    .iter()
                    .map(|t| format!("#{t}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Event::Worktree { name, outcome } => format!("{name}: {outcome}"),
            Event::NotUp { teammates } => {
                let names: Vec<&str> = teammates.iter().map(|t| t.name.as_str()).collect();
                format!("did not come up: {}", names.join(", "))
            }
            Event::Deferred { error } => format!(
                "could not record what happened ({error}); the teammates go on, and this is tried \
                 again every {} s",
                RETRY_AFTER.as_secs()
            ),
        }
    }
}
