//! The launcher end to end: real tmux servers on private sockets, fake agents (small `sh`
//! scripts that dump their argv, env and cwd, or answer shutdown requests), a fake `it2`, real
//! git repositories, and real signals sent to a foreground `swarm launch`.
//!
//! The teammate runtime (`swarm teammate`) is another module's job, so pane tests use the
//! `claude` kind with `CLAUDE_CODE_TEAMMATE_COMMAND` pointing at a fake agent; the runtime's
//! command line is checked with `--dry-run`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

/// Every variable section 10 forwards, removed so tests see only what they set.
use swarm::launch::FORWARDED_ENV as FORWARDED;

fn write_script(path: &Path, body: &str) -> PathBuf {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_path_buf()
}

/// A fake agent: records its argv (one word a line), env and cwd under `out/<name>.*`, prints
/// a line, then runs `then` (shell code; `$name` and `$team` are set).
fn fake_agent(env: &Env, then: &str) -> PathBuf {
    let out = env.path("out");
    std::fs::create_dir_all(&out).unwrap();
    let body = format!(
        r#"#!/bin/sh
out='{out}'
swarm='{bin}'
for a in "$@"; do printf '%s\n' "$a"; done > "$out/argv.$$"
name=""; team=""
while [ $# -gt 0 ]; do
  case "$1" in --agent-name) name="$2"; shift;; --team-name) team="$2"; shift;; esac
  shift
done
mv "$out/argv.$$" "$out/$name.argv"
env | sort > "$out/$name.env"
pwd > "$out/$name.cwd"
echo "fake agent $name says hello"
{then}
"#,
        out = out.display(),
        bin = BIN,
    );
    write_script(&env.path("fake-agent"), &body)
}

/// Shell code for a fake teammate that answers shutdown requests (approve or reject).
fn answer_shutdown(answer: &str) -> String {
    let reply = match answer {
        "approve" => {
            r#"{"type":"shutdown_approved","requestId":"'"$id"'","from":"'"$name"'","timestamp":"2026-01-01T00:00:00.000Z"}"#
        }
        _ => {
            r#"{"type":"shutdown_rejected","requestId":"'"$id"'","from":"'"$name"'","reason":"busy","timestamp":"2026-01-01T00:00:00.000Z"}"#
        }
    };
    let exit = if answer == "approve" { "exit 0" } else { ":" };
    format!(
        r#"while true; do
  id=$("$swarm" --team "$team" --json inbox "$name" --unread --mark-read | sed -n 's/.*\\"requestId\\":\\"\(shutdown-[^\\]*\)\\".*/\1/p' | head -n 1)
  if [ -n "$id" ]; then
    "$swarm" --team "$team" send --from "$name" --to team-lead '{reply}'
    {exit}
  fi
  sleep 0.1
done"#
    )
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .lines()
        .map(str::to_string)
        .collect()
}

fn wait_for_file(path: &Path) {
    eventually(Duration::from_secs(20), &path.display().to_string(), || {
        path.is_file().then_some(())
    });
}

fn member<'a>(config: &'a Value, name: &str) -> &'a Value {
    config["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in roster: {config}"))
}

/// `swarm` with the fake claude, a private tmux server and no forwarded env from the host.
fn swarm_on(env: &Env, tmux: &Tmux, agent: &Path, args: &[&str]) -> Swarm {
    let mut s = env
        .swarm(args)
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", agent);
    for k in FORWARDED {
        s = s.env_remove(k);
    }
    s
}

fn pane_field(tmux: &Tmux, pane: &str, format: &str) -> String {
    tmux.cmd(["display-message", "-p", "-t", pane, format])
        .stdout
        .trim()
        .to_string()
}

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
    let mut cmd = env.swarm([
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
    for k in FORWARDED {
        cmd = cmd.env_remove(k);
    }
    let out = cmd
        .env("PATH", format!("{}:/usr/bin:/bin", env.root().display()))
        .env("ANTHROPIC_BASE_URL", "http://gateway:8080")
        .env("HTTPS_PROXY", "http://proxy:3128")
        .env("DISABLE_TELEMETRY", "1")
        .env("ANTHROPIC_API_KEY", "sk-secret")
        .ok();
    out.stderr_has("swarm: backend in-process: --backend in-process");
    let doc = out.json();
    assert_eq!(env.snapshot(), before, "--dry-run wrote nothing");
    let claude = claude.display().to_string();
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
               "ANTHROPIC_BASE_URL": "http://gateway:8080", "ANTHROPIC_API_KEY": "<redacted>",
               "HTTPS_PROXY": "http://proxy:3128", "DISABLE_TELEMETRY": "1",
               "CLAUDE_CONFIG_DIR": root})
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
    assert!(
        out.stdout.contains(&format!(
            "--parent-session-id {sid} --dangerously-skip-permissions\n"
        )),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("--permission-mode"));
}

