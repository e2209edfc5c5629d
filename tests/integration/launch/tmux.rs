//! Teammates in tmux panes: titles, colours, flags and env on a private server, a window of the
//! caller's own session when the launch runs inside tmux (or a split of it), and a launch whose
//! tmux call fails rolled back without touching anyone else's panes.

use std::process::Command;
use std::time::Duration;

use serde_json::json;

use super::{
    fake_agent, lines, pane_field, swarm_on, wait_for_file, without_forwarded_env, write_script,
};
use crate::support::*;

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
    let since = super::now_ms();
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
    // The session is `swarm-<team>-<hash of the root>`, and it is the only one.
    let sessions = tmux.cmd(["list-sessions", "-F", "#{session_name}"]).stdout;
    let session = sessions.trim();
    assert!(session.starts_with("swarm-t-"), "{sessions}");
    let panes = tmux.cmd([
        "list-panes",
        "-t",
        &format!("={session}"),
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
    // The lead console is the first pane, started through the trampoline as
    // `swarm lead --team t`: the pane's process is the lead itself.
    assert!(
        pane_field(&tmux, lead_pane, "#{pane_start_command}").contains(" pane-exec "),
        "tmux only ever starts `swarm pane-exec SPEC`"
    );
    let lead_pid = pane_field(&tmux, lead_pane, "#{pane_pid}");
    let lead_argv = eventually(Duration::from_secs(20), "the lead console", || {
        let cmdline = std::fs::read(format!("/proc/{lead_pid}/cmdline")).ok()?;
        let words: Vec<String> = cmdline
            .split(|b| *b == 0)
            .filter(|w| !w.is_empty())
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        (words.get(1).map(String::as_str) == Some("lead")).then_some(words)
    });
    assert_eq!(lead_argv, [BIN, "lead", "--team", "t"]);

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
    let lead_key = super::launch_verify_key(&env, &argv, since);
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
            "--lead-verify-key",
            lead_key.trim(),
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
        without_forwarded_env(
            env.swarm(args)
                .env("TMUX", format!("{server},0"))
                .env("TMUX_PANE", user_pane)
                .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent),
        )
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
        windows
            .iter()
            .any(|w| w.starts_with("swarm-t-") && w.ends_with(" 3")),
        "lead + 2 in window swarm-t-<root hash>: {windows:?}"
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
    // Every fake agent is done writing before the store is compared below.
    for name in ["coder", "tester", "a", "b"] {
        wait_for_file(&env.path(&format!("out/{name}.cwd")));
    }

    // --split outside tmux is refused, writing nothing.
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
    .refused("not running inside tmux");
}

#[test]
fn a_launch_whose_tmux_call_fails_kills_exactly_its_own_panes_marked_or_not() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(&env, "sleep 300");
    // Others on the same server: a pane of the user's and a team launched before.
    tmux.cmd(["new-session", "-d", "-s", "bystander", "sleep", "600"]);
    swarm_on(
        &env,
        &tmux,
        &agent,
        &["--team", "other", "launch", "--teammate", "keeper=go"],
    )
    .ok();
    let before = tmux
        .cmd(["list-panes", "-a", "-F", "#{pane_id} #{pane_dead}"])
        .stdout;
    assert_eq!(
        before.lines().count(),
        3,
        "bystander + lead + keeper: {before}"
    );
    // A tmux that fails the launch's call right after it made tester's pane, before the
    // commands that mark it; it logs what tmux printed (the ids of the panes it made).
    let real = which_tmux();
    let bin = env.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = env.path("tmux-out.log");
    write_script(
        &bin.join("tmux"),
        &format!(
            r#"#!/bin/bash
args=()
for a in "$@"; do
  args+=("$a")
  case "$a" in */spawn/tester.*.json) args+=(';' select-pane -t '%999999') ;; esac
done
out=$('{real}' "${{args[@]}}"); rc=$?
case "$*" in *" -P "*) printf '%s\n' "$out" >> '{log}' ;; esac
printf '%s\n' "$out"
exit $rc
"#,
            log = log.display()
        ),
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = swarm_on(
        &env,
        &tmux,
        &agent,
        &[
            "launch",
            "--teammate",
            "coder=go",
            "--teammate",
            "tester=go",
            "--teammate",
            "docs=go",
        ],
    )
    .env("PATH", &path)
    .code(1);
    out.stderr_has("can't find pane");
    // tmux made the lead's, coder's and tester's panes (tester's never got its marks)...
    let made: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| l.split('\t').next())
        .filter(|id| id.starts_with('%'))
        .map(str::to_string)
        .collect();
    assert_eq!(made.len(), 3, "lead, coder, tester: {made:?}");
    // ...and every one of them is gone, while the others' panes are still there, alive.
    let after = tmux
        .cmd(["list-panes", "-a", "-F", "#{pane_id} #{pane_dead}"])
        .stdout;
    assert_eq!(after, before, "only the launch's own panes were killed");
    for id in &made {
        assert!(!after.contains(&format!("{id} ")), "{id} was left: {after}");
    }
    // Nothing of the new team is left, and no spec file of it.
    assert!(!env.path("teams/t").exists());
    assert!(!env.path("tasks/t").exists());
    assert_eq!(
        member(&read_json(&env.path("teams/other/config.json")), "keeper")["isActive"],
        true
    );
    eventually(
        Duration::from_secs(20),
        "the other team still alive",
        || {
            let doc = env
                .swarm(["--team", "other", "--json", "status"])
                .env("SWARM_TMUX_SOCKET", &tmux.socket)
                .ok()
                .json();
            (member(&doc, "keeper")["pane"]["state"] == "alive").then_some(())
        },
    );
}

fn which_tmux() -> String {
    let out = Command::new("sh")
        .args(["-c", "command -v tmux"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The lead console in its pane signs with the key the launcher made, on a tmux server that
/// was started by someone else and whose environment points elsewhere: the pane gets the
/// launcher's state directory. (Before, the console used the server's, a user's real
/// `~/.local/state/swarm` in tests, and made a second key there that no teammate trusts.)
#[test]
fn a_lead_pane_on_a_server_started_elsewhere_signs_with_the_launchers_key() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(&env, "sleep 300");
    tmux.cmd(["new-session", "-d", "-s", "bystander", "sleep", "600"]);
    swarm_on(&env, &tmux, &agent, &["launch", "--teammate", "coder=go"]).ok();
    let config = read_json(&env.path("teams/t/config.json"));
    let lead = member(&config, "team-lead")["tmuxPaneId"]
        .as_str()
        .unwrap()
        .to_string();
    // A message typed into the console is signed as the lead's.
    let sent = eventually(Duration::from_secs(30), "the console's message", || {
        tmux.cmd([
            "send-keys",
            "-t",
            &lead,
            "@coder typed in the console",
            "Enter",
        ]);
        std::thread::sleep(Duration::from_millis(500));
        let inbox = read_json(&env.path("teams/t/inboxes/coder.json"));
        inbox
            .as_array()?
            .iter()
            .find(|m| m["text"] == "typed in the console")
            .cloned()
    });
    assert_eq!(sent["from"], "team-lead");
    assert!(sent["lead_sig"].is_string(), "{sent}");
    let keys = |dir: &std::path::Path| -> usize {
        std::fs::read_dir(dir.join("swarm/lead-keys")).map_or(0, |d| d.count())
    };
    assert_eq!(
        keys(&env.path("state")),
        1,
        "the launcher's key, and only it"
    );
    assert_eq!(
        keys(tmux.state()),
        0,
        "no key under the tmux server's state directory"
    );
}
