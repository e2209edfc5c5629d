//! The limits a teammate works under (issue 28): a turn that runs past `--turn-timeout` is
//! stopped, and a teammate that ran `--max-turns` turns starts no more; either way it goes idle
//! saying why, and its task is parked as failed or released, as `--on-limit` says.

use serde_json::{json, Value};

use super::{q, send, start, task, to_lead, LONG};
use crate::support::*;

/// The `idle_notification` the lead got whose `failureReason` mentions `limit`.
fn limit_notice(env: &Env, limit: &str) -> Option<Value> {
    to_lead(env, "idle_notification").into_iter().find(|n| {
        n["failureReason"]
            .as_str()
            .is_some_and(|r| r.contains(limit))
    })
}

#[test]
fn a_turn_past_its_timeout_is_stopped_and_its_task_parked_as_failed() {
    let env = Env::with_team(&["a"]);
    let started = env.path("started");
    let _mate = start(&env, "a", &["--agent", "shell", "--turn-timeout", "1"]);
    env.swarm([
        "task",
        "create",
        "slow",
        "--description",
        &format!("touch {}; sleep 60", q(&started)),
    ])
    .ok();
    let idle = eventually(LONG, "the timed-out turn's notification", || {
        limit_notice(&env, "turnTimeout")
    });
    assert!(started.exists(), "the turn ran");
    let why = "turn timed out after 1 s (turnTimeout)";
    assert_eq!(idle["idleReason"], "failed");
    assert_eq!(idle["failureReason"], why);
    assert_eq!(idle["completedTaskId"], "1");
    assert_eq!(idle["completedStatus"], "failed");
    assert_eq!(
        idle["summary"],
        format!("{why}; task #1 failed ({why})"),
        "{idle}"
    );
    let t = task(&env, "1");
    assert_eq!(t["status"], "pending");
    assert_eq!(
        t["metadata"],
        json!({"swarmFailed": true, "failureReason": why, "failedBy": "a"})
    );
}

#[test]
fn a_turn_past_its_timeout_can_release_its_task_instead() {
    let env = Env::with_team(&["a"]);
    let args = [
        "--agent",
        "shell",
        "--turn-timeout",
        "1",
        "--on-limit",
        "release",
    ];
    let _mate = start(&env, "a", &args);
    env.swarm(["task", "create", "slow", "--description", "sleep 60"])
        .ok();
    let idle = eventually(LONG, "the timed-out turn's notification", || {
        limit_notice(&env, "turnTimeout")
    });
    assert_eq!(
        idle["summary"],
        "turn timed out after 1 s (turnTimeout); task #1 went back to pending"
    );
    assert_eq!(idle.get("completedTaskId"), None);
    let t = task(&env, "1");
    assert_eq!(t["status"], "pending");
    assert_eq!(t.get("owner"), None, "{t}");
    assert_eq!(t["metadata"].get("swarmFailed"), None, "{t}");
}

#[test]
fn a_teammate_that_ran_its_max_turns_goes_idle_and_its_task_ends_as_configured() {
    for (then, status, parked) in [("release", "pending", false), ("fail", "pending", true)] {
        let env = Env::with_team(&["a"]);
        env.swarm(["task", "create", "claimed by the agent itself"])
            .ok();
        env.swarm(["task", "create", "later", "--description", "echo later"])
            .ok();
        // Its one turn: the message, whose command claims task 1 and leaves it in progress.
        send(&env, "a", "$ swarm task claim 1");
        let args = ["--agent", "shell", "--max-turns", "1", "--on-limit", then];
        let _mate = start(&env, "a", &args);
        let idle = eventually(LONG, "the notification of the limit", || {
            limit_notice(&env, "maxTurns")
        });
        let why = "reached its limit of 1 turn (maxTurns); it takes no more turns until it is started again";
        assert_eq!(idle["idleReason"], "failed");
        assert_eq!(idle["failureReason"], why);
        let ended = match then {
            "release" => "task #1 went back to pending".to_string(),
            _ => format!("task #1 failed ({why})"),
        };
        assert_eq!(idle["summary"], format!("{why}; {ended}"), "{then}");
        let t1 = task(&env, "1");
        assert_eq!(t1["status"], status, "{then}: {t1}");
        assert_eq!(t1.get("owner"), None, "{then}: {t1}");
        assert_eq!(t1["metadata"].get("swarmFailed").is_some(), parked, "{t1}");
        // One turn ran (the message's), and the available task was not started.
        let idles = to_lead(&env, "idle_notification");
        assert_eq!(idles.len(), 2, "the turn's and the limit's: {idles:?}");
        assert_eq!(task(&env, "2")["status"], "pending");
    }
}
