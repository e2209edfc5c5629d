//! A running teammate meets a damaged store (issue 10): a FIFO where the lead's inbox belongs is
//! moved aside and the teammate keeps working and reporting.

use super::{liveness, recorder, refs, send, start, to_lead, LONG};
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
    let nul =
        serde_json::json!([{"from": "team-lead", "text": "before\u{0}after", "timestamp": "t"}]);
    let inbox = env.path("teams/t/inboxes/a.json");
    let mut all: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(&inbox).unwrap()).unwrap();
    all.extend(nul.as_array().unwrap().iter().cloned());
    let tmp = env.path("inbox.tmp");
    std::fs::write(&tmp, serde_json::to_vec(&all).unwrap()).unwrap();
    std::fs::rename(&tmp, &inbox).unwrap();
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
