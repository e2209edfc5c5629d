//! The pane of a teammate a Claude Code lead started, found by what runs in it.
//!
//! A Claude Code lead opens its teammates' panes itself: they carry no `@swarm-*` marks, and its
//! roster records a pane id but never which tmux server, so swarm cannot trust the id (panes are
//! numbered from `%0` on every server). What does identify such a teammate is its process: the
//! lead runs it as `claude --agent-id NAME@TEAM ... --team-name TEAM ...` with the store as its
//! config directory (`CLAUDE_CONFIG_DIR`, else `$HOME/.claude`). From 2.1.329 the command may
//! go through `/bin/sh -c` (or a default shell such as fish that forks), so the claude process
//! is the pane's process or a descendant of it. So on the one server swarm is in
//! (`SWARM_TMUX_SOCKET`, else `$TMUX`; none outside tmux), the one live pane running such a
//! process for this root, team and member is that member's. Several candidates, or none,
//! identify nothing: nothing acts on a guess. Killing looks again first, so a pane whose process
//! changed is left alone.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tmux_interface::{KillPane, ListPanes};

use super::server::{server_missing, Client};
use super::state::is_pane_id;
use super::{TmuxEnv, TmuxServer};
use crate::backend::pane::PaneId;
use crate::error::{Error, Result};
use crate::process::exec::Exec;
use crate::process::procfs;

/// How far below a pane's own process the claude process may be: a shell's child, or a
/// wrapper's grandchild.
const DEPTH: usize = 2;

const LIST_FORMAT: &str = "#{pane_id}\t#{pane_pid}\t#{pane_dead}";

/// The member a lookup is for: `NAME@TEAM` in `root`.
#[derive(Debug, Clone)]
pub(crate) struct ClaudeMember {
    root: PathBuf,
    team: String,
    name: String,
}

/// A live pane running a Claude-made teammate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClaudePane {
    pub(crate) pane: PaneId,
    /// The pane's own process (a shell, or claude itself).
    pub(crate) pane_pid: u32,
}

impl ClaudeMember {
    pub(crate) fn new(root: &Path, team: &str, name: &str) -> ClaudeMember {
        ClaudeMember {
            root: crate::store::paths::resolve(root),
            team: team.to_string(),
            name: name.to_string(),
        }
    }

    /// The member's pane on the server swarm is in; `None` outside tmux, without a server, or
    /// unless exactly one live pane runs this member.
    pub(crate) fn find(&self, exec: Arc<dyn Exec>, env: &TmuxEnv) -> Result<Option<ClaudePane>> {
        Ok(self.locate(exec, env)?.map(|(_, pane)| pane))
    }

    /// [`Self::find`], with the client of the server the pane is on.
    fn locate(&self, exec: Arc<dyn Exec>, env: &TmuxEnv) -> Result<Option<(Client, ClaudePane)>> {
        let Some(server) = server_of(env) else {
            return Ok(None);
        };
        let client = Client::new(exec, server);
        let listing = match client.run(vec![ListPanes::new().all().format(LIST_FORMAT).build()]) {
            Ok(out) => out,
            Err(Error::Command { detail, .. }) if server_missing(&detail) => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut found = listing.lines().filter_map(|line| self.in_pane(line));
        let first = found.next();
        if found.next().is_some() {
            return Ok(None);
        }
        Ok(first.map(|pane| (client, pane)))
    }

    /// Closes the member's pane if it still runs the member; `false` when none was found.
    pub(crate) fn kill(&self, exec: Arc<dyn Exec>, env: &TmuxEnv) -> Result<bool> {
        let Some((client, found)) = self.locate(exec, env)? else {
            return Ok(false);
        };
        client.run(vec![KillPane::new()
            .target_pane(found.pane.as_str())
            .build()])?;
        Ok(true)
    }

    /// The pane of one `list-panes` line, if it is alive and runs this member.
    fn in_pane(&self, line: &str) -> Option<ClaudePane> {
        let mut f = line.split('\t');
        let (pane, pid, dead) = (f.next()?, f.next()?, f.next()?);
        if !is_pane_id(pane) || dead != "0" {
            return None;
        }
        let pane_pid: u32 = pid.parse().ok()?;
        procfs::with_descendants(pane_pid, DEPTH)
            .into_iter()
            .any(|pid| self.runs_as(pid))
            .then(|| ClaudePane {
                pane: PaneId(pane.to_string()),
                pane_pid,
            })
    }

    /// Whether `pid` is this member: its argv names it and its team, and it runs against this
    /// root.
    fn runs_as(&self, pid: u32) -> bool {
        let Some(argv) = procfs::argv(pid) else {
            return false;
        };
        let agent_id = format!("{}@{}", self.name, self.team);
        if !(has_flag(&argv, "--agent-id", &agent_id) && has_flag(&argv, "--team-name", &self.team))
        {
            return false;
        }
        let config_dir = procfs::env_var(pid, "CLAUDE_CONFIG_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| procfs::env_var(pid, "HOME").map(|h| PathBuf::from(h).join(".claude")));
        config_dir
            .and_then(|d| std::fs::canonicalize(d).ok())
            .is_some_and(|d| d == self.root)
    }
}

/// `--flag VALUE` or `--flag=VALUE` in `argv`.
fn has_flag(argv: &[OsString], flag: &str, value: &str) -> bool {
    let joined = format!("{flag}={value}");
    argv.windows(2).any(|w| w[0] == flag && w[1] == value) || argv.iter().any(|a| *a == *joined)
}

/// The server swarm is in: `SWARM_TMUX_SOCKET` (`-L`), else the one `$TMUX` names.
fn server_of(env: &TmuxEnv) -> Option<TmuxServer> {
    if let Some(name) = &env.socket {
        return Some(TmuxServer::Name(name.clone()));
    }
    let socket = env.tmux.as_deref()?.split(',').next()?;
    (!socket.is_empty()).then(|| TmuxServer::Path(PathBuf::from(socket)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_member_is_named_by_its_agent_id_and_team_name() {
        let argv = words(&[
            "claude",
            "--agent-id",
            "coder@t",
            "--agent-name",
            "coder",
            "--team-name",
            "t",
        ]);
        assert!(has_flag(&argv, "--agent-id", "coder@t"));
        assert!(has_flag(&argv, "--team-name", "t"));
        assert!(!has_flag(&argv, "--agent-id", "coder@u"));
        assert!(!has_flag(&argv, "--team-name", "coder"));
        assert!(has_flag(
            &words(&["claude", "--agent-id=coder@t"]),
            "--agent-id",
            "coder@t"
        ));
    }

    #[test]
    fn the_server_is_the_private_socket_else_the_one_tmux_names_else_none() {
        let env = |tmux: Option<&str>, socket: Option<&str>| TmuxEnv {
            tmux: tmux.map(str::to_string),
            tmux_pane: None,
            socket: socket.map(str::to_string),
            tmpdir: None,
        };
        assert_eq!(
            server_of(&env(Some("/tmp/tmux-0/default,1,0"), Some("priv"))),
            Some(TmuxServer::Name("priv".into()))
        );
        assert_eq!(
            server_of(&env(Some("/tmp/tmux-0/default,1,0"), None)),
            Some(TmuxServer::Path("/tmp/tmux-0/default".into()))
        );
        assert_eq!(server_of(&env(None, None)), None);
    }
}
