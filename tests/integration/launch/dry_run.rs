//! `swarm launch --dry-run`: the exact command line and environment each teammate would get
//! (PROTOCOL.md section 10), for claude teammates and for the `swarm teammate` runtime that runs
//! shell and other CLI agents, without writing anything.

use serde_json::{json, Value};

use super::{without_forwarded_env, write_script};
use crate::support::*;

#[test]
fn dry_run_argv_for_claude_matches_section_10_exactly() {
    let env = Env::new();
    env.swarm(["team", "create", "t"]).ok();
    let sid = read_json(&env.path("teams/t/config.json"))["leadSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let claude = write_script(&env.path("claude"), "#!/bin/sh\n");
    std::fs::write(env.path("settings.json"), "{}").unwrap();
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "t", "cwd": ".", "teammates": [
            {"name": "coder", "prompt": "p"},
            {"name": "planner", "prompt": "p", "permissionMode": "plan", "model": "haiku",
             "env": {"EXTRA": "1"}}]})
        .to_string(),
    )
    .unwrap();
    let before = env.snapshot();
    let since = super::now_ms();
    let cmd = env.swarm([
        "--json",
        "launch",
        file.to_str().unwrap(),
        "--backend",
        "in-process",
        "--model",
        "opus",
        "--settings",
        "settings.json",
        "--agent-type",
        "reviewer",
        "--plan-mode-required",
        "--dry-run",
        "--",
        "--verbose",
    ]);
    let out = without_forwarded_env(cmd)
        .env_remove(TODO_TOOLS)
        .env("PATH", format!("{}:/usr/bin:/bin", env.root().display()))
        .env("ANTHROPIC_BASE_URL", "http://gateway:8080")
        .env("HTTPS_PROXY", "http://proxy:3128")
        .env("DISABLE_TELEMETRY", "1")
        .env("ANTHROPIC_API_KEY", "sk-secret")
        .ok();
    out.stderr_has("swarm: backend in-process: --backend in-process");
    let doc = out.json();
    env.snapshot().assert_unchanged_since(&before, "--dry-run");
    let claude = claude.display().to_string();
    let words: Vec<String> = serde_json::from_value(doc["teammates"][0]["argv"].clone()).unwrap();
    let lead_key = super::launch_verify_key(&env, &words, since);
    let settings = env.path("settings.json").display().to_string();
    let identity = |name: &str, color: &str| {
        vec![
            claude.clone(),
            "--agent-id".into(),
            format!("{name}@t"),
            "--agent-name".into(),
            name.into(),
            "--team-name".into(),
            "t".into(),
            "--agent-color".into(),
            color.into(),
            "--parent-session-id".into(),
            sid.clone(),
            "--plan-mode-required".into(),
            "--lead-verify-key".into(),
            lead_key.trim().into(),
            "--agent-type".into(),
            "reviewer".into(),
        ]
    };
    let mut coder = identity("coder", "blue");
    coder.extend(
        [
            "--permission-mode",
            "default",
            "--model",
            "opus",
            "--settings",
            &settings,
            "--verbose",
        ]
        .map(String::from),
    );
    assert_eq!(doc["teammates"][0]["argv"], json!(coder));
    let mut planner = identity("planner", "green");
    planner.extend(
        [
            "--permission-mode",
            "plan",
            "--model",
            "haiku",
            "--settings",
            &settings,
            "--verbose",
        ]
        .map(String::from),
    );
    assert_eq!(doc["teammates"][1]["argv"], json!(planner));
    let root = env.root().display().to_string();
    assert_eq!(
        doc["teammates"][0]["env"],
        json!({"CLAUDECODE": "1", "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1",
               "SWARM_ROOT": root, "SWARM_TEAM": "t", "SWARM_AGENT_NAME": "coder",
               "SWARM_AGENT_ID": "coder@t", "SWARM_BIN": BIN,
               "SWARM_LEAD_VERIFY_KEY": lead_key.trim(),
               "ANTHROPIC_BASE_URL": "http://gateway:8080", "ANTHROPIC_API_KEY": "<redacted>",
               "HTTPS_PROXY": "http://proxy:3128", "DISABLE_TELEMETRY": "1",
               "CLAUDE_CONFIG_DIR": root, "CLAUDE_SECURESTORAGE_CONFIG_DIR": "",
               TODO_TOOLS: "1"})
    );
    assert_eq!(doc["teammates"][1]["env"]["EXTRA"], "1");
    assert_eq!(doc["leadSessionId"], sid.as_str());

    // --dangerously-skip-permissions takes the permission mode's place.
    let out = env
        .swarm([
            "launch",
            "--teammate",
            "coder=p",
            "--backend",
            "in-process",
            "--dangerously-skip-permissions",
            "--dry-run",
        ])
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", &claude)
        .ok();
    let (_, key) = lead_key.split_once('.').unwrap();
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("--parent-session-id"))
        .unwrap_or_default();
    let stamp = line
        .split(&format!("--parent-session-id {sid} --lead-verify-key "))
        .nth(1)
        .and_then(|rest| rest.strip_suffix(&format!(".{key} --dangerously-skip-permissions")));
    assert!(
        stamp.is_some_and(|ms| ms.parse::<u64>().is_ok()),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("--permission-mode"));
}

