//! Launches that verify (issue 20 item 4): `swarm launch` and `swarm up` wait until every
//! teammate is up, name each one that is not with the last lines of its output, exit non-zero,
//! leave the others running and say how to try again. (Before, a launch whose teammates died at
//! once printed "N teammates started" and exited 0.)

use std::time::Duration;

use serde_json::{json, Value};

use super::{swarm_on, write_script};
use crate::support::*;

/// A fake `claude` that cannot start: it says why and exits 3.
fn broken_claude(env: &Env) -> std::path::PathBuf {
    write_script(
        &env.path("broken-claude"),
        "#!/bin/sh\necho \"fake claude: cannot start, no API key\"\nexit 3\n",
    )
}

/// A swarm file with `shell` built-in teammates and `claude` teammates run by the fake.
fn mixed_file(env: &Env, shell: &[String], claude: &[&str]) -> std::path::PathBuf {
    let mut teammates: Vec<Value> = shell
        .iter()
        .map(|n| json!({"name": n, "prompt": "$ echo ready", "agent": "shell"}))
        .collect();
    teammates.extend(
        claude
            .iter()
            .map(|n| json!({"name": n, "prompt": "go", "agent": "claude"})),
    );
    std::fs::create_dir_all(env.path("work")).unwrap();
    let path = env.path("team.json");
    std::fs::write(
        &path,
        json!({"team": "t", "cwd": "work", "teammates": teammates}).to_string(),
    )
    .unwrap();
    path
}

