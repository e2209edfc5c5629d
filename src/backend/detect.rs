//! Which backend a launch uses: `--backend`, else the detection order of PROTOCOL.md section 10.
//!
//! Everything detection looks at is gathered once into a [`DetectEnv`], so tests feed their own
//! and the rules read as a table: inside tmux, tmux; inside iTerm2 with a working `it2`, iTerm2;
//! tmux on PATH, a detached tmux session; else child processes of the launcher.
//! `SWARM_TMUX_SOCKET` always means a detached session on that server, even inside tmux, and
//! the reason says so. An explicit
//! choice whose tool is missing is a usage error that says how to install it.

use std::path::PathBuf;

use super::pane::BackendKind;
use crate::error::{Error, Result};
use crate::process::exec::Exec;

/// `--backend`: a kind, or `auto` for the detection order of section 10.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum BackendChoice {
    #[default]
    Auto,
    Tmux,
    Iterm2,
    InProcess,
}

/// What detection looks at, gathered once so tests can feed their own.
#[derive(Debug, Clone, Default)]
pub(crate) struct DetectEnv {
    /// `$TMUX`
    pub tmux: Option<String>,
    /// `$SWARM_TMUX_SOCKET`: a private tmux server, which wins over `$TMUX`.
    pub tmux_socket: Option<String>,
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
    pub(crate) fn from_process(exec: &dyn Exec) -> DetectEnv {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let mut env = DetectEnv {
            tmux: var("TMUX"),
            tmux_socket: var(crate::backend::tmux::SOCKET_ENV),
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

    /// Why a tmux team goes where it goes, when `$TMUX` is set: `None` when it goes there.
    fn elsewhere_than_tmux(&self) -> Option<String> {
        let socket = self.tmux_socket.as_ref()?;
        self.tmux.as_ref()?;
        Some(format!(
            "SWARM_TMUX_SOCKET={socket} is set: a detached session on that tmux server, not the \
             one swarm runs in"
        ))
    }

    fn in_iterm(&self) -> bool {
        self.term_program.as_deref() == Some("iTerm.app") || self.iterm_session_id.is_some()
    }
}

/// The chosen backend and the reason, said on stderr as one line.
#[derive(Debug, Clone)]
pub(crate) struct Detected {
    pub kind: BackendKind,
    pub why: String,
}

fn path_hint() -> String {
    std::env::var("PATH").unwrap_or_default()
}

/// Picks the backend: `--backend` if given (and usable), else section 10's order.
pub(crate) fn detect(choice: BackendChoice, env: &DetectEnv) -> Result<Detected> {
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
            (Some(_), Some(_)) => match env.elsewhere_than_tmux() {
                Some(why) => pick(BackendKind::Tmux, &format!("--backend tmux ({why})")),
                None => pick(BackendKind::Tmux, "--backend tmux (inside tmux)"),
            },
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
                return match env.elsewhere_than_tmux() {
                    Some(why) => pick(BackendKind::Tmux, &why),
                    None => pick(BackendKind::Tmux, "$TMUX is set: running inside tmux"),
                };
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
    fn swarm_tmux_socket_inside_tmux_says_the_team_goes_to_that_server() {
        let env = DetectEnv {
            tmux: Some("/tmp/tmux-0/default,1,0".into()),
            tmux_socket: Some("priv".into()),
            tmux_bin: Some(PathBuf::from("/usr/bin/tmux")),
            ..env()
        };
        for choice in [BackendChoice::Auto, BackendChoice::Tmux] {
            let d = detect(choice, &env).unwrap();
            assert_eq!(d.kind, BackendKind::Tmux);
            assert!(
                d.why.contains(
                    "SWARM_TMUX_SOCKET=priv is set: a detached session on that tmux server"
                ),
                "{}",
                d.why
            );
            assert!(!d.why.contains("inside tmux"), "{}", d.why);
        }
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
}
