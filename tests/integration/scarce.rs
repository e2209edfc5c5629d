//! A machine short of what swarm uses (issue 20): a user whose inotify instances another
//! program holds, so every swarm process of theirs must poll; and a shell whose open-file limit
//! is too low for the teammates a launch starts.
//!
//! The user without instances is a uid of its own (root switches to it), so what another
//! program holds of it touches nobody else's tests; `swarm debug hold-inotify` is that program.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

const LONG: Duration = Duration::from_secs(180);

/// A uid nobody else uses, or `None` (the test is skipped, and says so) when this run cannot
/// switch users. In CI (`CI` set) a run without root fails instead.
fn other_uid(what: &str) -> Option<u32> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what} needs root, and CI must run it"
        );
        eprintln!("skipped: {what} needs root (CI runs as root)");
        return None;
    }
    Some(3_000_000 + std::process::id())
}

fn chown(path: &Path, uid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(uid)).unwrap();
}

/// Starts `swarm debug hold-inotify` as `uid`: once this returns, `uid` has no inotify
/// instance left. Returns the holder and how many it holds.
fn hold_every_instance(env: &Env, uid: u32) -> (KillOnDrop, u64) {
    let mut holder = env.swarm(["debug", "hold-inotify"]).run_as(uid).spawn();
    let mut line = String::new();
    BufReader::new(holder.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let held: u64 = line
        .strip_prefix("held ")
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("the holder said {line:?}"));
    assert!(held > 0, "the holder got no instance at all");
    (KillOnDrop(holder), held)
}

/// Every task file, parsed.
fn tasks(env: &Env) -> Vec<Value> {
    let Ok(dir) = std::fs::read_dir(env.path("tasks/t")) else {
        return vec![];
    };
    dir.filter_map(|e| {
        let name = e.ok()?.file_name().to_string_lossy().into_owned();
        let id = name.strip_suffix(".json")?;
        id.bytes().all(|b| b.is_ascii_digit()).then_some(())?;
        serde_json::from_slice(&std::fs::read(env.path(&format!("tasks/t/{name}"))).ok()?).ok()
    })
    .collect()
}

#[test]
fn a_team_whose_user_has_no_inotify_instance_left_polls_and_still_finishes_its_dag() {
    let Some(uid) = other_uid("running a team as a user without inotify instances") else {
        return;
    };
    let env = Env::new();
    chown(env.root(), uid);
    let (_holder, held) = hold_every_instance(&env, uid);
    let log = env.path("dag.log");
    let step = |name: &str| format!("echo {name} >> '{}'", log.display());
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "t", "agent": "shell", "teammates": [
                {"name": "ann"}, {"name": "bob"}, {"name": "cid"}],
               "tasks": [
                {"subject": "fetch", "description": step("fetch")},
                {"subject": "build a", "description": step("build-a"), "blockedBy": [0]},
                {"subject": "build b", "description": step("build-b"), "blockedBy": [0]},
                {"subject": "ship", "description": step("ship"), "blockedBy": [1, 2]}]})
        .to_string(),
    )
    .unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();

    let mut launch = env
        .swarm(["launch", file.to_str().unwrap(), "--backend", "in-process"])
        .run_as(uid)
        .live();
    launch.expect("3 teammates started");
    // The lead console and a follower start with no instance to be had, say so, and work.
    let mut lead = env.swarm(["lead"]).run_as(uid).live();
    lead.expect("lead console for team t");
    lead.expect("no inotify instance to be had");
    let (_follower, followed) = follower(
        env.swarm(["--json", "inbox", "ann", "--follow"])
            .run_as(uid),
    );

    eventually(LONG, "every task completed", || {
        let all = tasks(&env);
        (all.len() == 4 && all.iter().all(|t| t["status"] == "completed")).then_some(())
    });
    let mut ran: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    ran.sort();
    assert_eq!(
        ran,
        ["build-a", "build-b", "fetch", "ship"],
        "each task ran once"
    );

    let status = env.swarm(["--json", "status"]).run_as(uid).ok().json();
    for name in ["ann", "bob", "cid"] {
        assert_eq!(
            member(&status, name)["events"],
            "polling",
            "{name} polls (the holder has all {held} instances)"
        );
        let said = std::fs::read_to_string(env.path(&format!("teams/t/logs/{name}.log")))
            .unwrap()
            .matches("no inotify instance to be had")
            .count();
        assert_eq!(said, 1, "{name} says it polls, once");
    }

    env.swarm(["send", "--to", "ann", "$ echo polled"])
        .run_as(uid)
        .ok();
    expect_text(&followed, "$ echo polled", LONG);

    let stopped = env
        .swarm(["--json", "shutdown", "cid"])
        .run_as(uid)
        .ok()
        .json();
    assert_eq!(stopped[0]["result"], "approved", "{stopped}");
    env.swarm(["down"]).run_as(uid).ok();
    assert_eq!(
        launch.wait(LONG),
        Some(0),
        "the launcher ends with its team"
    );
    lead.type_line("/quit");
    assert_eq!(lead.wait(LONG), Some(0), "the console quits");
}

/// Ten teammates under `ulimit -n 20`: before, "10 teammates started", exit 0, and every runtime
/// exited 1 at its first lock or watch.
#[test]
fn a_launch_whose_runtimes_would_run_out_of_files_is_refused_before_anything_starts() {
    let env = Env::new();
    let mut args = vec!["launch", "--backend", "in-process", "--agent", "shell"];
    let names: Vec<String> = (0..10).map(|i| format!("--teammate=t{i}=go")).collect();
    args.extend(names.iter().map(String::as_str));
    env.swarm(&args).limit_files(20).refused(
        "each teammate may need up to 64 open files, but processes started here may open \
         only 20 (`ulimit -n`, and the hard limit is no higher); raise it with `ulimit -n 64`",
    );
}

/// A low soft limit under a higher hard one is raised at start: ten teammates launched from a
/// shell with `ulimit -Sn 20` all come up, each with the hard limit as its soft one.
#[test]
fn a_low_soft_open_file_limit_is_raised_to_the_hard_one_for_every_teammate() {
    let env = Env::new();
    let mut args = vec!["launch", "--backend", "in-process", "--agent", "shell"];
    let names: Vec<String> = (0..10).map(|i| format!("--teammate=t{i}=$ true")).collect();
    args.extend(names.iter().map(String::as_str));
    let mut launch = env.swarm(&args).rlimit_files(20, 4096).live();
    launch.expect("10 teammates started");
    let pids: Vec<u32> = eventually(LONG, "ten runtimes holding their liveness locks", || {
        let status = env.swarm(["--json", "status"]).ok().json();
        let up: Vec<u32> = status["members"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["name"] != "team-lead" && m["liveness"] == "alive")
            .filter_map(|m| m["pane"]["pid"].as_u64().map(|p| p as u32))
            .collect();
        (up.len() == 10).then_some(up)
    });
    for pid in pids {
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        let files = limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .unwrap()
            .split_whitespace()
            .skip(3)
            .take(2)
            .collect::<Vec<_>>();
        assert_eq!(files, ["4096", "4096"], "runtime {pid}: {limits}");
    }
    env.swarm(["down"]).ok();
    assert_eq!(launch.wait(LONG), Some(0));
}
