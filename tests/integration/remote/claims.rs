//! Claims are decided at home, so a task is done exactly once whichever host its taker is on:
//! two remote hosts and the lead's machine race for the same tasks, each doer writes a line to
//! one ledger, and every task appears in it once, by the member home says owns it.

use std::collections::BTreeMap;

use serde_json::json;

use super::RemoteTeam;
use crate::support::*;

const TASKS: usize = 24;

#[test]
fn two_hosts_and_the_lead_machine_racing_for_tasks_do_each_exactly_once() {
    let team = RemoteTeam::new(&["box1", "box2"]);
    let ledger = team.env.path("ledger");
    std::fs::write(&ledger, "").unwrap();
    let tasks: Vec<_> = (1..=TASKS)
        .map(|n| {
            json!({"subject": format!("t{n}"), "description":
                format!("sleep 0.2; echo \"$SWARM_AGENT_NAME {n}\" >> '{}'", ledger.display())})
        })
        .collect();
    let file = team.file(
        "team.json",
        &json!({"team": "t", "agent": "shell", "remoteSwarm": BIN,
                "teammates": [{"name": "far1", "host": "box1"}, {"name": "far2", "host": "box2"},
                              {"name": "near"}],
                "tasks": tasks}),
    );
    team.launch(&file);
    team.eventually("every task completed at home", || {
        (1..=TASKS)
            .all(|n| team.task(&n.to_string())["status"] == "completed")
            .then_some(())
    });
    let text = std::fs::read_to_string(&ledger).unwrap();
    let mut done: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let (who, n) = line.split_once(' ').unwrap();
        done.entry(n.parse().unwrap())
            .or_default()
            .push(who.to_string());
    }
    for n in 1..=TASKS {
        let by = done.get(&n).cloned().unwrap_or_default();
        assert_eq!(by.len(), 1, "task {n} was done {} times: {by:?}", by.len());
        assert_eq!(team.task(&n.to_string())["owner"], by[0], "task {n}");
    }
    // Each host took part, so the claims really raced across hosts.
    for who in ["far1", "far2"] {
        assert!(
            done.values().any(|by| by[0] == who),
            "{who} did no task: {done:?}"
        );
    }
    team.swarm(["down", "--timeout", "30"]).ok();
}
