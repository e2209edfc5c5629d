//! The coordination store through the CLI: teams, inboxes, tasks, permissions, locks, and the
//! inputs that must be refused without changing anything.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use crate::support::*;

#[test]
fn team_create_list_show_delete() {
    let env = Env::new();
    let created = env
        .swarm([
            "--json",
            "team",
            "create",
            "refactor",
            "--description",
            "split it",
        ])
        .ok()
        .json();
    assert_eq!(created["name"], "refactor");
    assert_eq!(created["leadAgentId"], "team-lead@refactor");
    assert_eq!(created["members"][0]["name"], "team-lead");
    assert!(env.path("teams/refactor/inboxes/team-lead.json").is_file());
    let mode = std::fs::metadata(env.path("teams/refactor")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o700
    );

    env.swarm(["team", "create", "refactor"])
        .refused("already exists");
    let list = env.swarm(["--json", "team", "list"]).ok().json();
    assert_eq!(list[0]["name"], "refactor");
    assert_eq!(list[0]["teammates"], 0);
    let shown = env
        .swarm(["--json", "--team", "refactor", "team", "show"])
        .ok()
        .json();
    assert_eq!(shown["description"], "split it");

    env.add_member("refactor", "coder");
    env.swarm(["team", "delete", "refactor"])
        .refused("still has active teammates (coder)");
    env.swarm(["team", "delete", "refactor", "--force"]).ok();
    assert!(!env.path("teams/refactor").exists());
    env.swarm(["--team", "refactor", "team", "show"])
        .not_found("does not exist");
}

#[test]
fn send_inbox_unread_and_mark_read() {
    let env = Env::with_team(&["coder", "tester"]);
    let sent = env
        .swarm([
            "--json",
            "send",
            "--to",
            "coder",
            "--summary",
            "parser",
            "Review the parser",
        ])
        .ok()
        .json();
    let id = sent["msgId"].clone();
    assert_eq!(
        sent,
        json!({"team": "t", "from": "team-lead", "to": ["coder"], "msgId": id})
    );
    env.swarm(["send", "--to", "coder", "-"])
        .stdin("from stdin\n")
        .ok();

    let inbox = read_json(&env.path("teams/t/inboxes/coder.json"));
    let first = &inbox[0];
    assert_eq!(first["msg_id"], id, "the id printed is the message's");
    assert_eq!(first["from"], "team-lead");
    assert_eq!(first["text"], "Review the parser");
    assert_eq!(first["summary"], "parser");
    assert_eq!(first["read"], false);
    assert_eq!(first["msgV"], 1);
    assert_eq!(first["type"], "message");
    assert_eq!(first["color"], "red");
    assert!(first["msg_id"].as_str().unwrap().len() >= 32);
    assert!(first["timestamp"].as_str().unwrap().ends_with('Z'));

    let unread = env
        .swarm(["--json", "inbox", "coder", "--unread", "--mark-read"])
        .ok()
        .json();
    assert_eq!(unread.as_array().unwrap().len(), 2);
    assert_eq!(unread[1]["text"], "from stdin\n");
    let unread = env
        .swarm(["--json", "inbox", "coder", "--unread"])
        .ok()
        .json();
    assert_eq!(unread, json!([]));
    let all = env.swarm(["--json", "inbox", "coder"]).ok().json();
    assert_eq!(all.as_array().unwrap().len(), 2);
    assert!(env
        .swarm(["inbox", "coder"])
        .ok()
        .stdout
        .contains("team-lead (parser): Review the parser"));

    // A teammate's shell needs no flags: SWARM_AGENT_NAME names the sender.
    env.swarm(["send", "--to", "team-lead", "done"])
        .env("SWARM_AGENT_NAME", "coder")
        .ok();
    let lead = env.swarm(["--json", "inbox", "team-lead"]).ok().json();
    assert_eq!(lead[0]["from"], "coder");
}

