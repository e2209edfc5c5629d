//! Teammates in tmux panes, through `tmux_interface`'s command builders.
//!
//! Every tmux call is built as argv and run through the [`Exec`] seam, so tests assert the exact
//! command lines and nothing reaches a shell. Every pane runs `<swarm> pane-exec SPEC`: the
//! teammate's argv, environment and working directory travel in the spec file (pane_exec.rs),
//! never through tmux, which would read a final `;` as a command separator and `#(...)` in a
//! directory as a command. A launch opens all its panes with their commands, marked with their
//! owner (owner.rs), titled, coloured and tiled, in as few tmux calls as it can (batch.rs); a
//! single pane can also be opened with a placeholder and started later with
//! `respawn-pane -k -t PANE -- <swarm> pane-exec SPEC`. `remain-on-exit on` keeps a crashed
//! teammate's last output and exit status on screen. A backend touches only the panes it knows
//! the member of, and only while their marks say so. Which server, where the panes go, whose a
//! pane is, what `list-panes` says, and which pane runs a teammate a Claude Code lead started
//! (`claude_pane.rs`) each live in their own file under `tmux/`.

mod batch;
mod claude_pane;
mod notice;
mod owner;
mod placement;
mod server;
mod spec_panes;
mod state;
mod team;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};
use tmux_interface::{CapturePane, KillPane, RespawnPane, SelectPane, SetOption};

use super::argv::display_argv;
use super::pane::{
    BackendKind, Launch, NewPane, Opened, PaneBackend, PaneId, PaneSpec, PaneState, Started,
};
use super::pane_exec::{ExecSpec, Trampoline};
use crate::error::{Error, Result};
use crate::process::exec::Exec;
use crate::store::colour::Colour;
use batch::BatchPane;
pub(crate) use claude_pane::ClaudeMember;
pub(crate) use notice::OwnPane;
pub(crate) use owner::PaneOwner;
use placement::{Layout, Placement};
use server::{literal, words_of, Client};
pub(crate) use server::{TmuxEnv, TmuxServer, SOCKET_ENV, SOCKET_FIELD};
pub(crate) use team::MarkedPane;

/// A tmux backend: for a launch (with a placement) or for operating on existing panes.
#[derive(Debug)]
pub(crate) struct TmuxBackend {
    client: Client,
    owner: PaneOwner,
    /// The panes this backend may touch, each with the member it belongs to.
    members: HashMap<PaneId, String>,
    layout: Layout,
    /// How panes are started; only a launch has one.
    trampoline: Option<Trampoline>,
}

impl TmuxBackend {
    /// A handle for `member`'s existing pane on `server` (status, kill, logs, attach).
    pub(crate) fn for_member(
        exec: Arc<dyn Exec>,
        server: TmuxServer,
        owner: PaneOwner,
        pane: PaneId,
        member: &str,
    ) -> TmuxBackend {
        TmuxBackend {
            client: Client::new(exec, server),
            owner,
            members: HashMap::from([(pane, member.to_string())]),
            layout: Layout::default(),
            trampoline: None,
        }
    }

    /// A backend for launching `owner`'s team: decides the placement from the environment.
    pub(crate) fn for_launch(
        exec: Arc<dyn Exec>,
        owner: PaneOwner,
        trampoline: Trampoline,
        split: bool,
        per_window: Option<usize>,
        env: &TmuxEnv,
    ) -> Result<TmuxBackend> {
        let client = Client::new(exec, env.server());
        let mut layout = Layout::default();
        layout.placement = Some(Placement::decide(&client, &owner, split, env)?);
        // Recorded with the roster entries before the tmux call (see `member_extra`).
        layout.socket_path = Some(env.expected_socket());
        if let Some(n) = per_window {
            layout.per_window = n;
        }
        Ok(TmuxBackend {
            client,
            owner,
            members: HashMap::new(),
            layout,
            trampoline: Some(trampoline),
        })
    }

    /// Fails unless `pane` is still there and still the member's: what every command that acts
    /// on a pane checks first.
    fn require_owned(&self, pane: &PaneId) -> Result<()> {
        if self.state(pane)? == PaneState::Gone {
            return Err(Error::Backend(format!(
                "pane {pane} is gone (its tmux server restarted, or it is no longer swarm's)"
            )));
        }
        Ok(())
    }

