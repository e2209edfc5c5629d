//! The command line, as clap derive types. Parsing only: `commands/` turns these into actions.
//!
//! The top-level `Cli` and `Command` are here; each group's arguments live in `cli/` beside the
//! commands that run them, and the `swarm teammate` flags in `teammate/args.rs`, because the
//! launcher builds that command line from the same struct.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::store::names::{AgentName, TaskId, TeamName};

#[cfg(feature = "seams")]
mod debug;
mod launch;
mod lifecycle;
mod memory;
mod relay;
mod store;
mod timeline;
mod trust;
mod view;

pub(crate) use crate::teammate::args::{BuiltinAgent, TeammateArgs};
#[cfg(feature = "seams")]
pub(crate) use debug::{DebugAppendArgs, DebugCommand};
pub(crate) use launch::{DemoArgs, LaunchArgs};
pub(crate) use lifecycle::{DownArgs, PruneArgs, RestartArgs, ShutdownRequestCommand};
pub(crate) use memory::{MemoryAt, MemoryCommand, MemoryWriteArgs};
pub(crate) use relay::RelayCommand;
pub(crate) use store::{
    DepAction, InboxArgs, PermissionCommand, Recipient, SendArgs, TaskCommand, TeamCommand,
};
pub(crate) use timeline::TimelineArgs;
pub(crate) use trust::TrustArgs;
pub(crate) use view::{CompletionsArgs, ManArgs};

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
pub(crate) struct Cli {
    /// Root directory of teams and tasks.
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,

    /// Team to act on (default: $SWARM_TEAM, else the team of this tmux pane, else the only
    /// team with a running teammate, else the only team).
    #[arg(long, global = true, env = "SWARM_TEAM", value_name = "TEAM")]
    pub(crate) team: Option<TeamName>,

    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub(crate) json: bool,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// See swarm work: three shell teammates run a six-task DAG, then shut down cleanly.
    ///
    /// Uses tmux when it is installed (watch with the printed `swarm attach` command), else
    /// supervised child processes. Needs no model. The team is `demo` unless --team is given;
    /// its files go to $XDG_DATA_HOME/swarm (default ~/.local/share/swarm) unless --root or
    /// $SWARM_ROOT says otherwise, never into Claude Code's directory.
    ///
    /// Example: swarm demo --keep
    Demo(DemoArgs),

    /// Write a commented starter swarm file (YAML) that `swarm launch` runs as it is.
    ///
    /// Example: swarm init team.yaml
    Init {
        /// The file to write (default: swarm.yaml); an existing one is never overwritten.
        #[arg(value_name = "FILE")]
        file: Option<PathBuf>,
    },

    /// Launch a team: one agent process per teammate, each in its own pane.
    ///
    /// Teammates already on the roster that are not running are started again with their
    /// recorded identity; one that is running is refused (`swarm up` leaves it alone). Each task
    /// of the file is seeded once.
    ///
    /// Example: swarm launch examples/shell.json
    ///
    /// Example: swarm launch --team t --agent claude --teammate coder="Fix the parser" -- --verbose
    Launch(LaunchArgs),

    /// Bring a team to what its swarm file says: create what is missing, start teammates that
    /// are not running (with their recorded identity, agent, cwd and worktree), leave running
    /// ones alone, and seed each task of the file once (matched by `swarmKey` in its metadata).
    ///
    /// Works after `swarm shutdown --all`, `swarm down`, or a tmux server that died. Without a
    /// file, the one the team was launched from.
    ///
    /// Example: swarm up examples/shell.json
    ///
    /// Example: swarm up --team hello
    Up(LaunchArgs),

    /// Restart one teammate: the shutdown handshake, then the same teammate started again with
    /// its recorded identity; its inbox and the task list stay.
    ///
    /// Example: swarm restart --team refactor coder
    Restart(RestartArgs),

    /// Take a team down: the shutdown handshake with every teammate, then the lead console's
    /// pane and the tmux window or session swarm made are closed. The team's files stay, so
    /// `swarm up` brings it back.
    ///
    /// Example: swarm down --team refactor
    Down(DownArgs),

    /// Clean up: mark teammates that are no longer running inactive and return their tasks
    /// (in the teams named, else in every team), and delete the teams named (or dead for longer
    /// than --older-than) with their unchanged git worktrees. Asks first unless --yes.
    ///
    /// Example: swarm prune --older-than 7d --yes
    Prune(PruneArgs),

    /// Members, their panes (alive, or dead with exit code), current tasks, unread messages,
    /// permission requests and plans waiting for the lead, and quarantined files.
    ///
    /// Example: swarm status --team refactor --json
    ///
    /// Example: swarm status --team refactor --watch
    Status {
        /// Keep running and print a line for each change (a member's state, a task, a request).
        #[arg(long)]
        watch: bool,
    },

