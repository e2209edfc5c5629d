//! `swarm interrupt` (issue 28 item 1): the lead stops one running turn and keeps the teammate.
//! The turn's processes go, its task goes back to pending (or is parked as failed with the
//! lead's reason), the lead hears `idle_notification` with `idleReason: "interrupted"`, and the
//! teammate waits idle: it takes no task from the pool until the lead writes to it.

use std::time::Duration;

use serde_json::Value;

use super::{on, worker_team};
use crate::support::*;

/// A task whose turn says it started, then sleeps `secs` (a number no other test sleeps, so
/// the sleep is found by its argv: a contained teammate's `$$` is no pid on the machine).
fn sleeper(env: &Env, tmux: &Tmux, name: &str, secs: &str) {
    let started = env.path(&format!("work/{name}.started"));
    let done = env.path(&format!("work/{name}.done"));
    let description = format!(
        "touch {} && sleep {secs} && touch {}",
        started.display(),
        done.display()
    );
    on(
        env,
        tmux,
        ["task", "create", name, "--description", &description],
    )
    .ok();
}

fn task(env: &Env, tmux: &Tmux, id: &str) -> Value {
    on(env, tmux, ["--json", "task", "show", id]).ok().json()
}

/// Waits until the task's turn has started and its sleep runs.
fn turn_running(env: &Env, name: &str, secs: &str) {
    let started = env.path(&format!("work/{name}.started"));
    eventually(Duration::from_secs(60), "the task's turn running", || {
        (started.exists() && cmdlines_contain(&["sleep", secs])).then_some(())
    });
}

#[test]
fn interrupt_stops_the_turn_keeps_the_teammate_and_ends_the_task_as_asked() {
    let env = Env::new();
    let tmux = Tmux::new();
    worker_team(&env, &tmux);
    // Nothing running: nothing stopped, and it says so.
    let idle = on(&env, &tmux, ["interrupt", "worker"]).ok();
    assert!(
        idle.stdout
            .contains("worker: nothing to interrupt: no turn was running"),
        "{idle:?}"
    );

    sleeper(&env, &tmux, "first", "3101");
    turn_running(&env, "first", "3101");
    let out = on(&env, &tmux, ["interrupt", "worker", "--task", "1"]).ok();
    assert!(
        out.stdout
            .contains("worker: turn interrupted; task #1 went back to pending"),
        "{out:?}"
    );
    eventually(Duration::from_secs(20), "the turn's process gone", || {
        (!cmdlines_contain(&["sleep", "3101"])).then_some(())
    });
    let first = task(&env, &tmux, "1");
    assert_eq!(first["status"], "pending", "{first}");
    assert!(first["owner"].is_null(), "{first}");
    assert!(!env.path("work/first.done").exists());
    // The lead heard it as Claude Code's teammates say it.
    let lead = read_json(&env.path("teams/t/inboxes/team-lead.json"));
    let interrupted: Vec<Value> = lead
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| serde_json::from_str::<Value>(m["text"].as_str()?).ok())
        .filter(|f| f["type"] == "idle_notification" && f["idleReason"] == "interrupted")
        .collect();
    assert_eq!(interrupted.len(), 2, "the idle one and this one: {lead}");
    // The teammate still runs, and took no task from the pool meanwhile: a probe it runs when
    // the lead writes to it sees task 1 as it was left.
    let probe = env.path("work/probe.json");
    std::fs::remove_file(env.path("work/first.started")).unwrap();
    on(
        &env,
        &tmux,
        [
            "send",
            "--to",
            "worker",
            &format!("$ swarm --json task show 1 > {}", probe.display()),
        ],
    )
    .ok();
    let seen: Value = eventually(Duration::from_secs(60), "the probe ran", || {
        serde_json::from_str(&std::fs::read_to_string(&probe).ok()?).ok()
    });
    assert_eq!(seen["status"], "pending", "{seen}");
    // Written to, it goes on with the pool: task 1 is taken again.
    turn_running(&env, "first", "3101");
    assert_eq!(task(&env, &tmux, "1")["owner"], "worker");

    // --fail parks the task with the lead's reason.
    let out = on(
        &env,
        &tmux,
        ["interrupt", "worker", "--fail", "wrong approach"],
    )
    .ok();
    assert!(
        out.stdout.contains(
            "worker: turn interrupted; task #1 failed (interrupted by the lead: wrong approach)"
        ),
        "{out:?}"
    );
    let failed = task(&env, &tmux, "1");
    assert_eq!(failed["metadata"]["swarmFailed"], true, "{failed}");
    assert_eq!(
        failed["metadata"]["failureReason"], "interrupted by the lead: wrong approach",
        "{failed}"
    );
    // A turn on another task than the one named is left alone.
    on(&env, &tmux, ["interrupt", "worker", "--task", "7"]).ok();
    on(&env, &tmux, ["down"]).ok();
}

#[test]
fn interrupt_refuses_a_member_without_a_running_runtime_and_a_teammates_shell() {
    let env = Env::new();
    let tmux = Tmux::new();
    on(&env, &tmux, ["team", "create", "t"]).ok();
    on(&env, &tmux, ["team", "add", "ghost"]).ok();
    on(&env, &tmux, ["interrupt", "ghost"]).refused("has no swarm runtime running");
    on(&env, &tmux, ["interrupt", "nobody"]).not_found("nobody");
    on(&env, &tmux, ["interrupt", "ghost"])
        .env("SWARM_AGENT_NAME", "ghost")
        .env("XDG_STATE_HOME", env.path("elsewhere"))
        .refused("lead");
    // Nothing was sent.
    let inbox = env.path("teams/t/inboxes/ghost.json");
    assert!(
        !inbox.exists()
            || !std::fs::read_to_string(&inbox)
                .unwrap()
                .contains("interrupt_request")
    );
}

#[test]
fn the_lead_console_interrupts_a_turn_with_slash_interrupt() {
    let env = Env::new();
    let tmux = Tmux::new();
    worker_team(&env, &tmux);
    sleeper(&env, &tmux, "long", "3102");
    turn_running(&env, "long", "3102");
    let mut console = on(&env, &tmux, ["--team", "t", "lead"]).live();
    console.expect("lead console for team t");
    console.type_line("/interrupt worker");
    console.expect("asked worker to interrupt its turn");
    console.expect(
        "worker is idle, interrupted by the lead - turn interrupted; task #1 went back to pending",
    );
    assert!(!cmdlines_contain(&["sleep", "3102"]), "the turn is gone");
    drop(console);
    on(&env, &tmux, ["down"]).ok();
}
