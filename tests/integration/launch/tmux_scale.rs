//! Layout at scale (issue 20 item 5): past `--panes-per-window` panes (the swarm file's
//! `panesPerWindow`, default 16) a launch opens further windows of the team's session, `swarm
//! attach NAME` selects the window the member is in, and tmux's "no space for new pane" in a
//! small terminal never fails a launch (it used to roll the whole launch back).

use std::io::Write;
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::json;

use super::{fake_agent, swarm_on, without_forwarded_env};
use crate::support::*;

/// Each window of the server (in index order): its name and its panes' members in reading
/// order (top, then left).
fn windows(tmux: &Tmux) -> Vec<(String, Vec<String>)> {
    let out = tmux.cmd([
        "list-panes",
        "-a",
        "-F",
        "#{window_index}\t#{window_name}\t#{pane_top}\t#{pane_left}\t#{@swarm-member}\t#{pane_dead}",
    ]);
    let mut rows: Vec<(u32, String, u32, u32, String)> = out
        .stdout
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f[5], "0", "every pane is alive: {l}");
            (
                f[0].parse().unwrap(),
                f[1].to_string(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
                f[4].to_string(),
            )
        })
        .collect();
    rows.sort();
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for (_, name, _, _, member) in rows {
        match out.last_mut() {
            Some((n, members)) if *n == name => members.push(member),
            _ => out.push((name, vec![member])),
        }
    }
    out
}

fn teammate_args(names: impl IntoIterator<Item = String>) -> Vec<String> {
    names
        .into_iter()
        .flat_map(|n| ["--teammate".to_string(), format!("{n}=go")])
        .collect()
}

/// `swarm attach NAME` on a terminal of its own (`script` gives it one); killed on drop.
struct Attached(Child);

