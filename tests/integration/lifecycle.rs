//! A team's whole life through the real binary on private tmux servers: which team a command
//! means when none is given, `swarm up` and `swarm restart` bringing teammates back, `swarm down`
//! closing what swarm opened, `swarm prune` and an honest `team list`, and the README's
//! "Everyday use" block run as written.

mod current;
mod down;
mod interrupt;
mod killed;
mod prune;
mod readme;
mod small;
mod state;
mod up;
mod wake;

use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

/// A swarm file for team `team`: built-in shell teammates `names`, and `tasks` (JSON array).
fn shell_file(env: &Env, team: &str, names: &[&str], tasks: Value) -> PathBuf {
    let teammates: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "prompt": "$ echo ready"}))
        .collect();
    let path = env.path(&format!("{team}.json"));
    std::fs::create_dir_all(env.path("work")).unwrap();
    std::fs::write(
        &path,
        json!({"team": team, "agent": "shell", "cwd": "work", "teammates": teammates,
               "tasks": tasks})
        .to_string(),
    )
    .unwrap();
    path
}

/// `swarm ARGS` on the private tmux server, with no team given: the command works it out.
fn on<I, S>(env: &Env, tmux: &Tmux, args: I) -> Swarm
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    env.swarm(args)
        .env_remove("SWARM_TEAM")
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
}

fn status(env: &Env, tmux: &Tmux, team: &str) -> Value {
    on(env, tmux, ["--json", "--team", team, "status"])
        .ok()
        .json()
}

/// Whether `name`'s runtime holds its liveness lock and its pane is alive.
fn is_running(doc: &Value, name: &str) -> bool {
    let m = member(doc, name);
    m["liveness"] == "alive" && m["pane"]["state"] == "alive"
}

/// Team `t`: one shell teammate `worker`, launched without a lead console pane, and running.
fn worker_team(env: &Env, tmux: &Tmux) {
    let file = shell_file(env, "t", &["worker"], json!([]));
    on(
        env,
        tmux,
        ["launch", "--no-lead-pane", file.to_str().unwrap()],
    )
    .ok();
    wait_running(env, tmux, "t", &["worker"]);
}

/// Waits until every one of `names` in `team` runs.
fn wait_running(env: &Env, tmux: &Tmux, team: &str, names: &[&str]) -> Value {
    eventually(Duration::from_secs(30), "teammates running", || {
        let s = status(env, tmux, team);
        names.iter().all(|n| is_running(&s, n)).then_some(s)
    })
}

fn tasks(env: &Env, team: &str) -> Vec<Value> {
    env.swarm(["--json", "--team", team, "task", "list"])
        .ok()
        .json()
        .as_array()
        .unwrap()
        .clone()
}
