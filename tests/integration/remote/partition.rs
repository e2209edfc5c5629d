//! The connection to a host breaks mid-run and comes back: both sides go on with what they can
//! do alone, the host shows as disconnected (its member unknown, never dead), and once the link
//! is back everything written on either side in between arrives exactly once.

use serde_json::{json, Value};

use super::RemoteTeam;
use crate::support::*;

#[test]
fn a_connection_killed_mid_run_and_restored_loses_nothing_and_doubles_nothing() {
    let team = RemoteTeam::new(&["box1"]);
    let host = team.hosts.get("box1");
    let gate = host.home.join("go");
    let started = host.home.join("started");
    let file = team.file(
        "team.json",
        &json!({"team": "t", "agent": "shell", "remoteSwarm": BIN,
            "teammates": [{"name": "builder", "host": "box1"}],
            "tasks": [
                {"subject": "gated", "description": format!(
                    "touch '{}'; while [ ! -e '{}' ]; do sleep 0.1; done; swarm send --to team-lead 'written while cut off'",
                    started.display(), gate.display())},
                {"subject": "after", "blockedBy": [0], "description": "echo after > after.txt"}
            ]}),
    );
    team.launch(&file);
    // Claimed at home, and the grant is on the host: it runs there.
    team.eventually("builder working on task 1 on its host", || {
        started.exists().then_some(())
    });
    assert_eq!(team.task("1")["status"], "in_progress");

    host.cut();
    let status = team.eventually("box1 shown as disconnected", || {
        let s = team.status();
        (s["hosts"][0]["connected"] == false).then_some(s)
    });
    // Nobody can see the member, so it is unknown: not dead, not retired, its task still its.
    let builder = member(&status, "builder");
    assert_eq!(builder["state"], "unknown", "{status}");
    assert_eq!(builder["retired"], false);
    let text = team.swarm(["status"]).ok().stdout;
    assert!(text.contains("host box1: disconnected since"), "{text}");
    // Both sides go on alone: the lead writes to the member, the member finishes its task and
    // writes to the lead, each into its own side's files.
    team.swarm(["send", "--to", "builder", "sent while cut off"])
        .ok();
    std::fs::write(&gate, "").unwrap();
    let mirror = host.mirror();
    let mirror_task = mirror.join("tasks/t/1.json");
    team.eventually("task 1 completed on the host", || {
        (read_json(&mirror_task)["status"] == "completed").then_some(())
    });
    let mirror_lead = mirror.join("teams/t/inboxes/team-lead.json");
    team.eventually(
        "the member's message in the host's copy of the lead's inbox",
        || {
            texts(&inbox_at(&mirror_lead), "builder")
                .contains(&"written while cut off".to_string())
                .then_some(())
        },
    );
    // The partition is real: home has heard none of it.
    assert_eq!(team.task("1")["status"], "in_progress");
    assert!(!team
        .texts_from("team-lead", "builder")
        .contains(&"written while cut off".to_string()));
    assert!(!texts(
        &inbox_at(&mirror.join("teams/t/inboxes/builder.json")),
        "team-lead"
    )
    .contains(&"sent while cut off".to_string()));

    host.restore();
    team.eventually("task 1 completed at home", || {
        (team.task("1")["status"] == "completed").then_some(())
    });
    team.eventually("task 2 claimed at home and completed", || {
        (team.task("2")["status"] == "completed").then_some(())
    });
    assert_eq!(team.task("2")["owner"], "builder");
    team.eventually("the lead's message on the host", || {
        texts(
            &inbox_at(&mirror.join("teams/t/inboxes/builder.json")),
            "team-lead",
        )
        .contains(&"sent while cut off".to_string())
        .then_some(())
    });
    // Exactly once each way, whatever was replayed.
    let arrived = team.texts_from("team-lead", "builder");
    assert_eq!(
        arrived
            .iter()
            .filter(|t| *t == "written while cut off")
            .count(),
        1,
        "{arrived:?}"
    );
    let placed = texts(
        &inbox_at(&mirror.join("teams/t/inboxes/builder.json")),
        "team-lead",
    );
    assert_eq!(
        placed.iter().filter(|t| *t == "sent while cut off").count(),
        1,
        "{placed:?}"
    );
    let ids: Vec<Value> = team
        .inbox("team-lead")
        .into_iter()
        .map(|m| m["msg_id"].clone())
        .collect();
    let mut unique = ids.clone();
    unique.sort_by_key(|v| v.to_string());
    unique.dedup();
    assert_eq!(
        unique.len(),
        ids.len(),
        "no msg_id twice in the lead's inbox"
    );
    let status = team.eventually("box1 connected again", || {
        let s = team.status();
        (s["hosts"][0]["connected"] == true && super::runs(&s, "builder")).then_some(s)
    });
    assert_eq!(member(&status, "builder")["retired"], false);
    team.swarm(["down", "--timeout", "30"]).ok();
}

/// An inbox file on a host; a missing one is empty (nothing was ever placed there).
fn inbox_at(path: &std::path::Path) -> Value {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Array(vec![]))
}

fn texts(inbox: &Value, from: &str) -> Vec<String> {
    inbox
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["from"] == from)
        .filter_map(|m| m["text"].as_str().map(str::to_string))
        .collect()
}