/// Claude Code offers its task tools on some models only without this (PROTOCOL.md section 10).
const TODO_TOOLS: &str = "CLAUDE_CODE_ENABLE_TODO_TOOLS";

/// Issue 15 item 5: every claude teammate gets the task tools, unless the user's environment or
/// the teammate's own says otherwise; runtime teammates are not given the variable.
#[test]
fn claude_teammates_get_the_task_tools_unless_told_otherwise() {
    let env = Env::new();
    let claude = write_script(&env.path("claude"), "#!/bin/sh\n");
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "t", "cwd": ".", "teammates": [
            {"name": "coder", "prompt": "p"},
            {"name": "own", "prompt": "p", "env": {TODO_TOOLS: "0"}},
            {"name": "sh", "prompt": "p", "agent": "shell"}]})
        .to_string(),
    )
    .unwrap();
    let dry_run = |launcher: Option<&str>| {
        let cmd = env
            .swarm([
                "--json",
                "launch",
                file.to_str().unwrap(),
                "--backend",
                "in-process",
                "--dry-run",
            ])
            .env("CLAUDE_CODE_TEAMMATE_COMMAND", &claude);
        let cmd = match launcher {
            Some(v) => cmd.env(TODO_TOOLS, v),
            None => cmd.env_remove(TODO_TOOLS),
        };
        cmd.ok().json()
    };
    let doc = dry_run(None);
    let value = |doc: &serde_json::Value, i: usize| doc["teammates"][i]["env"][TODO_TOOLS].clone();
    assert_eq!(value(&doc, 0), "1", "{doc}");
    assert_eq!(value(&doc, 1), "0", "the teammate's own env wins: {doc}");
    assert_eq!(
        value(&doc, 2),
        json!(null),
        "not for runtime teammates: {doc}"
    );
    let doc = dry_run(Some("0"));
    assert_eq!(value(&doc, 0), "0", "the user's env wins: {doc}");
    assert_eq!(value(&doc, 1), "0", "{doc}");
    assert_eq!(value(&doc, 2), json!(null), "{doc}");
    // The human dry run shows it too.
    let out = env
        .swarm([
            "launch",
            file.to_str().unwrap(),
            "--backend",
            "in-process",
            "--dry-run",
        ])
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", &claude)
        .env_remove(TODO_TOOLS)
        .ok();
    assert!(
        out.stdout.contains(&format!("{TODO_TOOLS}=1")),
        "{}",
        out.stdout
    );
}

#[test]
fn dry_run_shows_the_teammate_runtime_command_for_shell_and_cli_agents() {
    let env = Env::new();
    let before = env.snapshot();
    let out = env
        .swarm([
            "--json",
            "launch",
            "--agent",
            "shell",
            "--teammate",
            "sh1=look around",
            "--backend",
            "in-process",
            "--plan-mode-required",
            "--model",
            "m1",
            "--dry-run",
        ])
        .current_dir(env.root())
        .ok()
        .json();
    let sid = out["leadSessionId"].as_str().unwrap();
    let root = env.root().display().to_string();
    // A dry run writes nothing, not even the new team's lead key (issue 24 item 10): the argv
    // says where the key the launch makes goes.
    env.snapshot().assert_unchanged_since(&before, "--dry-run");
    let keys = env.path("state/swarm/lead-keys");
    let made: Vec<_> = std::fs::read_dir(&keys).map_or(vec![], |d| d.flatten().collect());
    assert!(made.is_empty(), "a dry run made a lead key: {made:?}");
    let lead_key = "<the team's lead key, made by the launch>";
    assert_eq!(
        out["teammates"][0]["argv"],
        json!([
            BIN,
            "teammate",
            "--agent-id",
            "sh1@t",
            "--agent-name",
            "sh1",
            "--team-name",
            "t",
            "--agent-color",
            "blue",
            "--parent-session-id",
            sid,
            "--plan-mode-required",
            "--lead-verify-key",
            lead_key.trim(),
            "--cwd",
            root,
            "--agent",
            "shell"
        ])
    );
    let e = &out["teammates"][0]["env"];
    assert_eq!(e["SWARM_ROOT"], root.as_str());
    assert_eq!(e["SWARM_TEAM"], "t");
    assert_eq!(e["SWARM_AGENT_NAME"], "sh1");
    assert_eq!(e["SWARM_AGENT_ID"], "sh1@t");
    assert_eq!(e["SWARM_BACKEND"], "in-process");
    assert!(e.get("CLAUDECODE").is_none());

    // Any other CLI agent is wrapped after `--`, resolved to a path, with the inherited flags.
    let out = env
        .swarm([
            "--json",
            "launch",
            "--agent",
            "sh -x",
            "--teammate",
            "cli=go",
            "--backend",
            "in-process",
            "--model",
            "m1",
            "--dry-run",
            "--",
            "--extra",
        ])
        .current_dir(env.root())
        .ok()
        .json();
    let argv: Vec<String> = serde_json::from_value(out["teammates"][0]["argv"].clone()).unwrap();
    let dash = argv.iter().position(|w| w == "--").unwrap();
    assert!(argv[dash + 1].ends_with("/sh"), "{argv:?}");
    assert_eq!(argv[dash + 2..], ["-x", "--model", "m1", "--extra"]);
}

