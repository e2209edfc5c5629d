//! What to launch and how: the plan types a swarm file or `swarm launch`'s flags fill in.
//!
//! A [`LaunchPlan`] is the team (its teammates and starting tasks, each with `None` for "inherit
//! from the launch"); [`LaunchOptions`] is everything beyond the plan: the backend choice, the
//! flags every teammate inherits ([`Inherited`]) and this process's surroundings (its exe,
//! environment, tmux and iTerm2), captured once so [`super::prepare`] can be tested without
//! touching the real environment.

use std::path::PathBuf;
use std::sync::Arc;

use crate::backend::tmux::TmuxEnv;
use crate::backend::{BackendChoice, DetectEnv, Exec, SystemExec};
use crate::error::{Error, Result};
use crate::lead::agent::Approvals;
use crate::remote::Host;
use crate::store::names::{AgentName, TaskId, TeamName};
use crate::teammate::args::{Limits, PromptVia};

/// What runs in a teammate's pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AgentKind {
    /// A native Claude Code teammate.
    Claude,
    /// swarm's built-in shell agent (under the teammate runtime).
    Shell,
    /// Any other CLI agent: program and arguments, run under the teammate runtime.
    Command(Vec<String>),
}

impl AgentKind {
    /// `claude`, `shell`, or a command line split into words (no shell, no quoting).
    pub(crate) fn parse(s: &str) -> Result<AgentKind> {
        AgentKind::from_words(s.split_whitespace().map(str::to_string).collect())
    }

    pub(crate) fn from_words(words: Vec<String>) -> Result<AgentKind> {
        match words.as_slice() {
            [] => Err(Error::usage(
                "the agent is empty; use claude, shell or a command such as \
                 \"codex exec -s workspace-write\"",
            )),
            [one] if one == "claude" => Ok(AgentKind::Claude),
            [one] if one == "shell" => Ok(AgentKind::Shell),
            _ => {
                if words.iter().any(|w| w.contains('\0')) {
                    return Err(Error::usage("the agent command contains a NUL byte"));
                }
                crate::teammate::agent::check_placeholder(&words)?;
                Ok(AgentKind::Command(words))
            }
        }
    }

    pub(crate) fn label(&self) -> String {
        match self {
            AgentKind::Claude => "claude".into(),
            AgentKind::Shell => "shell".into(),
            AgentKind::Command(words) => words.join(" "),
        }
    }
}

/// One teammate to launch; `None` fields inherit from the launch.
#[derive(Debug, Clone)]
pub(crate) struct TeammatePlan {
    pub(crate) name: AgentName,
    pub(crate) prompt: String,
    pub(crate) agent: Option<AgentKind>,
    pub(crate) agent_type: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) permission_mode: Option<String>,
    pub(crate) plan_mode_required: Option<bool>,
    /// How a runtime teammate's turns get their prompt (argument or stdin).
    pub(crate) prompt_via: Option<PromptVia>,
    /// `maxTurns`, `turnTimeout`, `onLimit` (runtime teammates only).
    pub(crate) limits: Limits,
    pub(crate) worktree: Option<bool>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) cwd: Option<PathBuf>,
    /// Another machine to run on (an ssh destination); its `cwd` is a directory there.
    pub(crate) host: Option<Host>,
    /// Run contained (`launch::sandbox`); `None` inherits the launch's choice.
    pub(crate) sandbox: Option<bool>,
    /// Started again: the Claude Code session a claude teammate carries on (`--resume`).
    pub(crate) resume: Option<String>,
}

impl TeammatePlan {
    pub(crate) fn new(name: AgentName, prompt: impl Into<String>) -> TeammatePlan {
        TeammatePlan {
            name,
            prompt: prompt.into(),
            agent: None,
            agent_type: None,
            model: None,
            permission_mode: None,
            plan_mode_required: None,
            prompt_via: None,
            limits: Limits::default(),
            worktree: None,
            env: vec![],
            cwd: None,
            host: None,
            sandbox: None,
            resume: None,
        }
    }
}

/// A task's dependency in a plan: an earlier task of the same plan (0-based index) or a task
/// already in the team's list. Serialized as the swarm file writes it: a number or an id string.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub(crate) enum TaskRef {
    Index(usize),
    Id(TaskId),
}

