//! Where a teammate runs: a tmux pane, an iTerm2 split, or a child process of the launcher.
//!
//! The launcher talks to one [`PaneBackend`] and never to tmux or iTerm2 directly, so the spawn
//! order (reserve, open, record, prompt, start) is written once. Every external program goes
//! through the [`Exec`] seam: tests swap in a recorder and assert the exact argv, and nothing
//! user-provided is ever pasted into a shell string. Detection follows PROTOCOL.md section 10.

pub mod in_process;
pub mod iterm2;
pub mod tmux;

pub use crate::process::exec::{Exec, SystemExec};

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};

/// The three places a teammate can run; the names are the roster's `backendType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    Tmux,
    Iterm2,
    InProcess,
}

impl BackendKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Tmux => "tmux",
            BackendKind::Iterm2 => "iterm2",
            BackendKind::InProcess => "in-process",
        }
    }

    pub fn parse(s: &str) -> Option<BackendKind> {
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

/// `--backend`: a kind, or `auto` for the detection order of section 10.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    #[default]
    Auto,
    Tmux,
    Iterm2,
    InProcess,
}

/// A pane (or process) handle as the roster records it in `tmuxPaneId`: `%5` for tmux, the
/// iTerm2 session id, `in-process` for children of the launcher.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct PaneId(pub String);

impl PaneId {
    pub fn as_str(&self) -> &str {
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
pub struct PaneSpec {
    /// Pane title: the member's name.
    pub name: String,
    /// Roster colour (`blue`, `orange`, ...).
    pub color: String,
}

/// A command to start: argv (never a shell string), the environment swarm adds on top of what
/// the pane inherits, and the working directory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Launch {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// Where the output goes when the backend has no screen (in-process).
    #[serde(skip)]
    pub log: Option<PathBuf>,
}

/// What starting a command tells the caller.
#[derive(Debug, Clone, Default)]
pub struct Started {
    /// The process id, when the backend knows it (in-process).
    pub pid: Option<u32>,
}

/// Whether a pane's process is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum PaneState {
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
}

impl PaneState {
    pub fn is_dead(self) -> bool {
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
        }
    }
}

/// One pane a backend knows about.
#[derive(Debug, Clone, Serialize)]
pub struct PaneInfo {
    pub pane: PaneId,
    pub title: String,
    pub state: PaneState,
}

