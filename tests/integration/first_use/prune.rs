//! Item 9: `swarm prune TEAM` touches only the teams named; deleting a team (prune, `team
//! delete`) removes its teammates' unchanged git worktrees and their `swarm/<team>/*` branches
//! and keeps and names the changed ones; answering `n` at prune's prompt is not an error.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use super::*;

#[test]
fn prune_with_a_team_named_leaves_the_other_teams_alone() {
    let env = Env::with_team(&["a"]);
    // Team u's teammate died (its pane is dead): what prune retires, in a team it was told of.
    let tmux = Tmux::new();
    let agent = env.path("agent");
    std::fs::write(&agent, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    // (No wait: a teammate that exits at once is what this test wants, not a launch's report.)
    env.swarm([
        "--team",
        "u",
        "launch",
        "--no-lead-pane",
        "--no-wait",
        "--teammate",
        "b=hi",
    ])
    .env("SWARM_TMUX_SOCKET", &tmux.socket)
    .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
    .ok();
    eventually(LONG, "b's pane to be dead", || {
        let dead = tmux.cmd(["list-panes", "-a", "-F", "#{pane_dead}"]).stdout;
        (dead.trim() == "1").then_some(())
    });
    let out = env.swarm(["prune", "t", "--yes"]).ok();
    assert!(out.stdout.contains("delete team t"), "{}", out.stdout);
    assert!(!env.path("teams/t").exists());
    assert!(!out.stdout.contains("team u"), "{}", out.stdout);
    let u = read_json(&env.path("teams/u/config.json"));
    assert_eq!(member(&u, "b")["isActive"], true, "{u}");
    // The control: told of no team, prune does retire the dead b.
    let all = env.swarm(["prune", "--yes"]).ok();
    assert!(all.stdout.contains("b of team u"), "{}", all.stdout);
}

#[test]
fn answering_no_at_prunes_prompt_prunes_nothing_and_is_not_an_error() {
    let env = Env::with_team(&["a"]);
    let mut child = clean_command("script")
        .args(["-qec", &format!("'{BIN}' prune t"), "/dev/null"])
        .env("SWARM_ROOT", env.root())
        .env("XDG_STATE_HOME", env.path("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script (util-linux) is installed");
    let stdout = drain(child.stdout.take());
    child.stdin.take().unwrap().write_all(b"n\n").unwrap();
    let status = child.wait().unwrap();
    let out = stdout.join().unwrap();
    assert!(out.contains("Go ahead?"), "the prompt was asked: {out}");
    assert!(out.contains("nothing pruned"), "{out}");
    assert!(!out.contains("error"), "{out}");
    assert!(status.success(), "{status}: {out}");
    assert!(env.path("teams/t/config.json").is_file());
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn deleting_a_team_removes_its_unchanged_worktrees_and_names_the_changed_ones() {
    for how in ["prune", "team delete"] {
        let env = Env::new();
        let tmux = Tmux::new();
        let repo = env.path("repo");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        std::fs::write(repo.join("lib.rs"), "// lib\n").unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-qm", "init"]);
        // Each teammate exits at once (changer after writing a file): nobody retires them.
        let agent = env.path("agent");
        std::fs::write(
            &agent,
            "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --agent-name ] && name=$2; shift; done\n\
             [ \"$name\" = changer ] && echo new > made.txt\nexit 0\n",
        )
        .unwrap();
        std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
        let file = env.path("team.json");
        std::fs::write(
            &file,
            json!({"team": "t", "cwd": "repo", "teammates": [
                {"name": "idle", "prompt": "p", "worktree": true},
                {"name": "changer", "prompt": "p", "worktree": true}]})
            .to_string(),
        )
        .unwrap();
        // The teammates exit at once on purpose: the launch is not asked to see them up.
        env.swarm(["launch", "team.json", "--no-lead-pane", "--no-wait"])
            .current_dir(env.root())
            .env("SWARM_TMUX_SOCKET", &tmux.socket)
            .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
            .ok();
        let wt = |n: &str| repo.join(".swarm/worktrees").join(n);
        eventually(LONG, "both teammates to exit", || {
            let dead = tmux.cmd(["list-panes", "-a", "-F", "#{pane_dead}"]).stdout;
            (wt("changer").join("made.txt").is_file() && dead.lines().all(|d| d == "1"))
                .then_some(())
        });
        let out = match how {
            "prune" => env.swarm(["prune", "t", "--yes"]).ok(),
            _ => env.swarm(["team", "delete", "t", "--force"]).ok(),
        };
        assert!(!wt("idle").exists(), "{how}: {}", out.stdout);
        assert!(wt("changer").join("made.txt").is_file(), "{how}");
        assert!(
            out.stdout.contains(&format!(
                "worktree {} kept on branch swarm/t/changer",
                wt("changer").display()
            )),
            "{how}: {}",
            out.stdout
        );
        let branches = git(&repo, &["branch", "--list", "swarm/*"]);
        assert!(!branches.contains("swarm/t/idle"), "{how}: {branches}");
        assert!(branches.contains("swarm/t/changer"), "{how}: {branches}");
    }
}
