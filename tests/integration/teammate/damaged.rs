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