    /// A live full-screen view of the team: members, tasks, pending requests; keys to attach,
    /// message, approve or deny, and shut down. It redraws when the team's files change.
    ///
    /// Keys: j/k or the arrows move, tab switches between members and requests, a (or enter)
    /// attaches to the member, m messages it, s shuts it down (after a y), y approves the
    /// request, n denies it (with optional feedback), r re-reads, q quits.
    ///
    /// When stdout is not a terminal it prints `swarm status --watch` lines instead.
    ///
    /// Example: swarm top --team refactor
    Top,

    /// What the team did, in order: messages, task transitions (with who), permission and plan
    /// requests and who decided them, members joining, going idle and leaving, read from the
    /// team's files. Times are relative to the run's start; --json prints one object per line.
    ///
    /// Example: swarm timeline --team refactor --since 10m --member coder
    ///
    /// Example: swarm timeline --task 3 --follow
    Timeline(TimelineArgs),

    /// Tokens and estimated cost per teammate, from Claude Code's session transcripts and the
    /// results of `claude -p` turns. Every cost is an estimate from list prices; agents that
    /// report no usage show "unknown".
    ///
    /// Example: swarm usage --team refactor --json
    Usage,

    /// Go to the team's panes: attach to (or, inside tmux, switch to) a teammate's pane.
    ///
    /// Example: swarm attach --team refactor coder
    Attach {
        /// The teammate to show (default: the lead's pane, else the first teammate).
        name: Option<AgentName>,
    },

    /// The lead's console: follow the lead inbox, answer requests, message teammates.
    ///
    /// Type `@name text` or `@* text` to send, `/status`, `/tasks`, `/shutdown [name]`, and
    /// `y` or `n [feedback]` to answer permission and plan requests.
    Lead(LeadArgs),

    /// The lead agent's way to end the team: the lead runtime then shuts every teammate down.
    ///
    /// Only the lead side may (a teammate's shell is refused).
    ///
    /// Example: swarm done --summary "the parser is split and tested"
    Done(DoneArgs),

    /// Ask teammates to stop, wait for their answer, then close their panes, mark them inactive
    /// and return their unfinished tasks; after --timeout they are stopped anyway.
    ///
    /// A busy teammate finishes its running turn first (up to --grace; then the turn is stopped
    /// and its task goes back to pending), or its agent refuses and says why: then this exits 1
    /// naming the reason. --force does not wait.
    ///
    /// Example: swarm shutdown --team refactor coder --reason "moving to the new branch"
    ///
    /// Example: swarm shutdown --team refactor --all --timeout 10
    Shutdown(ShutdownArgs),

    /// A teammate's side of a shutdown: see the lead's request waiting for its running turn,
    /// or refuse it with a reason (run by the agent inside its turn).
    ///
    /// Example: swarm shutdown-request reject "half way through the migration"
    #[command(subcommand)]
    ShutdownRequest(ShutdownRequestCommand),

    /// Stop a teammate's running turn and keep the teammate: its turn's processes are stopped,
    /// its task goes back to pending (or is parked as failed with --fail), and it waits, idle,
    /// for the lead (it takes no task from the pool until you message or assign it one).
    ///
    /// Example: swarm interrupt coder --task 3 --fail "wrong approach, see the notes"
    Interrupt(InterruptArgs),

    /// Kill a teammate's pane or process now, mark it inactive and return its tasks.
    ///
    /// Example: swarm kill --team refactor coder
    Kill {
        /// The teammate to kill.
        name: AgentName,
    },

    /// Let a directory's project hooks (`.claude/settings*.json`) run in teammates and in
    /// `swarm task create`: swarm runs them only in a directory trusted here or in Claude
    /// Code's trust dialog, and in the folders below it. The list is kept in swarm's private
    /// state ($XDG_STATE_HOME/swarm/trusted-dirs.json), never in a team's files.
    ///
    /// Example: swarm trust ~/src/parser
    ///
    /// Example: swarm trust --list
    Trust(TrustArgs),

