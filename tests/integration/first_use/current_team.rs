//! Item 8, second half: after `swarm shutdown --all` no teammate runs, and a command without
//! `--team` still acts on the team when it is the only one (two such teams stay ambiguous:
//! `commands::current`).

use super::*;

#[test]
fn the_only_team_is_the_current_team_with_no_teammate_running() {
    let env = Env::with_team(&["a"]);
    let status = env
        .swarm(["--json", "status"])
        .env_remove("SWARM_TEAM")
        .ok()
        .json();
    assert_eq!(status["team"], "t", "{status}");
    env.swarm(["task", "create", "x"])
        .env_remove("SWARM_TEAM")
        .ok();
    assert_eq!(
        env.swarm(["--json", "task", "list"]).ok().json()[0]["subject"],
        "x"
    );
}
