//! Operating a launched team: `swarm status` on teammates that were killed or crashed and on a
//! team's tasks, messages and permissions, the `swarm shutdown` handshake (approve, reject,
//! silence, `--force`), and `swarm attach` putting a terminal on a teammate's pane.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{answer_shutdown, fake_agent, pane_field, swarm_on, wait_for_file};
use crate::support::*;

#[test]
fn a_teammate_killed_from_outside_shows_as_dead_in_status() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(
        &env,
        r#"if [ "$name" = crasher ]; then exit 3; fi; sleep 300"#,
    );
    swarm_on(
        &env,
        &tmux,
        &agent,
        &[
            // The crasher exits at once on purpose: this is about status, not the launch's check.
            "launch",
            "--no-wait",
            "--no-lead-pane",
            "--teammate",
            "victim=go",
            "--teammate",
            "crasher=go",
            "--teammate",
            "survivor=go",
        ],
    )
    .ok();
    wait_for_file(&env.path("out/victim.cwd"));
    let config = read_json(&env.path("teams/t/config.json"));
    let pane = member(&config, "victim")["tmuxPaneId"]
        .as_str()
        .unwrap()
        .to_string();
    let pid: i32 = pane_field(&tmux, &pane, "#{pane_pid}").parse().unwrap();
    // SAFETY: signalling a process this test started (through tmux).
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    // tmux can show a pane dead a moment before it has the exit status (the terminal's end
    // and the process's can reach it in either order): wait for both to be known.
    let start = Instant::now();
    let status = loop {
        let s = env
            .swarm(["--json", "status"])
            .env("SWARM_TMUX_SOCKET", &tmux.socket)
            .ok()
            .json();
        let dead =
            |n: &str, how: Value| member(&s, n)["state"] == "dead" && member(&s, n)["pane"] == how;
        if dead("victim", json!({"state": "dead", "signal": 9}))
            && dead("crasher", json!({"state": "dead", "code": 3}))
        {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "victim not dead by signal 9 or crasher not by exit 3 after 20 s: {s}\npanes: {}",
            tmux.cmd([
                "list-panes",
                "-a",
                "-F",
                "#{pane_id} #{pane_pid} dead=#{pane_dead} status=#{pane_dead_status} \
                 signal=#{pane_dead_signal}"
            ])
            .stdout
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(member(&status, "crasher")["exitCode"], 3);
    assert_eq!(member(&status, "victim")["signal"], 9);
    assert_eq!(member(&status, "victim")["why"], "signal 9");
    assert_eq!(member(&status, "survivor")["state"], "idle");
    assert_eq!(member(&status, "survivor")["pane"]["state"], "alive");
    assert_eq!(member(&status, "survivor")["unread"], 1);
    let text = env
        .swarm(["status"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok()
        .stdout;
    assert!(text.contains("dead (signal 9)"), "{text}");
    assert!(text.contains("dead (exit 3)"), "{text}");
    // The crashed teammate's last output stays on its pane.
    let crasher = member(&config, "crasher")["tmuxPaneId"]
        .as_str()
        .unwrap()
        .to_string();
    // tmux can mark a pane dead before it has read the last of its output from the pty, so the
    // line may land a moment after the pane shows as dead.
    let capture = || {
        tmux.cmd(["capture-pane", "-p", "-S", "-", "-t", &crasher])
            .stdout
    };
    eventually(
        Duration::from_secs(10),
        "the crashed teammate's output on its pane",
        || {
            capture()
                .contains("fake agent crasher says hello")
                .then_some(())
        },
    );
}

#[test]
fn shutdown_handshake_end_to_end() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(
        &env,
        &format!(
            r#"case "$name" in
  polite) {approve} ;;
  grumpy) {reject} ;;
  *) sleep 300 ;;
esac"#,
            approve = answer_shutdown("approve"),
            reject = answer_shutdown("reject"),
        ),
    );
    swarm_on(
        &env,
        &tmux,
        &agent,
        &[
            "launch",
            "--no-lead-pane",
            "--teammate",
            "polite=go",
            "--teammate",
            "grumpy=go",
            "--teammate",
            "silent=go",
        ],
    )
    .ok();
    for n in ["polite", "grumpy", "silent"] {
        wait_for_file(&env.path(&format!("out/{n}.cwd")));
    }
    env.swarm(["task", "create", "parser"]).ok();
    env.swarm(["task", "claim", "1", "--agent", "polite"]).ok();

    let started = Instant::now();
    let out = env
        .swarm(["--json", "shutdown", "--all", "--timeout", "4"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .code(1);
    let elapsed = started.elapsed();
    let outcomes = out.json();
    let by = |n: &str| {
        outcomes
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(by("polite")["result"], "approved");
    assert_eq!(by("polite")["killed"], true);
    assert_eq!(by("polite")["released"], json!(["1"]));
    assert_eq!(by("grumpy")["result"], "rejected");
    assert_eq!(by("grumpy")["reason"], "busy");
    assert_eq!(by("grumpy")["killed"], false);
    assert_eq!(by("silent")["result"], "timed_out");
    assert_eq!(by("silent")["killed"], true);
    assert!(
        elapsed < Duration::from_secs(15),
        "the timeout bounds the wait: {elapsed:?}"
    );
    let request = read_json(&env.path("teams/t/inboxes/polite.json"))
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["text"].as_str().unwrap().contains("shutdown_request"))
        .cloned()
        .unwrap();
    let text: Value = serde_json::from_str(request["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["type"], "shutdown_request");
    assert_eq!(text["from"], "team-lead");
    assert!(text["requestId"].as_str().unwrap().starts_with("shutdown-"));
    assert!(text["requestId"].as_str().unwrap().ends_with("@polite"));

    let config = read_json(&env.path("teams/t/config.json"));
    assert_eq!(member(&config, "polite")["isActive"], false);
    assert_eq!(member(&config, "silent")["isActive"], false);
    assert_eq!(member(&config, "grumpy")["isActive"], true);
    let panes = tmux.cmd(["list-panes", "-a", "-F", "#{pane_title}"]).stdout;
    assert_eq!(panes.trim(), "grumpy", "only the rejecter's pane is left");
    let task = env.swarm(["--json", "task", "show", "1"]).ok().json();
    assert_eq!(task["status"], "pending");
    assert!(task.get("owner").is_none() || task["owner"].is_null());
    let lead = read_json(&env.path("teams/t/inboxes/team-lead.json"));
    let notices: Vec<&str> = lead
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["from"] == "system")
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert!(
        notices
            .iter()
            .any(|t| t.contains("polite") && t.contains("#1") && t.contains("shutdown approved")),
        "{notices:?}"
    );
    assert!(notices.iter().any(|t| t.contains("silent")), "{notices:?}");

    // --force stops the one that said no.
    let out = env
        .swarm(["shutdown", "grumpy", "--force", "--timeout", "4"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
    assert!(
        out.stdout
            .contains("grumpy: rejected the shutdown (busy); stopped"),
        "{}",
        out.stdout
    );
    assert_eq!(
        member(&read_json(&env.path("teams/t/config.json")), "grumpy")["isActive"],
        false
    );
    env.swarm(["team", "delete"]).ok();
}

#[test]
fn attach_puts_a_terminal_on_the_teammates_pane() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(&env, "sleep 300");
    swarm_on(
        &env,
        &tmux,
        &agent,
        &[
            "launch",
            "--no-lead-pane",
            "--teammate",
            "coder=a",
            "--teammate",
            "tester=b",
        ],
    )
    .ok();
    let config = read_json(&env.path("teams/t/config.json"));
    let tester = member(&config, "tester")["tmuxPaneId"]
        .as_str()
        .unwrap()
        .to_string();
    // `script` gives `swarm attach` (and so `tmux attach`) a terminal.
    let mut script = clean_command("script");
    home_in(&mut script, &env.path("state"));
    let mut attached = script
        .args(["-qc", &format!("'{BIN}' attach tester"), "/dev/null"])
        .env("SWARM_ROOT", env.root())
        .env("SWARM_TEAM", "t")
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("script (util-linux) is installed");
    let client = eventually(Duration::from_secs(20), "a client on swarm-t", || {
        let out = tmux
            .cmd(["list-clients", "-F", "#{session_name} #{pane_id}"])
            .stdout;
        (!out.trim().is_empty()).then(|| out.trim().to_string())
    });
    let (session, pane) = client.split_once(' ').unwrap();
    assert!(session.starts_with("swarm-t-"), "{client}");
    assert_eq!(pane, tester);
    tmux.cmd(["detach-client", "-s", session]);
    let started = Instant::now();
    while attached.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "attach did not return"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    env.swarm(["attach", "nobody"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .not_found("not a member");
}

#[test]
fn status_lists_tasks_unread_pending_permissions_and_quarantined_files() {
    let env = Env::with_team(&["coder"]);
    env.swarm(["task", "create", "parser"]).ok();
    env.swarm(["task", "claim", "1", "--agent", "coder"]).ok();
    env.swarm(["send", "--to", "coder", "hi"]).ok();
    env.swarm([
        "permission",
        "request",
        "--tool",
        "Bash",
        "--from",
        "coder",
        "--description",
        "make",
    ])
    .ok();
    std::fs::write(env.path("teams/t/inboxes/coder.json.corrupt-1"), "x").unwrap();
    let s = env.swarm(["--json", "status"]).ok().json();
    let coder = member(&s, "coder");
    assert_eq!(coder["task"], json!({"id": "1", "subject": "parser"}));
    assert_eq!(coder["unread"], 1);
    assert_eq!(s["pendingPermissions"][0]["toolName"], "Bash");
    assert_eq!(
        s["quarantined"],
        json!(["teams/t/inboxes/coder.json.corrupt-1"])
    );
    let text = env.swarm(["status"]).ok().stdout;
    assert!(text.contains("#1 parser"), "{text}");
    assert!(text.contains("pending permissions: 1"), "{text}");
    assert!(text.contains("coder.json.corrupt-1"), "{text}");
}

#[test]
fn a_restarted_claude_teammate_gets_the_same_identity_flags() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(&env, &answer_shutdown("approve"));
    swarm_on(
        &env,
        &tmux,
        &agent,
        &[
            "launch",
            "--no-lead-pane",
            "--model",
            "sonnet",
            "--permission-mode",
            "acceptEdits",
            "--teammate",
            "first=a",
            "--teammate",
            "coder=b",
            "--",
            "--verbose",
        ],
    )
    .ok();
    let argv = env.path("out/coder.argv");
    wait_for_file(&argv);
    let before = std::fs::read_to_string(&argv).unwrap();
    std::fs::remove_file(&argv).unwrap();
    let out = swarm_on(&env, &tmux, &agent, &["restart", "coder"]).ok();
    assert!(
        out.stdout.contains("coder: stopped (approved)"),
        "{}",
        out.stdout
    );
    wait_for_file(&argv);
    let after = std::fs::read_to_string(&argv).unwrap();
    // Each start stamps `--lead-verify-key <ms>.<key>` anew (issue 25 item 3); the key is the
    // same.
    let unstamped = |argv: &str| {
        let mut words: Vec<String> = argv.lines().map(str::to_string).collect();
        let at = words.iter().position(|w| w == "--lead-verify-key").unwrap();
        let (_, key) = words[at + 1].split_once('.').unwrap();
        words[at + 1] = key.to_string();
        words
    };
    assert_eq!(
        unstamped(&after),
        unstamped(&before),
        "the same argv, identity flags and inherited flags alike"
    );
    assert!(after.contains("--agent-color\ngreen\n"), "{after}");
    assert!(after.contains("--model\nsonnet\n--verbose"), "{after}");
    swarm_on(&env, &tmux, &agent, &["down"]).ok();
}