/// `--prompt-via` reaches runtime teammates from the command line, and `promptVia` from a swarm
/// file (a teammate's own setting wins).
#[test]
fn prompt_via_comes_from_the_flag_or_the_swarm_file() {
    let env = Env::new();
    let argv_of = |out: &serde_json::Value, i: usize| -> Vec<String> {
        serde_json::from_value(out["teammates"][i]["argv"].clone()).unwrap()
    };
    let has_stdin = |argv: &[String]| {
        argv.windows(2)
            .any(|w| w[0] == "--prompt-via" && w[1] == "stdin")
    };
    let out = env
        .swarm([
            "--json",
            "launch",
            "--agent",
            "cat",
            "--teammate",
            "c=hi",
            "--backend",
            "in-process",
            "--prompt-via",
            "stdin",
            "--dry-run",
        ])
        .current_dir(env.root())
        .ok()
        .json();
    assert!(has_stdin(&argv_of(&out, 0)), "{out}");

    let file = env.path("via.json");
    std::fs::write(
        &file,
        r#"{"team": "t", "agent": ["cat"], "teammates": [
            {"name": "a", "prompt": "x", "promptVia": "stdin"},
            {"name": "b", "prompt": "y"}]}"#,
    )
    .unwrap();
    let out = env
        .swarm([
            "--json",
            "launch",
            "--backend",
            "in-process",
            "--dry-run",
            file.to_str().unwrap(),
        ])
        .ok()
        .json();
    assert!(has_stdin(&argv_of(&out, 0)), "{out}");
    assert!(
        !has_stdin(&argv_of(&out, 1)),
        "the default is an argument: {out}"
    );

    std::fs::write(
        &file,
        r#"{"team": "t", "agent": ["cat"], "teammates": [{"name": "a", "promptVia": "pipe"}]}"#,
    )
    .unwrap();
    env.swarm([
        "launch",
        "--backend",
        "in-process",
        "--dry-run",
        file.to_str().unwrap(),
    ])
    .refused("promptVia is \"pipe\"; use \"arg\" or \"stdin\"");
}

#[test]
fn a_dry_run_works_without_the_agent_installed_and_says_what_it_would_look_up() {
    let env = Env::new();
    let home = env.path("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = env
        .swarm([
            "--json",
            "launch",
            "--backend",
            "in-process",
            "--teammate",
            "coder=p",
            "--dry-run",
        ])
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &home)
        .ok();
    let doc = out.json();
    assert_eq!(doc["teammates"][0]["argv"][0], "claude", "{doc}");
    assert!(
        out.stderr.contains("warning: claude was not found")
            && out
                .stderr
                .contains("the dry run shows \"claude\" where its path would be"),
        "{}",
        out.stderr
    );
    let out = env
        .swarm([
            "--json",
            "launch",
            "--backend",
            "in-process",
            "--agent",
            "no-such-agent-cli --fast",
            "--teammate",
            "coder=p",
            "--dry-run",
        ])
        .env("PATH", "/usr/bin:/bin")
        .ok();
    let argv = out.json()["teammates"][0]["argv"].clone();
    let dash = argv
        .as_array()
        .unwrap()
        .iter()
        .position(|w| w == "--")
        .unwrap();
    assert_eq!(argv[dash + 1], "no-such-agent-cli", "{argv}");
    assert!(
        out.stderr
            .contains("no-such-agent-cli was not found on PATH"),
        "{}",
        out.stderr
    );
    // Without --dry-run the missing program is still refused.
    env.swarm(["launch", "--backend", "in-process", "--teammate", "coder=p"])
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &home)
        .refused("claude was not found");
}

