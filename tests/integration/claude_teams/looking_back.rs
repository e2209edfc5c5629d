//! `swarm timeline` and `swarm usage` on the team Claude Code made (issue 26), which has no
//! task history, no archives and an emptied lead inbox: the timeline shows what the files can
//! tell, and the usage comes from the session transcripts in the fixture's `projects/`
//! (recorded from Claude Code 2.1.328 against the fake Messages API, then given this team's
//! names, cwd and figures: a researcher session with a message written as two entries, a
//! sub-agent's transcript and a `<synthetic>` error entry, and the lead's session).

use serde_json::{json, Value};

use super::{claude_team, swarm};
use crate::support::*;

fn events(env: &Env, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["--json", "timeline"];
    all.extend(args);
    swarm(env, &all)
        .ok()
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_timeline_of_a_claude_made_team_shows_what_its_files_can_tell() {
    let env = Env::new();
    claude_team(&env);
    let shown: Vec<(String, String, i64)> = events(&env, &[])
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_string(),
                e["actor"].as_str().unwrap_or("?").to_string(),
                e["sinceStart"].as_i64().unwrap(),
            )
        })
        .collect();
    let kinds: Vec<(&str, &str)> = shown
        .iter()
        .map(|(k, a, _)| (k.as_str(), a.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("team.created", "team-lead"),
            ("member.joined", "team-lead"),
            ("member.joined", "researcher"),
            ("member.joined", "coder"),
            ("message", "researcher"),
            // No history: each task file says its state as of its last change.
            ("task.completed", "researcher"),
            ("task.claimed", "coder"),
        ]
    );
    let times: Vec<i64> = shown.iter().map(|(_, _, t)| *t).collect();
    assert_eq!(&times[..5], [0, 0, 100_000, 200_000, 300_000]);
    let tasks = events(&env, &["--task", "2"]);
    assert_eq!(tasks.len(), 1);
    assert_eq!(
        (&tasks[0]["seen"], &tasks[0]["source"], &tasks[0]["text"]),
        (
            &json!(true),
            &json!("task-file"),
            &json!("Stop copying lines")
        )
    );
    let text = swarm(&env, &["timeline", "--member", "coder"]).ok().stdout;
    assert!(
        text.contains("+0:05:00.000  researcher  → coder: tokenizer copies"),
        "{text}"
    );
    assert!(!text.contains("researcher  completed"), "{text}");
}

#[test]
fn usage_of_a_claude_made_team_is_read_from_its_session_transcripts() {
    let env = Env::new();
    claude_team(&env);
    let usage = swarm(&env, &["--json", "usage"]).ok().json();
    let of = |name: &str| {
        usage["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap()
            .clone()
    };
    let researcher = &of("researcher")["usage"];
    // The message written as two entries counts once, the sub-agent's counts, the synthetic
    // error entry does not.
    assert_eq!(
        (
            &researcher["inputTokens"],
            &researcher["outputTokens"],
            &researcher["cacheCreationInputTokens"],
            &researcher["cacheReadInputTokens"]
        ),
        (&json!(2400), &json!(560), &json!(4000), &json!(5200)),
        "{usage:#}"
    );
    assert_eq!(
        researcher["sessions"],
        json!(["5e6f7a8b-1111-4222-8333-944455556666"])
    );
    // Sonnet 4.5 (3/15/3.75/0.30 per million) and the sub-agent's Haiku 4.5 (1/5).
    assert_eq!(researcher["estimatedCostUsd"], json!(0.0298));
    assert_eq!(
        researcher["models"]["claude-haiku-4-5-20251001"]["inputTokens"],
        900
    );
    // The lead's session, by the roster's leadSessionId: Opus 4.5 at 5/25/6.25.
    assert_eq!(of("team-lead")["usage"]["estimatedCostUsd"], json!(0.0513));
    // The coder's session is not in the fixture: unknown, not zero.
    assert_eq!(of("coder")["usage"], "unknown");
    assert!(of("coder")["unknownBecause"]
        .as_str()
        .unwrap()
        .contains("no Claude Code transcript"));
    assert_eq!(usage["total"]["inputTokens"], 4400);
    assert_eq!(usage["total"]["unknownMembers"], json!(["coder"]));
    let table = swarm(&env, &["usage"]).ok().stdout;
    assert!(table.contains("estimates"), "{table}");
    assert!(table.contains("coder       unknown"), "{table}");

    // Prices can be overridden in swarm's settings; a bad file is refused and names itself.
    let settings = env.path("state/config/swarm/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        json!({"prices": {"sonnet": {"input": 0, "output": 0, "cacheWrite": 0, "cacheRead": 0}}})
            .to_string(),
    )
    .unwrap();
    let cheaper = swarm(&env, &["--json", "usage"]).ok().json();
    assert_eq!(
        cheaper["members"][1]["usage"]["estimatedCostUsd"],
        json!(0.0012),
        "only the sub-agent's Haiku is left to pay for"
    );
    std::fs::write(&settings, r#"{"prices": {"sonnet": {"input": "cheap"}}}"#).unwrap();
    swarm(&env, &["usage"]).refused("has a bad price for \"sonnet\"");
}

/// The same figures in `swarm top`: on its title line, full screen in a real terminal, and as a
/// line of their own where it has no terminal (`status --watch`).
#[test]
fn swarm_top_shows_the_teams_usage_on_screen_and_in_its_lines() {
    let env = Env::new();
    claude_team(&env);
    let tmux = Tmux::new();
    let dash = crate::top::Dashboard::start(&env, &tmux, &[("SWARM_TEAM", super::TEAM)]);
    let screen = dash.wait_for("the usage figures", |s| s.contains("usage (estimate): ~$"));
    assert!(screen.contains("researcher "), "{screen}");
    let mut watch = swarm(&env, &["status", "--watch"]).live();
    watch.expect("usage (estimate): ~$");
}
