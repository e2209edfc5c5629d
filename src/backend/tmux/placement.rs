//! Where a launch puts its panes, and opening one new pane with a placeholder.
//!
//! Inside tmux the team gets its own window (or splits the current one with `--split`);
//! outside, a detached session; both are named `swarm-<team>-<root hash>` (owner.rs). A window
//! or session that already exists (a second launch into the same team) is split rather than
//! made again. Each new pane goes right after the last one, so `select-layout tiled` shows the
//! panes in roster order, left to right and top to bottom. A window holds at most
//! [`Layout::per_window`] panes (16 unless the swarm file or `--panes-per-window` says); the
//! next pane opens a further window of the same session, `<name>-2`, `<name>-3` and so on, and
//! so does a pane tmux has no room for in the window (batch.rs). A launch opens all its panes
//! at once (batch.rs); [`Layout::open`] opens a single pane running a harmless placeholder
//! until `respawn-pane` replaces it. The first pane of a window swarm made turns on the border
//! labels that show each member's name in its colour.

use tmux_interface::{ListPanes, NewSession, NewWindow, SelectLayout, SetOption, SplitWindow};

use super::owner::PaneOwner;
use super::server::{literal, words_of, Client, TmuxEnv};
use crate::error::{Error, Result};

/// What a fresh pane runs until `respawn-pane` replaces it: two words, so tmux execs it without a
/// shell, and harmless if the launcher dies before the real command starts.
pub(super) const PLACEHOLDER: [&str; 2] = ["sleep", "86400"];

/// What tmux prints of a pane it made: the pane's process comes with it, so a launch records
/// every teammate's pid without one more call per pane.
pub(super) const NEW_PANE_FORMAT: &str = "#{pane_id}\t#{window_id}\t#{socket_path}\t#{pane_pid}";
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
pub(super) enum Placement {
    /// Outside tmux: a detached session of this name.
    Session { name: String },
    /// Inside tmux: a window of this name in session `session` (an id such as `$1`).
    Window { session: String, name: String },
    /// Inside tmux with `--split`: split the window (`window`, an id such as `@1`, of session
    /// `session`) holding this pane; further windows are named after `name`.
    Split {
        pane: String,
        window: String,
        session: String,
        name: String,
    },
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
            let ids = client.tmux(vec![
                "display-message".into(),
                "-p".into(),
                "-t".into(),
                pane.clone(),
                "#{window_id}\t#{session_id}".into(),
            ])?;
            let (window, session) = ids.trim().split_once('\t').unwrap_or((ids.trim(), ""));
            return Ok(Placement::Split {
                pane,
                window: window.to_string(),
                session: session.to_string(),
                name,
            });
        }
        // The team already has a window on this server (its detached session, from a launch
        // outside tmux, or a window of another session): `up` and a second launch go on
        // there, not into a new window of this session, which would split the team in two.
        if let Some(session) = team_session(client, &name) {
            return Ok(Placement::Window { session, name });
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

/// The session (its id) holding a window of the team's name `name` (or one of its further
/// windows, `name-2`...), on the server `client` talks to; the first one tmux lists.
fn team_session(client: &Client, name: &str) -> Option<String> {
    let out = client
        .tmux(vec![
            "list-windows".into(),
            "-a".into(),
            "-F".into(),
            "#{session_id}\t#{window_name}".into(),
        ])
        .ok()?;
    out.lines().find_map(|line| {
        let (session, window) = line.split_once('\t')?;
        window_number(window, name).map(|_| session.to_string())
    })
}

/// Panes in one window unless the swarm file or `--panes-per-window` says otherwise.
pub(super) const DEFAULT_PANES_PER_WINDOW: usize = 16;

/// The panes of one launch so far: its placement, the team's window the next pane goes into
/// (with how many panes it holds and which of the team's windows it is), and the server's
/// socket path as tmux reported it.
#[derive(Debug)]
pub(super) struct Layout {
    pub(super) placement: Option<Placement>,
    pub(super) window: Option<String>,
    /// Panes in [`Self::window`].
    pub(super) window_panes: usize,
    /// Which of the team's windows [`Self::window`] is: 1 for the first, `k` for `<name>-k`.
    pub(super) window_number: usize,
    pub(super) socket_path: Option<String>,
    /// The window was created by this launch (so its first pane is ours to use for the lead).
    created_window: bool,
    /// The last pane of the team's window, after which the next one goes.
    pub(super) last_pane: Option<String>,
    /// Most panes in one window; the next one opens a further window of the session.
    pub(super) per_window: usize,
}

impl Default for Layout {
    fn default() -> Layout {
        Layout {
            placement: None,
            window: None,
            window_panes: 0,
            window_number: 0,
            socket_path: None,
            created_window: false,
            last_pane: None,
            per_window: DEFAULT_PANES_PER_WINDOW,
        }
    }
}

/// The team's last window when a launch finds it already there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Existing {
    pub(super) window: String,
    pub(super) last_pane: String,
    pub(super) active_pane: String,
    /// Panes in it.
    pub(super) panes: usize,
    /// Which of the team's windows it is (1, or `k` for `<name>-k`).
    pub(super) number: usize,
}

/// Which of the team's windows a window called `window_name` is: 1 for `name` itself, `k` for
/// `name-k`; `None` for any other window.
pub(super) fn window_number(window_name: &str, name: &str) -> Option<usize> {
    if window_name == name {
        return Some(1);
    }
    let k = window_name.strip_prefix(name)?.strip_prefix('-')?;
    k.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| k.parse().ok())
        .flatten()
        .filter(|k| *k > 1)
}

/// The name of the team's window number `k` (see [`window_number`]).
pub(super) fn window_name(name: &str, k: usize) -> String {
    if k <= 1 {
        name.to_string()
    } else {
        format!("{name}-{k}")
    }
}

