//! What a backend is: the [`PaneBackend`] trait and the values that cross it.
//!
//! The launcher hands a backend every pane of a launch at once ([`PaneBackend::open_started`]:
//! open each pane already running its command, in roster order) after the roster entries, the
//! prompts and the worktrees are in place, records what came back in one roster write, and
//! rolls back with `kill`; the operations on running members ask for a pane's [`PaneState`].
//! The values here are plain data, so each backend file depends on this one and on nothing of
//! its siblings.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

use crate::error::{Error, Result};

/// The `tmuxPaneId` of every in-process member (PROTOCOL.md section 5).
pub(crate) const IN_PROCESS_PANE_ID: &str = "in-process";

/// The three places a teammate can run; the names are the roster's `backendType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum BackendKind {
    Tmux,
    Iterm2,
    InProcess,
}

impl BackendKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            BackendKind::Tmux => "tmux",
            BackendKind::Iterm2 => "iterm2",
            BackendKind::InProcess => "in-process",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<BackendKind> {
        match s {
            "tmux" => Some(BackendKind::Tmux),
            "iterm2" => Some(BackendKind::Iterm2),
            "in-process" => Some(BackendKind::InProcess),
            _ => None,
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A pane (or process) handle as the roster records it in `tmuxPaneId`: `%5` for tmux, the
/// iTerm2 session id, `in-process` for children of the launcher.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub(crate) struct PaneId(pub String);

impl PaneId {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PaneId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a new pane shows before its command starts.
#[derive(Debug, Clone)]
pub(crate) struct PaneSpec {
    /// Pane title: the member's name.
    pub name: String,
    /// Roster colour (`blue`, `orange`, ...).
    pub color: String,
}

/// A command to start: argv (never a shell string), the environment swarm adds on top of what
/// the pane inherits, and the working directory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Launch {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// Where the output goes when the backend has no screen (in-process).
    #[serde(skip)]
    pub log: Option<PathBuf>,
}

/// What starting a command tells the caller.
#[derive(Debug, Clone, Default)]
pub(crate) struct Started {
    /// The process id, when the backend knows it (in-process).
    pub pid: Option<u32>,
    /// The process of the pane it runs in, as the multiplexer reported it on making the pane
    /// (tmux: the teammate, which its trampoline `exec`s): for swarm's own record only, not the
    /// roster's.
    pub pane_pid: Option<u32>,
}

/// One pane of a launch for [`PaneBackend::open_started`]: how it looks and what it runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewPane<'a> {
    pub spec: &'a PaneSpec,
    pub launch: &'a Launch,
}

/// What [`PaneBackend::open_started`] got running: the first `panes.len()` of the panes asked
/// for, in order, and the error that stopped the rest (their panes are already killed).
#[derive(Debug, Default)]
pub(crate) struct Opened {
    pub panes: Vec<(PaneId, Started)>,
    pub error: Option<Error>,
}

/// Whether a pane's process is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub(crate) enum PaneState {
    Alive {
        #[serde(skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
    },
    /// The process exited; the pane stays (remain-on-exit) with its last output.
    Dead {
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
    },
    /// No such pane any more (killed, or its server is gone).
    Gone,
    /// The backend cannot tell (iTerm2 without a recorded pid).
    Unknown,
    /// A teammate a Claude Code lead runs inside its own process (roster pane `in-process`,
    /// no process of its own): nothing to look at but the lead.
    InsideLead,
}

impl PaneState {
    pub(crate) fn is_dead(self) -> bool {
        matches!(self, PaneState::Dead { .. } | PaneState::Gone)
    }
}

impl fmt::Display for PaneState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PaneState::Alive { .. } => f.write_str("alive"),
            PaneState::Dead {
                code: Some(c),
                signal: _,
            } => write!(f, "dead (exit {c})"),
            PaneState::Dead {
                code: None,
                signal: Some(s),
            } => write!(f, "dead (signal {s})"),
            PaneState::Dead { .. } => f.write_str("dead"),
            PaneState::Gone => f.write_str("gone"),
            PaneState::Unknown => f.write_str("unknown"),
            PaneState::InsideLead => f.write_str("unknown (inside the lead)"),
        }
    }
}

/// Opens, starts, inspects and kills the panes of one team.
pub(crate) trait PaneBackend {
    fn kind(&self) -> BackendKind;
    /// Opens a pane that shows nothing yet (a placeholder), titled and coloured.
    fn open_pane(&mut self, spec: &PaneSpec) -> Result<PaneId>;
    /// Starts `launch` in `pane`, replacing the placeholder.
    fn start(&mut self, pane: &PaneId, launch: &Launch) -> Result<Started>;
    fn state(&self, pane: &PaneId) -> Result<PaneState>;
    /// Kills the pane and its process; a pane that is already gone is not an error.
    fn kill(&mut self, pane: &PaneId) -> Result<()>;
    /// Opens one pane per entry, in order, each running its command; stops at the first that
    /// fails and kills that one's pane. One pane at a time by default; tmux opens, marks and
    /// lays out all of them in as few tmux calls as it can.
    fn open_started(&mut self, panes: &[NewPane]) -> Opened {
        let mut opened = Opened::default();
        for new in panes {
            let pane = match self.open_pane(new.spec) {
                Ok(pane) => pane,
                Err(e) => {
                    opened.error = Some(e);
                    break;
                }
            };
            match self.start(&pane, new.launch) {
                Ok(started) => opened.panes.push((pane, started)),
                Err(e) => {
                    let _ = self.kill(&pane);
                    opened.error = Some(e);
                    break;
                }
            }
        }
        opened
    }
    /// How the user gets to the panes, for the closing line of `swarm launch`.
    fn attach_hint(&self) -> Option<String> {
        None
    }
    /// Swarm-only roster fields this backend needs later (e.g. the tmux socket).
    fn member_extra(&self) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }
}