    /// [`PaneBackend::open_started`] for tmux: one spec file per pane (named with a nonce of
    /// this launch), then every pane in as few calls as fit; on failure every pane of the
    /// launch is killed and its spec files removed. Each pane comes with its process id.
    fn open_batch(&mut self, panes: &[NewPane]) -> Result<Vec<(PaneId, Option<u32>)>> {
        let trampoline = self
            .trampoline
            .clone()
            .ok_or_else(|| Error::Backend("this tmux backend does not start panes".into()))?;
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let mut specs = Vec::with_capacity(panes.len());
        let result = self.open_with_specs(&trampoline, &nonce, panes, &mut specs);
        match result {
            Ok(ids) => {
                for ((id, _), new) in ids.iter().zip(panes) {
                    self.members.insert(id.clone(), new.spec.name.clone());
                }
                Ok(ids)
            }
            Err(e) => {
                spec_panes::kill_launch(&self.client, &nonce);
                for spec in specs {
                    let _ = std::fs::remove_file(spec);
                }
                Err(e)
            }
        }
    }

    fn open_with_specs(
        &mut self,
        trampoline: &Trampoline,
        nonce: &str,
        panes: &[NewPane],
        specs: &mut Vec<std::path::PathBuf>,
    ) -> Result<Vec<(PaneId, Option<u32>)>> {
        let mut batch = Vec::with_capacity(panes.len());
        for new in panes {
            let name = &new.spec.name;
            let spec = trampoline.write(&format!("{name}.{nonce}"), &ExecSpec::of(new.launch))?;
            batch.push(BatchPane {
                member: name.clone(),
                colour: tmux_colour(&new.spec.color).to_string(),
                argv: trampoline.argv(&spec),
                tag: format!("/{name}.{nonce}.json"),
            });
            specs.push(spec);
        }
        let ids = batch::open_all(&mut self.layout, &self.client, &self.owner, &batch)?;
        Ok(ids.into_iter().map(|(id, pid)| (PaneId(id), pid)).collect())
    }

    /// The pane's scrollback and screen as text (`capture-pane -p -J -S -`).
    pub(crate) fn capture(&self, pane: &PaneId) -> Result<String> {
        self.require_owned(pane)?;
        self.client.run(vec![CapturePane::new()
            .stdout()
            .join()
            .start_line("-")
            .target_pane(pane.as_str())
            .build()])
    }

    /// How to come back after `swarm attach` switched this tmux client (inside tmux) to `pane`,
    /// from the pane `from` the user ran it in: the last window when the team's window is in
    /// the user's own session, else the last session. (`Ctrl-b d` would detach the whole
    /// client.)
    pub(crate) fn way_back(&self, pane: &PaneId, from: &str) -> String {
        let session = |target: &str| {
            self.client
                .tmux(vec![
                    "display-message".into(),
                    "-p".into(),
                    "-t".into(),
                    target.into(),
                    "#{session_id}".into(),
                ])
                .map(|s| s.trim().to_string())
                .ok()
        };
        match (session(pane.as_str()), session(from)) {
            (Some(team), Some(mine)) if team == mine => {
                "to come back: Ctrl-b l (the last window), or `tmux last-window`".into()
            }
            _ => "to come back: Ctrl-b L (the last session), or `tmux switch-client -l`".into(),
        }
    }

    /// argv of `tmux ... attach-session -t PANE` (outside tmux) or `switch-client -t PANE`
    /// (inside), after selecting the pane's window and the pane itself.
    pub(crate) fn attach_argv(&self, pane: &PaneId, inside: bool) -> Result<Vec<String>> {
        self.require_owned(pane)?;
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
        let colour = tmux_colour(&spec.color);
        let set = |option: &str, value: &str| {
            SetOption::new()
                .pane()
                .target_pane(pane.clone())
                .option(option.to_string())
                .value(value.to_string())
                .build()
        };
        let mut cmds = self.owner.mark(&pane, &spec.name);
        cmds.extend([
            set("remain-on-exit", "on"),
            set("@swarm_name", &spec.name),
            set("@swarm_color", colour),
            SelectPane::new()
                .target_pane(pane.clone())
                .title(literal(&spec.name))
                .build(),
        ]);
        let pane = PaneId(pane);
        self.members.insert(pane.clone(), spec.name.clone());
        if let Err(e) = self.client.run(cmds) {
            // tmux just printed this id for the pane it made for us; it may lack its marks.
            let _ = self
                .client
                .run(vec![KillPane::new().target_pane(pane.as_str()).build()]);
            self.members.remove(&pane);
            return Err(e);
        }
        Ok(pane)
    }

