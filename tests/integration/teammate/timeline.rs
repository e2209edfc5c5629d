//! What a running team's files tell afterwards (issue 26): the timeline of a scripted shell
//! team lists its tasks, messages and a permission in order with who did each, and the usage of
//! an agent CLI's `claude -p --output-format json` turns is recorded as they end.

use serde_json::{json, Value};

use super::{start, task, LONG};
use crate::support::*;

fn timeline(env: &Env) -> Vec<Value> {
    env.swarm(["--json", "timeline"])
        .ok()
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Whether `e` is `kind` done by `actor`, with every field of `more` as given.
fn is(e: &Value, kind: &str, actor: &str, more: &Value) -> bool {
    e["kind"] == kind
        && e["actor"] == actor
        && more.as_object().unwrap().iter().all(|(k, v)| &e[k] == v)
}

#[test]
fn the_timeline_of_a_shell_team_lists_its_tasks_messages_and_a_permission_in_order() {
    let env = Env::with_team(&["a", "b"]);
    env.swarm(["task", "create", "first", "--description", "echo one"])
        .ok();
    env.swarm([
        "task",
        "create",
        "second",
        "--description",
        "echo two",
        "--blocked-by",
        "1",
    ])
    .ok();
    let _a = start(&env, "a", &["--agent", "shell"]);
    eventually(LONG, "both tasks completed", || {
        (task(&env, "2")["status"] == "completed").then_some(())
    });
    env.swarm([
        "send",
        "--to",
        "a",
        "--summary",
        "thanks",
        "thanks for both",
    ])
    .env("SWARM_AGENT_NAME", "b")
    .ok();
    env.swarm([
        "permission",
        "request",
        "--tool",
        "Bash",
        "--description",
        "rm -rf build",
    ])
    .env("SWARM_AGENT_NAME", "b")
    .ok();
    let list = env.swarm(["--json", "permission", "list"]).ok().json();
    let id = list[0]["id"].as_str().unwrap().to_string();
    env.swarm(["permission", "approve", &id, "--feedback", "fine"])
        .ok();

    let events = timeline(&env);
    let expected = [
        ("member.joined", "a", json!({})),
        (
            "task.created",
            "team-lead",
            json!({"task": "1", "text": "first"}),
        ),
        (
            "task.created",
            "team-lead",
            json!({"task": "2", "text": "second"}),
        ),
        (
            "task.claimed",
            "a",
            json!({"task": "1", "source": "history"}),
        ),
        ("task.completed", "a", json!({"task": "1"})),
        ("task.claimed", "a", json!({"task": "2"})),
        ("task.completed", "a", json!({"task": "2"})),
        ("message", "b", json!({"to": "a", "text": "thanks"})),
        (
            "permission.requested",
            "b",
            json!({"request": id, "text": "Bash"}),
        ),
        (
            "permission.approved",
            "team-lead",
            json!({"request": id, "to": "b", "detail": "fine", "source": "permission"}),
        ),
    ];
    let mut at = 0;
    for (kind, actor, more) in &expected {
        match events[at..].iter().position(|e| is(e, kind, actor, more)) {
            Some(i) => at += i + 1,
            None => panic!(
                "no {kind} by {actor} ({more}) after event {at} in:\n{}",
                events
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        }
    }
    // Its idle notification comes after the task it finished: not necessarily before the next
    // claim, which can fall in the same millisecond (two files cannot order those).
    let position = |kind: &str, more: Value| {
        events
            .iter()
            .position(|e| is(e, kind, "a", &more))
            .unwrap_or_else(|| panic!("no {kind} {more} in {events:#?}"))
    };
    assert!(
        position("member.idle", json!({"to": "team-lead", "task": "1"}))
            > position("task.completed", json!({"task": "1"}))
    );
    // Each request and decision once, though its file and its message both tell it.
    let about_it = events.iter().filter(|e| e["request"] == json!(id)).count();
    assert_eq!(about_it, 2, "{events:#?}");
    // Ordered by time, and every event of a known kind from a known source.
    let times: Vec<i64> = events
        .iter()
        .map(|e| e["sinceStart"].as_i64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    let text = env.swarm(["timeline", "--member", "b"]).ok().stdout;
    assert!(text.starts_with("team t: run started "), "{text}");
    assert!(text.contains("  b          → a: thanks"), "{text}");
    assert!(
        text.contains(&format!(
            "  team-lead  approved b's request to use Bash [{id}]: fine"
        )),
        "{text}"
    );
    assert!(
        !text.contains("claimed task #1"),
        "only what b did or was done to b: {text}"
    );

    // --since a time: the events from then on, none before; --since a duration: all of them.
    let message = events
        .iter()
        .find(|e| is(e, "message", "b", &json!({"to": "a"})))
        .unwrap();
    let since = message["at"].as_str().unwrap();
    let later: Vec<Value> = env
        .swarm(["--json", "timeline", "--since", since])
        .ok()
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        !later.is_empty() && later.len() < events.len(),
        "{later:#?}"
    );
    assert!(
        later.iter().all(|e| e["at"].as_str().unwrap() >= since),
        "{later:#?}"
    );
    assert!(
        later.iter().any(|e| e["request"] == json!(id)),
        "{later:#?}"
    );
    assert!(
        !later.iter().any(|e| e["kind"] == "task.created"),
        "{later:#?}"
    );
    let hour = env
        .swarm(["--json", "timeline", "--since", "1h"])
        .ok()
        .stdout;
    // (The test's members were put on the roster by hand, as having joined in 1970.)
    let this_run = events
        .iter()
        .filter(|e| e["sinceStart"].as_i64() >= Some(0));
    assert_eq!(hour.lines().count(), this_run.count(), "{hour}");
}

#[test]
fn the_usage_of_claude_print_mode_turns_is_recorded_from_their_json_results() {
    let env = Env::with_team(&["a"]);
    // Stands in for `claude -p --output-format json`: the result object Claude Code prints.
    let result = json!({"type": "result", "subtype": "success", "is_error": false,
        "result": "done", "session_id": "0b7c9a4e-7f61-4c2a-9d1e-3a5b6c7d8e9f",
        "total_cost_usd": 0.0123,
        "usage": {"input_tokens": 12, "cache_creation_input_tokens": 300,
                  "cache_read_input_tokens": 4000, "output_tokens": 56},
        "modelUsage": {"claude-sonnet-4-5-20250929": {"inputTokens": 12, "outputTokens": 56,
            "cacheReadInputTokens": 4000, "cacheCreationInputTokens": 300, "costUSD": 0.0123}}});
    let script = format!("printf '%s\\n' '{result}'");
    let _a = start(&env, "a", &["--", "sh", "-c", &script, "sh"]);
    // Before any turn: nothing reported, so unknown rather than zero.
    let before = env.swarm(["--json", "usage"]).ok().json();
    assert_eq!(before["members"][1]["usage"], "unknown");
    let output_after = |n: u64| {
        eventually(LONG, &format!("{n} output tokens recorded"), || {
            let u = env.swarm(["--json", "usage"]).ok().json();
            (u["members"][1]["usage"]["outputTokens"] == n).then_some(u)
        })
    };
    // One turn at a time, so the two messages are two turns.
    env.swarm(["send", "--to", "a", "go"]).ok();
    output_after(56);
    env.swarm(["send", "--to", "a", "again"]).ok();
    let usage = output_after(112);
    let a = &usage["members"][1]["usage"];
    assert_eq!(a["source"], "turn-results");
    assert_eq!(
        (
            &a["inputTokens"],
            &a["cacheCreationInputTokens"],
            &a["cacheReadInputTokens"]
        ),
        (&json!(24), &json!(600), &json!(8000))
    );
    assert_eq!(a["reportedCostUsd"], json!(0.0246));
    assert_eq!(
        a["sessions"],
        json!(["0b7c9a4e-7f61-4c2a-9d1e-3a5b6c7d8e9f"])
    );
    assert_eq!(usage["total"]["unknownMembers"], json!(["team-lead"]));
}
