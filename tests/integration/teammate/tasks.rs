//! Tasks through teammates: a dependency graph spread over three shell teammates, a failing task
//! parked until the lead retries it, assignments (taken from the lead only), a task whose
//! claimer was SIGKILLed finished by a survivor, an agent that completes its own task with
//! the `swarm` on its PATH, and a task file dropped in by a writer that knows nothing of swarm,
//! which the runtime's task index must see from its file events.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{lead_inbox, liveness, q, read, start, start_with, task, to_lead, Mate, LONG};
use crate::support::*;

#[test]
fn a_ten_task_dag_over_three_shell_teammates_runs_in_order_each_task_once() {
    let env = Env::with_team(&["a", "b", "c"]);
    let log = env.path("order.log");
    let mates: Vec<Mate> = ["a", "b", "c"]
        .iter()
        .map(|n| start(&env, n, &["--agent", "shell"]))
        .collect();
    // Three roots, two middle layers with joins, one final join.
    let deps: [&[u32]; 10] = [
        &[],
        &[],
        &[],
        &[1],
        &[1, 2],
        &[3],
        &[4, 5],
        &[5, 6],
        &[7],
        &[8, 9],
    ];
    let started = Instant::now();
    for (i, blockers) in deps.iter().enumerate() {
        let n = i + 1;
        let mut args = vec![
            "task".to_string(),
            "create".into(),
            format!("step {n}"),
            "--description".into(),
            format!(
                "echo \"start {n} $SWARM_AGENT_NAME\" >> {log}; sleep 0.2; echo \"end {n}\" >> {log}",
                log = q(&log)
            ),
        ];
        for b in *blockers {
            args.push("--blocked-by".into());
            args.push(b.to_string());
        }
        env.swarm(&args).ok();
    }
    eventually(Duration::from_secs(60), "all ten tasks completed", || {
        let list = env.swarm(["--json", "task", "list"]).ok().json();
        let done = list
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["status"] == "completed")
            .count();
        (done == 10).then_some(())
    });
    let elapsed = started.elapsed();

    let lines: Vec<String> = read(&log).lines().map(str::to_string).collect();
    let position = |what: &str| -> usize {
        let hits: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| *l == what || l.starts_with(&format!("{what} ")))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(
            hits.len(),
            1,
            "{what:?} should appear exactly once in {lines:#?}"
        );
        hits[0]
    };
    assert_eq!(lines.len(), 20, "{lines:#?}");
    for (i, blockers) in deps.iter().enumerate() {
        let n = i + 1;
        let start = position(&format!("start {n}"));
        assert!(position(&format!("end {n}")) > start);
        for b in *blockers {
            assert!(
                position(&format!("end {b}")) < start,
                "task {n} started before its blocker {b} ended: {lines:#?}"
            );
        }
    }
    let workers: std::collections::BTreeSet<&str> = lines
        .iter()
        .filter(|l| l.starts_with("start "))
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    assert!(
        workers.len() >= 2,
        "the work should be spread over the teammates, got {workers:?}"
    );
    // The task file is written before the idle notification, so wait for the last one.
    let resolved = eventually(LONG, "ten idle notifications", || {
        let ids: std::collections::BTreeSet<u32> = to_lead(&env, "idle_notification")
            .iter()
            .filter(|n| n["completedStatus"] == "resolved")
            .filter_map(|n| n["completedTaskId"].as_str()?.parse().ok())
            .collect();
        (ids.len() == 10).then_some(ids)
    });
    assert_eq!(resolved, (1..=10).collect());
    eprintln!(
        "10-task DAG over 3 shell teammates (0.2 s per task, critical path 5 tasks): {elapsed:.2?}, workers {workers:?}"
    );
    let panes: String = mates.iter().map(Mate::output).collect();
    assert_eq!(panes.matches("✔ task #").count(), 10, "{panes}");
}

#[test]
fn a_sigkilled_teammate_is_dead_and_a_survivor_finishes_its_released_task() {
    let env = Env::with_team(&["a", "b"]);
    let (pids, mark, out) = (env.path("pids"), env.path("mark"), env.path("out"));
    let mut a = start(&env, "a", &["--agent", "shell"]);
    env.swarm([
        "task",
        "create",
        "resumable",
        "--description",
        &format!(
            "echo $$ >> {pids}; if [ -e {mark} ]; then echo \"finished by $SWARM_AGENT_NAME\" >> {out}; else touch {mark}; sleep 60; fi",
            pids = q(&pids),
            mark = q(&mark),
            out = q(&out)
        ),
    ])
    .ok();
    eventually(LONG, "a to start the task", || mark.exists().then_some(()));
    assert_eq!(task(&env, "1")["owner"], "a");
    let _b = start(&env, "b", &["--agent", "shell"]);

    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(a.pid(), libc::SIGKILL) };
    a.exit(LONG);
    assert_eq!(liveness(&env, "a"), "dead");
    // The orphaned task is not stolen: only the lead decides a teammate is gone.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(task(&env, "1")["owner"], "a");

    env.swarm(["task", "release", "--agent", "a"]).ok();
    eventually(LONG, "b to finish the released task", || {
        (task(&env, "1")["status"] == "completed").then_some(())
    });
    assert_eq!(read(&out), "finished by b\n");
    assert_eq!(task(&env, "1")["owner"], "b");

    // The agent (sh) died with its runtime (parent-death signal), but its `sleep` lives on in
    // the group: clean it up.
    let orphan: i32 = read(&pids).lines().next().unwrap().parse().unwrap();
    // SAFETY: as above.
    unsafe { libc::kill(-orphan, libc::SIGKILL) };
}

