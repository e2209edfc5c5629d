//! The `swarm teammate` command line: the identity flags a teammate runtime starts with.
//!
//! The launcher writes this command line into every pane and `swarm teammate` parses it, so
//! both ends use this one struct (PROTOCOL.md section 10 names the flags, which match a real
//! `claude` teammate's).

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct TeammateArgs {
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
    /// The agent command, run once per turn with the prompt.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PromptVia {
    Arg,
    Stdin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BuiltinAgent {
    Shell,
}
