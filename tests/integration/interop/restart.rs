//! A claude teammate started again believes its lead (issue 25 item 3). Claude Code believes a
//! signed lead entry only if its timestamp is at most 120 s older than the process's start, and
//! reads the start from the `<ms>` of `--lead-verify-key <ms>.<key>`: stamped more than 120 s
//! before the process started, it believes nothing from before the start. Here the team's key
//! is an hour old (as for any team restarted a while after it was made), and while coder is
//! down its inbox gets what the lead sent: a message just now, one ten minutes ago, and a
//! shutdown request meant for the process that is gone. Restarted, coder is shown both messages
//! as the lead's (not `verified="false"`), and it keeps running: the stale shutdown request was
//! retired, not signed afresh.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{json, Value};

use super::fake_api::{Reply, Turn};
use super::versions::{each_claude, Installed};
use super::{Launch, Team, WAIT};
use crate::support::Out;

const PROMPT: &str = "Say hello, then wait (interop restart)";

fn script(turn: &Turn) -> Reply {
    let text = turn.last_user_text();
    for id in super::find_ids(&text, "shutdown-") {
        let call = format!("toolu_stop_{}", id.replace(['@', '-'], "_"));
        if !turn.called(&call) {
            return Reply::tool(
                &call,
                "SendMessage",
                json!({"to": "team-lead", "message":
                       {"type": "shutdown_response", "request_id": id, "approve": true}}),
            );
        }
    }
    Reply::text("noted")
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// `ms` as Claude Code's ISO timestamps (`date -u`).
fn iso(ms: u64) -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{}", ms / 1000), "+%Y-%m-%dT%H:%M:%S"])
        .output()
        .unwrap();
    format!(
        "{}.{:03}Z",
        String::from_utf8_lossy(&out.stdout).trim(),
        ms % 1000
    )
}

/// The team's lead key file (the only one under the env's state directory).
fn key_file(team: &Team) -> std::path::PathBuf {
    let dir = team.env.path("state/swarm/lead-keys");
    let mut keys: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "key"))
        .collect();
    assert_eq!(keys.len(), 1, "{keys:?}");
    keys.remove(0)
}

/// A lead entry for `coder` stamped `ms`, signed as the lead signs (PROTOCOL.md section 7).
fn signed(seed: &SigningKey, text: &str, ms: u64) -> Value {
    let id = format!("interop-restart-{ms}-{}", text.len());
    let timestamp = iso(ms);
    let fields = json!([
        "claude-team-lead-entry-v1",
        id,
        "team-lead",
        timestamp,
        text,
        null,
        "red",
        null
    ]);
    let sig = seed.sign(&serde_json::to_vec(&fields).unwrap());
    // swarm's own signature of the same entry, bound to team t and coder's inbox (PROTOCOL.md
    // section 7b): what the lead side writes beside Claude Code's.
    let bound = json!([
        "swarm-team-lead-entry-v1",
        "t",
        "coder",
        id,
        "team-lead",
        timestamp,
        text,
        null,
        "red",
        null
    ]);
    let bound = seed.sign(&serde_json::to_vec(&bound).unwrap());
    json!({"from": "team-lead", "text": text, "timestamp": timestamp, "color": "red",
           "msgV": 1, "msg_id": id, "type": "message", "read": false,
           "lead_sig": URL_SAFE_NO_PAD.encode(sig.to_bytes()),
           "swarm_lead_sig": URL_SAFE_NO_PAD.encode(bound.to_bytes())})
}

/// The `<teammate-message>` block the model was shown that holds `needle`.
fn shown(team: &Team, needle: &str) -> Option<String> {
    team.api
        .turns()
        .iter()
        .filter_map(|b| b["messages"].as_array().cloned())
        .flatten()
        .map(|m| Turn::content_of(&m))
        .flat_map(|t| {
            t.split("<teammate-message")
                .skip(1)
                .map(|b| {
                    b.split("</teammate-message>")
                        .next()
                        .unwrap_or_default()
                        .to_string()
                })
                .collect::<Vec<_>>()
        })
        .find(|block| block.contains(needle))
}

#[test]
fn a_restarted_claude_teammate_believes_what_the_lead_sent_before_it_started() {
    started_again_believes_its_lead(|team, claude| {
        team.swarm(["restart", "coder"])
            .env("CLAUDE_CODE_TEAMMATE_COMMAND", &claude.bin)
            .run_within(WAIT)
    });
}

