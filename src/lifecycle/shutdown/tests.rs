//! The shutdown's own tests: which replies count, how outcomes read, when a member that
//! ended with no answer is called exited.

use super::*;
use crate::store::fixture::team_with;

#[test]
fn replies_must_match_the_request_and_the_sender() {
    let (_dir, store, team) = team_with(&["coder", "mallory"]);
    let coder: AgentName = "coder".parse().unwrap();
    let id = send_shutdown_request(&store, &team, &coder, None, None).unwrap();
    assert!(
        id.starts_with("shutdown-") && id.ends_with("@coder"),
        "{id}"
    );
    let mb = Mailbox::new(&store, &team);
    let lead = AgentName::lead();
    let approve = |from: &str, inner_from: &str, rid: &str| {
        let text = serde_json::json!({"type": "shutdown_approved", "requestId": rid,
            "from": inner_from, "timestamp": "t"})
        .to_string();
        InboxMessage::new(&crate::store::fixture::agent(from), text)
    };
    mb.send(&lead, approve("mallory", "coder", &id)).unwrap();
    mb.send(&lead, approve("coder", "coder", "shutdown-1@coder"))
        .unwrap();
    assert_eq!(Replies::read(&store, &team).unwrap().of(&coder, &id), None);
    let mut answer = approve("coder", "coder", &id);
    answer.read = true; // a lead console already delivered it
    mb.send(&lead, answer).unwrap();
    assert_eq!(
        Replies::read(&store, &team).unwrap().of(&coder, &id),
        Some(ShutdownReply::Approved)
    );
}

#[test]
fn outcomes_serialize_as_they_always_did() {
    let outcome = |result: ShutdownResult| ShutdownOutcome {
        name: "coder".into(),
        outcome: result,
        request_id: Some("shutdown-1@coder".into()),
        killed: false,
        retired: false,
        unidentified: false,
        released: vec![],
        worktree: None,
    };
    let rejected = outcome(ShutdownResult::Rejected {
        reason: "busy".into(),
    });
    assert_eq!(
        serde_json::to_string(&rejected).unwrap(),
        r#"{"name":"coder","result":"rejected","reason":"busy","requestId":"shutdown-1@coder","killed":false,"retired":false,"released":[]}"#
    );
    assert_eq!(
        serde_json::to_string(&outcome(ShutdownResult::TimedOut)).unwrap(),
        r#"{"name":"coder","result":"timed_out","requestId":"shutdown-1@coder","killed":false,"retired":false,"released":[]}"#
    );
}

#[test]
fn a_member_on_another_host_that_ended_with_no_answer_in_is_called_exited_only_after_the_grace() {
    let (_dir, store, team) = team_with(&["coder"]);
    let coder: AgentName = "coder".parse().unwrap();
    let mut local = Stopping::new(coder.clone());
    local
        .ask(&store, &team, None, Duration::from_secs(1))
        .unwrap();
    let none = Replies::default();
    assert!(local
        .check(&store, &team, &none, Duration::ZERO, || Ok(true))
        .unwrap());
    assert_eq!(local.result, Some(ShutdownResult::Exited));
    let mut remote = Stopping::new(coder.clone());
    remote
        .ask(&store, &team, None, Duration::from_secs(1))
        .unwrap();
    let grace = Duration::from_millis(300);
    assert!(
        !remote
            .check(&store, &team, &none, grace, || Ok(true))
            .unwrap(),
        "not yet"
    );
    // Its answer, come home with the relay after its end was seen: it counts.
    let id = remote.request_id.clone().unwrap();
    let text = serde_json::json!({"type": "shutdown_approved", "requestId": id,
        "from": "coder", "timestamp": "t"})
    .to_string();
    Mailbox::new(&store, &team)
        .send(&AgentName::lead(), InboxMessage::new(&coder, text))
        .unwrap();
    assert!(remote
        .check(&store, &team, &none, grace, || Ok(true))
        .unwrap());
    assert_eq!(remote.result, Some(ShutdownResult::Approved));
    // With no answer, the grace runs out.
    let mut silent = Stopping::new(coder);
    silent
        .ask(&store, &team, None, Duration::from_secs(1))
        .unwrap();
    assert!(!silent
        .check(&store, &team, &none, grace, || Ok(true))
        .unwrap());
    std::thread::sleep(grace);
    assert!(silent
        .check(&store, &team, &none, grace, || Ok(true))
        .unwrap());
    assert_eq!(silent.result, Some(ShutdownResult::Exited));
}
