//! Item 10, the smaller things: a mistyped team name suggests the closest team there is; `swarm
//! kill` and `swarm logs` say what their argument is; `swarm team create` takes the team from
//! `--team` as every other command does; `--model` and `--permission-mode` given to a shell
//! teammate are warned about, not dropped without a word.

use super::*;

#[test]
fn a_mistyped_team_name_suggests_the_closest_team() {
    let env = Env::new();
    env.swarm(["team", "create", "hello"]).ok();
    env.swarm(["team", "create", "world"]).ok();
    env.swarm(["--team", "helo", "status"])
        .not_found("did you mean hello?");
    // Nothing close: no guess.
    let out = env
        .swarm(["--team", "zzzzzz", "status"])
        .not_found("does not exist");
    assert!(!out.stderr.contains("did you mean"), "{}", out.stderr);
}

#[test]
fn kill_and_logs_say_what_their_argument_is() {
    let env = Env::new();
    for command in ["kill", "logs"] {
        let help = env.swarm([command, "--help"]).ok().stdout;
        let arguments = help
            .split("Arguments:")
            .nth(1)
            .and_then(|rest| rest.split("Options:").next())
            .unwrap_or_default();
        assert!(
            arguments.contains("<NAME>") && arguments.contains("teammate"),
            "{command}: {help}"
        );
    }
}

#[test]
fn team_create_takes_the_team_from_the_team_flag() {
    let env = Env::new();
    env.swarm(["--team", "made", "team", "create"])
        .env_remove("SWARM_TEAM")
        .ok();
    assert!(env.path("teams/made/config.json").is_file());
    // Neither: say what to give.
    env.swarm(["team", "create"])
        .env_remove("SWARM_TEAM")
        .refused("name the team to create");
}

#[test]
fn model_and_permission_mode_given_to_shell_teammates_are_warned_about() {
    let env = Env::new();
    let out = env
        .swarm([
            "launch",
            "--agent",
            "shell",
            "--teammate",
            "a=$ echo hi",
            "--model",
            "sonnet",
            "--permission-mode",
            "acceptEdits",
            "--dry-run",
        ])
        .ok();
    out.stderr_has(
        "swarm: warning: teammate a: a shell teammate runs no model, so --model and \
         --permission-mode do nothing for it",
    );
    // Without them, no warning.
    let quiet = env
        .swarm([
            "launch",
            "--agent",
            "shell",
            "--teammate",
            "a=$ echo hi",
            "--dry-run",
        ])
        .ok();
    assert!(!quiet.stderr.contains("warning"), "{}", quiet.stderr);
}
