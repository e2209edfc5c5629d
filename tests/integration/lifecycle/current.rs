//! The current team: a command without `--team` acts on the team whose pane it runs in, else on
//! the only team with a running teammate, else it says which teams it could mean.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use serde_json::json;

use super::{on, shell_file, wait_running};
use crate::support::*;

/// A fake `claude` that asks `swarm status` (with no team) from inside its own pane, then waits.
fn asks_which_team(env: &Env) -> std::path::PathBuf {
    let out = env.path("out");
    std::fs::create_dir_all(&out).unwrap();
    let script = env.path("which-team");
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/sh
name=""
while [ $# -gt 0 ]; do case "$1" in --agent-name) name="$2"; shift;; esac; shift; done
env -u SWARM_TEAM '{bin}' --json status > '{out}'/"$name".tmp 2> '{out}'/"$name".err
mv '{out}'/"$name".tmp '{out}'/"$name".status
sleep 300
"#,
            bin = BIN,
            out = out.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn without_team_a_command_acts_on_its_panes_team_or_the_only_running_one() {
    let env = Env::new();
    let tmux = Tmux::new();
    let a = shell_file(&env, "a", &["worker"], json!([]));
    on(&env, &tmux, ["launch", a.to_str().unwrap()]).ok();
    let agent = asks_which_team(&env);
    on(
        &env,
        &tmux,
        [
            "--team",
            "b",
            "launch",
            "--no-lead-pane",
            // Found by its pane's marks on the server `$TMUX` names: a contained teammate can
            // reach neither (`launch::sandbox`), and knows its team from `SWARM_TEAM`.
            "--no-sandbox",
            "--teammate",
            "probe=hi",
        ],
    )
    .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
    .ok();
    wait_running(&env, &tmux, "a", &["worker"]);

    // Inside b's pane, with two teams running, the pane says which team it is.
    let answer = env.path("out/probe.status");
    eventually(Duration::from_secs(30), "the probe's status", || {
        answer.is_file().then_some(())
    });
    let seen = read_json(&answer);
    assert_eq!(seen["team"], "b", "{seen}");

    // Outside any pane, two running teams are one too many: say which.
    on(&env, &tmux, ["status"])
        .refused("no team given, and 2 teams are running (a, b): pass --team NAME");

    // With b down, a is the only running team: status, task list and attach's checks find it.
    on(&env, &tmux, ["--team", "b", "down"]).ok();
    let status = on(&env, &tmux, ["--json", "status"]).ok().json();
    assert_eq!(status["team"], "a");
    on(&env, &tmux, ["task", "create", "x"]).ok();
    assert_eq!(
        env.swarm(["--json", "--team", "a", "task", "list"])
            .ok()
            .json()[0]["subject"],
        "x"
    );

    // Nothing running: the error names the teams there are.
    // (The lead console of a may still be marking its last messages read as it exits, so this
    // checks the exit and the message, not the files.)
    on(&env, &tmux, ["down"]).ok();
    let out = on(&env, &tmux, ["status"]).code(2);
    out.stderr_has("no team given, and no team under")
        .stderr_has("has a running teammate: pass --team NAME or set SWARM_TEAM (teams: a, b)");
}
