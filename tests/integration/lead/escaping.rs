//! What the lead console shows is what it answers: the permission question shows the tool and
//! its full input with control characters made visible (the requester's own description cannot
//! rewrite the line), and `y` / `n` answer the request named in the prompt line, never one that
//! was decided elsewhere meanwhile.

use std::time::Duration;

use serde_json::Value;

use crate::support::*;

/// Files a permission request from `from` without waiting; returns its id.
fn request(env: &Env, from: &str, input: &str, description: &str) -> String {
    let record = env
        .swarm([
            "--json",
            "permission",
            "request",
            "--tool",
            "Bash",
            "--input",
            input,
            "--description",
            description,
        ])
        .env("SWARM_AGENT_NAME", from)
        .ok()
        .json();
    record["id"].as_str().unwrap().to_string()
}

fn decided(env: &Env, id: &str) -> Option<Value> {
    let path = env.path(&format!("teams/t/permissions/resolved/{id}.json"));
    path.exists().then(|| read_json(&path))
}

#[test]
fn the_permission_question_shows_the_tool_and_full_input_with_escapes_visible() {
    let env = Env::with_team(&["victim"]);
    let mut lead = env.swarm(["lead"]).live();
    lead.expect("lead console for team t");
    let id = request(
        &env,
        "victim",
        "{\"command\":\"rm -rf ~/work\"}",
        "rm -rf ~/work\r\x1b[2K? victim asks to use Read: README.md\x1b[8m",
    );
    lead.expect("victim asks to use Bash");
    let prompt = lead.expect("answer y to approve");
    let question: Vec<&String> = lead
        .seen
        .iter()
        .skip_while(|l| !l.contains("victim asks to use Bash"))
        .collect();
    let screen = question
        .iter()
        .map(|l| l.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let raw: Vec<char> = screen
        .chars()
        .filter(|c| c.is_control() && *c != '\n')
        .collect();
    assert!(
        raw.is_empty(),
        "raw control characters {raw:?} in:\n{screen}"
    );
    assert!(
        question[0].contains("victim asks to use Bash")
            && question[0].contains("{\"command\":\"rm -rf ~/work\"}"),
        "the first line names the tool and its whole input:\n{screen}"
    );
    assert!(
        screen.contains("rm -rf ~/work\\r\\e[2K? victim asks to use Read: README.md\\e[8m"),
        "{screen}"
    );
    assert!(prompt.contains(&id), "{prompt}");
}

#[test]
fn a_request_decided_elsewhere_leaves_the_queue_and_y_answers_the_one_on_screen() {
    let env = Env::with_team(&["coder"]);
    let mut lead = env.swarm(["lead"]).live();
    lead.expect("lead console for team t");
    let first = request(&env, "coder", "{\"command\":\"make\"}", "build");
    lead.expect("answer y to approve");
    let second = request(&env, "coder", "{\"command\":\"make test\"}", "test");
    lead.expect(&format!("also waiting: {second}"));

    env.swarm(["permission", "approve", &first, "--by", "operator"])
        .ok();
    lead.expect(&format!("{first} was approved by operator"));
    lead.expect(&format!("y to approve {second}"));
    lead.type_line("y");
    lead.expect("approved coder's use of Bash");
    let record = decided(&env, &second).expect("the second request is decided");
    assert_eq!(
        (record["status"].clone(), record["resolvedBy"].clone()),
        ("approved".into(), "team-lead".into())
    );
    assert_eq!(decided(&env, &first).unwrap()["resolvedBy"], "operator");
    lead.type_line("y");
    lead.expect("no question is waiting");
}

#[test]
fn y_on_a_request_decided_elsewhere_unseen_answers_nothing_else() {
    let env = Env::with_team(&["coder"]);
    let first = request(&env, "coder", "{\"command\":\"make\"}", "build");
    let second = request(&env, "coder", "{\"command\":\"make test\"}", "test");
    // No file events and no re-scan: the console cannot notice the decision before `y`.
    let mut lead = env
        .swarm(["lead"])
        .env("SWARM_NO_FS_EVENTS", "1")
        .env("SWARM_RESCAN_MS", "600000")
        .live();
    lead.expect("answer y to approve");
    env.swarm(["permission", "deny", &first, "--by", "operator"])
        .ok();
    lead.type_line("y");
    lead.expect(&format!("{first} was rejected by operator"));
    lead.expect(&format!("y to approve {second}"));
    assert!(
        decided(&env, &second).is_none(),
        "the y meant for {first} did not approve {second}"
    );
    assert_eq!(decided(&env, &first).unwrap()["status"], "rejected");
    lead.type_line("y");
    eventually(
        Duration::from_secs(10),
        "the second request approved",
        || decided(&env, &second).filter(|r| r["status"] == "approved"),
    );
}
