//! Git worktrees per teammate: each starts in its own worktree, in the subdirectory the launch
//! named; unchanged worktrees are removed afterwards and changed ones kept on their branch.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use super::{fake_agent, lines};
use crate::support::*;

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
    .refused("needs a git repository");
}

#[test]
fn a_kept_worktree_is_reused_on_relaunch_and_the_advice_for_a_stale_one_works() {
    let env = Env::new();
    let repo = env.path("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("README"), "hi\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "init"]);
    let agent = fake_agent(&env, "echo more >> made-by-writer.txt; exit 0");
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "t", "cwd": "repo", "teammates": [
            {"name": "writer", "prompt": "p", "worktree": true}]})
        .to_string(),
    )
    .unwrap();
    let launch = || {
        env.swarm(["launch", file.to_str().unwrap(), "--backend", "in-process"])
            .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
    };
    let wt = repo.join(".swarm/worktrees/writer");
    launch().ok();
    assert!(wt.join("made-by-writer.txt").is_file());
    // Relaunched while still on the roster: it carries on in the worktree it kept.
    std::fs::remove_file(env.path("out/writer.cwd")).unwrap();
    let out = launch().ok();
    assert!(out.stdout.contains("(started again)"), "{}", out.stdout);
    assert_eq!(
        lines(&env.path("out/writer.cwd")),
        [wt.display().to_string()]
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("made-by-writer.txt")).unwrap(),
        "more\nmore\n"
    );

    // Taken off the roster, the kept worktree is in the way; the advice given clears it.
    env.swarm(["team", "remove", "writer"]).ok();
    let refused = launch().refused("is still there from an earlier run (branch swarm/t/writer)");
    let advice = refused
        .stderr
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no command in {}", refused.stderr))
        .to_string();
    assert_eq!(
        advice,
        format!(
            "git -C {0} worktree remove --force {1} && git -C {0} branch -D swarm/t/writer",
            repo.display(),
            wt.display()
        )
    );
    let ran = Command::new("sh").args(["-c", &advice]).output().unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    launch().ok();
    assert_eq!(
        std::fs::read_to_string(wt.join("made-by-writer.txt")).unwrap(),
        "more\n",
        "a fresh worktree"
    );
}

/// A claude teammate in a worktree finds the worktree's path and branch in its first message,
/// with the paths its prompt names in the main checkout flagged beside their copies; one
/// started with `--permission-mode plan` is on the roster as plan mode required (issue 28).
#[test]
fn a_worktree_teammate_is_told_where_it_is_and_plan_mode_follows_the_permission_mode() {
    let env = Env::new();
    let repo = env.path("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("src/lib.rs"), "// lib\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "init"]);
    let agent = fake_agent(&env, "exit 0");
    let prompt = format!("Fix {}/src/lib.rs", repo.display());
    env.swarm([
        "--team",
        "t",
        "launch",
        "--backend",
        "in-process",
        "--agent",
        "claude",
        "--worktree",
        "--permission-mode",
        "plan",
        "--teammate",
        &format!("coder={prompt}"),
    ])
    .current_dir(&repo)
    .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
    .ok();
    let wt = repo.join(".swarm/worktrees/coder");
    let inbox = read_json(&env.path("teams/t/inboxes/coder.json"));
    let first = inbox[0]["text"].as_str().unwrap();
    assert!(first.starts_with(&prompt), "{first}");
    assert!(
        first.contains(&format!("{} on branch swarm/t/coder", wt.display())),
        "{first}"
    );
    assert!(
        first.contains(&format!(
            "  {}/src/lib.rs is, in your worktree, {}/src/lib.rs",
            repo.display(),
            wt.display()
        )),
        "{first}"
    );
    let roster = read_json(&env.path("teams/t/config.json"));
    assert_eq!(
        member(&roster, "coder")["planModeRequired"],
        true,
        "{roster}"
    );
    assert_eq!(member(&roster, "coder")["mode"], "plan");
    let argv = lines(&env.path("out/coder.argv"));
    assert!(
        argv.contains(&"--plan-mode-required".to_string()),
        "{argv:?}"
    );
}
