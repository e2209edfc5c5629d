//! Teammates in tmux panes, through `tmux_interface`'s command builders.
//!
//! Every tmux call is built as argv and run through the [`Exec`] seam, so tests assert the exact
//! command lines and nothing reaches a shell: a pane is opened with a placeholder, titled and
//! coloured, and its real command starts with `respawn-pane -k ... -- ARGV` (tmux execs argv of
//! two or more words directly). `remain-on-exit on` keeps a crashed teammate's last output and
//! exit status on screen. Which server, where the panes go and what `list-panes` says each live
//! in their own file under `tmux/`.

mod placement;
mod server;
mod state;

use std::sync::Arc;

use serde_json::{Map, Value};
use tmux_interface::{CapturePane, KillPane, RespawnPane, SelectPane, SetOption};

use super::argv::display_argv;
use super::pane::{BackendKind, Launch, PaneBackend, PaneId, PaneSpec, PaneState, Started};
use crate::error::Result;
use crate::process::exec::Exec;
use crate::store::colour::Colour;
use placement::{Layout, Placement};
use server::{words_of, Client};
pub use server::{TmuxEnv, TmuxServer, SOCKET_FIELD};

/// A tmux backend: for a launch (with a placement) or for operating on existing panes.
#[derive(Debug)]
pub struct TmuxBackend {
    client: Client,
    layout: Layout,
}

impl TmuxBackend {
    /// A handle for panes that already exist (status, kill, attach).
    pub fn on_server(exec: Arc<dyn Exec>, server: TmuxServer) -> TmuxBackend {
        TmuxBackend {
            client: Client::new(exec, server),
            layout: Layout::default(),
        }
    }

    /// A backend for launching team `team`: decides the placement from the environment.
    pub fn for_launch(
        exec: Arc<dyn Exec>,
        team: &str,
        split: bool,
        env: &TmuxEnv,
    ) -> Result<TmuxBackend> {
        let mut backend = TmuxBackend::on_server(exec, env.server());
        backend.layout.placement = Some(Placement::decide(&backend.client, team, split, env)?);
        Ok(backend)
    }

    /// The pane's scrollback and screen as text (`capture-pane -p -J -S -`).
    pub fn capture(&self, pane: &PaneId) -> Result<String> {
        self.client.run(vec![CapturePane::new()
            .stdout()
            .join()
            .start_line("-")
            .target_pane(pane.as_str())
            .build()])
    }

    /// argv of `tmux ... attach-session -t PANE` (outside tmux) or `switch-client -t PANE`
    /// (inside), after selecting the pane's window and the pane itself.
    pub fn attach_argv(&self, pane: &PaneId, inside: bool) -> Result<Vec<String>> {
        self.client.run(vec![
            tmux_interface::SelectWindow::new()
                .target_window(pane.as_str())
                .build(),
            SelectPane::new().target_pane(pane.as_str()).build(),
        ])?;
        let mut argv = vec!["tmux".to_string()];
        argv.extend(self.client.server.global_args());
        let cmd = if inside {
            tmux_interface::SwitchClient::new()
                .target_session(pane.as_str())
                .build()
        } else {
            tmux_interface::AttachSession::new()
                .target_session(pane.as_str())
                .build()
        };
        argv.extend(words_of(cmd));
        Ok(argv)
    }
}

