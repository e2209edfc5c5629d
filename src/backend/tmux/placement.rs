//! Where a launch puts its panes, and opening one new pane with a placeholder.
//!
//! Inside tmux the team gets its own window (or splits the current one with `--split`);
//! outside, a detached session; both are named `swarm-<team>-<root hash>` (owner.rs). A window
//! or session that already exists (a second launch into the same team) is split rather than
//! made again. Each new pane goes right after the last one, so `select-layout tiled` shows the
//! panes in roster order, left to right and top to bottom. A launch opens all its panes at once
//! (batch.rs); [`Layout::open`] opens a single pane running a harmless placeholder until
//! `respawn-pane` replaces it. The first pane of a window swarm made turns on the border labels
//! that show each member's name in its colour.

use tmux_interface::{ListPanes, NewSession, NewWindow, SelectLayout, SetOption, SplitWindow};

use super::owner::PaneOwner;
use super::server::{literal, words_of, Client, TmuxEnv};
use crate::error::{Error, Result};

/// What a fresh pane runs until `respawn-pane` replaces it: two words, so tmux execs it without a
/// shell, and harmless if the launcher dies before the real command starts.
pub const PLACEHOLDER: [&str; 2] = ["sleep", "86400"];

pub(super) const NEW_PANE_FORMAT: &str = "#{pane_id}\t#{window_id}\t#{socket_path}";
/// The border label: the member's name in its colour; other panes keep their title.
/// `new-session` for a team's detached session `name`, printing its first pane
/// ([`NEW_PANE_FORMAT`]); the caller appends `--` and the pane's command.
pub(super) fn new_session(name: &str) -> tmux_interface::TmuxCommand<'static> {
    NewSession::new()
        .detached()
        .print()
        .format(NEW_PANE_FORMAT)
        .session_name(literal(name))
        .window_name(literal(name))
        .width(220)
        .height(60)
        .build()
}

pub(super) const BORDER_FORMAT: &str =
    "#{?@swarm_name,#[fg=#{@swarm_color}#,bold] #{@swarm_name} #[default],#{pane_title}}";

/// Where a launch puts its panes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Outside tmux: a detached session of this name.
    Session { name: String },
    /// Inside tmux: a window of this name in session `session` (an id such as `$1`).
    Window { session: String, name: String },
    /// Inside tmux with `--split`: split the window (`window`, an id such as `@1`) holding
    /// this pane.
    Split { pane: String, window: String },
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
            let window = client
                .tmux(vec![
                    "display-message".into(),
                    "-p".into(),
                    "-t".into(),
                    pane.clone(),
                    "#{window_id}".into(),
                ])?
                .trim()
                .to_string();
            return Ok(Placement::Split { pane, window });
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
    /// The last pane of the team's window, after which the next one goes.
    pub(super) last_pane: Option<String>,
}

/// The team's window when a launch finds it already there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Existing {
    pub(super) window: String,
    pub(super) last_pane: String,
    pub(super) active_pane: String,
}

/// The first window in a `list-panes -s -F WINDOW_PANES_FORMAT` listing whose name is `name`
/// (any name when `None`): its id, last pane and active pane.
pub(super) fn find_window(listing: &str, name: Option<&str>) -> Option<Existing> {
    let mut found: Option<Existing> = None;
    for line in listing.lines() {
        let Some((window, rest)) = line.split_once('\t') else {
            continue;
        };
        let Some((rest, active)) = rest.rsplit_once('\t') else {
            continue;
        };
        let Some((window_name, pane)) = rest.rsplit_once('\t') else {
            continue;
        };
        if name.is_some_and(|n| n != window_name) {
            continue;
        }
        match &mut found {
            None => {
                found = Some(Existing {
                    window: window.to_string(),
                    last_pane: pane.to_string(),
                    active_pane: pane.to_string(),
                })
            }
            Some(e) if e.window == window => e.last_pane = pane.to_string(),
            Some(_) => continue,
        }
        if active == "1" {
            if let Some(e) = &mut found {
                e.active_pane = pane.to_string();
            }
        }
    }
    found
}

/// What [`find_window`] reads, from `list-panes -s`.
pub(super) const WINDOW_PANES_FORMAT: &str =
    "#{window_id}\t#{window_name}\t#{pane_id}\t#{pane_active}";

impl Placement {
    /// The team's window if a session or window of the team's name is already there (`None`
    /// for `--split`, which always splits the user's pane).
    pub(super) fn existing(&self, client: &Client) -> Result<Option<Existing>> {
        let list = |session: String| {
            ListPanes::new()
                .session()
                .target(session)
                .format(WINDOW_PANES_FORMAT)
                .build()
        };
        match self {
            // No such session (or no server yet): a new one is made.
            Placement::Session { name } => Ok(client
                .run(vec![list(format!("={name}"))])
                .ok()
                .and_then(|out| find_window(&out, None))),
            Placement::Window { session, name } => {
                let out = client.run(vec![list(session.clone())])?;
                Ok(find_window(&out, Some(name)))
            }
            Placement::Split { .. } => Ok(None),
        }
    }
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
        if let Some(existing) = placement.existing(client)? {
            self.window = Some(existing.window);
            self.last_pane = Some(existing.last_pane);
            return self.split(client);
        }
        let mut words = match &placement {
            Placement::Session { name } => {
                self.created_window = true;
                words_of(new_session(name))
            }
            Placement::Window { session, name } => {
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
            Placement::Split { pane, .. } => words_of(
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

    /// Splits the team's window after its last pane and re-tiles it.
    fn split(&mut self, client: &Client) -> Result<String> {
        let window = self.window.clone().unwrap_or_default();
        let after = self.last_pane.clone().unwrap_or_else(|| window.clone());
        let mut words = words_of(
            SplitWindow::new()
                .detached()
                .print()
                .format(NEW_PANE_FORMAT)
                .target_pane(after)
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

    /// Records a pane tmux just reported (`NEW_PANE_FORMAT`): the team's window and server,
    /// and the pane as the last one.
    pub(super) fn take_new_pane(&mut self, out: &str) -> Result<String> {
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
        self.last_pane = Some(pane.to_string());
        Ok(pane.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_team_window_is_found_with_its_last_and_active_pane() {
        let listing = "@1\tmain\t%0\t1\n@2\tswarm-t-abc\t%1\t0\n@2\tswarm-t-abc\t%4\t1\n@2\tswarm-t-abc\t%2\t0\n@3\tswarm-t-abc\t%9\t1\n";
        let want = Existing {
            window: "@2".into(),
            last_pane: "%2".into(),
            active_pane: "%4".into(),
        };
        assert_eq!(find_window(listing, Some("swarm-t-abc")), Some(want));
        assert_eq!(find_window(listing, None).unwrap().window, "@1");
        assert_eq!(find_window(listing, Some("nope")), None);
        // A name with a tab in it is still read whole.
        let odd = "@5\ta\tb\t%7\t1\n";
        assert_eq!(find_window(odd, Some("a\tb")).unwrap().last_pane, "%7");
    }
}