#[test]
fn broadcast_reaches_every_member_but_the_sender() {
    let env = Env::with_team(&["coder", "tester"]);
    let sent = env
        .swarm([
            "--json",
            "send",
            "--to",
            "*",
            "--from",
            "coder",
            "all hands",
        ])
        .ok()
        .json();
    assert_eq!(sent["to"], json!(["team-lead", "tester"]));
    assert_eq!(
        read_json(&env.path("teams/t/inboxes/coder.json")),
        json!([])
    );
    assert_eq!(
        read_json(&env.path("teams/t/inboxes/tester.json"))[0]["text"],
        "all hands"
    );
}

#[test]
fn inbox_follow_prints_new_messages_as_json_lines() {
    let env = Env::with_team(&["coder"]);
    let mut follower = env.swarm(["--json", "inbox", "coder", "--follow"]).spawn();
    let stdout = follower.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    env.swarm(["send", "--to", "coder", "first"]).ok();
    env.swarm(["send", "--to", "coder", "second"]).ok();
    let mut got = Vec::new();
    while got.len() < 2 {
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("follow printed the messages");
        got.push(serde_json::from_str::<Value>(&line).unwrap()["text"].clone());
    }
    follower.kill().unwrap();
    let _ = follower.wait();
    assert_eq!(got, [json!("first"), json!("second")]);
}

#[test]
fn compatibility_fixtures_round_trip_with_unknown_fields() {
    let env = Env::new();
    std::fs::create_dir_all(env.path("teams/refactor/inboxes")).unwrap();
    std::fs::create_dir_all(env.path("tasks/refactor")).unwrap();
    let config = json!({"name": "refactor", "description": "...", "createdAt": 1767225600000u64,
     "leadAgentId": "team-lead@refactor", "leadSessionId": "0b6d",
     "futureTeamField": {"x": 1},
     "members": [
      {"agentId": "team-lead@refactor", "name": "team-lead", "agentType": "team-lead",
       "joinedAt": 1767225600000u64, "tmuxPaneId": "%0", "cwd": "/repo", "subscriptions": []},
      {"agentId": "coder@refactor", "name": "coder", "agentType": "general-purpose",
       "model": "sonnet", "prompt": "...", "color": "blue", "planModeRequired": false,
       "joinedAt": 1767225700000u64, "tmuxPaneId": "%5", "cwd": "/repo", "subscriptions": [],
       "backendType": "tmux", "isActive": true, "mode": "default", "futureMemberField": true}]});
    let inbox = json!([{"from": "team-lead", "text": "Review the parser", "summary": "parser review",
      "timestamp": "2026-01-01T00:00:00.000Z", "color": "red",
      "msgV": 1, "msg_id": "6f1c-uuid", "type": "message", "read": false, "futureMsgField": [1]},
      {"from": "coder", "text": "old style, no msg_id", "timestamp": "2026-01-01T00:00:01.000Z", "read": false}]);
    let task = json!({"id": "3", "subject": "Add tests", "description": "...", "activeForm": "Adding tests",
      "owner": "coder", "status": "in_progress", "blocks": [], "blockedBy": [], "metadata": {}, "futureTaskField": "k"});
    std::fs::write(
        env.path("teams/refactor/config.json"),
        serde_json::to_vec(&config).unwrap(),
    )
    .unwrap();
    std::fs::write(
        env.path("teams/refactor/inboxes/coder.json"),
        serde_json::to_vec(&inbox).unwrap(),
    )
    .unwrap();
    std::fs::write(
        env.path("tasks/refactor/3.json"),
        serde_json::to_vec(&task).unwrap(),
    )
    .unwrap();

    // Reads see exactly what Claude Code wrote.
    assert_eq!(
        env.swarm(["--json", "--team", "refactor", "team", "show"])
            .ok()
            .json(),
        config
    );
    assert_eq!(
        env.swarm(["--json", "--team", "refactor", "inbox", "coder"])
            .ok()
            .json(),
        inbox
    );
    assert_eq!(
        env.swarm(["--json", "--team", "refactor", "task", "show", "3"])
            .ok()
            .json(),
        task
    );

    // Rewrites keep every field, including ones swarm does not know.
    env.swarm(["--team", "refactor", "send", "--to", "coder", "new"])
        .ok();
    let rewritten = read_json(&env.path("teams/refactor/inboxes/coder.json"));
    assert_eq!(rewritten[0], inbox[0]);
    assert_eq!(rewritten[1], inbox[1]);
    env.swarm([
        "--team",
        "refactor",
        "task",
        "update",
        "3",
        "--metadata",
        "{\"k\": 1}",
    ])
    .ok();
    let mut expected = task.clone();
    expected["metadata"] = json!({"k": 1});
    assert_eq!(read_json(&env.path("tasks/refactor/3.json")), expected);
    // Delivery of a message with no msg_id is marked by Claude Code's from|timestamp|text key.
    env.swarm([
        "--team",
        "refactor",
        "inbox",
        "coder",
        "--unread",
        "--mark-read",
    ])
    .ok();
    let marked = read_json(&env.path("teams/refactor/inboxes/coder.json"));
    assert!(marked.as_array().unwrap().iter().all(|m| m["read"] == true));
    assert_eq!(marked[0]["futureMsgField"], json!([1]));
}