/// A dry run shows the ids the plan's tasks will get: after the largest ever issued (a deleted
/// task's id is not given again), and a task an earlier launch seeded keeps its id (issue 24
/// item 10; it numbered them from 0 before).
#[test]
fn a_dry_run_shows_the_ids_the_tasks_will_get() {
    let env = Env::with_team(&[]);
    env.swarm(["task", "create", "one"]).ok();
    env.swarm(["task", "create", "scratch"]).ok();
    env.swarm(["task", "delete", "2"]).ok();
    env.swarm([
        "task",
        "update",
        "1",
        "--metadata",
        r#"{"swarmKey": "one"}"#,
    ])
    .ok();
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "t", "agent": "shell", "teammates": [{"name": "a"}],
               "tasks": [{"subject": "one"}, {"subject": "two", "blockedBy": [0]},
                         {"subject": "three", "blockedBy": [1]}]})
        .to_string(),
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let before = env.snapshot();
    let doc = env
        .swarm([
            "--json",
            "launch",
            file,
            "--backend",
            "in-process",
            "--dry-run",
        ])
        .ok()
        .json();
    let tasks: Vec<(Value, Value, Value)> = doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].clone(),
                t["seeded"].clone(),
                t["blockedByIds"].clone(),
            )
        })
        .collect();
    assert_eq!(
        tasks,
        [
            (json!("1"), json!(true), json!([])),
            (json!("3"), json!(false), json!(["1"])),
            (json!("4"), json!(false), json!(["3"])),
        ]
    );
    let text = env
        .swarm(["launch", file, "--backend", "in-process", "--dry-run"])
        .ok()
        .stdout;
    for line in [
        "  #1 one (seeded before: not created again)",
        "  #3 two (blocked by #1)",
        "  #4 three (blocked by #3)",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in:\n{text}");
    }
    env.snapshot().assert_unchanged_since(&before, "--dry-run");
}

/// `maxTurns`, `turnTimeout` and `onLimit` reach a runtime teammate's command line from the
/// swarm file (its own winning over the launch's flags); a claude teammate, which swarm cannot
/// hold to them, is refused them (issue 28).
#[test]
fn limits_reach_runtime_teammates_from_the_file_or_the_flags_and_claude_is_refused_them() {
    let env = Env::new();
    let file = env.path("limits.json");
    std::fs::write(
        &file,
        r#"{"team": "t", "agent": "shell", "teammates": [
            {"name": "a", "prompt": "x", "maxTurns": 3, "turnTimeout": 60, "onLimit": "release"},
            {"name": "b", "prompt": "y"},
            {"name": "c", "prompt": "z", "agent": "claude"}]}"#,
    )
    .unwrap();
    let out = env
        .swarm([
            "--json",
            "launch",
            "--backend",
            "in-process",
            "--dry-run",
            "--max-turns",
            "9",
            file.to_str().unwrap(),
        ])
        .ok()
        .json();
    let tail = |i: usize, n: usize| -> Vec<String> {
        let argv: Vec<String> =
            serde_json::from_value(out["teammates"][i]["argv"].clone()).unwrap();
        argv[argv.len() - n..].to_vec()
    };
    assert_eq!(
        tail(0, 6),
        [
            "--max-turns",
            "3",
            "--turn-timeout",
            "60",
            "--on-limit",
            "release"
        ],
        "{out}"
    );
    assert_eq!(tail(1, 2), ["--max-turns", "9"], "{out}");
    let claude: Vec<String> = serde_json::from_value(out["teammates"][2]["argv"].clone()).unwrap();
    assert!(
        !claude.iter().any(|w| w == "--max-turns"),
        "the launch's limits are for runtime teammates: {claude:?}"
    );

    std::fs::write(
        &file,
        r#"{"team": "t", "teammates": [{"name": "c", "agent": "claude", "maxTurns": 2}]}"#,
    )
    .unwrap();
    env.swarm([
        "launch",
        "--backend",
        "in-process",
        "--dry-run",
        file.to_str().unwrap(),
    ])
    .refused("teammate c runs Claude Code itself, which swarm cannot hold to maxTurns");
}
