//! Token usage of a real claude teammate, read back by `swarm usage` from the session
//! transcript Claude Code writes under the config dir's `projects/` (issue 26 item 2): the fake
//! API reports the same usage for every reply, so the figures are that usage times the replies
//! the teammate got.

use serde_json::Value;

use super::fake_api::{
    FakeApi, Reply, Turn, CACHE_READ_TOKENS, CACHE_WRITE_TOKENS, INPUT_TOKENS, OUTPUT_TOKENS,
};
use super::versions::{claudes, each_claude};
use super::{seed_claude_config, teammate_env, Launch, Team, WAIT};
use crate::support::*;

const PROMPT: &str = "Say hello (interop usage)";

/// Two replies: a tool call (TaskList), then text, so two API messages with their own ids.
fn script(turn: &Turn) -> Reply {
    if turn.called("toolu_list") {
        return Reply::text("hello");
    }
    Reply::tool("toolu_list", "TaskList", serde_json::json!({}))
}

#[test]
fn swarm_usage_reads_a_claude_teammates_tokens_from_its_transcript() {
    each_claude(usage_from_transcript);
}

fn usage_from_transcript(claude: &super::versions::Installed) {
    let team = Team::launch(claude, Launch::new(PROMPT), script);
    team.await_lead("idle_notification");
    let transcripts: Vec<_> = walk(&team.env.path("projects"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert!(!transcripts.is_empty(), "Claude Code wrote a transcript");
    let coder_usage = || {
        let usage = team.swarm(["--json", "usage"]).ok().json();
        let coder = usage["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "coder")
            .unwrap()["usage"]
            .clone();
        (usage, coder)
    };
    // Claude Code may append a reply's entry to its transcript a moment after its idle
    // notification is in (seen on a loaded machine: one reply of two counted): wait until the
    // transcript holds every reply the fake API gave, then check each figure.
    let (usage, coder, replies) = eventually(
        std::time::Duration::from_secs(30),
        "every reply in the transcript",
        || {
            let replies = team.api.turns().len() as u64;
            let (usage, coder) = coder_usage();
            (coder["outputTokens"] == OUTPUT_TOKENS * replies).then_some((usage, coder, replies))
        },
    );
    assert!(replies >= 2, "a tool call and its answer: {replies}");
    assert_eq!(coder["source"], "transcript", "{usage:#}");
    assert_eq!(coder["estimate"], true);
    assert_eq!(coder["inputTokens"], INPUT_TOKENS * replies, "{usage:#}");
    assert_eq!(
        coder["cacheCreationInputTokens"],
        CACHE_WRITE_TOKENS * replies
    );
    assert_eq!(coder["cacheReadInputTokens"], CACHE_READ_TOKENS * replies);
    assert_eq!(coder["outputTokens"], OUTPUT_TOKENS * replies, "{usage:#}");
    assert_eq!(coder["sessions"].as_array().unwrap().len(), 1);
    // Sonnet list prices: 3, 15, 3.75 and 0.30 USD per million tokens.
    let per_reply = (INPUT_TOKENS as f64 * 3.0
        + OUTPUT_TOKENS as f64 * 15.0
        + CACHE_WRITE_TOKENS as f64 * 3.75
        + CACHE_READ_TOKENS as f64 * 0.3)
        / 1e6;
    let cost = coder["estimatedCostUsd"].as_f64().unwrap();
    assert!((cost - per_reply * replies as f64).abs() < 1e-4, "{cost}");
    // The lead here is swarm's console, which reports nothing: unknown, not zero.
    let lead = &usage["members"][0];
    assert_eq!(
        (&lead["name"], &lead["usage"]),
        (&Value::from("team-lead"), &Value::from("unknown"))
    );
    let status = team.swarm(["--json", "status"]).ok().json();
    assert_eq!(member(&status, "coder")["usage"], coder);
    assert_eq!(status["usage"]["inputTokens"], INPUT_TOKENS * replies);
    assert_eq!(
        status["usage"]["unknownMembers"],
        serde_json::json!(["team-lead"])
    );
}

#[test]
fn the_usage_of_a_claude_print_mode_teammate_is_recorded_from_its_json_results() {
    let api = FakeApi::start(|_| Reply::text("hello from print mode"));
    let env = Env::with_team(&["coder"]);
    let work = env.root().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let work = work.canonicalize().unwrap();
    seed_claude_config(env.root(), &work);
    let claude = claudes().remove(0).bin;
    let mut runtime = env
        .swarm([
            "teammate",
            "--agent-id",
            "coder@t",
            "--agent-name",
            "coder",
            "--team-name",
            "t",
            "--agent-color",
            "blue",
            "--parent-session-id",
            "s",
            "--cwd",
        ])
        .env("CLAUDE_CONFIG_DIR", env.root());
    runtime.cmd.arg(&work).arg("--").arg(&claude);
    runtime.cmd.args(["-p", "--output-format", "json"]);
    for (k, v) in teammate_env(&api).as_object().unwrap() {
        runtime = runtime.env(k, v.as_str().unwrap());
    }
    let _runtime = KillOnDrop(runtime.spawn());
    env.swarm(["send", "--to", "coder", "say hello"]).ok();
    let usage = eventually(WAIT, "the turn's usage recorded", || {
        let u = env.swarm(["--json", "usage"]).ok().json();
        let coder = u["members"][1]["usage"].clone();
        (coder["source"] == "turn-results").then_some(coder)
    });
    let calls = api.requests().len() as u64;
    assert!(calls >= 1);
    assert_eq!(usage["inputTokens"], INPUT_TOKENS * calls, "{usage:#}");
    assert_eq!(usage["outputTokens"], OUTPUT_TOKENS * calls, "{usage:#}");
    assert_eq!(usage["cacheReadInputTokens"], CACHE_READ_TOKENS * calls);
    assert!(
        usage["reportedCostUsd"].is_number(),
        "Claude Code's own figure: {usage:#}"
    );
    // The session is the conversation swarm gave the turn (`--session-id`).
    let session = read_json(&env.path("teams/t/sessions/coder/session.json"));
    assert_eq!(usage["sessions"], serde_json::json!([session["sessionId"]]));
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}