/// A task to seed; serialized as the dry run shows it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskPlan {
    /// What makes it the same task on the next launch: kept as [`TASK_KEY`] in the task's
    /// metadata, so a task already seeded is not seeded again. The swarm file's `key`, else the
    /// subject.
    pub(crate) key: String,
    pub(crate) subject: String,
    pub(crate) description: String,
    /// What the task reads as while in progress ("Adding tests"), as Claude Code's task files
    /// carry it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) active_form: Option<String>,
    pub(crate) blocked_by: Vec<TaskRef>,
}

/// Metadata key of a task seeded from a plan, holding its [`TaskPlan::key`].
pub(crate) const TASK_KEY: &str = "swarmKey";

impl TaskPlan {
    /// A task whose key is its subject.
    pub(crate) fn new(subject: &str, description: &str, blocked_by: Vec<TaskRef>) -> TaskPlan {
        TaskPlan {
            key: subject.to_string(),
            subject: subject.to_string(),
            description: description.to_string(),
            active_form: None,
            blocked_by,
        }
    }
}

/// What to do with a teammate of the plan that is already on the roster and running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IfRunning {
    /// `swarm launch`: refuse, saying how to restart it.
    Refuse,
    /// `swarm up`: leave it alone.
    Keep,
}

/// Swarm-only roster field: how a teammate was launched beyond what the roster's own fields
/// say, so `swarm up` and `swarm restart` start it again the same way.
pub(crate) const LAUNCH_FIELD: &str = "swarmLaunch";

/// The [`LAUNCH_FIELD`] record.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RecordedLaunch {
    /// The agent kind's words (`["claude"]`, `["shell"]`, or the command).
    pub(crate) agent: Vec<String>,
    /// Where the teammate starts, before any worktree.
    pub(crate) cwd: PathBuf,
    #[serde(default)]
    pub(crate) worktree: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) agent_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) permission_mode: Option<String>,
    #[serde(default)]
    pub(crate) dangerously_skip_permissions: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) settings: Option<String>,
    #[serde(default)]
    pub(crate) prompt_via_stdin: bool,
    #[serde(default, skip_serializing_if = "Limits::is_none")]
    pub(crate) limits: Limits,
    #[serde(default)]
    pub(crate) extra: Vec<String>,
    #[serde(default)]
    pub(crate) env: Vec<(String, String)>,
    /// The host it runs on, when not this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) host: Option<Host>,
    /// Launched with `--no-sandbox` (or `"sandbox": false`): started again uncontained too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) no_sandbox: bool,
}

impl AgentKind {
    /// The words [`AgentKind::from_words`] reads back.
    pub(crate) fn words(&self) -> Vec<String> {
        match self {
            AgentKind::Claude => vec!["claude".into()],
            AgentKind::Shell => vec!["shell".into()],
            AgentKind::Command(words) => words.clone(),
        }
    }
}

/// An agent as the team's lead (`swarm launch --lead`, `"lead"` in a swarm file).
#[derive(Debug, Clone)]
pub(crate) struct LeadPlan {
    pub(crate) agent: Option<AgentKind>,
    pub(crate) goal: String,
    pub(crate) approvals: Approvals,
    pub(crate) exit_when_done: bool,
}

impl Default for LeadPlan {
    fn default() -> LeadPlan {
        LeadPlan {
            agent: None,
            goal: String::new(),
            approvals: Approvals::Human,
            exit_when_done: false,
        }
    }
}

/// A team to launch.
#[derive(Debug, Clone)]
pub(crate) struct LaunchPlan {
    pub(crate) team: TeamName,
    pub(crate) description: String,
    /// Default agent kind for teammates (the options' `agent` wins over it).
    pub(crate) agent: Option<AgentKind>,
    /// Base directory (default: the current directory); teammates' `cwd` is relative to it.
    pub(crate) cwd: Option<PathBuf>,
    /// Default for teammates' `worktree`.
    pub(crate) worktree: bool,
    pub(crate) teammates: Vec<TeammatePlan>,
    pub(crate) tasks: Vec<TaskPlan>,
    /// An agent lead instead of the console alone.
    pub(crate) lead: Option<LeadPlan>,
    /// The swarm to run on teammates' hosts (default: `swarm` on the remote PATH).
    pub(crate) remote_swarm: Option<String>,
}

