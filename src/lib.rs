//! swarm: launch and run swarms of coding-agent processes that coordinate only through files.
//!
//! The wings, top to bottom (each depends only on those below it):
//! - `commands`: the command line (clap derive) and one module per command group;
//! - `top`: the live dashboard (`swarm top`) and its line-printing twin (`status --watch`);
//! - `teammate`, `lead`, `launch`: the teammate runtime, the lead console, and starting a team
//!   (plan, command line, spawn, rollback, the in-process supervisor);
//! - `lifecycle`: health, retiring, and the one shutdown state machine;
//! - `backend`: panes (tmux, iTerm2, in-process children) behind one trait;
//! - `process`: the one seam to the OS: running programs, spawning groups, pid records, signals;
//! - `store`: the on-disk protocol shared with Claude Code's agent teams.

pub(crate) mod backend;
pub(crate) mod bench;
pub(crate) mod commands;
pub(crate) mod error;
pub(crate) mod launch;
pub(crate) mod lead;
pub(crate) mod lifecycle;
pub(crate) mod output;
pub(crate) mod process;
pub(crate) mod store;
pub(crate) mod teammate;
pub(crate) mod top;

use clap::Parser;

/// Parses the command line, runs it and returns the exit code.
pub fn run() -> i32 {
    commands::completions::complete_if_asked();
    let cli = match commands::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_error(e),
    };
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(e) if output::is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!(
                "swarm: error: {}",
                output::terminal::visible(&e.to_string())
            );
            e.exit_code()
        }
    }
}

/// Prints a parse error and returns its exit code. A value clap rejected through one of swarm's
/// own parsers (a team or agent name) is reported in swarm's words, the same as the error a
/// command would give; everything else (`--help`, unknown flags) is clap's.
fn parse_error(e: clap::Error) -> i32 {
    use std::error::Error as _;
    if e.kind() == clap::error::ErrorKind::ValueValidation {
        if let Some(reason) = e.source() {
            eprintln!(
                "swarm: error: {}",
                output::terminal::visible(&reason.to_string())
            );
            return 2;
        }
    }
    let _ = e.print();
    if e.use_stderr() {
        2
    } else {
        0
    }
}
