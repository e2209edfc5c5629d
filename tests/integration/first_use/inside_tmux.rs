//! Item 7: inside tmux. `swarm attach` switches the user's own client, so `Ctrl-b d` would
//! detach the whole client: it says how to come back instead (the last session, or the last
//! window when the team's window is in the user's session). And `swarm up` run inside tmux goes
//! on in the team's own session or window, wherever it is on that server, rather than opening a
//! new window beside the user's that would split the team in two.

use serde_json::json;

use super::*;

/// A user's session `main` on the test server: its first pane, and `$TMUX` for a shell in it.
fn user_session(tmux: &Tmux) -> (String, String) {
    tmux.cmd([
        "new-session",
        "-d",
        "-s",
        "main",
        "-x",
        "200",
        "-y",
        "50",
        "sleep",
        "600",
    ]);
    let info = tmux
        .cmd([
            "display-message",
            "-p",
            "-t",
            "main",
            "#{socket_path},#{pid},#{pane_id}",
        ])
        .stdout;
    let (server, pane) = info.trim().rsplit_once(',').unwrap();
    (format!("{server},0"), pane.to_string())
}

fn team_file(env: &Env) -> std::path::PathBuf {
    std::fs::create_dir_all(env.path("work")).unwrap();
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "t", "agent": "shell", "cwd": "work",
               "teammates": [{"name": "a"}, {"name": "b"}]})
        .to_string(),
    )
    .unwrap();
    file
}

/// The windows of every session: `session window panes`, one a line.
fn windows(tmux: &Tmux) -> Vec<String> {
    tmux.cmd([
        "list-windows",
        "-a",
        "-F",
        "#{session_name} #{window_name} #{window_panes}",
    ])
    .stdout
    .lines()
    .map(str::to_string)
    .collect()
}

#[test]
fn swarm_up_inside_tmux_goes_on_in_the_teams_own_session() {
    let env = Env::new();
    let tmux = Tmux::new();
    let file = team_file(&env);
    // Launched from outside tmux: a detached session of the team's own.
    env.swarm(["launch", file.to_str().unwrap()])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
    let (tmux_var, user_pane) = user_session(&tmux);
    env.swarm(["kill", "b"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
    let before = windows(&tmux);
    assert!(
        before.iter().any(|w| w.starts_with("main ")),
        "the user's session: {before:?}"
    );
    // `swarm up` from a shell in the user's session brings b back among its team.
    env.swarm(["up", file.to_str().unwrap()])
        .env("TMUX", &tmux_var)
        .env("TMUX_PANE", &user_pane)
        .ok();
    let after = windows(&tmux);
    let main: Vec<&String> = after.iter().filter(|w| w.starts_with("main ")).collect();
    assert_eq!(
        main.len(),
        1,
        "no window of the team in the user's session: {after:?}"
    );
    let team: Vec<&String> = after.iter().filter(|w| w.starts_with("swarm-t-")).collect();
    assert_eq!(team.len(), 1, "{after:?}");
    assert!(
        team[0].ends_with(" 3"),
        "the lead, a and b again: {after:?}"
    );
    let status: serde_json::Value = env
        .swarm(["--json", "status"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok()
        .json();
    let b = member(&status, "b");
    let session = tmux
        .cmd([
            "display-message",
            "-p",
            "-t",
            b["paneId"].as_str().unwrap(),
            "#{session_name}",
        ])
        .stdout;
    assert!(session.starts_with("swarm-t-"), "b's pane is in {session}");
    env.swarm(["down"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
}

#[test]
fn swarm_attach_inside_tmux_switches_the_client_and_says_how_to_come_back() {
    let env = Env::new();
    let tmux = Tmux::new();
    let file = team_file(&env);
    env.swarm(["launch", file.to_str().unwrap()])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
    let (tmux_var, user_pane) = user_session(&tmux);
    // A real client on the user's session: a terminal (a pane of another server) attached to it.
    let terminal = Tmux::new();
    let socket = tmux
        .cmd(["display-message", "-p", "-t", "main", "#{socket_path}"])
        .stdout;
    terminal.cmd([
        "new-session",
        "-d",
        "-x",
        "200",
        "-y",
        "50",
        &format!("env -u TMUX tmux -S {} attach -t main", socket.trim()),
    ]);
    let client_session = || {
        tmux.cmd(["list-clients", "-F", "#{client_session}"])
            .stdout
            .trim()
            .to_string()
    };
    eventually(LONG, "the user's client attached", || {
        (client_session() == "main").then_some(())
    });
    let out = env
        .swarm(["attach", "a"])
        .env("TMUX", &tmux_var)
        .env("TMUX_PANE", &user_pane)
        .run_within(LONG);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("to come back: Ctrl-b L (the last session), or `tmux switch-client -l`"),
        "{out:?}"
    );
    eventually(LONG, "the client on the team's session", || {
        client_session().starts_with("swarm-t-").then_some(())
    });
    let client = tmux.cmd(["list-clients", "-F", "#{client_name}"]).stdout;
    let active = tmux
        .cmd(["display-message", "-p", "-c", client.trim(), "#{pane_id}"])
        .stdout;
    let status: serde_json::Value = env
        .swarm(["--json", "status"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok()
        .json();
    assert_eq!(
        active.trim(),
        member(&status, "a")["paneId"],
        "a's pane is the one shown"
    );
    env.swarm(["down"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
}
