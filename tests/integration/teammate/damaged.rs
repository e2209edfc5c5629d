//! A running teammate meets a damaged store (issue 10): a FIFO where the lead's inbox belongs is
//! moved aside and the teammate keeps working and reporting; a prompt that cannot be an argument
//! goes on stdin; a message whose agent never started stays unread.

use std::os::unix::fs::PermissionsExt;

use super::{liveness, recorder, refs, send, start, start_with, to_lead, LONG};
use crate::support::*;

#[test]
fn a_fifo_at_the_leads_inbox_does_not_stop_a_running_teammate() {
    let env = Env::with_team(&["a"]);
    let agent = recorder(&env.path("prompts"), "echo ok");
    let mut mate = start(&env, "a", &refs(&agent));
    let inbox = env.path("teams/t/inboxes/team-lead.json");
    std::fs::remove_file(&inbox).unwrap();
    let c = std::ffi::CString::new(inbox.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    send(&env, "a", "go");
    // Reading the FIFO would block this test, so wait for it to be a file again first.
    eventually(LONG, "a's idle notification in a fresh lead inbox", || {
        let fresh = std::fs::symlink_metadata(&inbox).is_ok_and(|m| m.is_file());
        (fresh && !to_lead(&env, "idle_notification").is_empty()).then_some(())
    });
    assert_eq!(liveness(&env, "a"), "alive", "{}", mate.output());
    assert!(mate.child.try_wait().unwrap().is_none());
}

/// A 200 KB message, and one with a NUL byte, cannot be an argument (E2BIG / NUL): the prompt
/// goes on stdin instead, and the agent gets all of it before the message counts as delivered.
#[test]
fn a_prompt_too_big_for_an_argument_reaches_the_agent_on_stdin() {
    let env = Env::with_team(&["a"]);
    let got = env.path("got");
    let script = format!(
        "if [ -n \"$1\" ]; then printf %s \"$1\"; else cat; fi > {}.tmp; mv {}.tmp {}",
        super::q(&got),
        super::q(&got),
        super::q(&got)
    );
    let mut mate = start(&env, "a", &["--", "sh", "-c", &script, "sh"]);
    let big = "y".repeat(200 * 1024);
    env.swarm(["send", "--to", "a", "-"])
        .stdin(big.clone().into_bytes())
        .ok();
    eventually(LONG, "the agent to receive the 200 KB prompt", || {
        std::fs::read_to_string(&got)
            .ok()
            .filter(|p| p.contains(&big))
    });
    std::fs::remove_file(&got).unwrap();
    // Through swarm, which takes the inbox lock: a raw rewrite here could race the runtime's
    // own locked write and be lost.
    env.swarm(["send", "--to", "a", "-"])
        .stdin(b"before\0after".to_vec())
        .ok();
    eventually(
        LONG,
        "the agent to receive the prompt with a NUL byte",
        || {
            std::fs::read(&got)
                .ok()
                .filter(|p| p.windows(12).any(|w| w == b"before\0after"))
        },
    );
    assert!(
        mate.child.try_wait().unwrap().is_none(),
        "{}",
        mate.output()
    );
    eventually(LONG, "both messages marked delivered", || {
        super::inbox(&env, "a")
            .iter()
            .all(|m| m["read"] == true)
            .then_some(())
    });
}

/// A message whose agent never started (the agent program vanished after the runtime came up)
/// is not marked delivered: it stays unread, the runtime does not spin retrying, and the agent
/// gets it once it can start again.
#[test]
fn a_message_is_not_marked_delivered_when_the_agent_cannot_start() {
    let env = Env::with_team(&["a"]);
    let got = env.path("got");
    let agent = env.path("agent.sh");
    let body = format!("#!/bin/sh\nprintf %s \"$1\" > {}\n", super::q(&got));
    std::fs::write(&agent, &body).unwrap();
    make_executable(&agent);
    let agent_s = agent.to_str().unwrap().to_string();
    let mut mate = start_with(&env, "a", &["--", &agent_s], &[("SWARM_RESCAN_MS", "300")]);
    std::fs::remove_file(&agent).unwrap();
    send(&env, "a", "first");
    eventually(LONG, "the failed start to be reported", || {
        mate.output().contains("stay unread").then_some(())
    });
    let unread = |env: &Env| {
        super::inbox(env, "a")
            .iter()
            .filter(|m| m["read"] != true)
            .count()
    };
    assert_eq!(
        unread(&env),
        1,
        "the message the agent never got stays unread"
    );
    assert!(
        mate.child.try_wait().unwrap().is_none(),
        "{}",
        mate.output()
    );
    // No busy loop: over 1.2 s at a 300 ms re-scan, a handful of attempts at most.
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let attempts = mate.output().matches("stay unread").count();
    assert!(
        attempts <= 8,
        "{attempts} attempts in 1.2 s:\n{}",
        mate.output()
    );
    std::fs::write(&agent, &body).unwrap();
    make_executable(&agent);
    eventually(
        LONG,
        "the agent to get the message once it can start",
        || {
            std::fs::read_to_string(&got)
                .ok()
                .filter(|p| p.contains("first"))
        },
    );
    eventually(LONG, "the message marked delivered", || {
        (unread(&env) == 0).then_some(())
    });
}

fn make_executable(path: &std::path::Path) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}
