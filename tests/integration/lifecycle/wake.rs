//! A message to a stopped teammate is not silent (issue 28 item 4): `swarm send` still delivers
//! it and says on stderr that nobody runs to read it, and `--wake` starts the teammate again with
//! its recorded identity, as `swarm up` would, so it reads the message.

use serde_json::json;

use super::{on, shell_file, status, wait_running};
use crate::support::*;

const LONG: std::time::Duration = std::time::Duration::from_secs(60);

#[test]
fn a_message_to_a_stopped_teammate_says_so_and_wake_starts_it_to_read_it() {
    let env = Env::new();
    let tmux = Tmux::new();
    let file = shell_file(&env, "t", &["w", "x"], json!([]));
    on(&env, &tmux, ["launch", file.to_str().unwrap()]).ok();
    wait_running(&env, &tmux, "t", &["w", "x"]);
    // To a running teammate: no word, and it reads it (the shell agent runs the lead's `$ `).
    let out = on(&env, &tmux, ["send", "--to", "x", "$ echo x > x.txt"]).ok();
    assert_eq!(out.stderr, "", "nothing to say about a running teammate");
    eventually(LONG, "x ran its message", || {
        env.path("work/x.txt").exists().then_some(())
    });

    on(&env, &tmux, ["shutdown", "w"]).ok();
    eventually(LONG, "w stopped", || {
        (member(&status(&env, &tmux, "t"), "w")["state"] == "stopped").then_some(())
    });
    let out = on(&env, &tmux, ["send", "--to", "w", "$ echo one > one.txt"]).ok();
    out.stderr_has("w is not running (")
        .stderr_has("the message waits in its inbox; `swarm send --wake` or `swarm up` starts it");
    let inbox = read_json(&env.path("teams/t/inboxes/w.json"));
    assert!(
        inbox
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["text"] == "$ echo one > one.txt"),
        "delivered all the same: {inbox}"
    );
    assert!(!env.path("work/one.txt").exists());

    // --wake: started again, it reads both messages.
    let out = on(
        &env,
        &tmux,
        ["send", "--wake", "--to", "w", "$ echo two > two.txt"],
    )
    .ok();
    out.stderr_has("w is not running (")
        .stderr_has("starting it again");
    eventually(LONG, "w read what waited and the new message", || {
        (env.path("work/one.txt").exists() && env.path("work/two.txt").exists()).then_some(())
    });
    wait_running(&env, &tmux, "t", &["w", "x"]);
    let roster = read_json(&env.path("teams/t/config.json"));
    assert_eq!(
        roster["members"].as_array().unwrap().len(),
        3,
        "started again as itself, not added: {roster}"
    );
    // A teammate waking another is the lead's business.
    on(&env, &tmux, ["shutdown", "w"]).ok();
    eventually(LONG, "w stopped again", || {
        (member(&status(&env, &tmux, "t"), "w")["state"] == "stopped").then_some(())
    });
    on(
        &env,
        &tmux,
        ["send", "--wake", "--to", "w", "--from", "x", "hi"],
    )
    .env("SWARM_AGENT_NAME", "x")
    .code(2)
    .stderr_has("wake");

    // The lead console says it too, and `/wake w` starts it.
    let mut lead = on(&env, &tmux, ["--team", "t", "lead"]).live();
    lead.expect("lead console for team t");
    lead.type_line("@w $ echo three > three.txt");
    lead.expect("w is not running (");
    lead.expect("/wake w starts it again");
    lead.type_line("/wake w");
    lead.expect("(started again)");
    eventually(LONG, "w woke from the console and read the message", || {
        env.path("work/three.txt").exists().then_some(())
    });
    lead.type_line("/quit");
    on(&env, &tmux, ["down"]).ok();
}
