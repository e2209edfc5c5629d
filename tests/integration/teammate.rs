//! The teammate runtime end to end: real `swarm teammate` processes (shell agents and fake
//! agent CLIs made of `sh -c`), driven the way a lead drives them, through inboxes and tasks.
//! This file holds the harness the topics share: a running teammate, its liveness as `swarm
//! status` reports it, and readers for inboxes, tasks and recorded prompts.

mod busy_shutdown;
mod damaged;
mod deleted_lock;
mod escaping;
mod forgery;
mod lifecycle;
mod limits;
mod memory;
mod permissions;
mod replay;
mod sessions;
mod shutdown;
mod startup;
mod tasks;
mod timeline;
mod turns;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

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

/// The liveness of `name`'s runtime as `swarm status` reports it, judged by its liveness lock:
/// "alive" (held), "dead" (free, the runtime ran once) or "unknown" (never ran).
fn liveness(env: &Env, name: &str) -> String {
    let status = env.swarm(["--json", "status"]).ok().json();
    member(&status, name)["liveness"]
        .as_str()
        .unwrap_or_else(|| panic!("no liveness for {name} in {status}"))
        .to_string()
}

/// `swarm teammate` for member `name` of team `t`, with `args` after the identity flags.
pub(crate) fn teammate_cmd(env: &Env, name: &str, args: &[&str]) -> Swarm {
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
    // Started: it holds its liveness lock and has written the last of its start (the events
    // record, after its bell and watches), so a test's snapshot taken now sees nothing of it
    // still being written (a bell added under a refused second start's snapshot, once).
    eventually(
        LONG,
        &format!("{name} to hold its liveness lock and start"),
        || {
            if let Some(status) = mate.child.try_wait().unwrap() {
                panic!("{name} exited early ({status}):\n{}", mate.output());
            }
            let started = events_record(env, name).is_some();
            (started && liveness(env, name) == "alive").then_some(())
        },
    );
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

/// A shutdown request as `swarm shutdown --force` sends it: no grace, so a running turn is
/// stopped at once (`busy_shutdown` gives one).
fn shutdown_request(name: &str) -> Value {
    json!({"type": "shutdown_request", "requestId": format!("shutdown-1@{name}"),
           "from": "team-lead", "reason": "done", "timestamp": "2026-01-01T00:00:00.000Z",
           "swarmGrace": 0})
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
