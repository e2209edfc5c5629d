//! The teammate runtime end to end: real `swarm teammate` processes (shell agents and fake
//! agent CLIs made of `sh -c`), driven the way a lead drives them, through inboxes and tasks.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use swarm::store::liveness::{probe, Liveness};
use swarm::store::names::{AgentName, TeamName};
use swarm::store::paths::Store;

use crate::support::*;

const LONG: Duration = Duration::from_secs(30);

/// A running `swarm teammate`, killed on drop; its pane output goes to a file.
struct Mate {
    child: Child,
    name: String,
    log: PathBuf,
}

impl Mate {
    fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for the exit (panics after `timeout`).
    #[track_caller]
    fn exit(&mut self, timeout: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if start.elapsed() > timeout {
                panic!(
                    "{} did not exit within {timeout:?}; pane:\n{}",
                    self.name,
                    self.output()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }
}

impl Drop for Mate {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn store(env: &Env) -> Store {
    Store::new(env.root())
}

fn liveness(env: &Env, name: &str) -> Liveness {
    let team: TeamName = "t".parse().unwrap();
    let agent: AgentName = name.parse().unwrap();
    probe(&store(env), &team, &agent).unwrap()
}

/// `swarm teammate` for member `name` of team `t`, with `args` after the identity flags.
fn teammate_cmd(env: &Env, name: &str, args: &[&str]) -> Swarm {
    let id = format!("{name}@t");
    let mut s = env.swarm([
        "teammate",
        "--agent-id",
        &id,
        "--agent-name",
        name,
        "--team-name",
        "t",
        "--agent-color",
        "blue",
        "--parent-session-id",
        "session-1",
    ]);
    s.cmd.args(args);
    s
}

/// Starts a teammate and waits until it holds its liveness lock.
#[track_caller]
fn start(env: &Env, name: &str, args: &[&str]) -> Mate {
    start_with(env, name, args, &[])
}

#[track_caller]
fn start_with(env: &Env, name: &str, args: &[&str], vars: &[(&str, &str)]) -> Mate {
    let log = env.path(&format!("{name}.pane"));
    let mut s = teammate_cmd(env, name, args);
    for (k, v) in vars {
        s.cmd.env(k, v);
    }
    let file = File::create(&log).unwrap();
    s.cmd
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file);
    let mut mate = Mate {
        child: s.cmd.spawn().expect("spawn swarm teammate"),
        name: name.to_string(),
        log,
    };
    eventually(LONG, &format!("{name} to hold its liveness lock"), || {
        if let Some(status) = mate.child.try_wait().unwrap() {
            panic!("{name} exited early ({status}):\n{}", mate.output());
        }
        (liveness(env, name) == Liveness::Alive).then_some(())
    });
    mate
}

fn lead_inbox(env: &Env) -> Vec<Value> {
    inbox(env, "team-lead")
}

fn inbox(env: &Env, name: &str) -> Vec<Value> {
    let path = env.path(&format!("teams/t/inboxes/{name}.json"));
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice::<Vec<Value>>(&bytes).unwrap_or_default(),
        Err(_) => vec![],
    }
}

/// Protocol messages of `kind` in the lead's inbox, parsed from their `text`.
fn to_lead(env: &Env, kind: &str) -> Vec<Value> {
    lead_inbox(env)
        .iter()
        .filter_map(|m| serde_json::from_str::<Value>(m["text"].as_str()?).ok())
        .filter(|p| p["type"] == kind)
        .collect()
}

fn task(env: &Env, id: &str) -> Value {
    env.swarm(["--json", "task", "show", id]).ok().json()
}

fn send(env: &Env, to: &str, text: &str) {
    env.swarm(["send", "--to", to, text]).ok();
}

fn send_protocol(env: &Env, to: &str, payload: Value) {
    send(env, to, &payload.to_string());
}

fn shutdown_request(name: &str) -> Value {
    json!({"type": "shutdown_request", "requestId": format!("shutdown-1@{name}"),
           "from": "team-lead", "reason": "done", "timestamp": "2026-01-01T00:00:00.000Z"})
}

/// Shell-quotes a path for a task description.
fn q(path: &Path) -> String {
    format!("'{}'", path.display())
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// A fake agent CLI: appends each prompt (its last argument) to `prompts`, separated by a
/// `=====` line, then runs `then`.
fn recorder(prompts: &Path, then: &str) -> Vec<String> {
    vec![
        "--".into(),
        "sh".into(),
        "-c".into(),
        format!("printf '%s\\n=====\\n' \"$1\" >> {}; {then}", q(prompts)),
        "sh".into(),
    ]
}

fn prompts(path: &Path) -> Vec<String> {
    read(path)
        .split("\n=====\n")
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// True once `pid` is gone (or a zombie nobody reaped yet).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .unwrap()
            .trim_start()
            .starts_with('Z'),
    }
}

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
    assert_eq!(liveness(&env, "a"), Liveness::Dead);
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
fn plan_mode_waits_for_approval_and_rejection_feedback_reaches_the_next_turn() {
    let env = Env::with_team(&["a"]);
    let prompts_file = env.path("prompts");
    // Each turn prints "plan vN", N being the number of prompts recorded so far.
    let agent = recorder(
        &prompts_file,
        &format!("echo \"plan v$(grep -c '^=====$' {})\"", q(&prompts_file)),
    );
    let mut args = vec!["--plan-mode-required"];
    args.extend(refs(&agent));
    let _mate = start(&env, "a", &args);
    env.swarm(["task", "create", "later", "--description", "after the plan"])
        .ok();
    send(&env, "a", "Build the parser");

    let first = eventually(LONG, "the first plan request", || {
        to_lead(&env, "plan_approval_request").into_iter().next()
    });
    assert_eq!(first["from"], "a");
    assert_eq!(first["planContent"].as_str().unwrap().trim(), "plan v1");
    let id1 = first["requestId"].as_str().unwrap().to_string();
    assert!(
        id1.starts_with("plan_approval-") && id1.ends_with("@a@t"),
        "{id1}"
    );
    let plan_file = PathBuf::from(first["planFilePath"].as_str().unwrap());
    assert_eq!(plan_file, env.path("teams/t/plans/a.md"));
    assert_eq!(read(&plan_file).trim(), "plan v1");
    let p = prompts(&prompts_file);
    assert!(p[0].contains("Build the parser") && p[0].contains("plan mode"));
    assert_eq!(
        task(&env, "1")["status"],
        "pending",
        "no task work before approval"
    );

    // A response from a teammate, or for another request, changes nothing.
    send_protocol(
        &env,
        "a",
        json!({"type": "plan_approval_response", "requestId": "plan_approval-1@a@t",
               "approved": true, "timestamp": "t"}),
    );
    send_protocol(
        &env,
        "a",
        json!({"type": "plan_approval_response", "requestId": id1, "approved": false,
               "feedback": "Smaller steps, and tests first", "timestamp": "t"}),
    );
    let second = eventually(LONG, "the revised plan", || {
        to_lead(&env, "plan_approval_request").get(1).cloned()
    });
    assert_eq!(second["planContent"].as_str().unwrap().trim(), "plan v2");
    let p = prompts(&prompts_file);
    assert_eq!(p.len(), 2);
    assert!(p[1].contains("Build the parser"));
    assert!(p[1].contains("Smaller steps, and tests first"), "{}", p[1]);
    assert!(
        p[1].contains("plan v1"),
        "the rejected plan is shown: {}",
        p[1]
    );
    assert!(
        !p[1].contains("swarm task claim"),
        "the appendix is for the first turn only"
    );
    assert_eq!(task(&env, "1")["status"], "pending");

    send_protocol(
        &env,
        "a",
        json!({"type": "plan_approval_response", "requestId": second["requestId"],
               "approved": true, "feedback": "go", "timestamp": "t"}),
    );
    eventually(LONG, "the task to be done after approval", || {
        (task(&env, "1")["status"] == "completed").then_some(())
    });
    let p = prompts(&prompts_file);
    assert_eq!(p.len(), 4, "plan, revised plan, execution, task: {p:#?}");
    assert!(p[2].contains("approved your plan") && p[2].contains("plan v2"));
    assert!(p[2].contains("Build the parser"));
    assert!(p[3].starts_with("Complete task #1: later\n\nafter the plan"));
    assert_eq!(to_lead(&env, "plan_approval_request").len(), 2);
}

#[test]
fn the_permission_hook_asks_the_lead_and_obeys_approve_and_deny_from_another_process() {
    let env = Env::with_team(&["a"]);
    // The teammate's runtime keeps the lead's answers out of its agent's turns.
    let _mate = start(&env, "a", &["--agent", "shell"]);
    let hook = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/claude-permission-hook");
    let run_hook = |decide: &dyn Fn(&str)| -> Value {
        let mut child = std::process::Command::new(&hook)
            .env("SWARM_BIN", BIN)
            .env("SWARM_ROOT", env.root())
            .env("SWARM_TEAM", "t")
            .env("SWARM_AGENT_NAME", "a")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let input = json!({"session_id": "s", "hook_event_name": "PreToolUse",
                           "tool_name": "Bash", "tool_input": {"command": "rm -rf build"},
                           "tool_use_id": "toolu_1"});
        std::io::Write::write_all(
            &mut child.stdin.take().unwrap(),
            input.to_string().as_bytes(),
        )
        .unwrap();
        let id = eventually(LONG, "the request to be pending", || {
            let list = env.swarm(["--json", "permission", "list"]).ok().json();
            list[0]["id"].as_str().map(str::to_string)
        });
        decide(&id);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        serde_json::from_slice(&out.stdout).unwrap()
    };

    let allowed = run_hook(&|id| {
        env.swarm(["permission", "approve", id, "--feedback", "fine"])
            .ok();
    });
    assert_eq!(
        allowed,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
               "permissionDecision": "allow",
               "permissionDecisionReason": "approved by team-lead: fine"}})
    );
    let denied = run_hook(&|id| {
        env.swarm(["permission", "deny", id, "--feedback", "not the build dir"])
            .ok();
    });
    assert_eq!(denied["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(
        denied["hookSpecificOutput"]["permissionDecisionReason"],
        "denied by team-lead: not the build dir"
    );
    let requests = to_lead(&env, "permission_request");
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["tool_name"], "Bash");
    assert_eq!(requests[0]["description"], "rm -rf build");
    assert_eq!(requests[0]["tool_use_id"], "toolu_1");

    eventually(LONG, "the runtime to consume both answers", || {
        let answers = inbox(&env, "a");
        (answers.len() == 2 && answers.iter().all(|m| m["read"] == true)).then_some(())
    });
    assert!(
        to_lead(&env, "idle_notification").is_empty(),
        "an answer is not a turn"
    );

    // Outside a team the hook has no opinion.
    let out = std::process::Command::new(&hook)
        .env("SWARM_BIN", BIN)
        .env_remove("SWARM_TEAM")
        .env_remove("SWARM_AGENT_NAME")
        .env("SWARM_ROOT", env.root())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
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
    assert_eq!(liveness(&env, "a"), Liveness::Dead);
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
fn messages_that_arrive_during_a_turn_are_delivered_next_turn_none_lost() {
    let env = Env::with_team(&["a"]);
    let (prompts_file, gate) = (env.path("prompts"), env.path("gate"));
    // The first turn blocks until the test opens the gate, so the other messages surely
    // arrive while it runs.
    let agent = recorder(
        &prompts_file,
        &format!(
            "if [ $(grep -c '^=====$' {p}) = 1 ]; then while [ ! -e {g} ]; do sleep 0.05; done; fi; echo ok",
            p = q(&prompts_file),
            g = q(&gate)
        ),
    );
    let _mate = start(&env, "a", &refs(&agent));
    send(&env, "a", "m1");
    eventually(LONG, "the first turn", || {
        (prompts(&prompts_file).len() == 1).then_some(())
    });
    for m in ["m2", "m3", "m4"] {
        send(&env, "a", m);
    }
    std::thread::sleep(Duration::from_millis(300));
    let unread: Vec<Value> = inbox(&env, "a")
        .into_iter()
        .filter(|m| m["read"] == false)
        .collect();
    assert_eq!(unread.len(), 3, "not delivered while the turn runs");
    std::fs::write(&gate, "").unwrap();
    eventually(LONG, "the second turn to finish", || {
        (to_lead(&env, "idle_notification").len() == 2).then_some(())
    });
    let p = prompts(&prompts_file);
    assert_eq!(p.len(), 2, "{p:#?}");
    let block = |m: &str| {
        format!("<teammate-message teammate_id=\"team-lead\" color=\"red\">{m}</teammate-message>")
    };
    assert!(p[0].starts_with(&block("m1")));
    assert!(!p[0].contains("m2"));
    assert!(p[1].starts_with(&format!(
        "{}\n\n{}\n\n{}",
        block("m2"),
        block("m3"),
        block("m4")
    )));
    let all = read(&prompts_file);
    for m in ["m1", "m2", "m3", "m4"] {
        assert_eq!(
            all.matches(&format!(">{m}<")).count(),
            1,
            "{m} delivered once"
        );
    }
    assert!(inbox(&env, "a").iter().all(|m| m["read"] == true));
    let idle = to_lead(&env, "idle_notification");
    assert_eq!(idle[1]["idleReason"], "available");
    assert_eq!(idle[1]["result"], "ok\n");
}

