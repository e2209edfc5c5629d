//! Arguments of the store commands: `team`, `send`, `inbox`, `task`, `permission`.
//!
//! Names and task ids are parsed here, by clap, into the store's validated types, so a bad one
//! is refused (exit 2, the rule it breaks) before any command runs, and the commands never
//! re-parse a string.

use std::str::FromStr;

use clap::{Args, Subcommand};

use crate::error::Error;
use crate::store::names::{AgentName, MessageId, TaskId, TeamName};
use crate::store::tasks::TaskStatus;

/// Who `swarm send --to` writes to: one member, or `*` for every member but the sender.
#[derive(Debug, Clone)]
pub(crate) enum Recipient {
    Everyone,
    Agent(AgentName),
}

impl FromStr for Recipient {
    type Err = Error;
    fn from_str(s: &str) -> Result<Recipient, Error> {
        match s {
            "*" => Ok(Recipient::Everyone),
            name => name.parse().map(Recipient::Agent),
        }
    }
}

/// A name a new teammate may take (valid and not reserved), for `swarm team add`.
fn teammate_name(s: &str) -> Result<AgentName, Error> {
    AgentName::teammate(s)
}

#[derive(Debug, Subcommand)]
pub(crate) enum TeamCommand {
    /// Create a team with its lead.
    ///
    /// Example: swarm team create refactor --description "split the parser"
    Create {
        /// Team name: lowercase letters, digits and '-' (default: --team).
        name: Option<TeamName>,
        #[arg(long, default_value = "")]
        description: String,
    },
    /// List the teams under the root.
    List,
    /// Show a team's roster (the team from --team when NAME is left out).
    Show { name: Option<TeamName> },
    /// Add a member to the roster without launching anything (for a teammate you run yourself).
    ///
    /// Example: swarm --team refactor team add coder --color green
    Add {
        #[arg(value_parser = teammate_name)]
        name: AgentName,
        /// Roster colour (default: the next in blue, green, yellow, purple, orange, pink, cyan, red).
        #[arg(long)]
        color: Option<String>,
        #[arg(long, default_value = "general-purpose")]
        agent_type: String,
    },
    /// Remove a member from the roster; its unfinished tasks go back to pending.
    Remove { name: AgentName },
    /// Delete a team and its tasks; refused while teammates are active unless --force.
    Delete {
        name: Option<TeamName>,
        /// Delete even if teammates are still marked active.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Args)]
pub(crate) struct SendArgs {
    /// Recipient name, or '*' for every member but the sender.
    #[arg(long, value_name = "NAME")]
    pub(crate) to: Recipient,
    /// Sender name (default: $SWARM_AGENT_NAME, else team-lead).
    #[arg(
        long,
        env = "SWARM_AGENT_NAME",
        default_value = "team-lead",
        value_name = "NAME"
    )]
    pub(crate) from: AgentName,
    /// A short summary shown in previews.
    #[arg(long)]
    pub(crate) summary: Option<String>,
    /// Start a recipient that is not running again (as `swarm up` would), so it reads the
    /// message. Without it, a message to a stopped teammate is delivered and stderr says so.
    #[arg(long)]
    pub(crate) wake: bool,
    /// The message's id (msg_id) instead of a new one. Sending again with the same id stores
    /// nothing where the inbox holds it already, read or not: a script that must know its
    /// message arrived sends again with the id the first try printed (or one it chose) after
    /// exit 1 or 3.
    #[arg(long, value_name = "ID")]
    pub(crate) id: Option<MessageId>,
    /// The message; '-' reads it from standard input.
    pub(crate) text: String,
}

