//! A request waiting on the lead is one thing wherever it is decided (issue 19 item 1): a
//! permission or plan request is listed, decided and refused the same way from `swarm
//! permission`, the lead console, the lead agent and `swarm top`. Plans are decided from the CLI
//! too (issue 28 item 3), `--by` is refused where the requester would ignore the answer, and a
//! request decided anywhere leaves the console's queue with a line saying who decided (issue 25
//! item 4).

use std::io::Write;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;
use crate::top::Dashboard;

const PLAN: &str = "1. parse\n2. test";

/// Sets roster fields of member `name` in team `t` (a fixture, as the launcher writes them).
fn set_member(env: &Env, name: &str, fields: Value) {
    let path = env.path("teams/t/config.json");
    let mut config = read_json(&path);
    let member = config["members"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|m| m["name"] == name)
        .unwrap();
    for (k, v) in fields.as_object().unwrap() {
        member[k] = v.clone();
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
}

/// `from` submits a plan to the lead, as a teammate in plan mode does; returns its id.
fn submit_plan(env: &Env, from: &str, n: u32) -> String {
    let id = format!("plan_approval-{n}@{from}@t");
    let plan = json!({"type": "plan_approval_request", "from": from,
        "timestamp": format!("2026-01-01T00:00:0{n}.000Z"), "planFilePath": "/tmp/plan.md",
        "planContent": PLAN, "requestId": id});
    env.swarm([
        "send",
        "--from",
        from,
        "--to",
        "team-lead",
        &plan.to_string(),
    ])
    .ok();
    id
}

/// `from` asks the lead for Bash with `command`, the way `swarm permission request` files it.
fn request(env: &Env, from: &str, command: &str) -> String {
    let input = json!({ "command": command }).to_string();
    let out = env
        .swarm([
            "--json",
            "permission",
            "request",
            "--tool",
            "Bash",
            "--from",
            from,
            "--input",
            &input,
        ])
        .ok();
    out.json()["id"].as_str().unwrap().to_string()
}

/// The protocol answers from the lead in `name`'s inbox, parsed, oldest first.
fn answers(env: &Env, name: &str) -> Vec<Value> {
    let inbox = read_json(&env.path(&format!("teams/t/inboxes/{name}.json")));
    inbox
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["from"] == "team-lead")
        .filter_map(|m| serde_json::from_str(m["text"].as_str()?).ok())
        .collect()
}

fn sha256(text: &str) -> String {
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

#[test]
fn a_plan_is_listed_rejected_with_feedback_and_approved_with_the_members_mode_from_the_cli() {
    let env = Env::with_team(&["coder"]);
    set_member(&env, "coder", json!({"mode": "acceptEdits"}));
    let first = submit_plan(&env, "coder", 1);

    let list = env.swarm(["--json", "permission", "list"]).ok().json();
    assert_eq!(list[0]["id"], first.as_str(), "{list}");
    assert_eq!(list[0]["workerName"], "coder");
    assert_eq!(list[0]["status"], "pending");
    assert_eq!(list[0]["planContent"], PLAN);
    let text = env.swarm(["permission", "list"]).ok().stdout;
    assert!(
        text.contains(&first) && text.contains("coder submitted a plan"),
        "{text}"
    );
    let status = env.swarm(["--json", "status"]).ok().json();
    assert_eq!(status["pendingPlans"][0]["id"], first.as_str(), "{status}");
    let text = env.swarm(["status"]).ok().stdout;
    assert!(text.contains("pending plans: 1"), "{text}");
    assert!(text.contains(&first), "{text}");

    let out = env
        .swarm(["permission", "deny", &first, "--feedback", "split step 1"])
        .ok();
    assert!(out.stdout.contains("rejected"), "{}", out.stdout);
    let answer = &answers(&env, "coder")[0];
    assert_eq!(answer["type"], "plan_approval_response");
    assert_eq!(answer["requestId"], first.as_str());
    assert_eq!(answer["approved"], false);
    assert_eq!(answer["feedback"], "split step 1");
    env.swarm(["permission", "wait", &first]).code(1);
    assert_eq!(
        env.swarm(["--json", "permission", "list"]).ok().json(),
        json!([])
    );

    let second = submit_plan(&env, "coder", 2);
    let waiter = env
        .swarm(["--json", "permission", "wait", &second, "--timeout", "60"])
        .spawn();
    env.swarm(["permission", "approve", &second]).ok();
    let answer = &answers(&env, "coder")[1];
    assert_eq!(answer["requestId"], second.as_str());
    assert_eq!(answer["approved"], true);
    assert_eq!(answer["permissionMode"], "acceptEdits", "{answer}");
    assert_eq!(answer["planDigest"], sha256(PLAN));
    let out = wait_bounded(waiter, Duration::from_secs(60), "the plan waiter");
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["status"], "approved");
    let record = read_json(&env.path(&format!("teams/t/permissions/resolved/{second}.json")));
    assert_eq!(record["status"], "approved");
    assert_eq!(record["resolvedBy"], "team-lead");
    let all = env
        .swarm(["--json", "permission", "list", "--all"])
        .ok()
        .json();
    let statuses: Vec<(&str, &str)> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        [(first.as_str(), "rejected"), (second.as_str(), "approved")]
    );
    // A plan takes no tool input.
    let third = submit_plan(&env, "coder", 3);
    env.swarm(["permission", "approve", &third, "--updated-input", "{}"])
        .refused("--updated-input");
}

