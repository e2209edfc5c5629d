//! Plan mode with a real claude teammate (`planModeRequired`, launched in `acceptEdits`),
//! answered at the lead console (issue 15 item 4). A rejection reaches the model with its
//! feedback and leaves it planning; an approval is accepted by a teammate started with
//! `--lead-verify-key` only because it carries the plan's `planDigest`, and it restores the
//! launch mode (`permissionMode`): the Write that follows needs no permission and the roster
//! still says `acceptEdits`.

use serde_json::json;

use super::fake_api::{Reply, Turn};
use super::versions::each_claude;
use super::{Launch, Team};

const PROMPT: &str = "Plan first, then write notes (interop plan)";
const PLAN: &str = "# Plan\n\n1. Write notes.txt\n";
const FEEDBACK: &str = "add a step that checks the notes";

fn script(turn: &Turn) -> Reply {
    let new = turn.last_user_text();
    if turn.just_answered("toolu_notes") {
        return Reply::text("notes written");
    }
    if new.contains("Plan Approved") && !turn.called("toolu_notes") {
        let notes = format!("{}/notes.txt", turn.working_directory());
        return Reply::tool(
            "toolu_notes",
            "Write",
            json!({"file_path": notes, "content": "notes\n"}),
        );
    }
    if new.contains(FEEDBACK) && !turn.called("toolu_exit2") {
        return Reply::tool("toolu_exit2", "ExitPlanMode", json!({}));
    }
    // ExitPlanMode without a plan file says where the plan goes; write it there, then submit.
    if turn.just_answered("toolu_try") {
        let said = turn.tool_result("toolu_try").unwrap_or_default();
        let path = said
            .split("No plan file found at ")
            .nth(1)
            .and_then(|rest| rest.split(". Please").next())
            .unwrap_or_default()
            .to_string();
        return Reply::tool(
            "toolu_plan",
            "Write",
            json!({"file_path": path, "content": PLAN}),
        );
    }
    if turn.just_answered("toolu_plan") {
        return Reply::tool("toolu_exit1", "ExitPlanMode", json!({}));
    }
    if new.contains(PROMPT) && !turn.called("toolu_try") {
        return Reply::tool("toolu_try", "ExitPlanMode", json!({}));
    }
    Reply::text("waiting for the lead")
}

/// Waits until coder went idle after sending `request`, as a person would see it waiting: a
/// verdict that lands while the turn that submitted the plan is still running is sometimes not
/// acted on by Claude 2.1.328.
fn idle_since(team: &Team, request: &serde_json::Value) {
    let sent = request["timestamp"].as_str().unwrap().to_string();
    team.eventually("coder idle after submitting its plan", || {
        team.protocol("team-lead", "idle_notification")
            .iter()
            .any(|n| n["timestamp"].as_str().is_some_and(|t| t > sent.as_str()))
            .then_some(())
    });
}

#[test]
fn a_plan_rejected_then_approved_at_the_console_keeps_the_teammates_launch_mode() {
    each_claude(|claude| {
        let team = Team::launch(
            claude,
            Launch {
                mode: "acceptEdits",
                plan_mode_required: true,
                ..Launch::new(PROMPT)
            },
            script,
        );
        let mut lead = team.swarm(["lead", "--team", "t"]).live();
        let request = team.await_lead("plan_approval_request");
        assert_eq!(request["from"], "coder");
        assert_eq!(request["planContent"], PLAN);
        let id = request["requestId"].as_str().unwrap();
        lead.expect(&format!("answer y to approve {id}"));
        idle_since(&team, &request);
        lead.type_line(&format!("n {FEEDBACK}"));
        lead.expect("rejected coder's plan");

        let second = team.await_lead_nth("plan_approval_request", 1);
        let told = team
            .api
            .turns()
            .iter()
            .map(|body| Turn { body }.last_user_text())
            .find(|t| t.contains(FEEDBACK))
            .expect("the model was shown the rejection");
        assert!(!told.contains("Plan Approved"), "{told}");
        assert!(
            !team.work.join("notes.txt").exists(),
            "nothing written while planning"
        );

        let id = second["requestId"].as_str().unwrap();
        lead.expect(&format!("answer y to approve {id}"));
        idle_since(&team, &second);
        lead.type_line("y");
        lead.expect("approved coder's plan");
        team.eventually("notes.txt written after the approval", || {
            team.work.join("notes.txt").exists().then_some(())
        });
        assert!(
            team.protocol("team-lead", "permission_request").is_empty(),
            "acceptEdits is in force again: the Write asked nobody"
        );
        assert_eq!(team.roster_member("coder")["mode"], "acceptEdits");
    });
}

/// The plan with `id` as `swarm permission list` shows it, once it is there.
fn listed(team: &Team, id: &str) -> serde_json::Value {
    team.eventually("the plan listed by swarm permission list", || {
        let list = team.swarm(["--json", "permission", "list"]).ok().json();
        list.as_array()?.iter().find(|r| r["id"] == id).cloned()
    })
}

#[test]
fn a_plan_rejected_then_approved_from_the_cli_keeps_the_teammates_launch_mode() {
    each_claude(|claude| {
        let team = Team::launch(
            claude,
            Launch {
                mode: "acceptEdits",
                plan_mode_required: true,
                ..Launch::new(PROMPT)
            },
            script,
        );
        let request = team.await_lead("plan_approval_request");
        let id = request["requestId"].as_str().unwrap();
        assert_eq!(listed(&team, id)["planContent"], PLAN);
        idle_since(&team, &request);
        // Claude acts on the lead's answer alone: another decider's name is refused, not sent.
        // (Not `refused()`: the live claude takes lock files in the root meanwhile.)
        let out = team
            .swarm(["permission", "deny", id, "--by", "operator"])
            .run_within(super::WAIT);
        assert_eq!(out.code, 2, "{out:?}");
        assert!(out.stderr.contains("coder is a claude teammate"), "{out:?}");
        assert_eq!(listed(&team, id)["planContent"], PLAN, "still pending");
        team.swarm(["permission", "deny", id, "--feedback", FEEDBACK])
            .ok();

        let second = team.await_lead_nth("plan_approval_request", 1);
        let told = team
            .api
            .turns()
            .iter()
            .map(|body| Turn { body }.last_user_text())
            .find(|t| t.contains(FEEDBACK))
            .expect("the model was shown the rejection");
        assert!(!told.contains("Plan Approved"), "{told}");

        let id = second["requestId"].as_str().unwrap();
        listed(&team, id);
        idle_since(&team, &second);
        let out = team.swarm(["permission", "approve", id]).ok();
        assert!(out.stdout.contains("approved"), "{}", out.stdout);
        team.eventually("notes.txt written after the approval", || {
            team.work.join("notes.txt").exists().then_some(())
        });
        assert!(
            team.protocol("team-lead", "permission_request").is_empty(),
            "acceptEdits is in force again: the Write asked nobody"
        );
        assert_eq!(team.roster_member("coder")["mode"], "acceptEdits");
    });
}