#[test]
fn task_commands_and_their_json() {
    let env = Env::with_team(&["coder"]);
    let a = env
        .swarm([
            "--json",
            "task",
            "create",
            "Design",
            "--description",
            "sketch it",
            "--active-form",
            "Designing",
        ])
        .ok()
        .json();
    assert_eq!(a["id"], "1");
    assert_eq!(a["status"], "pending");
    assert_eq!(a["activeForm"], "Designing");
    let b = env
        .swarm(["--json", "task", "create", "Build", "--blocked-by", "1"])
        .ok()
        .json();
    assert_eq!(b["blockedBy"], json!(["1"]));
    assert_eq!(
        read_json(&env.path("tasks/t/1.json"))["blocks"],
        json!(["2"])
    );

    let avail = env
        .swarm(["--json", "task", "list", "--available"])
        .ok()
        .json();
    assert_eq!(avail.as_array().unwrap().len(), 1);
    let next = env.swarm(["--json", "task", "next"]).ok().json();
    assert_eq!(next["id"], "1");
    let claimed = env
        .swarm(["--json", "task", "claim", "1", "--agent", "coder"])
        .ok()
        .json();
    assert_eq!(
        (claimed["owner"].clone(), claimed["status"].clone()),
        (json!("coder"), json!("in_progress"))
    );
    env.swarm(["task", "claim", "2", "--agent", "coder", "--no-busy-check"])
        .refused("blocked");
    let released = env
        .swarm(["--json", "task", "release", "--agent", "coder"])
        .ok()
        .json();
    assert_eq!(released, json!({"released": ["1"]}));
    env.swarm(["task", "update", "1", "--status", "completed"])
        .ok();
    let claimed = env
        .swarm(["--json", "task", "next", "--claim", "--agent", "coder"])
        .ok()
        .json();
    assert_eq!(claimed["id"], "2");
    env.swarm(["task", "claim", "1", "--agent", "coder"])
        .refused("cannot claim task #1: it is already completed");
    env.swarm(["task", "update", "2", "--no-owner", "--status", "pending"])
        .ok();

    env.swarm(["task", "create", "Ship", "--blocked-by", "2"])
        .ok();
    env.swarm(["task", "dep", "add", "1", "--on", "3"])
        .refused("cycle");
    let dep = env
        .swarm(["--json", "task", "dep", "remove", "3", "--on", "2"])
        .ok()
        .json();
    assert_eq!(dep["blockedBy"], json!([]));
    env.swarm(["--json", "task", "delete", "2"]).ok();
    assert_eq!(read_json(&env.path("tasks/t/1.json"))["blocks"], json!([]));
    assert_eq!(
        env.swarm(["--json", "task", "create", "After delete"])
            .ok()
            .json()["id"],
        "4"
    );
    let listed = env
        .swarm(["--json", "task", "list", "--status", "pending"])
        .ok()
        .json();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["3", "4"]);
    assert!(env
        .swarm(["task", "list"])
        .ok()
        .stdout
        .contains("#1    completed   Design"));
}

