//! The Claude Code permission hook (`scripts/claude-permission-hook`) in a team: it files a
//! request with the lead and obeys the decision made from another process, while the teammate's
//! runtime keeps the answers out of its agent's turns.

use std::path::Path;
use std::process::Stdio;

use serde_json::{json, Value};

use super::{inbox, start, to_lead, LONG};
use crate::support::*;

#[test]
fn the_permission_hook_asks_the_lead_and_obeys_approve_and_deny_from_another_process() {
    let env = Env::with_team(&["a"]);
    // The teammate's runtime keeps the lead's answers out of its agent's turns.
    let _mate = start(&env, "a", &["--agent", "shell"]);
    let hook = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/claude-permission-hook");
    let run_hook = |decide: &dyn Fn(&str)| -> Value {
        let mut child = std::process::Command::new(&hook)
            .env("SWARM_BIN", BIN)
            .env("SWARM_ROOT", env.root())
            .env("SWARM_TEAM", "t")
            .env("SWARM_AGENT_NAME", "a")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let input = json!({"session_id": "s", "hook_event_name": "PreToolUse",
                           "tool_name": "Bash", "tool_input": {"command": "rm -rf build"},
                           "tool_use_id": "toolu_1"});
        std::io::Write::write_all(
            &mut child.stdin.take().unwrap(),
            input.to_string().as_bytes(),
        )
        .unwrap();
        let id = eventually(LONG, "the request to be pending", || {
            let list = env.swarm(["--json", "permission", "list"]).ok().json();
            list[0]["id"].as_str().map(str::to_string)
        });
        decide(&id);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        serde_json::from_slice(&out.stdout).unwrap()
    };

    let allowed = run_hook(&|id| {
        env.swarm(["permission", "approve", id, "--feedback", "fine"])
            .ok();
    });
    assert_eq!(
        allowed,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
               "permissionDecision": "allow",
               "permissionDecisionReason": "approved by team-lead: fine"}})
    );
    let denied = run_hook(&|id| {
        env.swarm(["permission", "deny", id, "--feedback", "not the build dir"])
            .ok();
    });
    assert_eq!(denied["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(
        denied["hookSpecificOutput"]["permissionDecisionReason"],
        "denied by team-lead: not the build dir"
    );
    let requests = to_lead(&env, "permission_request");
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["tool_name"], "Bash");
    assert_eq!(requests[0]["description"], "rm -rf build");
    assert_eq!(requests[0]["tool_use_id"], "toolu_1");

    eventually(LONG, "the runtime to consume both answers", || {
        let answers = inbox(&env, "a");
        (answers.len() == 2 && answers.iter().all(|m| m["read"] == true)).then_some(())
    });
    assert!(
        to_lead(&env, "idle_notification").is_empty(),
        "an answer is not a turn"
    );

    // Outside a team the hook has no opinion.
    let out = std::process::Command::new(&hook)
        .env("SWARM_BIN", BIN)
        .env_remove("SWARM_TEAM")
        .env_remove("SWARM_AGENT_NAME")
        .env("SWARM_ROOT", env.root())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
}
