//! Launches that must be refused before anything is written: bad teammate names and flags,
//! missing programs, a swarm file with a typo, an invalid team name, a name on the roster that
//! swarm cannot start again.

use super::fake_agent;
use crate::support::*;

/// `message` as the whole of stderr, the way swarm prints an error.
fn error(message: &str) -> String {
    format!("swarm: error: {message}\n")
}

#[test]
fn bad_launches_exit_2_and_write_nothing() {
    let env = Env::new();
    let agent = fake_agent(&env, "exit 0");
    let launch = |args: &[&str]| {
        let mut full = vec!["launch", "--backend", "in-process"];
        full.extend_from_slice(args);
        env.swarm(full).env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
    };
    launch(&["--teammate", "coder=a", "--teammate", "Coder=b"])
        .refused("duplicate teammate name")
        .stderr_is(&error(
            "duplicate teammate name \"Coder\" (names are unique ignoring case); rename one",
        ));
    launch(&["--teammate", "a;rm -rf ~=x"])
        .refused("invalid agent name")
        .stderr_is(&error(
            "invalid agent name \"a;rm -rf ~\": use letters, digits, '-' and '_', starting with \
             a letter or digit (at most 64)",
        ));
    launch(&["--teammate", "team-lead=x"])
        .refused("reserved")
        .stderr_is(&error(
            "invalid agent name \"team-lead\": team-lead, user, system, main are reserved; pick \
             another name",
        ));
    launch(&["--teammate", "noequals"])
        .refused("use NAME=PROMPT")
        .stderr_is(&error(
            "--teammate \"noequals\": use NAME=PROMPT, e.g. --teammate coder=\"Fix the parser\"",
        ));
    launch(&[])
        .refused("no teammates to launch")
        .stderr_is(&error(
            "no teammates to launch: give a swarm file with teammates[] or --teammate \
             NAME=PROMPT",
        ));
    launch(&["--agent", "no-such-agent-cli --flag", "--teammate", "a=x"])
        .env("PATH", "/usr/bin:/bin")
        .refused("no-such-agent-cli was not found on PATH")
        .stderr_is(&error(
            "teammate a: agent command: no-such-agent-cli was not found on PATH (/usr/bin:/bin); \
             install it or give its full path",
        ));
    launch(&["--teammate", "a=x", "--permission-mode", "a b"])
        .refused("permission mode")
        .stderr_is(&error(
            "permission mode \"a b\" is invalid; use one of claude's modes such as default, \
             acceptEdits, plan or bypassPermissions",
        ));
    let home = env.path("home");
    env.swarm(["launch", "--teammate", "a=x", "--backend", "in-process"])
        .env_remove("CLAUDE_CODE_TEAMMATE_COMMAND")
        .env("PATH", "/nonexistent")
        .env("HOME", &home)
        .refused("claude was not found: looked in PATH (/nonexistent)")
        .stderr_is(&error(&format!(
            "claude was not found: looked in PATH (/nonexistent), {home}/.claude/local/claude, \
             {home}/.local/bin/claude; install Claude Code or set CLAUDE_CODE_TEAMMATE_COMMAND \
             to its path",
            home = home.display()
        )));
    let empty = env.path("empty");
    env.swarm(["launch", "--teammate", "a=x", "--backend", "tmux"])
        .env("PATH", &empty)
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
        .refused("--backend tmux: tmux is not installed")
        .stderr_is(&error(&format!(
            "--backend tmux: tmux is not installed (looked on PATH: {}); install it (e.g. \
             apt-get install tmux) or pick --backend in-process",
            empty.display()
        )));
    let file = env.path("bad.json");
    std::fs::write(
        &file,
        r#"{"team": "t", "teammates": [{"name": "a", "promt": "typo"}]}"#,
    )
    .unwrap();
    env.swarm(["launch", file.to_str().unwrap()])
        .refused("unknown field `promt`");

    // An invalid --team says so, as `team create` does (not "no team given").
    env.swarm(["--team", "my team", "launch", "--teammate", "a=b"])
        .refused("invalid team name \"my team\": use lowercase letters, digits and '-'");
    env.swarm([
        "launch",
        "--team",
        "my team",
        "--agent",
        "shell",
        "--teammate",
        "a=b",
    ])
    .refused("invalid team name \"my team\"");

    // Joining an existing team: a name on the roster that swarm did not launch cannot be
    // started again (swarm does not know how), and the refusal says what to do.
    env.swarm(["team", "create", "t"]).ok();
    env.add_member("t", "coder");
    launch(&["--teammate", "CODER=x"]).refused(
        "coder is on team t's roster but was not started by `swarm launch` or `swarm up`, so \
         swarm does not know how to start it again; remove it (`swarm team remove coder`)",
    );
}

/// Regression: `{prompt}` inside a larger word (`sh -c "echo {prompt}"`) let any message inject
/// shell into the agent's command line. Such a command is refused, at launch and when a runtime
/// starts, and nothing is written.
#[test]
fn an_agent_command_that_embeds_the_prompt_placeholder_in_a_word_is_refused() {
    let env = Env::new();
    let file = env.path("inject.json");
    std::fs::write(
        &file,
        r#"{"team": "t", "agent": ["sh", "-c", "echo {prompt}"],
            "teammates": [{"name": "a", "prompt": "hi"}]}"#,
    )
    .unwrap();
    env.swarm(["launch", "--backend", "in-process", file.to_str().unwrap()])
        .refused("embeds {prompt} in a larger word; the placeholder must be a whole argument");
    env.swarm(["team", "create", "t"]).ok();
    env.add_member("t", "a");
    env.swarm([
        "teammate",
        "--agent-id",
        "a@t",
        "--agent-name",
        "a",
        "--team-name",
        "t",
        "--",
        "sh",
        "-c",
        "echo {prompt}",
    ])
    .refused("\"echo {prompt}\" embeds {prompt} in a larger word");
}

/// The first prompt is the teammate's first inbox message and must fit in one. The launcher
/// used to write it without the size check every other sender has, so a prompt over the limit
/// went into the inbox whole; it is refused before anything is written.
#[test]
fn a_prompt_over_the_message_limit_is_refused_before_anything_is_written() {
    let env = Env::new();
    let agent = fake_agent(&env, "exit 0");
    let file = env.path("big.json");
    let plan = serde_json::json!({"team": "t",
        "teammates": [{"name": "a", "prompt": "x".repeat(1024 * 1024 + 1)}]});
    std::fs::write(&file, plan.to_string()).unwrap();
    env.swarm(["launch", "--backend", "in-process", file.to_str().unwrap()])
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
        .refused(
            "teammate a: its prompt is a message: message is 1048577 bytes, over the 1048576 \
             byte limit; put large content in a file and send its path",
        );
}