#[test]
fn permission_request_approved_and_denied_from_another_process() {
    let env = Env::with_team(&["coder"]);
    // Approved while the requester waits in its own process.
    let waiter = env
        .swarm([
            "--json",
            "permission",
            "request",
            "--tool",
            "Bash",
            "--input",
            "{\"command\":\"rm -rf build\"}",
            "--description",
            "rm -rf build",
            "--wait",
            "--timeout",
            "30",
        ])
        .env("SWARM_AGENT_NAME", "coder")
        .env("SWARM_LEAD_VERIFY_KEY", env.lead_verify_key())
        .spawn();
    let pending = eventually(Duration::from_secs(10), "a pending request", || {
        let list = env.swarm(["--json", "permission", "list"]).ok().json();
        list.as_array().unwrap().first().cloned()
    });
    assert_eq!(pending["workerName"], "coder");
    assert_eq!(pending["workerId"], "coder@t");
    assert_eq!(pending["status"], "pending");
    let id = pending["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("perm-"));
    // The pending file is written just before the message to the lead.
    let lead = eventually(
        Duration::from_secs(10),
        "the request in the lead's inbox",
        || {
            let lead = env.swarm(["--json", "inbox", "team-lead"]).ok().json();
            lead[0]["text"].is_string().then_some(lead)
        },
    );
    let request: Value = serde_json::from_str(lead[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(request["type"], "permission_request");
    assert_eq!(request["request_id"], id.as_str());
    assert_eq!(request["tool_name"], "Bash");

    env.swarm(["permission", "approve", &id, "--feedback", "go ahead"])
        .ok();
    let out = Out::from(waiter.wait_with_output().unwrap());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["status"], "approved");
    assert!(env
        .path(&format!("teams/t/permissions/resolved/{id}.json"))
        .is_file());
    assert!(!env
        .path(&format!("teams/t/permissions/pending/{id}.json"))
        .exists());
    let coder = env.swarm(["--json", "inbox", "coder"]).ok().json();
    let response: Value = serde_json::from_str(coder[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(response["type"], "permission_response");
    assert_eq!(response["subtype"], "success");
    env.swarm(["permission", "deny", &id])
        .refused("already decided");

    // Denied: exit 1. No decision: exit 2.
    let req = env
        .swarm([
            "--json",
            "permission",
            "request",
            "--tool",
            "Edit",
            "--from",
            "coder",
        ])
        .ok()
        .json();
    let id = req["id"].as_str().unwrap();
    env.swarm(["permission", "deny", id, "--feedback", "not now"])
        .ok();
    let out = env.swarm(["--json", "permission", "wait", id]).code(1);
    assert_eq!(out.json()["feedback"], "not now");
    let req = env
        .swarm([
            "--json",
            "permission",
            "request",
            "--tool",
            "Edit",
            "--from",
            "coder",
        ])
        .ok()
        .json();
    env.swarm([
        "permission",
        "wait",
        req["id"].as_str().unwrap(),
        "--timeout",
        "1",
    ])
    .code(2);
}

/// 8 OS processes x 200 sends into one inbox: every message present exactly once, and the file
/// parses at every read taken while they run.
#[test]
fn eight_processes_sending_at_once_lose_nothing() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let script = format!("for i in $(seq 1 200); do \"$SWARM\" send --to coder \"w{w}-$i\" >/dev/null || exit 1; done");
            env.command("sh")
                .args(["-c", &script])
                .env("SWARM", BIN)
                .spawn()
                .unwrap()
        })
        .collect();
    let mut reads = 0;
    let mut writers = writers;
    while writers.iter_mut().any(|w| w.try_wait().unwrap().is_none()) {
        let bytes = std::fs::read(&inbox).unwrap();
        let parsed: Value = serde_json::from_slice(&bytes).expect("the inbox parses at every read");
        assert!(parsed.is_array());
        reads += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    for mut w in writers {
        assert!(w.wait().unwrap().success());
    }
    let all = read_json(&inbox);
    let texts: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), 1600);
    let unique: BTreeSet<&str> = texts.iter().copied().collect();
    assert_eq!(unique.len(), 1600, "no duplicates");
    for w in 0..8 {
        for i in 1..=200 {
            assert!(unique.contains(format!("w{w}-{i}").as_str()));
        }
    }
    assert!(
        reads > 10,
        "the reader sampled the file while writers ran ({reads} reads)"
    );
}

