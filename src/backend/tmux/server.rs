//! Which tmux server swarm talks to, and running tmux commands on it as argv.
//!
//! `SWARM_TMUX_SOCKET` selects a private server (`-L`), and the server's socket path is recorded
//! per member (`swarmTmuxSocket`) so later commands find the pane from any shell; a member with
//! no recorded server is never looked for on a guessed one. Every call is built with
//! `tmux_interface`'s command builders and run through the [`Exec`] seam, so tests assert the
//! exact command lines and nothing reaches a shell.
//!
//! tmux reads its own command line too: a word ending in `;` ends a command (even after `--`)
//! unless the `;` follows a backslash, which tmux then removes. [`Client`] escapes every word it
//! passes that way, so only the separators it inserts itself split commands; [`literal`] escapes
//! `#` in the arguments tmux format-expands (`-s`, `-n`, `select-pane -T`). Checked against tmux
//! 3.3a.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tmux_interface::{Tmux, TmuxCommand};

use crate::error::Result;
use crate::process::exec::Exec;
use crate::store::roster::Member;

/// Roster field (swarm-only) holding the tmux server's socket path.
pub(crate) const SOCKET_FIELD: &str = "swarmTmuxSocket";
/// Environment variable naming a private tmux server (`tmux -L NAME`).
pub(crate) const SOCKET_ENV: &str = "SWARM_TMUX_SOCKET";

/// Which tmux server to talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TmuxServer {
    /// tmux's default: `$TMUX` inside tmux, else the default socket.
    Default,
    /// `-L NAME`
    Name(String),
    /// `-S PATH`
    Path(PathBuf),
}

impl TmuxServer {
    /// The server a member's pane lives on: the socket recorded at launch. `None` without one:
    /// pane ids mean nothing on another server, so swarm does not guess.
    pub(crate) fn for_member(member: &Member) -> Option<TmuxServer> {
        match member.extra.get(SOCKET_FIELD).and_then(Value::as_str) {
            Some(path) if !path.is_empty() => Some(TmuxServer::Path(PathBuf::from(path))),
            _ => None,
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
pub(crate) struct TmuxEnv {
    /// `$TMUX`: `socket-path,pid,session`
    pub tmux: Option<String>,
    /// `$TMUX_PANE`
    pub tmux_pane: Option<String>,
    /// `$SWARM_TMUX_SOCKET`
    pub socket: Option<String>,
    /// `$TMUX_TMPDIR`: where tmux keeps its sockets (default `/tmp`).
    pub tmpdir: Option<String>,
}

impl TmuxEnv {
    pub(crate) fn from_process() -> TmuxEnv {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        TmuxEnv {
            tmux: var("TMUX"),
            tmux_pane: var("TMUX_PANE"),
            socket: var(SOCKET_ENV),
            tmpdir: var("TMUX_TMPDIR"),
        }
    }

    /// The socket path of [`Self::server`] as tmux itself works it out, known before the
    /// server runs: inside tmux the first field of `$TMUX`, else
    /// `<$TMUX_TMPDIR or /tmp>/tmux-<uid>/<name or default>`. A launch records it before its
    /// tmux call, so the panes of a launch killed during that call are still found by their
    /// marks; tmux's own report replaces it once the call returns.
    pub(crate) fn expected_socket(&self) -> String {
        if self.inside() {
            if let Some((path, _)) = self.tmux.as_deref().and_then(|t| t.split_once(',')) {
                return path.to_string();
            }
        }
        let base = self.tmpdir.as_deref().unwrap_or("/tmp");
        let dir = PathBuf::from(base).join(format!("tmux-{}", rustix::process::getuid().as_raw()));
        // tmux resolves the directory (a symlinked /tmp) before it names the socket in it.
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        let label = self.socket.as_deref().unwrap_or("default");
        dir.join(label).display().to_string()
    }

    /// Inside tmux, and swarm puts the team there. `SWARM_TMUX_SOCKET` wins over `$TMUX`: with
    /// it set the team goes to a detached session on that server, wherever swarm runs.
    pub(crate) fn inside(&self) -> bool {
        self.tmux.is_some() && self.socket.is_none()
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

/// `word` as tmux must receive it to read it back unchanged and not as the end of a command: a
/// final `;` gets one backslash before it (tmux removes exactly that one).
fn command_word(word: String) -> String {
    match word.strip_suffix(';') {
        Some(head) => format!("{head}\\;"),
        None => word,
    }
}

/// `text` for an argument tmux expands as a format: `#` written `##`.
pub(super) fn literal(text: &str) -> String {
    text.replace('#', "##")
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

    /// `-u`, then the server's arguments: swarm parses what these calls print, fields split by
    /// tabs, and a tmux client whose locale is not UTF-8 (`LANG=C`, the usual over ssh) prints
    /// every tab as `_`; `-u` makes it print them as they are.
    fn call_args(&self) -> Vec<String> {
        let mut argv = vec!["-u".to_string()];
        argv.extend(self.server.global_args());
        argv
    }

    /// Runs `tmux <server args> ARGS`: one command, every word escaped (see [`command_word`]).
    pub(super) fn tmux(&self, args: Vec<String>) -> Result<String> {
        let mut argv = self.call_args();
        argv.extend(args.into_iter().map(command_word));
        self.exec.run("tmux", &argv)
    }

    /// Runs several commands in one tmux call, separated by `;` words of swarm's own.
    pub(super) fn run(&self, cmds: Vec<TmuxCommand>) -> Result<String> {
        self.run_words(cmds.into_iter().map(words_of).collect())
    }

    /// [`Self::run`] for commands given as words: every word escaped, and the only `;`
    /// separators the ones put between the commands here.
    pub(super) fn run_words(&self, cmds: Vec<Vec<String>>) -> Result<String> {
        let mut argv = self.call_args();
        for (i, cmd) in cmds.into_iter().enumerate() {
            if i > 0 {
                argv.push(";".into());
            }
            argv.extend(cmd.into_iter().map(command_word));
        }
        self.exec.run("tmux", &argv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swarm_tmux_socket_means_outside_even_inside_tmux() {
        let env = TmuxEnv {
            tmux: Some("/tmp/tmux-0/priv,1,0".into()),
            tmux_pane: Some("%0".into()),
            socket: Some("priv".into()),
            tmpdir: None,
        };
        assert!(!env.inside());
        assert!(TmuxEnv {
            socket: None,
            ..env
        }
        .inside());
        assert!(!TmuxEnv::default().inside());
    }

    #[test]
    fn a_final_semicolon_is_escaped_once_and_hashes_doubled_for_formats() {
        for (word, sent) in [
            ("a;", r"a\;"),
            (";", r"\;"),
            (r"\;", r"\\;"),
            ("a;b", "a;b"),
            ("#(x)", "#(x)"),
        ] {
            assert_eq!(command_word(word.into()), sent);
        }
        assert_eq!(literal("a#{b}#(c)"), "a##{b}##(c)");
    }
}
