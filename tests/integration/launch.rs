//! The launcher end to end: real tmux servers on private sockets, fake agents (small `sh`
//! scripts that dump their argv, env and cwd, or answer shutdown requests), a fake `it2`, real
//! git repositories, and real signals sent to a foreground `swarm launch`.
//!
//! The teammate runtime (`swarm teammate`) is another module's job, so pane tests use the
//! `claude` kind with `CLAUDE_CODE_TEAMMATE_COMMAND` pointing at a fake agent; the runtime's
//! command line is checked with `--dry-run`. This file holds the fakes the topics share.

mod bad_input;
mod dry_run;
mod in_process;
mod iterm2;
mod ops;
mod tmux;
mod tmux_identity;
mod tmux_layout;
mod tmux_safety;
mod tmux_scale;
mod verify;
mod worktree;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use crate::support::*;

/// Milliseconds since the epoch, as the launcher stamps `--lead-verify-key`.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The `--lead-verify-key` value in `argv`, checked to be the team's key (`swarm debug
/// lead-verify-key`) stamped no earlier than `since_ms`: each launch stamps it with its own
/// start, as Claude Code's lead does, since Claude believes no lead entry more than 120 s older
/// than that stamp (issue 25 item 3).
fn launch_verify_key(env: &Env, argv: &[String], since_ms: u64) -> String {
    let at = argv
        .iter()
        .position(|a| a == "--lead-verify-key")
        .expect("a verify key");
    let value = argv[at + 1].clone();
    let team_key = env.swarm(["debug", "lead-verify-key"]).ok().stdout;
    let (ms, key) = value.split_once('.').unwrap();
    assert_eq!(Some(key), team_key.trim().split_once('.').map(|(_, k)| k));
    let ms: u64 = ms.parse().unwrap();
    assert!(
        ms >= since_ms && ms <= now_ms(),
        "stamped {ms}, launched at {since_ms}"
    );
    value
}

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
name=""; team=""; prev=""
for a in "$@"; do
  case "$prev" in --agent-name) name="$a";; --team-name) team="$a";; esac
  prev="$a"
done
# Temp names carry the member, not $$: contained teammates each have a pid namespace of their
# own, where two fakes can both be pid 2.
for a in "$@"; do printf '%s\n' "$a"; done > "$out/argv.$name"
mv "$out/argv.$name" "$out/$name.argv"
env | sort > "$out/env.$name"; mv "$out/env.$name" "$out/$name.env"
pwd > "$out/cwd.$name"; mv "$out/cwd.$name" "$out/$name.cwd"
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

/// The variables of the test process that a launch forwards to a teammate (PROTOCOL.md section
/// 10: proxies, certificates, the API endpoint), so tests can remove them and see only what they
/// set. Asked of the launcher itself: a dry run with the test's own environment lists them in
/// the teammate's env with the test's values (a key's value as `<redacted>`).
fn forwarded_from_host() -> &'static [String] {
    static FORWARDED: OnceLock<Vec<String>> = OnceLock::new();
    FORWARDED.get_or_init(|| {
        let env = Env::new();
        let doc = env
            .swarm([
                "--json",
                "launch",
                "--agent",
                "shell",
                "--teammate",
                "probe=p",
                "--backend",
                "in-process",
                "--dry-run",
            ])
            .current_dir(env.root())
            .ok()
            .json();
        let teammate_env = doc["teammates"][0]["env"].as_object().unwrap();
        teammate_env
            .iter()
            .filter(|(k, v)| {
                std::env::var(k).is_ok_and(|host| **v == host.as_str() || **v == "<redacted>")
            })
            .map(|(k, _)| k.clone())
            .collect()
    })
}

/// `s` without the forwarded variables the test process has (see [`forwarded_from_host`]).
fn without_forwarded_env(mut s: Swarm) -> Swarm {
    for k in forwarded_from_host() {
        s = s.env_remove(k);
    }
    s
}

/// `swarm` with the fake claude, a private tmux server and no forwarded env from the host.
fn swarm_on(env: &Env, tmux: &Tmux, agent: &Path, args: &[&str]) -> Swarm {
    without_forwarded_env(
        env.swarm(args)
            .env("SWARM_TMUX_SOCKET", &tmux.socket)
            .env("CLAUDE_CODE_TEAMMATE_COMMAND", agent),
    )
}

fn pane_field(tmux: &Tmux, pane: &str, format: &str) -> String {
    tmux.cmd(["display-message", "-p", "-t", pane, format])
        .stdout
        .trim()
        .to_string()
}