impl PaneBackend for TmuxBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Tmux
    }

    fn open_pane(&mut self, spec: &PaneSpec) -> Result<PaneId> {
        let pane = self.layout.open(&self.client)?;
        let colour = Colour::named(&spec.color).map_or(spec.color.as_str(), |c| c.tmux);
        let set = |option: &str, value: &str| {
            SetOption::new()
                .pane()
                .target_pane(pane.as_str())
                .option(option.to_string())
                .value(value.to_string())
                .build()
        };
        let result = self.client.run(vec![
            set("remain-on-exit", "on"),
            set("@swarm_name", &spec.name),
            set("@swarm_color", colour),
            SelectPane::new()
                .target_pane(pane.as_str())
                .title(spec.name.as_str())
                .build(),
        ]);
        if let Err(e) = result {
            let _ = self.kill(&PaneId(pane.clone()));
            return Err(e);
        }
        Ok(PaneId(pane))
    }

    fn start(&mut self, pane: &PaneId, launch: &Launch) -> Result<Started> {
        let mut cmd = RespawnPane::new()
            .kill()
            .start_directory(launch.cwd.to_string_lossy().into_owned())
            .target_pane(pane.as_str())
            .build();
        for (k, v) in &launch.env {
            cmd.push_option("-e", format!("{k}={v}"));
        }
        let mut words = words_of(cmd);
        words.push("--".into());
        // One word would go through `sh -c`; `env` keeps it an exec of argv.
        if launch.argv.len() == 1 {
            words.push("env".into());
        }
        words.extend(launch.argv.iter().cloned());
        self.client.tmux(words)?;
        Ok(Started::default())
    }

    fn state(&self, pane: &PaneId) -> Result<PaneState> {
        state::pane_state(&self.client, pane)
    }

    fn kill(&mut self, pane: &PaneId) -> Result<()> {
        match self
            .client
            .run(vec![KillPane::new().target_pane(pane.as_str()).build()])
        {
            Ok(_) => Ok(()),
            Err(e) => match self.state(pane) {
                Ok(PaneState::Gone) => Ok(()),
                _ => Err(e),
            },
        }
    }

    fn finish_layout(&mut self) -> Result<()> {
        self.layout.tile(&self.client)
    }

    fn attach_hint(&self) -> Option<String> {
        match self.layout.placement.as_ref()? {
            Placement::Session { name } => {
                let mut argv = vec!["tmux".to_string()];
                argv.extend(self.client.server.global_args());
                argv.extend(["attach".into(), "-t".into(), name.clone()]);
                Some(format!("`swarm attach` or `{}`", display_argv(&argv)))
            }
            Placement::Window { name, .. } => Some(format!(
                "the team is in window {name} of this session (`swarm attach` switches to it)"
            )),
            Placement::Split { .. } => Some("the teammates are split into this window".into()),
        }
    }

    fn member_extra(&self) -> Map<String, Value> {
        let mut extra = Map::new();
        if let Some(socket) = &self.layout.socket_path {
            extra.insert(SOCKET_FIELD.into(), Value::from(socket.clone()));
        }
        extra
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::exec::testing::Recorder;
    use placement::NEW_PANE_FORMAT;

    fn backend(rec: &Arc<Recorder>, placement: Placement) -> TmuxBackend {
        let mut b = TmuxBackend::on_server(rec.clone(), TmuxServer::Name("sock".into()));
        b.layout.placement = Some(placement);
        b
    }

    #[test]
    fn a_new_session_gets_a_placeholder_then_respawn_runs_argv_without_a_shell() {
        let rec = Arc::new(Recorder::default());
        rec.fail("can't find session: =swarm-t"); // has-session
        rec.answer("%3\t@2\t/tmp/tmux-0/sock\n"); // new-session
        let mut b = backend(
            &rec,
            Placement::Session {
                name: "swarm-t".into(),
            },
        );
        let pane = b
            .open_pane(&PaneSpec {
                name: "coder".into(),
                color: "orange".into(),
            })
            .unwrap();
        assert_eq!(pane.as_str(), "%3");
        b.start(
            &pane,
            &Launch {
                argv: vec!["/bin/agent".into(), "--model".into(), "x y".into()],
                env: vec![("SWARM_TEAM".into(), "t".into())],
                cwd: "/repo".into(),
                log: None,
            },
        )
        .unwrap();
        let calls = rec.calls();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            calls[0],
            s(&["tmux", "-L", "sock", "has", "-t", "=swarm-t"])
        );
        assert_eq!(
            calls[1],
            s(&[
                "tmux",
                "-L",
                "sock",
                "new",
                "-d",
                "-P",
                "-F",
                NEW_PANE_FORMAT,
                "-n",
                "swarm-t",
                "-s",
                "swarm-t",
                "-x",
                "220",
                "-y",
                "60",
                "--",
                "sleep",
                "86400"
            ])
        );
        assert!(calls[2].contains(&"pane-border-status".to_string()));
        assert_eq!(
            calls[3],
            s(&[
                "tmux",
                "-L",
                "sock",
                "set",
                "-p",
                "-t",
                "%3",
                "remain-on-exit",
                "on",
                ";",
                "set",
                "-p",
                "-t",
                "%3",
                "@swarm_name",
                "coder",
                ";",
                "set",
                "-p",
                "-t",
                "%3",
                "@swarm_color",
                "colour208",
                ";",
                "selectp",
                "-T",
                "coder",
                "-t",
                "%3"
            ])
        );
        assert_eq!(
            calls[4],
            s(&[
                "tmux",
                "-L",
                "sock",
                "respawnp",
                "-k",
                "-c",
                "/repo",
                "-t",
                "%3",
                "-e",
                "SWARM_TEAM=t",
                "--",
                "/bin/agent",
                "--model",
                "x y"
            ])
        );
        assert_eq!(
            b.member_extra()[SOCKET_FIELD],
            Value::from("/tmp/tmux-0/sock")
        );
    }

    #[test]
    fn a_single_word_command_is_wrapped_in_env_so_tmux_does_not_use_a_shell() {
        let rec = Arc::new(Recorder::default());
        let mut b = backend(&rec, Placement::Split { pane: "%0".into() });
        b.start(
            &PaneId("%1".into()),
            &Launch {
                argv: vec!["/bin/agent".into()],
                env: vec![],
                cwd: "/".into(),
                log: None,
            },
        )
        .unwrap();
        let call = &rec.calls()[0];
        assert_eq!(call[call.len() - 3..], ["--", "env", "/bin/agent"]);
    }
}
