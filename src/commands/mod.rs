//! One module per command group; each turns parsed arguments into store operations and output.

mod debug;
mod message;
mod permission;
mod task;
mod team;

use crate::cli::{Cli, Command, DebugCommand};
use crate::error::{Error, Result};
use crate::names::{AgentName, TeamName};
use crate::paths::Store;

/// What every command needs: where the store is, which team, how to print.
pub struct Context {
    pub store: Store,
    pub team: Option<String>,
    pub json: bool,
}

impl Context {
    /// The team from `--team` / `$SWARM_TEAM`, validated.
    pub fn team(&self) -> Result<TeamName> {
        match &self.team {
            Some(t) => t.parse(),
            None => Err(Error::usage(
                "no team given: pass --team NAME or set SWARM_TEAM",
            )),
        }
    }

    /// Like [`Context::team`], but the team must exist.
    pub fn existing_team(&self) -> Result<TeamName> {
        let team = self.team()?;
        crate::roster::Roster::new(&self.store, &team).load()?;
        Ok(team)
    }
}

pub fn agent(name: &str) -> Result<AgentName> {
    name.parse()
}

/// Runs a parsed command line; returns the exit code for commands whose outcome is a code.
pub fn dispatch(cli: Cli) -> Result<i32> {
    let ctx = Context {
        store: Store::discover(cli.root.as_deref())?,
        team: cli.team,
        json: cli.json,
    };
    match cli.command {
        Command::Team(cmd) => team::run(&ctx, cmd).map(|()| 0),
        Command::Send(args) => message::send(&ctx, args).map(|()| 0),
        Command::Inbox(args) => message::inbox(&ctx, args).map(|()| 0),
        Command::Task(cmd) => task::run(&ctx, cmd).map(|()| 0),
        Command::Permission(cmd) => permission::run(&ctx, cmd),
        Command::Debug(DebugCommand::HoldLock { file }) => {
            let _lock = crate::lock::FileLock::acquire(&file)?;
            crate::output::line("locked")?;
            loop {
                std::thread::park();
            }
        }
        Command::Debug(cmd) => debug::run(&ctx, cmd),
        Command::Bench(args) => crate::bench::run(args, ctx.json).map(|()| 0),
    }
}

/// Parses a JSON argument, naming the flag in the error.
pub fn json_arg(flag: &str, text: &str) -> Result<serde_json::Value> {
    serde_json::from_str(text)
        .map_err(|e| Error::usage(format!("{flag} is not valid JSON ({e}): {text}")))
}
