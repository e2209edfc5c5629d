//! Teammates on other machines: the lead's store stays the one source of truth, and a relay on
//! each remote host keeps a mirror of the team in step with it over ssh.
//!
//! A teammate with a `host` runs on that host under the remote swarm (the same version), in a
//! tmux server of its own there, so a broken connection does not end it; its pane on the lead's
//! machine runs `swarm relay attach`, which shows the remote pane over ssh and reconnects. The
//! remote host keeps a mirror of the team (roster, the inboxes of its members, the task list,
//! their permission answers) where the agents read and write exactly the files they would
//! locally, so a native `claude` teammate works there unchanged. One link per host and team
//! (`link`, a process on the lead's machine) talks to one relay (`relay`, started over the same
//! multiplexed ssh connection) in frames of JSON lines (`frame`): home sends state, idempotent by
//! key; the relay sends operations, each keyed (a `msg_id`, a task id and the change, a request
//! id) and derived again from the mirror's files after any break, which home applies once
//! (`admit`, the trust boundary: a remote member may write only as itself) and acknowledges.
//! Claims are decided at home (`claims`). When the connection drops both sides go on with what
//! they can do locally; the link reconnects with backoff and both sides replay, so nothing
//! acknowledged is lost or applied twice. `state` is what the link tells `swarm status`.
//!
//! The wing sits under `lifecycle` and `launch` and over `backend` and `store`: `host` and
//! `ssh` reach a host (all quoting for the remote shell is in `ssh`), `hello` checks it,
//! `daemon` starts and stops links, `local` is what runs on a remote host, `attach` is a remote
//! member's pane. A remote teammate is contained on its host as a local one is here: `swarm
//! relay spawn` (`launch::host`) wraps its command in the same sandbox before `local` starts its
//! pane, the one place a remote teammate's process begins.

pub(crate) mod admit;
pub(crate) mod attach;
pub(crate) mod claims;
pub(crate) mod daemon;
mod downstream;
pub(crate) mod frame;
pub(crate) mod hello;
pub(crate) mod host;
pub(crate) mod link;
pub(crate) mod local;
pub(crate) mod member;
mod mirror;
mod outgoing;
pub(crate) mod records;
pub(crate) mod relay;
pub(crate) mod ssh;
pub(crate) mod state;

pub(crate) use host::Host;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::store::machine::Machine;
use crate::store::paths::Store;
use crate::store::roster::Member;

/// Swarm-only member field: the host a teammate runs on (absent: this machine).
pub(crate) const HOST_FIELD: &str = "swarmHost";
/// Swarm-only member field: where on its host a remote teammate runs ([`RemoteMember`]).
pub(crate) const REMOTE_FIELD: &str = "swarmRemote";

/// The host `member` runs on, if not this machine.
pub(crate) fn host_of(member: &Member) -> Option<Host> {
    member
        .extra
        .get(HOST_FIELD)
        .and_then(Value::as_str)
        .and_then(|h| h.parse().ok())
}

/// A remote teammate's place on its host, recorded at home once it was started there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RemoteMember {
    pub(crate) host: Host,
    /// The remote swarm, as the launch found it there.
    pub(crate) exe: String,
    /// The mirror's id ([`mirror_id`]) and root on the host.
    pub(crate) mirror: String,
    pub(crate) root: String,
    /// Its pane there and that pane's tmux server.
    pub(crate) pane: String,
    pub(crate) socket: String,
    /// When its host answered that it started it, by this machine's clock.
    #[serde(default)]
    pub(crate) started_ms: u64,
}

impl RemoteMember {
    pub(crate) fn of(member: &Member) -> Option<RemoteMember> {
        serde_json::from_value(member.extra.get(REMOTE_FIELD)?.clone()).ok()
    }
}

/// The id of this store's mirrors on other hosts: a hash of this machine's host name and the
/// store's absolute root, so two stores (or two lead machines) never share a mirror.
pub(crate) fn mirror_id(store: &Store) -> String {
    let root = crate::backend::absolute(store.root());
    let mut h = Sha256::new();
    h.update(Machine::this().host.as_bytes());
    h.update([0]);
    h.update(root.as_os_str().as_encoded_bytes());
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Checks a mirror id from a command line: 16 hex digits, so it is safe in a path.
pub(crate) fn check_mirror_id(id: &str) -> Result<()> {
    if id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(());
    }
    Err(Error::usage(format!(
        "invalid mirror id {id:?}: it is 16 hex digits, given by the lead's swarm"
    )))
}

/// Where mirror `id` lives on this host: `$XDG_DATA_HOME/swarm/mirrors/<id>` (default
/// `~/.local/share/swarm/mirrors/<id>`).
pub(crate) fn mirror_root(id: &str) -> Result<PathBuf> {
    check_mirror_id(id)?;
    let data = match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => PathBuf::from(home).join(".local/share"),
            None => {
                return Err(Error::usage(
                    "cannot place the team's mirror: neither XDG_DATA_HOME nor HOME is set on this host",
                ))
            }
        },
    };
    Ok(data.join("swarm").join("mirrors").join(id))
}