#[test]
fn turns_get_teammate_message_blocks_identity_env_and_a_first_turn_guide() {
    let env = Env::with_team(&["a", "b"]);
    let (prompts_file, env_file) = (env.path("prompts"), env.path("env"));
    let agent = recorder(
        &prompts_file,
        &format!(
            "echo \"$SWARM_ROOT|$SWARM_TEAM|$SWARM_AGENT_NAME|$SWARM_AGENT_ID|$(pwd)\" >> {}",
            q(&env_file)
        ),
    );
    let work = env.path("work");
    std::fs::create_dir(&work).unwrap();
    let mut args = vec!["--cwd", work.to_str().unwrap()];
    args.extend(refs(&agent));
    let _mate = start(&env, "a", &args);
    env.swarm([
        "send",
        "--to",
        "a",
        "--summary",
        "parser \"review\"",
        "Review the parser",
    ])
    .ok();
    eventually(LONG, "the first turn", || {
        (prompts(&prompts_file).len() == 1).then_some(())
    });
    env.swarm([
        "send",
        "--to",
        "a",
        "--from",
        "b",
        "I am done with the lexer",
    ])
    .ok();
    eventually(LONG, "the second turn", || {
        (prompts(&prompts_file).len() == 2).then_some(())
    });
    let p = prompts(&prompts_file);
    assert!(p[0].starts_with(
        "<teammate-message teammate_id=\"team-lead\" color=\"red\" summary=\"parser &quot;review&quot;\">Review the parser</teammate-message>\n\n---\nYou are \"a\", a teammate in the swarm team \"t\""
    ), "{}", p[0]);
    assert!(p[0].contains("swarm send --to team-lead"));
    assert!(p[0].contains("swarm task claim ID"));
    assert_eq!(
        p[1],
        "<teammate-message teammate_id=\"b\" color=\"blue\">I am done with the lexer</teammate-message>"
    );
    let first_env = read(&env_file).lines().next().unwrap().to_string();
    assert_eq!(
        first_env,
        format!("{}|t|a|a@t|{}", env.root().display(), work.display())
    );
}