#[test]
fn deciding_a_decided_request_is_refused_saying_who_decided_and_how() {
    let env = Env::with_team(&["coder"]);
    let id = request(&env, "coder", "make");
    env.swarm(["permission", "approve", &id, "--by", "operator"])
        .ok();
    env.swarm(["permission", "deny", &id])
        .refused(&format!("{id} was already decided: approved by operator"));
    env.swarm(["permission", "approve", &id])
        .refused("already decided: approved by operator");

    let plan = submit_plan(&env, "coder", 1);
    env.swarm(["permission", "deny", &plan]).ok();
    env.swarm(["permission", "approve", &plan])
        .refused(&format!(
            "{plan} was already decided: rejected by team-lead"
        ));
    let answers = answers(&env, "coder");
    let kinds: Vec<&Value> = answers.iter().map(|a| &a["type"]).collect();
    assert_eq!(
        kinds,
        ["permission_response", "plan_approval_response"],
        "one answer each, from the lead"
    );
}

#[test]
fn approve_by_another_name_is_refused_for_a_claude_teammate_and_recorded_for_others() {
    let env = Env::with_team(&["coder", "helper"]);
    set_member(&env, "coder", json!({"swarmAgent": "claude"}));
    // A Claude Code teammate sends its request only as a message.
    let id = "perm-1767225600000-k3j9x2a";
    let message = json!({"type": "permission_request", "request_id": id, "agent_id": "coder",
        "tool_name": "Edit", "tool_use_id": "toolu_1", "description": "edit main.rs",
        "input": {"file_path": "main.rs"}, "permission_suggestions": []});
    env.swarm([
        "send",
        "--from",
        "coder",
        "--to",
        "team-lead",
        &message.to_string(),
    ])
    .ok();
    env.swarm(["permission", "approve", id, "--by", "operator"])
        .refused("coder is a claude teammate");
    env.swarm(["permission", "deny", id, "--by", "operator"])
        .refused("coder is a claude teammate");
    // The lead's own name is no other name.
    env.swarm(["permission", "approve", id, "--by", "team-lead"])
        .ok();
    assert_eq!(answers(&env, "coder")[0]["subtype"], "success");

    // Any other teammate's request takes another name, recorded; the answer is the lead's.
    let other = request(&env, "helper", "make");
    env.swarm(["permission", "approve", &other, "--by", "operator"])
        .ok();
    let plan = submit_plan(&env, "helper", 1);
    env.swarm(["permission", "approve", &plan, "--by", "operator"])
        .ok();
    let answers = answers(&env, "helper");
    assert_eq!(
        answers.len(),
        2,
        "both answers come from the lead: {answers:?}"
    );
    for id in [&other, &plan] {
        let record = read_json(&env.path(&format!("teams/t/permissions/resolved/{id}.json")));
        assert_eq!(record["resolvedBy"], "operator");
    }
}

#[test]
fn a_plan_decided_from_the_cli_leaves_the_console_queue_saying_who_decided() {
    let env = Env::with_team(&["coder"]);
    let mut lead = env.swarm(["lead"]).live();
    lead.expect("lead console for team t");
    let plan = submit_plan(&env, "coder", 1);
    lead.expect(&format!("answer y to approve {plan}"));
    env.swarm(["permission", "deny", &plan, "--feedback", "no"])
        .ok();
    lead.expect(&format!(
        "{plan} was rejected by team-lead elsewhere; it leaves the queue"
    ));
    lead.type_line("y");
    lead.expect("no question is waiting");
    assert_eq!(answers(&env, "coder").len(), 1, "the plan answered once");
}

/// A lead agent standing in for a model: it approves plans and rejects permission requests.
fn lead_agent(env: &Env) -> Live {
    std::fs::create_dir_all(env.path("teams/t/lead")).unwrap();
    std::fs::write(env.path("teams/t/lead/goal.md"), "ship it").unwrap();
    let script = env.path("lead.sh");
    std::fs::write(
        &script,
        "case $1 in\n\
         *'<plan-approval-request '*) echo approve;;\n\
         *'<permission-request '*) echo 'deny: not now';;\n\
         esac\n",
    )
    .unwrap();
    let mut lead = env
        .swarm([
            "lead",
            "--approvals",
            "lead",
            "--",
            "sh",
            script.to_str().unwrap(),
        ])
        .live();
    lead.expect("lead agent of team t is up");
    lead.expect("lead turn done");
    lead
}

