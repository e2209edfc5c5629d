//! `swarm bench`: the store benchmarks, each against a baseline measured in the same run.
//!
//! The claims worth measuring are about processes: many writers on one inbox, many claimers on
//! one task list, a receiver in another process. So the driver is a hidden subcommand of the
//! `swarm` binary itself, and it re-runs its own executable (`swarm debug append`, `debug
//! cc-append`, `debug claim-loop`, `swarm send`, `swarm inbox --follow`) for every worker: the
//! driver and the workers are always the same build, and `scripts/bench` needs nothing but
//! `cargo build --release`. The Claude Code baseline (`claude_code.rs`) is a re-implementation
//! of its inbox append and poll loop, run in the same processes, on the same files, on the same
//! machine, minutes apart, so the ratios printed next to each table mean something even on a
//! noisy two-core box where absolute numbers do not.
//!
//! Each benchmark is a function in its own file returning a [`Section`] (a title, an aligned
//! Markdown table and notes); [`BENCHMARKS`] lists them. The benchmarks that need panes and a
//! teammate runtime (spawn, the idle footprint, the runtime as a receiver) are driven by
//! `scripts/bench-runtime` through `swarm debug runtime ...` instead.

mod claims;
pub(crate) mod claude_code;
mod cold_send;
mod contention;
mod harness;
mod inbox_size;
mod latency;
mod report;
pub(crate) mod rng;
pub(crate) mod stats;
pub(crate) mod worker;

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;

use crate::error::{Error, Result};
use crate::output;
use harness::Bench;
use report::Section;

type BenchFn = fn(&Bench) -> Result<Section>;

/// Every benchmark, in the order they run.
const BENCHMARKS: &[(&str, BenchFn)] = &[
    ("latency", latency::latency),
    ("contention", contention::contention),
    ("inbox-size", inbox_size::inbox_size),
    ("claims", claims::claims),
    ("cold-send", cold_send::cold_send),
];

/// `swarm bench` (hidden): which benchmarks, at what size, where.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Benchmarks to run (default: all): latency, contention, inbox-size, claims, cold-send.
    pub(crate) names: Vec<String>,
    /// Small sizes, for a smoke test of the benchmark code itself; the numbers mean little.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Directory for the throwaway stores (default: the system temp directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) scratch: Option<PathBuf>,
}

/// Runs the benchmarks named in `args` (all when none) and prints each table as it completes.
pub(crate) fn run(args: BenchArgs, json: bool) -> Result<()> {
    let known: Vec<&str> = BENCHMARKS.iter().map(|(n, _)| *n).collect();
    for name in &args.names {
        if !known.contains(&name.as_str()) {
            return Err(Error::usage(format!(
                "unknown benchmark {name:?}; choose from {}",
                known.join(", ")
            )));
        }
    }
    let bench = Bench::new(&args)?;
    if cfg!(debug_assertions) {
        eprintln!("swarm bench: warning: this is a debug build; use scripts/bench (release) for numbers worth keeping");
    }
    for (name, f) in BENCHMARKS {
        if !args.names.is_empty() && !args.names.iter().any(|n| n == name) {
            continue;
        }
        eprintln!("swarm bench: running {name}...");
        let started = Instant::now();
        let section = f(&bench)?;
        eprintln!(
            "swarm bench: {name} took {:.0} s",
            started.elapsed().as_secs_f64()
        );
        if json {
            output::json_line(&section)?;
        } else {
            output::line(section.to_markdown())?;
        }
    }
    Ok(())
}
