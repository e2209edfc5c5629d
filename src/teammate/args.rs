//! The `swarm teammate` command line: the identity flags a teammate runtime starts with.
//!
//! The launcher writes this command line into every pane and `swarm teammate` parses it, so
//! both ends use this one struct (PROTOCOL.md section 10 names the flags, which match a real
//! `claude` teammate's). [`TeammateArgs::to_argv`] is the launcher's end; a round-trip test
//! keeps it in step with what clap parses.

use std::num::NonZeroU64;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub(crate) struct TeammateArgs {
    /// NAME@TEAM; must agree with --agent-name and --team-name.
    #[arg(long, value_name = "NAME@TEAM")]
    pub agent_id: String,
    /// The member's name; it must be on the team's roster.
    #[arg(long, value_name = "NAME")]
    pub agent_name: String,
    #[arg(long, value_name = "TEAM")]
    pub team_name: String,
    /// Roster colour, used for the pane's lines and the messages it sends.
    #[arg(long, default_value = "blue", value_name = "COLOR")]
    pub agent_color: String,
    /// The lead's session id (accepted for parity with `claude`).
    #[arg(long, default_value = "", value_name = "SESSION")]
    pub parent_session_id: String,
    /// The first turn writes a plan for the lead to approve; no task work until approved.
    #[arg(long)]
    pub plan_mode_required: bool,
    /// `<ms>.<base64url SPKI>`: the lead's public key. Lead control messages without a valid
    /// `lead_sig` are ignored (PROTOCOL.md section 7). A flag, not a team file, because
    /// teammates can write the team's files.
    #[arg(long, value_name = "KEY")]
    pub lead_verify_key: Option<String>,
    /// Directory the agent runs in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// How a turn's prompt reaches CMD: as its last argument (or in place of a `{prompt}`
    /// argument), or on its standard input.
    #[arg(long, value_enum, default_value = "arg")]
    pub prompt_via: PromptVia,
    /// A built-in agent instead of CMD: `shell` runs task descriptions and `$ ` messages.
    #[arg(long, value_enum, value_name = "KIND", conflicts_with = "command")]
    pub agent: Option<BuiltinAgent>,
    #[command(flatten)]
    pub limits: Limits,
    /// The agent command, run once per turn with the prompt.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

impl TeammateArgs {
    /// The identity flags, in section 10's order. A `claude` teammate gets the same ones.
    pub(crate) fn identity_argv(&self) -> Vec<String> {
        let mut argv = vec![
            "--agent-id".to_string(),
            self.agent_id.clone(),
            "--agent-name".into(),
            self.agent_name.clone(),
            "--team-name".into(),
            self.team_name.clone(),
            "--agent-color".into(),
            self.agent_color.clone(),
            "--parent-session-id".into(),
            self.parent_session_id.clone(),
        ];
        if self.plan_mode_required {
            argv.push("--plan-mode-required".into());
        }
        if let Some(key) = &self.lead_verify_key {
            argv.extend(["--lead-verify-key".into(), key.clone()]);
        }
        argv
    }

    /// Every flag after `swarm teammate`, so that parsing them gives these arguments back.
    pub(crate) fn to_argv(&self) -> Vec<String> {
        let mut argv = self.identity_argv();
        if let Some(cwd) = &self.cwd {
            argv.extend(["--cwd".into(), cwd.display().to_string()]);
        }
        if self.prompt_via != PromptVia::Arg {
            argv.extend(["--prompt-via".into(), value_name(self.prompt_via)]);
        }
        if let Some(agent) = self.agent {
            argv.extend(["--agent".into(), value_name(agent)]);
        }
        argv.extend(self.limits.to_argv());
        if !self.command.is_empty() {
            argv.push("--".into());
            argv.extend(self.command.iter().cloned());
        }
        argv
    }
}

/// The limits a runtime teammate works under (issue 28): the most turns it runs and how long
/// one turn may take. A teammate at either goes idle, saying why, and its task is parked as
/// failed or goes back to pending, as `on_limit` says. The same flags on `swarm launch`, the
/// swarm file's `maxTurns`, `turnTimeout` and `onLimit`, and the launch record (so `swarm up`
/// starts it again with them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Args, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Limits {
    /// Most turns the teammate runs (counted from its start); then it goes idle for good and
    /// its unfinished task ends as --on-limit says.
    #[arg(long, value_name = "N")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<NonZeroU64>,
    /// Seconds one turn may run; a longer one is stopped (SIGTERM, then SIGKILL) and its task
    /// ends as --on-limit says.
    #[arg(long, value_name = "SECONDS")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_timeout: Option<NonZeroU64>,
    /// What becomes of the task of a teammate at a limit: parked as failed (the default) or
    /// back to pending for anyone.
    #[arg(long, value_enum, value_name = "THEN")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_limit: Option<OnLimit>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OnLimit {
    Fail,
    Release,
}

