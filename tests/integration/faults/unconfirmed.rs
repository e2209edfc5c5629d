//! Issue 21 item 6: a change whose rename happened but whose directory sync failed
//! (`SWARM_FSYNC_FAULT=dir`, as an I/O error of the disk would make it) is done and visible,
//! only not confirmed durable. The command says so (a warning and exit 3), never exit 1, which
//! a caller would take for "nothing happened"; and the retry it then makes is idempotent: the
//! claimer gets the task it already owns, a message sent again with the same id is stored once.
//!
//! Issue 20 item 6: a claim of the next task is a lease (PROTOCOL.md 8b) and syncs no
//! directory, so the fault cannot touch it; what each task change fsyncs is counted with strace.

use serde_json::Value;

use super::read_json_array;
use crate::support::*;

const FAULT: &str = "SWARM_FSYNC_FAULT";

fn inbox(env: &Env) -> Vec<Value> {
    read_json_array(&env.path("teams/t/inboxes/coder.json"))
}

#[test]
fn a_claim_by_name_whose_directory_sync_failed_exits_3_and_a_lease_syncs_none() {
    let env = Env::with_team(&["coder", "tester"]);
    for subject in ["one", "two", "three"] {
        env.swarm(["task", "create", subject]).ok();
    }
    // The lease: the directory sync that fails is never made, so the claim is simply done.
    let next = ["--json", "task", "next", "--claim", "--agent", "coder"];
    let out = env.swarm(next).env(FAULT, "dir").ok();
    assert!(
        !out.stderr.contains("not confirmed durable"),
        "{}",
        out.stderr
    );
    let claimed = out.json();
    assert_eq!(
        (&claimed["id"], &claimed["owner"]),
        (&"1".into(), &"coder".into())
    );
    assert_eq!(read_json(&env.path("tasks/t/1.json"))["owner"], "coder");

    // A claimer that asks again (killed before it printed) gets the claim it already has, not
    // "no task is available" (nor another task).
    let again = env.swarm(next).ok().json();
    assert_eq!(
        (&again["id"], &again["status"]),
        (&"1".into(), &"in_progress".into())
    );
    assert_eq!(read_json(&env.path("tasks/t/2.json"))["owner"], Value::Null);

    // `task claim` (a claim by name, synced in full) and a completion meet the fault: they
    // report it, and their change is made.
    let out = env
        .swarm(["task", "claim", "2", "--agent", "tester"])
        .env(FAULT, "dir")
        .code(3);
    out.stderr_has("not confirmed durable")
        .stderr_has("tasks/t");
    assert!(out.stdout.starts_with("claimed #2"), "{}", out.stdout);
    env.swarm(["task", "update", "1", "--status", "completed"])
        .env(FAULT, "dir")
        .code(3)
        .stderr_has("not confirmed durable");
    assert_eq!(
        read_json(&env.path("tasks/t/1.json"))["status"],
        "completed"
    );
    // Without the fault the same commands exit 0: the fault was what made them 3.
    env.swarm(["task", "claim", "2", "--agent", "tester"]).ok();
}

/// The fsync and fdatasync calls `swarm ARGS` makes, and its output, counted by strace.
fn syncs_of(env: &Env, args: &[&str]) -> (usize, Out) {
    let (out, lines) = strace_swarm(env, "fsync,fdatasync", args);
    assert_eq!(out.code, 0, "swarm {args:?}: {}", out.stderr);
    (lines.lines().filter(|l| l.contains("sync(")).count(), out)
}

#[test]
fn a_claim_of_the_next_task_makes_one_fsync_and_a_completion_two() {
    let env = Env::with_team(&["coder"]);
    env.swarm(["task", "create", "one"]).ok();
    env.swarm(["task", "create", "two"]).ok();
    // The lease: the task file's fsync, and no directory sync.
    let (claim, out) = syncs_of(&env, &["task", "next", "--claim", "--agent", "coder"]);
    assert!(out.stdout.contains("#1"), "{}", out.stdout);
    assert_eq!(claim, 1, "fsyncs of a claim of the next task");
    // The completion outlives its writer: file and directory.
    let (done, _) = syncs_of(&env, &["task", "update", "1", "--status", "completed"]);
    assert_eq!(done, 2, "fsyncs of a completion");
    // A claim by name is synced in full too (strace saw the syncs it makes: not a blind count).
    let (named, _) = syncs_of(&env, &["task", "claim", "2", "--agent", "coder"]);
    assert_eq!(named, 2, "fsyncs of a claim by name");
    assert_eq!(read_json(&env.path("tasks/t/2.json"))["owner"], "coder");
}

#[test]
fn a_send_whose_directory_sync_failed_exits_3_and_its_retry_with_the_same_id_is_stored_once() {
    let env = Env::with_team(&["coder"]);
    let out = env
        .swarm(["--json", "send", "--to", "coder", "hello"])
        .env(FAULT, "dir")
        .code(3);
    out.stderr_has("not confirmed durable").stderr_has("--id");
    let id = out.json()["msgId"].as_str().unwrap().to_string();
    assert_eq!(inbox(&env).len(), 1, "the message is delivered");
    assert_eq!(inbox(&env)[0]["msg_id"], id.as_str());

    // The retry a script makes with the id it was given adds nothing, now or once read.
    let retry = ["send", "--to", "coder", "--id", &id, "hello"];
    let out = env.swarm(retry).ok();
    assert!(out.stdout.contains(&id), "{}", out.stdout);
    assert_eq!(inbox(&env).len(), 1, "{:?}", inbox(&env));
    env.swarm(["inbox", "coder", "--mark-read"]).ok();
    env.swarm(retry).ok();
    let held = inbox(&env);
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(
        (&held[0]["text"], &held[0]["read"]),
        (&"hello".into(), &true.into())
    );

    // An id of the caller's own from the start works the same, and another id is another
    // message: the id, not the words, is what a retry is known by.
    for _ in 0..2 {
        env.swarm(["send", "--to", "coder", "--id", "report-7", "hello"])
            .ok();
    }
    let ids: Vec<String> = inbox(&env)
        .iter()
        .map(|m| m["msg_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, [id, "report-7".to_string()]);
    // A broadcast given an id is stored once per recipient too, read or not.
    let all = ["--json", "send", "--to", "*", "--id", "all-1", "to all"];
    assert_eq!(env.swarm(all).ok().json()["msgId"], "all-1");
    env.swarm(["inbox", "coder", "--mark-read"]).ok();
    env.swarm(all).ok();
    let copies = inbox(&env).iter().filter(|m| m["text"] == "to all").count();
    assert_eq!(copies, 1, "{:?}", inbox(&env));
    env.swarm(["send", "--to", "coder", "--id", "has space", "x"])
        .refused("invalid message id");
}
