//! The command line, as clap derive types. Parsing only: `commands/` turns these into actions.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::store::tasks::TaskStatus;

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
    /// See swarm work: three shell teammates run a six-task DAG, then shut down cleanly.
    ///
    /// Uses tmux when it is installed (watch with the printed `tmux attach` command), else
    /// supervised child processes. Needs no model. The team is `demo` unless --team is given.
    ///
    /// Example: swarm demo --backend in-process
    Demo(DemoArgs),

    /// Launch a team: one agent process per teammate, each in its own pane.
    ///
    /// Example: swarm launch examples/refactor.json
    /// Example: swarm launch --team t --agent claude --teammate coder="Fix the parser" -- --verbose
    Launch(LaunchArgs),

    /// Members, their panes (alive, or dead with exit code), current tasks, unread messages,
    /// pending permissions and quarantined files.
    ///
    /// Example: swarm status --team refactor --json
    Status,

    /// Go to the team's panes: attach to (or, inside tmux, switch to) a teammate's pane.
    ///
    /// Example: swarm attach --team refactor coder
    Attach {
        /// The teammate to show (default: the lead's pane, else the first teammate).
        name: Option<String>,
    },

    /// The lead's console: follow the lead inbox, answer requests, message teammates.
    ///
    /// Type `@name text` or `@* text` to send, `/status`, `/tasks`, `/shutdown [name]`, and
    /// `y` or `n [feedback]` to answer permission and plan requests.
    Lead(LeadArgs),

    /// Ask teammates to stop, wait for their answer, then close their panes, mark them inactive
    /// and return their unfinished tasks; after --timeout they are stopped anyway.
    ///
    /// Example: swarm shutdown --team refactor --all --timeout 10
    Shutdown(ShutdownArgs),

    /// Kill a teammate's pane or process now, mark it inactive and return its tasks.
    ///
    /// Example: swarm kill --team refactor coder
    Kill { name: String },

    /// Print a teammate's output: the log of an in-process teammate, the pane of a tmux one.
    ///
    /// Example: swarm logs --team refactor coder -f
    Logs {
        name: String,
        /// Keep printing new output until the teammate is gone.
        #[arg(short, long)]
        follow: bool,
    },

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

    /// Run one teammate: the process inside a pane that gives an agent CLI (or the built-in
    /// shell agent) the team protocol. Started by `swarm launch`; can be run by hand.
    ///
    /// Example: swarm teammate --agent-id coder@t --agent-name coder --team-name t
    ///   --agent-color blue --parent-session-id S -- claude -p
    Teammate(TeammateArgs),

    /// Hooks for agent CLIs; `scripts/claude-permission-hook` calls `swarm hook pre-tool-use`.
    #[command(subcommand)]
    Hook(HookCommand),

    /// Become a teammate described by a spec file (the iTerm2 backend's trampoline).
    #[command(hide = true)]
    PaneExec { spec: PathBuf },

    /// Tools for tests and debugging; not a stable interface.
    #[command(subcommand, hide = true)]
    Debug(DebugCommand),

    /// Run the store benchmarks against Claude Code baselines and print tables (scripts/bench).
    #[command(hide = true)]
    Bench(BenchArgs),
}

