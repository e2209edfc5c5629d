//! Arguments of the hidden `swarm debug ...` commands, the fault suite's seams (built with the
//! `seams` feature only; see `commands/debug.rs`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::store::names::AgentName;

#[derive(Debug, Subcommand)]
pub(crate) enum DebugCommand {
    /// Take the store lock on FILE, print "locked", and hold it until killed.
    HoldLock { file: PathBuf },

    /// Append COUNT messages "WRITER:SEQ" to NAME's inbox as `swarm send` does, printing each
    /// SEQ on its own line only after its append returned (the fault suite's ack protocol).
    Append(DebugAppendArgs),

    /// Like `append`, but the way Claude Code appends: a bare mkdir lock given up after 11
    /// tries, the file rewritten in place. Prints "SEQ" or "fail SEQ".
    CcAppend(DebugAppendArgs),

    /// Claim and complete tasks through the task index until none is available, printing each
    /// claimed id once claimed.
    ClaimLoop {
        #[arg(long, value_name = "NAME")]
        agent: AgentName,
        /// Claim without the agent-busy check (no list lock).
        #[arg(long)]
        no_busy_check: bool,
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

    /// Record PID, whose environment holds SWARM_SPAWN_TOKEN=TOKEN, as the process swarm started
    /// for NAME, as a launch records it: for tests whose stand-in plays a launched teammate.
    RecordSpawn {
        #[arg(long, value_name = "NAME")]
        name: AgentName,
        #[arg(long)]
        pid: u32,
        #[arg(long)]
        token: String,
    },

    /// Append TEXT to NAME's inbox from --from as swarm's own runtime and lead do, lifecycle
    /// frames (which `swarm send` refuses) included: for tests that play a teammate's runtime.
    Frame {
        #[arg(long, value_name = "NAME")]
        to: AgentName,
        #[arg(
            long,
            env = "SWARM_AGENT_NAME",
            default_value = "team-lead",
            value_name = "NAME"
        )]
        from: AgentName,
        text: String,
    },

    /// Open inotify instances until COUNT are held (default: as many as can be had), print
    /// "held N", and hold them until killed: another program using up the user's instances,
    /// for the tests of the polling fallback and `scripts/test-under-load`.
    HoldInotify {
        #[arg(long)]
        count: Option<u64>,
    },

    /// Print the team's `--lead-verify-key` value (making the lead key if it has none), for
    /// tests that start `swarm teammate` by hand.
    LeadVerifyKey,
}

#[derive(Debug, Args)]
pub(crate) struct DebugAppendArgs {
    /// Recipient.
    #[arg(long, value_name = "NAME")]
    pub(crate) to: AgentName,
    /// Messages to append.
    #[arg(long, default_value_t = 1)]
    pub(crate) count: u64,
    /// First sequence number.
    #[arg(long, default_value_t = 0)]
    pub(crate) start: u64,
    /// Writer id put in front of each sequence number in the text.
    #[arg(long, default_value = "w")]
    pub(crate) writer: String,
    /// Skip the inbox lock (read, push, atomic write): a negative control that must lose
    /// messages under contention (`append` only).
    #[arg(long)]
    pub(crate) no_lock: bool,
}
