//! A pane is swarm's only on the server it was recorded on and only while its pane options name
//! the same root, team and member (issue 9): tmux numbers panes from `%0` again after its server
//! restarts, so an old team's roster must never reach a new team's panes, and a member with no
//! recorded server is not looked for on a guessed one. Also: two roots with one team name get
//! separate sessions, and `SWARM_TMUX_SOCKET` wins over `$TMUX`.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::{fake_agent, swarm_on, wait_for_file};
use crate::support::*;

/// Launches team `team` with teammates `names` (fake agents that say who they are and sleep).
fn launch(env: &Env, tmux: &Tmux, agent: &Path, team: &str, names: &[&str]) {
    let mut args = vec!["--team", team, "launch", "--no-lead-pane"];
    let specs: Vec<String> = names.iter().map(|n| format!("{n}=go")).collect();
    for s in &specs {
        args.extend(["--teammate", s.as_str()]);
    }
    for n in names {
        let _ = std::fs::remove_file(env.path(&format!("out/{n}.cwd")));
    }
    swarm_on(env, tmux, agent, &args).ok();
    for n in names {
        wait_for_file(&env.path(&format!("out/{n}.cwd")));
    }
}

fn status(env: &Env, team: &str) -> Value {
    env.swarm(["--team", team, "--json", "status"]).ok().json()
}

/// `pane id -> (pid, dead)` for every pane on the server.
fn panes(tmux: &Tmux) -> Vec<(String, u32, bool)> {
    tmux.cmd([
        "list-panes",
        "-a",
        "-F",
        "#{pane_id} #{pane_pid} #{pane_dead}",
    ])
    .stdout
    .lines()
    .map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        (f[0].to_string(), f[1].parse().unwrap(), f[2] == "1")
    })
    .collect()
}

fn pane_of(doc: &Value, name: &str) -> String {
    member(doc, name)["tmuxPaneId"]
        .as_str()
        .unwrap()
        .to_string()
}

fn process_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn after_a_tmux_server_restart_an_old_team_never_touches_the_new_teams_panes() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(&env, r#"echo "I am $name of $team"; sleep 300"#);
    launch(&env, &tmux, &agent, "old", &["x", "y"]);
    let old = status(&env, "old");
    for n in ["x", "y"] {
        assert_eq!(member(&old, n)["pane"]["state"], "alive", "{old}");
    }
    let old_roster = read_json(&env.path("teams/old/config.json"));
    tmux.cmd(["kill-server"]);
    launch(&env, &tmux, &agent, "new", &["x", "y"]);
    let new_roster = read_json(&env.path("teams/new/config.json"));
    // The premise: tmux gave the new team the very pane ids the old roster records.
    for n in ["x", "y"] {
        assert_eq!(pane_of(&old_roster, n), pane_of(&new_roster, n));
    }
    let before = panes(&tmux);
    assert_eq!(before.len(), 2);
    assert!(before
        .iter()
        .all(|(_, pid, dead)| !dead && process_alive(*pid)));

    let old = status(&env, "old");
    for n in ["x", "y"] {
        assert_eq!(member(&old, n)["pane"]["state"], "gone", "{old}");
        assert_eq!(member(&old, n)["state"], "dead", "{old}");
    }
    let logs = env.swarm(["--team", "old", "logs", "x"]).run();
    assert!(!logs.stdout.contains("of new"), "{}", logs.stdout);
    env.swarm(["--team", "old", "attach", "x"])
        .refused("no longer exists");
    env.swarm(["--team", "old", "kill", "x"]).run();
    env.swarm(["--team", "old", "shutdown", "--all", "--timeout", "1"])
        .run();

    assert_eq!(panes(&tmux), before, "new's panes untouched");
    assert!(before.iter().all(|(_, pid, _)| process_alive(*pid)));
    let new = status(&env, "new");
    for n in ["x", "y"] {
        assert_eq!(member(&new, n)["pane"]["state"], "alive", "{new}");
    }
    let logs = env.swarm(["--team", "new", "logs", "x"]).ok();
    assert!(logs.stdout.contains("I am x of new"), "{}", logs.stdout);
}

