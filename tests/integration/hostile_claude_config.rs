//! Issue 22, attack 7's rest: a contained teammate cannot act as the lead through the files
//! swarm reads outside every sandbox to decide which hooks run: the trust record in
//! `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`), which lets a project's hooks run,
//! the user-level `settings.json` under `~/.claude` (or `$CLAUDE_CONFIG_DIR`), whose hooks
//! run with no trust step, and swarm's own trust list in its private state. Each test has a hostile shell teammate write them from inside its
//! sandbox (the scripts in `support/hostile.rs`), then the lead runs `swarm task create` in the
//! project, outside, and no planted hook runs; a control then proves the hook was live.

use serde_json::json;

use crate::hostile_teammate::{fill, launch, TEAM};
use crate::support::hostile::*;
use crate::support::*;

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// A contained teammate writes the user's `~/.claude.json` (its home is not hidden: the
/// agent's own config must work), marking the project trusted as Claude Code's trust dialog
/// would; the hook it planted in the project does not run in the lead's own shell, and the
/// user's file is as it was.
#[test]
fn a_teammate_cannot_trust_a_directory_through_claude_codes_config() {
    let env = Env::new();
    let tmux = Tmux::new();
    let proj = env.path("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let home = env.path("state/home");
    std::fs::create_dir_all(&home).unwrap();
    let user_config = r#"{"numStartups": 3, "projects": {}}"#;
    std::fs::write(home.join(".claude.json"), user_config).unwrap();
    let doc = json!({"team": TEAM, "agent": "shell", "cwd": proj,
        "teammates": [{"name": "evil"}]});
    launch(&env, &tmux, &doc);
    let fill = fill(&env, &proj);
    owned_task(
        &env,
        "evil",
        CLAUDE_TRUST.name,
        &CLAUDE_TRUST.script(&fill),
        &[],
    );
    let said = report(&proj, CLAUDE_TRUST.name);
    says(&said, "hooks: planted");
    says(&said, "claude trust: written");
    let out = env
        .swarm(["task", "create", "lead-probe"])
        .current_dir(&proj)
        .run_within(REFUSAL_LIMIT);
    env.swarm(["down"]).ok();
    assert!(
        !proj.join("hook-ran").exists(),
        "the planted hook ran in the lead's shell: {said}\n{out:?}"
    );
    assert_eq!(out.code, 0, "{out:?}");
    out.stderr_has("is not a trusted directory");
    assert_eq!(read(&home.join(".claude.json")), user_config);

    // The control: with the user's own trust record the same planted hook runs.
    let trusted =
        json!({"projects": {proj.display().to_string(): {"hasTrustDialogAccepted": true}}});
    std::fs::write(home.join(".claude.json"), trusted.to_string()).unwrap();
    env.swarm(["task", "create", "trusted-probe"])
        .current_dir(&proj)
        .ok();
    assert!(proj.join("hook-ran").exists(), "the planted hook was live");
}

/// A contained teammate writes a hook into the user-level settings swarm reads outside:
/// `~/.claude/settings.json` (which the user has not made) and `$CLAUDE_CONFIG_DIR/settings.json`
/// (which they have), and a trust record into `$CLAUDE_CONFIG_DIR/.claude.json`. The lead's
/// `swarm task create` runs none of it, with or without `CLAUDE_CONFIG_DIR`, and the user's files
/// are as they were.
#[test]
fn a_teammate_cannot_plant_a_hook_in_the_users_own_settings() {
    let env = Env::new();
    let tmux = Tmux::new();
    let proj = env.path("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let home = env.path("state/home");
    std::fs::create_dir_all(&home).unwrap();
    let config_dir = env.path("state/claude-config");
    std::fs::create_dir_all(&config_dir).unwrap();
    let user_settings = r#"{"env": {"FROM_THE_USER": "1"}}"#;
    std::fs::write(config_dir.join("settings.json"), user_settings).unwrap();
    let doc = json!({"team": TEAM, "agent": "shell", "cwd": proj,
        "teammates": [{"name": "evil"}]});
    std::fs::write(env.path("team.json"), doc.to_string()).unwrap();
    env.swarm(["launch", env.path("team.json").to_str().unwrap()])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .env("CLAUDE_CONFIG_DIR", &config_dir)
        .ok();
    let fill = fill(&env, &proj);
    owned_task(
        &env,
        "evil",
        USER_HOOKS.name,
        &USER_HOOKS.script(&fill),
        &[],
    );
    let said = report(&proj, USER_HOOKS.name);
    says(&said, "hooks: ready");
    says(&said, &format!("config dir: {}", config_dir.display()));
    let probe = |config: Option<&std::path::Path>| {
        let mut cmd = env
            .swarm(["task", "create", "lead-probe"])
            .current_dir(&proj);
        if let Some(dir) = config {
            cmd = cmd.env("CLAUDE_CONFIG_DIR", dir);
        }
        cmd.run_within(REFUSAL_LIMIT)
    };
    let (from_home, from_config_dir) = (probe(None), probe(Some(&config_dir)));
    env.swarm(["down"]).ok();
    assert!(
        !proj.join("hook-ran").exists(),
        "a planted hook ran in the lead's shell: {said}\n{from_home:?}\n{from_config_dir:?}"
    );
    for out in [&from_home, &from_config_dir] {
        assert_eq!(out.code, 0, "{out:?}");
        out.stderr_has("is not a trusted directory");
    }
    for label in ["home settings", "config dir settings"] {
        refused(&said, &format!("{label} copy"), "Read-only file system");
        refused(&said, &format!("{label} move"), "Device or resource busy");
    }
    for label in ["home settings dir moved", "config dir moved"] {
        refused(&said, label, "Device or resource busy");
    }
    let home_settings = read(&home.join(".claude/settings.json"));
    assert!(!home_settings.contains("hook-ran"), "{home_settings}");
    assert_eq!(read(&config_dir.join("settings.json")), user_settings);
    // The trust record was written, to the teammate's own copy.
    says(&said, "config dir trust: exit 0 ");
    let config = read(&config_dir.join(".claude.json"));
    assert!(!config.contains("hasTrustDialogAccepted"), "{config}");

    // The control: the same hook, written by the user, runs.
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::copy(
        proj.join("planted.settings"),
        home.join(".claude/settings.json"),
    )
    .unwrap();
    env.swarm(["task", "create", "user-probe"])
        .current_dir(&proj)
        .ok();
    assert!(proj.join("hook-ran").exists(), "the planted hook was live");
}

/// A contained teammate moves the state directory above swarm's hidden private state away (the
/// tmpfs goes with it) and makes a new one holding a trust list that names the project: the
/// move is refused, and the hook it planted in the project does not run in the lead's shell.
#[test]
fn a_teammate_cannot_put_its_own_private_state_where_swarm_looks() {
    let env = Env::new();
    let tmux = Tmux::new();
    let proj = env.path("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let doc = json!({"team": TEAM, "agent": "shell", "cwd": proj,
        "teammates": [{"name": "evil"}]});
    launch(&env, &tmux, &doc);
    let fill = fill(&env, &proj);
    owned_task(
        &env,
        "evil",
        MOVED_STATE.name,
        &MOVED_STATE.script(&fill),
        &[],
    );
    let said = report(&proj, MOVED_STATE.name);
    says(&said, "hooks: planted");
    let out = env
        .swarm(["task", "create", "lead-probe"])
        .current_dir(&proj)
        .run_within(REFUSAL_LIMIT);
    let down = env.swarm(["down"]).run();
    assert!(
        !proj.join("hook-ran").exists(),
        "the planted hook ran in the lead's shell: {said}\n{out:?}"
    );
    assert_eq!(out.code, 0, "{out:?}");
    out.stderr_has("is not a trusted directory");
    refused(&said, "state dir moved", "Device or resource busy");
    refused(&said, "team dir moved", "Device or resource busy");
    assert!(
        env.path("teams/t/lead").is_dir(),
        "the team stays where it was"
    );
    assert!(
        env.path("state/swarm/lead-keys").is_dir(),
        "the lead keys stay"
    );
    assert_eq!(down.code, 0, "{down:?}");

    // The control: once the user trusts the project, the planted hook runs.
    env.swarm(["trust", proj.to_str().unwrap()]).ok();
    env.swarm(["task", "create", "trusted-probe"])
        .current_dir(&proj)
        .ok();
    assert!(proj.join("hook-ran").exists(), "the planted hook was live");
}

/// Attacks that still succeed, each kept as the assertion that should hold.
/// The user's `~/.claude/settings.json` is a symlink (a dotfiles checkout). A mount cannot hold
/// a symlink in place (it lands on what the link names), so a contained teammate could remove the
/// link from the writable `~/.claude` and write a file with its own hook there, which the lead's
/// `swarm task create` (and Claude Code, outside any sandbox) would run. The launch refuses that
/// teammate, naming the link and what to do, and changes nothing and opens no pane; done as it says, the same launch
/// starts the teammate contained.
#[test]
fn a_symlinked_user_settings_file_is_refused_at_launch_not_left_replaceable() {
    let env = Env::new();
    let tmux = Tmux::new();
    let proj = env.path("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let home = env.path("state/home");
    let link = home.join(".claude/settings.json");
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::create_dir_all(home.join("dotfiles")).unwrap();
    std::fs::write(home.join("dotfiles/settings.json"), "{}").unwrap();
    std::os::unix::fs::symlink("../dotfiles/settings.json", &link).unwrap();
    let doc = json!({"team": TEAM, "agent": "shell", "cwd": proj,
        "teammates": [{"name": "evil"}]});
    let file = env.path("team.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let launch_it = || {
        env.swarm(["launch", file.to_str().unwrap()])
            .env("SWARM_TMUX_SOCKET", &tmux.socket)
    };
    let before = env.snapshot();
    let out = launch_it().run_within(REFUSAL_LIMIT);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        env.snapshot(),
        before,
        "the refused launch changed the store"
    );
    out.stderr_has("cannot contain teammate evil");
    out.stderr_has(&format!("{} is a symlink", link.display()));
    out.stderr_has("--no-sandbox");
    assert!(panes(&tmux).is_empty(), "a pane was opened: {out:?}");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());

    // Done as the message says, the launch goes on, contained.
    std::fs::remove_file(&link).unwrap();
    std::fs::copy(home.join("dotfiles/settings.json"), &link).unwrap();
    launch_it().ok();
    let status = env.swarm(["--json", "status"]).ok().json();
    env.swarm(["down"]).ok();
    assert_eq!(member(&status, "evil")["contained"], true, "{status}");
}
