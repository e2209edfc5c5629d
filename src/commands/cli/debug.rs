//! Arguments of the hidden commands for benchmarks and the fault suite (`swarm bench`,
//! `swarm debug ...`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::store::names::AgentName;

#[derive(Debug, Subcommand)]
pub enum DebugCommand {
    /// Take the store lock on FILE, print "locked", and hold it until killed.
    HoldLock { file: PathBuf },

    /// Append COUNT messages "WRITER:SEQ" to NAME's inbox as `swarm send` does, printing each
    /// SEQ on its own line only after its append returned (the fault suite's ack protocol).
    Append(DebugAppendArgs),

    /// Like `append`, but the way Claude Code appends (the benchmarks' baseline): a bare mkdir
    /// lock given up after 11 tries, the file rewritten in place. Prints "SEQ" or "fail SEQ".
    CcAppend(DebugAppendArgs),

    /// Claim and complete tasks until none is available, printing each claimed id once claimed.
    ClaimLoop {
        #[arg(long, value_name = "NAME")]
        agent: AgentName,
        /// Claim without the agent-busy check (no list lock).
        #[arg(long)]
        no_busy_check: bool,
        /// Stop after this many claims.
        #[arg(long, value_name = "N")]
        max: Option<u64>,
        /// The claim path before the task index (`TaskList::claim_next_baseline`, then an update),
        /// the benchmarks' baseline.
        #[arg(long, conflicts_with = "trust_index")]
        baseline: bool,
        /// Print "ready" once the task list is loaded and wait for a line on stdin before
        /// claiming.
        #[arg(long)]
        ready: bool,
        /// One claim per line read on stdin, printing the id or "none".
        #[arg(long)]
        step: bool,
        /// Negative control: claim what the index held when it was loaded, without the task
        /// lock or the re-check, so racing claimers must claim tasks twice.
        #[arg(long)]
        trust_index: bool,
    },

    /// Print the team's `--lead-verify-key` value (making the lead key if it has none), for
    /// tests that start `swarm teammate` by hand.
    LeadVerifyKey,

    /// Seams for the runtime benchmarks (`scripts/bench-runtime`).
    #[command(subcommand)]
    Runtime(DebugRuntimeCommand),
}

#[derive(Debug, Args)]
pub struct DebugAppendArgs {
    /// Recipient.
    #[arg(long, value_name = "NAME")]
    pub to: AgentName,
    /// Messages to append.
    #[arg(long, default_value_t = 1)]
    pub count: u64,
    /// First sequence number.
    #[arg(long, default_value_t = 0)]
    pub start: u64,
    /// Writer id put in front of each sequence number in the text.
    #[arg(long, default_value = "w")]
    pub writer: String,
    /// Skip the inbox lock (read, push, atomic write): a negative control that must lose
    /// messages under contention.
    #[arg(long)]
    pub no_lock: bool,
    /// Append the way swarm did before the group commit (one locked rewrite per message): the
    /// benchmarks' baseline.
    #[arg(long, conflicts_with = "no_lock")]
    pub baseline: bool,
    /// Print "SEQ MICROSECONDS" (time spent in the append) instead of "SEQ".
    #[arg(long)]
    pub timings: bool,
}

#[derive(Debug, Subcommand)]
pub enum DebugRuntimeCommand {
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