#[test]
fn a_failing_task_is_parked_its_dependents_wait_and_the_lead_can_retry_it() {
    let env = Env::with_team(&["a"]);
    let fixed = env.path("fixed");
    let _mate = start(&env, "a", &["--agent", "shell"]);
    env.swarm([
        "task",
        "create",
        "flaky",
        "--description",
        &format!("test -e {} || exit 3", q(&fixed)),
    ])
    .ok();
    env.swarm([
        "task",
        "create",
        "after",
        "--description",
        "echo after",
        "--blocked-by",
        "1",
    ])
    .ok();
    env.swarm(["task", "create", "other", "--description", "echo other"])
        .ok();
    eventually(LONG, "the independent task to complete", || {
        (task(&env, "3")["status"] == "completed").then_some(())
    });
    let t1 = task(&env, "1");
    assert_eq!(t1["status"], "pending");
    assert_eq!(t1.get("owner"), None);
    assert_eq!(
        t1["metadata"],
        json!({"swarmFailed": true, "failureReason": "exit status 3", "failedBy": "a"})
    );
    assert_eq!(task(&env, "2")["status"], "pending");
    let failed: Vec<Value> = to_lead(&env, "idle_notification")
        .into_iter()
        .filter(|n| n["completedTaskId"] == "1")
        .collect();
    assert_eq!(failed.len(), 1, "tried once, not forever");
    assert_eq!(failed[0]["completedStatus"], "failed");
    assert_eq!(failed[0]["idleReason"], "failed");
    assert_eq!(failed[0]["failureReason"], "exit status 3");
    assert_eq!(
        env.swarm(["--json", "task", "list", "--available"])
            .ok()
            .json(),
        json!([])
    );

    std::fs::write(&fixed, "").unwrap();
    env.swarm([
        "task",
        "update",
        "1",
        "--metadata",
        r#"{"swarmFailed": null}"#,
    ])
    .ok();
    eventually(LONG, "the retried task and its dependent", || {
        (task(&env, "2")["status"] == "completed").then_some(())
    });
    assert_eq!(task(&env, "1")["status"], "completed");
}

#[test]
fn a_task_assignment_from_the_lead_is_taken_one_from_a_teammate_is_not() {
    let env = Env::with_team(&["a", "b"]);
    let out = env.path("out");
    // Parked tasks are not offered to claimers, so only an assignment can start them.
    for n in ["1", "2"] {
        env.swarm([
            "task",
            "create",
            &format!("job {n}"),
            "--description",
            &format!("echo job {n} >> {}", q(&out)),
            "--metadata",
            r#"{"swarmFailed": true}"#,
        ])
        .ok();
    }
    let mate = start(&env, "a", &["--agent", "shell"]);
    let assign = |from: &str, id: &str| {
        env.swarm([
            "send",
            "--to",
            "a",
            "--from",
            from,
            &json!({"type": "task_assignment", "taskId": id, "subject": "job",
                    "description": "", "assignedBy": from, "timestamp": "t"})
            .to_string(),
        ])
        .ok();
    };
    assign("b", "2");
    assign("team-lead", "1");
    eventually(LONG, "the assigned task to complete", || {
        (task(&env, "1")["status"] == "completed").then_some(())
    });
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(read(&out), "job 1\n");
    assert_eq!(task(&env, "2")["status"], "pending");
    assert!(mate.output().contains("ignored task_assignment from b"));
}

