//! Teammates in tmux panes, through `tmux_interface`'s command builders.
//!
//! Every tmux call is built as argv and run through the [`Exec`] seam, so tests assert the exact
//! command lines and nothing reaches a shell: a pane is opened with a placeholder, titled and
//! coloured, and its real command starts with `respawn-pane -k ... -- ARGV` (tmux execs argv of
//! two or more words directly). `remain-on-exit on` keeps a crashed teammate's last output and
//! exit status on screen. Inside tmux the team gets its own window (or splits the current one
//! with `--split`); outside, a detached session `swarm-<team>`. `SWARM_TMUX_SOCKET` selects a
//! private server (`-L`), and the server's socket path is recorded per member so later commands
//! find the pane from any shell.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use tmux_interface::{
    CapturePane, HasSession, KillPane, ListPanes, ListWindows, NewSession, NewWindow, RespawnPane,
    SelectLayout, SelectPane, SetOption, SplitWindow, Tmux, TmuxCommand, TmuxCommands,
};

use super::{Exec, Launch, PaneBackend, PaneId, PaneInfo, PaneSpec, PaneState, Started};
use crate::backend::BackendKind;
use crate::error::{Error, Result};
use crate::store::colour::Colour;
use crate::store::roster::Member;

/// What a fresh pane runs until `respawn-pane` replaces it: two words, so tmux execs it without a
/// shell, and harmless if the launcher dies before the real command starts.
pub const PLACEHOLDER: [&str; 2] = ["sleep", "86400"];
/// Roster field (swarm-only) holding the tmux server's socket path.
pub const SOCKET_FIELD: &str = "swarmTmuxSocket";
/// Environment variable naming a private tmux server (`tmux -L NAME`).
pub const SOCKET_ENV: &str = "SWARM_TMUX_SOCKET";

const NEW_PANE_FORMAT: &str = "#{pane_id}\t#{window_id}\t#{socket_path}";
const LIST_FORMAT: &str = "#{pane_id}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}\t#{pane_pid}\t#{@swarm_name}\t#{pane_title}";
/// The border label: the member's name in its colour; other panes keep their title.
const BORDER_FORMAT: &str =
    "#{?@swarm_name,#[fg=#{@swarm_color}#,bold] #{@swarm_name} #[default],#{pane_title}}";

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
    fn global_args(&self) -> Vec<String> {
        let tmux = match self {
            TmuxServer::Default => Tmux::new(),
            TmuxServer::Name(n) => Tmux::new().socket_name(n.as_str()),
            TmuxServer::Path(p) => Tmux::new().socket_path(p.to_string_lossy().into_owned()),
        };
        argv_of(&tmux.build())
    }
}

