//! Permission requests from a real claude teammate, decided with `swarm permission` from the
//! lead's shell while no lead console runs (issue 15 item 3). Claude sends only the message;
//! approved, the tool really runs; denied, it does not and the model reads the feedback;
//! approved with `--accept-suggestions`, the rule changes Claude proposed take effect (its
//! `setMode acceptEdits` suggestion lets the next Write through without asking).

use serde_json::{json, Value};

use super::fake_api::{Reply, Turn};
use super::versions::each_claude;
use super::{Launch, Team};

const PROMPT: &str = "Make some files (interop permissions)";

fn script(turn: &Turn) -> Reply {
    let bash = |id: &str, file: &str| {
        Reply::tool(
            id,
            "Bash",
            json!({"command": format!("touch {file}"), "description": format!("Create {file}")}),
        )
    };
    if turn.just_answered("toolu_write") {
        return Reply::text("all done");
    }
    if turn.just_answered("toolu_third") {
        let notes = format!("{}/notes.txt", turn.working_directory());
        return Reply::tool(
            "toolu_write",
            "Write",
            json!({"file_path": notes, "content": "notes\n"}),
        );
    }
    if turn.just_answered("toolu_denied") {
        return bash("toolu_third", "third.txt");
    }
    if turn.just_answered("toolu_approved") {
        return bash("toolu_denied", "denied.txt");
    }
    if turn.last_user_text().contains(PROMPT) && !turn.called("toolu_approved") {
        return bash("toolu_approved", "approved.txt");
    }
    Reply::text("done")
}

/// Waits until `swarm permission list` shows one request for `command`; returns it.
#[track_caller]
fn pending_for(team: &Team, command: &str) -> Value {
    team.eventually(&format!("a pending request to run {command:?}"), || {
        let list = team.swarm(["--json", "permission", "list"]).ok().json();
        list.as_array()?
            .iter()
            .find(|r| r["input"]["command"] == command)
            .cloned()
    })
}

#[test]
fn claude_permission_requests_are_approved_denied_and_their_suggestions_accepted_from_the_cli() {
    each_claude(|claude| {
        let team = Team::launch(claude, Launch::new(PROMPT), script);

        let first = pending_for(&team, "touch approved.txt");
        assert_eq!(first["toolName"], "Bash");
        assert_eq!(first["workerName"], "coder");
        assert_eq!(first["toolUseId"], "toolu_approved");
        assert!(
            !team
                .env
                .path("teams/t/permissions/pending")
                .join(format!("{}.json", first["id"].as_str().unwrap()))
                .exists(),
            "Claude files nothing: the request is only a message"
        );
        team.swarm(["permission", "approve", first["id"].as_str().unwrap()])
            .ok();
        team.eventually("approved.txt created by the approved Bash call", || {
            team.work.join("approved.txt").exists().then_some(())
        });

        let second = pending_for(&team, "touch denied.txt");
        team.swarm([
            "permission",
            "deny",
            second["id"].as_str().unwrap(),
            "--feedback",
            "not that one, thanks",
        ])
        .ok();
        let told = team.eventually("the denial to reach the model", || {
            team.api
                .turns()
                .iter()
                .find_map(|body| Turn { body }.tool_result("toolu_denied"))
        });
        assert!(told.contains("not that one, thanks"), "{told}");
        assert!(!team.work.join("denied.txt").exists());

        let third = pending_for(&team, "touch third.txt");
        let suggested = third["permissionSuggestions"].to_string();
        assert!(suggested.contains("acceptEdits"), "{suggested}");
        team.swarm([
            "permission",
            "approve",
            third["id"].as_str().unwrap(),
            "--accept-suggestions",
        ])
        .ok();
        team.eventually(
            "notes.txt written without asking (acceptEdits accepted)",
            || team.work.join("notes.txt").exists().then_some(()),
        );
        assert!(team.work.join("third.txt").exists());
        let asked: Vec<String> = team
            .protocol("team-lead", "permission_request")
            .iter()
            .map(|r| r["tool_name"].as_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(
            asked,
            ["Bash", "Bash", "Bash"],
            "the Write was not asked about"
        );
    });
}
