//! Starting and idling: a teammate refuses to start off the roster, with a wrong id, or twice
//! (writing nothing), and an idle teammate uses almost no CPU yet wakes fast on a message.

use std::time::{Duration, Instant};

use super::{refs, send, start, start_with, to_lead, LONG};
use crate::support::*;

#[test]
fn a_teammate_refuses_to_start_off_the_roster_with_a_wrong_id_or_twice() {
    let env = Env::with_team(&["a"]);
    // Each refusal says exactly what is wrong and writes nothing (no liveness lock either).
    let refuse = |args: &[&str], message: &str| {
        let mut s = env.swarm(["teammate"]);
        s.cmd.args(args);
        let out = if message.contains("is not a member") || message.contains("does not exist") {
            s.not_found(message)
        } else {
            s.refused(message)
        };
        out.stderr_is(&format!("swarm: error: {message}\n"));
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
        "\"ghost\" is not a member of team \"t\"; `swarm team show t` lists the members",
    );
    refuse(
        &refs(&with(id("a", "nope"), &["--agent", "shell"])),
        &format!(
            "team \"nope\" does not exist under {}; create it with `swarm team create nope` or \
             pass --root",
            env.root().display()
        ),
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
        "--agent-id a@other does not match --agent-name a and --team-name t; it should be a@t",
    );
    refuse(
        &refs(&with(id("team-lead", "t"), &["--agent", "shell"])),
        "invalid agent name \"team-lead\": team-lead, user, system, main are reserved; pick \
         another name",
    );
    refuse(
        &refs(&id("a", "t")),
        "say what runs the turns: `--agent shell`, or `-- CMD [ARGS...]` after the flags",
    );
    refuse(
        &refs(&with(id("a", "t"), &["--", "no-such-agent-cli-xyz"])),
        "agent command \"no-such-agent-cli-xyz\" not found; give a path or put it on PATH",
    );

    let _running = start(&env, "a", &["--agent", "shell"]);
    refuse(
        &refs(&with(id("a", "t"), &["--agent", "shell"])),
        &format!(
            "a is already running in team t (another process holds {})",
            env.path("teams/t/alive/a.lock").display()
        ),
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
    needs_events(&env, "a");
    std::thread::sleep(Duration::from_secs(2));
    let ticks = cpu_ticks(mate.child.id());
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

/// A runtime is woken by its bell, which swarm's senders ring (`mailbox::bell`), not by every
/// write in `inboxes/`. A writer that knows nothing of bells still reaches it: Claude Code
/// rewrites an inbox in place, and the runtime reads it at its next re-scan.
#[test]
fn a_message_written_in_place_by_a_writer_that_rings_no_bell_reaches_an_idle_teammate() {
    let env = Env::with_team(&["a"]);
    let _mate = start_with(
        &env,
        "a",
        &["--agent", "shell"],
        &[("SWARM_RESCAN_MS", "300")],
    );
    // Its events recorded: it is past its subscriptions, bell made.
    needs_events(&env, "a");
    assert!(env.path("teams/t/bells/a/bell").is_file(), "a has a bell");
    let inbox = env.path("teams/t/inboxes/a.json");
    let mut messages: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(&inbox).unwrap()).unwrap();
    messages.push(serde_json::json!({
        "from": "team-lead",
        "text": "$ echo written-in-place",
        "timestamp": "2026-12-02T00:00:00.000Z",
        "read": false,
    }));
    std::fs::write(&inbox, serde_json::to_vec_pretty(&messages).unwrap()).unwrap();
    eventually(LONG, "the reply", || {
        let done = to_lead(&env, "idle_notification").into_iter().any(|n| {
            n["result"]
                .as_str()
                .is_some_and(|r| r.contains("written-in-place"))
        });
        done.then_some(())
    });
}
