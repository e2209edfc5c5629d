//! Bringing a team back: relaunching after `shutdown --all`, `swarm up` leaving running
//! teammates alone, a team whose tmux server died, and `swarm restart`; each task seeded once.

use std::time::Duration;

use serde_json::json;

use super::{is_running, on, shell_file, status, tasks, wait_running, worker_team};
use crate::support::*;

#[test]
fn relaunching_after_shutdown_all_starts_the_same_teammates_and_seeds_no_task_twice() {
    let env = Env::new();
    let tmux = Tmux::new();
    let file = shell_file(
        &env,
        "t",
        &["writer", "reader"],
        json!([{"subject": "first", "description": "true"},
               {"subject": "second", "description": "true", "blockedBy": [0]}]),
    );
    let file = file.to_str().unwrap();
    on(&env, &tmux, ["launch", file]).ok();
    let before = read_json(&env.path("teams/t/config.json"));
    wait_running(&env, &tmux, "t", &["writer", "reader"]);
    on(&env, &tmux, ["shutdown", "--all"]).ok();

    // The same file again: the teammates start again as they were, the tasks are not doubled.
    let out = on(&env, &tmux, ["launch", file]).ok();
    assert!(
        out.stdout.contains("writer (blue): shell in tmux pane"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("(started again)"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("2 tasks of the plan are already in the list"),
        "{}",
        out.stdout
    );
    wait_running(&env, &tmux, "t", &["writer", "reader"]);
    let after = read_json(&env.path("teams/t/config.json"));
    for name in ["writer", "reader"] {
        for field in ["agentId", "color", "joinedAt", "cwd", "swarmAgent"] {
            assert_eq!(
                member(&after, name)[field],
                member(&before, name)[field],
                "{name} {field}"
            );
        }
        assert_eq!(member(&after, name)["isActive"], true);
    }
    assert_eq!(
        after["members"].as_array().unwrap().len(),
        3,
        "no member added twice"
    );
    let list = tasks(&env, "t");
    assert_eq!(list.len(), 2, "{list:?}");
    assert_eq!(list[0]["metadata"]["swarmKey"], "first");
    // Its inbox stayed: the first message is there once, not sent again.
    let inbox = read_json(&env.path("teams/t/inboxes/writer.json"));
    assert_eq!(
        inbox
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["text"] == "$ echo ready")
            .count(),
        1
    );

    // While they run, `launch` refuses to start them twice and says what to use instead. (Not
    // `refused()`: the running team writes its own files meanwhile; the roster's members and
    // panes are what a second launch would change.)
    let members = |env: &Env| -> Vec<(String, String)> {
        read_json(&env.path("teams/t/config.json"))["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["name"].to_string(), m["tmuxPaneId"].to_string()))
            .collect()
    };
    let before = members(&env);
    on(&env, &tmux, ["launch", file]).code(2).stderr_has(
        "writer is already running in team t; `swarm up FILE` starts only the teammates that \
         are not running, and `swarm restart writer` restarts this one",
    );
    assert_eq!(members(&env), before, "a refused launch changed the roster");
    on(&env, &tmux, ["down"]).ok();
}

#[test]
fn up_starts_what_is_missing_even_after_the_tmux_server_died() {
    let env = Env::new();
    let tmux = Tmux::new();
    let file = shell_file(
        &env,
        "t",
        &["stays", "killed"],
        json!([{"subject": "only once"}]),
    );
    let file = file.to_str().unwrap();
    on(&env, &tmux, ["up", file]).ok();
    let first = wait_running(&env, &tmux, "t", &["stays", "killed"]);
    let stays_pane = member(&first, "stays")["paneId"].clone();

    // One teammate killed: up starts it and leaves the other exactly where it was.
    on(&env, &tmux, ["kill", "killed"]).ok();
    let out = on(&env, &tmux, ["up", file]).ok();
    assert!(
        out.stdout.contains("stays is already running; left alone"),
        "{}",
        out.stdout
    );
    let second = wait_running(&env, &tmux, "t", &["stays", "killed"]);
    assert_eq!(member(&second, "stays")["paneId"], stays_pane);
    assert_ne!(
        member(&second, "killed")["paneId"],
        member(&first, "killed")["paneId"]
    );

    // The whole tmux server gone: nothing runs, and up brings back the lead pane and both.
    tmux.cmd(["kill-server"]);
    let dead = status(&env, &tmux, "t");
    assert!(
        !is_running(&dead, "stays") && !is_running(&dead, "killed"),
        "{dead}"
    );
    let listed = on(&env, &tmux, ["team", "list"]).ok().stdout;
    assert!(listed.contains("2 teammates: none running"), "{listed}");
    let out = on(&env, &tmux, ["up", file]).ok();
    assert!(
        out.stdout.contains("lead console in pane"),
        "{}",
        out.stdout
    );
    let back = wait_running(&env, &tmux, "t", &["stays", "killed"]);
    assert_eq!(
        member(&back, "team-lead")["pane"]["state"],
        "alive",
        "{back}"
    );
    assert_eq!(tasks(&env, "t").len(), 1, "the file's task is seeded once");
    on(&env, &tmux, ["down"]).ok();
}

#[test]
fn restart_stops_a_teammate_and_starts_it_again_with_its_inbox_and_tasks() {
    let env = Env::new();
    let tmux = Tmux::new();
    worker_team(&env, &tmux);
    let lock = env.path("teams/t/alive/worker.lock");
    let first_pid = std::fs::read_to_string(&lock).unwrap();
    on(
        &env,
        &tmux,
        ["send", "--to", "worker", "$ echo before > before.txt"],
    )
    .ok();
    eventually(
        std::time::Duration::from_secs(30),
        "the first message ran",
        || env.path("work/before.txt").is_file().then_some(()),
    );
    let out = on(&env, &tmux, ["restart", "worker"]).ok();
    assert!(
        out.stdout.contains("worker: stopped (approved)"),
        "{}",
        out.stdout
    );
    wait_running(&env, &tmux, "t", &["worker"]);
    let second_pid = std::fs::read_to_string(&lock).unwrap();
    assert_ne!(first_pid, second_pid, "another runtime holds worker's lock");
    // The restarted teammate is the same member: it answers messages sent to it.
    on(
        &env,
        &tmux,
        ["send", "--to", "worker", "$ echo after > after.txt"],
    )
    .ok();
    eventually(
        std::time::Duration::from_secs(30),
        "the restarted worker ran it",
        || env.path("work/after.txt").is_file().then_some(()),
    );
    let inbox = read_json(&env.path("teams/t/inboxes/worker.json"));
    assert!(
        inbox
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["text"] == "$ echo before > before.txt"),
        "the inbox stayed: {inbox}"
    );
    // (The worker is still writing its idle notification, so this checks the exit, not the files.)
    on(&env, &tmux, ["restart", "nobody"])
        .code(1)
        .stderr_has("not a member");
    on(&env, &tmux, ["down"]).ok();
}

/// A lead console that reads a shutdown approval late (it was stopped, or busy, while
/// `restart` or `down` and `up` ran) leaves the teammate's new run alone: the approval names the
/// run that approved (`swarmRun`), and another run holds the lock now. Before, it closed the new run's pane
/// and retired it (CI: teammates found retired, their panes gone, after `up`). The console runs
/// in the test's own shell here: tmux resumes a pane's process that is stopped.
#[test]
fn a_lead_console_that_reads_an_approval_late_leaves_the_run_started_since_alone() {
    let env = Env::new();
    let tmux = Tmux::new();
    worker_team(&env, &tmux);
    let first_run = std::fs::read_to_string(env.path("teams/t/alive/worker.lock")).unwrap();
    let mut console = on(&env, &tmux, ["--team", "t", "lead"]).live();
    console.expect("lead console for team t");
    console.expect("worker is idle");
    // Stopped between passes, not holding the inbox's lock half way through one.
    eventually(Duration::from_secs(20), "the console's pass over", || {
        let inbox = read_json(&env.path("teams/t/inboxes/team-lead.json"));
        let all_read = inbox.as_array()?.iter().all(|m| m["read"] == true);
        let lock = env.path("teams/t/inboxes/team-lead.json.lock");
        (all_read && !lock.exists()).then_some(())
    });
    let pid = console.child.id().to_string();
    let signal = |sig: &str| clean_command("kill").args([sig, &pid]).status().unwrap();
    // The console sleeps through the restart: the approval waits in its inbox.
    assert!(signal("-STOP").success());
    let out = on(&env, &tmux, ["restart", "worker"]).run();
    assert!(signal("-CONT").success());
    assert_eq!(out.code, 0, "{out:?}");
    let again = wait_running(&env, &tmux, "t", &["worker"]);
    let new_pane = member(&again, "worker")["paneId"].clone();
    // (Maybe in a pane of the same id: the old one was the server's last, so tmux started
    // again from %0.)
    let run = || std::fs::read_to_string(env.path("teams/t/alive/worker.lock")).unwrap();
    assert_ne!(run(), first_run, "another run holds the worker's lock");
    // The console reads the approval, and the worker's new run still runs, on the team.
    console.expect("worker approved shutdown");
    console.expect("left the team");
    let after = status(&env, &tmux, "t");
    assert!(is_running(&after, "worker"), "{after}");
    assert_eq!(member(&after, "worker")["retired"], false, "{after}");
    assert_eq!(member(&after, "worker")["paneId"], new_pane, "{after}");
    drop(console);
    on(&env, &tmux, ["down"]).ok();
}

/// An approval read while a launch is starting its sender again (the launch's intent is on the
/// roster, the new pane is not made yet, so neither a new lock nor a new spawn record tells the
/// runs apart) is the earlier run's. Before, the console took it for the current run's and
/// retired the member, and its kill went on to stop the new run once the launch had recorded
/// it (CI: a runtime `up` had just started after a killed launch and `down` got SIGTERM, and
/// `up` said 15 of 16 up).
#[test]
fn a_lead_console_that_reads_an_approval_while_its_sender_is_started_again_leaves_it_alone() {
    let env = Env::new();
    let tmux = Tmux::new();
    worker_team(&env, &tmux);
    let mut console = on(&env, &tmux, ["--team", "t", "lead"]).live();
    console.expect("lead console for team t");
    console.expect("worker is idle");
    eventually(Duration::from_secs(20), "the console's pass over", || {
        let inbox = read_json(&env.path("teams/t/inboxes/team-lead.json"));
        let all_read = inbox.as_array()?.iter().all(|m| m["read"] == true);
        let lock = env.path("teams/t/inboxes/team-lead.json.lock");
        (all_read && !lock.exists()).then_some(())
    });
    let signal = |sig: &str, pid: u32| {
        let pid = pid.to_string();
        assert!(clean_command("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success());
    };
    let console_pid = console.child.id();
    signal("-STOP", console_pid);
    // The restart stops itself once the roster holds its intent, before it opens the pane.
    let mut restart = KillOnDrop(
        on(&env, &tmux, ["restart", "worker"])
            .env("SWARM_LAUNCH_FAULT", "stop-at:reserved")
            .spawn(),
    );
    let restart_pid = restart.0.id();
    eventually(
        Duration::from_secs(30),
        "the restart stopped half way",
        || {
            let stat = std::fs::read_to_string(format!("/proc/{restart_pid}/stat")).ok()?;
            let state = stat[stat.rfind(')')? + 1..].split_whitespace().next()?;
            (state == "T").then_some(())
        },
    );
    let roster = read_json(&env.path("teams/t/config.json"));
    let worker = roster["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "worker")
        .unwrap();
    assert!(worker.get("swarmOpening").is_some(), "{roster}");
    signal("-CONT", console_pid);
    console.expect("worker approved shutdown of an earlier run");
    signal("-CONT", restart_pid);
    let status = restart.0.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut restart.0.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{status:?}: {stderr}");
    let after = wait_running(&env, &tmux, "t", &["worker"]);
    assert_eq!(member(&after, "worker")["retired"], false, "{after}");
    drop(console);
    on(&env, &tmux, ["down"]).ok();
}
