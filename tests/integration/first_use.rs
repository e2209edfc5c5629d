//! What a new user trips over (issue 24), each as the user met it: a relative `--root`, a
//! crashed teammate's output, the demo's root beside the default one, the autonomous example's
//! lead pane, `swarm attach` and `swarm up` inside tmux, `swarm up` without a file, `swarm prune`
//! and team deletion, YAML swarm files and the small things (typos, warnings, exit codes,
//! argument help, dry runs), and `swarm init`.

mod crash_output;
mod current_team;
mod default_roots;
mod inside_tmux;
mod install;
mod prune;
mod relative_root;
mod small;
mod up_again;
mod yaml;

use std::ffi::OsStr;
use std::time::Duration;

use crate::support::*;

/// Long enough for a teammate to start on two noisy cores.
const LONG: Duration = Duration::from_secs(60);

/// `swarm ARGS` on the private tmux server with no root and no team from the environment:
/// what a user typing in a fresh shell runs.
fn fresh<I, S>(env: &Env, tmux: &Tmux, args: I) -> Swarm
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    env.swarm(args)
        .env_remove("SWARM_ROOT")
        .env_remove("SWARM_TEAM")
        .env("HOME", env.path("home"))
        .env("XDG_DATA_HOME", env.path("home/.local/share"))
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
}

/// The text of every pane on the server, one block per pane.
fn screens(tmux: &Tmux) -> String {
    let panes = tmux.cmd(["list-panes", "-a", "-F", "#{pane_id}"]).stdout;
    panes
        .lines()
        .map(|p| {
            tmux.cmd(["capture-pane", "-p", "-J", "-S", "-", "-t", p])
                .stdout
        })
        .collect::<Vec<_>>()
        .join("\n----\n")
}
