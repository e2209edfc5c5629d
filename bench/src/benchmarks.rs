//! `swarm-bench store`: the store benchmarks, each against a baseline measured in the same run.
//!
//! Every worker is a separate process (`swarm-bench worker append`, `worker claim-loop`,
//! `swarm send`, `swarm inbox --follow`), because the claims are about processes. The Claude
//! Code baseline is a re-implementation of its inbox append and poll loop (`swarm`'s
//! `claude_code`, built with the `seams` feature), run in the same processes, on the same files,
//! on the same machine, minutes apart, so the ratios printed next to each table mean something
//! even on a noisy two-core box where absolute numbers do not.
//!
//! Each benchmark is a function in its own file returning a [`Section`] (a title, an aligned
//! Markdown table and notes); [`BENCHMARKS`] lists them. The benchmarks that need panes and a
//! teammate runtime (spawn, the idle footprint, the runtime as a receiver) are driven by
//! `scripts/bench-runtime` through `swarm-bench runtime ...` instead.

mod claims;
mod cold_send;
mod contention;
mod inbox_size;
mod latency;

use std::path::PathBuf;
use std::time::Instant;

use swarm::{output, Error, Result};

use crate::cli::StoreArgs;
use crate::harness::Bench;
use crate::report::Section;

type BenchFn = fn(&Bench) -> Result<Section>;

/// Every benchmark, in the order they run.
const BENCHMARKS: &[(&str, BenchFn)] = &[
    ("latency", latency::latency),
    ("contention", contention::contention),
    ("inbox-size", inbox_size::inbox_size),
    ("claims", claims::claims),
    ("cold-send", cold_send::cold_send),
];

/// Runs the benchmarks named in `args` (all when none) against the `swarm` binary at `swarm`
/// and prints each table as it completes.
pub(crate) fn run(args: &StoreArgs, swarm: PathBuf, json: bool) -> Result<()> {
    let known: Vec<&str> = BENCHMARKS.iter().map(|(n, _)| *n).collect();
    for name in &args.names {
        if !known.contains(&name.as_str()) {
            return Err(Error::usage(format!(
                "unknown benchmark {name:?}; choose from {}",
                known.join(", ")
            )));
        }
    }
    let bench = Bench::new(args, swarm)?;
    if cfg!(debug_assertions) {
        eprintln!("swarm-bench: warning: this is a debug build; use scripts/bench (release) for numbers worth keeping");
    }
    for (name, f) in BENCHMARKS {
        if !args.names.is_empty() && !args.names.iter().any(|n| n == name) {
            continue;
        }
        eprintln!("swarm-bench: running {name}...");
        let started = Instant::now();
        let section = f(&bench)?;
        eprintln!(
            "swarm-bench: {name} took {:.0} s",
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
