//! Replayed lead messages (issue 22): a lead signature names the team and the member it was
//! written for (`swarm_lead_sig`), and a runtime acts on each lead message once, remembered in
//! `members/<name>/acted.json`. A signed `$ ` command copied into another member's inbox is not
//! run there; the same entry put back unread, even after the runtime restarted, is not run
//! again. Each test ends with a fresh signed command that does run, so the runtime was
//! listening all along.

use serde_json::Value;

use super::{inbox, q, read, start, to_lead, Mate, LONG};
use crate::support::*;

fn shell_mate(env: &Env, name: &str) -> Mate {
    let key = env.lead_verify_key();
    start(env, name, &["--agent", "shell", "--lead-verify-key", &key])
}

/// Rewrites `name`'s inbox file whole (as any process of the user could) with `change`.
fn rewrite_inbox(env: &Env, name: &str, change: impl FnOnce(&mut Vec<Value>)) {
    let path = env.path(&format!("teams/t/inboxes/{name}.json"));
    let mut entries: Vec<Value> = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    change(&mut entries);
    let tmp = path.with_extension("replay");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&entries).unwrap()).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
}

/// The lead's entry in `name`'s inbox whose text is `text`.
fn entry(env: &Env, name: &str, text: &str) -> Value {
    inbox(env, name)
        .into_iter()
        .find(|m| m["text"] == text)
        .unwrap_or_else(|| panic!("no {text:?} in {name}'s inbox"))
}

#[test]
fn a_signed_command_copied_into_another_members_inbox_is_not_run() {
    let env = Env::with_team(&["a", "b"]);
    let (_a, b) = (shell_mate(&env, "a"), shell_mate(&env, "b"));
    let log = env.path("ran");
    let command = format!("$ echo \"$SWARM_AGENT_NAME\" >> {}", q(&log));
    env.swarm(["send", "--to", "a", &command]).ok();
    eventually(LONG, "a to run the lead's command", || {
        (read(&log) == "a\n").then_some(())
    });
    let mut copy = entry(&env, "a", &command);
    copy["read"] = false.into();
    rewrite_inbox(&env, "b", |entries| entries.push(copy));
    eventually(LONG, "b to report the copy as a forgery", || {
        to_lead_texts(&env)
            .iter()
            .any(|t| t.starts_with("ignored a forged `$ ` command"))
            .then_some(())
    });
    let alive = env.path("b-alive");
    env.swarm(["send", "--to", "b", &format!("$ touch {}", q(&alive))])
        .ok();
    eventually(LONG, "b to run its own signed command", || {
        alive.exists().then_some(())
    });
    assert_eq!(read(&log), "a\n", "b ran a's command: {}", b.output());
    assert!(to_lead(&env, "shutdown_request").is_empty());
}

#[test]
fn a_signed_command_delivered_twice_runs_once_even_across_a_restart() {
    let env = Env::with_team(&["a"]);
    let mate = shell_mate(&env, "a");
    let log = env.path("ran");
    let first = format!("$ echo first >> {}", q(&log));
    env.swarm(["send", "--to", "a", &first]).ok();
    eventually(LONG, "the command to run", || {
        (read(&log) == "first\n").then_some(())
    });
    eventually(LONG, "it to be marked delivered", || {
        (entry(&env, "a", &first)["read"] == true).then_some(())
    });
    assert!(env.path("teams/t/members/a/acted.json").exists());
    drop(mate);
    // Put back unread, and a second copy beside it, while the runtime is down.
    rewrite_inbox(&env, "a", |entries| {
        let m = entries
            .iter_mut()
            .find(|m| m["text"] == first.as_str())
            .unwrap();
        m["read"] = false.into();
        let again = m.clone();
        entries.push(again);
    });
    let mate = shell_mate(&env, "a");
    let second = format!("$ echo second >> {}", q(&log));
    env.swarm(["send", "--to", "a", &second]).ok();
    eventually(LONG, "the new command to run", || {
        read(&log).contains("second").then_some(())
    });
    assert_eq!(read(&log), "first\nsecond\n", "{}", mate.output());
    eventually(LONG, "the replay to be reported once", || {
        let out = mate.output();
        (out.matches("ignored a second delivery").count() == 1).then_some(())
    });
}

fn to_lead_texts(env: &Env) -> Vec<String> {
    inbox(env, "team-lead")
        .iter()
        .filter_map(|m| m["text"].as_str().map(str::to_string))
        .collect()
}
