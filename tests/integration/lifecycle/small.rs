//! The smaller things of issue 13, each a test: names checked on claim, failed tasks shown as
//! failed, the lead console saying how a turn ended, both spellings of `in_progress`, claim
//! errors in words, `logs --json`, plurals, help text, aligned status rows, and the hints of a
//! bare `shutdown` and of `attach` without a terminal.

use std::time::Duration;

use serde_json::json;

use super::{on, shell_file, wait_running};
use crate::support::*;

#[test]
fn a_claim_for_a_name_not_on_the_roster_is_refused() {
    let env = Env::with_team(&["coder"]);
    env.swarm(["task", "create", "a"]).ok();
    for args in [
        &["task", "claim", "1", "--agent", "ghost"][..],
        &["task", "next", "--claim", "--agent", "ghost"],
        &["task", "release", "--agent", "ghost"],
    ] {
        env.swarm(args).not_found(
            "\"ghost\" is not a member of team \"t\"; `swarm team show t` lists the members",
        );
    }
    env.swarm(["task", "claim", "1", "--agent", "coder"]).ok();
    // Claim refusals are said in words, not as protocol codes.
    env.swarm(["task", "claim", "1", "--agent", "coder"]).ok();
    env.swarm(["team", "add", "other"]).ok();
    let out = env
        .swarm(["task", "claim", "1", "--agent", "other"])
        .refused("cannot claim task #1: another teammate already owns it");
    assert!(!out.stderr.contains("already_claimed"), "{}", out.stderr);
}

#[test]
fn a_parked_failed_task_lists_as_failed_with_its_reason() {
    let env = Env::with_team(&["f"]);
    env.swarm(["task", "create", "flaky"]).ok();
    env.swarm(["task", "create", "fine"]).ok();
    // What a teammate runtime writes when a task's turn fails (store/tasks/claim.rs).
    env.swarm([
        "task",
        "update",
        "1",
        "--metadata",
        r#"{"swarmFailed": true, "failureReason": "exit 3: no such file", "failedBy": "f"}"#,
    ])
    .ok();
    let text = env.swarm(["task", "list"]).ok().stdout;
    let row = text.lines().find(|l| l.contains("flaky")).unwrap();
    assert!(row.starts_with("#1    failed"), "{text}");
    assert!(row.ends_with("failed: exit 3: no such file"), "{text}");
    let fine = text.lines().find(|l| l.contains("fine")).unwrap();
    assert!(fine.starts_with("#2    pending"), "{text}");
}

#[test]
fn the_lead_console_says_whether_a_turn_failed_or_succeeded() {
    let env = Env::with_team(&["f", "g"]);
    let idle = |from: &str, reason: &str, failure: Option<&str>| {
        let mut n = json!({"type": "idle_notification", "from": from,
                           "timestamp": "2026-01-01T00:00:00.000Z", "idleReason": reason});
        if let Some(f) = failure {
            n["failureReason"] = json!(f);
        }
        env.swarm([
            "debug",
            "frame",
            "--from",
            from,
            "--to",
            "team-lead",
            &n.to_string(),
        ])
        .ok();
    };
    idle("f", "failed", Some("exit 2"));
    idle("g", "available", None);
    let mut lead = env.swarm(["lead"]).live();
    lead.expect("is idle after a failed turn: exit 2");
    lead.expect("is idle after a successful turn");
}

#[test]
fn status_filters_take_both_spellings_and_help_prints_one() {
    let env = Env::with_team(&["coder"]);
    env.swarm(["task", "create", "a"]).ok();
    env.swarm(["task", "claim", "1", "--agent", "coder"]).ok();
    for spelling in ["in_progress", "in-progress"] {
        let list = env
            .swarm(["--json", "task", "list", "--status", spelling])
            .ok()
            .json();
        assert_eq!(list[0]["status"], "in_progress", "{spelling}");
        env.swarm(["task", "update", "1", "--status", spelling])
            .ok();
    }
    let help = env.swarm(["task", "list", "--help"]).ok().stdout;
    assert!(help.contains("in_progress"), "{help}");
    assert!(
        !help.contains("in-progress"),
        "one spelling is printed: {help}"
    );
}