#[test]
fn an_agent_can_use_swarm_from_its_shell_and_finish_its_own_task() {
    let env = Env::with_team(&["a"]);
    // A fake agent CLI that does what the first prompt's guide says: it messages the lead and
    // marks its task completed itself, with whatever `swarm` the runtime put on its PATH.
    let script = "id=$(printf '%s' \"$1\" | sed -n 's/^Complete task #\\([0-9]*\\):.*/\\1/p'); \
                  swarm send --to team-lead \"working on #$id\" && \
                  swarm task update \"$id\" --status completed";
    let mate = start_with(
        &env,
        "a",
        &["--", "sh", "-c", script, "sh"],
        &[("PATH", "/usr/bin:/bin")],
    );
    env.swarm(["task", "create", "self-service"]).ok();
    eventually(LONG, "the idle notification for the task", || {
        to_lead(&env, "idle_notification").into_iter().next()
    });
    let t = task(&env, "1");
    assert_eq!(
        (t["status"].as_str(), t["owner"].as_str()),
        (Some("completed"), Some("a"))
    );
    let idle = &to_lead(&env, "idle_notification")[0];
    assert_eq!(idle["completedTaskId"], "1");
    assert_eq!(idle["completedStatus"], "resolved");
    let said: Vec<Value> = lead_inbox(&env)
        .into_iter()
        .filter(|m| m["text"] == "working on #1")
        .collect();
    assert_eq!(said.len(), 1);
    assert_eq!(said[0]["from"], "a");
    assert!(
        mate.output().contains("✔ task #1 (self-service) completed"),
        "{}",
        mate.output()
    );
}

#[test]
fn a_running_teammate_takes_a_task_file_renamed_in_by_a_writer_that_knows_nothing_of_swarm() {
    let env = Env::with_team(&["a"]);
    let done = env.path("done");
    // The periodic re-scan is out of reach: the runtime's task index must learn of the file
    // from its events.
    let _mate = start_with(
        &env,
        "a",
        &["--agent", "shell"],
        &[("SWARM_RESCAN_MS", "600000")],
    );
    needs_events(&env, "a");
    std::fs::create_dir_all(env.path("tasks/t")).unwrap();
    let file = json!({"id": "1", "subject": "from outside", "status": "pending",
        "description": format!("touch {}", q(&done)), "blocks": [], "blockedBy": []});
    let tmp = env.path("tasks/t/incoming.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    std::fs::rename(&tmp, env.path("tasks/t/1.json")).unwrap();
    eventually(LONG, "the renamed-in task completed by a", || {
        let t = task(&env, "1");
        (t["status"] == "completed" && t["owner"] == "a").then_some(())
    });
    assert!(done.exists(), "the task's command ran");
}

#[test]
fn a_finished_task_is_reported_in_claude_codes_frames_idle_first_then_task_completed() {
    let env = Env::with_team(&["a"]);
    let _mate = start(&env, "a", &["--agent", "shell"]);
    env.swarm(["task", "create", "Say hi", "--description", "echo hi"])
        .ok();
    let done = eventually(LONG, "the task_completed frame", || {
        to_lead(&env, "task_completed").into_iter().next()
    });
    let keys: Vec<&str> = done
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["type", "from", "taskId", "taskSubject", "timestamp"]);
    assert_eq!(
        (&done["from"], &done["taskId"], &done["taskSubject"]),
        (&json!("a"), &json!("1"), &json!("Say hi"))
    );
    // The idle notification with the result comes first, and names the task.
    let frames: Vec<Value> = lead_inbox(&env)
        .iter()
        .filter_map(|m| serde_json::from_str::<Value>(m["text"].as_str()?).ok())
        .filter(|p| p["completedTaskId"] == "1" || p["type"] == "task_completed")
        .collect();
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert_eq!(frames[0]["type"], "idle_notification");
    assert_eq!(frames[0]["completedStatus"], "resolved");
    assert_eq!(frames[1]["type"], "task_completed");
    // A failed task is no task_completed.
    env.swarm(["task", "create", "Fail", "--description", "exit 3"])
        .ok();
    eventually(LONG, "the failed task's idle notification", || {
        to_lead(&env, "idle_notification")
            .into_iter()
            .find(|n| n["completedTaskId"] == "2")
    });
    assert_eq!(to_lead(&env, "task_completed").len(), 1);
}

/// A failed turn's reason ends with the last lines it wrote on stderr, in the task and in the
/// lead's `idle_notification`: "exit status 3" alone says nothing of what went wrong (issue 28).
#[test]
fn a_failed_turn_tells_the_lead_the_last_lines_of_its_stderr() {
    let env = Env::with_team(&["a"]);
    let _mate = start(&env, "a", &["--agent", "shell"]);
    env.swarm([
        "task",
        "create",
        "broken",
        "--description",
        "echo building; echo 'warning: old' >&2; echo 'error: no such file: parser.rs' >&2; exit 3",
    ])
    .ok();
    let failed = eventually(LONG, "the failed task's notification", || {
        to_lead(&env, "idle_notification")
            .into_iter()
            .find(|n| n["completedTaskId"] == "1")
    });
    let why = "exit status 3; its stderr ended with:\nwarning: old\nerror: no such file: parser.rs";
    assert_eq!(failed["failureReason"], why, "{failed}");
    assert_eq!(failed["summary"], format!("task #1 failed: {why}"));
    assert_eq!(task(&env, "1")["metadata"]["failureReason"], why);
}