#[derive(Debug, Args)]
pub struct TeammateArgs {
    /// NAME@TEAM; must agree with --agent-name and --team-name.
    #[arg(long, value_name = "NAME@TEAM")]
    pub agent_id: String,
    /// The member's name; it must be on the team's roster.
    #[arg(long, value_name = "NAME")]
    pub agent_name: String,
    #[arg(long, value_name = "TEAM")]
    pub team_name: String,
    /// Roster colour, used for the pane's lines and the messages it sends.
    #[arg(long, default_value = "blue", value_name = "COLOR")]
    pub agent_color: String,
    /// The lead's session id (accepted for parity with `claude`).
    #[arg(long, default_value = "", value_name = "SESSION")]
    pub parent_session_id: String,
    /// The first turn writes a plan for the lead to approve; no task work until approved.
    #[arg(long)]
    pub plan_mode_required: bool,
    /// Directory the agent runs in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// How a turn's prompt reaches CMD: as its last argument (or in place of a `{prompt}`
    /// argument), or on its standard input.
    #[arg(long, value_enum, default_value = "arg")]
    pub prompt_via: PromptVia,
    /// A built-in agent instead of CMD: `shell` runs task descriptions and `$ ` messages.
    #[arg(long, value_enum, value_name = "KIND", conflicts_with = "command")]
    pub agent: Option<BuiltinAgent>,
    /// The agent command, run once per turn with the prompt.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PromptVia {
    Arg,
    Stdin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BuiltinAgent {
    Shell,
}

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Claude Code PreToolUse hook: reads the hook JSON on stdin, asks the team lead (as
    /// `swarm permission request --wait` does) and prints the allow/deny decision JSON.
    /// Outside a swarm team (no SWARM_TEAM / SWARM_AGENT_NAME) it prints nothing, which leaves
    /// the decision to Claude Code.
    PreToolUse {
        #[arg(long, env = "SWARM_AGENT_NAME", value_name = "NAME")]
        from: Option<String>,
        /// Seconds to wait for the lead; then the tool is denied. Keep it below the hook's
        /// `timeout` in Claude Code's settings.
        #[arg(long, default_value_t = 550)]
        timeout: u64,
    },
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where the teammates run: auto picks tmux when it is installed, else in-process.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: crate::backend::BackendChoice,
    /// Stop the demo after this many seconds.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
}

#[derive(Debug, Args)]
pub struct LeadArgs {
    /// Approve every permission and plan request without asking (for scripted runs).
    #[arg(long)]
    pub auto_approve: bool,
    /// Exit once every teammate has stopped.
    #[arg(long)]
    pub exit_when_done: bool,
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

    /// Seams for the runtime benchmarks (`scripts/bench-runtime`).
    #[command(subcommand)]
    Runtime(DebugRuntimeCommand),
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
pub enum DebugRuntimeCommand {
    /// Time `swarm send` processes until NAME's inbox shows each message read; print JSON.
    /// Default: one message at a time, each sent after the reader's `idle_notification` to the
    /// lead for the previous one (a teammate runtime). `--stream`: one message every
    /// `--min-gap-ms`..`--max-gap-ms` without waiting (a poll loop, which answers nothing).
    Latency {
        #[arg(long, value_name = "NAME")]
        to: String,
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
        agent: String,
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

#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// Swarm file (JSON, see examples/); '-' reads standard input.
    pub file: Option<PathBuf>,
    /// A teammate and its first message (repeatable).
    #[arg(long, value_name = "NAME=PROMPT")]
    pub teammate: Vec<String>,
    /// Agent kind: claude, shell, or a command line such as "codex --full-auto" (default: the
    /// swarm file's, else claude).
    #[arg(long, value_name = "KIND")]
    pub agent: Option<String>,
    #[arg(long)]
    pub description: Option<String>,
    /// Directory teammates start in (default: the swarm file's cwd, else the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Where teammates run; auto follows $TMUX, iTerm2 with it2, tmux on PATH, in-process.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: crate::backend::BackendChoice,
    /// Inside tmux: split the current window instead of opening a window swarm-<team>.
    #[arg(long)]
    pub split: bool,
    /// Do not run the lead console in the first tmux pane.
    #[arg(long)]
    pub no_lead_pane: bool,
    /// Give every teammate its own git worktree (<repo>/.swarm/worktrees/<name>).
    #[arg(long)]
    pub worktree: bool,
    /// Print each teammate's exact argv and environment; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Inherited by every teammate unless it sets its own.
    #[arg(long)]
    pub model: Option<String>,
    /// Inherited; claude teammates get `default` when neither this nor the teammate sets one.
    #[arg(
        long,
        value_name = "MODE",
        conflicts_with = "dangerously_skip_permissions"
    )]
    pub permission_mode: Option<String>,
    /// Inherited.
    #[arg(long)]
    pub dangerously_skip_permissions: bool,
    /// Inherited: a settings file or JSON.
    #[arg(long, value_name = "FILE|JSON")]
    pub settings: Option<String>,
    /// Inherited.
    #[arg(long, value_name = "TYPE")]
    pub agent_type: Option<String>,
    /// Inherited.
    #[arg(long)]
    pub plan_mode_required: bool,
    /// In-process: seconds teammates get to answer the shutdown request after Ctrl-C.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub shutdown_timeout: u64,
    /// Passed on to every teammate's agent (after `--`).
    #[arg(last = true, value_name = "ARGS")]
    pub extra: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ShutdownArgs {
    /// The teammate to stop.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub name: Option<String>,
    /// Every active teammate (requests go out together).
    #[arg(long)]
    pub all: bool,
    /// Seconds to wait for an answer before stopping anyway.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub timeout: u64,
    /// Stop even teammates that reject the request.
    #[arg(long)]
    pub force: bool,
}
