//! What the lead agent is told (issue 28): its task notifications carry the teammate's output
//! file, how long the task took and what the teammate told other teammates on the way; its
//! guide states the coordinator's rules.

use std::time::Duration;

use crate::support::*;

const LONG: Duration = Duration::from_secs(120);

/// The lead agent's task notification carries the teammate's output file and how long the task
/// took, and what the teammate told another teammate on the way (the peer message summary),
/// which the lead is otherwise not part of (issue 28).
#[test]
fn a_task_notification_carries_the_output_file_the_duration_and_the_peer_messages() {
    let env = Env::new();
    let script = env.path("lead.sh");
    std::fs::write(
        &script,
        "printf '%s\\n=====\\n' \"$1\" >> \"$SWARM_ROOT/prompts\"\n\
         case $1 in\n\
         *'You are the lead'*) swarm task create lexer --description \
           'if [ \"$SWARM_AGENT_NAME\" = a ]; then to=b; else to=a; fi; \
            swarm send --to $to --summary \"lexer done\" \"the lexer is done\"; sleep 0.2';;\n\
         *'<task-notification '*) swarm done --summary finished;;\n\
         esac\n",
    )
    .unwrap();
    let file = env.path("team.json");
    std::fs::write(
        &file,
        serde_json::json!({"team": "i", "agent": "shell",
            "teammates": [{"name": "a"}, {"name": "b"}],
            "lead": {"agent": ["sh", script.display().to_string()], "goal": "one step"}})
        .to_string(),
    )
    .unwrap();
    let mut launcher = env
        .swarm(["launch", file.to_str().unwrap(), "--backend", "in-process"])
        .env("SWARM_TEAM", "i")
        .live();
    assert_eq!(launcher.wait(LONG), Some(0), "{:?}", launcher.seen);
    let prompts = std::fs::read_to_string(env.path("prompts")).unwrap();
    let first = prompts.split("\n=====\n").next().unwrap();
    assert!(first.contains("never thank or acknowledge them"), "{first}");
    let at = prompts
        .find("<task-notification task_id=\"1\" status=\"completed\"")
        .unwrap_or_else(|| panic!("no notification: {prompts}"));
    let notice = &prompts[at..at + prompts[at..].find("</task-notification>").unwrap()];
    let owner = if notice.contains("teammate_id=\"a\"") {
        "a"
    } else {
        "b"
    };
    let other = if owner == "a" { "b" } else { "a" };
    let log = env.path(&format!("teams/i/logs/{owner}.log"));
    assert!(
        notice.contains(&format!("<output-file>{}</output-file>", log.display())),
        "{notice}"
    );
    assert!(
        notice.contains(&format!(
            "<summary>completed task #1; [to {other}] lexer done</summary>"
        )),
        "{notice}"
    );
    let ms: u64 = notice
        .split("<duration_ms>")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no duration: {notice}"));
    assert!(ms >= 200, "the task slept 0.2 s: {ms} ms");
}