#[test]
fn two_roots_with_one_team_name_get_their_own_sessions_and_never_touch_each_other() {
    let a = Env::new();
    let b = Env::new();
    let tmux = Tmux::new();
    let agent_a = fake_agent(&a, "sleep 300");
    let agent_b = fake_agent(&b, "sleep 300");
    launch(&a, &tmux, &agent_a, "t", &["x"]);
    launch(&b, &tmux, &agent_b, "t", &["x"]);
    let sessions = tmux.cmd(["list-sessions", "-F", "#{session_name} #{session_windows}"]);
    let sessions: Vec<&str> = sessions.stdout.lines().collect();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert!(
        sessions
            .iter()
            .all(|s| s.starts_with("swarm-t-") && s.ends_with(" 1")),
        "{sessions:?}"
    );
    assert_ne!(sessions[0], sessions[1]);
    for env in [&a, &b] {
        let s = status(env, "t");
        assert_eq!(member(&s, "x")["pane"]["state"], "alive", "{s}");
    }

    // After a restart, b's new pane takes a's old id; a sees it as gone and leaves it alone.
    tmux.cmd(["kill-server"]);
    launch(&b, &tmux, &agent_b, "t", &["y"]);
    let stale = pane_of(&read_json(&a.path("teams/t/config.json")), "x");
    assert_eq!(
        stale,
        pane_of(&read_json(&b.path("teams/t/config.json")), "y")
    );
    let before = panes(&tmux);
    let s = status(&a, "t");
    assert_eq!(member(&s, "x")["pane"]["state"], "gone", "{s}");
    a.swarm(["kill", "x"]).run();
    assert_eq!(panes(&tmux), before);
    assert!(process_alive(before[0].1));
}

#[test]
fn swarm_tmux_socket_wins_over_tmux_and_the_launch_says_so() {
    let env = Env::new();
    let user = Tmux::new();
    let private = Tmux::new();
    let agent = fake_agent(&env, "sleep 300");
    user.cmd(["new-session", "-d", "-s", "main", "sleep", "600"]);
    let info = user.cmd([
        "display-message",
        "-p",
        "-t",
        "main",
        "#{socket_path},#{pid},#{pane_id}",
    ]);
    let info = info.stdout.trim().to_string();
    let (server, user_pane) = info.rsplit_once(',').unwrap();
    for backend in ["auto", "tmux"] {
        let team = format!("t-{backend}");
        let out = swarm_on(
            &env,
            &private,
            &agent,
            &[
                "--team",
                &team,
                "launch",
                "--backend",
                backend,
                "--no-lead-pane",
                "--teammate",
                "x=go",
            ],
        )
        .env("TMUX", format!("{server},0"))
        .env("TMUX_PANE", user_pane)
        .ok();
        out.stderr_has(&format!(
            "SWARM_TMUX_SOCKET={} is set: a detached session on that tmux server, not the one \
             swarm runs in",
            private.socket
        ));
        assert!(
            !out.stderr.contains("running inside tmux"),
            "{}",
            out.stderr
        );
        let roster = read_json(&env.path(&format!("teams/{team}/config.json")));
        assert!(member(&roster, "x")["swarmTmuxSocket"]
            .as_str()
            .unwrap()
            .ends_with(&private.socket));
    }
    // The user's server is untouched: one session, one window, one pane.
    assert_eq!(
        user.cmd(["list-panes", "-a", "-F", "#{session_name}"])
            .stdout
            .lines()
            .collect::<Vec<_>>(),
        ["main"]
    );
    let sessions = private
        .cmd(["list-sessions", "-F", "#{session_name}"])
        .stdout;
    assert_eq!(sessions.lines().count(), 2, "{sessions}");
    eventually(Duration::from_secs(20), "both teammates alive", || {
        let alive = ["t-auto", "t-tmux"]
            .iter()
            .all(|t| member(&status(&env, t), "x")["pane"]["state"] == "alive");
        alive.then_some(())
    });
}

#[test]
fn a_member_without_a_recorded_server_is_never_looked_for_on_a_guessed_one() {
    let env = Env::with_team(&["x"]);
    let tmux = Tmux::new();
    tmux.cmd(["new-session", "-d", "-s", "bystander", "sleep", "600"]);
    let (pane, pid) = panes(&tmux)
        .into_iter()
        .map(|(p, pid, _)| (p, pid))
        .next()
        .unwrap();
    // x's roster entry names that pane id, as a tmux member, but records no server.
    let path = env.path("teams/t/config.json");
    let mut config = read_json(&path);
    let x = config["members"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|m| m["name"] == "x")
        .unwrap();
    x["backendType"] = "tmux".into();
    x["tmuxPaneId"] = pane.clone().into();
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();

    let s = env
        .swarm(["--json", "status"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok()
        .json();
    assert_eq!(member(&s, "x")["pane"]["state"], "unknown", "{s}");
    env.swarm(["kill", "x"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .run();
    assert_eq!(panes(&tmux), [(pane, pid, false)]);
    assert!(process_alive(pid));
}