#[test]
fn logs_json_plurals_and_help_text() {
    let env = Env::with_team(&["solo"]);
    std::fs::create_dir_all(env.path("teams/t/logs")).unwrap();
    std::fs::write(env.path("teams/t/logs/solo.log"), "one\ntwo\n").unwrap();
    let doc = env.swarm(["--json", "logs", "solo"]).ok().json();
    assert_eq!(doc, json!({"name": "solo", "lines": ["one", "two"]}));
    assert_eq!(env.swarm(["logs", "solo"]).ok().stdout, "one\ntwo\n");

    let list = env.swarm(["team", "list"]).ok().stdout;
    assert!(list.contains("1 teammate: none running"), "{list}");
    assert!(!list.contains("1 teammates"), "{list}");

    let help = env.swarm(["launch", "--help"]).ok().stdout;
    let examples: Vec<&str> = help
        .lines()
        .filter(|l| l.trim_start().starts_with("Example:"))
        .collect();
    assert_eq!(examples.len(), 2, "each example on its own line: {help}");
    assert!(examples[1].contains("--teammate coder="), "{help}");
    let description = help
        .split("--description <TEXT>")
        .nth(1)
        .unwrap_or_else(|| panic!("{help}"));
    assert!(
        description
            .trim_start()
            .starts_with("The team's description"),
        "{help}"
    );
}

#[test]
fn status_rows_line_up_whatever_the_backend() {
    let env = Env::with_team(&["inproc", "paned"]);
    let path = env.path("teams/t/config.json");
    let mut config = read_json(&path);
    for m in config["members"].as_array_mut().unwrap() {
        match m["name"].as_str().unwrap() {
            "inproc" => m["tmuxPaneId"] = json!("in-process"),
            "paned" => {
                m["tmuxPaneId"] = json!("%12");
                m["backendType"] = json!("tmux");
            }
            _ => {}
        }
    }
    std::fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
    let text = env.swarm(["status"]).ok().stdout;
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| {
            let row = l.trim_start();
            ["inproc", "paned", "NAME"]
                .iter()
                .any(|w| row.starts_with(w))
        })
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    let column = |row: &str, word: &str| row.find(word).unwrap_or_else(|| panic!("{word}: {row}"));
    let state = column(rows[0], "STATE");
    let unread = column(rows[0], "UNREAD") + "UNREAD".len();
    for row in &rows[1..] {
        let cells: Vec<(usize, &str)> = row.match_indices(char::is_alphanumeric).collect();
        assert!(!cells.is_empty());
        assert_eq!(
            row[state..].chars().next().map(char::is_whitespace),
            Some(false),
            "STATE starts in the same column:\n{text}"
        );
        assert_eq!(
            &row[unread - 1..unread],
            "0",
            "UNREAD ends in the same column:\n{text}"
        );
    }
}

#[test]
fn a_bare_shutdown_mentions_all_and_attach_without_a_terminal_says_so() {
    let env = Env::with_team(&["coder"]);
    env.swarm(["shutdown"]).refused(
        "name the teammate to stop (`swarm shutdown --team t NAME`), or pass --all to stop \
         every teammate of team t",
    );

    let tmux = Tmux::new();
    let file = shell_file(&env, "u", &["watched"], json!([]));
    on(
        &env,
        &tmux,
        ["launch", "--no-lead-pane", file.to_str().unwrap()],
    )
    .ok();
    wait_running(&env, &tmux, "u", &["watched"]);
    // Standard input and output are pipes here: no terminal for tmux to attach.
    let out = on(&env, &tmux, ["--team", "u", "attach"]).run_within(Duration::from_secs(30));
    assert_eq!(out.code, 2, "{}", out.stderr);
    out.stderr_has(
        "swarm attach needs a terminal, and standard input or output is not one; run it from a \
         terminal, or print the pane with `swarm logs --team u watched`",
    );
    on(&env, &tmux, ["--team", "u", "down"]).ok();
}
