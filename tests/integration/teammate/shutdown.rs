//! Stopping a teammate: a shutdown request honoured from the lead only (and the runtime exits
//! 0), a shutdown or SIGTERM during a long turn that stops the turn's process group and returns
//! the task, and a turn that ignores SIGTERM killed after the grace period.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{
    gone, inbox, liveness, q, read, send, send_protocol, shutdown_request, start, start_with, task,
    to_lead, LONG,
};
use crate::support::*;

#[test]
fn shutdown_is_approved_to_the_lead_only_and_the_runtime_exits_0() {
    let env = Env::with_team(&["a", "b"]);
    let mut mate = start_with(
        &env,
        "a",
        &["--agent", "shell"],
        &[("SWARM_BACKEND", "tmux"), ("TMUX_PANE", "%7")],
    );
    // A teammate may not shut another down; the request is consumed and ignored.
    env.swarm([
        "send",
        "--to",
        "a",
        "--from",
        "b",
        &json!({"type": "shutdown_request", "requestId": "shutdown-1@a", "from": "b",
                "timestamp": "t"})
        .to_string(),
    ])
    .ok();
    // Nor does a request whose payload names another sender, or another target.
    let mut forged = shutdown_request("a");
    forged["from"] = json!("b");
    send_protocol(&env, "a", forged);
    let mut elsewhere = shutdown_request("b");
    elsewhere["requestId"] = json!("shutdown-1@b");
    send_protocol(&env, "a", elsewhere);
    eventually(LONG, "the stray requests to be consumed", || {
        (inbox(&env, "a").iter().all(|m| m["read"] == true)).then_some(())
    });
    assert!(mate.child.try_wait().unwrap().is_none());
    let pane = mate.output();
    assert!(
        pane.contains("ignored shutdown_request from b: only the lead"),
        "{pane}"
    );
    assert!(pane.contains("does not match the envelope"), "{pane}");
    assert!(pane.contains("addressed to someone else"), "{pane}");
    assert!(to_lead(&env, "shutdown_approved").is_empty());

    send_protocol(&env, "a", shutdown_request("a"));
    let status = mate.exit(LONG);
    assert_eq!(status.code(), Some(0), "{}", mate.output());
    let approved = to_lead(&env, "shutdown_approved");
    assert_eq!(approved.len(), 1);
    assert_eq!(approved[0]["requestId"], "shutdown-1@a");
    assert_eq!(approved[0]["from"], "a");
    assert_eq!(approved[0]["paneId"], "%7");
    assert_eq!(approved[0]["backendType"], "tmux");
    assert!(inbox(&env, "a").iter().all(|m| m["read"] == true));
    assert_eq!(liveness(&env, "a"), "dead");
}

#[test]
fn shutdown_during_a_long_turn_stops_the_process_group_and_returns_the_task() {
    let env = Env::with_team(&["a"]);
    let pids = env.path("pids");
    let mut mate = start(&env, "a", &["--agent", "shell"]);
    env.swarm([
        "task",
        "create",
        "long",
        "--description",
        &format!(
            "echo $$ > {p}; sleep 60 & echo $! >> {p}; wait",
            p = q(&pids)
        ),
    ])
    .ok();
    let (sh, sleeper) = eventually(LONG, "the long task to start", || {
        let ids: Vec<i32> = read(&pids).lines().filter_map(|l| l.parse().ok()).collect();
        (ids.len() == 2).then(|| (ids[0], ids[1]))
    });
    assert_eq!(task(&env, "1")["status"], "in_progress");
    let asked = Instant::now();
    send_protocol(&env, "a", shutdown_request("a"));
    assert_eq!(mate.exit(LONG).code(), Some(0), "{}", mate.output());
    let took = asked.elapsed();
    eventually(
        Duration::from_secs(5),
        "the turn's processes to die",
        || (gone(sh) && gone(sleeper)).then_some(()),
    );
    let t = task(&env, "1");
    assert_eq!(t["status"], "pending");
    assert_eq!(t.get("owner"), None);
    assert_eq!(
        t["metadata"].get("swarmFailed"),
        None,
        "a stopped task is not a failure"
    );
    assert_eq!(to_lead(&env, "shutdown_approved").len(), 1);
    assert!(to_lead(&env, "idle_notification").is_empty());
    // The runtime blocks SIGTERM for itself; its children must not inherit that.
    assert!(
        !mate.output().contains("SIGKILL"),
        "SIGTERM should have been enough:\n{}",
        mate.output()
    );
    eprintln!("shutdown during a 60 s turn: exited {took:.2?} after the request");
}

#[test]
fn a_turn_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let env = Env::with_team(&["a"]);
    let pid_file = env.path("pid");
    let mut mate = start(&env, "a", &["--agent", "shell"]);
    send(
        &env,
        "a",
        &format!("$ trap '' TERM; echo $$ > {}; sleep 60; true", q(&pid_file)),
    );
    let pid: i32 = eventually(LONG, "the turn to start", || {
        read(&pid_file).trim().parse().ok()
    });
    send_protocol(&env, "a", shutdown_request("a"));
    assert_eq!(mate.exit(LONG).code(), Some(0), "{}", mate.output());
    assert!(
        mate.output().contains("sending SIGKILL"),
        "{}",
        mate.output()
    );
    eventually(Duration::from_secs(5), "the stubborn turn to die", || {
        gone(pid).then_some(())
    });
}

#[test]
fn sigterm_to_the_runtime_stops_its_turn_and_returns_the_task() {
    let env = Env::with_team(&["a"]);
    let pid_file = env.path("pid");
    let mut mate = start(&env, "a", &["--agent", "shell"]);
    env.swarm([
        "task",
        "create",
        "long",
        "--description",
        &format!("echo $$ > {}; sleep 60; true", q(&pid_file)),
    ])
    .ok();
    let pid: i32 = eventually(LONG, "the task to start", || {
        read(&pid_file).trim().parse().ok()
    });
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(mate.pid(), libc::SIGTERM) };
    assert_eq!(mate.exit(LONG).code(), Some(128 + libc::SIGTERM));
    eventually(Duration::from_secs(5), "the turn to die", || {
        gone(pid).then_some(())
    });
    let t = task(&env, "1");
    assert_eq!(
        (t["status"].as_str(), t.get("owner")),
        (Some("pending"), None)
    );
    assert!(to_lead(&env, "shutdown_approved").is_empty());
    assert_eq!(liveness(&env, "a"), "dead");
}
