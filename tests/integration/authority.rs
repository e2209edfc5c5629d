//! Lead-only operations need the lead key (issue 22, item 3; issue 28, item 11): a process that
//! cannot load the team's lead key is refused, whatever `SWARM_AGENT_NAME` says, and changes
//! nothing; the lead's own shell still can.

use crate::support::*;

/// How an impostor's process looks: which `SWARM_AGENT_NAME` it sets, and which state
/// directory (where lead keys live) it has instead of the lead's, if any.
struct Impostor {
    what: &'static str,
    agent_name: Option<&'static str>,
    own_state: Option<&'static str>,
}

const IMPOSTORS: [Impostor; 3] = [
    Impostor {
        what: "a teammate's shell",
        agent_name: Some("evil"),
        own_state: None,
    },
    Impostor {
        what: "a teammate calling itself team-lead, without the lead's state directory",
        agent_name: Some("team-lead"),
        own_state: Some("state/elsewhere"),
    },
    Impostor {
        what: "a process with no SWARM_AGENT_NAME and a lead key of its own making",
        agent_name: None,
        own_state: Some("state/forger"),
    },
];

impl Impostor {
    fn run(&self, env: &Env, args: &[&str]) -> Swarm {
        let mut s =
            env.swarm(args)
                .context(format!("{} running swarm {}", self.what, args.join(" ")));
        if let Some(name) = self.agent_name {
            s = s.env("SWARM_AGENT_NAME", name);
        }
        if let Some(dir) = self.own_state {
            // Inside `<root>/state`, which the snapshots leave out, like the lead's own.
            let elsewhere = env.path(dir);
            s = s
                .env("XDG_STATE_HOME", &elsewhere)
                .env("HOME", elsewhere.join("home"));
        }
        s
    }
}

fn pending_request(env: &Env) -> String {
    let record = env
        .swarm([
            "--json",
            "permission",
            "request",
            "--tool",
            "Bash",
            "--input",
            "{\"command\":\"make\"}",
        ])
        .env("SWARM_AGENT_NAME", "coder")
        .ok()
        .json();
    record["id"].as_str().unwrap().to_string()
}

#[test]
fn lead_only_commands_refuse_a_process_that_cannot_use_the_lead_key() {
    let env = Env::with_team(&["coder", "evil"]);
    let id = pending_request(&env);
    // The third impostor makes a key of its own first: `swarm send` outside any teammate's
    // environment makes one in its state directory.
    IMPOSTORS[2]
        .run(&env, &["send", "--to", "coder", "hello"])
        .ok();
    assert!(
        env.path("state/forger/swarm/lead-keys").is_dir(),
        "the impostor holds a key of its own"
    );
    let commands: [&[&str]; 14] = [
        &["kill", "coder"],
        &["team", "remove", "coder"],
        &["team", "add", "newbie"],
        &["team", "delete", "t", "--force"],
        &["down", "--force"],
        &["prune", "t", "--yes"],
        &["permission", "approve", &id],
        &["permission", "deny", &id],
        &["shutdown", "coder", "--force", "--timeout", "1"],
        &["shutdown", "--all", "--force", "--timeout", "1"],
        &["done"],
        &["restart", "coder"],
        &["lead", "--exit-when-done"],
        &[
            "launch",
            "--agent",
            "shell",
            "--teammate",
            "b=go",
            "--backend",
            "in-process",
        ],
    ];
    for impostor in &IMPOSTORS {
        for args in commands {
            impostor.run(&env, args).refused("only the team lead may");
        }
    }
    // The message says what to do.
    IMPOSTORS[1]
        .run(&env, &["kill", "coder"])
        .refused("has no copy of the team's lead key in its state directory");
    IMPOSTORS[2]
        .run(&env, &["kill", "coder"])
        .refused("holds a lead key, but not the one the team published");
    let pending = env.swarm(["--json", "permission", "list"]).ok().json();
    assert_eq!(pending[0]["id"], id.as_str(), "still waiting: {pending}");

    // The lead's own shell still can.
    env.swarm(["permission", "approve", &id]).ok();
    env.swarm(["team", "add", "newbie"]).ok();
    env.swarm(["team", "remove", "newbie"]).ok();
    env.swarm(["kill", "coder"]).ok();
    env.swarm(["done"]).ok();
    env.swarm(["team", "delete", "t", "--force"]).ok();
    assert!(!env.path("teams/t").exists());
}

/// Flat roster: a teammate neither adds a member nor starts a runtime for one that is not on
/// the roster.
#[test]
fn a_teammate_cannot_add_teammates() {
    let env = Env::with_team(&["evil"]);
    env.swarm(["team", "add", "newbie"])
        .env("SWARM_AGENT_NAME", "evil")
        .refused("refusing to add a member (team \"t\"): only the team lead may, and this process runs in teammate \"evil\"'s environment");
    env.swarm([
        "teammate",
        "--agent-id",
        "newbie@t",
        "--agent-name",
        "newbie",
        "--team-name",
        "t",
        "--agent",
        "shell",
    ])
    .env("SWARM_AGENT_NAME", "evil")
    .not_found("\"newbie\" is not a member of team \"t\"");
}

/// A team that published no key yet (one a Claude Code lead made, or one from before swarm
/// published keys) is adopted by the lead's shell on its first lead-only command; after that a
/// process with a key of its own is refused.
#[test]
fn a_team_without_a_published_key_is_adopted_by_the_lead_shell_first() {
    let env = Env::with_team(&["coder"]);
    let published = env.path("teams/t/lead/verify-key.json");
    assert!(published.is_file(), "team create publishes the key");
    std::fs::remove_file(&published).unwrap();
    env.swarm(["team", "add", "newbie"]).ok();
    assert!(published.is_file(), "the lead's shell adopted the team");
    IMPOSTORS[2]
        .run(&env, &["send", "--to", "coder", "hello"])
        .ok();
    IMPOSTORS[2]
        .run(&env, &["team", "remove", "newbie"])
        .refused("holds a lead key, but not the one the team published");
    env.swarm(["team", "remove", "newbie"]).ok();
}
