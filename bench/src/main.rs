//! `swarm-bench`: swarm's benchmarks, each against a baseline measured in the same run. They
//! live in a crate of their own so that the product holds no code only benchmarks use; this
//! crate reaches the store through the few items `swarm`'s library makes public for it.
//!
//! The claims worth measuring are about processes: many writers on one inbox, many claimers on
//! one task list, a receiver in another process. So this binary is three things: the driver of
//! the store benchmarks (`swarm-bench store`, behind `scripts/bench`); the worker processes
//! that driver starts by re-running its own executable (`swarm-bench worker ...`, one store
//! operation in a loop, the swarm way or a baseline's, acknowledged line by line); and the seams
//! `scripts/bench-runtime` times teammate runtimes with (`swarm-bench runtime ...`). Whatever a
//! user or an agent would run (`swarm send`, `swarm inbox --follow`, `swarm teammate`) is the
//! real `swarm` binary, found beside this one, so one `cargo build --release` makes both.

mod baseline;
mod benchmarks;
mod cli;
mod harness;
mod report;
mod rng;
mod runtime;
mod stats;
mod worker;

use std::path::PathBuf;

use clap::Parser;
use swarm::{Error, Result, Roster, Store, TeamName};

use cli::{Cli, Command};

fn main() {
    std::process::exit(run());
}

/// Parses the command line, runs it and returns the exit code: 2 for bad input, 1 for a
/// failure, 0 when stdout was closed early (`| head`).
fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match dispatch(cli) {
        Ok(code) => code,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            eprintln!("swarm-bench: error: {e}");
            e.exit_code()
        }
    }
}

fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Store(args) => benchmarks::run(&args, swarm_exe(cli.swarm)?, cli.json).map(|()| 0),
        Command::Runtime(cmd) => {
            let target = Target::from_flags(cli.root, cli.team)?;
            runtime::run(&target, &swarm_exe(cli.swarm)?, cmd)
        }
        Command::Worker(cmd) => worker::run(&Target::from_flags(cli.root, cli.team)?, cmd),
    }
}

/// The `swarm` binary to measure: `--swarm`, else the one beside this executable
/// (`target/release/swarm` beside `target/release/swarm-bench`).
fn swarm_exe(flag: Option<PathBuf>) -> Result<PathBuf> {
    let path = match flag {
        Some(path) => path,
        None => std::env::current_exe()
            .map_err(Error::io("find", "the swarm-bench executable"))?
            .with_file_name("swarm"),
    };
    if !path.is_file() {
        return Err(Error::usage(format!(
            "no swarm binary at {}; build the workspace (`cargo build --release` at its root \
             builds swarm beside swarm-bench) or pass --swarm PATH",
            path.display()
        )));
    }
    Ok(path)
}

/// What a worker or a runtime seam acts on: the store under `--root` and the team `--team`,
/// which must exist. Both are required, so nothing here ever falls back to `~/.claude`.
pub(crate) struct Target {
    pub(crate) store: Store,
    pub(crate) team: TeamName,
}

impl Target {
    fn from_flags(root: Option<PathBuf>, team: Option<TeamName>) -> Result<Target> {
        let (Some(root), Some(team)) = (root, team) else {
            return Err(Error::usage(
                "the worker and runtime commands act on one team: pass --root DIR and --team TEAM",
            ));
        };
        let store = Store::new(root);
        Roster::new(&store, &team).load()?;
        Ok(Target { store, team })
    }
}
