//! A shell teammate on another host does everything a local one does: reads its first message
//! from its inbox, takes tasks in dependency order (claimed at home), messages the lead, waits
//! for a permission the lead decides at home, shows in `swarm status` and `swarm top` with its
//! host, and answers the shutdown handshake, after which nothing of it runs on its host.

use serde_json::json;

use super::RemoteTeam;
use crate::support::*;

#[test]
fn a_remote_shell_teammate_works_tasks_messages_the_lead_and_gets_a_permission_decided() {
    let team = RemoteTeam::new(&["box1"]);
    let host = team.hosts.get("box1");
    std::fs::create_dir_all(host.home.join("work")).unwrap();
    let file = team.file(
        "team.json",
        &json!({"team": "t", "agent": "shell", "remoteSwarm": BIN,
            "teammates": [{"name": "builder", "host": "box1", "cwd": "work",
                           "prompt": "$ swarm send --to team-lead \"hello from $PWD\""}],
            "tasks": [
                {"subject": "build", "description": "echo built > built.txt"},
                {"subject": "ask", "blockedBy": [0], "description":
                 "swarm permission request --tool Bash --description 'rm -rf build' --wait && echo allowed > allowed.txt"}
            ]}),
    );
    team.launch(&file);
    let work = host.home.join("work");
    let hello = format!("hello from {}", work.display());
    team.eventually("builder's hello in the lead's inbox at home", || {
        team.texts_from("team-lead", "builder")
            .contains(&hello)
            .then_some(())
    });
    // Its first task ran on its host, in its directory there, and completed at home.
    team.eventually("task 1 completed at home", || {
        (team.task("1")["status"] == "completed").then_some(())
    });
    assert_eq!(team.task("1")["owner"], "builder");
    assert_eq!(
        std::fs::read_to_string(work.join("built.txt")).unwrap(),
        "built\n"
    );
    assert!(!team.env.path("work/built.txt").exists());

    // Its permission request is filed at home and decided there.
    let pending = team.eventually("builder's permission request at home", || {
        let list = team.swarm(["--json", "permission", "list"]).ok().json();
        list.as_array()?.first().cloned()
    });
    assert_eq!(pending["workerName"], "builder");
    assert_eq!(pending["description"], "rm -rf build");
    assert!(!work.join("allowed.txt").exists(), "it waits for the lead");
    let id = pending["id"].as_str().unwrap().to_string();
    team.swarm(["permission", "approve", &id]).ok();
    team.eventually("task 2 completed at home", || {
        (team.task("2")["status"] == "completed").then_some(())
    });
    assert_eq!(
        std::fs::read_to_string(work.join("allowed.txt")).unwrap(),
        "allowed\n"
    );

    let status = team.status();
    let builder = member(&status, "builder");
    assert_eq!(builder["host"], "box1");
    assert_eq!(builder["state"], "idle", "{status}");
    // Its host contains it as a local teammate is contained, and says so (`launch::host`).
    assert_eq!(builder["contained"], true, "{status}");
    assert_eq!(builder["containment"], "bwrap", "{status}");
    assert_eq!(status["hosts"][0]["host"], "box1");
    assert_eq!(status["hosts"][0]["connected"], true);
    let text = team.swarm(["status"]).ok().stdout;
    assert!(text.contains("tmux@box1"), "{text}");
    // `swarm top` (its line form, `status --watch`) names the host too.
    let mut watch = team.swarm(["status", "--watch"]).live();
    watch.expect("builder@box1: idle, task -, 0 unread");
    drop(watch);
    assert!(text.contains("host box1: connected since"), "{text}");
    // One hello, exactly.
    assert_eq!(
        team.texts_from("team-lead", "builder")
            .iter()
            .filter(|t| **t == hello)
            .count(),
        1
    );

    // Its output, from its pane on its host.
    let logs = team.swarm(["logs", "builder"]).ok().stdout;
    assert!(logs.contains("task #1 (build) completed"), "{logs}");

    let out = team.swarm(["shutdown", "builder", "--timeout", "60"]).ok();
    assert!(out.stdout.contains("approved the shutdown"), "{out:?}");
    let status = team.status();
    assert_eq!(member(&status, "builder")["retired"], true);
    team.eventually("builder's tmux server on its host to be gone", || {
        let sockets = host.home.join("tmux");
        let left = walk_sockets(&sockets);
        left.is_empty().then_some(())
    });

    // `swarm up` brings it back on its host, as it was; `swarm restart` starts it again there.
    team.swarm([
        std::ffi::OsStr::new("up"),
        file.as_os_str(),
        "--backend".as_ref(),
        "tmux".as_ref(),
        "--no-lead-pane".as_ref(),
    ])
    .ok();
    let up = team.eventually("builder running again", || {
        let s = team.status();
        super::runs(&s, "builder").then_some(s)
    });
    assert_eq!(member(&up, "builder")["host"], "box1");
    assert_eq!(
        walk_sockets(&host.home.join("tmux")).len(),
        1,
        "its pane is on its host"
    );
    // Which runtime runs it there: the liveness lock says (pid, host).
    let alive = host.mirror().join("teams/t/alive/builder.lock");
    let runtime = || std::fs::read_to_string(&alive).unwrap_or_default();
    let before = runtime();
    assert!(before.contains("\"pid\""), "{before}");
    team.swarm(["restart", "builder", "--timeout", "60"]).ok();
    team.eventually(
        "builder running again after the restart, another process",
        || {
            let s = team.status();
            (super::runs(&s, "builder") && runtime() != before && !runtime().is_empty())
                .then_some(())
        },
    );
    team.swarm(["down", "--timeout", "60"]).ok();
    team.eventually("nothing of the team left on its host", || {
        walk_sockets(&host.home.join("tmux"))
            .is_empty()
            .then_some(())
    });
    team.eventually("the link gone", || {
        (!crate::support::cmdlines_contain(&["relay", "link", team.env.root().to_str().unwrap()]))
            .then_some(())
    });
}

/// A host whose clock is 9 s ahead (the relay's clock, moved by a test seam): `swarm status`
/// says so, with what it breaks.
#[test]
fn a_host_whose_clock_is_off_gets_a_warning_in_status() {
    let team = RemoteTeam::with_host_env(&["box1"], &[("SWARM_SEAM_CLOCK_OFFSET_MS", "9000")]);
    let file = team.file(
        "team.json",
        &json!({"team": "t", "agent": "shell", "remoteSwarm": BIN,
                "teammates": [{"name": "builder", "host": "box1"}]}),
    );
    team.launch(&file);
    let status = team.eventually("the skew measured", || {
        let s = team.status();
        s["hosts"][0]["skewMs"]
            .as_i64()
            .filter(|ms| *ms > 5000)
            .map(|_| s)
    });
    assert!(
        status["hosts"][0]["skewMs"].as_i64().unwrap() < 13000,
        "{status}"
    );
    let text = team.swarm(["status"]).ok().stdout;
    assert!(text.contains("warning: box1's clock is 9."), "{text}");
    assert!(text.contains("ahead of this machine's"), "{text}");
    assert!(text.contains("120 s"), "{text}");
    team.swarm(["down", "--timeout", "30"]).ok();
}

/// The tmux sockets under `dir` that a server still answers on.
fn walk_sockets(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let Ok(users) = std::fs::read_dir(dir) else {
        return found;
    };
    for user in users.flatten() {
        for s in std::fs::read_dir(user.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let alive = clean_command("tmux")
                .arg("-S")
                .arg(s.path())
                .arg("ls")
                .output()
                .is_ok_and(|o| o.status.success());
            if alive {
                found.push(s.path());
            }
        }
    }
    found
}
