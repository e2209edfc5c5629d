//! In-process teammates: children of a foreground `swarm launch` in their own process groups,
//! shut down on Ctrl-C (asked first, then killed), and a launch that returns once every
//! teammate has exited.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{answer_shutdown, fake_agent, wait_for_file, without_forwarded_env};
use crate::support::*;

/// The fake agent's first line: its pid into `out/<name>.pid`, written aside and renamed, as
/// the fake agent writes its other files (a reader that sees the file sees the whole pid).
const WRITES_ITS_PID: &str =
    r#"echo "$$" > "$out/pid.$name"; mv "$out/pid.$name" "$out/$name.pid""#;

#[test]
fn in_process_teammates_are_children_and_ctrl_c_shuts_them_down() {
    let env = Env::new();
    let agent = fake_agent(
        &env,
        &format!(
            r#"{WRITES_ITS_PID}
case "$name" in
  polite) {approve} ;;
  *) trap 'echo got TERM' TERM; while true; do sleep 0.2; done ;;
esac"#,
            approve = answer_shutdown("approve"),
        ),
    );
    let cmd = env
        .swarm([
            "launch",
            "--backend",
            "in-process",
            "--shutdown-timeout",
            "2",
            "--teammate",
            "polite=go",
            "--teammate",
            "stubborn=go",
        ])
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent);
    let mut child = without_forwarded_env(cmd).spawn();
    wait_for_file(&env.path("out/polite.pid"));
    wait_for_file(&env.path("out/stubborn.pid"));
    // The child can write its pid file before the launcher has recorded its pid in the roster.
    let config = eventually(Duration::from_secs(20), "both pids in the roster", || {
        let config = read_json(&env.path("teams/t/config.json"));
        ["polite", "stubborn"]
            .iter()
            .all(|n| member(&config, n)["swarmPid"].is_u64())
            .then_some(config)
    });
    for n in ["polite", "stubborn"] {
        let m = member(&config, n);
        assert_eq!(m["backendType"], "in-process");
        assert_eq!(m["tmuxPaneId"], "in-process");
        assert_eq!(m["isActive"], true);
        let recorded = m["swarmPid"].as_u64().unwrap();
        // Contained, the fake's `$$` is its pid in its own namespace: it is found from here
        // (the one whose parent is not the fake too: its `$(...)` forks copies of itself).
        let fake = eventually(Duration::from_secs(20), "the fake's process", || {
            let pids = pids_running(&agent, &["--agent-name", n]);
            pids.iter()
                .copied()
                .find(|p| !pids.contains(&parent_of(*p)))
        });
        // SAFETY: getpgid on a pid we started.
        assert_eq!(
            unsafe { libc::getpgid(fake) },
            recorded as i32,
            "the roster has the leader of the teammate's process group"
        );
        // Its own process group, so the terminal's Ctrl-C reaches only the launcher.
        // SAFETY: getpgid on a pid we started.
        assert_eq!(unsafe { libc::getpgid(recorded as i32) }, recorded as i32);
    }
    let status = env.swarm(["--json", "status"]).ok().json();
    assert_eq!(member(&status, "polite")["pane"]["state"], "alive");

    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let started = Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the launcher did not exit after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = Out::from(child.wait_with_output().unwrap());
    assert_eq!(
        code,
        Some(0),
        "stdout: {}\nstderr: {}",
        out.stdout,
        out.stderr
    );
    for want in [
        "polite: running (pid",
        "shutting down",
        "polite: approved the shutdown",
        "polite: exited with status 0",
        "stubborn: no answer in time",
        "stubborn: killed by signal 9",
        "stubborn: marked inactive",
    ] {
        assert!(
            out.stdout.contains(want),
            "{want:?} missing:\n{}",
            out.stdout
        );
    }
    let config = read_json(&env.path("teams/t/config.json"));
    assert_eq!(member(&config, "polite")["isActive"], false);
    assert_eq!(member(&config, "polite")["swarmExit"], json!({"code": 0}));
    assert_eq!(
        member(&config, "stubborn")["swarmExit"],
        json!({"signal": 9})
    );
    let log = std::fs::read_to_string(env.path("teams/t/logs/stubborn.log")).unwrap();
    assert!(log.contains("fake agent stubborn says hello"), "{log}");
    assert!(log.contains("got TERM"), "SIGTERM came first: {log}");
    let logs = env.swarm(["logs", "polite"]).ok();
    assert!(logs.stdout.contains("fake agent polite says hello"));
    let status = env.swarm(["status"]).ok().stdout;
    assert!(status.contains("stopped (signal 9)"), "{status}");
}

#[test]
fn an_in_process_launch_returns_when_every_teammate_has_exited() {
    let env = Env::new();
    let agent = fake_agent(&env, r#"[ "$name" = bad ] && exit 4; exit 0"#);
    let out = env
        .swarm([
            "launch",
            "--backend",
            "in-process",
            "--teammate",
            "good=go",
            "--teammate",
            "bad=go",
        ])
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
        .code(1);
    assert!(
        out.stdout.contains("bad: exited with status 4"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("good: exited with status 0"),
        "{}",
        out.stdout
    );
    let lead = env.swarm(["--json", "inbox", "team-lead"]).ok().json();
    assert!(lead.as_array().unwrap().iter().any(|m| m["text"]
        .as_str()
        .unwrap()
        .contains("bad is no longer active (its process exited with status 4)")));
}

/// A Ctrl-C that lands while the launch is still starting teammates (the CI failure of
/// `ctrl_c_stops_an_in_process_agent_lead_and_its_teammates`: the lead was up and printing before
/// the launcher caught signals) shuts the team down like a later one, instead of killing the
/// launcher by the default disposition and leaving its children running with no supervisor.
#[test]
fn a_ctrl_c_during_an_in_process_launch_still_shuts_the_teammates_down() {
    let env = Env::new();
    let agent = fake_agent(
        &env,
        &format!(
            r#"{WRITES_ITS_PID}
{approve}"#,
            approve = answer_shutdown("approve"),
        ),
    );
    let cmd = env
        .swarm([
            "launch",
            "--backend",
            "in-process",
            "--teammate",
            "one=go",
            "--teammate",
            "two=go",
        ])
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
        // The launcher sends itself SIGINT once the children exist, before the roster names them.
        .env("SWARM_LAUNCH_FAULT", "interrupt-at:opened");
    let out = without_forwarded_env(cmd).run_within(Duration::from_secs(60));
    assert_eq!(
        out.code, 0,
        "stdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    for name in ["one", "two"] {
        // The children were alive: each wrote its pid and answered the shutdown.
        assert!(env.path(&format!("out/{name}.pid")).is_file());
        assert!(
            out.stdout
                .contains(&format!("{name}: approved the shutdown")),
            "{}",
            out.stdout
        );
        let left = pids_running(&agent, &["--agent-name", name]);
        assert!(
            left.is_empty(),
            "{name} ({left:?}) still runs after the launcher exited"
        );
        let config = read_json(&env.path("teams/t/config.json"));
        assert_eq!(member(&config, name)["isActive"], false);
    }
}

/// The parent of `pid`, from /proc (0 once it is gone).
fn parent_of(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().nth(1))
        .and_then(|p| p.parse().ok())
        .unwrap_or(0)
}
