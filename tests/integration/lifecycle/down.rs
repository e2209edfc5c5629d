//! `swarm down`: every teammate through the shutdown handshake, then the lead's pane and the
//! session swarm made are closed, only panes marked as the team's, and the files stay.

use serde_json::json;

use super::{on, shell_file, status, tasks, wait_running};
use crate::support::*;

#[test]
fn down_stops_everyone_closes_the_lead_pane_and_session_and_keeps_the_files() {
    let env = Env::new();
    let tmux = Tmux::new();
    let file = shell_file(&env, "t", &["one", "two"], json!([{"subject": "kept"}]));
    let file = file.to_str().unwrap();
    on(&env, &tmux, ["launch", file]).ok();
    wait_running(&env, &tmux, "t", &["one", "two"]);
    let session = tmux
        .cmd(["list-sessions", "-F", "#{session_name}"])
        .stdout
        .trim()
        .to_string();
    assert!(session.starts_with("swarm-t-"), "{session}");

    let out = on(&env, &tmux, ["--json", "down"]).ok().json();
    assert_eq!(out["team"], "t");
    let stopped = out["stopped"].as_array().unwrap();
    assert_eq!(stopped.len(), 2, "{out}");
    assert!(stopped.iter().all(|o| o["result"] == "approved"), "{out}");
    assert_eq!(out["closedPanes"], 1, "the lead console's pane: {out}");
    // The session had only the team's panes, so it is gone (and with it the server).
    assert!(!tmux.cmd(["has-session", "-t", &session]).stderr.is_empty());
    // The files stay: the roster, the tasks, and a status that says the teammates stopped.
    assert_eq!(tasks(&env, "t").len(), 1);
    let text = on(&env, &tmux, ["--team", "t", "status"]).ok().stdout;
    assert!(text.contains("stopped"), "{text}");
    let listed = on(&env, &tmux, ["team", "list"]).ok().stdout;
    assert!(
        listed.contains("2 teammates: none running, 2 stopped"),
        "{listed}"
    );

    // Up again, with a pane of the user's own in the team's session: down leaves that one.
    on(&env, &tmux, ["up", file]).ok();
    wait_running(&env, &tmux, "t", &["one", "two"]);
    let lead_pane = member(&status(&env, &tmux, "t"), "team-lead")["paneId"]
        .as_str()
        .unwrap()
        .to_string();
    let mine = tmux
        .cmd([
            "split-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            &lead_pane,
            "sleep",
            "300",
        ])
        .stdout
        .trim()
        .to_string();
    assert!(mine.starts_with('%'), "{mine}");
    on(&env, &tmux, ["down"]).ok();
    let left = tmux.cmd(["list-panes", "-a", "-F", "#{pane_id}"]).stdout;
    assert_eq!(left.trim(), mine, "only the user's pane is left");
}

#[test]
fn down_lets_a_busy_teammate_finish_its_task_first() {
    let env = Env::new();
    let tmux = Tmux::new();
    let gate = env.path("gate");
    let wait = format!("while [ ! -e '{}' ]; do sleep 0.05; done", gate.display());
    let file = shell_file(
        &env,
        "t",
        &["busy"],
        json!([{"subject": "gated", "description": wait}]),
    );
    on(&env, &tmux, ["launch", file.to_str().unwrap()]).ok();
    wait_running(&env, &tmux, "t", &["busy"]);
    eventually(
        std::time::Duration::from_secs(30),
        "the task to start",
        || (tasks(&env, "t")[0]["status"] == "in_progress").then_some(()),
    );

    let mut down = on(&env, &tmux, ["--json", "down"]).live();
    // Its runtime holds the request for the running turn (and writes it down for the agent).
    let asked = env.path("teams/t/members/busy/shutdown-asked.json");
    eventually(
        std::time::Duration::from_secs(30),
        "the request held",
        || asked.exists().then_some(()),
    );
    std::fs::write(&gate, "").unwrap();
    assert_eq!(
        down.wait(std::time::Duration::from_secs(60)),
        Some(0),
        "{:?}",
        down.seen
    );
    let t = &tasks(&env, "t")[0];
    assert_eq!(t["status"], "completed", "{t}");
    assert!(!asked.exists());
}

/// A shutdown of many retires them all in one roster write (issue 20: `swarm down` of 200
/// rewrote the 160 KB roster once per member, one rewrite after another under its lock). Here
/// four members added by hand, never started (no answer, nothing to stop): each is retired, and
/// strace sees the roster replaced once.
#[test]
fn a_shutdown_of_many_retires_them_in_one_roster_write() {
    let env = Env::with_team(&[]);
    for name in ["a", "b", "c", "d"] {
        env.swarm(["team", "add", name]).ok();
    }
    let (out, renames) = strace_swarm(
        &env,
        "rename,renameat2",
        &["shutdown", "--all", "--timeout", "1"],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let roster = read_json(&env.path("teams/t/config.json"));
    for name in ["a", "b", "c", "d"] {
        assert!(
            member(&roster, name).get("swarmRetiredAt").is_some(),
            "{name} retired: {roster}"
        );
    }
    let onto_roster = renames
        .lines()
        .filter(|l| l.contains("rename") && l.contains("/config.json\""))
        .count();
    assert_eq!(onto_roster, 1, "roster writes:\n{renames}");
}
