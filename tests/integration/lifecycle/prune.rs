//! An honest `team list` (what really runs, idle or busy, stopped, dead) and `swarm prune`,
//! which retires dead teammates, returns their tasks and deletes teams, asking first.

use serde_json::json;

use super::{on, shell_file, wait_running};
use crate::support::*;

#[test]
fn team_list_counts_what_really_runs() {
    let env = Env::new();
    let tmux = Tmux::new();
    let file = shell_file(
        &env,
        "t",
        &["busy", "idle", "crashed"],
        json!([{"subject": "long", "description": "sleep 300"}]),
    );
    on(
        &env,
        &tmux,
        ["launch", "--no-lead-pane", file.to_str().unwrap()],
    )
    .ok();
    wait_running(&env, &tmux, "t", &["busy", "idle", "crashed"]);
    let config = read_json(&env.path("teams/t/config.json"));
    // Whoever took the long task is busy; kill another one's pane behind swarm's back.
    let owner = eventually(
        std::time::Duration::from_secs(30),
        "the long task claimed",
        || {
            let list = env.swarm(["--json", "task", "list"]).ok().json();
            list[0]["owner"].as_str().map(str::to_string)
        },
    );
    let victim = ["busy", "idle", "crashed"]
        .into_iter()
        .find(|n| *n != owner)
        .unwrap();
    let pane = member(&config, victim)["tmuxPaneId"]
        .as_str()
        .unwrap()
        .to_string();
    tmux.cmd(["kill-pane", "-t", &pane]);
    let row = eventually(std::time::Duration::from_secs(30), "the census", || {
        let list = on(&env, &tmux, ["--json", "team", "list"]).ok().json();
        let row = list[0].clone();
        (row["dead"] == 1).then_some(row)
    });
    assert_eq!(
        (
            row["teammates"].clone(),
            row["running"].clone(),
            row["busy"].clone(),
            row["idle"].clone()
        ),
        (json!(3), json!(2), json!(1), json!(1)),
        "{row}"
    );
    assert_eq!(row["stopped"], 0);
    let text = on(&env, &tmux, ["team", "list"]).ok().stdout;
    assert!(
        text.contains("3 teammates: 2 running (1 idle, 1 busy), 1 dead (`swarm prune` retires it)"),
        "{text}"
    );
    // A dead teammate's work goes back to the list once pruned; the running ones are untouched.
    on(&env, &tmux, ["prune", "--yes"]).ok();
    let m = member(&read_json(&env.path("teams/t/config.json")), victim).clone();
    assert_eq!(m["isActive"], false, "{m}");
    on(&env, &tmux, ["down"]).ok();
}

#[test]
fn prune_asks_first_then_retires_the_dead_and_deletes_teams() {
    let env = Env::with_team(&["gone"]);
    env.swarm(["team", "create", "old"]).ok();
    // `gone` ran once (its liveness lock has a pid) and is not running now.
    std::fs::create_dir_all(env.path("teams/t/alive")).unwrap();
    std::fs::write(env.path("teams/t/alive/gone.lock"), "4242\n").unwrap();
    env.swarm(["task", "create", "half done"]).ok();
    env.swarm(["task", "claim", "1", "--agent", "gone"]).ok();

    // Without a terminal to ask on, and without --yes, nothing happens.
    let out = env.swarm(["prune"]).env_remove("SWARM_TEAM").refused(
        "swarm prune would mark gone of team t inactive (not running) and return its tasks; \
         standard input is not a terminal, so it cannot ask: pass --yes to go ahead",
    );
    assert!(out.stdout.is_empty());
    let done = env.swarm(["--json", "prune", "--yes"]).ok().json();
    assert_eq!(
        done["retired"],
        json!([{"team": "t", "name": "gone", "released": ["1"]}])
    );
    let task = env.swarm(["--json", "task", "show", "1"]).ok().json();
    assert_eq!(
        (task["status"].clone(), task.get("owner").cloned()),
        (json!("pending"), None)
    );
    assert_eq!(
        member(&read_json(&env.path("teams/t/config.json")), "gone")["isActive"],
        false
    );
    // Nothing left to do: nothing asked, nothing changed.
    assert!(env
        .swarm(["prune"])
        .ok()
        .stdout
        .contains("nothing to prune"));

    // Named teams go; with --older-than, so do teams with nothing running for that long.
    env.swarm(["prune", "nosuch", "--yes"])
        .not_found("team \"nosuch\" does not exist");
    env.swarm(["prune", "old", "--yes"]).ok();
    assert!(!env.path("teams/old").exists());
    assert!(env.path("teams/t").exists());
    env.swarm(["prune", "--older-than", "10d", "--yes"]).ok();
    assert!(env.path("teams/t").exists(), "t changed just now");
    env.swarm(["prune", "--older-than", "0s", "--yes"]).ok();
    assert!(!env.path("teams/t").exists());
    assert!(!env.path("tasks/t").exists());
}
