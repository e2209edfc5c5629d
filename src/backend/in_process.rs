//! Teammates as child processes of the launcher, for machines without tmux or iTerm2.
//!
//! Each teammate gets its own process group (so the terminal's Ctrl-C reaches only the
//! launcher, and a kill reaches the teammate's children too), stdin from /dev/null and its
//! output appended to `teams/<team>/logs/<name>.log`. This backend only starts the children and
//! kills one to roll back a failed spawn; the launcher then hands them to
//! [`crate::launch::supervisor`], which reports their exits and shuts them down on a signal. The
//! pid and its start time are kept in the roster (`swarmPid`, `swarmPidStart`), so `swarm status`
//! and `swarm kill` work from other shells and a recycled pid is never mistaken for the teammate.
//! A launch without a log is an agent lead's runtime: its console goes on the launcher's
//! terminal instead (`LoggedChild::spawn_console`). It catches SIGINT, SIGTERM and SIGHUP from
//! before its first child ([`Early`]), so a Ctrl-C during the launch reaches the supervisor too.

use super::pane::{
    BackendKind, Launch, PaneBackend, PaneId, PaneSpec, PaneState, Started, IN_PROCESS_PANE_ID,
};
use crate::error::{Error, Result};
use crate::process::signals::Early;
use crate::process::spawn::LoggedChild;
use crate::store::names::AgentName;

/// Children of this process, one per teammate.
#[derive(Debug)]
pub(crate) struct InProcessBackend {
    children: Vec<(AgentName, LoggedChild)>,
    pending: Option<String>,
    /// Caught since the backend was made; the supervisor takes them with the children.
    signals: Option<Early>,
}

impl InProcessBackend {
    /// Catches signals from now on, before any child exists.
    pub(crate) fn new() -> Result<InProcessBackend> {
        Ok(InProcessBackend {
            children: Vec::new(),
            pending: None,
            signals: Some(Early::catch()?),
        })
    }

    /// The children started so far and the signals caught since, for the supervisor to own
    /// from now on. (Taken once: a second call has no signals to give.)
    pub(crate) fn take_children(&mut self) -> (Vec<(AgentName, LoggedChild)>, Option<Early>) {
        (std::mem::take(&mut self.children), self.signals.take())
    }
}

impl PaneBackend for InProcessBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::InProcess
    }

    fn open_pane(&mut self, spec: &PaneSpec) -> Result<PaneId> {
        self.pending = Some(spec.name.clone());
        Ok(PaneId(IN_PROCESS_PANE_ID.into()))
    }

    fn start(&mut self, _pane: &PaneId, launch: &Launch) -> Result<Started> {
        let name: AgentName = self
            .pending
            .take()
            .ok_or_else(|| Error::Backend("in-process start without open_pane".into()))?
            .parse()?;
        let child = match launch.log.as_deref() {
            Some(log) => LoggedChild::spawn_logged(&launch.argv, &launch.env, &launch.cwd, log)?,
            None if name.is_lead() => {
                LoggedChild::spawn_console(&launch.argv, &launch.env, &launch.cwd)?
            }
            None => {
                return Err(Error::Backend(
                    "in-process teammates need a log path".into(),
                ))
            }
        };
        let pid = child.pid();
        self.children.push((name, child));
        Ok(Started {
            pid: Some(pid),
            pane_pid: None,
        })
    }

    fn state(&self, _pane: &PaneId) -> Result<PaneState> {
        Ok(PaneState::Unknown)
    }

    /// Kills the most recently started child (used to roll back a failed spawn).
    fn kill(&mut self, _pane: &PaneId) -> Result<()> {
        if let Some((_, child)) = self.children.pop() {
            child.kill();
        }
        Ok(())
    }
}
