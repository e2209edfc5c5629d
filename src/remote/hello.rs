//! Checking a host before anything is placed on it: can ssh reach it, does it run this swarm
//! version, and what is there (the remote swarm's path, the mirror's root, `claude`, the
//! teammate's directory and worktree).
//!
//! First `<remote swarm> --version`, which every swarm answers: a host that cannot be reached
//! is an error naming the host and what ssh said, and one running another version is refused
//! naming both, before a word of the newer protocol is spoken. Then `swarm relay hello` with
//! the request on its standard input (directories are the user's words, so they never travel
//! on the command line) answers with a [`HostInfo`]. Both go over the host's ssh master, which
//! the first call opens and later calls reuse.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::frame::VERSION;
use super::ssh::Ssh;
use super::Host;
use crate::error::{Error, Result};
use crate::store::machine::Machine;
use crate::store::names::{AgentName, TeamName};

/// What a launch asks a host about one teammate.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HelloRequest {
    pub(crate) mirror: String,
    pub(crate) team: TeamName,
    pub(crate) name: AgentName,
    /// As the swarm file gave it: absolute, or relative to the remote user's home.
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) worktree: bool,
    /// The worktree it kept from an earlier run, if any.
    pub(crate) kept: Option<Value>,
}

/// What the host says.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HostInfo {
    pub(crate) version: String,
    /// The remote swarm's own path.
    pub(crate) exe: String,
    /// The mirror's root there.
    pub(crate) root: String,
    /// The remote user's home.
    pub(crate) home: String,
    pub(crate) machine: Machine,
    pub(crate) now_ms: u64,
    /// `claude` there, if found (`CLAUDE_CODE_TEAMMATE_COMMAND`, else PATH).
    pub(crate) claude: Option<String>,
    pub(crate) tmux: bool,
    /// The teammate's directory there, made absolute.
    pub(crate) cwd: PathBuf,
    /// Why that directory cannot be used, if it cannot.
    pub(crate) cwd_error: Option<String>,
    /// The worktree it would get (planned there, not made), or the kept one.
    pub(crate) worktree: Option<Value>,
    pub(crate) worktree_kept: bool,
}

/// Hosts checked by one launch: the version once per host.
#[derive(Debug, Default)]
pub(crate) struct Hosts {
    checked: HashMap<Host, Ssh>,
}

impl Hosts {
    /// The host's ssh client, once its swarm is known to be this version.
    pub(crate) fn checked(&mut self, host: &Host, exe: &str) -> Result<&Ssh> {
        if !self.checked.contains_key(host) {
            let ssh = Ssh::to(host)?;
            check_version(&ssh, exe)?;
            self.checked.insert(host.clone(), ssh);
        }
        Ok(&self.checked[host])
    }

    /// Asks `host` about one teammate.
    pub(crate) fn probe(&mut self, host: &Host, exe: &str, req: &HelloRequest) -> Result<HostInfo> {
        let ssh = self.checked(host, exe)?;
        let input = serde_json::to_vec(req).map_err(|e| Error::Backend(e.to_string()))?;
        let out = ssh.run(&[exe.to_string(), "relay".into(), "hello".into()], &input)?;
        serde_json::from_str(&out).map_err(|e| {
            Error::Backend(format!(
                "swarm relay hello on {host} answered something else ({e}): {}",
                out.trim()
            ))
        })
    }
}

/// `<exe> --version` on the host must print this swarm's version.
fn check_version(ssh: &Ssh, exe: &str) -> Result<()> {
    let host = ssh.host();
    let out = match ssh.run(&[exe.to_string(), "--version".into()], b"") {
        Ok(out) => out,
        Err(Error::Command { detail, .. }) => {
            return Err(Error::usage(format!(
                "swarm was not found on host {host} (`{exe} --version` there said: {detail}); install swarm {VERSION} on {host}, or give its path with \"remoteSwarm\" in the swarm file or --remote-swarm"
            )))
        }
        Err(e) => return Err(e),
    };
    let theirs = out.split_whitespace().nth(1).unwrap_or_default();
    if out.split_whitespace().next() != Some("swarm") || theirs != VERSION {
        return Err(Error::usage(format!(
            "host {host} runs swarm {} ({exe}) and this machine swarm {VERSION}: both must run the same version; install swarm {VERSION} on {host}, or point \"remoteSwarm\" / --remote-swarm at it",
            if theirs.is_empty() { out.trim() } else { theirs }
        )));
    }
    Ok(())
}