/// The same through `swarm up` of the team's file, which starts every teammate not running.
#[test]
fn a_claude_teammate_brought_back_by_up_believes_what_the_lead_sent_before_it_started() {
    started_again_believes_its_lead(|team, claude| {
        let file = team.env.path("team.json");
        let args = [
            "up",
            file.to_str().unwrap(),
            "--agent",
            "claude",
            "--backend",
            "tmux",
        ];
        let mut up = team
            .swarm(args.iter().copied().chain(["--no-lead-pane"]))
            .env("CLAUDE_CODE_TEAMMATE_COMMAND", &claude.bin);
        for (k, v) in super::teammate_env(&team.api).as_object().unwrap() {
            up = up.env(k, v.as_str().unwrap());
        }
        up.run_within(WAIT)
    });
}

/// Stops coder, ages the team's key an hour and fills coder's inbox while it is down, starts
/// it again with `start_again`, and checks what the new process believes.
fn started_again_believes_its_lead(start_again: impl Fn(&Team, &Installed) -> Out) {
    each_claude(|claude| {
        let team = Team::launch(claude, Launch::new(PROMPT), script);
        team.await_lead("idle_notification");
        let first = team.pane_pids()[0];
        let out = team
            .swarm(["shutdown", "coder", "--timeout", "100"])
            .run_within(WAIT);
        assert_eq!(out.code, 0, "{out:?}");
        // Gone for good: an exiting claude still rewrites its inbox.
        team.eventually("coder's first process to end", || {
            (unsafe { libc::kill(first, 0) } != 0).then_some(())
        });

        // The team's key was made an hour ago.
        let path = key_file(&team);
        let text = std::fs::read_to_string(&path).unwrap();
        let words: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(words[0], "swarm-lead-key-v1");
        let hour_ago = now_ms() - 3_600_000;
        std::fs::write(&path, format!("{} {hour_ago} {}\n", words[0], words[2])).unwrap();
        let seed: [u8; 32] = URL_SAFE_NO_PAD
            .decode(words[2])
            .unwrap()
            .try_into()
            .unwrap();
        let seed = SigningKey::from_bytes(&seed);

        // While coder is down: a message ten minutes old, a shutdown request for the process
        // that is gone, and a message sent just now.
        let inbox_path = team.env.path("teams/t/inboxes/coder.json");
        let mut inbox: Vec<Value> =
            serde_json::from_slice(&std::fs::read(&inbox_path).unwrap()).unwrap();
        inbox.push(signed(
            &seed,
            "PING-OLD from before the crash",
            now_ms() - 600_000,
        ));
        let stop_id = format!("shutdown-{}@coder", now_ms());
        let stop = json!({"type": "shutdown_request", "requestId": stop_id,
                          "from": "team-lead", "timestamp": iso(now_ms())});
        inbox.push(signed(&seed, &stop.to_string(), now_ms()));
        std::fs::write(&inbox_path, serde_json::to_vec_pretty(&inbox).unwrap()).unwrap();
        team.swarm(["send", "--to", "coder", "PING-NEW while it was down"])
            .ok();

        let out = start_again(&team, claude);
        assert_eq!(out.code, 0, "{out:?}");
        let (old, new) = team.eventually("both pings shown to the restarted coder", || {
            Some((shown(&team, "PING-OLD")?, shown(&team, "PING-NEW")?))
        });
        for block in [&old, &new] {
            assert!(!block.contains(r#"verified="false""#), "{block}");
        }
        // The stale request was retired, so the new process was never asked to stop.
        team.eventually("coder idle after the restart", || {
            (team.protocol("team-lead", "idle_notification").len() >= 2).then_some(())
        });
        assert!(
            shown(&team, &stop_id).is_none(),
            "the old request was shown"
        );
        assert!(
            team.protocol("team-lead", "shutdown_approved")
                .iter()
                .all(|a| a["requestId"] != stop_id.as_str()),
            "the restarted coder obeyed a shutdown request meant for its last process"
        );
        let pid = team.pane_pids()[0];
        assert!(unsafe { libc::kill(pid, 0) } == 0, "coder keeps running");
    });
}