/// 8 OS processes racing to claim 100 tasks: each claimed exactly once.
#[test]
fn eight_processes_claiming_at_once_claim_each_task_once() {
    // Claims are for members of the roster.
    let env = Env::with_team(&["w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"]);
    for i in 0..100 {
        env.swarm(["task", "create", &format!("task {i}")]).ok();
    }
    let claimers: Vec<_> = (0..8)
        .map(|w| {
            let script = "while out=$(\"$SWARM\" task next --claim --agent \"$ME\"); do \
                 case \"$out\" in 'no task'*) exit 0;; esac; \
                 echo \"$out\"; id=${out#claimed #}; id=${id%% *}; \
                 \"$SWARM\" task update \"$id\" --status completed >/dev/null || exit 1; done; exit 1";
            env.command("sh")
                .args(["-c", script])
                .env("SWARM", BIN)
                .env("ME", format!("w{w}"))
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut claims: HashMap<String, Vec<usize>> = HashMap::new();
    for (w, c) in claimers.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success());
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let id = line
                .strip_prefix("claimed #")
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
                .to_string();
            claims.entry(id).or_default().push(w);
        }
    }
    assert_eq!(claims.len(), 100, "every task was claimed");
    for (id, by) in &claims {
        assert_eq!(by.len(), 1, "task {id} claimed by {by:?}");
    }
    let winners: BTreeSet<usize> = claims.values().flatten().copied().collect();
    assert!(winners.len() > 1, "more than one process won claims");
}

#[test]
fn a_lock_whose_holder_was_killed_is_broken_at_once() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    let mut holder = env.hold_lock(&inbox);
    // The holder's record is in the gate it locked before the lock directory.
    let gate = std::fs::read(env.path("teams/t/inboxes/.coder.json.gate")).unwrap();
    assert!(
        String::from_utf8_lossy(&gate).contains("\"pid\""),
        "{gate:?}"
    );
    holder.kill().unwrap(); // SIGKILL: no destructor runs, the lock directory stays behind
    holder.wait().unwrap();
    assert!(env.path("teams/t/inboxes/coder.json.lock").is_dir());

    let start = Instant::now();
    env.swarm(["send", "--to", "coder", "after the crash"]).ok();
    let took = start.elapsed();
    // Claude Code's rule alone would wait 10 s for staleness.
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_eq!(read_json(&inbox)[0]["text"], "after the crash");
    assert!(!env.path("teams/t/inboxes/coder.json.lock").exists());
}

#[test]
fn a_lock_directory_without_owner_is_honoured_until_stale() {
    let env = Env::with_team(&["coder"]);
    let lock = env.path("teams/t/inboxes/coder.json.lock");
    std::fs::create_dir(&lock).unwrap();
    // Made 8 s ago, as by a Claude Code writer: honoured for about 2 s more, then broken.
    let made = SystemTime::now() - Duration::from_secs(8);
    std::fs::File::open(&lock)
        .unwrap()
        .set_modified(made)
        .unwrap();
    let start = Instant::now();
    let out = env.swarm(["send", "--to", "coder", "waited"]).ok();
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(1500),
        "the live lock was not honoured: {took:?}"
    );
    out.stderr_has("waiting for lock on");
    assert_eq!(
        read_json(&env.path("teams/t/inboxes/coder.json"))[0]["text"],
        "waited"
    );
}

