//! A restarted claude teammate keeps its conversation (issue 28 item 10). Started again by
//! `swarm restart`, coder runs `claude --resume <its last session>`, so the model's next
//! request after the restart carries what was said before it (the first prompt's word, the
//! model's answer), and the first prompt is not given a second time. Without a session to
//! resume (its transcripts gone), it is given its first prompt again instead.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

use super::fake_api::{Reply, Turn};
use super::versions::each_claude;
use super::{Launch, Team, WAIT};

const PROMPT: &str = "Remember the word MARIGOLD, then wait (interop resume)";

/// Answers each new conversation's first prompt with a numbered word (`ANSWER-1` for the
/// first conversation, `ANSWER-2` for a second), approves shutdowns, says "noted" else: a
/// conversation carried on holds `ANSWER-1`, a new one started after the restart would not.
fn script() -> impl Fn(&Turn) -> Reply + Send + Sync + 'static {
    let answers = AtomicUsize::new(0);
    move |turn: &Turn| {
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
        if text.contains("MARIGOLD") {
            let n = answers.fetch_add(1, Ordering::SeqCst) + 1;
            return Reply::text(&format!("MARIGOLD kept, said the model (ANSWER-{n})"));
        }
        Reply::text("noted")
    }
}

/// The dry run of `swarm up` of the team's file while coder is down: its one teammate.
fn dry_run_up(team: &Team) -> Value {
    let file = team.env.path("team.json");
    let out = team
        .swarm([
            "--json",
            "up",
            file.to_str().unwrap(),
            "--agent",
            "claude",
            "--backend",
            "tmux",
            "--no-lead-pane",
            "--dry-run",
        ])
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", "/bin/true")
        .run_within(WAIT);
    assert_eq!(out.code, 0, "{out:?}");
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    doc["teammates"][0].clone()
}

/// Stops coder after its first turn and waits for its process to end.
fn first_turn_then_stop(team: &Team) {
    team.await_lead("idle_notification");
    let first = team.pane_pids()[0];
    let out = team
        .swarm(["shutdown", "coder", "--timeout", "100"])
        .run_within(WAIT);
    assert_eq!(out.code, 0, "{out:?}");
    team.eventually("coder's first process to end", || {
        (unsafe { libc::kill(first, 0) } != 0).then_some(())
    });
}

/// How many times `body`'s conversation holds the first prompt (Claude Code empties its inbox
/// as it reads, so the conversation, not the inbox, shows what it was given).
fn prompts_in(body: &Value) -> usize {
    body["messages"]
        .to_string()
        .matches("Remember the word MARIGOLD")
        .count()
}

fn restart(team: &Team, claude: &super::versions::Installed) {
    let out = team
        .swarm(["restart", "coder"])
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", &claude.bin)
        .run_within(WAIT);
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn a_restarted_claude_teammate_carries_on_its_conversation() {
    each_claude(|claude| {
        let team = Team::launch(claude, Launch::new(PROMPT), script());
        first_turn_then_stop(&team);
        let planned = dry_run_up(&team);
        let session = planned["resume"].as_str().unwrap_or("NONE");
        assert_eq!(planned["firstMessage"], false, "{planned}");
        let argv: Vec<&str> = planned["argv"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let at = argv
            .iter()
            .position(|w| *w == "--resume")
            .expect("--resume");
        assert_eq!(argv[at + 1], session);

        restart(&team, claude);
        team.swarm(["send", "--to", "coder", "PING-AFTER-RESTART"])
            .ok();
        let body = team.eventually("the model's turn after the restart", || {
            team.api
                .turns()
                .into_iter()
                .find(|b| b["messages"].to_string().contains("PING-AFTER-RESTART"))
        });
        let conversation = body["messages"].to_string();
        assert!(conversation.contains("MARIGOLD"), "{conversation}");
        assert!(conversation.contains("ANSWER-1"), "{conversation}");
        assert!(!conversation.contains("ANSWER-2"), "{conversation}");
        // Carried on, not told again.
        assert_eq!(prompts_in(&body), 1, "{conversation}");
    });
}

#[test]
fn a_restarted_claude_teammate_without_a_session_gets_its_prompt_again() {
    each_claude(|claude| {
        let team = Team::launch(claude, Launch::new(PROMPT), script());
        first_turn_then_stop(&team);
        // Its transcripts are gone (a cleaned-up config dir, another machine's store).
        std::fs::remove_dir_all(team.env.path("projects")).unwrap();
        let planned = dry_run_up(&team);
        assert!(planned.get("resume").is_none(), "{planned}");
        assert_eq!(planned["firstMessage"], true, "{planned}");
        let before = team.api.turns().len();

        restart(&team, claude);
        // The new process reads it: a turn after the restart holds the prompt, once (a new
        // conversation, not the old one carried on).
        let body = team.eventually("the prompt shown to the restarted coder", || {
            team.api.turns()[before..]
                .iter()
                .find(|b| prompts_in(b) > 0)
                .cloned()
        });
        assert_eq!(prompts_in(&body), 1, "{body}");
        assert!(!body["messages"].to_string().contains("ANSWER-1"), "{body}");
    });
}
