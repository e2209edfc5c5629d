//! The shared task list with a real claude teammate: it sees swarm's tasks with TaskList,
//! claims one with TaskUpdate (owner and status) and completes it, in the task files swarm
//! reads. Left alone (no lead console), it claims nothing more: the next task stays pending,
//! which is why the lead side dispatches (see `dispatch`).

use serde_json::json;

use super::fake_api::{Reply, Turn};
use super::versions::each_claude;
use super::{Launch, Team};

const PROMPT: &str = "Work through the task list (interop tasks)";

fn script(turn: &Turn) -> Reply {
    if turn.just_answered("toolu_done") {
        return Reply::text("task 1 is done");
    }
    if turn.just_answered("toolu_claim") {
        return Reply::tool(
            "toolu_done",
            "TaskUpdate",
            json!({"taskId": "1", "status": "completed"}),
        );
    }
    if turn.just_answered("toolu_list") {
        return Reply::tool(
            "toolu_claim",
            "TaskUpdate",
            json!({"taskId": "1", "status": "in_progress", "owner": "coder"}),
        );
    }
    if turn.last_user_text().contains(PROMPT) && !turn.called("toolu_list") {
        return Reply::tool("toolu_list", "TaskList", json!({}));
    }
    Reply::text("done")
}

#[test]
fn a_claude_teammate_lists_claims_and_completes_a_swarm_task_and_claims_no_other_by_itself() {
    each_claude(|claude| {
        let team = Team::launch(
            claude,
            Launch {
                tasks: &["Write the parser", "Test the parser"],
                ..Launch::new(PROMPT)
            },
            script,
        );
        let listed = team.eventually("TaskList's answer", || {
            team.api
                .turns()
                .iter()
                .find_map(|body| Turn { body }.tool_result("toolu_list"))
        });
        assert!(
            listed.contains("Write the parser") && listed.contains("Test the parser"),
            "TaskList shows swarm's tasks: {listed}"
        );
        team.eventually("task 1 completed by coder", || {
            let t = team.task("1");
            (t["status"] == "completed").then_some(t)
        });
        assert_eq!(team.task("1")["owner"], "coder");
        let claimed = team
            .api
            .turns()
            .iter()
            .find_map(|body| Turn { body }.tool_result("toolu_claim"))
            .unwrap();
        assert!(
            !claimed.contains("rror"),
            "the claim was accepted: {claimed}"
        );
        // Finished and idle, it leaves task 2 alone.
        team.eventually("coder idle after its task", || {
            team.api
                .turns()
                .iter()
                .any(|body| Turn { body }.just_answered("toolu_done"))
                .then_some(())
        });
        team.await_lead("idle_notification");
        let next = team.task("2");
        assert_eq!(next["status"], "pending", "{next}");
        assert!(
            next.get("owner").is_none_or(|o| o.is_null() || o == ""),
            "{next}"
        );
    });
}
