//! swarm: launch and run swarms of coding-agent processes that coordinate only through files.
//!
//! The store modules (`paths`, `fsio`, `lock`, `roster`, `mailbox`, `protocol`, `tasks`,
//! `permissions`, `watcher`) implement the on-disk protocol shared with Claude Code's agent
//! teams; `commands` maps the command line onto them. The launcher modules (`backend`,
//! `launcher`, `swarmfile`, `worktree`, `lifecycle`) start, watch and stop teammates.

pub mod backend;
pub mod bench;
pub mod commands;
pub mod error;
pub mod launch;
pub mod lead;
pub mod lifecycle;
pub mod output;
pub mod process;
pub mod store;
pub mod teammate;

use clap::Parser;

/// Parses the command line, runs it and returns the exit code.
pub fn run() -> i32 {
    let cli = match commands::cli::Cli::try_parse() {
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