#[test]
fn dry_run_shows_the_teammate_runtime_command_for_shell_and_cli_agents() {
    let env = Env::new();
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

#[test]
fn three_teammates_get_panes_with_titles_colours_flags_and_env() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(&env, "sleep 300");
    let work = env.path("work");
    std::fs::create_dir_all(work.join("sub")).unwrap();
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "t", "description": "three", "cwd": "work", "teammates": [
            {"name": "coder", "prompt": "Fix the parser", "env": {"FOO": "bar baz"}},
            {"name": "tester", "prompt": "Test it", "model": "haiku", "cwd": "sub"},
            {"name": "docs", "prompt": "Write it up"}],
         "tasks": [{"subject": "design"}, {"subject": "build", "blockedBy": [0]}]})
        .to_string(),
    )
    .unwrap();
    let out = swarm_on(
        &env,
        &tmux,
        &agent,
        &[
            "launch",
            file.to_str().unwrap(),
            "--model",
            "sonnet",
            "--permission-mode",
            "acceptEdits",
            "--",
            "--verbose",
        ],
    )
    .env("ANTHROPIC_BASE_URL", "http://gateway")
    .ok();
    out.stderr_has("swarm: backend tmux: tmux is on PATH (not inside tmux)");
    for name in ["coder", "tester", "docs"] {
        assert!(out.stdout.contains(&format!("{name} (")), "{}", out.stdout);
        wait_for_file(&env.path(&format!("out/{name}.cwd")));
    }
    let config = read_json(&env.path("teams/t/config.json"));
    let panes = tmux.cmd([
        "list-panes",
        "-t",
        "=swarm-t",
        "-F",
        "#{pane_id} #{pane_title} #{@swarm_color} #{remain-on-exit}",
    ]);
    let panes: Vec<Vec<String>> = panes
        .stdout
        .lines()
        .map(|l| l.split(' ').map(str::to_string).collect())
        .collect();
    assert_eq!(panes.len(), 4, "lead + 3 teammates: {panes:?}");
    let lead_pane = member(&config, "team-lead")["tmuxPaneId"].as_str().unwrap();
    for (name, colour) in [
        ("team-lead", "red"),
        ("coder", "blue"),
        ("tester", "green"),
        ("docs", "yellow"),
    ] {
        let pane_id = member(&config, name)["tmuxPaneId"].as_str().unwrap();
        let row = panes
            .iter()
            .find(|p| p[0] == pane_id)
            .unwrap_or_else(|| panic!("{name}'s pane {pane_id} missing: {panes:?}"));
        assert_eq!(row[1], name);
        assert_eq!(row[2], colour);
        assert_eq!(row[3], "on", "remain-on-exit for {name}");
    }
    assert_eq!(
        tmux.cmd([
            "show-options",
            "-w",
            "-v",
            "-t",
            lead_pane,
            "pane-border-status"
        ])
        .stdout
        .trim(),
        "top"
    );
    // The lead console is the first pane, started as `swarm lead --team t`.
    assert_eq!(
        pane_field(&tmux, lead_pane, "#{pane_start_command}").replace('"', ""),
        format!("{BIN} lead --team t")
    );

    let coder = member(&config, "coder");
    assert_eq!(coder["backendType"], "tmux");
    assert_eq!(coder["isActive"], true);
    assert_eq!(coder["color"], "blue");
    assert_eq!(coder["model"], "sonnet");
    assert_eq!(coder["mode"], "acceptEdits");
    assert!(coder["swarmTmuxSocket"]
        .as_str()
        .unwrap()
        .ends_with(&tmux.socket));
    assert_eq!(member(&config, "tester")["model"], "haiku");

    let argv = lines(&env.path("out/coder.argv"));
    let sid = config["leadSessionId"].as_str().unwrap();
    assert_eq!(
        argv,
        [
            "--agent-id",
            "coder@t",
            "--agent-name",
            "coder",
            "--team-name",
            "t",
            "--agent-color",
            "blue",
            "--parent-session-id",
            sid,
            "--permission-mode",
            "acceptEdits",
            "--model",
            "sonnet",
            "--verbose"
        ]
    );
    assert!(lines(&env.path("out/tester.argv")).contains(&"haiku".to_string()));
    let coder_env = lines(&env.path("out/coder.env"));
    for want in [
        "CLAUDECODE=1",
        "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1",
        "ANTHROPIC_BASE_URL=http://gateway",
        "FOO=bar baz",
    ] {
        assert!(
            coder_env.contains(&want.to_string()),
            "{want}: {coder_env:?}"
        );
    }
    assert!(coder_env.contains(&format!("CLAUDE_CONFIG_DIR={}", env.root().display())));
    assert!(!lines(&env.path("out/tester.env")).contains(&"FOO=bar baz".to_string()));
    assert_eq!(
        lines(&env.path("out/coder.cwd")),
        [work.display().to_string()]
    );
    assert_eq!(
        lines(&env.path("out/tester.cwd")),
        [work.join("sub").display().to_string()]
    );

    // The prompt is the first inbox message, from the lead; never in argv.
    let inbox = read_json(&env.path("teams/t/inboxes/coder.json"));
    assert_eq!(inbox[0]["from"], "team-lead");
    assert_eq!(inbox[0]["text"], "Fix the parser");
    assert!(!argv.iter().any(|a| a.contains("Fix the parser")));
    let tasks = env.swarm(["--json", "task", "list"]).ok().json();
    assert_eq!(tasks[1]["subject"], "build");
    assert_eq!(tasks[1]["blockedBy"], json!(["1"]));

    // The fake's output is on its pane, and `swarm logs` reads it from there.
    let logs = env
        .swarm(["logs", "coder"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
    assert!(
        logs.stdout.contains("fake agent coder says hello"),
        "{}",
        logs.stdout
    );
}

#[test]
fn inside_tmux_the_team_gets_a_window_of_the_current_session_or_splits_it() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(&env, "sleep 300");
    tmux.cmd([
        "new-session",
        "-d",
        "-s",
        "main",
        "-x",
        "200",
        "-y",
        "50",
        "sleep",
        "600",
    ]);
    let info = tmux.cmd([
        "display-message",
        "-p",
        "-t",
        "main",
        "#{socket_path},#{pid},#{pane_id}",
    ]);
    let info = info.stdout.trim().to_string();
    let (server, user_pane) = info.rsplit_once(',').unwrap();
    let inside = |args: &[&str]| {
        let mut s = env
            .swarm(args)
            .env("TMUX", format!("{server},0"))
            .env("TMUX_PANE", user_pane)
            .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent);
        for k in FORWARDED {
            s = s.env_remove(k);
        }
        s
    };
    let out = inside(&[
        "launch",
        "--teammate",
        "coder=go",
        "--teammate",
        "tester=go",
    ])
    .ok();
    out.stderr_has("$TMUX is set: running inside tmux");
    let windows = tmux.cmd([
        "list-windows",
        "-t",
        "main",
        "-F",
        "#{window_name} #{window_panes}",
    ]);
    let windows: Vec<&str> = windows.stdout.lines().collect();
    assert_eq!(windows.len(), 2, "{windows:?}");
    assert!(
        windows.contains(&"swarm-t 3"),
        "lead + 2 in window swarm-t: {windows:?}"
    );
    assert_eq!(
        tmux.cmd(["list-panes", "-t", user_pane, "-F", "#{pane_id}"])
            .stdout
            .lines()
            .count(),
        1,
        "the user's own window is untouched"
    );
    assert!(tmux
        .cmd(["list-sessions", "-F", "#{session_name}"])
        .stdout
        .lines()
        .eq(["main"]));

    // --split splits the user's window instead; no lead pane there.
    inside(&[
        "--team",
        "two",
        "launch",
        "--split",
        "--teammate",
        "a=go",
        "--teammate",
        "b=go",
    ])
    .ok();
    let here = tmux.cmd([
        "list-panes",
        "-t",
        user_pane,
        "-F",
        "#{pane_id} #{pane_title}",
    ]);
    let titles: Vec<&str> = here
        .stdout
        .lines()
        .map(|l| l.split_once(' ').unwrap().1)
        .collect();
    assert_eq!(titles.len(), 3, "{titles:?}");
    assert!(titles.contains(&"a") && titles.contains(&"b"), "{titles:?}");
    assert_eq!(
        tmux.cmd(["list-windows", "-t", "main"])
            .stdout
            .lines()
            .count(),
        2
    );
    wait_for_file(&env.path("out/b.cwd"));

    // --split outside tmux is refused, writing nothing.
    let before = env.snapshot();
    env.swarm([
        "--team",
        "three",
        "launch",
        "--split",
        "--teammate",
        "x=go",
        "--backend",
        "tmux",
    ])
    .env("SWARM_TMUX_SOCKET", &tmux.socket)
    .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
    .code(2)
    .stderr_has("not running inside tmux");
    assert_eq!(env.snapshot(), before);
}

