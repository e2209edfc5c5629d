//! A busy teammate asked to shut down (issue 28 item 2): it finishes its running turn and then
//! approves, taking nothing new meanwhile; past `--grace` the turn is stopped and its task goes
//! back; its agent may refuse with a reason, which reaches the lead while the teammate goes on
//! working; and the lead's `--reason` reaches the agent.

use std::path::Path;

use super::{lead_inbox, q, start, task, LONG};
use crate::support::*;

/// A task command that says it started, then waits for `gate` to exist.
fn gated(started: &Path, gate: &Path) -> String {
    format!(
        "touch {}; while [ ! -e {} ]; do sleep 0.05; done; echo finished",
        q(started),
        q(gate)
    )
}

/// The `type` of each protocol message in the lead's inbox, in order.
fn lead_frames(env: &Env) -> Vec<String> {
    lead_inbox(env)
        .iter()
        .filter_map(|m| serde_json::from_str::<serde_json::Value>(m["text"].as_str()?).ok())
        .filter_map(|p| Some(p["type"].as_str()?.to_string()))
        .collect()
}

#[track_caller]
fn wait_for_file(path: &Path, what: &str) {
    eventually(LONG, what, || path.exists().then_some(()));
}

#[test]
fn a_busy_teammate_finishes_its_task_then_approves_and_takes_no_new_one() {
    let env = Env::with_team(&["a"]);
    let (started, gate, second) = (env.path("started"), env.path("gate"), env.path("second"));
    let mut mate = start(&env, "a", &["--agent", "shell"]);
    env.swarm([
        "task",
        "create",
        "long",
        "--description",
        &gated(&started, &gate),
    ])
    .ok();
    wait_for_file(&started, "the long task to start");
    // Free for the taking once the long one is done, as far as the task list goes.
    let next = format!("touch {}", q(&second));
    env.swarm(["task", "create", "next", "--description", &next])
        .ok();

    let mut shutdown = env.swarm(["shutdown", "a"]).live();
    eventually(LONG, "the runtime to hold the request", || {
        mate.output()
            .contains("letting the running turn finish first")
            .then_some(())
    });
    assert!(
        mate.child.try_wait().unwrap().is_none(),
        "{}",
        mate.output()
    );
    std::fs::write(&gate, "").unwrap();
    shutdown.expect("a: approved the shutdown");
    assert_eq!(shutdown.wait(LONG), Some(0), "{:?}", shutdown.seen);
    assert_eq!(mate.exit(LONG).code(), Some(0), "{}", mate.output());

    let long = task(&env, "1");
    assert_eq!(long["status"], "completed", "{long}");
    // The finished task was reported before the approval.
    let frames = lead_frames(&env);
    let at = |kind: &str| frames.iter().position(|f| f == kind);
    assert!(
        at("task_completed").is_some() && at("task_completed") < at("shutdown_approved"),
        "{frames:?}"
    );
    // Nothing new started while the shutdown waited.
    let waiting = task(&env, "2");
    assert_eq!(
        (waiting["status"].as_str(), waiting.get("owner")),
        (Some("pending"), None),
        "{waiting}"
    );
    assert!(!second.exists());
    // It was there to take: the teammate started again takes it.
    let _again = start(&env, "a", &["--agent", "shell"]);
    wait_for_file(&second, "the second task to run");
}

#[test]
fn past_the_grace_the_turn_is_stopped_and_its_task_goes_back() {
    let env = Env::with_team(&["a"]);
    let started = env.path("started");
    let mut mate = start(&env, "a", &["--agent", "shell"]);
    let long = format!("touch {}; sleep 60", q(&started));
    env.swarm(["task", "create", "long", "--description", &long])
        .ok();
    wait_for_file(&started, "the long task to start");

    let out = env.swarm(["shutdown", "a", "--grace", "1"]).ok();
    assert!(
        out.stdout.contains("a: approved the shutdown"),
        "{}",
        out.stdout
    );
    assert_eq!(mate.exit(LONG).code(), Some(0));
    let pane = mate.output();
    assert!(
        pane.contains("did not finish within the shutdown's grace of 1 s"),
        "{pane}"
    );
    let t = task(&env, "1");
    assert_eq!(
        (t["status"].as_str(), t.get("owner")),
        (Some("pending"), None),
        "{t}"
    );
    assert_eq!(t["metadata"].get("swarmFailed"), None, "{t}");
}