/// Flags given to `swarm launch` that every teammate inherits unless it sets its own.
#[derive(Debug, Clone, Default)]
pub(crate) struct Inherited {
    pub(crate) model: Option<String>,
    pub(crate) permission_mode: Option<String>,
    pub(crate) dangerously_skip_permissions: bool,
    pub(crate) settings: Option<String>,
    pub(crate) agent_type: Option<String>,
    pub(crate) plan_mode_required: bool,
    pub(crate) prompt_via: Option<PromptVia>,
    /// `--max-turns`, `--turn-timeout`, `--on-limit`: runtime teammates only.
    pub(crate) limits: Limits,
    /// `--no-sandbox`: teammates run uncontained (`launch::sandbox`).
    pub(crate) no_sandbox: bool,
    /// Everything after `--`.
    pub(crate) extra: Vec<String>,
}

/// How to launch, beyond the plan.
#[derive(Debug, Clone)]
pub(crate) struct LaunchOptions {
    pub(crate) backend: BackendChoice,
    /// tmux: split the current window instead of opening a new one.
    pub(crate) split: bool,
    /// tmux: run the lead console in the first pane of a new window or session.
    pub(crate) lead_pane: bool,
    /// tmux: most panes in one window (default 16).
    pub(crate) panes_per_window: Option<usize>,
    /// The launch waits for its teammates to come up (`verify`): their intent stays on record
    /// until it has judged them.
    pub(crate) verify: bool,
    /// Overrides the plan's default agent kind.
    pub(crate) agent: Option<AgentKind>,
    pub(crate) inherited: Inherited,
    /// What to do with a plan's teammate that is already running.
    pub(crate) if_running: IfRunning,
    /// `--dry-run`: a program that is not installed is a warning, not an error.
    pub(crate) dry_run: bool,
    /// The team's `--lead-verify-key`, given to every teammate.
    pub(crate) lead_verify_key: Option<String>,
    /// `--remote-swarm`: the swarm to run on teammates' hosts (wins over the plan's).
    pub(crate) remote_swarm: Option<String>,
    /// `<swarm exe>`, for the teammate runtime and the lead console.
    pub(crate) swarm_exe: PathBuf,
    /// The launcher's environment, for forwarding (section 10).
    pub(crate) environ: Vec<(String, String)>,
    pub(crate) detect: DetectEnv,
    pub(crate) tmux_env: TmuxEnv,
    pub(crate) exec: Arc<dyn Exec>,
}

impl LaunchOptions {
    /// Options from this process: its exe, environment, tmux and iTerm2 surroundings.
    pub(crate) fn from_process() -> Result<LaunchOptions> {
        let exec: Arc<dyn Exec> = Arc::new(SystemExec);
        let swarm_exe = crate::process::swarm_exe()?;
        Ok(LaunchOptions {
            backend: BackendChoice::Auto,
            split: false,
            lead_pane: true,
            panes_per_window: None,
            verify: false,
            agent: None,
            inherited: Inherited::default(),
            if_running: IfRunning::Refuse,
            dry_run: false,
            lead_verify_key: None,
            remote_swarm: None,
            swarm_exe,
            environ: std::env::vars().collect(),
            detect: DetectEnv::from_process(exec.as_ref()),
            tmux_env: TmuxEnv::from_process(),
            exec,
        })
    }

    /// The launcher's value of `key`; an empty value counts as unset.
    pub(crate) fn env_var(&self, key: &str) -> Option<&str> {
        self.environ
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }
}

#[cfg(test)]
impl LaunchOptions {
    /// In-process options for tests: a recording exec and `environ` as the whole environment.
    pub(crate) fn for_test(environ: Vec<(String, String)>) -> LaunchOptions {
        LaunchOptions {
            backend: BackendChoice::InProcess,
            split: false,
            lead_pane: true,
            panes_per_window: None,
            verify: false,
            agent: None,
            inherited: Inherited::default(),
            if_running: IfRunning::Refuse,
            dry_run: false,
            lead_verify_key: None,
            remote_swarm: None,
            swarm_exe: "/opt/swarm".into(),
            environ,
            detect: DetectEnv::default(),
            tmux_env: TmuxEnv::default(),
            exec: Arc::new(crate::process::exec::testing::Recorder::default()),
        }
    }
}
