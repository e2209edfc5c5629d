//! `swarm timeline` (issue 26 item 1): following a team live, the task history the lead console
//! keeps for writers that do not (Claude Code teammates), and bad input. The story of a running
//! shell team is in `teammate/timeline.rs`, a Claude-made team's in `claude_teams/`.

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

const LONG: Duration = Duration::from_secs(60);

/// A `swarm --json timeline --follow` and the events it prints, as they come.
fn follow(env: &Env) -> (KillOnDrop, mpsc::Receiver<Value>) {
    let mut child = env.swarm(["--json", "timeline", "--follow"]).spawn();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            let _ = tx.send(serde_json::from_str(&line).unwrap());
        }
    });
    (KillOnDrop(child), rx)
}

#[track_caller]
fn expect(rx: &mpsc::Receiver<Value>, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
    let until = std::time::Instant::now() + LONG;
    loop {
        let left = until.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(e) if matches(&e) => return e,
            Ok(_) => continue,
            Err(_) => panic!("the follower printed no {what} within {LONG:?}"),
        }
    }
}

#[test]
fn follow_prints_what_happens_after_it_started() {
    let env = Env::with_team(&["coder"]);
    let (_follower, rx) = follow(&env);
    // It is running and has printed the past.
    expect(&rx, "join of coder", |e| {
        e["kind"] == "member.joined" && e["actor"] == "coder"
    });
    env.swarm([
        "send",
        "--to",
        "coder",
        "--summary",
        "later",
        "made after the start",
    ])
    .ok();
    let message = expect(&rx, "message", |e| e["kind"] == "message");
    assert_eq!(
        (&message["actor"], &message["to"], &message["text"]),
        (&json!("team-lead"), &json!("coder"), &json!("later"))
    );
    env.swarm(["task", "create", "Parse it"]).ok();
    let created = expect(&rx, "task creation", |e| e["kind"] == "task.created");
    assert_eq!(
        (&created["task"], &created["text"]),
        (&json!("1"), &json!("Parse it"))
    );
    // The first permission request makes `permissions/`: watched from then on.
    env.swarm([
        "permission",
        "request",
        "--tool",
        "Bash",
        "--description",
        "ls",
    ])
    .env("SWARM_AGENT_NAME", "coder")
    .ok();
    let asked = expect(&rx, "permission request", |e| {
        e["kind"] == "permission.requested"
    });
    assert_eq!(asked["actor"], "coder");
    let id = asked["request"].as_str().unwrap().to_string();
    env.swarm(["permission", "deny", &id, "--feedback", "no"])
        .ok();
    let rejected = expect(&rx, "decision", |e| e["kind"] == "permission.rejected");
    assert_eq!(
        (&rejected["actor"], &rejected["to"], &rejected["detail"]),
        (&json!("team-lead"), &json!("coder"), &json!("no"))
    );
}

#[test]
fn the_lead_console_records_task_changes_made_by_writers_that_keep_no_history() {
    let env = Env::with_team(&["coder"]);
    env.swarm(["task", "create", "Parse it"]).ok();
    let _console = KillOnDrop(env.swarm(["lead"]).spawn());
    // What Claude Code's TaskUpdate does: the file, written in place, and no history line.
    let path = env.path("tasks/t/1.json");
    let mut task = read_json(&path);
    task["owner"] = json!("coder");
    task["status"] = json!("in_progress");
    std::fs::write(&path, serde_json::to_string_pretty(&task).unwrap()).unwrap();
    let history = env.path("tasks/t/.swarm-history.jsonl");
    let seen = eventually(LONG, "the console to record the claim", || {
        let text = std::fs::read_to_string(&history).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|e| e["event"] == "claimed")
    });
    assert_eq!(seen["seen"], true);
    assert_eq!(seen["owner"], "coder");
    assert!(seen.get("by").is_none(), "nobody recorded who: {seen}");
    let events: Vec<Value> = env
        .swarm(["--json", "timeline", "--task", "1"])
        .ok()
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<(&str, &str, &str)> = events
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap(),
                e["actor"].as_str().unwrap_or("?"),
                e["source"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("task.created", "team-lead", "history"),
            ("task.claimed", "coder", "history"),
        ],
        "recorded once, by the console, not shown again from the file"
    );
}

#[test]
fn bad_filters_are_refused_with_what_to_write() {
    let env = Env::with_team(&["coder"]);
    env.swarm(["timeline", "--member", "ghost"])
        .refused("team t has no member \"ghost\" (its members: team-lead, coder)");
    env.swarm(["timeline", "--since", "yesterday"])
        .refused("--since also takes a UTC time such as 2026-01-01T12:00:00Z");
    env.swarm(["timeline", "--since", "2026-01-01T12:00"])
        .refused("is not a UTC time; write it as 2026-01-01T12:00:00Z");
    env.swarm(["timeline", "--task", "0"])
        .refused("invalid task id");
}
