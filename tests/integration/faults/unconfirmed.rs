//! Issue 21 item 6: a change whose rename happened but whose directory sync failed
//! (`SWARM_FSYNC_FAULT=dir`, as an I/O error of the disk would make it) is done and visible,
//! only not confirmed durable. The command says so (a warning and exit 3), never exit 1, which
//! a caller would take for "nothing happened"; and the retry it then makes is idempotent: the
//! claimer gets the task it already owns, a message sent again with the same id is stored once.

use serde_json::Value;

use crate::support::*;

const FAULT: &str = "SWARM_FSYNC_FAULT";

#[test]
fn a_claim_whose_directory_sync_failed_exits_3_and_its_retry_gets_the_same_task() {
    let env = Env::with_team(&["coder", "tester"]);
    for subject in ["one", "two", "three"] {
        env.swarm(["task", "create", subject]).ok();
    }
    let next = ["--json", "task", "next", "--claim", "--agent", "coder"];
    let out = env.swarm(next).env(FAULT, "dir").code(3);
    out.stderr_has("not confirmed durable")
        .stderr_has("tasks/t");
    let claimed = out.json();
    assert_eq!(
        (&claimed["id"], &claimed["owner"]),
        (&"1".into(), &"coder".into())
    );
    assert_eq!(read_json(&env.path("tasks/t/1.json"))["owner"], "coder");

    // The retry gets the claim it already has, not "no task is available" (nor another task).
    let again = env.swarm(next).ok().json();
    assert_eq!(
        (&again["id"], &again["status"]),
        (&"1".into(), &"in_progress".into())
    );
    assert_eq!(read_json(&env.path("tasks/t/2.json"))["owner"], Value::Null);

    // `task claim` and a completion report the same outcome, and their change is made.
    let out = env
        .swarm(["task", "claim", "2", "--agent", "tester"])
        .env(FAULT, "dir")
        .code(3);
    out.stderr_has("not confirmed durable");
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