impl Drop for Attached {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn attach(env: &Env, tmux: &Tmux, name: &str) -> Attached {
    let mut child = clean_command("script")
        .args(["-qfec", &format!("'{BIN}' attach {name}"), "/dev/null"])
        .env("SWARM_ROOT", env.root())
        .env("SWARM_TEAM", "t")
        .env("XDG_STATE_HOME", env.path("state"))
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .env("TERM", "xterm")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("script (util-linux) is installed");
    // Keeps the terminal's input open while tmux is attached.
    let _ = child.stdin.as_mut().unwrap().flush();
    Attached(child)
}

#[test]
fn past_panes_per_window_the_panes_go_into_further_windows_and_attach_selects_the_right_one() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(&env, "sleep 300");
    let names: Vec<String> = (0..20).map(|i| format!("m{i:02}")).collect();
    let mut args = vec![
        "launch".to_string(),
        "--panes-per-window".into(),
        "8".into(),
    ];
    args.extend(teammate_args(names.clone()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    swarm_on(&env, &tmux, &agent, &args).ok();
    let got = windows(&tmux);
    let session = got[0].0.clone();
    assert!(session.starts_with("swarm-t-"), "{got:?}");
    let sizes: Vec<(String, usize)> = got.iter().map(|(n, m)| (n.clone(), m.len())).collect();
    assert_eq!(
        sizes,
        [
            (session.clone(), 8),
            (format!("{session}-2"), 8),
            (format!("{session}-3"), 5)
        ]
    );
    let order: Vec<String> = got.into_iter().flat_map(|(_, m)| m).collect();
    let mut want = vec!["team-lead".to_string()];
    want.extend(names.iter().cloned());
    assert_eq!(order, want, "roster order, window after window");

    // A member in the third window: attaching to it shows that window and that pane.
    let pane = member(&read_json(&env.path("teams/t/config.json")), "m17")["tmuxPaneId"]
        .as_str()
        .unwrap()
        .to_string();
    let _attached = attach(&env, &tmux, "m17");
    let seen = eventually(Duration::from_secs(20), "a client on m17's window", || {
        let clients = tmux.cmd(["list-clients", "-F", "#{window_name} #{pane_id}"]);
        let line = clients.stdout.lines().next()?.to_string();
        Some(line)
    });
    assert_eq!(seen, format!("{session}-3 {pane}"));
    drop(_attached);

    // A second launch fills the last window up to 8, then opens a fourth.
    let more: Vec<String> = (20..24).map(|i| format!("m{i:02}")).collect();
    let mut args = vec![
        "launch".to_string(),
        "--panes-per-window".into(),
        "8".into(),
    ];
    args.extend(teammate_args(more));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    swarm_on(&env, &tmux, &agent, &args).ok();
    let sizes: Vec<usize> = windows(&tmux).iter().map(|(_, m)| m.len()).collect();
    assert_eq!(sizes, [8, 8, 8, 1]);
    env.swarm(["down", "--force", "--timeout", "5"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
}

#[test]
fn the_swarm_file_sets_panes_per_window_and_zero_is_refused() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(&env, "sleep 300");
    let file = env.path("team.json");
    let teammates: Vec<_> = (0..4)
        .map(|i| json!({"name": format!("w{i}"), "prompt": "go"}))
        .collect();
    let write = |per: u64| {
        std::fs::write(
            &file,
            json!({"team": "t", "panesPerWindow": per, "teammates": teammates}).to_string(),
        )
        .unwrap();
    };
    write(0);
    swarm_on(&env, &tmux, &agent, &["launch", file.to_str().unwrap()])
        .refused("panesPerWindow is 0; give the most panes one tmux window may hold, 1 or more");
    swarm_on(
        &env,
        &tmux,
        &agent,
        &["launch", "--panes-per-window", "0", "--teammate", "a=go"],
    )
    .refused("--panes-per-window");
    write(2);
    swarm_on(&env, &tmux, &agent, &["launch", file.to_str().unwrap()]).ok();
    let sizes: Vec<usize> = windows(&tmux).iter().map(|(_, m)| m.len()).collect();
    assert_eq!(
        sizes,
        [2, 2, 1],
        "the lead and four teammates, two a window"
    );
    env.swarm(["down", "--force", "--timeout", "5"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
}

#[test]
fn a_terminal_too_small_for_the_panes_never_fails_the_launch() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(&env, "sleep 300");
    // The user's tmux: a 30x8 terminal.
    tmux.cmd([
        "new-session",
        "-d",
        "-s",
        "main",
        "-x",
        "30",
        "-y",
        "8",
        "sleep",
        "600",
    ]);
    tmux.cmd(["set-option", "-g", "default-size", "30x8"]);
    // It is that small: a window there runs out of room for splits well before 13 panes.
    tmux.cmd([
        "new-window",
        "-d",
        "-t",
        "main:",
        "-n",
        "probe",
        "sleep",
        "600",
    ]);
    tmux.cmd([
        "set-option",
        "-w",
        "-t",
        "main:probe",
        "pane-border-status",
        "top",
    ]);
    let refused = (0..13).find_map(|_| {
        let out = tmux.cmd(["split-window", "-t", "main:probe", "sleep", "600"]);
        tmux.cmd(["select-layout", "-t", "main:probe", "tiled"]);
        out.stderr.contains("no space for new pane").then_some(())
    });
    assert!(refused.is_some(), "a 30x8 window takes no 13 panes");
    tmux.cmd(["kill-window", "-t", "main:probe"]);

    let info = tmux.cmd([
        "display-message",
        "-p",
        "-t",
        "main",
        "#{socket_path},#{pane_id}",
    ]);
    let info = info.stdout.trim().to_string();
    let (server, user_pane) = info.rsplit_once(',').unwrap();
    let names: Vec<String> = (0..12).map(|i| format!("s{i:02}")).collect();
    let mut args = vec!["launch".to_string()];
    args.extend(teammate_args(names.clone()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = without_forwarded_env(
        env.swarm(&args)
            .env("TMUX", format!("{server},0"))
            .env("TMUX_PANE", user_pane)
            .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent),
    )
    .ok();
    assert!(
        out.stdout.contains("12 teammates started"),
        "{}",
        out.stdout
    );
    let got = windows(&tmux);
    let team: Vec<&(String, Vec<String>)> = got
        .iter()
        .filter(|(n, _)| n.starts_with("swarm-t-"))
        .collect();
    assert!(team.len() > 1, "more than one window: {got:?}");
    let order: Vec<String> = team.iter().flat_map(|(_, m)| m.clone()).collect();
    let mut want = vec!["team-lead".to_string()];
    want.extend(names);
    assert_eq!(order, want, "every pane, in roster order: {got:?}");
    let doc = env.swarm(["--json", "status"]).ok().json();
    for m in doc["members"].as_array().unwrap() {
        assert_eq!(m["pane"]["state"], "alive", "{m}");
    }
}
