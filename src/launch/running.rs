//! The backend a launch runs on, and the running team it hands back.
//!
//! Every pane backend is driven through [`PaneBackend`]; only the in-process one is kept by
//! kind, because its children belong to this process and [`Launched::supervise`] must wait for
//! them. Both the choice of backend ([`make_backend`]) and the call into the supervisor live
//! here, in one small place, so they can move to the backend factory and the launch supervisor
//! without touching spawn or rollback.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::supervisor::{self, ChildExit, Event, SuperviseOptions};
use super::verify::Starting;
use super::{AgentKind, Prepared};
use crate::backend::in_process::InProcessBackend;
use crate::backend::iterm2::Iterm2Backend;
use crate::backend::pane_exec::Trampoline;
use crate::backend::tmux::{PaneOwner, TmuxBackend};
use crate::backend::{absolute, BackendKind, PaneBackend};
use crate::error::Result;
use crate::process::signals::Early;
use crate::store::names::{TaskId, TeamName};
use crate::store::paths::Store;

/// Default grace between SIGTERM and SIGKILL for in-process teammates.
pub(crate) const DEFAULT_GRACE: Duration = Duration::from_secs(3);

/// The backend of one launch, kept by kind so the in-process children can be supervised.
pub(super) enum AnyBackend {
    Tmux(TmuxBackend),
    Iterm2(Iterm2Backend),
    InProcess(InProcessBackend),
}

impl AnyBackend {
    pub(super) fn as_dyn(&mut self) -> &mut dyn PaneBackend {
        match self {
            AnyBackend::Tmux(b) => b,
            AnyBackend::Iterm2(b) => b,
            AnyBackend::InProcess(b) => b,
        }
    }

    /// The children to supervise, when they are this process's.
    pub(super) fn into_children(self) -> Option<InProcessBackend> {
        match self {
            AnyBackend::InProcess(b) => Some(b),
            _ => None,
        }
    }
}

/// The backend the prepared launch detected, set up for its team.
pub(super) fn make_backend(prepared: &Prepared, store: &Store) -> Result<AnyBackend> {
    let opts = &prepared.opts;
    let trampoline = Trampoline {
        swarm_exe: opts.swarm_exe.clone(),
        spec_dir: absolute(&store.spawn_dir(&prepared.team)),
    };
    Ok(match prepared.backend.kind {
        BackendKind::Tmux => AnyBackend::Tmux(TmuxBackend::for_launch(
            opts.exec.clone(),
            PaneOwner::new(store.root(), prepared.team.as_str()),
            trampoline,
            prepared.split,
            opts.panes_per_window,
            &opts.tmux_env,
        )?),
        BackendKind::Iterm2 => AnyBackend::Iterm2(Iterm2Backend::new(
            opts.exec.clone(),
            opts.detect.iterm_session_id.as_deref().unwrap_or_default(),
            trampoline,
            prepared.root.clone(),
            prepared.team.to_string(),
        )),
        BackendKind::InProcess => AnyBackend::InProcess(InProcessBackend::new()?),
    })
}

/// One spawned teammate.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LaunchedTeammate {
    pub(crate) name: String,
    pub(crate) color: String,
    pub(crate) agent: String,
    #[serde(rename = "paneId")]
    pub(crate) pane_id: String,
    pub(crate) cwd: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pid: Option<u32>,
    /// Its pane's process (`Started::pane_pid`), for swarm's own record.
    #[serde(skip)]
    pub(crate) pane_pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) worktree: Option<PathBuf>,
}

/// A running team, as `swarm launch --json` prints it. For in-process teammates, call
/// [`Launched::supervise`].
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Launched {
    pub(crate) team: TeamName,
    pub(crate) backend: BackendKind,
    pub(crate) lead_pane: Option<String>,
    pub(crate) teammates: Vec<LaunchedTeammate>,
    /// Teammates that were running already and were left alone (`swarm up`).
    pub(crate) left_running: Vec<String>,
    /// Tasks created by this launch (not those seeded by an earlier one).
    pub(crate) tasks: Vec<TaskId>,
    #[serde(rename = "attach")]
    pub(crate) attach_hint: Option<String>,
    /// Teammates that did not come up within the launch's wait (`verify`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) not_up: Vec<super::verify::NotUp>,
    #[serde(skip)]
    pub(super) in_process: Option<InProcessBackend>,
    /// When the launch began: a liveness lock taken since then is this launch's runtime's.
    #[serde(skip)]
    pub(super) began: std::time::SystemTime,
}

impl Launched {
    /// The teammates this launch started, for [`super::verify::wait_until_up`].
    pub(crate) fn starting(&self) -> Vec<Starting> {
        self.teammates
            .iter()
            .map(|t| Starting {
                name: t.name.clone(),
                claude: t.agent == AgentKind::Claude.label(),
                since: self.began,
            })
            .collect()
    }

    /// For in-process teammates: stays until all have exited, shutting them down gracefully on
    /// SIGINT/SIGTERM, and reports the ones that did not come up (`opts.startup`). Returns at
    /// once for pane backends.
    pub(crate) fn supervise(
        &mut self,
        store: &Store,
        opts: &SuperviseOptions,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<Vec<ChildExit>> {
        let starting = self.starting();
        match &mut self.in_process {
            Some(backend) => {
                let (children, signals) = backend.take_children();
                let signals = match signals {
                    Some(early) => early,
                    None => Early::catch()?,
                };
                supervisor::supervise(
                    store, &self.team, children, signals, &starting, opts, on_event,
                )
            }
            None => Ok(vec![]),
        }
    }
}