#[test]
fn an_agent_refuses_with_a_reason_the_lead_hears_it_and_the_teammate_goes_on() {
    let env = Env::with_team(&["a"]);
    let (started, gate, refused) = (env.path("started"), env.path("gate"), env.path("refused"));
    let mut mate = start(&env, "a", &["--agent", "shell"]);
    let mut lead = env.swarm(["lead"]).live();
    lead.expect("lead console for team t");
    // The agent waits to be asked, refuses, and then goes on with its turn.
    let refusing = format!(
        "touch {s}; until swarm shutdown-request show; do sleep 0.05; done; \
         swarm shutdown-request reject 'half way through the migration' > {r}; \
         while [ ! -e {g} ]; do sleep 0.05; done",
        s = q(&started),
        r = q(&refused),
        g = q(&gate)
    );
    env.swarm(["task", "create", "migrate", "--description", &refusing])
        .ok();
    wait_for_file(&started, "the task to start");

    // `swarm shutdown` has its answer while the turn still runs, and says why it failed.
    let out = env.swarm(["shutdown", "a"]).code(1);
    assert!(
        out.stdout
            .contains("a: rejected the shutdown (half way through the migration); still running"),
        "{}",
        out.stdout
    );
    lead.expect("declined shutdown: half way through the migration");
    assert!(
        std::fs::read_to_string(&refused)
            .unwrap()
            .contains("refused team-lead's shutdown request"),
        "{}",
        mate.output()
    );
    assert_eq!(task(&env, "1")["status"], "in_progress");
    assert!(mate
        .output()
        .contains("refused the shutdown: half way through the migration"));

    // It goes on: the turn finishes its task, then it takes the next one.
    std::fs::write(&gate, "").unwrap();
    let after = env.path("after");
    let next = format!("touch {}", q(&after));
    env.swarm(["task", "create", "next", "--description", &next])
        .ok();
    wait_for_file(&after, "the teammate to take another task");
    eventually(LONG, "both tasks completed", || {
        (task(&env, "1")["status"] == "completed" && task(&env, "2")["status"] == "completed")
            .then_some(())
    });
    assert!(
        mate.child.try_wait().unwrap().is_none(),
        "{}",
        mate.output()
    );
    // The refusal was that turn's: asked again, idle, it approves.
    let out = env.swarm(["shutdown", "a"]).ok();
    assert!(
        out.stdout.contains("a: approved the shutdown"),
        "{}",
        out.stdout
    );
    assert_eq!(mate.exit(LONG).code(), Some(0));
}

#[test]
fn the_leads_reason_reaches_the_busy_teammate_and_its_agent() {
    let env = Env::with_team(&["a"]);
    let (started, seen) = (env.path("started"), env.path("seen"));
    let mut mate = start(&env, "a", &["--agent", "shell"]);
    // The agent looks for a request between its steps, and wraps up when there is one.
    let polling = format!(
        "touch {s}; until swarm shutdown-request show > {o}; do sleep 0.05; done",
        s = q(&started),
        o = q(&seen)
    );
    env.swarm(["task", "create", "poll", "--description", &polling])
        .ok();
    wait_for_file(&started, "the task to start");
    // Nothing waits yet: `show` says so and exits 1.
    let none = env
        .swarm(["shutdown-request", "show", "--from", "a"])
        .code(1);
    assert!(
        none.stdout.contains("no shutdown request is waiting for a"),
        "{}",
        none.stdout
    );

    let out = env
        .swarm(["shutdown", "a", "--reason", "moving to the new branch"])
        .ok();
    assert!(
        out.stdout.contains("a: approved the shutdown"),
        "{}",
        out.stdout
    );
    assert_eq!(mate.exit(LONG).code(), Some(0));
    let shown = std::fs::read_to_string(&seen).unwrap();
    assert!(
        shown.contains("team-lead asked a to shut down: moving to the new branch"),
        "{shown}"
    );
    assert!(
        mate.output()
            .contains("shutdown requested by team-lead: moving to the new branch"),
        "{}",
        mate.output()
    );
    assert_eq!(task(&env, "1")["status"], "completed");
}

#[test]
fn only_the_running_turn_may_refuse_and_a_forged_refusal_is_ignored() {
    let env = Env::with_team(&["a", "b"]);
    let started = env.path("started");
    let mut mate = start(&env, "a", &["--agent", "shell"]);
    let long = format!("touch {}; sleep 60", q(&started));
    env.swarm(["task", "create", "long", "--description", &long])
        .ok();
    wait_for_file(&started, "the long task to start");
    // From outside its turn (here, teammate b's shell), nothing is written.
    env.swarm(["shutdown-request", "reject", "mine now", "--from", "a"])
        .env("SWARM_AGENT_NAME", "b")
        .refused("only a's running turn may refuse its shutdown");
    // A refusal file written by someone without the turn's token does not count either.
    let forged = env.path("teams/t/members/a/shutdown-refused.json");
    std::fs::write(
        &forged,
        r#"{"reason": "forged", "turn": "a guess", "at": 1}"#,
    )
    .unwrap();
    let out = env.swarm(["shutdown", "a", "--grace", "1"]).ok();
    assert!(
        out.stdout.contains("a: approved the shutdown"),
        "{}",
        out.stdout
    );
    assert_eq!(mate.exit(LONG).code(), Some(0));
    assert!(
        !mate.output().contains("refused the shutdown"),
        "{}",
        mate.output()
    );
}
