//! Where a launch puts its panes, and opening each new one with a placeholder.
//!
//! Inside tmux the team gets its own window (or splits the current one with `--split`);
//! outside, a detached session; both are named `swarm-<team>-<root hash>` (owner.rs). A window or session that already exists (a second
//! launch into the same team) is split rather than made again. Every new pane runs a harmless
//! placeholder until `respawn-pane` replaces it, and the first pane of a window swarm made turns
//! on the border labels that show each member's name in its colour.

use tmux_interface::{
    HasSession, ListWindows, NewSession, NewWindow, SelectLayout, SetOption, SplitWindow,
};

use super::owner::PaneOwner;
use super::server::{literal, words_of, Client, TmuxEnv};
use crate::error::{Error, Result};

/// What a fresh pane runs until `respawn-pane` replaces it: two words, so tmux execs it without a
/// shell, and harmless if the launcher dies before the real command starts.
pub const PLACEHOLDER: [&str; 2] = ["sleep", "86400"];

pub(super) const NEW_PANE_FORMAT: &str = "#{pane_id}\t#{window_id}\t#{socket_path}";
/// The border label: the member's name in its colour; other panes keep their title.
const BORDER_FORMAT: &str =
    "#{?@swarm_name,#[fg=#{@swarm_color}#,bold] #{@swarm_name} #[default],#{pane_title}}";

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

impl Placement {
    /// Decides the placement of team `team` from the environment (asking tmux for the current
    /// session when inside it).
    pub(super) fn decide(
        client: &Client,
        owner: &PaneOwner,
        split: bool,
        env: &TmuxEnv,
    ) -> Result<Placement> {
        let name = owner.session_name();
        if !env.inside() {
            if split && env.tmux.is_some() {
                return Err(Error::usage(
                    "--split splits the current tmux window, but SWARM_TMUX_SOCKET puts the team in a detached session on that server; drop --split or unset SWARM_TMUX_SOCKET",
                ));
            }
            if split {
                return Err(Error::usage(
                    "--split splits the current tmux window, but swarm is not running inside tmux; drop --split",
                ));
            }
            return Ok(Placement::Session { name });
        }
        if split {
            let pane = env.tmux_pane.clone().ok_or_else(|| {
                Error::usage("--split: TMUX_PANE is not set, so swarm cannot tell which window to split; drop --split")
            })?;
            return Ok(Placement::Split { pane });
        }
        let mut args = vec!["display-message".to_string(), "-p".into()];
        if let Some(pane) = &env.tmux_pane {
            args.extend(["-t".into(), pane.clone()]);
        }
        args.push("#{session_id}".into());
        let session = client.tmux(args)?.trim().to_string();
        Ok(Placement::Window { session, name })
    }
}

/// The panes of one launch so far: its placement, the team's window once known, and the
/// server's socket path as tmux reported it.
#[derive(Debug, Default)]
pub(super) struct Layout {
    pub(super) placement: Option<Placement>,
    pub(super) window: Option<String>,
    pub(super) socket_path: Option<String>,
    /// The window was created by this launch (so its first pane is ours to use for the lead).
    created_window: bool,
}

impl Layout {
    /// Opens the next pane: the first one by the placement, every later one by splitting.
    pub(super) fn open(&mut self, client: &Client) -> Result<String> {
        if self.window.is_none() {
            self.open_first(client)
        } else {
            self.split(client)
        }
    }

    /// Opens the first pane of a launch: a new session or window, or a split of the user's.
    fn open_first(&mut self, client: &Client) -> Result<String> {
        let placement = self
            .placement
            .clone()
            .ok_or_else(|| Error::Backend("tmux backend has no placement".into()))?;
        let mut words = match &placement {
            Placement::Session { name } => {
                let exists = client
                    .run(vec![HasSession::new()
                        .target_session(format!("={name}"))
                        .build()])
                    .is_ok();
                if exists {
                    let out = client.run(vec![ListWindows::new()
                        .target_session(format!("={name}"))
                        .format("#{window_id}")
                        .build()])?;
                    self.window = out.lines().next().map(str::to_string);
                    return self.split(client);
                }
                self.created_window = true;
                words_of(
                    NewSession::new()
                        .detached()
                        .print()
                        .format(NEW_PANE_FORMAT)
                        .session_name(literal(name))
                        .window_name(literal(name))
                        .width(220)
                        .height(60)
                        .build(),
                )
            }
            Placement::Window { session, name } => {
                let out = client.run(vec![ListWindows::new()
                    .target_session(session.as_str())
                    .format("#{window_id}\t#{window_name}")
                    .build()])?;
                if let Some(id) = out.lines().find_map(|l| {
                    let (id, n) = l.split_once('\t')?;
                    (n == name).then(|| id.to_string())
                }) {
                    self.window = Some(id);
                    return self.split(client);
                }
                self.created_window = true;
                words_of(
                    NewWindow::new()
                        .detached()
                        .print()
                        .format(NEW_PANE_FORMAT)
                        .window_name(literal(name))
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
        let out = client.tmux(words)?;
        let pane = self.take_new_pane(&out)?;
        if self.created_window || matches!(placement, Placement::Split { .. }) {
            let window = self.window.clone().unwrap_or_default();
            client.run(vec![
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
    fn split(&mut self, client: &Client) -> Result<String> {
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
        let out = client.tmux(words)?;
        let pane = self.take_new_pane(&out)?;
        client.run(vec![SelectLayout::new()
            .target_pane(window.as_str())
            .layout_name("tiled")
            .build()])?;
        Ok(pane)
    }

    /// Re-tiles the team's window, if there is one yet.
    pub(super) fn tile(&self, client: &Client) -> Result<()> {
        if let Some(window) = &self.window {
            client.run(vec![SelectLayout::new()
                .target_pane(window.as_str())
                .layout_name("tiled")
                .build()])?;
        }
        Ok(())
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
}
