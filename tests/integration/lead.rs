//! The lead console (`swarm lead`) driven through its stdin, with teammates played by the CLI.

mod escaping;
mod notify;
mod told;

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

/// A frame in the lead's inbox as a teammate's runtime sends it (`swarm send` refuses the
/// lifecycle frames).
fn protocol(env: &Env, from: &str, value: Value) {
    env.swarm([
        "debug",
        "frame",
        "--to",
        "team-lead",
        "--from",
        from,
        &value.to_string(),
    ])
    .ok();
}

fn inbox(env: &Env, name: &str) -> Vec<Value> {
    env.swarm(["--json", "inbox", name])
        .ok()
        .json()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn the_console_prints_messages_and_sends_what_is_typed() {
    let env = Env::with_team(&["coder", "tester"]);
    let mut lead = env.swarm(["lead"]).live();
    lead.expect("lead console for team t");
    env.swarm([
        "send",
        "--to",
        "team-lead",
        "--from",
        "coder",
        "--summary",
        "status",
        "parser done",
    ])
    .ok();
    lead.expect("coder (status): parser done");
    eventually(
        Duration::from_secs(10),
        "the message marked delivered",
        || {
            inbox(&env, "team-lead")
                .iter()
                .all(|m| m["read"] == true)
                .then_some(())
        },
    );

    lead.type_line("@coder please add tests");
    lead.type_line("@* standup in 5");
    eventually(Duration::from_secs(10), "typed messages delivered", || {
        let coder = inbox(&env, "coder");
        (coder.len() == 2).then_some(())
    });
    let coder = inbox(&env, "coder");
    assert_eq!(
        (coder[0]["from"].clone(), coder[0]["text"].clone()),
        (json!("team-lead"), json!("please add tests"))
    );
    assert_eq!(inbox(&env, "tester")[0]["text"], "standup in 5");

    lead.type_line("@ghost hello");
    lead.expect("\"ghost\" is not a member");
    lead.type_line("/bogus");
    lead.expect("unknown command \"/bogus\"");

    env.swarm(["task", "create", "Write the parser"]).ok();
    env.swarm(["task", "claim", "1", "--agent", "coder"]).ok();
    lead.type_line("/tasks");
    lead.expect("#1    in_progress Write the parser @coder");
    lead.type_line("/status");
    lead.expect("#1 Write the parser");
    lead.type_line("/quit");
    assert_eq!(lead.wait(Duration::from_secs(10)), Some(0));
}

#[test]
fn idle_notifications_read_as_sentences() {
    let env = Env::with_team(&["coder"]);
    let mut lead = env.swarm(["lead"]).live();
    protocol(
        &env,
        "coder",
        json!({"type": "idle_notification", "from": "coder", "timestamp": "t",
        "completedTaskId": "3", "completedStatus": "resolved"}),
    );
    lead.expect("coder finished task #3 (resolved)");
    protocol(
        &env,
        "coder",
        json!({"type": "idle_notification", "from": "coder", "timestamp": "t",
        "completedTaskId": "4", "completedStatus": "failed", "failureReason": "exit 1"}),
    );
    lead.expect("coder failed task #4: exit 1");
}

#[test]
fn permission_requests_are_answered_at_the_console() {
    let env = Env::with_team(&["coder"]);
    let mut lead = env.swarm(["lead"]).live();
    let asker = env
        .swarm([
            "permission",
            "request",
            "--tool",
            "Bash",
            "--input",
            "{\"command\":\"make\"}",
            "--wait",
            "--timeout",
            "30",
        ])
        .env("SWARM_AGENT_NAME", "coder")
        .env("SWARM_LEAD_VERIFY_KEY", env.lead_verify_key())
        .spawn();
    lead.expect("coder asks to use Bash");
    lead.type_line("y");
    let out = Out::from(asker.wait_with_output().unwrap());
    assert_eq!(out.code, 0, "{}", out.stderr);

    let asker = env
        .swarm([
            "permission",
            "request",
            "--tool",
            "Bash",
            "--input",
            "{\"command\":\"rm -rf /\"}",
            "--wait",
            "--timeout",
            "30",
        ])
        .env("SWARM_AGENT_NAME", "coder")
        .env("SWARM_LEAD_VERIFY_KEY", env.lead_verify_key())
        .spawn();
    lead.expect("rm -rf /");
    lead.type_line("n too dangerous");
    let out = Out::from(asker.wait_with_output().unwrap());
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stdout.contains("too dangerous"), "{}", out.stdout);
    lead.type_line("y");
    lead.expect("no question is waiting");
}

