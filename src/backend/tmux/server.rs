//! Which tmux server swarm talks to, and running tmux commands on it as argv.
//!
//! `SWARM_TMUX_SOCKET` selects a private server (`-L`), and the server's socket path is recorded
//! per member (`swarmTmuxSocket`) so later commands find the pane from any shell. Every call is
//! built with `tmux_interface`'s command builders and run through the [`Exec`] seam, so tests
//! assert the exact command lines and nothing reaches a shell.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tmux_interface::{Tmux, TmuxCommand, TmuxCommands};

use crate::error::Result;
use crate::process::exec::Exec;
use crate::store::roster::Member;

/// Roster field (swarm-only) holding the tmux server's socket path.
pub const SOCKET_FIELD: &str = "swarmTmuxSocket";
/// Environment variable naming a private tmux server (`tmux -L NAME`).
pub const SOCKET_ENV: &str = "SWARM_TMUX_SOCKET";

/// Which tmux server to talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TmuxServer {
    /// tmux's default: `$TMUX` inside tmux, else the default socket.
    Default,
    /// `-L NAME`
    Name(String),
    /// `-S PATH`
    Path(PathBuf),
}

impl TmuxServer {
    /// `$SWARM_TMUX_SOCKET` as `-L`, else the default.
    pub fn from_env() -> TmuxServer {
        match std::env::var(SOCKET_ENV) {
            Ok(name) if !name.is_empty() => TmuxServer::Name(name),
            _ => TmuxServer::Default,
        }
    }

    /// The server a member's pane lives on: the socket recorded at launch, else the environment.
    pub fn for_member(member: &Member) -> TmuxServer {
        match member.extra.get(SOCKET_FIELD).and_then(Value::as_str) {
            Some(path) if !path.is_empty() => TmuxServer::Path(PathBuf::from(path)),
            _ => TmuxServer::from_env(),
        }
    }

    /// `tmux [-L NAME | -S PATH]` as argv (without the program name).
    pub(super) fn global_args(&self) -> Vec<String> {
        let tmux = match self {
            TmuxServer::Default => Tmux::new(),
            TmuxServer::Name(n) => Tmux::new().socket_name(n.as_str()),
            TmuxServer::Path(p) => Tmux::new().socket_path(p.to_string_lossy().into_owned()),
        };
        argv_of(&tmux.build())
    }
}

/// What the launcher knows about the tmux it runs under.
#[derive(Debug, Clone, Default)]
pub struct TmuxEnv {
    /// `$TMUX`: `socket-path,pid,session`
    pub tmux: Option<String>,
    /// `$TMUX_PANE`
    pub tmux_pane: Option<String>,
    /// `$SWARM_TMUX_SOCKET`
    pub socket: Option<String>,
}

impl TmuxEnv {
    pub fn from_process() -> TmuxEnv {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        TmuxEnv {
            tmux: var("TMUX"),
            tmux_pane: var("TMUX_PANE"),
            socket: var(SOCKET_ENV),
        }
    }

    /// Inside tmux, and on the server swarm is told to use.
    pub fn inside(&self) -> bool {
        let Some(tmux) = &self.tmux else {
            return false;
        };
        match &self.socket {
            None => true,
            Some(name) => {
                let path = tmux.split(',').next().unwrap_or_default();
                Path::new(path)
                    .file_name()
                    .is_some_and(|f| f == name.as_str())
            }
        }
    }

    pub(super) fn server(&self) -> TmuxServer {
        match &self.socket {
            Some(name) => TmuxServer::Name(name.clone()),
            None => TmuxServer::Default,
        }
    }
}

fn argv_of(cmd: &TmuxCommand) -> Vec<String> {
    // The first word is the program name ("tmux"); the seam adds it back.
    cmd.to_vec()
        .into_iter()
        .skip(1)
        .map(|s| s.into_owned())
        .collect()
}

/// argv of one command. tmux_interface's default `cmd_alias` feature spells commands by their
/// short aliases (`has`, `neww`, `respawnp`), which tmux accepts the same.
pub(super) fn words_of(cmd: TmuxCommand) -> Vec<String> {
    cmd.to_vec().into_iter().map(|s| s.into_owned()).collect()
}

/// tmux's ways of saying there is no server (so no panes).
pub(super) fn server_missing(stderr: &str) -> bool {
    stderr.contains("no server running")
        || stderr.contains("error connecting to")
        || stderr.contains("No such file or directory")
}

/// One tmux server and the seam that runs commands on it.
#[derive(Debug)]
pub(super) struct Client {
    exec: Arc<dyn Exec>,
    pub(super) server: TmuxServer,
}

impl Client {
    pub(super) fn new(exec: Arc<dyn Exec>, server: TmuxServer) -> Client {
        Client { exec, server }
    }

    /// Runs `tmux <server args> ARGS`.
    pub(super) fn tmux(&self, args: Vec<String>) -> Result<String> {
        let mut argv = self.server.global_args();
        argv.extend(args);
        self.exec.run("tmux", &argv)
    }

    /// Runs several commands in one tmux call (joined by `;`).
    pub(super) fn run(&self, cmds: Vec<TmuxCommand>) -> Result<String> {
        let mut all = TmuxCommands::new();
        for c in cmds {
            all.push(c);
        }
        self.tmux(all.to_vec().into_iter().map(|s| s.into_owned()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_means_on_the_server_swarm_was_told_to_use() {
        let env = TmuxEnv {
            tmux: Some("/tmp/tmux-0/priv,1,0".into()),
            tmux_pane: Some("%0".into()),
            socket: Some("priv".into()),
        };
        assert!(env.inside());
        let other = TmuxEnv {
            socket: Some("elsewhere".into()),
            ..env.clone()
        };
        assert!(!other.inside());
        assert!(TmuxEnv {
            socket: None,
            ..env
        }
        .inside());
        assert!(!TmuxEnv::default().inside());
    }
}