fn status(env: &Env, tmux: &Tmux) -> Value {
    env.swarm(["--json", "status"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok()
        .json()
}

fn running(doc: &Value, name: &str) -> bool {
    let m = member(doc, name);
    m["liveness"] == "alive" && m["pane"]["state"] == "alive"
}

#[test]
fn a_teammate_whose_agent_exits_at_once_is_named_with_its_output_and_the_others_keep_running() {
    let env = Env::new();
    let tmux = Tmux::new();
    let broken = broken_claude(&env);
    let shell: Vec<String> = ["one", "two"].map(String::from).to_vec();
    let file = mixed_file(&env, &shell, &["broken"]);
    let file = file.to_str().unwrap();

    // Without waiting, the launch says nothing about it (what every launch did before).
    let out = swarm_on(&env, &tmux, &broken, &["launch", "--no-wait", file]).ok();
    assert!(out.stdout.contains("3 teammates started"), "{}", out.stdout);
    assert!(!out.stderr.contains("did not come up"), "{}", out.stderr);
    env.swarm(["down", "--force", "--timeout", "10"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();

    let out = swarm_on(&env, &tmux, &broken, &["up", file]).code(1);
    assert!(
        out.stdout
            .contains("team t: 2 of 3 teammates up, 1 did not come up"),
        "{}",
        out.stdout
    );
    out.stderr_has("swarm: 1 of 3 teammates of team t did not come up:\n")
        // tmux does not always learn the exit status before it shows the pane dead: the
        // status is said when it is known, the death and the output always.
        .stderr_has("  broken: its process exited")
        .stderr_has("; its last output:\n    | fake claude: cannot start, no API key\n")
        .stderr_has(&format!(
            "The other 2 keep running. To try again: `swarm up --team t {file}` (starts every \
             teammate that is not running) or `swarm restart --team t broken`.\n"
        ));
    assert!(
        !out.stderr.contains("Pane is dead"),
        "tmux's own line is not the teammate's output: {}",
        out.stderr
    );
    let doc = status(&env, &tmux);
    assert!(running(&doc, "one") && running(&doc, "two"), "{doc}");
    assert_eq!(member(&doc, "broken")["pane"]["state"], "dead");

    // `--json` carries the same answer, and `swarm up` says it again while it still fails.
    let out = swarm_on(&env, &tmux, &broken, &["--json", "up", file]).code(1);
    let doc = out.json();
    assert_eq!(doc["notUp"][0]["name"], "broken", "{doc}");
    let why = doc["notUp"][0]["why"].as_str().unwrap_or_default();
    assert!(
        ["its process exited", "its process exited with status 3"].contains(&why),
        "{doc}"
    );
    assert_eq!(
        doc["notUp"][0]["output"],
        json!(["fake claude: cannot start, no API key"])
    );
    assert_eq!(doc["leftRunning"], json!(["one", "two"]));
    env.swarm(["down", "--force", "--timeout", "10"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
}

#[test]
fn among_many_teammates_exactly_the_ones_that_did_not_start_are_named() {
    let env = Env::new();
    let tmux = Tmux::new();
    let broken = broken_claude(&env);
    let shell: Vec<String> = (0..20).map(|i| format!("w{i}")).collect();
    let file = mixed_file(&env, &shell, &["bad1", "bad2"]);
    // A generous bound: twenty runtimes starting on a busy machine are slow, not broken.
    let out = swarm_on(
        &env,
        &tmux,
        &broken,
        &["launch", "--wait", "60", file.to_str().unwrap()],
    )
    .code(1);
    out.stderr_has("swarm: 2 of 22 teammates of team t did not come up:\n")
        .stderr_has("  bad1: its process exited")
        .stderr_has("  bad2: its process exited")
        .stderr_has("The other 20 keep running.");
    let doc = status(&env, &tmux);
    for name in &shell {
        assert!(running(&doc, name), "{name} runs: {doc}");
    }
    env.swarm(["down", "--force", "--timeout", "20"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
}

#[test]
fn in_process_a_teammate_that_exits_at_once_is_named_with_its_log_and_the_launch_fails() {
    let env = Env::new();
    let broken = broken_claude(&env);
    let file = mixed_file(&env, &["steady".to_string()], &["broken"]);
    let mut launch = env
        .swarm([
            "launch",
            "--backend",
            "in-process",
            "--shutdown-timeout",
            "5",
            file.to_str().unwrap(),
        ])
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", &broken)
        .live();
    launch.expect("swarm: 1 of 2 teammates of team t did not come up:");
    launch.expect("  broken: its process exited with status 3; its last output:");
    launch.expect("    | fake claude: cannot start, no API key");
    launch.expect("The other one keeps running.");
    let doc = env.swarm(["--json", "status"]).ok().json();
    assert_eq!(member(&doc, "steady")["liveness"], "alive", "{doc}");
    // The launcher stays with the one that runs until Ctrl-C, then exits non-zero.
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(launch.child.id() as i32, libc::SIGINT);
    }
    assert_eq!(launch.wait(Duration::from_secs(60)), Some(1));
}

#[test]
fn a_dozen_teammates_that_print_why_and_exit_at_once_each_keep_that_line_on_their_pane() {
    // tmux closes a pane's terminal as soon as its process exits and drops what it had not read:
    // with the agent exec'd in the sandbox, lines like this one were lost on a busy machine (on
    // 1 to 10 panes of 12 in a launch), and the launch's report then had no reason to give.
    let env = Env::new();
    let tmux = Tmux::new();
    let crasher = write_script(
        &env.path("crasher"),
        "#!/bin/sh\nfor a in \"$@\"; do [ \"$prev\" = --agent-name ] && name=\"$a\"; prev=\"$a\"; done\n\
         echo \"fake claude $name: cannot start\"\nexit 3\n",
    );
    let names: Vec<String> = (1..=12).map(|i| format!("c{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let file = mixed_file(&env, &[], &refs);
    swarm_on(
        &env,
        &tmux,
        &crasher,
        &[
            "launch",
            "--no-wait",
            "--no-lead-pane",
            file.to_str().unwrap(),
        ],
    )
    .ok();
    // tmux can show a pane dead a moment before it has its exit status.
    let doc = eventually(
        Duration::from_secs(60),
        "every pane dead with status 3",
        || {
            let doc = status(&env, &tmux);
            names
                .iter()
                .all(|n| member(&doc, n)["pane"] == json!({"state": "dead", "code": 3}))
                .then_some(doc)
        },
    );
    for name in &names {
        let pane = member(&doc, name)["paneId"].as_str().unwrap().to_string();
        let screen = tmux
            .cmd(["capture-pane", "-p", "-S", "-", "-t", &pane])
            .stdout;
        assert!(
            screen.contains(&format!("fake claude {name}: cannot start")),
            "{name}'s pane lost its last line:\n{screen}"
        );
    }
}
