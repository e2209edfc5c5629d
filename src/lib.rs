//! swarm: launch and run swarms of coding-agent processes that coordinate only through files.
//!
//! The wings, top to bottom (each depends only on those below it):
//! - `commands`: the command line (clap derive) and one module per command group;
//! - `top`: the live dashboard (`swarm top`) and its line-printing twin (`status --watch`);
//! - `timeline`: what a team did, in order, from its files (`swarm timeline`);
//! - `teammate`, `lead`, `launch`: the teammate runtime, the lead console, and starting a team
//!   (plan, command line, spawn, rollback, the in-process supervisor);
//! - `lifecycle`: health, retiring, and the one shutdown state machine;
//! - `backend`: panes (tmux, iTerm2, in-process children) behind one trait;
//! - `process`: the one seam to the OS: running programs, spawning groups, pid records, signals;
//! - `store`: the on-disk protocol shared with Claude Code's agent teams.

#![warn(unreachable_pub)]

pub(crate) mod backend;
pub(crate) mod commands;
pub(crate) mod error;
pub(crate) mod launch;
pub(crate) mod lead;
pub(crate) mod lifecycle;
pub mod output;
pub(crate) mod process;
pub(crate) mod remote;
pub(crate) mod store;
pub(crate) mod teammate;
pub(crate) mod timeline;
pub(crate) mod top;

// The library's public surface: what the benchmark crate (`bench/`, `swarm-bench`) drives and
// measures, and nothing else. Everything else is `pub(crate)`; an item belongs here only when
// another crate uses it.
pub use error::{Error, Result};
pub use store::lead_key::{LeadKey, SIG_FIELD};
pub use store::lock::FileLock;
pub use store::mailbox::{InboxMessage, Mailbox, KEEP_DELIVERED};
pub use store::names::{AgentName, TaskId, TeamName};
pub use store::paths::Store;
pub use store::protocol::{Payload, Protocol};
pub use store::roster::{Member, Roster};
pub use store::tasks::{Task, TaskIndex, TaskList, TaskPatch, TaskStatus};
pub use store::watcher::DirWatcher;

/// Claude Code's inbox append and read, re-implemented (the `seams` feature).
#[cfg(feature = "seams")]
pub use commands::debug::claude_code;

/// The store's file operations (no-follow opens, atomic writes, the store's clock).
pub mod fsio {
    pub use crate::store::fsio::{
        create_if_missing, ensure_dir, now_ms, read_file, read_json, write_atomic, write_json,
    };
}

/// Whether a member's runtime is alive, by its liveness lock.
pub mod liveness {
    pub use crate::store::liveness::{probe, Liveness};
}

use clap::Parser;

/// Parses the command line, runs it and returns the exit code.
pub fn run() -> i32 {
    // First, so this process and everything it starts may open as many files as allowed.
    process::fd_limit::raise();
    commands::completions::complete_if_asked();
    let cli = match commands::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_error(e),
    };
    let outcome = commands::dispatch(cli);
    // A change made but not confirmed durable is said even when a later step failed.
    let unconfirmed = store::fsio::unconfirmed::take();
    if let Some(e) = &unconfirmed {
        eprintln!(
            "swarm: warning: {}",
            output::terminal::visible(&e.to_string())
        );
    }
    match outcome {
        Ok(0) => unconfirmed.map_or(0, |e| e.exit_code()),
        Ok(code) => code,
        Err(e) if output::is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!(
                "swarm: error: {}",
                output::terminal::visible(&e.to_string())
            );
            process::last_words::after_failure();
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