#[test]
fn a_message_only_permission_request_from_claude_code_is_filed_and_answered() {
    let env = Env::with_team(&["coder"]);
    let mut lead = env.swarm(["lead", "--auto-approve"]).live();
    protocol(
        &env,
        "coder",
        json!({"type": "permission_request", "request_id": "perm-1767225600000-k3j9x2a",
        "agent_id": "coder", "tool_name": "Edit", "tool_use_id": "toolu_1", "description": "edit main.rs",
        "input": {"file_path": "main.rs"}, "permission_suggestions": []}),
    );
    lead.expect("approved coder's use of Edit");
    let resolved =
        read_json(&env.path("teams/t/permissions/resolved/perm-1767225600000-k3j9x2a.json"));
    assert_eq!(resolved["status"], "approved");
    let response: Value =
        serde_json::from_str(inbox(&env, "coder")[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(response["type"], "permission_response");
    assert_eq!(response["request_id"], "perm-1767225600000-k3j9x2a");
    assert_eq!(response["subtype"], "success");
}

#[test]
fn plans_are_approved_or_rejected_with_feedback() {
    let env = Env::with_team(&["coder"]);
    let mut lead = env.swarm(["lead"]).live();
    protocol(
        &env,
        "coder",
        json!({"type": "plan_approval_request", "from": "coder", "timestamp": "t",
        "planFilePath": "/tmp/plan.md", "planContent": "1. parse\n2. test", "requestId": "plan_approval-1@coder@t"}),
    );
    lead.expect("coder submitted a plan");
    lead.type_line("n split step 1");
    lead.expect("rejected coder's plan");
    let response: Value =
        serde_json::from_str(inbox(&env, "coder")[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(response["type"], "plan_approval_response");
    assert_eq!(response["requestId"], "plan_approval-1@coder@t");
    assert_eq!(response["approved"], false);
    assert_eq!(response["feedback"], "split step 1");
}

#[test]
fn spoofed_protocol_replies_are_ignored() {
    let env = Env::with_team(&["coder", "tester"]);
    let mut lead = env.swarm(["lead"]).live();
    // tester claims to be coder approving a shutdown: the envelope sender does not match.
    protocol(
        &env,
        "tester",
        json!({"type": "shutdown_approved", "requestId": "shutdown-1@coder", "from": "coder", "timestamp": "t"}),
    );
    lead.expect("tester sent shutdown_approved (ignored)");
    // And coder approving a shutdown nobody asked for changes nothing either.
    protocol(
        &env,
        "coder",
        json!({"type": "shutdown_approved", "requestId": "shutdown-1@coder", "from": "coder", "timestamp": "t"}),
    );
    lead.expect("coder sent shutdown_approved (ignored)");
    let config = read_json(&env.path("teams/t/config.json"));
    assert_eq!(config["members"][1]["isActive"], true);
}

#[test]
fn shutdown_approval_retires_the_member_and_returns_its_tasks() {
    let env = Env::with_team(&["coder"]);
    env.swarm(["task", "create", "Half done"]).ok();
    env.swarm(["task", "claim", "1", "--agent", "coder"]).ok();
    let mut lead = env.swarm(["lead", "--exit-when-done"]).live();
    lead.type_line("/shutdown coder");
    lead.expect("asked coder to shut down");
    let request: Value =
        serde_json::from_str(inbox(&env, "coder")[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(request["type"], "shutdown_request");
    let id = request["requestId"].as_str().unwrap();
    assert!(
        id.starts_with("shutdown-") && id.ends_with("@coder"),
        "{id}"
    );
    protocol(
        &env,
        "coder",
        json!({"type": "shutdown_approved", "requestId": id, "from": "coder", "timestamp": "t", "paneId": "in-process", "backendType": "in-process"}),
    );
    lead.expect("its unfinished tasks went back to pending: #1");
    assert_eq!(
        lead.wait(Duration::from_secs(10)),
        Some(0),
        "--exit-when-done exits once nobody is active"
    );
    let task = read_json(&env.path("tasks/t/1.json"));
    assert_eq!(
        (task["status"].clone(), task["owner"].clone()),
        (json!("pending"), Value::Null)
    );
    assert_eq!(
        read_json(&env.path("teams/t/config.json"))["members"][1]["isActive"],
        false
    );
}
