//! swarm: launch and run swarms of coding-agent processes that coordinate only through files.
//!
//! The store modules (`paths`, `fsio`, `lock`, `roster`, `mailbox`, `protocol`, `tasks`,
//! `permissions`, `watcher`) implement the on-disk protocol shared with Claude Code's agent
//! teams; `commands` maps the command line onto them. The launcher modules (`backend`,
//! `launcher`, `swarmfile`, `worktree`, `lifecycle`) start, watch and stop teammates.

pub mod backend;
pub mod bench;
pub mod cli;
pub mod commands;
pub mod demo;
pub mod error;
pub mod fsio;
pub mod launcher;
pub mod lead;
pub mod lifecycle;
pub mod liveness;
pub mod lock;
pub mod mailbox;
pub mod names;
pub mod output;
pub mod paths;
pub mod permissions;
pub mod protocol;
pub mod roster;
pub mod shell_agent;
pub mod swarmfile;
pub mod tasks;
pub mod teammate;
pub mod watcher;
pub mod worktree;

use clap::Parser;

/// Parses the command line, runs it and returns the exit code.
pub fn run() -> i32 {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(e) if output::is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!("swarm: error: {e}");
            e.exit_code()
        }
    }
}