/// Where a launch puts its panes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Outside tmux: a detached session of this name.
    Session { name: String },
    /// Inside tmux: a window of this name in session `session` (an id such as `$1`).
    Window { session: String, name: String },
    /// Inside tmux with `--split`: split the window holding this pane.
    Split { pane: String },
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

    fn server(&self) -> TmuxServer {
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
fn words_of(cmd: TmuxCommand) -> Vec<String> {
    cmd.to_vec().into_iter().map(|s| s.into_owned()).collect()
}

/// A tmux backend: for a launch (with a placement) or for operating on existing panes.
#[derive(Debug)]
pub struct TmuxBackend {
    exec: Arc<dyn Exec>,
    server: TmuxServer,
    placement: Option<Placement>,
    window: Option<String>,
    socket_path: Option<String>,
    /// The window was created by this launch (so its first pane is ours to use for the lead).
    created_window: bool,
}

impl TmuxBackend {
    /// A handle for panes that already exist (status, kill, attach).
    pub fn on_server(exec: Arc<dyn Exec>, server: TmuxServer) -> TmuxBackend {
        TmuxBackend {
            exec,
            server,
            placement: None,
            window: None,
            socket_path: None,
            created_window: false,
        }
    }

    /// A backend for launching team `team`: decides the placement from the environment.
    pub fn for_launch(
        exec: Arc<dyn Exec>,
        team: &str,
        split: bool,
        env: &TmuxEnv,
    ) -> Result<TmuxBackend> {
        let name = format!("swarm-{team}");
        let mut backend = TmuxBackend::on_server(exec, env.server());
        let placement = if env.inside() {
            if split {
                let pane = env.tmux_pane.clone().ok_or_else(|| {
                    Error::usage("--split: TMUX_PANE is not set, so swarm cannot tell which window to split; drop --split")
                })?;
                Placement::Split { pane }
            } else {
                let mut args = vec!["display-message".to_string(), "-p".into()];
                if let Some(pane) = &env.tmux_pane {
                    args.extend(["-t".into(), pane.clone()]);
                }
                args.push("#{session_id}".into());
                let session = backend.tmux(args)?.trim().to_string();
                Placement::Window { session, name }
            }
        } else {
            if split {
                return Err(Error::usage(
                    "--split splits the current tmux window, but swarm is not running inside tmux; drop --split",
                ));
            }
            Placement::Session { name }
        };
        backend.placement = Some(placement);
        Ok(backend)
    }

    pub fn placement(&self) -> Option<&Placement> {
        self.placement.as_ref()
    }

    /// True when this launch made the window, so a lead pane belongs at its start.
    pub fn created_window(&self) -> bool {
        self.created_window
    }

    /// Runs `tmux <server args> ARGS`.
    fn tmux(&self, args: Vec<String>) -> Result<String> {
        let mut argv = self.server.global_args();
        argv.extend(args);
        self.exec.run("tmux", &argv)
    }

    fn run(&self, cmds: Vec<TmuxCommand>) -> Result<String> {
        let mut all = TmuxCommands::new();
        for c in cmds {
            all.push(c);
        }
        self.tmux(all.to_vec().into_iter().map(|s| s.into_owned()).collect())
    }

    /// Opens the first pane of a launch: a new session or window, or a split of the user's.
    fn open_first(&mut self) -> Result<String> {
        let placement = self
            .placement
            .clone()
            .ok_or_else(|| Error::Backend("tmux backend has no placement".into()))?;
        let mut words = match &placement {
            Placement::Session { name } => {
                let exists = self
                    .run(vec![HasSession::new()
                        .target_session(format!("={name}"))
                        .build()])
                    .is_ok();
                if exists {
                    let out = self.run(vec![ListWindows::new()
                        .target_session(format!("={name}"))
                        .format("#{window_id}")
                        .build()])?;
                    self.window = out.lines().next().map(str::to_string);
                    return self.split();
                }
                self.created_window = true;
                words_of(
                    NewSession::new()
                        .detached()
                        .print()
                        .format(NEW_PANE_FORMAT)
                        .session_name(name.as_str())
                        .window_name(name.as_str())
                        .width(220)
                        .height(60)
                        .build(),
                )
            }
            Placement::Window { session, name } => {
                let out = self.run(vec![ListWindows::new()
                    .target_session(session.as_str())
                    .format("#{window_id}\t#{window_name}")
                    .build()])?;
                if let Some(id) = out.lines().find_map(|l| {
                    let (id, n) = l.split_once('\t')?;
                    (n == name).then(|| id.to_string())
                }) {
                    self.window = Some(id);
                    return self.split();
                }
                self.created_window = true;
                words_of(
                    NewWindow::new()
                        .detached()
                        .print()
                        .format(NEW_PANE_FORMAT)
                        .window_name(name.as_str())
                        .target_window(format!("{session}:"))
                        .build(),
                )
            }
            Placement::Split { pane } => words_of(
                SplitWindow::new()
                    .detached()
                    .horizontal()
                    .print()
                    .format(NEW_PANE_FORMAT)
                    .target_pane(pane.as_str())
                    .build(),
            ),
        };
        words.push("--".into());
        words.extend(PLACEHOLDER.iter().map(|s| s.to_string()));
        let out = self.tmux(words)?;
        let pane = self.take_new_pane(&out)?;
        if self.created_window || matches!(placement, Placement::Split { .. }) {
            let window = self.window.clone().unwrap_or_default();
            self.run(vec![
                SetOption::new()
                    .window()
                    .target_pane(window.as_str())
                    .option("pane-border-status")
                    .value("top")
                    .build(),
                SetOption::new()
                    .window()
                    .target_pane(window.as_str())
                    .option("pane-border-format")
                    .value(BORDER_FORMAT)
                    .build(),
            ])?;
        }
        Ok(pane)
    }

    /// Splits the team's window and re-tiles it.
    fn split(&mut self) -> Result<String> {
        let window = self.window.clone().unwrap_or_default();
        let mut words = words_of(
            SplitWindow::new()
                .detached()
                .print()
                .format(NEW_PANE_FORMAT)
                .target_pane(window.as_str())
                .build(),
        );
        words.push("--".into());
        words.extend(PLACEHOLDER.iter().map(|s| s.to_string()));
        let out = self.tmux(words)?;
        let pane = self.take_new_pane(&out)?;
        self.run(vec![SelectLayout::new()
            .target_pane(window.as_str())
            .layout_name("tiled")
            .build()])?;
        Ok(pane)
    }

    fn take_new_pane(&mut self, out: &str) -> Result<String> {
        let line = out.lines().next().unwrap_or_default();
        let mut parts = line.split('\t');
        let pane = parts.next().unwrap_or_default();
        if !pane.starts_with('%') {
            return Err(Error::Backend(format!(
                "tmux did not report the new pane (got {line:?})"
            )));
        }
        if let Some(window) = parts.next().filter(|w| w.starts_with('@')) {
            self.window.get_or_insert_with(|| window.to_string());
        }
        if let Some(socket) = parts.next().filter(|s| !s.is_empty()) {
            self.socket_path = Some(socket.to_string());
        }
        Ok(pane.to_string())
    }

    /// Every pane of the server: id, state, swarm name, title.
    fn list_all(&self, target: Option<&str>) -> Result<Vec<(PaneInfo, String)>> {
        let mut list = ListPanes::new().format(LIST_FORMAT);
        list = match target {
            Some(t) => list.target(t),
            None => list.all(),
        };
        let out = match self.run(vec![list.build()]) {
            Ok(out) => out,
            Err(Error::Command { detail, .. }) if server_missing(&detail) => return Ok(vec![]),
            Err(e) => return Err(e),
        };
        Ok(out.lines().filter_map(parse_list_line).collect())
    }

    /// The pane's scrollback and screen as text (`capture-pane -p -J -S -`).
    pub fn capture(&self, pane: &PaneId) -> Result<String> {
        self.run(vec![CapturePane::new()
            .stdout()
            .join()
            .start_line("-")
            .target_pane(pane.as_str())
            .build()])
    }

    /// argv of `tmux ... attach-session -t PANE` (outside tmux) or `switch-client -t PANE`
    /// (inside), after selecting the pane's window and the pane itself.
    pub fn attach_argv(&self, pane: &PaneId, inside: bool) -> Result<Vec<String>> {
        self.run(vec![
            tmux_interface::SelectWindow::new()
                .target_window(pane.as_str())
                .build(),
            SelectPane::new().target_pane(pane.as_str()).build(),
        ])?;
        let mut argv = vec!["tmux".to_string()];
        argv.extend(self.server.global_args());
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

/// tmux's ways of saying there is no server (so no panes).
fn server_missing(stderr: &str) -> bool {
    stderr.contains("no server running")
        || stderr.contains("error connecting to")
        || stderr.contains("No such file or directory")
}

fn parse_list_line(line: &str) -> Option<(PaneInfo, String)> {
    let f: Vec<&str> = line.split('\t').collect();
    if f.len() < 7 || !f[0].starts_with('%') {
        return None;
    }
    let state = if f[1] == "1" {
        PaneState::Dead {
            code: f[2].parse().ok(),
            signal: f[3].parse().ok(),
        }
    } else {
        PaneState::Alive {
            pid: f[4].parse().ok(),
        }
    };
    let title = if f[5].is_empty() { f[6] } else { f[5] };
    Some((
        PaneInfo {
            pane: PaneId(f[0].to_string()),
            title: title.to_string(),
            state,
        },
        f[5].to_string(),
    ))
}

impl PaneBackend for TmuxBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Tmux
    }

    fn open_pane(&mut self, spec: &PaneSpec) -> Result<PaneId> {
        let pane = if self.window.is_none() {
            self.open_first()?
        } else {
            self.split()?
        };
        let colour = Colour::named(&spec.color).map_or(spec.color.as_str(), |c| c.tmux);
        let set = |option: &str, value: &str| {
            SetOption::new()
                .pane()
                .target_pane(pane.as_str())
                .option(option.to_string())
                .value(value.to_string())
                .build()
        };
        let result = self.run(vec![
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
        self.tmux(words)?;
        Ok(Started::default())
    }

    fn state(&self, pane: &PaneId) -> Result<PaneState> {
        Ok(self
            .list_all(None)?
            .into_iter()
            .find(|(info, _)| info.pane == *pane)
            .map_or(PaneState::Gone, |(info, _)| info.state))
    }

    fn kill(&mut self, pane: &PaneId) -> Result<()> {
        match self.run(vec![KillPane::new().target_pane(pane.as_str()).build()]) {
            Ok(_) => Ok(()),
            Err(e) => match self.state(pane) {
                Ok(PaneState::Gone) => Ok(()),
                _ => Err(e),
            },
        }
    }

    fn list(&self) -> Result<Vec<PaneInfo>> {
        let panes = self.list_all(self.window.as_deref())?;
        Ok(panes
            .into_iter()
            .filter(|(_, swarm_name)| self.window.is_some() || !swarm_name.is_empty())
            .map(|(info, _)| info)
            .collect())
    }

    fn finish_layout(&mut self) -> Result<()> {
        if let Some(window) = self.window.clone() {
            self.run(vec![SelectLayout::new()
                .target_pane(window.as_str())
                .layout_name("tiled")
                .build()])?;
        }
        Ok(())
    }

    fn attach_hint(&self) -> Option<String> {
        match self.placement.as_ref()? {
            Placement::Session { name } => {
                let mut argv = vec!["tmux".to_string()];
                argv.extend(self.server.global_args());
                argv.extend(["attach".into(), "-t".into(), name.clone()]);
                Some(format!(
                    "`swarm attach` or `{}`",
                    super::display_argv(&argv)
                ))
            }
            Placement::Window { name, .. } => Some(format!(
                "the team is in window {name} of this session (`swarm attach` switches to it)"
            )),
            Placement::Split { .. } => Some("the teammates are split into this window".into()),
        }
    }

    fn member_extra(&self) -> Map<String, Value> {
        let mut extra = Map::new();
        if let Some(socket) = &self.socket_path {
            extra.insert(SOCKET_FIELD.into(), Value::from(socket.clone()));
        }
        extra
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::exec::testing::Recorder;

    fn backend(rec: &Arc<Recorder>, placement: Placement) -> TmuxBackend {
        let mut b = TmuxBackend::on_server(rec.clone(), TmuxServer::Name("sock".into()));
        b.placement = Some(placement);
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

    #[test]
    fn pane_states_come_from_list_panes() {
        let rec = Arc::new(Recorder::default());
        rec.answer(
            "%1\t0\t\t\t123\tcoder\tcoder\n%2\t1\t3\t\t0\ttester\ttester\n%4\t1\t\t9\t0\t\tbash\n",
        );
        let b = backend(&rec, Placement::Split { pane: "%0".into() });
        let states: Vec<PaneState> = b
            .list_all(None)
            .unwrap()
            .into_iter()
            .map(|(i, _)| i.state)
            .collect();
        assert_eq!(
            states,
            [
                PaneState::Alive { pid: Some(123) },
                PaneState::Dead {
                    code: Some(3),
                    signal: None
                },
                PaneState::Dead {
                    code: None,
                    signal: Some(9)
                }
            ]
        );
        rec.fail("no server running on /tmp/tmux-0/sock");
        assert_eq!(b.state(&PaneId("%1".into())).unwrap(), PaneState::Gone);
    }

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