    fn start(&mut self, pane: &PaneId, launch: &Launch) -> Result<Started> {
        let trampoline = self
            .trampoline
            .clone()
            .ok_or_else(|| Error::Backend("this tmux backend does not start panes".into()))?;
        let member = self.members.get(pane).cloned().unwrap_or_default();
        self.require_owned(pane)?;
        let spec = trampoline.write(&member, &ExecSpec::of(launch))?;
        let mut words = words_of(RespawnPane::new().kill().target_pane(pane.as_str()).build());
        words.push("--".into());
        words.extend(trampoline.argv(&spec));
        if let Err(e) = self.client.tmux(words) {
            let _ = std::fs::remove_file(&spec);
            return Err(e);
        }
        Ok(Started::default())
    }

    fn state(&self, pane: &PaneId) -> Result<PaneState> {
        match self.members.get(pane) {
            Some(member) => state::owned_pane_state(&self.client, pane, &self.owner, member),
            None => Ok(PaneState::Gone),
        }
    }

    fn kill(&mut self, pane: &PaneId) -> Result<()> {
        if self.state(pane)? == PaneState::Gone {
            return Ok(());
        }
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

    fn open_started(&mut self, panes: &[NewPane]) -> Opened {
        match self.open_batch(panes) {
            Ok(ids) => Opened {
                panes: ids
                    .into_iter()
                    .map(|(p, pane_pid)| {
                        let started = Started {
                            pane_pid,
                            ..Started::default()
                        };
                        (p, started)
                    })
                    .collect(),
                error: None,
            },
            Err(e) => Opened {
                panes: vec![],
                error: Some(e),
            },
        }
    }

    fn attach_hint(&self) -> Option<String> {
        match self.layout.placement.as_ref()? {
            Placement::Session { name } => {
                let mut argv = vec!["tmux".to_string()];
                argv.extend(self.client.server.global_args());
                argv.extend(["attach".into(), "-t".into(), name.clone()]);
                Some(format!(
                    "`swarm attach {}` or `{}`",
                    self.owner.team_flags(),
                    display_argv(&argv)
                ))
            }
            Placement::Window { name, .. } => Some(format!(
                "the team is in window {name} of this session (`swarm attach {}` switches to it)",
                self.owner.team_flags()
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

/// A roster colour as tmux spells it (`orange` is `colour208`); anything else as it is.
fn tmux_colour(colour: &str) -> &str {
    Colour::named(colour).map_or(colour, |c| c.tmux)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::exec::testing::Recorder;
    use placement::{NEW_PANE_FORMAT, WINDOW_PANES_FORMAT};

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn launch_backend(rec: &Arc<Recorder>, dir: &std::path::Path) -> TmuxBackend {
        let owner = PaneOwner::new(&dir.join("root"), "t");
        let mut layout = Layout::default();
        layout.placement = Some(Placement::Session {
            name: owner.session_name(),
        });
        TmuxBackend {
            client: Client::new(rec.clone(), TmuxServer::Name("sock".into())),
            owner,
            members: HashMap::new(),
            layout,
            trampoline: Some(Trampoline {
                swarm_exe: "/opt/swarm".into(),
                spec_dir: dir.join("spawn"),
            }),
        }
    }

    #[test]
    fn a_new_session_gets_a_marked_placeholder_then_respawn_runs_only_the_trampoline() {
        let dir = tempfile::tempdir().unwrap();
        let rec = Arc::new(Recorder::default());
        let mut b = launch_backend(&rec, dir.path());
        let session = b.owner.session_name();
        rec.fail(&format!("can't find session: ={session}")); // the team's panes
        rec.answer("%3\t@2\t/tmp/tmux-0/sock\n"); // new-session
        let pane = b
            .open_pane(&PaneSpec {
                name: "coder".into(),
                color: "orange".into(),
            })
            .unwrap();
        assert_eq!(pane.as_str(), "%3");
        rec.answer(&format!("{}%3\t0\t\t\t42\n", b.owner.expected("coder"))); // the check
        let launch = Launch {
            argv: vec!["/bin/agent".into(), "a;".into(), "#(id)".into()],
            env: vec![("SWARM_TEAM".into(), "t;".into())],
            cwd: "/#(touch pwned)".into(),
            log: None,
        };
        b.start(&pane, &launch).unwrap();
        let calls = rec.calls();
        let tmux = |v: &[&str]| {
            let mut all = s(&["tmux", "-u", "-L", "sock"]);
            all.extend(s(v));
            all
        };
        assert_eq!(
            calls[0],
            tmux(&[
                "lsp",
                "-s",
                "-F",
                WINDOW_PANES_FORMAT,
                "-t",
                &format!("={session}")
            ])
        );
        assert_eq!(
            calls[1],
            tmux(&[
                "new",
                "-d",
                "-P",
                "-F",
                NEW_PANE_FORMAT,
                "-n",
                &session,
                "-s",
                &session,
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
        let root = std::fs::canonicalize(dir.path().join("root"))
            .unwrap_or_else(|_| crate::backend::argv::absolute(&dir.path().join("root")));
        let set = |option: &str, value: &str| s(&["set", "-p", "-t", "%3", option, value]);
        let mut marks = Vec::new();
        for cmd in [
            set("@swarm-root", root.to_str().unwrap()),
            set("@swarm-team", "t"),
            set("@swarm-member", "coder"),
            set("remain-on-exit", "on"),
            set("@swarm_name", "coder"),
            set("@swarm_color", "colour208"),
            s(&["selectp", "-T", "coder", "-t", "%3"]),
        ] {
            if !marks.is_empty() {
                marks.push(";".to_string());
            }
            marks.extend(cmd);
        }
        assert_eq!(calls[3][..4], s(&["tmux", "-u", "-L", "sock"]));
        assert_eq!(calls[3][4..], marks);
        assert_eq!(calls[4][4..6], s(&["show", "-p"]), "the marks are checked");
        let spec_path = dir.path().join("spawn/coder.json");
        assert_eq!(
            calls[5],
            tmux(&[
                "respawnp",
                "-k",
                "-t",
                "%3",
                "--",
                "/opt/swarm",
                "pane-exec",
                spec_path.to_str().unwrap()
            ])
        );
        let spec: ExecSpec = crate::store::fsio::read_json(&spec_path).unwrap().unwrap();
        assert_eq!(spec.argv, launch.argv);
        assert_eq!(spec.env, launch.env);
        assert_eq!(spec.cwd, launch.cwd);
        assert_eq!(
            b.member_extra()[SOCKET_FIELD],
            Value::from("/tmp/tmux-0/sock")
        );
    }

    #[test]
    fn words_ending_in_a_semicolon_are_escaped_and_titles_are_not_formats() {
        let dir = tempfile::tempdir().unwrap();
        let rec = Arc::new(Recorder::default());
        let mut b = launch_backend(&rec, dir.path());
        b.trampoline = Some(Trampoline {
            swarm_exe: "/opt/odd;".into(),
            spec_dir: dir.path().join("spawn;"),
        });
        b.layout.window = Some("@1".into());
        rec.answer("%4\t@1\t/tmp/tmux-0/sock\n"); // split
        rec.answer(""); // select-layout
        let pane = b
            .open_pane(&PaneSpec {
                name: "a#{pane_id}".into(),
                color: "x;".into(),
            })
            .unwrap();
        rec.answer(&format!(
            "{}%4\t0\t\t\t42\n",
            b.owner.expected("a#{pane_id}")
        ));
        b.start(
            &pane,
            &Launch {
                argv: vec!["/bin/agent".into()],
                env: vec![],
                cwd: "/".into(),
                log: None,
            },
        )
        .unwrap();
        let calls = rec.calls();
        let marks = &calls[2];
        assert!(marks.contains(&r"x\;".to_string()), "{marks:?}");
        assert!(marks.contains(&"a##{pane_id}".to_string()), "{marks:?}");
        let respawn = &calls[4];
        assert_eq!(respawn[respawn.len() - 3], r"/opt/odd\;");
    }

    #[test]
    fn a_pane_whose_marks_are_not_the_members_is_never_killed_or_captured() {
        let rec = Arc::new(Recorder::default());
        let owner = PaneOwner::new(std::path::Path::new("/nonexistent/root"), "old");
        let mut b = TmuxBackend::for_member(
            rec.clone(),
            TmuxServer::Path("/tmp/tmux-0/sock".into()),
            owner,
            PaneId("%0".into()),
            "x",
        );
        let theirs = PaneOwner::new(std::path::Path::new("/nonexistent/root"), "new");
        let listing = format!("{}%0\t0\t\t\t42\n", theirs.expected("x"));
        rec.answer(&listing);
        assert_eq!(b.state(&PaneId("%0".into())).unwrap(), PaneState::Gone);
        rec.answer(&listing);
        b.kill(&PaneId("%0".into())).unwrap();
        rec.answer(&listing);
        assert!(b.capture(&PaneId("%0".into())).is_err());
        rec.answer(&listing);
        assert!(b.attach_argv(&PaneId("%0".into()), false).is_err());
        // A pane this backend was not made for is not even asked about.
        assert_eq!(b.state(&PaneId("%1".into())).unwrap(), PaneState::Gone);
        let calls = rec.calls();
        assert_eq!(calls.len(), 4, "only the checks ran: {calls:?}");
        assert!(calls.iter().all(|c| c[4] == "show"), "{calls:?}");
    }
}