/// Opens, starts, inspects and kills the panes of one team.
pub trait PaneBackend {
    fn kind(&self) -> BackendKind;
    /// Opens a pane that shows nothing yet (a placeholder), titled and coloured.
    fn open_pane(&mut self, spec: &PaneSpec) -> Result<PaneId>;
    /// Starts `launch` in `pane`, replacing the placeholder.
    fn start(&mut self, pane: &PaneId, launch: &Launch) -> Result<Started>;
    fn state(&self, pane: &PaneId) -> Result<PaneState>;
    /// Kills the pane and its process; a pane that is already gone is not an error.
    fn kill(&mut self, pane: &PaneId) -> Result<()>;
    fn list(&self) -> Result<Vec<PaneInfo>>;
    /// Rearranges the panes once all are open.
    fn finish_layout(&mut self) -> Result<()> {
        Ok(())
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

/// What detection looks at, gathered once so tests can feed their own.
#[derive(Debug, Clone, Default)]
pub struct DetectEnv {
    /// `$TMUX`
    pub tmux: Option<String>,
    /// `$TERM_PROGRAM`
    pub term_program: Option<String>,
    /// `$ITERM_SESSION_ID`
    pub iterm_session_id: Option<String>,
    /// `tmux` on PATH.
    pub tmux_bin: Option<PathBuf>,
    /// `it2` on PATH and answering `it2 --version`.
    pub it2_bin: Option<PathBuf>,
}

impl DetectEnv {
    pub fn from_process(exec: &dyn Exec) -> DetectEnv {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let mut env = DetectEnv {
            tmux: var("TMUX"),
            term_program: var("TERM_PROGRAM"),
            iterm_session_id: var("ITERM_SESSION_ID"),
            tmux_bin: which::which("tmux").ok(),
            it2_bin: None,
        };
        // it2 only matters inside iTerm2; there it must answer, not merely exist.
        if env.in_iterm() {
            env.it2_bin = which::which("it2").ok().filter(|p| {
                match exec.run(&p.to_string_lossy(), &["--version".into()]) {
                    Ok(_) => true,
                    Err(e) => {
                        eprintln!("swarm: warning: it2 is on PATH but `it2 --version` failed: {e}");
                        false
                    }
                }
            });
        }
        env
    }

    fn in_iterm(&self) -> bool {
        self.term_program.as_deref() == Some("iTerm.app") || self.iterm_session_id.is_some()
    }
}

/// The chosen backend and the reason, said on stderr as one line.
#[derive(Debug, Clone)]
pub struct Detected {
    pub kind: BackendKind,
    pub why: String,
}

fn path_hint() -> String {
    std::env::var("PATH").unwrap_or_default()
}

/// Picks the backend: `--backend` if given (and usable), else section 10's order.
pub fn detect(choice: BackendChoice, env: &DetectEnv) -> Result<Detected> {
    let pick = |kind, why: &str| {
        Ok(Detected {
            kind,
            why: why.to_string(),
        })
    };
    match choice {
        BackendChoice::Tmux => match (&env.tmux_bin, &env.tmux) {
            (None, _) => Err(Error::usage(format!(
                "--backend tmux: tmux is not installed (looked on PATH: {}); install it \
                 (e.g. apt-get install tmux) or pick --backend in-process",
                path_hint()
            ))),
            (Some(_), Some(_)) => pick(BackendKind::Tmux, "--backend tmux (inside tmux)"),
            (Some(_), None) => pick(
                BackendKind::Tmux,
                "--backend tmux (outside tmux: a detached session)",
            ),
        },
        BackendChoice::Iterm2 if env.iterm_session_id.is_none() => Err(Error::usage(
            "--backend iterm2: ITERM_SESSION_ID is not set, so there is no iTerm2 session to \
             split; run swarm inside iTerm2",
        )),
        BackendChoice::Iterm2 => match &env.it2_bin {
            None => Err(Error::usage(format!(
                "--backend iterm2: the it2 command is missing or not working (looked on PATH: \
                 {}); install it with `pip install it2` and enable iTerm2's Python API, or pick \
                 another --backend",
                path_hint()
            ))),
            Some(_) => pick(BackendKind::Iterm2, "--backend iterm2"),
        },
        BackendChoice::InProcess => pick(BackendKind::InProcess, "--backend in-process"),
        BackendChoice::Auto => {
            if env.tmux.is_some() && env.tmux_bin.is_some() {
                return pick(BackendKind::Tmux, "$TMUX is set: running inside tmux");
            }
            if env.in_iterm() {
                if env.it2_bin.is_some() && env.iterm_session_id.is_some() {
                    return pick(
                        BackendKind::Iterm2,
                        "running inside iTerm2 with a working it2",
                    );
                }
                if env.tmux_bin.is_some() {
                    return pick(
                        BackendKind::Tmux,
                        "inside iTerm2 but it2 is missing (pip install it2); tmux is on PATH, \
                         so a detached tmux session",
                    );
                }
            }
            if env.tmux_bin.is_some() {
                return pick(
                    BackendKind::Tmux,
                    "tmux is on PATH (not inside tmux): a detached tmux session",
                );
            }
            pick(
                BackendKind::InProcess,
                "no tmux and no iTerm2: teammates run as child processes, output in \
                 teams/<team>/logs/",
            )
        }
    }
}

/// A POSIX shell word for display (dry-run, hints): never used to run anything.
pub fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Renders argv as one display line.
pub fn display_argv(argv: &[String]) -> String {
    argv.iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `path` made absolute against the current directory (not resolving symlinks).
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// An `OsString` as UTF-8 or a usage error naming what it is.
pub fn utf8(what: &str, s: OsString) -> Result<String> {
    s.into_string()
        .map_err(|s| Error::usage(format!("{what} is not valid UTF-8: {s:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> DetectEnv {
        DetectEnv::default()
    }

    #[test]
    fn detection_follows_section_10() {
        let tmux = Some(PathBuf::from("/usr/bin/tmux"));
        let it2 = Some(PathBuf::from("/usr/local/bin/it2"));
        let inside = DetectEnv {
            tmux: Some("/tmp/tmux-0/default,1,0".into()),
            tmux_bin: tmux.clone(),
            ..env()
        };
        assert_eq!(
            detect(BackendChoice::Auto, &inside).unwrap().kind,
            BackendKind::Tmux
        );
        let iterm = DetectEnv {
            term_program: Some("iTerm.app".into()),
            iterm_session_id: Some("w0t0p0:ABC".into()),
            it2_bin: it2.clone(),
            tmux_bin: tmux.clone(),
            ..env()
        };
        assert_eq!(
            detect(BackendChoice::Auto, &iterm).unwrap().kind,
            BackendKind::Iterm2
        );
        let iterm_no_it2 = DetectEnv {
            it2_bin: None,
            ..iterm.clone()
        };
        let d = detect(BackendChoice::Auto, &iterm_no_it2).unwrap();
        assert_eq!(d.kind, BackendKind::Tmux);
        assert!(d.why.contains("it2 is missing"), "{}", d.why);
        let plain = DetectEnv {
            tmux_bin: tmux,
            ..env()
        };
        assert_eq!(
            detect(BackendChoice::Auto, &plain).unwrap().kind,
            BackendKind::Tmux
        );
        assert_eq!(
            detect(BackendChoice::Auto, &env()).unwrap().kind,
            BackendKind::InProcess
        );
    }

    #[test]
    fn explicit_choices_fail_clearly_when_the_tool_is_missing() {
        let e = detect(BackendChoice::Tmux, &env()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("tmux is not installed"), "{e}");
        let e = detect(BackendChoice::Iterm2, &env()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("ITERM_SESSION_ID is not set"), "{e}");
        let in_iterm = DetectEnv {
            iterm_session_id: Some("w0t0p0:X".into()),
            ..env()
        };
        let e = detect(BackendChoice::Iterm2, &in_iterm).unwrap_err();
        assert!(e.to_string().contains("it2 command is missing"), "{e}");
        assert_eq!(
            detect(BackendChoice::InProcess, &env()).unwrap().kind,
            BackendKind::InProcess
        );
    }

    #[test]
    fn shell_quote_is_for_display_and_round_trips_quotes() {
        assert_eq!(shell_quote("abc"), "abc");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$(id)"), "'$(id)'");
    }
}