/// The team's last window (the highest [`window_number`]) in a `list-panes -s -F
/// WINDOW_PANES_FORMAT` listing: its id, last pane, active pane and pane count. `name: None`
/// takes the first window of any name (a session that is the team's own).
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
        let number = match name {
            Some(n) => match window_number(window_name, n) {
                Some(k) => k,
                None => continue,
            },
            None => 1,
        };
        match &mut found {
            Some(e) if e.window == window => {
                e.last_pane = pane.to_string();
                e.panes += 1;
            }
            Some(e) if number <= e.number => continue,
            _ => {
                found = Some(Existing {
                    window: window.to_string(),
                    last_pane: pane.to_string(),
                    active_pane: pane.to_string(),
                    panes: 1,
                    number,
                })
            }
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
            // No such session (or no server yet): a new one is made. A window named as the
            // team's is looked for first; a session whose windows were all renamed is still
            // the team's own.
            Placement::Session { name } => Ok(client
                .run(vec![list(format!("={name}"))])
                .ok()
                .and_then(|out| find_window(&out, Some(name)).or_else(|| find_window(&out, None)))),
            Placement::Window { session, name } => {
                let out = client.run(vec![list(session.clone())])?;
                Ok(find_window(&out, Some(name)))
            }
            Placement::Split { .. } => Ok(None),
        }
    }
}

impl Placement {
    /// The session further windows go into: its id, or `=NAME` (exactly that name).
    pub(super) fn session_target(&self) -> String {
        match self {
            Placement::Session { name } => format!("={name}"),
            Placement::Window { session, .. } | Placement::Split { session, .. } => session.clone(),
        }
    }

    /// What the team's windows are named after (`swarm-<team>-<root hash>`).
    pub(super) fn base_name(&self) -> &str {
        match self {
            Placement::Session { name }
            | Placement::Window { name, .. }
            | Placement::Split { name, .. } => name,
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
            self.found(&existing);
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
        let (pane, _) = self.take_new_pane(&out)?;
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
        let (pane, _) = self.take_new_pane(&out)?;
        client.run(vec![SelectLayout::new()
            .target_pane(window.as_str())
            .layout_name("tiled")
            .build()])?;
        Ok(pane)
    }

    /// Goes on after the team's window found already there.
    pub(super) fn found(&mut self, existing: &Existing) {
        self.window = Some(existing.window.clone());
        self.last_pane = Some(existing.last_pane.clone());
        self.window_panes = existing.panes;
        self.window_number = existing.number;
    }

    /// Whether the next pane goes into a further window: this one holds as many as it may.
    pub(super) fn window_full(&self) -> bool {
        self.window.is_some() && self.window_panes >= self.per_window.max(1)
    }

    /// Records a pane tmux just reported (`NEW_PANE_FORMAT`): the team's window (a new one
    /// starts its count again) and server, and the pane as the last one.
    /// Takes in a pane tmux made (a [`NEW_PANE_FORMAT`] line): its id, and its process when
    /// the line says it.
    pub(super) fn take_new_pane(&mut self, out: &str) -> Result<(String, Option<u32>)> {
        let line = out.lines().next().unwrap_or_default();
        let mut parts = line.split('\t');
        let pane = parts.next().unwrap_or_default();
        if !pane.starts_with('%') {
            return Err(Error::Backend(format!(
                "tmux did not report the new pane (got {line:?})"
            )));
        }
        if let Some(window) = parts.next().filter(|w| w.starts_with('@')) {
            if self.window.as_deref() == Some(window) {
                self.window_panes += 1;
            } else {
                self.window = Some(window.to_string());
                self.window_panes = 1;
                self.window_number += 1;
            }
        }
        if let Some(socket) = parts.next().filter(|s| !s.is_empty()) {
            self.socket_path = Some(socket.to_string());
        }
        self.last_pane = Some(pane.to_string());
        Ok((pane.to_string(), parts.next().and_then(|p| p.parse().ok())))
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
            panes: 3,
            number: 1,
        };
        assert_eq!(find_window(listing, Some("swarm-t-abc")), Some(want));
        assert_eq!(find_window(listing, None).unwrap().window, "@1");
        assert_eq!(find_window(listing, Some("nope")), None);
        // A name with a tab in it is still read whole.
        let odd = "@5\ta\tb\t%7\t1\n";
        assert_eq!(find_window(odd, Some("a\tb")).unwrap().last_pane, "%7");
    }

    #[test]
    fn the_last_of_the_teams_windows_is_the_one_to_go_on_in() {
        let listing = "@2\tswarm-t-abc\t%1\t1\n@2\tswarm-t-abc\t%2\t0\n@7\tswarm-t-abc-3\t%8\t0\n@5\tswarm-t-abc-2\t%5\t1\n@7\tswarm-t-abc-3\t%9\t1\n@9\tswarm-t-abcd\t%3\t0\n";
        let got = find_window(listing, Some("swarm-t-abc")).unwrap();
        assert_eq!((got.window.as_str(), got.panes, got.number), ("@7", 2, 3));
        assert_eq!(
            (got.last_pane.as_str(), got.active_pane.as_str()),
            ("%9", "%9")
        );
        assert_eq!(window_number("swarm-t-abc-12", "swarm-t-abc"), Some(12));
        for other in [
            "swarm-t-abcd",
            "swarm-t-abc-",
            "swarm-t-abc-1",
            "swarm-t-abc-x2",
        ] {
            assert_eq!(window_number(other, "swarm-t-abc"), None, "{other}");
        }
        assert_eq!(window_name("w", 1), "w");
        assert_eq!(window_name("w", 2), "w-2");
    }
}