impl Limits {
    pub(crate) fn is_none(&self) -> bool {
        *self == Limits::default()
    }

    /// Each limit of `self`, else `other`'s (a teammate's own over the launch's).
    pub(crate) fn or(self, other: Limits) -> Limits {
        Limits {
            max_turns: self.max_turns.or(other.max_turns),
            turn_timeout: self.turn_timeout.or(other.turn_timeout),
            on_limit: self.on_limit.or(other.on_limit),
        }
    }

    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.turn_timeout.map(|s| Duration::from_secs(s.get()))
    }

    fn to_argv(self) -> Vec<String> {
        let mut argv = Vec::new();
        if let Some(n) = self.max_turns {
            argv.extend(["--max-turns".into(), n.to_string()]);
        }
        if let Some(s) = self.turn_timeout {
            argv.extend(["--turn-timeout".into(), s.to_string()]);
        }
        if let Some(then) = self.on_limit {
            argv.extend(["--on-limit".into(), value_name(then)]);
        }
        argv
    }
}

/// The word clap accepts for `value`.
fn value_name(value: impl ValueEnum) -> String {
    value
        .to_possible_value()
        .expect("no value is hidden")
        .get_name()
        .to_string()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PromptVia {
    Arg,
    Stdin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum BuiltinAgent {
    Shell,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Parsed {
        #[command(flatten)]
        args: TeammateArgs,
    }

    fn round_trip(args: &TeammateArgs) -> TeammateArgs {
        let argv = std::iter::once("swarm".to_string()).chain(args.to_argv());
        Parsed::try_parse_from(argv).unwrap().args
    }

    fn args() -> TeammateArgs {
        TeammateArgs {
            agent_id: "coder@t".into(),
            agent_name: "coder".into(),
            team_name: "t".into(),
            agent_color: "green".into(),
            parent_session_id: "sid".into(),
            plan_mode_required: false,
            lead_verify_key: None,
            cwd: None,
            prompt_via: PromptVia::Arg,
            agent: Some(BuiltinAgent::Shell),
            limits: Limits::default(),
            command: vec![],
        }
    }

    #[test]
    fn the_launchers_argv_parses_back_to_the_same_arguments() {
        let shell = args();
        assert_eq!(round_trip(&shell), shell);
        let command = TeammateArgs {
            plan_mode_required: true,
            lead_verify_key: Some("1700000000000.MCowBQYDK2VwAyEA".into()),
            cwd: Some("/work dir".into()),
            prompt_via: PromptVia::Stdin,
            agent: None,
            limits: Limits {
                max_turns: NonZeroU64::new(3),
                turn_timeout: NonZeroU64::new(60),
                on_limit: Some(OnLimit::Release),
            },
            command: vec!["codex".into(), "--model".into(), "-x".into(), "--".into()],
            parent_session_id: String::new(),
            ..args()
        };
        assert_eq!(round_trip(&command), command);
    }

    #[test]
    fn the_argv_is_section_10s_order() {
        let a = TeammateArgs {
            plan_mode_required: true,
            cwd: Some("/w".into()),
            ..args()
        };
        assert_eq!(
            a.to_argv(),
            [
                "--agent-id",
                "coder@t",
                "--agent-name",
                "coder",
                "--team-name",
                "t",
                "--agent-color",
                "green",
                "--parent-session-id",
                "sid",
                "--plan-mode-required",
                "--cwd",
                "/w",
                "--agent",
                "shell"
            ]
        );
    }
}
