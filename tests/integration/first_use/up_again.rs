//! Item 8, first half: `swarm down` says the team comes back with `swarm up`, and `swarm up
//! --team t` with no file brings it back from the swarm file it was launched from, which the
//! launch recorded.

use serde_json::json;

use super::*;

#[test]
fn swarm_up_without_a_file_uses_the_one_the_team_was_launched_from() {
    let env = Env::new();
    let tmux = Tmux::new();
    std::fs::create_dir_all(env.path("work")).unwrap();
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "t", "agent": "shell", "cwd": "work",
               "teammates": [{"name": "a", "prompt": "$ echo ready"}]})
        .to_string(),
    )
    .unwrap();
    let on = |args: &[&str]| env.swarm(args).env("SWARM_TMUX_SOCKET", &tmux.socket);
    // Launched from another directory, by a relative path.
    on(&["launch", "team.json", "--no-lead-pane"])
        .current_dir(env.root())
        .ok();
    let down = on(&["down"]).ok();
    assert!(
        down.stdout.contains("(`swarm up --team t` brings it back)"),
        "{}",
        down.stdout
    );
    on(&["up", "--team", "t"])
        .current_dir(env.path("work"))
        .ok();
    eventually(LONG, "a running again", || {
        let status = on(&["--json", "status"]).ok().json();
        (member(&status, "a")["pane"]["state"] == "alive").then_some(())
    });
}