#[test]
fn a_teammate_killed_from_outside_shows_as_dead_in_status() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(
        &env,
        r#"if [ "$name" = crasher ]; then exit 3; fi; sleep 300"#,
    );
    swarm_on(
        &env,
        &tmux,
        &agent,
        &[
            "launch",
            "--no-lead-pane",
            "--teammate",
            "victim=go",
            "--teammate",
            "crasher=go",
            "--teammate",
            "survivor=go",
        ],
    )
    .ok();
    wait_for_file(&env.path("out/victim.cwd"));
    let config = read_json(&env.path("teams/t/config.json"));
    let pane = member(&config, "victim")["tmuxPaneId"]
        .as_str()
        .unwrap()
        .to_string();
    let pid: i32 = pane_field(&tmux, &pane, "#{pane_pid}").parse().unwrap();
    // SAFETY: signalling a process this test started (through tmux).
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    let status = eventually(Duration::from_secs(20), "victim and crasher dead", || {
        let s = env
            .swarm(["--json", "status"])
            .env("SWARM_TMUX_SOCKET", &tmux.socket)
            .ok()
            .json();
        let dead = |n: &str| member(&s, n)["dead"] == true;
        (dead("victim") && dead("crasher")).then_some(s)
    });
    assert_eq!(
        member(&status, "victim")["pane"],
        json!({"state": "dead", "signal": 9})
    );
    assert_eq!(
        member(&status, "crasher")["pane"],
        json!({"state": "dead", "code": 3})
    );
    assert_eq!(member(&status, "survivor")["dead"], false);
    assert_eq!(member(&status, "survivor")["pane"]["state"], "alive");
    assert_eq!(member(&status, "survivor")["unread"], 1);
    let text = env
        .swarm(["status"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok()
        .stdout;
    assert!(text.contains("dead (signal 9)"), "{text}");
    assert!(text.contains("dead (exit 3)"), "{text}");
    // The crashed teammate's last output stays on its pane.
    let crasher = member(&config, "crasher")["tmuxPaneId"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(tmux
        .cmd(["capture-pane", "-p", "-S", "-", "-t", &crasher])
        .stdout
        .contains("fake agent crasher says hello"));
}

#[test]
fn shutdown_handshake_end_to_end() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(
        &env,
        &format!(
            r#"case "$name" in
  polite) {approve} ;;
  grumpy) {reject} ;;
  *) sleep 300 ;;
esac"#,
            approve = answer_shutdown("approve"),
            reject = answer_shutdown("reject"),
        ),
    );
    swarm_on(
        &env,
        &tmux,
        &agent,
        &[
            "launch",
            "--no-lead-pane",
            "--teammate",
            "polite=go",
            "--teammate",
            "grumpy=go",
            "--teammate",
            "silent=go",
        ],
    )
    .ok();
    for n in ["polite", "grumpy", "silent"] {
        wait_for_file(&env.path(&format!("out/{n}.cwd")));
    }
    env.swarm(["task", "create", "parser"]).ok();
    env.swarm(["task", "claim", "1", "--agent", "polite"]).ok();

    let started = Instant::now();
    let out = env
        .swarm(["--json", "shutdown", "--all", "--timeout", "4"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .code(1);
    let elapsed = started.elapsed();
    let outcomes = out.json();
    let by = |n: &str| {
        outcomes
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(by("polite")["result"], "approved");
    assert_eq!(by("polite")["killed"], true);
    assert_eq!(by("polite")["released"], json!(["1"]));
    assert_eq!(by("grumpy")["result"], "rejected");
    assert_eq!(by("grumpy")["reason"], "busy");
    assert_eq!(by("grumpy")["killed"], false);
    assert_eq!(by("silent")["result"], "timed_out");
    assert_eq!(by("silent")["killed"], true);
    assert!(
        elapsed < Duration::from_secs(15),
        "the timeout bounds the wait: {elapsed:?}"
    );
    let request = read_json(&env.path("teams/t/inboxes/polite.json"))
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["text"].as_str().unwrap().contains("shutdown_request"))
        .cloned()
        .unwrap();
    let text: Value = serde_json::from_str(request["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["type"], "shutdown_request");
    assert_eq!(text["from"], "team-lead");
    assert!(text["requestId"].as_str().unwrap().starts_with("shutdown-"));
    assert!(text["requestId"].as_str().unwrap().ends_with("@polite"));

    let config = read_json(&env.path("teams/t/config.json"));
    assert_eq!(member(&config, "polite")["isActive"], false);
    assert_eq!(member(&config, "silent")["isActive"], false);
    assert_eq!(member(&config, "grumpy")["isActive"], true);
    let panes = tmux.cmd(["list-panes", "-a", "-F", "#{pane_title}"]).stdout;
    assert_eq!(panes.trim(), "grumpy", "only the rejecter's pane is left");
    let task = env.swarm(["--json", "task", "show", "1"]).ok().json();
    assert_eq!(task["status"], "pending");
    assert!(task.get("owner").is_none() || task["owner"].is_null());
    let lead = read_json(&env.path("teams/t/inboxes/team-lead.json"));
    let notices: Vec<&str> = lead
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["from"] == "system")
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert!(
        notices
            .iter()
            .any(|t| t.contains("polite") && t.contains("#1") && t.contains("shutdown approved")),
        "{notices:?}"
    );
    assert!(notices.iter().any(|t| t.contains("silent")), "{notices:?}");

    // --force stops the one that said no.
    let out = env
        .swarm(["shutdown", "grumpy", "--force", "--timeout", "4"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
    assert!(
        out.stdout
            .contains("grumpy: rejected the shutdown (busy); stopped"),
        "{}",
        out.stdout
    );
    assert_eq!(
        member(&read_json(&env.path("teams/t/config.json")), "grumpy")["isActive"],
        false
    );
    env.swarm(["team", "delete"]).ok();
}

#[test]
fn in_process_teammates_are_children_and_ctrl_c_shuts_them_down() {
    let env = Env::new();
    let agent = fake_agent(
        &env,
        &format!(
            r#"echo "$$" > "$out/$name.pid"
case "$name" in
  polite) {approve} ;;
  *) trap 'echo got TERM' TERM; while true; do sleep 0.2; done ;;
esac"#,
            approve = answer_shutdown("approve"),
        ),
    );
    let mut cmd = env
        .swarm([
            "launch",
            "--backend",
            "in-process",
            "--shutdown-timeout",
            "2",
            "--teammate",
            "polite=go",
            "--teammate",
            "stubborn=go",
        ])
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent);
    for k in FORWARDED {
        cmd = cmd.env_remove(k);
    }
    let mut child = cmd.spawn();
    wait_for_file(&env.path("out/polite.pid"));
    wait_for_file(&env.path("out/stubborn.pid"));
    // The child can write its pid file before the launcher has recorded its pid in the roster.
    let config = eventually(Duration::from_secs(20), "both pids in the roster", || {
        let config = read_json(&env.path("teams/t/config.json"));
        ["polite", "stubborn"]
            .iter()
            .all(|n| member(&config, n)["swarmPid"].is_u64())
            .then_some(config)
    });
    for n in ["polite", "stubborn"] {
        let m = member(&config, n);
        assert_eq!(m["backendType"], "in-process");
        assert_eq!(m["tmuxPaneId"], "in-process");
        assert_eq!(m["isActive"], true);
        let recorded = m["swarmPid"].as_u64().unwrap();
        let fake_pid: u64 = std::fs::read_to_string(env.path(&format!("out/{n}.pid")))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(recorded, fake_pid, "the roster has the teammate's own pid");
        // Its own process group, so the terminal's Ctrl-C reaches only the launcher.
        // SAFETY: getpgid on a pid we started.
        assert_eq!(unsafe { libc::getpgid(recorded as i32) }, recorded as i32);
    }
    let status = env.swarm(["--json", "status"]).ok().json();
    assert_eq!(member(&status, "polite")["pane"]["state"], "alive");

    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let started = Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the launcher did not exit after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = Out::from(child.wait_with_output().unwrap());
    assert_eq!(
        code,
        Some(0),
        "stdout: {}\nstderr: {}",
        out.stdout,
        out.stderr
    );
    for want in [
        "polite: running (pid",
        "shutting down",
        "polite: approved the shutdown",
        "polite: exited with status 0",
        "stubborn: no answer in time",
        "stubborn: killed by signal 9",
        "stubborn: marked inactive",
    ] {
        assert!(
            out.stdout.contains(want),
            "{want:?} missing:\n{}",
            out.stdout
        );
    }
    let config = read_json(&env.path("teams/t/config.json"));
    assert_eq!(member(&config, "polite")["isActive"], false);
    assert_eq!(member(&config, "polite")["swarmExit"], json!({"code": 0}));
    assert_eq!(
        member(&config, "stubborn")["swarmExit"],
        json!({"signal": 9})
    );
    let log = std::fs::read_to_string(env.path("teams/t/logs/stubborn.log")).unwrap();
    assert!(log.contains("fake agent stubborn says hello"), "{log}");
    assert!(log.contains("got TERM"), "SIGTERM came first: {log}");
    let logs = env.swarm(["logs", "polite"]).ok();
    assert!(logs.stdout.contains("fake agent polite says hello"));
    let status = env.swarm(["status"]).ok().stdout;
    assert!(status.contains("inactive, dead (signal 9)"), "{status}");
}

#[test]
fn an_in_process_launch_returns_when_every_teammate_has_exited() {
    let env = Env::new();
    let agent = fake_agent(&env, r#"[ "$name" = bad ] && exit 4; exit 0"#);
    let out = env
        .swarm([
            "launch",
            "--backend",
            "in-process",
            "--teammate",
            "good=go",
            "--teammate",
            "bad=go",
        ])
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
        .code(1);
    assert!(
        out.stdout.contains("bad: exited with status 4"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("good: exited with status 0"),
        "{}",
        out.stdout
    );
    let lead = env.swarm(["--json", "inbox", "team-lead"]).ok().json();
    assert!(lead.as_array().unwrap().iter().any(|m| m["text"]
        .as_str()
        .unwrap()
        .contains("bad is no longer active (its process exited with status 4)")));
}

#[test]
fn a_fake_it2_sees_split_run_and_close_and_pane_exec_becomes_the_teammate() {
    let env = Env::new();
    let bin = env.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = env.path("it2.log");
    write_script(
        &bin.join("it2"),
        &format!(
            r#"#!/bin/sh
for a in "$@"; do printf '[%s]' "$a"; done >> '{log}'
echo >> '{log}'
case "$1 $2" in
  "session split") n=$(grep -c 'split' '{log}'); echo "Created new pane: SESSION-$n" ;;
esac
exit 0
"#,
            log = log.display()
        ),
    );
    let agent = fake_agent(&env, "exit 0");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let iterm = |args: &[&str]| {
        env.swarm(args)
            .env("PATH", &path)
            .env("TERM_PROGRAM", "iTerm.app")
            .env("ITERM_SESSION_ID", "w0t1p0:LEAD-UUID")
            .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
    };
    let out = iterm(&[
        "launch",
        "--teammate",
        "coder=go",
        "--teammate",
        "tester=go",
    ])
    .ok();
    out.stderr_has("running inside iTerm2 with a working it2");
    let spec = env.path("teams/t/spawn/coder.json");
    let calls = lines(&log);
    assert_eq!(
        calls,
        [
            "[--version]".to_string(),
            "[session][split][-v][-s][LEAD-UUID]".into(),
            format!(
                "[session][run][-s][SESSION-1]['{BIN}' pane-exec '{}']",
                spec.display()
            ),
            "[session][split][-h][-s][SESSION-1]".into(),
            format!(
                "[session][run][-s][SESSION-2]['{BIN}' pane-exec '{}']",
                env.path("teams/t/spawn/tester.json").display()
            ),
        ]
    );
    let config = read_json(&env.path("teams/t/config.json"));
    assert_eq!(member(&config, "coder")["tmuxPaneId"], "SESSION-1");
    assert_eq!(member(&config, "coder")["backendType"], "iterm2");

    // What iTerm2 would run: pane-exec reads the spec, deletes it, records the pid, execs.
    let done = Command::new(BIN)
        .args(["pane-exec", spec.to_str().unwrap()])
        .env_remove("SWARM_ROOT")
        .status()
        .unwrap();
    assert!(done.success());
    assert!(
        !spec.exists(),
        "the spec (it holds env) is deleted once read"
    );
    assert_eq!(lines(&env.path("out/coder.argv"))[1], "coder@t");
    assert!(lines(&env.path("out/coder.env")).contains(&"CLAUDECODE=1".to_string()));
    let config = read_json(&env.path("teams/t/config.json"));
    assert!(member(&config, "coder")["swarmPid"].as_u64().is_some());

    iterm(&["kill", "coder"]).ok();
    assert_eq!(
        lines(&log).last().unwrap(),
        "[session][close][-f][-s][SESSION-1]"
    );

    // --backend iterm2 without it2 is refused before anything is written.
    let before = env.snapshot();
    env.swarm([
        "--team",
        "x",
        "launch",
        "--backend",
        "iterm2",
        "--teammate",
        "a=go",
    ])
    .env("PATH", "/usr/bin:/bin")
    .env("ITERM_SESSION_ID", "w0t1p0:LEAD-UUID")
    .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
    .code(2)
    .stderr_has("it2 command is missing");
    assert_eq!(env.snapshot(), before);
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git is installed (scripts/test installs it)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn worktrees_are_made_per_teammate_and_only_unchanged_ones_removed() {
    let env = Env::new();
    let repo = env.path("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("src/lib.rs"), "// lib\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "init"]);
    let agent = fake_agent(
        &env,
        r#"if [ "$name" = changer ]; then echo new > made-by-changer.txt; fi; exit 0"#,
    );
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "t", "cwd": "repo/src", "teammates": [
            {"name": "idle", "prompt": "p", "worktree": true},
            {"name": "changer", "prompt": "p", "worktree": true},
            {"name": "plain", "prompt": "p"}]})
        .to_string(),
    )
    .unwrap();
    let out = env
        .swarm(["launch", file.to_str().unwrap(), "--backend", "in-process"])
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
        .ok();
    let wt = |n: &str| repo.join(".swarm/worktrees").join(n);
    // Each started in its own worktree, in the same subdirectory the launch named.
    assert_eq!(
        lines(&env.path("out/idle.cwd")),
        [wt("idle").join("src").display().to_string()]
    );
    assert_eq!(
        lines(&env.path("out/plain.cwd")),
        [repo.join("src").display().to_string()]
    );
    assert!(out.stdout.contains("worktree"), "{}", out.stdout);
    assert!(
        out.stdout.contains(&format!(
            "idle: worktree {} removed (unchanged)",
            wt("idle").display()
        )),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(&format!(
            "changer: worktree {} kept on branch swarm/t/changer: 1 uncommitted change",
            wt("changer").display()
        )),
        "{}",
        out.stdout
    );
    assert!(!wt("idle").exists());
    assert!(wt("changer").join("src/made-by-changer.txt").is_file());
    let branches = git(&repo, &["branch", "--list", "swarm/*"]);
    // `+` marks a branch checked out in a linked worktree.
    assert_eq!(branches.trim().trim_start_matches("+ "), "swarm/t/changer");
    assert_eq!(
        git(&repo, &["status", "--porcelain"]).trim(),
        "",
        ".swarm/ is excluded"
    );

    // worktree outside a repository is refused before anything is written.
    let before = env.snapshot();
    env.swarm([
        "--team",
        "t2",
        "launch",
        "--backend",
        "in-process",
        "--worktree",
        "--teammate",
        "x=p",
    ])
    .current_dir(env.path("out"))
    .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
    .code(2)
    .stderr_has("needs a git repository");
    assert_eq!(env.snapshot(), before);
}

#[test]
fn bad_launches_exit_2_and_write_nothing() {
    let env = Env::new();
    let agent = fake_agent(&env, "exit 0");
    let before = env.snapshot();
    let launch = |args: &[&str]| {
        let mut full = vec!["launch", "--backend", "in-process"];
        full.extend_from_slice(args);
        env.swarm(full).env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
    };
    launch(&["--teammate", "coder=a", "--teammate", "Coder=b"])
        .code(2)
        .stderr_has("duplicate teammate name");
    launch(&["--teammate", "a;rm -rf ~=x"])
        .code(2)
        .stderr_has("invalid agent name");
    launch(&["--teammate", "team-lead=x"])
        .code(2)
        .stderr_has("reserved");
    launch(&["--teammate", "noequals"])
        .code(2)
        .stderr_has("use NAME=PROMPT");
    launch(&[]).code(2).stderr_has("no teammates to launch");
    launch(&["--agent", "no-such-agent-cli --flag", "--teammate", "a=x"])
        .code(2)
        .stderr_has("no-such-agent-cli was not found on PATH");
    launch(&["--teammate", "a=x", "--permission-mode", "a b"])
        .code(2)
        .stderr_has("permission mode");
    env.swarm(["launch", "--teammate", "a=x", "--backend", "in-process"])
        .env_remove("CLAUDE_CODE_TEAMMATE_COMMAND")
        .env("PATH", "/nonexistent")
        .env("HOME", env.path("home"))
        .code(2)
        .stderr_has("claude was not found: looked in PATH (/nonexistent)");
    env.swarm(["launch", "--teammate", "a=x", "--backend", "tmux"])
        .env("PATH", env.path("empty"))
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
        .code(2)
        .stderr_has("--backend tmux: tmux is not installed");
    let file = env.path("bad.json");
    std::fs::write(
        &file,
        r#"{"team": "t", "teammates": [{"name": "a", "promt": "typo"}]}"#,
    )
    .unwrap();
    let before_file = env.snapshot();
    env.swarm(["launch", file.to_str().unwrap()])
        .code(2)
        .stderr_has("unknown field `promt`");
    assert_eq!(env.snapshot(), before_file);
    std::fs::remove_file(&file).unwrap();
    assert_eq!(env.snapshot(), before);

    // Joining an existing team: a name already on the roster is refused.
    env.swarm(["team", "create", "t"]).ok();
    env.add_member("t", "coder");
    let before = env.snapshot();
    launch(&["--teammate", "CODER=x"])
        .code(2)
        .stderr_has("already has a member named");
    assert_eq!(env.snapshot(), before);
}

#[test]
fn a_pane_that_fails_to_start_is_rolled_back() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(&env, "sleep 300");
    // A tmux that refuses to start the teammate called `tester`.
    let real = which_tmux();
    let bin = env.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    write_script(
        &bin.join("tmux"),
        &format!(
            r#"#!/bin/sh
case "$*" in *respawnp*"--agent-name tester"*) echo "boom: no pane for you" >&2; exit 1 ;; esac
exec '{real}' "$@"
"#
        ),
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = swarm_on(
        &env,
        &tmux,
        &agent,
        &[
            "launch",
            "--no-lead-pane",
            "--teammate",
            "coder=go",
            "--teammate",
            "tester=go",
        ],
    )
    .env("PATH", &path)
    .code(1);
    out.stderr_has("failed to launch tester");
    out.stderr_has("boom: no pane for you");
    out.stderr_has("coder keep running");
    let config = read_json(&env.path("teams/t/config.json"));
    let names: Vec<&str> = config["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["team-lead", "coder"]);
    assert!(!env.path("teams/t/inboxes/tester.json").exists());
    let titles = tmux.cmd(["list-panes", "-a", "-F", "#{pane_title}"]).stdout;
    assert_eq!(titles.trim(), "coder", "the failed pane was killed");

    // When the first teammate fails, the new team goes too.
    let out = swarm_on(
        &env,
        &tmux,
        &agent,
        &["--team", "solo", "launch", "--teammate", "tester=go"],
    )
    .env("PATH", &path)
    .code(1);
    out.stderr_has("boom");
    assert!(!env.path("teams/solo").exists());
    assert!(!tmux
        .cmd(["list-panes", "-a", "-F", "#{pane_title}"])
        .stdout
        .contains("team-lead"));
}

fn which_tmux() -> String {
    let out = Command::new("sh")
        .args(["-c", "command -v tmux"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn attach_puts_a_terminal_on_the_teammates_pane() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(&env, "sleep 300");
    swarm_on(
        &env,
        &tmux,
        &agent,
        &[
            "launch",
            "--no-lead-pane",
            "--teammate",
            "coder=a",
            "--teammate",
            "tester=b",
        ],
    )
    .ok();
    let config = read_json(&env.path("teams/t/config.json"));
    let tester = member(&config, "tester")["tmuxPaneId"]
        .as_str()
        .unwrap()
        .to_string();
    // `script` gives `swarm attach` (and so `tmux attach`) a terminal.
    let mut attached = Command::new("script")
        .args(["-qc", &format!("'{BIN}' attach tester"), "/dev/null"])
        .env("SWARM_ROOT", env.root())
        .env("SWARM_TEAM", "t")
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .env_remove("TMUX")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("script (util-linux) is installed");
    let client = eventually(Duration::from_secs(20), "a client on swarm-t", || {
        let out = tmux
            .cmd(["list-clients", "-F", "#{session_name} #{pane_id}"])
            .stdout;
        (!out.trim().is_empty()).then(|| out.trim().to_string())
    });
    assert_eq!(client, format!("swarm-t {tester}"));
    tmux.cmd(["detach-client", "-s", "swarm-t"]);
    let started = Instant::now();
    while attached.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "attach did not return"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    env.swarm(["attach", "nobody"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .code(2)
        .stderr_has("not a member");
}

#[test]
fn status_lists_tasks_unread_pending_permissions_and_quarantined_files() {
    let env = Env::with_team(&["coder"]);
    env.swarm(["task", "create", "parser"]).ok();
    env.swarm(["task", "claim", "1", "--agent", "coder"]).ok();
    env.swarm(["send", "--to", "coder", "hi"]).ok();
    env.swarm([
        "permission",
        "request",
        "--tool",
        "Bash",
        "--from",
        "coder",
        "--description",
        "make",
    ])
    .ok();
    std::fs::write(env.path("teams/t/inboxes/coder.json.corrupt-1"), "x").unwrap();
    let s = env.swarm(["--json", "status"]).ok().json();
    let coder = member(&s, "coder");
    assert_eq!(coder["task"], json!({"id": "1", "subject": "parser"}));
    assert_eq!(coder["unread"], 1);
    assert_eq!(s["pendingPermissions"][0]["toolName"], "Bash");
    assert_eq!(
        s["quarantined"],
        json!(["teams/t/inboxes/coder.json.corrupt-1"])
    );
    let text = env.swarm(["status"]).ok().stdout;
    assert!(text.contains("#1 parser"), "{text}");
    assert!(text.contains("pending permissions: 1"), "{text}");
    assert!(text.contains("coder.json.corrupt-1"), "{text}");
}
