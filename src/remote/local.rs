//! What runs on a remote host: each remote member's pane, in a tmux server of its own there.
//!
//! A remote teammate must outlive the connection that started it (a dropped network is not a
//! crash), so it is not a child of any ssh session: `swarm relay spawn` opens it in a detached
//! session on a private tmux server named for the mirror, the team and the member, through the
//! same tmux backend and `pane-exec` trampoline as a local pane (tagged with the mirror's root,
//! the team and the member, so nothing else is ever touched), and records the pane here
//! (`relay/local.json`). One server per member means attaching to it shows exactly that member.
//! The relay reads these records to tell home how each member is doing and to put the host's
//! own pane facts into its view of the roster; `kill` and `view` act only on a recorded pane
//! whose tags still say it is that member's.
//!
//! This is the one place a remote teammate's process starts ([`open`]); what it opens is already
//! contained as a local teammate is (`launch::host`, the `swarm relay spawn` step that calls it,
//! wraps the command in the same sandbox, built from this host's surroundings, so this wing
//! never reaches up into `launch`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::backend::pane::{NewPane, PaneBackend, PaneSpec};
use crate::backend::pane_exec::Trampoline;
use crate::backend::tmux::{PaneOwner, TmuxBackend, TmuxEnv, TmuxServer, SOCKET_FIELD};
use crate::backend::{absolute, Launch, PaneId, PaneState, SystemExec};
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;

/// A remote member's pane on this host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LocalPane {
    pub(crate) pane: String,
    /// The tmux server's socket path.
    pub(crate) socket: String,
    pub(crate) started_ms: u64,
}

/// What the lead's machine sends `swarm relay spawn` on its standard input: the member, its
/// command line as built for this host, the worktree to make first (planned by `hello`), and
/// whether the member is to run contained (`--no-sandbox` or `"sandbox": false` at home: not).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SpawnSpec {
    pub(crate) team: TeamName,
    pub(crate) name: AgentName,
    pub(crate) color: String,
    pub(crate) exec: crate::backend::pane_exec::ExecSpec,
    #[serde(default)]
    pub(crate) worktree: Option<serde_json::Value>,
    pub(crate) sandbox: bool,
}

fn path(store: &Store, team: &TeamName) -> std::path::PathBuf {
    store.relay_dir(team).join("local.json")
}

/// Every pane recorded on this host for `team`, by member.
pub(crate) fn load(store: &Store, team: &TeamName) -> BTreeMap<String, LocalPane> {
    fsio::read_json(&path(store, team))
        .ok()
        .flatten()
        .unwrap_or_default()
}

fn save(store: &Store, team: &TeamName, panes: &BTreeMap<String, LocalPane>) -> Result<()> {
    fsio::ensure_dir(&store.relay_dir(team))?;
    fsio::write_json(&path(store, team), panes)
}

/// The private tmux server of one member: `swarm-<team>-<name>-<hash of the root>`.
fn socket_name(store: &Store, team: &TeamName, name: &AgentName) -> String {
    let owner = PaneOwner::new(store.root(), team.as_str());
    format!("{}-{name}", owner.session_name())
}

/// Opens `name`'s pane running `launch` (the remote command line home built) and records it.
/// A pane the member had before is killed first (a restart).
pub(crate) fn open(
    store: &Store,
    team: &TeamName,
    name: &AgentName,
    color: &str,
    launch: &Launch,
) -> Result<LocalPane> {
    kill(store, team, name)?;
    let exe = crate::process::swarm_exe()?;
    let trampoline = Trampoline {
        swarm_exe: exe,
        spec_dir: absolute(&store.spawn_dir(team)),
    };
    // Its own server, never the one this process may run in; tmux's socket directory as the
    // process has it.
    let env = TmuxEnv {
        tmux: None,
        tmux_pane: None,
        socket: Some(socket_name(store, team, name)),
        ..TmuxEnv::from_process()
    };
    let owner = PaneOwner::new(store.root(), team.as_str());
    let mut backend =
        TmuxBackend::for_launch(Arc::new(SystemExec), owner, trampoline, false, None, &env)?;
    let spec = PaneSpec {
        name: name.to_string(),
        color: color.to_string(),
    };
    let opened = backend.open_started(&[NewPane {
        spec: &spec,
        launch,
    }]);
    let Some((pane, _)) = opened.panes.into_iter().next() else {
        return Err(opened
            .error
            .unwrap_or_else(|| Error::Backend("tmux opened no pane".into())));
    };
    let socket = backend
        .member_extra()
        .get(SOCKET_FIELD)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    let local = LocalPane {
        pane: pane.to_string(),
        socket,
        started_ms: fsio::now_ms(),
    };
    let mut all = load(store, team);
    all.insert(name.to_string(), local.clone());
    save(store, team, &all)?;
    Ok(local)
}

/// The backend for `name`'s recorded pane, which checks the pane's tags before every action.
fn backend(store: &Store, team: &TeamName, name: &AgentName) -> Option<(TmuxBackend, PaneId)> {
    let local = load(store, team).remove(name.as_str())?;
    let pane = PaneId(local.pane);
    let backend = TmuxBackend::for_member(
        Arc::new(SystemExec),
        TmuxServer::Path(local.socket.into()),
        PaneOwner::new(store.root(), team.as_str()),
        pane.clone(),
        name.as_str(),
    );
    Some((backend, pane))
}

/// The state of `name`'s pane here (`Gone` when none is recorded).
pub(crate) fn state(store: &Store, team: &TeamName, name: &AgentName) -> PaneState {
    match backend(store, team, name) {
        Some((b, pane)) => b.state(&pane).unwrap_or(PaneState::Unknown),
        None => PaneState::Gone,
    }
}

/// Kills `name`'s pane (and with it its server); `true` if there was one to kill.
pub(crate) fn kill(store: &Store, team: &TeamName, name: &AgentName) -> Result<bool> {
    let Some((mut b, pane)) = backend(store, team, name) else {
        return Ok(false);
    };
    let was = b.state(&pane)? != PaneState::Gone;
    b.kill(&pane)?;
    let mut all = load(store, team);
    all.remove(name.as_str());
    save(store, team, &all)?;
    Ok(was)
}

/// What `swarm logs` shows for `name` here: its pane's scrollback.
pub(crate) fn capture(store: &Store, team: &TeamName, name: &AgentName) -> Result<String> {
    let (b, pane) = backend(store, team, name)
        .ok_or_else(|| Error::usage(format!("{name} has no pane on this host")))?;
    b.capture(&pane)
}

/// argv of a tmux client attached to `name`'s pane.
pub(crate) fn attach_argv(store: &Store, team: &TeamName, name: &AgentName) -> Result<Vec<String>> {
    let (b, pane) = backend(store, team, name)
        .ok_or_else(|| Error::usage(format!("{name} has no pane on this host")))?;
    b.attach_argv(&pane, false)
}
