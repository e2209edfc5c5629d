//! A sender stopped (SIGSTOP) while it holds an inbox's lock (issue 21 item 7): the next sender
//! and a reader take the lock over once its heartbeat is 2 s stale instead of failing after
//! 30 s, and the stopped sender, resumed, finds its write fenced off, starts again and is
//! delivered exactly once. `SWARM_STOP_WHILE_LOCKED=1` stops a sender on itself just before
//! its rename (the `seams` feature).

use std::process::Child;
use std::time::Duration;

use super::{files_named, read_json_array};
use crate::support::*;

/// Starts a `swarm send` that stops itself holding the inbox lock and waits until it is stopped.
fn stopped_sender(env: &Env, text: &str) -> Child {
    let child = env
        .swarm(["send", "--to", "coder", text])
        .env("SWARM_STOP_WHILE_LOCKED", "1")
        .spawn();
    let pid = child.id();
    eventually(Duration::from_secs(20), "the sender stops itself", || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let state = stat.rsplit_once(") ")?.1.chars().next()?;
        (state == 'T').then_some(())
    });
    child
}

/// Resumes the stopped sender and waits for it to exit 0.
fn resume_and_finish(stopped: &mut KillOnDrop) {
    assert_eq!(
        unsafe { libc::kill(stopped.0.id() as i32, libc::SIGCONT) },
        0
    );
    let status = eventually(Duration::from_secs(60), "the resumed sender exits", || {
        stopped.0.try_wait().unwrap()
    });
    let mut stderr = String::new();
    std::io::Read::read_to_string(stopped.0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "the resumed sender: {status:?}: {stderr}");
}

fn texts(env: &Env) -> Vec<String> {
    read_json_array(&env.path("teams/t/inboxes/coder.json"))
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect()
}

fn assert_nothing_left(env: &Env) {
    let dir = env.path("teams/t/inboxes");
    assert_eq!(files_named(&dir, ".lock"), Vec::<std::path::PathBuf>::new());
    assert_eq!(files_named(&dir, ".tmp-"), Vec::<std::path::PathBuf>::new());
}

#[test]
fn a_stopped_sender_does_not_stall_the_next_one_and_is_delivered_once() {
    let env = Env::with_team(&["coder"]);
    env.swarm(["send", "--to", "coder", "first"]).ok();
    let mut stopped = KillOnDrop(stopped_sender(&env, "stopped"));
    let out = env
        .swarm(["send", "--to", "coder", "next"])
        .run_within(Duration::from_secs(60));
    assert_eq!(out.code, 0, "{out:?}");
    out.stderr_has("swarm: took over the lock on");
    assert_eq!(texts(&env), ["first", "next"]);
    resume_and_finish(&mut stopped);
    assert_eq!(texts(&env), ["first", "next", "stopped"]);
    assert_nothing_left(&env);
}

#[test]
fn a_stopped_sender_does_not_stall_a_reader_marking_read() {
    let env = Env::with_team(&["coder"]);
    env.swarm(["send", "--to", "coder", "first"]).ok();
    let mut stopped = KillOnDrop(stopped_sender(&env, "stopped"));
    let out = env
        .swarm(["inbox", "coder", "--unread", "--mark-read"])
        .run_within(Duration::from_secs(60));
    assert_eq!(out.code, 0, "{out:?}");
    let inbox = read_json_array(&env.path("teams/t/inboxes/coder.json"));
    assert_eq!(inbox.len(), 1);
    assert_eq!(
        inbox[0]["read"], true,
        "marked read while the sender is stopped"
    );
    resume_and_finish(&mut stopped);
    assert_eq!(texts(&env), ["first", "stopped"]);
    assert_nothing_left(&env);
}
