//! Item 2: a teammate's last lines outlive its pane. The lead console closes a dead teammate's
//! pane, and `swarm kill` and `swarm down` close live ones; each keeps the pane's last lines in
//! `teams/<t>/logs/<name>.log` first, `swarm logs` reads them there, and the console prints
//! them when it retires the dead teammate.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::*;

/// A fake `claude` teammate (through `CLAUDE_CODE_TEAMMATE_COMMAND`) that prints `says` and
/// then runs `then` (shell code).
fn fake_claude(env: &Env, says: &str, then: &str) -> PathBuf {
    let path = env.path("fake-claude");
    std::fs::write(&path, format!("#!/bin/sh\necho '{says}'\n{then}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn launch(env: &Env, tmux: &Tmux, agent: &PathBuf, extra: &[&str]) {
    // A teammate that dies at start fails a launch that waits for it (issue 20 item 4); here the
    // console and the close commands are under test, so the launch does not wait.
    let mut args = vec![
        "launch",
        "--agent",
        "claude",
        "--teammate",
        "a=hello",
        "--no-wait",
    ];
    args.extend(extra);
    env.swarm(args)
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", agent)
        .ok();
}

fn pane_of(env: &Env, name: &str) -> String {
    let config = read_json(&env.path("teams/t/config.json"));
    member(&config, name)["tmuxPaneId"]
        .as_str()
        .unwrap()
        .to_string()
}

fn pane_gone(tmux: &Tmux, pane: &str) -> bool {
    !tmux
        .cmd(["list-panes", "-a", "-F", "#{pane_id}"])
        .stdout
        .lines()
        .any(|p| p == pane)
}

#[test]
fn a_teammate_that_dies_at_start_keeps_its_last_lines_after_the_console_closes_its_pane() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_claude(&env, "API Error: Connection error (ECONNRESET)", "exit 1");
    launch(&env, &tmux, &agent, &[]);
    let pane = pane_of(&env, "a");
    let lead = pane_of(&env, "team-lead");
    let console = || {
        tmux.cmd(["capture-pane", "-p", "-J", "-S", "-", "-t", &lead])
            .stdout
    };
    eventually(LONG, "the console to retire a and close its pane", || {
        (console().contains("a stopped without saying goodbye") && pane_gone(&tmux, &pane))
            .then_some(())
    });
    eventually(LONG, "the console to print a's last lines", || {
        console().contains("ECONNRESET").then_some(())
    });
    let logs = env.swarm(["logs", "a"]).ok();
    assert!(logs.stdout.contains("ECONNRESET"), "{}", logs.stdout);
    let kept = std::fs::read_to_string(env.path("teams/t/logs/a.log")).unwrap();
    assert!(kept.contains("ECONNRESET"), "{kept}");
}

#[test]
fn swarm_kill_and_swarm_down_keep_a_live_panes_last_lines() {
    for how in ["kill", "down"] {
        let env = Env::new();
        let tmux = Tmux::new();
        let agent = fake_claude(&env, "working on it", "exec sleep 300");
        launch(&env, &tmux, &agent, &["--no-lead-pane"]);
        let pane = pane_of(&env, "a");
        eventually(LONG, "a's pane to print its line", || {
            tmux.cmd(["capture-pane", "-p", "-t", &pane])
                .stdout
                .contains("working on it")
                .then_some(())
        });
        match how {
            "kill" => env.swarm(["kill", "a"]).ok(),
            _ => env.swarm(["down", "--force", "--timeout", "1"]).run(),
        };
        assert!(pane_gone(&tmux, &pane), "{how} closed the pane");
        let logs = env.swarm(["logs", "a"]).ok();
        assert!(
            logs.stdout.contains("working on it"),
            "after {how}: {}",
            logs.stdout
        );
    }
}