#[test]
fn the_prompt_can_replace_a_placeholder_or_go_to_stdin() {
    let env = Env::with_team(&["a", "b", "c"]);
    let (argv_file, stdin_file, epipe) = (env.path("argv"), env.path("stdin"), env.path("epipe"));
    let _a = start(
        &env,
        "a",
        &[
            "--",
            "sh",
            "-c",
            &format!("printf '%s|%s|%s' \"$#\" \"$1\" \"$2\" > {}", q(&argv_file)),
            "sh",
            "--prompt={prompt}",
            "--flag",
        ],
    );
    let _b = start(
        &env,
        "b",
        &[
            "--prompt-via",
            "stdin",
            "--",
            "sh",
            "-c",
            &format!("cat > {}; echo \" args=$#\" >> {0}", q(&stdin_file)),
            "sh",
        ],
    );
    // An agent that never reads its stdin: the prompt write fails with EPIPE, harmlessly.
    let _c = start(
        &env,
        "c",
        &[
            "--prompt-via",
            "stdin",
            "--",
            "sh",
            "-c",
            &format!("echo ran >> {}", q(&epipe)),
            "sh",
        ],
    );
    send(&env, "a", "hello a");
    send(&env, "b", "hello b");
    let big = "x".repeat(900_000);
    env.swarm(["send", "--to", "c", "-"]).stdin(big).ok();
    eventually(LONG, "c's first turn", || {
        (read(&epipe) == "ran\n").then_some(())
    });
    // c survived the EPIPE and takes the next turn.
    send(&env, "c", "small");
    eventually(LONG, "a's and b's turns and c's two", || {
        let idle = to_lead(&env, "idle_notification");
        let from = |n: &str| idle.iter().filter(|i| i["from"] == n).count();
        (from("a") == 1 && from("b") == 1 && from("c") == 2).then_some(())
    });
    assert_eq!(read(&epipe), "ran\nran\n");
    let argv = read(&argv_file);
    let (count, rest) = argv.split_once('|').unwrap();
    assert_eq!(
        count, "2",
        "the placeholder replaces an argument, nothing is appended"
    );
    assert!(rest.starts_with("--prompt=<teammate-message teammate_id=\"team-lead\" color=\"red\">hello a</teammate-message>"));
    assert!(rest.ends_with("|--flag"));
    let stdin = read(&stdin_file);
    assert!(stdin.starts_with(
        "<teammate-message teammate_id=\"team-lead\" color=\"red\">hello b</teammate-message>"
    ));
    assert!(stdin.ends_with(" args=0\n"));
    assert!(liveness(&env, "c") == Liveness::Alive);
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
fn a_teammate_refuses_to_start_off_the_roster_with_a_wrong_id_or_twice() {
    let env = Env::with_team(&["a"]);
    let before = env.snapshot();
    let refuse = |args: &[&str], needle: &str| {
        let mut s = env.swarm(["teammate"]);
        s.cmd.args(args);
        s.code(2).stderr_has(needle);
    };
    let id = |name: &str, team: &str| {
        vec![
            "--agent-id".to_string(),
            format!("{name}@{team}"),
            "--agent-name".into(),
            name.into(),
            "--team-name".into(),
            team.into(),
        ]
    };
    let with = |base: Vec<String>, more: &[&str]| -> Vec<String> {
        base.into_iter()
            .chain(more.iter().map(|s| s.to_string()))
            .collect()
    };
    refuse(
        &refs(&with(id("ghost", "t"), &["--agent", "shell"])),
        "is not a member of team",
    );
    refuse(
        &refs(&with(id("a", "nope"), &["--agent", "shell"])),
        "does not exist",
    );
    refuse(
        &[
            "--agent-id",
            "a@other",
            "--agent-name",
            "a",
            "--team-name",
            "t",
            "--agent",
            "shell",
        ],
        "should be a@t",
    );
    refuse(
        &refs(&with(id("team-lead", "t"), &["--agent", "shell"])),
        "reserved",
    );
    refuse(&refs(&id("a", "t")), "--agent shell");
    refuse(
        &refs(&with(id("a", "t"), &["--", "no-such-agent-cli-xyz"])),
        "not found",
    );
    assert_eq!(env.snapshot(), before, "a refused start writes nothing");

    let _running = start(&env, "a", &["--agent", "shell"]);
    refuse(
        &refs(&with(id("a", "t"), &["--agent", "shell"])),
        "already running",
    );
}

#[test]
fn an_idle_teammate_sleeps_and_wakes_fast_on_a_message() {
    let env = Env::with_team(&["a"]);
    // With the fallback re-scan a minute away, only a file-system event can wake it in time.
    let mate = start_with(
        &env,
        "a",
        &["--agent", "shell"],
        &[("SWARM_RESCAN_MS", "60000")],
    );
    std::thread::sleep(Duration::from_secs(2));
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", mate.pid())).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // clock ticks are 1/100 s; a busy loop burns ~200 in two seconds.
    assert!(ticks < 50, "the idle teammate used {ticks} ticks of CPU");

    let mut latencies = Vec::new();
    for i in 0..5 {
        let sent = Instant::now();
        send(&env, "a", &format!("$ echo ping{i}"));
        eventually(LONG, "the reply", || {
            let done = to_lead(&env, "idle_notification").into_iter().any(|n| {
                n["result"]
                    .as_str()
                    .is_some_and(|r| r.contains(&format!("ping{i}")))
            });
            done.then_some(())
        });
        latencies.push(sent.elapsed());
    }
    latencies.sort();
    eprintln!(
        "idle teammate: {ticks} CPU ticks in 2 s; message -> idle_notification round trip median {:.1?} (max {:.1?}, includes one `swarm send` process)",
        latencies[2], latencies[4]
    );
    assert!(latencies[2] < Duration::from_secs(10), "{latencies:?}");
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
    assert_eq!(liveness(&env, "a"), Liveness::Dead);
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