    /// Print a teammate's output: the log of an in-process teammate, the pane of a tmux one.
    ///
    /// Example: swarm logs --team refactor coder -f
    Logs {
        /// The teammate whose output to print.
        name: AgentName,
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

    /// Ask the lead for permission, and decide permission requests and plans as the lead.
    #[command(subcommand)]
    Permission(PermissionCommand),

    /// The team memory every member shares: one Markdown file per topic and MEMORY.md, their
    /// index, in Claude Code's layout (<root>/projects/<project>/memory/team/).
    #[command(subcommand)]
    Memory(MemoryCommand),

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

    /// Become bubblewrap around a contained teammate (and, inside, the teammate).
    #[command(hide = true)]
    SandboxExec(crate::launch::sandbox::SandboxExecArgs),

    /// Print a shell completion script; team and member names complete from the store.
    ///
    /// Example: source <(swarm completions bash)
    Completions(CompletionsArgs),

    /// Print swarm's man page, or write one page per command into --dir.
    ///
    /// Example: swarm man --dir ~/.local/share/man/man1
    Man(ManArgs),

    /// Teammates on other hosts: the link, a remote member's pane, and what runs on the host.
    #[command(subcommand, hide = true)]
    Relay(RelayCommand),

    /// Seams for the fault suite (built with the `seams` feature only); not a stable interface.
    #[cfg(feature = "seams")]
    #[command(subcommand, hide = true)]
    Debug(DebugCommand),
}

#[derive(Debug, Subcommand)]
pub(crate) enum HookCommand {
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
pub(crate) struct LeadArgs {
    /// Approve every permission and plan request without asking (for scripted runs).
    #[arg(long)]
    pub(crate) auto_approve: bool,
    /// Exit once every teammate has stopped; with an agent lead, once every task is completed
    /// (the team is shut down first).
    #[arg(long)]
    pub(crate) exit_when_done: bool,
    /// Seconds a permission or plan request may wait at the console before the person is told:
    /// a bell, a message on the tmux clients of the console's session, and Claude Code's
    /// `Notification` hooks; 0 turns this off.
    #[arg(long, value_name = "SECONDS", env = "SWARM_NOTIFY_AFTER", default_value = "5", value_parser = seconds)]
    pub(crate) notify_after: std::time::Duration,
    /// With an agent lead: who decides permission and plan requests.
    #[arg(long, value_enum, default_value = "human")]
    pub(crate) approvals: crate::lead::agent::Approvals,
    /// An agent lead: run this agent CLI once per turn (the goal first, then teammates'
    /// messages and task notifications), with the console alongside. `swarm launch --lead`
    /// starts it.
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct DoneArgs {
    /// What the team achieved, for the record and the lead pane.
    #[arg(long, default_value = "")]
    pub(crate) summary: String,
}

#[derive(Debug, Args)]
pub(crate) struct ShutdownArgs {
    /// The teammate to stop (or --all).
    #[arg(conflicts_with = "all")]
    pub(crate) name: Option<AgentName>,
    /// Every active teammate (requests go out together).
    #[arg(long)]
    pub(crate) all: bool,
    /// Seconds to wait for an answer before stopping anyway (default 30, or the grace plus 5).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) timeout: Option<u64>,
    /// Seconds a busy teammate's running turn may take to finish before it is stopped (default:
    /// the wait less 5, so 25).
    #[arg(long, value_name = "SECONDS", conflicts_with = "force")]
    pub(crate) grace: Option<u64>,
    /// Why, for the teammate (its pane, and `swarm shutdown-request show` for its agent).
    #[arg(long, value_name = "TEXT")]
    pub(crate) reason: Option<String>,
    /// Do not wait: stop a running turn at once, and stop even teammates that reject the
    /// request.
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Debug, Args)]
pub(crate) struct InterruptArgs {
    /// The teammate whose turn to stop.
    pub(crate) name: AgentName,
    /// Only while its turn works on this task.
    #[arg(long, value_name = "ID")]
    pub(crate) task: Option<TaskId>,
    /// Put the task back to pending for anyone (the default).
    #[arg(long, conflicts_with = "fail")]
    pub(crate) release: bool,
    /// Park the task as failed, with this reason (the lead clears it to retry).
    #[arg(long, value_name = "REASON")]
    pub(crate) fail: Option<String>,
    /// Seconds to wait for the teammate's answer.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub(crate) timeout: u64,
}

/// `--notify-after SECONDS`: a number of seconds, fractions allowed (`0.5`).
fn seconds(text: &str) -> std::result::Result<std::time::Duration, String> {
    text.parse::<f64>()
        .ok()
        .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| format!("{text:?} is not a number of seconds (such as 5 or 0.5)"))
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::{Cli, Command, Recipient, SendArgs};

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn names_are_validated_while_parsing() {
        let cli = Cli::try_parse_from(["swarm", "--team", "t", "send", "--to", "*", "hi"]).unwrap();
        assert_eq!(cli.team.as_ref().map(|t| t.as_str()), Some("t"));
        let Command::Send(SendArgs { to, .. }) = cli.command else {
            panic!("not send");
        };
        assert!(matches!(to, Recipient::Everyone));

        let bad = Cli::try_parse_from(["swarm", "--team", "T", "status"]).unwrap_err();
        assert!(bad.use_stderr(), "a bad name is an error (exit 2)");
        assert!(bad.to_string().contains("invalid team name \"T\""), "{bad}");
        let reserved =
            Cli::try_parse_from(["swarm", "--team", "t", "team", "add", "USER"]).unwrap_err();
        assert!(reserved.to_string().contains("are reserved"), "{reserved}");
    }
}
