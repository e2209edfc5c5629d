//! The command line, as clap derive types. Parsing only: `commands/` turns these into actions.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::tasks::TaskStatus;

const AFTER_HELP: &str = "\
Files live under --root, else $SWARM_ROOT, else $CLAUDE_CONFIG_DIR, else ~/.claude:
  teams/<team>/config.json          the roster
  teams/<team>/inboxes/<agent>.json one inbox per agent (cat it)
  tasks/<team>/<id>.json            the shared task list
  teams/<team>/permissions/         pending and resolved permission requests

A teammate's shell has SWARM_TEAM and SWARM_AGENT_NAME set, so `swarm send --to team-lead hi`
needs no other flags there.";

/// Launch and run swarms of coding agents that coordinate through files.
#[derive(Debug, Parser)]
#[command(name = "swarm", version, about, after_help = AFTER_HELP, max_term_width = 100)]
pub struct Cli {
    /// Root directory of teams and tasks.
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// Team to act on.
    #[arg(long, global = true, env = "SWARM_TEAM", value_name = "TEAM")]
    pub team: Option<String>,

    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, list, show and delete teams.
    #[command(subcommand)]
    Team(TeamCommand),

    /// Send a message to one member's inbox, or to everyone with --to '*'.
    ///
    /// Example: swarm send --team refactor --to coder --summary "parser" "Review the parser"
    Send(SendArgs),

    /// Print an agent's inbox; --follow keeps printing new messages as they arrive.
    ///
    /// Example: swarm inbox --team refactor team-lead --unread --follow
    Inbox(InboxArgs),

    /// Work with the shared task list.
    #[command(subcommand)]
    Task(TaskCommand),

    /// Ask the lead for permission, and decide requests as the lead.
    #[command(subcommand)]
    Permission(PermissionCommand),

    /// Tools for tests and debugging; not a stable interface.
    #[command(subcommand, hide = true)]
    Debug(DebugCommand),

    /// Run the store benchmarks against Claude Code baselines and print tables (scripts/bench).
    #[command(hide = true)]
    Bench(BenchArgs),
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Benchmarks to run (default: all): latency, contention, inbox-size, claims, cold-send.
    pub names: Vec<String>,
    /// Small sizes, for a smoke test of the benchmark code itself; the numbers mean little.
    #[arg(long)]
    pub quick: bool,
    /// Directory for the throwaway stores (default: the system temp directory).
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
}

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
        agent: String,
        /// Claim without the agent-busy check (no list lock).
        #[arg(long)]
        no_busy_check: bool,
        /// Stop after this many claims.
        #[arg(long, value_name = "N")]
        max: Option<u64>,
    },
}

#[derive(Debug, Args)]
pub struct DebugAppendArgs {
    /// Recipient.
    #[arg(long, value_name = "NAME")]
    pub to: String,
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
    /// Print "SEQ MICROSECONDS" (time spent in the append) instead of "SEQ".
    #[arg(long)]
    pub timings: bool,
}

#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Create a team with its lead.
    ///
    /// Example: swarm team create refactor --description "split the parser"
    Create {
        /// Team name: lowercase letters, digits and '-'.
        name: String,
        #[arg(long, default_value = "")]
        description: String,
    },
    /// List the teams under the root.
    List,
    /// Show a team's roster (the team from --team when NAME is left out).
    Show { name: Option<String> },
    /// Add a member to the roster without launching anything (for a teammate you run yourself).
    ///
    /// Example: swarm --team refactor team add coder --color green
    Add {
        name: String,
        /// Roster colour (default: the next in blue, green, yellow, purple, orange, pink, cyan, red).
        #[arg(long)]
        color: Option<String>,
        #[arg(long, default_value = "general-purpose")]
        agent_type: String,
    },
    /// Remove a member from the roster; its unfinished tasks go back to pending.
    Remove { name: String },
    /// Delete a team and its tasks; refused while teammates are active unless --force.
    Delete {
        name: Option<String>,
        /// Delete even if teammates are still marked active.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// Recipient name, or '*' for every member but the sender.
    #[arg(long, value_name = "NAME")]
    pub to: String,
    /// Sender name (default: $SWARM_AGENT_NAME, else team-lead).
    #[arg(
        long,
        env = "SWARM_AGENT_NAME",
        default_value = "team-lead",
        value_name = "NAME"
    )]
    pub from: String,
    /// A short summary shown in previews.
    #[arg(long)]
    pub summary: Option<String>,
    /// The message; '-' reads it from standard input.
    pub text: String,
}

