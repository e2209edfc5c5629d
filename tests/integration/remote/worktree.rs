//! A remote teammate's git worktree is made on its host, in the host's repository, and
//! finished there when it shuts down: removed when unchanged, as a local one is.

use std::process::Command;

use serde_json::json;

use super::RemoteTeam;
use crate::support::*;

#[test]
fn a_remote_worktree_is_made_and_finished_on_its_host() {
    let team = RemoteTeam::new(&["box1"]);
    let host = team.hosts.get("box1");
    let repo = host.home.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(ok.status.success(), "git {args:?}: {ok:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(repo.join("README"), "hi\n").unwrap();
    git(&["add", "README"]);
    git(&["commit", "-q", "-m", "first"]);
    let file = team.file(
        "team.json",
        &json!({"team": "t", "agent": "shell", "remoteSwarm": BIN,
                "teammates": [{"name": "builder", "host": "box1", "cwd": "repo",
                               "worktree": true,
                               "prompt": "$ swarm send --to team-lead \"in $PWD\""}]}),
    );
    team.launch(&file);
    let tree = repo.join(".swarm/worktrees/builder");
    let said = format!("in {}", tree.display());
    team.eventually("builder's message from its worktree", || {
        team.texts_from("team-lead", "builder")
            .contains(&said)
            .then_some(())
    });
    assert!(tree.join("README").exists(), "the worktree is on its host");
    assert!(!team.env.path("repo").exists());
    let out = team.swarm(["shutdown", "builder", "--timeout", "60"]).ok();
    assert!(out.stdout.contains("removed (unchanged)"), "{out:?}");
    assert!(!tree.exists(), "finished on its host");
    team.swarm(["down", "--timeout", "30"]).ok();
}
