//! Arguments of the commands that start teams: `swarm launch` and `swarm up` (one set of
//! flags), `swarm restart` (which fills one in) and `swarm demo`.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub(crate) struct LaunchArgs {
    /// Swarm file (JSON, see examples/); '-' reads standard input.
    pub file: Option<PathBuf>,
    /// A teammate and its first message (repeatable).
    #[arg(long, value_name = "NAME=PROMPT")]
    pub teammate: Vec<String>,
    /// Run a teammate on another machine: NAME=HOST (repeatable), or HOST for every teammate
    /// that names none. HOST is an ssh destination as `ssh HOST` takes it.
    #[arg(long, value_name = "NAME=HOST")]
    pub host: Vec<String>,
    /// The swarm to run on teammates' hosts (default: the swarm file's "remoteSwarm", else
    /// `swarm` on the remote PATH); it must be this version.
    #[arg(long, value_name = "PATH")]
    pub remote_swarm: Option<String>,
    /// Agent kind: claude, shell, or a command line such as "codex exec -s workspace-write"
    /// (default: the swarm file's, else claude).
    #[arg(long, value_name = "KIND")]
    pub agent: Option<String>,
    /// The team's description (a new team's; default: the swarm file's).
    #[arg(long, value_name = "TEXT")]
    pub description: Option<String>,
    /// Directory teammates start in (default: the swarm file's cwd, else the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Where teammates run; auto follows $TMUX, iTerm2 with it2, tmux on PATH, in-process.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: crate::backend::BackendChoice,
    /// Inside tmux: split the current window instead of opening a window swarm-<team>-<root hash>.
    #[arg(long)]
    pub split: bool,
    /// Run the lead as an agent in the lead pane instead of the console alone: a command line
    /// such as "claude -p" or a script, run once per turn; needs a goal (--goal, or "lead" in
    /// the swarm file).
    #[arg(long, value_name = "AGENT")]
    pub lead: Option<String>,
    /// The lead agent's goal: its first turn.
    #[arg(long, value_name = "TEXT")]
    pub goal: Option<String>,
    /// Who decides teammates' permission and plan requests when an agent leads.
    #[arg(long, value_enum, value_name = "WHO")]
    pub approvals: Option<crate::lead::agent::Approvals>,
    /// With an agent lead: end the team once every task is completed.
    #[arg(long)]
    pub exit_when_done: bool,
    /// Do not run the lead console in the first tmux pane.
    #[arg(long)]
    pub no_lead_pane: bool,
    /// tmux: the most panes in one window; later panes open further windows of the team's
    /// session (default: the swarm file's panesPerWindow, else 16).
    #[arg(long, value_name = "N", value_parser = panes_per_window)]
    pub panes_per_window: Option<u16>,
    /// Seconds to wait for every teammate to come up (its runtime running, a claude teammate's
    /// process alive past start-up) before reporting the ones that did not.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 5,
        conflicts_with = "no_wait"
    )]
    pub wait: u64,
    /// Do not wait for the teammates to come up; report nothing about them.
    #[arg(long)]
    pub no_wait: bool,
    /// Give every teammate its own git worktree (<repo>/.swarm/worktrees/<name>).
    #[arg(long)]
    pub worktree: bool,
    /// Print each teammate's exact argv and environment; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Run teammates uncontained: without bubblewrap, which otherwise hides the lead key and
    /// the tmux server from them and keeps the team's control records read-only (README,
    /// "Containment").
    #[arg(long)]
    pub no_sandbox: bool,
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
    /// Inherited by runtime teammates: their turns get the prompt as the last argument (or in
    /// place of a whole `{prompt}` argument), or on stdin. A prompt too big for an argument goes
    /// on stdin anyway.
    #[arg(long, value_enum, value_name = "HOW")]
    pub prompt_via: Option<crate::teammate::args::PromptVia>,
    /// Inherited by runtime teammates (a teammate's own in the swarm file wins).
    #[command(flatten)]
    pub limits: crate::teammate::args::Limits,
    /// In-process: seconds teammates get to answer the shutdown request after Ctrl-C.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub shutdown_timeout: u64,
    /// Passed on to every teammate's agent (after `--`).
    #[arg(last = true, value_name = "ARGS")]
    pub extra: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Where the teammates run: auto picks tmux when it is installed, else in-process.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: crate::backend::BackendChoice,
    /// Stop the demo after this many seconds.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Leave the team running when the work is done, for `swarm attach` and `swarm top`, until
    /// `swarm down`.
    #[arg(long)]
    pub keep: bool,
    /// Seconds to wait for the three teammates to come up before reporting the ones that did
    /// not.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 5,
        conflicts_with = "no_wait"
    )]
    pub wait: u64,
    /// Do not wait for the teammates to come up.
    #[arg(long)]
    pub no_wait: bool,
}

impl LaunchArgs {
    /// No file, no teammates, every flag at its default: what `swarm restart` fills in.
    pub(crate) fn empty() -> LaunchArgs {
        LaunchArgs {
            file: None,
            teammate: vec![],
            host: vec![],
            remote_swarm: None,
            agent: None,
            description: None,
            cwd: None,
            backend: crate::backend::BackendChoice::Auto,
            split: false,
            no_lead_pane: false,
            panes_per_window: None,
            wait: 5,
            no_wait: false,
            worktree: false,
            dry_run: false,
            no_sandbox: false,
            model: None,
            permission_mode: None,
            dangerously_skip_permissions: false,
            settings: None,
            agent_type: None,
            plan_mode_required: false,
            prompt_via: None,
            limits: Default::default(),
            shutdown_timeout: 30,
            lead: None,
            goal: None,
            approvals: None,
            exit_when_done: false,
            extra: vec![],
        }
    }
}

/// `--panes-per-window N`: a number of panes, at least one.
fn panes_per_window(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "--panes-per-window {text:?}: give the most panes one tmux window may hold, 1 to 65535"
        )),
    }
}