#[test]
fn a_plan_the_lead_agent_decides_leaves_the_human_console_queue() {
    let env = Env::with_team(&["coder"]);
    set_member(&env, "coder", json!({"mode": "acceptEdits"}));
    let mut lead = lead_agent(&env);
    let plan = submit_plan(&env, "coder", 1);
    lead.expect(&format!("answer y to approve {plan}"));
    lead.expect("the lead agent approved coder's plan");
    lead.expect(&format!(
        "{plan} was approved by team-lead (lead-agent) elsewhere; it leaves the queue"
    ));
    lead.type_line("y");
    lead.expect("no question is waiting");
    let answers = answers(&env, "coder");
    assert_eq!(answers.len(), 1, "the plan answered once: {answers:?}");
    assert_eq!(answers[0]["permissionMode"], "acceptEdits");
    let decisions = std::fs::read_to_string(env.path("teams/t/lead/decisions.jsonl")).unwrap();
    let decision: Value = serde_json::from_str(decisions.trim()).unwrap();
    assert_eq!(
        (&decision["requestId"], &decision["kind"], &decision["by"]),
        (&json!(plan), &json!("plan"), &json!("lead-agent"))
    );
}

#[test]
fn the_four_front_ends_print_the_same_verdict_word() {
    let env = Env::with_team(&["coder"]);
    let mut said = Vec::new();

    let id = request(&env, "coder", "one");
    said.push(env.swarm(["permission", "deny", &id]).ok().stdout);

    let mut console = env.swarm(["lead"]).live();
    request(&env, "coder", "two");
    console.expect("answer y to approve");
    console.type_line("n");
    said.push(console.expect("coder's use of Bash"));
    drop(console);

    let mut agent = lead_agent(&env);
    request(&env, "coder", "three");
    said.push(agent.expect("the lead agent"));
    drop(agent);

    let tmux = Tmux::new();
    request(&env, "coder", "four");
    let dash = Dashboard::start(&env, &tmux, &[]);
    dash.wait_for("the request", |s| s.contains("wants Bash"));
    dash.keys(&["n", "Enter"]);
    let screen = dash.wait_for("the verdict", |s| s.contains("coder's use of Bash"));
    said.push(
        screen
            .lines()
            .find(|l| l.contains("coder's use of Bash"))
            .unwrap()
            .to_string(),
    );
    dash.keys(&["q"]);

    for line in &said {
        assert!(
            line.contains("rejected") && !line.contains("denied"),
            "every front end says rejected: {said:#?}"
        );
    }
}

#[test]
fn a_request_with_an_id_that_is_no_file_name_is_ignored_and_the_console_goes_on() {
    let env = Env::with_team(&["coder"]);
    let mut lead = env.swarm(["lead"]).live();
    lead.expect("lead console for team t");
    let bad = json!({"type": "permission_request", "request_id": "../../config",
        "agent_id": "coder", "tool_name": "Bash", "input": {}});
    env.swarm([
        "send",
        "--from",
        "coder",
        "--to",
        "team-lead",
        &bad.to_string(),
    ])
    .ok();
    lead.expect("coder sent permission_request (ignored)");
    // Still answering: the next real request is asked.
    let id = request(&env, "coder", "make");
    lead.expect(&format!("answer y to approve {id}"));
    assert_eq!(lead.wait(Duration::from_millis(200)), None, "still running");
}

/// Issue 22 item 7: a directory a teammate made at `lead/decisions.jsonl` used to end the lead
/// agent at its first decision. It is moved aside (its contents kept), noted in `swarm status`,
/// the decision recorded in a fresh file, and the lead agent goes on deciding.
#[test]
fn a_directory_at_the_lead_decisions_file_is_moved_aside_and_the_lead_goes_on() {
    let env = Env::with_team(&["coder"]);
    set_member(&env, "coder", json!({"mode": "acceptEdits"}));
    let planted = env.path("teams/t/lead/decisions.jsonl");
    std::fs::create_dir_all(&planted).unwrap();
    std::fs::write(planted.join("kept"), "every byte").unwrap();
    let mut lead = lead_agent(&env);
    let plan = submit_plan(&env, "coder", 1);
    lead.expect("the lead agent approved coder's plan");
    let second = submit_plan(&env, "coder", 2);
    lead.expect(&format!("answer y to approve {second}"));
    eventually(Duration::from_secs(60), "both decisions recorded", || {
        let text = std::fs::read_to_string(&planted).ok()?;
        (text.contains(&plan) && text.contains(&second)).then_some(())
    });
    let status = env.swarm(["--json", "status"]).ok().json();
    let quarantined: Vec<String> = status["quarantined"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q.as_str().unwrap().to_string())
        .collect();
    let moved = quarantined
        .iter()
        .find(|q| q.starts_with("teams/t/lead/decisions.jsonl.corrupt-"))
        .unwrap_or_else(|| panic!("{quarantined:?}"));
    assert_eq!(
        std::fs::read_to_string(env.path(moved).join("kept")).unwrap(),
        "every byte"
    );
    assert!(
        status["notes"].to_string().contains("it is a directory"),
        "{status}"
    );
}
