//! The runtime's validated configuration, and the environment its turns run with.
//!
//! `commands::teammate` checks the flags (identity, roster membership, the agent command, the
//! directory) and builds a [`Config`]; the runtime trusts it from then on. Every turn runs in
//! the configured directory with the member's identity in its environment and this very `swarm`
//! first on `PATH`, so the agent's own `swarm send` speaks the same protocol version to the
//! same store.

use std::ffi::OsString;
use std::path::PathBuf;

use super::agent::Agent;
use super::work::Launch;
use crate::store::lead_key::VERIFY_KEY_ENV;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;

/// The runtime's validated configuration (built by `commands::teammate` from the flags).
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) store: Store,
    pub(crate) team: TeamName,
    pub(crate) name: AgentName,
    pub(crate) color: String,
    pub(crate) plan_mode_required: bool,
    /// `--max-turns`, `--turn-timeout`, `--on-limit` (`runtime::limits`).
    pub(crate) limits: super::args::Limits,
    /// The lead's key from `--lead-verify-key`; `None` for a team from before lead keys.
    pub(crate) lead_key: Option<crate::store::lead_key::LeadVerifier>,
    /// Absolute directory the agent runs in.
    pub(crate) cwd: PathBuf,
    pub(crate) agent: Agent,
    /// `tmux`, `iterm2` or `in-process` (from `$SWARM_BACKEND`).
    pub(crate) backend: String,
    /// Reported in `shutdown_approved`: `$TMUX_PANE`, else `in-process`.
    pub(crate) pane_id: String,
}

impl Config {
    /// Where and with what environment the turns run.
    pub(super) fn launch(&self) -> Launch {
        Launch {
            cwd: self.cwd.clone(),
            env: self.agent_env(),
        }
    }

    /// Who the agent is, and this very `swarm` first on PATH (unless `swarm` on PATH already is
    /// this binary).
    fn agent_env(&self) -> Vec<(String, OsString)> {
        let mut env = vec![
            (
                "SWARM_ROOT".to_string(),
                self.store.root().as_os_str().to_owned(),
            ),
            ("SWARM_TEAM".to_string(), self.team.as_str().into()),
            ("SWARM_AGENT_NAME".to_string(), self.name.as_str().into()),
            (
                "SWARM_AGENT_ID".to_string(),
                self.name.agent_id(&self.team).into(),
            ),
        ];
        // The agent's own `swarm permission request --wait` and the Claude Code permission
        // hook it runs check the lead's signed decisions with this key.
        if let Some(key) = &self.lead_key {
            env.push((VERIFY_KEY_ENV.to_string(), key.value().into()));
        }
        if let Some(path) = path_with_this_swarm() {
            env.push(("PATH".to_string(), path));
        }
        env
    }
}

/// `PATH` with this very `swarm`'s directory first, so an agent's `swarm` commands reach the
/// same binary and store; `None` when `swarm` on `PATH` already is this binary. The teammate
/// runtime and the lead agent's runtime both give it to their agents.
pub(crate) fn path_with_this_swarm() -> Option<OsString> {
    let exe = std::env::current_exe()
        .and_then(|e| e.canonicalize())
        .ok()?;
    let on_path = which::which("swarm")
        .ok()
        .and_then(|p| p.canonicalize().ok());
    if on_path.is_some_and(|p| p == exe) {
        return None;
    }
    let mut paths = vec![exe.parent()?.to_path_buf()];
    if let Some(path) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(paths).ok()
}