#[derive(Debug, Args)]
pub(crate) struct InboxArgs {
    /// Whose inbox (default: $SWARM_AGENT_NAME).
    #[arg(env = "SWARM_AGENT_NAME")]
    pub(crate) name: AgentName,
    /// Only messages not yet delivered.
    #[arg(long)]
    pub(crate) unread: bool,
    /// Also the delivered history moved to the archive, oldest first, each message once.
    #[arg(long, conflicts_with = "unread")]
    pub(crate) all: bool,
    /// Mark the printed messages as delivered (by msg_id; nothing else is touched).
    #[arg(long)]
    pub(crate) mark_read: bool,
    /// Keep running and print new messages as they arrive (one JSON object per line with --json).
    #[arg(long)]
    pub(crate) follow: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum TaskCommand {
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
        blocked_by: Vec<TaskId>,
        /// Metadata as a JSON object.
        #[arg(long, value_name = "JSON")]
        metadata: Option<String>,
    },
    /// List tasks.
    List {
        #[arg(long, value_enum)]
        status: Option<StatusArg>,
        #[arg(long, value_name = "NAME")]
        owner: Option<AgentName>,
        /// Only tasks that can be claimed now.
        #[arg(long)]
        available: bool,
    },
    /// Show one task.
    Show { id: TaskId },
    /// Change fields of a task.
    ///
    /// Example: swarm task update 3 --status completed --metadata '{"pr": 12, "draft": null}'
    Update {
        id: TaskId,
        #[arg(long)]
        subject: Option<String>,
        #[arg(long)]
        description: Option<String>,
        #[arg(long)]
        active_form: Option<String>,
        #[arg(long, value_enum)]
        status: Option<StatusArg>,
        #[arg(long, value_name = "NAME", conflicts_with = "no_owner")]
        owner: Option<AgentName>,
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
        action: DepAction,
        id: TaskId,
        /// The task ID waits for.
        #[arg(long, value_name = "ID")]
        on: TaskId,
    },
    /// Claim a task for an agent (owner and in_progress in one write).
    Claim {
        id: TaskId,
        #[arg(long, env = "SWARM_AGENT_NAME", value_name = "NAME")]
        agent: AgentName,
        /// Allow the claim even if the agent owns another unfinished task.
        #[arg(long)]
        no_busy_check: bool,
    },
    /// Return an agent's unfinished tasks to pending.
    Release {
        #[arg(long, env = "SWARM_AGENT_NAME", value_name = "NAME")]
        agent: AgentName,
    },
    /// Delete a task; its id is never issued again.
    Delete { id: TaskId },
    /// Show (or with --claim, claim) the next available task.
    ///
    /// With --claim, an agent that already owns an unfinished task gets that task again, so a
    /// claimer may run it again when it was not told how its claim went (exit 3, or killed).
    Next {
        #[arg(long, env = "SWARM_AGENT_NAME", value_name = "NAME")]
        agent: Option<AgentName>,
        #[arg(long, requires = "agent")]
        claim: bool,
    },
}

/// A task status as `--status` takes it: spelled as the task files spell it (`in_progress`),
/// with `in-progress` accepted too.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StatusArg(pub(crate) TaskStatus);

impl clap::ValueEnum for StatusArg {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            StatusArg(TaskStatus::Pending),
            StatusArg(TaskStatus::InProgress),
            StatusArg(TaskStatus::Completed),
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let value = clap::builder::PossibleValue::new(self.0.as_str());
        Some(match self.0 {
            TaskStatus::InProgress => value.alias("in-progress"),
            _ => value,
        })
    }
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum DepAction {
    Add,
    Remove,
}

#[derive(Debug, Subcommand)]
pub(crate) enum PermissionCommand {
    /// File a permission request with the lead; with --wait, exit 0 approved, 1 rejected, 2 timed
    /// out.
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
        from: AgentName,
        /// Block until the lead decides.
        #[arg(long)]
        wait: bool,
        /// Seconds to wait with --wait (0: forever).
        #[arg(long, default_value_t = 0)]
        timeout: u64,
    },
    /// List the permission and plan requests waiting for the lead (with --all, decided ones too).
    List {
        #[arg(long)]
        all: bool,
    },
    /// Approve a waiting permission request (also one a Claude Code teammate only sent as a
    /// message) or plan (the teammate goes back to its launch mode).
    ///
    /// Example: swarm permission approve perm-1767225600000-k3j9x2a --accept-suggestions
    Approve {
        id: String,
        #[arg(long)]
        feedback: Option<String>,
        /// Replacement tool input as JSON (permission requests only).
        #[arg(long, value_name = "JSON")]
        updated_input: Option<String>,
        /// Grant the request's own permission_suggestions too (sent back as permission_updates),
        /// e.g. Claude's "allow edits for the session" (permission requests only).
        #[arg(long)]
        accept_suggestions: bool,
        /// Recorded as who decided (the answer still comes from the lead). Only the lead's shell
        /// may decide; a teammate is refused, and so is another name for a claude teammate.
        #[arg(long, default_value = "team-lead", value_name = "NAME")]
        by: AgentName,
    },
    /// Reject a waiting permission request or plan; --feedback says why (a plan is revised).
    ///
    /// Example: swarm permission deny plan_approval-1767225600000@coder@team --feedback "add tests"
    Deny {
        id: String,
        #[arg(long)]
        feedback: Option<String>,
        /// Recorded as who decided (the answer still comes from the lead). Only the lead's shell
        /// may decide; a teammate is refused, and so is another name for a claude teammate.
        #[arg(long, default_value = "team-lead", value_name = "NAME")]
        by: AgentName,
    },
    /// Wait for the decision on a permission request or plan; exit 0 approved, 1 rejected, 2
    /// timed out.
    Wait {
        id: String,
        #[arg(long, default_value_t = 0)]
        timeout: u64,
    },
}