#[test]
fn bad_names_are_refused_and_change_nothing() {
    let env = Env::with_team(&["coder"]);
    let long = "a".repeat(65);
    for bad in ["..", "a/b", "$(id)", "-x", long.as_str(), "a b", "a\nb"] {
        env.swarm(["team", "create", "--", bad])
            .refused("invalid team name");
        env.swarm(["send", &format!("--to={bad}"), "hi"])
            .refused("invalid agent name");
        env.swarm(["inbox", "--", bad])
            .refused("invalid agent name");
        env.swarm([&format!("--team={bad}"), "task", "list"])
            .refused("invalid team name");
        env.swarm([&format!("--team={bad}"), "team", "show"])
            .refused("invalid team name");
    }
    for reserved in ["user", "System", "MAIN"] {
        env.swarm(["send", "--to", reserved, "hi"])
            .not_found("not a member");
    }
    env.swarm(["send", "--to", "ghost", "hi"])
        .not_found("ghost\" is not a member of team \"t\"")
        .stderr_is(
            "swarm: error: \"ghost\" is not a member of team \"t\"; `swarm team show t` lists \
             the members\n",
        );
    env.swarm(["send", "--to", "coder", "-"])
        .stdin(vec![b'x'; 1024 * 1024 + 1])
        .refused("over the 1048576 byte limit");
    env.swarm(["send", "--to", "coder", "--from", "ghost", "hi"])
        .not_found("not a member");
}

#[test]
fn corrupt_inbox_is_quarantined_and_the_new_message_delivered() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    std::fs::write(&inbox, b"[{\"from\": \"team-lead\", \"text\": \"torn").unwrap();
    let out = env.swarm(["send", "--to", "coder", "still delivered"]).ok();
    out.stderr_has("could not be read").stderr_has("corrupt-");
    assert_eq!(read_json(&inbox)[0]["text"], "still delivered");
    let quarantined: Vec<_> = std::fs::read_dir(env.path("teams/t/inboxes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("coder.json.corrupt-"))
        .collect();
    assert_eq!(quarantined.len(), 1);
    assert_eq!(
        std::fs::read(&quarantined[0]).unwrap(),
        b"[{\"from\": \"team-lead\", \"text\": \"torn"
    );
}

#[test]
fn an_inbox_that_is_a_symlink_is_refused() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    let elsewhere = env.path("elsewhere.json");
    std::fs::write(&elsewhere, "[]").unwrap();
    std::fs::remove_file(&inbox).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &inbox).unwrap();
    env.swarm(["send", "--to", "coder", "hi"])
        .refused("it is a symlink");
    env.swarm(["inbox", "coder"]).refused("it is a symlink");
    assert_eq!(std::fs::read(&elsewhere).unwrap(), b"[]");
}

/// Reading an inbox is a file-system event too; a follower that woke on its own reads spun at
/// 100% CPU. An idle follower must use almost no CPU, and still be following: alive at the end
/// of the idle window and delivering a message sent after it (a dead one would also be idle).
#[test]
fn an_idle_follower_does_not_spin() {
    let env = Env::with_team(&["coder"]);
    let (mut follower, texts) = follower(env.swarm(["--json", "inbox", "coder", "--follow"]));
    env.swarm(["send", "--to", "coder", "wake up once"]).ok();
    expect_text(&texts, "wake up once", Duration::from_secs(10));
    std::thread::sleep(Duration::from_secs(2));
    let ticks = cpu_ticks(follower.0.id());
    assert!(
        follower.0.try_wait().unwrap().is_none(),
        "the follower died during the idle window"
    );
    // clock ticks are 1/100 s here; a busy loop burns ~200 in two seconds.
    assert!(
        ticks < 50,
        "the idle follower used {ticks} ticks of CPU in 2 s"
    );
    env.swarm(["send", "--to", "coder", "after the idle window"])
        .ok();
    expect_text(&texts, "after the idle window", Duration::from_secs(10));
}

/// A short wait for a lock is silent; one over a second says what it waits for. (Every
/// contended lock used to print the line at once, cluttering teammate panes.)
#[test]
fn only_a_long_wait_for_a_lock_is_announced() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    for (hold_ms, announced) in [(200, false), (2500, true)] {
        let mut holder = env.hold_lock(&inbox);
        let sender = env.swarm(["send", "--to", "coder", "queued"]).spawn();
        std::thread::sleep(Duration::from_millis(hold_ms));
        holder.kill().unwrap();
        holder.wait().unwrap();
        let out = Out::from(sender.wait_with_output().unwrap());
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(
            out.stderr.contains("waiting for lock"),
            announced,
            "held {hold_ms} ms: {:?}",
            out.stderr
        );
    }
}
