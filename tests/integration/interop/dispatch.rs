//! The lead console hands tasks to idle claude teammates (issue 15 item 6): once per task,
//! never to a busy one. First with stand-in `claude` processes whose idleness the test sets in
//! the roster as Claude does (so every step is the test's choice), then with the real binary,
//! which goes idle on its own, gets its assignment and completes it with TaskUpdate.

use std::os::unix::fs::PermissionsExt;

use serde_json::{json, Value};

use super::fake_api::{Reply, Turn};
use super::versions::each_claude;
use super::{Launch, Team, WAIT};
use crate::support::*;

/// `name`'s `task_assignment` messages, each with its envelope as `_envelope`.
fn assignments(env: &Env, name: &str) -> Vec<Value> {
    let path = env.path(&format!("teams/t/inboxes/{name}.json"));
    let inbox: Vec<Value> = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    inbox
        .into_iter()
        .filter_map(|m| {
            let mut p: Value = serde_json::from_str(m["text"].as_str()?).ok()?;
            (p["type"] == "task_assignment").then(|| {
                p["_envelope"] = m;
                p
            })
        })
        .collect()
}

/// Sets `isActive` in the roster, as Claude does when a teammate starts or ends a turn.
fn set_busy(env: &Env, name: &str, busy: bool) {
    let path = env.path("teams/t/config.json");
    let mut config = read_json_in_place(&path);
    for m in config["members"].as_array_mut().unwrap() {
        if m["name"] == name {
            m["isActive"] = json!(busy);
        }
    }
    let tmp = env.path("teams/t/config.json.test-tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
}

fn task(env: &Env, id: &str) -> Value {
    read_json_in_place(&env.path(&format!("tasks/t/{id}.json")))
}

#[test]
fn the_lead_assigns_each_task_once_to_an_idle_claude_teammate_and_none_to_a_busy_one() {
    let env = Env::new();
    let tmux = Tmux::new();
    let stand_in = env.path("claude");
    std::fs::write(&stand_in, "#!/bin/sh\nexec sleep 300\n").unwrap();
    std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "t", "cwd": env.root(),
               "teammates": [{"name": "coder", "prompt": "p"}, {"name": "busy", "prompt": "p"}],
               "tasks": [{"subject": "A"}, {"subject": "B"}, {"subject": "C"}]})
        .to_string(),
    )
    .unwrap();
    let file = file.to_str().unwrap();
    env.swarm([
        "launch",
        file,
        "--agent",
        "claude",
        "--backend",
        "tmux",
        "--no-lead-pane",
    ])
    .env("SWARM_TMUX_SOCKET", &tmux.socket)
    .env("CLAUDE_CODE_TEAMMATE_COMMAND", &stand_in)
    .ok();
    set_busy(&env, "coder", false);
    set_busy(&env, "busy", true);

    let mut lead = env
        .swarm(["lead", "--team", "t"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .live();
    lead.expect("assigned task #1 (A) to coder");
    assert_eq!(task(&env, "1")["owner"], "coder");
    assert_eq!(task(&env, "1")["status"], "in_progress");
    // Two more passes (a message, a new task): coder owns #1, busy says it is busy.
    env.swarm(["send", "--from", "busy", "--to", "team-lead", "still at it"])
        .ok();
    lead.expect("still at it");
    env.swarm(["task", "create", "D"]).ok();
    env.swarm(["send", "--from", "busy", "--to", "team-lead", "still busy"])
        .ok();
    lead.expect("still busy");
    for id in ["2", "3", "4"] {
        assert!(task(&env, id)["owner"].is_null(), "{}", task(&env, id));
    }
    assert!(assignments(&env, "busy").is_empty());

    // Coder finishes #1 and is idle again; busy goes idle too.
    env.swarm(["task", "update", "1", "--status", "completed"])
        .ok();
    lead.expect("assigned task #2 (B) to coder");
    set_busy(&env, "busy", false);
    lead.expect("assigned task #3 (C) to busy");

    let to_coder = assignments(&env, "coder");
    let ids: Vec<&str> = to_coder
        .iter()
        .map(|a| a["taskId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1", "2"], "one assignment per task: {to_coder:?}");
    assert_eq!(assignments(&env, "busy").len(), 1);
    for a in to_coder.iter().chain(&assignments(&env, "busy")) {
        let keys: Vec<&str> = a
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "_envelope")
            .collect();
        assert_eq!(
            keys,
            [
                "type",
                "taskId",
                "subject",
                "description",
                "assignedBy",
                "timestamp"
            ]
        );
        assert_eq!(a["assignedBy"], "team-lead");
        assert_eq!(a["_envelope"]["from"], "team-lead");
        assert!(a["_envelope"]["lead_sig"].is_string(), "signed: {a}");
    }
    for pid in tmux
        .cmd(["list-panes", "-a", "-F", "#{pane_pid}"])
        .stdout
        .lines()
        .filter_map(|l| l.trim().parse::<i32>().ok())
    {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

const PROMPT: &str = "Wait for the lead to assign you tasks (interop dispatch)";

/// The model: idle until it is shown a task assignment, then complete that task.
fn script(turn: &Turn) -> Reply {
    let text = turn.last_user_text();
    if text.contains("task_assignment") {
        for (at, prefix) in text.match_indices(r#""taskId":""#) {
            let rest = &text[at + prefix.len()..];
            let id = &rest[..rest.find('"').unwrap_or(0)];
            let call = format!("toolu_done_{id}");
            if !id.is_empty() && !turn.called(&call) {
                return Reply::tool(
                    &call,
                    "TaskUpdate",
                    json!({"taskId": id, "status": "completed"}),
                );
            }
        }
    }
    Reply::text("waiting for work")
}

#[test]
fn an_idle_claude_teammate_gets_each_task_from_the_lead_console_and_completes_it() {
    each_claude(|claude| {
        let team = Team::launch(
            claude,
            Launch {
                tasks: &["First job", "Second job"],
                ..Launch::new(PROMPT)
            },
            script,
        );
        team.await_lead("idle_notification");
        team.eventually("coder idle in the roster", || {
            (team.roster_member("coder")["isActive"] == false).then_some(())
        });
        // Idle with two tasks pending, it claims nothing by itself.
        assert!(team.task("1")["owner"].is_null() && team.task("2")["owner"].is_null());

        let mut lead = team.swarm(["lead", "--team", "t"]).live();
        lead.expect("assigned task #1 (First job) to coder");
        team.eventually("task 1 completed", || {
            (team.task("1")["status"] == "completed").then_some(())
        });
        team.eventually("task 2 completed", || {
            (team.task("2")["status"] == "completed").then_some(())
        });
        lead.expect("assigned task #2 (Second job) to coder");
        assert_eq!(team.task("1")["owner"], "coder");
        assert_eq!(team.task("2")["owner"], "coder");

        // What the model was shown: one assignment per task, the second after the first was done.
        let last = team.api.turns().last().cloned().unwrap();
        let shown = last["messages"].to_string();
        for id in ["1", "2"] {
            let needle = format!(r#"\"type\":\"task_assignment\",\"taskId\":\"{id}\""#);
            assert_eq!(shown.matches(&needle).count(), 1, "task {id} once: {shown}");
        }
        let first_done = shown.find("toolu_done_1").unwrap();
        let second = shown
            .find(r#"\"type\":\"task_assignment\",\"taskId\":\"2\""#)
            .unwrap();
        assert!(first_done < second, "task 2 came only once task 1 was done");
    });
}

/// A lead killed between a claim and its announcement (issue 25 item 4): here its assignment
/// waits in the spool for coder's inbox lock, which the test holds, when the lead is SIGKILLed,
/// so it never reaches the inbox by itself (a claude teammate knows nothing of swarm's spool)
/// and coder would sit idle owning a task it never heard of. The next lead console announces it,
/// once; a third one finds nothing left to do.
#[test]
fn a_lead_killed_between_claim_and_announcement_leaves_the_announcement_to_the_next_one() {
    let env = Env::new();
    let tmux = Tmux::new();
    let stand_in = env.path("claude");
    std::fs::write(&stand_in, "#!/bin/sh\nexec sleep 300\n").unwrap();
    std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "t", "cwd": env.root(), "teammates": [{"name": "coder", "prompt": "p"}],
               "tasks": [{"subject": "A"}]})
        .to_string(),
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let launch = [
        "launch",
        file,
        "--agent",
        "claude",
        "--backend",
        "tmux",
        "--no-lead-pane",
    ];
    env.swarm(launch)
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", &stand_in)
        .ok();
    set_busy(&env, "coder", false);
    let lead = || {
        env.swarm(["lead", "--team", "t"])
            .env("SWARM_TMUX_SOCKET", &tmux.socket)
            .live()
    };

    let mut holder = env.hold_lock(&env.path("teams/t/inboxes/coder.json"));
    let mut first = lead();
    let spool = env.path("teams/t/spool/coder");
    eventually(
        WAIT,
        "task 1 claimed for coder, its assignment spooled",
        || {
            let spooled = std::fs::read_dir(&spool).is_ok_and(|d| d.count() > 0);
            (task(&env, "1")["owner"] == "coder" && spooled).then_some(())
        },
    );
    unsafe { libc::kill(first.child.id() as i32, libc::SIGKILL) };
    first.wait(WAIT).expect("the first lead is dead");
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(assignments(&env, "coder").is_empty(), "not announced yet");

    let mut second = lead();
    second.expect("assigned task #1 (A) to coder");
    let sent = assignments(&env, "coder");
    assert_eq!(sent.len(), 1, "announced once: {sent:?}");
    assert_eq!(sent[0]["taskId"], "1");
    assert!(
        sent[0]["_envelope"]["lead_sig"].is_string(),
        "signed: {sent:?}"
    );
    drop(second);
    let mut third = lead();
    third.expect("lead console for team t");
    env.swarm(["send", "--from", "coder", "--to", "team-lead", "still idle"])
        .ok();
    third.expect("still idle");
    assert_eq!(assignments(&env, "coder").len(), 1);
    assert!(!third.seen.iter().any(|l| l.contains("assigned task")));
    for pid in tmux
        .cmd(["list-panes", "-a", "-F", "#{pane_pid}"])
        .stdout
        .lines()
        .filter_map(|l| l.trim().parse::<i32>().ok())
    {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}
