//! The command line of `swarm-bench` (clap derive): the store benchmarks, the runtime seams and
//! the worker processes. The global flags mirror `swarm`'s, so a script can give both binaries
//! the same `--root R --team T`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use swarm::{AgentName, TeamName};

/// swarm's benchmarks, each against a baseline measured in the same run.
#[derive(Debug, Parser)]
#[command(name = "swarm-bench", max_term_width = 100)]
pub(crate) struct Cli {
    /// The `swarm` binary to measure (default: the one beside this executable).
    #[arg(long, global = true, value_name = "PATH")]
    pub(crate) swarm: Option<PathBuf>,

    /// Root directory of the team a worker or runtime command acts on.
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,

    /// The team a worker or runtime command acts on.
    #[arg(long, global = true, value_name = "TEAM")]
    pub(crate) team: Option<TeamName>,

    /// `store`: one JSON object per benchmark, one a line, instead of Markdown tables.
    #[arg(long, global = true)]
    pub(crate) json: bool,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the store benchmarks against their baselines and print tables (scripts/bench).
    Store(StoreArgs),

    /// Seams for the runtime benchmarks (scripts/bench-runtime).
    #[command(subcommand)]
    Runtime(RuntimeCommand),

    /// The processes `store` starts: one store operation in a loop, acknowledged line by line.
    #[command(subcommand, hide = true)]
    Worker(WorkerCommand),
}

/// `swarm-bench store`: which benchmarks, at what size, where.
#[derive(Debug, Args)]
pub(crate) struct StoreArgs {
    /// Benchmarks to run (default: all): latency, contention, inbox-size, claims, cold-send.
    pub(crate) names: Vec<String>,
    /// Small sizes, for a smoke test of the benchmark code itself; the numbers mean little.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Directory for the throwaway stores (default: the system temp directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) scratch: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum WorkerCommand {
    /// Append COUNT messages "WRITER:SEQ" from the lead to NAME's inbox, printing each SEQ only
    /// after its append returned (or "fail SEQ" when a Claude Code append gave up).
    Append(AppendArgs),

    /// Claim and complete tasks until none is available, printing each claimed id once claimed.
    ClaimLoop(ClaimLoopArgs),
}

#[derive(Debug, Args)]
pub(crate) struct AppendArgs {
    /// Whose append: swarm's (`Mailbox::send`, as `swarm send` does), swarm's from before the
    /// group commit, or Claude Code's.
    #[arg(long = "impl", value_enum, value_name = "IMPL")]
    pub(crate) imp: Impl,
    /// Recipient.
    #[arg(long, value_name = "NAME")]
    pub(crate) to: AgentName,
    /// Messages to append.
    #[arg(long, default_value_t = 1)]
    pub(crate) count: u64,
    /// Writer id put in front of each sequence number in the text.
    #[arg(long, default_value = "w")]
    pub(crate) writer: String,
    /// Print "SEQ MICROSECONDS" (time spent in the append) instead of "SEQ".
    #[arg(long)]
    pub(crate) timings: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ClaimLoopArgs {
    #[arg(long, value_name = "NAME")]
    pub(crate) agent: AgentName,
    /// Claim without the agent-busy check (no list lock).
    #[arg(long)]
    pub(crate) no_busy_check: bool,
    /// Stop after this many claims.
    #[arg(long, value_name = "N")]
    pub(crate) max: Option<u64>,
    /// The claim path without the task index (`TaskList::claim_next_baseline`, then an update), the
    /// baseline; by default the task index of long-lived claimers.
    #[arg(long)]
    pub(crate) baseline: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum RuntimeCommand {
    /// Time `swarm send` processes until NAME's inbox shows each message read; print JSON.
    /// Default: one message at a time, each sent after the reader's `idle_notification` to the
    /// lead for the previous one (a teammate runtime). `--stream`: one message every
    /// `--min-gap-ms`..`--max-gap-ms` without waiting (a poll loop, which answers nothing).
    Latency {
        #[arg(long, value_name = "NAME")]
        to: AgentName,
        #[arg(long, default_value_t = 300)]
        count: usize,
        #[arg(long)]
        stream: bool,
        #[arg(long, default_value_t = 20)]
        min_gap_ms: u64,
        #[arg(long, default_value_t = 60)]
        max_gap_ms: u64,
    },

    /// Claude Code's inbox loop, as a baseline: every INTERVAL ms read NAME's inbox and mark what
    /// is unread as read. Runs until killed.
    PollInbox {
        #[arg(long, value_name = "NAME")]
        agent: AgentName,
        #[arg(long, value_name = "MS")]
        interval_ms: u64,
    },

    /// Wait until COUNT teammates hold their liveness locks; print the milliseconds since
    /// SINCE_MS (Unix epoch ms).
    WaitAlive {
        #[arg(long)]
        count: usize,
        #[arg(long, value_name = "EPOCH_MS")]
        since_ms: u64,
        #[arg(long, default_value_t = 120, value_name = "SECONDS")]
        timeout: u64,
    },
}

/// Which append a writer process runs: swarm's group commit, swarm's append from before it
/// (the baseline kept for exactly this, `baseline.rs`), or the Claude Code re-implementation.
#[derive(Debug, Clone, Copy, PartialEq, clap::ValueEnum)]
pub(crate) enum Impl {
    Swarm,
    #[value(name = "before-group-commit")]
    SwarmBaseline,
    ClaudeCode,
}

impl Impl {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Impl::Swarm => "swarm",
            Impl::SwarmBaseline => "swarm before group commit",
            Impl::ClaudeCode => "Claude Code (re-implemented)",
        }
    }

    /// A short name for file and directory names.
    pub(crate) fn slug(self) -> &'static str {
        match self {
            Impl::Swarm => "swarm",
            Impl::SwarmBaseline => "baseline",
            Impl::ClaudeCode => "cc",
        }
    }

    /// The `swarm-bench` arguments that append this way.
    pub(crate) fn args(self) -> &'static [&'static str] {
        match self {
            Impl::Swarm => &["worker", "append", "--impl", "swarm"],
            Impl::SwarmBaseline => &["worker", "append", "--impl", "before-group-commit"],
            Impl::ClaudeCode => &["worker", "append", "--impl", "claude-code"],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