#[derive(Debug, Args)]
pub struct InboxArgs {
    /// Whose inbox (default: $SWARM_AGENT_NAME).
    #[arg(env = "SWARM_AGENT_NAME")]
    pub name: String,
    /// Only messages not yet delivered.
    #[arg(long)]
    pub unread: bool,
    /// Mark the printed messages as delivered (by msg_id; nothing else is touched).
    #[arg(long)]
    pub mark_read: bool,
    /// Keep running and print new messages as they arrive (one JSON object per line with --json).
    #[arg(long)]
    pub follow: bool,
}

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Create a task.
    ///
    /// Example: swarm task create "Add tests" --description "cargo test" --blocked-by 1
    Create {
        subject: String,
        #[arg(long, default_value = "")]
        description: String,
        #[arg(long)]
        active_form: Option<String>,
        /// A task that must complete first (repeatable).
        #[arg(long, value_name = "ID")]
        blocked_by: Vec<String>,
        /// Metadata as a JSON object.
        #[arg(long, value_name = "JSON")]
        metadata: Option<String>,
    },
    /// List tasks.
    List {
        #[arg(long, value_enum)]
        status: Option<TaskStatus>,
        #[arg(long, value_name = "NAME")]
        owner: Option<String>,
        /// Only tasks that can be claimed now.
        #[arg(long)]
        available: bool,
    },
    /// Show one task.
    Show { id: String },
    /// Change fields of a task.
    ///
    /// Example: swarm task update 3 --status completed --metadata '{"pr": 12, "draft": null}'
    Update {
        id: String,
        #[arg(long)]
        subject: Option<String>,
        #[arg(long)]
        description: Option<String>,
        #[arg(long)]
        active_form: Option<String>,
        #[arg(long, value_enum)]
        status: Option<TaskStatus>,
        #[arg(long, value_name = "NAME", conflicts_with = "no_owner")]
        owner: Option<String>,
        /// Clear the owner.
        #[arg(long)]
        no_owner: bool,
        /// JSON object merged into metadata; a null value deletes that key.
        #[arg(long, value_name = "JSON")]
        metadata: Option<String>,
    },
    /// Add or remove a dependency: ID waits for --on.
    ///
    /// Example: swarm task dep add 4 --on 2
    Dep {
        #[arg(value_parser = ["add", "remove"])]
        action: String,
        id: String,
        /// The task ID waits for.
        #[arg(long, value_name = "ID")]
        on: String,
    },
    /// Claim a task for an agent (owner and in_progress in one write).
    Claim {
        id: String,
        #[arg(long, env = "SWARM_AGENT_NAME", value_name = "NAME")]
        agent: String,
        /// Allow the claim even if the agent owns another unfinished task.
        #[arg(long)]
        no_busy_check: bool,
    },
    /// Return an agent's unfinished tasks to pending.
    Release {
        #[arg(long, env = "SWARM_AGENT_NAME", value_name = "NAME")]
        agent: String,
    },
    /// Delete a task; its id is never issued again.
    Delete { id: String },
    /// Show (or with --claim, claim) the next available task.
    Next {
        #[arg(long, env = "SWARM_AGENT_NAME", value_name = "NAME")]
        agent: Option<String>,
        #[arg(long, requires = "agent")]
        claim: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum PermissionCommand {
    /// File a request with the lead; with --wait, exit 0 approved, 1 denied, 2 timed out.
    ///
    /// Example: swarm permission request --tool Bash --input '{"command":"rm -rf build"}' --wait
    Request {
        #[arg(long)]
        tool: String,
        /// Tool input as JSON.
        #[arg(long, default_value = "{}", value_name = "JSON")]
        input: String,
        #[arg(long, default_value = "")]
        description: String,
        #[arg(long, default_value = "")]
        tool_use_id: String,
        #[arg(long, env = "SWARM_AGENT_NAME", value_name = "NAME")]
        from: String,
        /// Block until the lead decides.
        #[arg(long)]
        wait: bool,
        /// Seconds to wait with --wait (0: forever).
        #[arg(long, default_value_t = 0)]
        timeout: u64,
    },
    /// List pending requests (with --all, decided ones too).
    List {
        #[arg(long)]
        all: bool,
    },
    /// Approve a pending request.
    Approve {
        id: String,
        #[arg(long)]
        feedback: Option<String>,
        /// Replacement tool input as JSON.
        #[arg(long, value_name = "JSON")]
        updated_input: Option<String>,
        #[arg(long, default_value = "team-lead", value_name = "NAME")]
        by: String,
    },
    /// Deny a pending request.
    Deny {
        id: String,
        #[arg(long)]
        feedback: Option<String>,
        #[arg(long, default_value = "team-lead", value_name = "NAME")]
        by: String,
    },
    /// Wait for the decision on a request; exit 0 approved, 1 denied, 2 timed out.
    Wait {
        id: String,
        #[arg(long, default_value_t = 0)]
        timeout: u64,
    },
}
