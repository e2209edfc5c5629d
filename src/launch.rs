//! Turning a plan (a swarm file or flags) into a running team.
//!
//! Two steps. [`prepare`] validates everything and builds each teammate's exact argv and
//! environment without writing anything: bad names, duplicates, a missing agent binary, a
//! missing tmux or it2 all fail here with exit 2 and nothing half-registered; `--dry-run` prints
//! its result. [`Prepared::execute`] then creates the team, seeds the tasks and spawns each
//! teammate in the order of PROTOCOL.md section 10: reserve the roster entry, open the pane,
//! record pane id, backend and `isActive`, write the prompt as the first inbox message from
//! `team-lead`, start the command. A spawn that fails is rolled back (pane, worktree, roster
//! entry, inbox). [`launch`] does both; [`Launched::supervise`] keeps in-process teammates.
//!
//! Command lines: a `claude` teammate gets section 10's argv and env exactly; every other kind
//! runs under swarm's teammate runtime,
//! `<swarm exe> teammate --agent-id N@T --agent-name N --team-name T --agent-color C
//! --parent-session-id S [--plan-mode-required] [--cwd DIR] (--agent shell | -- CMD ARGS...)`.
//! Inherited flags (`--model`, `--permission-mode`, ...) reach every teammate unless the
//! teammate sets its own.

pub(crate) mod supervisor;
pub(crate) mod swarmfile;
pub(crate) mod worktree;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::backend::in_process::{self, InProcessBackend};
use crate::backend::iterm2::Iterm2Backend;
use crate::backend::tmux::{TmuxBackend, TmuxEnv};
use crate::backend::{
    absolute, detect, BackendChoice, BackendKind, DetectEnv, Detected, Exec, Launch, PaneBackend,
    PaneId, PaneSpec, SystemExec,
};
use crate::error::{Error, Result};
use crate::store::colour::{Colour, LEAD_COLOR};
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TaskId, TeamName, LEAD};
use crate::store::paths::Store;
use crate::store::roster::{Member, Roster, TeamConfig};
use crate::store::tasks::{NewTask, TaskList};
use supervisor::{ChildExit, Event, SuperviseOptions};
use worktree::Worktree;

/// The permission mode a `claude` teammate gets when nobody chose one. PROTOCOL.md section 10:
/// claude's own default (`auto`) refuses tools when `ANTHROPIC_BASE_URL` points at another
/// server, so swarm always passes a mode; `default` asks before risky tools (the request goes to
/// the lead) and grants nothing the user did not ask for.
pub const DEFAULT_PERMISSION_MODE: &str = "default";

/// Environment forwarded to every teammate when set in the launcher's (section 10).
pub const FORWARDED_ENV: &[&str] = &[
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "CLAUDE_CONFIG_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "DISABLE_TELEMETRY",
];

/// Swarm-only roster field: the agent kind a member was launched with.
pub const AGENT_FIELD: &str = "swarmAgent";

/// What runs in a teammate's pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentKind {
    /// A native Claude Code teammate.
    Claude,
    /// swarm's built-in shell agent (under the teammate runtime).
    Shell,
    /// Any other CLI agent: program and arguments, run under the teammate runtime.
    Command(Vec<String>),
}

impl AgentKind {
    /// `claude`, `shell`, or a command line split into words (no shell, no quoting).
    pub fn parse(s: &str) -> Result<AgentKind> {
        AgentKind::from_words(s.split_whitespace().map(str::to_string).collect())
    }

    pub fn from_words(words: Vec<String>) -> Result<AgentKind> {
        match words.as_slice() {
            [] => Err(Error::usage(
                "the agent is empty; use claude, shell or a command such as \"codex --full-auto\"",
            )),
            [one] if one == "claude" => Ok(AgentKind::Claude),
            [one] if one == "shell" => Ok(AgentKind::Shell),
            _ => {
                if words.iter().any(|w| w.contains('\0')) {
                    return Err(Error::usage("the agent command contains a NUL byte"));
                }
                Ok(AgentKind::Command(words))
            }
        }
    }

    pub fn label(&self) -> String {
        match self {
            AgentKind::Claude => "claude".into(),
            AgentKind::Shell => "shell".into(),
            AgentKind::Command(words) => words.join(" "),
        }
    }
}

/// One teammate to launch; `None` fields inherit from the launch.
#[derive(Debug, Clone)]
pub struct TeammatePlan {
    pub name: AgentName,
    pub prompt: String,
    pub agent: Option<AgentKind>,
    pub agent_type: Option<String>,
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    pub plan_mode_required: Option<bool>,
    pub worktree: Option<bool>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
}

impl TeammatePlan {
    pub fn new(name: AgentName, prompt: impl Into<String>) -> TeammatePlan {
        TeammatePlan {
            name,
            prompt: prompt.into(),
            agent: None,
            agent_type: None,
            model: None,
            permission_mode: None,
            plan_mode_required: None,
            worktree: None,
            env: vec![],
            cwd: None,
        }
    }
}

/// A task's dependency in a plan: an earlier task of the same plan (0-based index) or a task
/// already in the team's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskRef {
    Index(usize),
    Id(TaskId),
}

#[derive(Debug, Clone)]
pub struct TaskPlan {
    pub subject: String,
    pub description: String,
    pub blocked_by: Vec<TaskRef>,
}

/// A team to launch.
#[derive(Debug, Clone)]
pub struct LaunchPlan {
    pub team: TeamName,
    pub description: String,
    /// Default agent kind for teammates (the options' `agent` wins over it).
    pub agent: Option<AgentKind>,
    /// Base directory (default: the current directory); teammates' `cwd` is relative to it.
    pub cwd: Option<PathBuf>,
    /// Default for teammates' `worktree`.
    pub worktree: bool,
    pub teammates: Vec<TeammatePlan>,
    pub tasks: Vec<TaskPlan>,
}

/// Flags given to `swarm launch` that every teammate inherits unless it sets its own.
#[derive(Debug, Clone, Default)]
pub struct Inherited {
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    pub dangerously_skip_permissions: bool,
    pub settings: Option<String>,
    pub agent_type: Option<String>,
    pub plan_mode_required: bool,
    /// Everything after `--`.
    pub extra: Vec<String>,
}

/// How to launch, beyond the plan.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    pub backend: BackendChoice,
    /// tmux: split the current window instead of opening a new one.
    pub split: bool,
    /// tmux: run the lead console in the first pane of a new window or session.
    pub lead_pane: bool,
    /// Overrides the plan's default agent kind.
    pub agent: Option<AgentKind>,
    pub inherited: Inherited,
    /// `<swarm exe>`, for the teammate runtime and the lead console.
    pub swarm_exe: PathBuf,
    /// The launcher's environment, for forwarding (section 10).
    pub environ: Vec<(String, String)>,
    pub detect: DetectEnv,
    pub tmux_env: TmuxEnv,
    pub exec: Arc<dyn Exec>,
}

impl LaunchOptions {
    /// Options from this process: its exe, environment, tmux and iTerm2 surroundings.
    pub fn from_process() -> Result<LaunchOptions> {
        let exec: Arc<dyn Exec> = Arc::new(SystemExec);
        let swarm_exe = std::env::current_exe()
            .map_err(|e| Error::Backend(format!("cannot find the swarm executable: {e}")))?;
        Ok(LaunchOptions {
            backend: BackendChoice::Auto,
            split: false,
            lead_pane: true,
            agent: None,
            inherited: Inherited::default(),
            swarm_exe,
            environ: std::env::vars().collect(),
            detect: DetectEnv::from_process(exec.as_ref()),
            tmux_env: TmuxEnv::from_process(),
            exec,
        })
    }

    fn env_var(&self, key: &str) -> Option<&str> {
        self.environ
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }
}

/// One teammate, validated and with its command line built.
#[derive(Debug, Clone)]
pub struct PreparedTeammate {
    pub name: AgentName,
    pub prompt: String,
    pub agent: AgentKind,
    pub color: String,
    pub launch: Launch,
    pub worktree: Option<Worktree>,
    pub member: Member,
}

/// A launch that passed validation; nothing is written yet.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub team: TeamName,
    pub description: String,
    pub new_team: bool,
    pub lead_session_id: String,
    pub base_cwd: PathBuf,
    pub backend: Detected,
    pub split: bool,
    /// The lead console's command, when it gets a pane.
    pub lead: Option<Launch>,
    pub teammates: Vec<PreparedTeammate>,
    pub tasks: Vec<TaskPlan>,
    root: PathBuf,
    opts: LaunchOptions,
}

fn env_map(env: &[(String, String)]) -> Value {
    let mut map = Map::new();
    for (k, v) in env {
        map.insert(k.clone(), Value::from(v.clone()));
    }
    Value::Object(map)
}

fn launch_json(l: &Launch) -> Value {
    json!({"argv": l.argv, "env": env_map(&l.env), "cwd": l.cwd})
}

/// Sets `key` (replacing an earlier value in place).
fn set_env(env: &mut Vec<(String, String)>, key: &str, value: &str) {
    match env.iter_mut().find(|(k, _)| k == key) {
        Some(slot) => slot.1 = value.to_string(),
        None => env.push((key.to_string(), value.to_string())),
    }
}

fn check_env_key(who: &AgentName, key: &str, value: &str) -> Result<()> {
    let mut chars = key.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(Error::usage(format!(
            "teammate {who}: environment variable name {key:?} is invalid; use letters, digits and '_', not starting with a digit"
        )));
    }
    if value.contains('\0') {
        return Err(Error::usage(format!(
            "teammate {who}: the value of {key} contains a NUL byte"
        )));
    }
    Ok(())
}

fn check_word(what: &str, value: &str) -> Result<()> {
    if value.is_empty() || value.chars().any(char::is_control) {
        return Err(Error::usage(format!(
            "{what} {value:?} is empty or contains control characters"
        )));
    }
    Ok(())
}

fn check_permission_mode(value: &str) -> Result<()> {
    if value.is_empty() || !value.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(Error::usage(format!(
            "permission mode {value:?} is invalid; use one of claude's modes such as default, acceptEdits, plan or bypassPermissions"
        )));
    }
    Ok(())
}

fn home_dir(opts: &LaunchOptions) -> Option<PathBuf> {
    opts.env_var("HOME").map(PathBuf::from)
}

/// The `claude` binary: `$CLAUDE_CODE_TEAMMATE_COMMAND`, else `claude` on PATH, else the
/// installer's usual places. The error says everywhere it looked.
pub fn resolve_claude(opts: &LaunchOptions) -> Result<PathBuf> {
    if let Some(cmd) = opts.env_var("CLAUDE_CODE_TEAMMATE_COMMAND") {
        return resolve_program(cmd, "CLAUDE_CODE_TEAMMATE_COMMAND", opts);
    }
    let path = opts.env_var("PATH").unwrap_or_default().to_string();
    if let Ok(found) = which::which_in(
        "claude",
        Some(&path),
        std::env::current_dir().unwrap_or_default(),
    ) {
        return Ok(found);
    }
    let mut looked = vec![format!("PATH ({path})")];
    if let Some(home) = home_dir(opts) {
        for rel in [".claude/local/claude", ".local/bin/claude"] {
            let candidate = home.join(rel);
            if is_executable(&candidate) {
                return Ok(candidate);
            }
            looked.push(candidate.display().to_string());
        }
    }
    Err(Error::usage(format!(
        "claude was not found: looked in {}; install Claude Code or set CLAUDE_CODE_TEAMMATE_COMMAND to its path",
        looked.join(", ")
    )))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A program named on the command line or in a swarm file, made absolute (panes may start with
/// another PATH).
fn resolve_program(program: &str, what: &str, opts: &LaunchOptions) -> Result<PathBuf> {
    if program.contains('/') {
        let path = absolute(Path::new(program));
        if is_executable(&path) {
            return Ok(path);
        }
        return Err(Error::usage(format!(
            "{what}: {} is not an executable file",
            path.display()
        )));
    }
    let path = opts.env_var("PATH").unwrap_or_default().to_string();
    which::which_in(
        program,
        Some(&path),
        std::env::current_dir().unwrap_or_default(),
    )
    .map_err(|_| {
        Error::usage(format!(
            "{what}: {program} was not found on PATH ({path}); install it or give its full path"
        ))
    })
}

/// Validates a plan and builds every command line. Writes nothing.
pub fn prepare(store: &Store, plan: LaunchPlan, opts: &LaunchOptions) -> Result<Prepared> {
    let root = absolute(store.root());
    let roster = Roster::new(store, &plan.team);
    let existing: Option<TeamConfig> = if roster.exists() {
        Some(roster.load()?)
    } else {
        None
    };
    if plan.teammates.is_empty() {
        return Err(Error::usage(
            "no teammates to launch: give a swarm file with teammates[] or --teammate NAME=PROMPT",
        ));
    }
    let mut seen: HashSet<String> = HashSet::new();
    for t in &plan.teammates {
        if !seen.insert(t.name.as_str().to_ascii_lowercase()) {
            return Err(Error::usage(format!(
                "duplicate teammate name {:?} (names are unique ignoring case); rename one",
                t.name.as_str()
            )));
        }
        if let Some(config) = &existing {
            if config.members.iter().any(|m| t.name.same_as(&m.name)) {
                return Err(Error::usage(format!(
                    "team {} already has a member named {:?}; rename the teammate or `swarm shutdown {}` and `swarm team remove {}` first",
                    plan.team, t.name.as_str(), t.name, t.name
                )));
            }
        }
    }
    let inh = &opts.inherited;
    if let Some(m) = &inh.permission_mode {
        check_permission_mode(m)?;
    }
    if let Some(m) = &inh.model {
        check_word("--model", m)?;
    }
    if let Some(t) = &inh.agent_type {
        check_word("--agent-type", t)?;
    }
    let backend = detect(opts.backend, &opts.detect)?;
    if opts.split && backend.kind != BackendKind::Tmux {
        return Err(Error::usage(format!(
            "--split only applies to tmux, and the backend is {}",
            backend.kind
        )));
    }
    let base_cwd = absolute(&match &plan.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(Error::io("read", "the current directory"))?,
    });
    let lead_session_id = existing
        .as_ref()
        .map(|c| c.lead_session_id.clone())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let settings = inh.settings.as_ref().map(|s| {
        let p = base_cwd.join(s);
        if !s.trim_start().starts_with('{') && p.is_file() {
            p.display().to_string()
        } else {
            s.clone()
        }
    });
    let default_agent = opts
        .agent
        .clone()
        .or_else(|| plan.agent.clone())
        .unwrap_or(AgentKind::Claude);
    let mut claude_bin: Option<PathBuf> = None;
    let already = existing.as_ref().map_or(0, |c| c.teammates().count());
    let default_root = home_dir(opts).map(|h| absolute(&h.join(".claude")));

    let mut teammates = Vec::new();
    for (i, t) in plan.teammates.iter().enumerate() {
        let name = &t.name;
        let agent = t.agent.clone().unwrap_or_else(|| default_agent.clone());
        let color = Colour::nth(already + i).name.to_string();
        let mut cwd = match &t.cwd {
            Some(dir) => absolute(&base_cwd.join(dir)),
            None => base_cwd.clone(),
        };
        if !cwd.is_dir() {
            return Err(Error::usage(format!(
                "teammate {name}: working directory {} does not exist",
                cwd.display()
            )));
        }
        let worktree = if t.worktree.unwrap_or(plan.worktree) {
            let wt = Worktree::plan(&cwd, &plan.team, name)?;
            cwd = wt.cwd.clone();
            Some(wt)
        } else {
            None
        };
        for (k, v) in &t.env {
            check_env_key(name, k, v)?;
        }
        if let Some(m) = &t.permission_mode {
            check_permission_mode(m)?;
        }
        if let Some(m) = &t.model {
            check_word(&format!("teammate {name}: model"), m)?;
        }
        let model = t.model.clone().or_else(|| inh.model.clone());
        let agent_type = t.agent_type.clone().or_else(|| inh.agent_type.clone());
        let plan_mode = t.plan_mode_required.unwrap_or(inh.plan_mode_required);
        let agent_id = name.agent_id(&plan.team);

        // Flags a CLI agent inherits, in section 10's order.
        let mut flags: Vec<String> = Vec::new();
        let mut explicit_mode: Option<String> = None;
        if let Some(at) = &agent_type {
            flags.extend(["--agent-type".into(), at.clone()]);
        }
        match (
            &t.permission_mode,
            inh.dangerously_skip_permissions,
            &inh.permission_mode,
        ) {
            (Some(m), _, _) => {
                flags.extend(["--permission-mode".into(), m.clone()]);
                explicit_mode = Some(m.clone());
            }
            (None, true, _) => {
                flags.push("--dangerously-skip-permissions".into());
                explicit_mode = Some("bypassPermissions".into());
            }
            (None, false, Some(m)) => {
                flags.extend(["--permission-mode".into(), m.clone()]);
                explicit_mode = Some(m.clone());
            }
            (None, false, None) => {}
        }
        let mut tail: Vec<String> = Vec::new();
        if let Some(m) = &model {
            tail.extend(["--model".into(), m.clone()]);
        }
        if let Some(s) = &settings {
            tail.extend(["--settings".into(), s.clone()]);
        }
        tail.extend(inh.extra.iter().cloned());

        let mut env: Vec<(String, String)> = Vec::new();
        let identity = |argv: &mut Vec<String>| {
            argv.extend([
                "--agent-id".into(),
                agent_id.clone(),
                "--agent-name".into(),
                name.to_string(),
                "--team-name".into(),
                plan.team.to_string(),
                "--agent-color".into(),
                color.clone(),
                "--parent-session-id".into(),
                lead_session_id.clone(),
            ]);
            if plan_mode {
                argv.push("--plan-mode-required".into());
            }
        };
        let argv = match &agent {
            AgentKind::Claude => {
                let bin = match &claude_bin {
                    Some(b) => b.clone(),
                    None => {
                        let b = resolve_claude(opts)?;
                        claude_bin = Some(b.clone());
                        b
                    }
                };
                set_env(&mut env, "CLAUDECODE", "1");
                set_env(&mut env, "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS", "1");
                let mut argv = vec![bin.display().to_string()];
                identity(&mut argv);
                if explicit_mode.is_none() {
                    flags.extend([
                        "--permission-mode".into(),
                        DEFAULT_PERMISSION_MODE.to_string(),
                    ]);
                    explicit_mode = Some(DEFAULT_PERMISSION_MODE.into());
                }
                argv.extend(flags.iter().cloned());
                argv.extend(tail.iter().cloned());
                argv
            }
            AgentKind::Shell | AgentKind::Command(_) => {
                for (k, v) in [
                    ("SWARM_ROOT", root.display().to_string()),
                    ("SWARM_TEAM", plan.team.to_string()),
                    ("SWARM_AGENT_NAME", name.to_string()),
                    ("SWARM_AGENT_ID", agent_id.clone()),
                    ("SWARM_BACKEND", backend.kind.as_str().to_string()),
                ] {
                    set_env(&mut env, k, &v);
                }
                let mut argv = vec![opts.swarm_exe.display().to_string(), "teammate".to_string()];
                identity(&mut argv);
                argv.extend(["--cwd".into(), cwd.display().to_string()]);
                match &agent {
                    AgentKind::Shell => argv.extend(["--agent".into(), "shell".into()]),
                    AgentKind::Command(words) => {
                        let program = resolve_program(
                            &words[0],
                            &format!("teammate {name}: agent command"),
                            opts,
                        )?;
                        argv.push("--".into());
                        argv.push(program.display().to_string());
                        argv.extend(words[1..].iter().cloned());
                        argv.extend(flags.iter().cloned());
                        argv.extend(tail.iter().cloned());
                    }
                    AgentKind::Claude => unreachable!(),
                }
                argv
            }
        };
        for key in FORWARDED_ENV {
            if let Some(v) = opts.env_var(key) {
                set_env(&mut env, key, v);
            }
        }
        if agent == AgentKind::Claude && default_root.as_deref() != Some(root.as_path()) {
            // A claude teammate finds the team under its config dir; point it at the store.
            set_env(&mut env, "CLAUDE_CONFIG_DIR", &root.display().to_string());
        }
        for (k, v) in &t.env {
            set_env(&mut env, k, v);
        }
        let log = (backend.kind == BackendKind::InProcess)
            .then(|| absolute(&store.log_path(&plan.team, name)));
        let launch = Launch {
            argv,
            env,
            cwd: cwd.clone(),
            log,
        };
        let mut member = Member::teammate(&plan.team, name, &color, &cwd.display().to_string());
        member.agent_type = agent_type.unwrap_or_else(|| "general-purpose".into());
        member.model = model;
        member.prompt = Some(t.prompt.clone());
        member.plan_mode_required = Some(plan_mode);
        member.backend_type = Some(backend.kind.as_str().into());
        member.is_active = Some(false);
        member.mode = Some(explicit_mode.unwrap_or_else(|| DEFAULT_PERMISSION_MODE.into()));
        member
            .extra
            .insert(AGENT_FIELD.into(), Value::from(agent.label()));
        if let Some(wt) = &worktree {
            member.extra.insert(worktree::FIELD.into(), wt.to_json());
        }
        teammates.push(PreparedTeammate {
            name: name.clone(),
            prompt: t.prompt.clone(),
            agent,
            color,
            launch,
            worktree,
            member,
        });
    }

    // Task dependencies: earlier tasks of this plan, or tasks already in the list.
    let list = TaskList::new(store, &plan.team);
    for (i, task) in plan.tasks.iter().enumerate() {
        if task.subject.trim().is_empty() {
            return Err(Error::usage(format!("task {i} has no subject")));
        }
        for dep in &task.blocked_by {
            match dep {
                TaskRef::Index(j) if *j < i => {}
                TaskRef::Index(j) => {
                    return Err(Error::usage(format!(
                        "task {i} ({:?}) is blocked by task {j}, which is not an earlier task of the file; list blockers first (indexes are 0-based)",
                        task.subject
                    )))
                }
                TaskRef::Id(id) => {
                    if existing.is_none() || list.get(id).is_err() {
                        return Err(Error::usage(format!(
                            "task {i} ({:?}) is blocked by #{id}, which is not in team {}'s task list",
                            task.subject, plan.team
                        )));
                    }
                }
            }
        }
    }

    let lead =
        (backend.kind == BackendKind::Tmux && opts.lead_pane && !opts.split && existing.is_none())
            .then(|| Launch {
                argv: vec![
                    opts.swarm_exe.display().to_string(),
                    "lead".into(),
                    "--team".into(),
                    plan.team.to_string(),
                ],
                env: vec![
                    ("SWARM_ROOT".into(), root.display().to_string()),
                    ("SWARM_TEAM".into(), plan.team.to_string()),
                    ("SWARM_AGENT_NAME".into(), LEAD.into()),
                    ("SWARM_AGENT_ID".into(), format!("{LEAD}@{}", plan.team)),
                    ("SWARM_BACKEND".into(), "tmux".into()),
                ],
                cwd: base_cwd.clone(),
                log: None,
            });

    Ok(Prepared {
        team: plan.team,
        description: plan.description,
        new_team: existing.is_none(),
        lead_session_id,
        base_cwd,
        backend,
        split: opts.split,
        lead,
        teammates,
        tasks: plan.tasks,
        root,
        opts: opts.clone(),
    })
}

/// The backend of one launch, kept by kind so the in-process children can be supervised.
enum AnyBackend {
    Tmux(TmuxBackend),
    Iterm2(Iterm2Backend),
    InProcess(InProcessBackend),
}

impl AnyBackend {
    fn as_dyn(&mut self) -> &mut dyn PaneBackend {
        match self {
            AnyBackend::Tmux(b) => b,
            AnyBackend::Iterm2(b) => b,
            AnyBackend::InProcess(b) => b,
        }
    }
}

/// One spawned teammate.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LaunchedTeammate {
    pub name: String,
    pub color: String,
    pub agent: String,
    #[serde(rename = "paneId")]
    pub pane_id: String,
    pub cwd: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<PathBuf>,
}

/// A running team. For in-process teammates, call [`Launched::supervise`].
#[derive(Debug)]
pub struct Launched {
    pub team: TeamName,
    pub backend: BackendKind,
    pub lead_pane: Option<String>,
    pub teammates: Vec<LaunchedTeammate>,
    pub tasks: Vec<TaskId>,
    pub attach_hint: Option<String>,
    in_process: Option<InProcessBackend>,
}

impl Launched {
    pub fn to_json(&self) -> Value {
        json!({
            "team": self.team.as_str(),
            "backend": self.backend.as_str(),
            "leadPane": self.lead_pane,
            "teammates": self.teammates,
            "tasks": self.tasks,
            "attach": self.attach_hint,
        })
    }

    /// For in-process teammates: stays until all have exited, shutting them down gracefully on
    /// SIGINT/SIGTERM. Returns at once for pane backends.
    pub fn supervise(
        &mut self,
        store: &Store,
        opts: &SuperviseOptions,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<Vec<ChildExit>> {
        match &mut self.in_process {
            Some(backend) => {
                supervisor::supervise(store, &self.team, backend.take_children(), opts, on_event)
            }
            None => Ok(vec![]),
        }
    }
}

/// A progress line for each step of the launch.
pub type Progress<'a> = &'a mut dyn FnMut(&str);

impl Prepared {
    /// The dry-run document: each teammate's exact argv and env, and the tasks.
    pub fn to_json(&self) -> Value {
        let teammates: Vec<Value> = self
            .teammates
            .iter()
            .map(|t| {
                let mut v = launch_json(&t.launch);
                v["name"] = Value::from(t.name.as_str());
                v["color"] = Value::from(t.color.clone());
                v["agent"] = Value::from(t.agent.label());
                v["worktree"] = t.worktree.as_ref().map_or(Value::Null, Worktree::to_json);
                if let Some(log) = &t.launch.log {
                    v["log"] = Value::from(log.display().to_string());
                }
                v
            })
            .collect();
        let tasks: Vec<Value> = self
            .tasks
            .iter()
            .map(|t| {
                let deps: Vec<Value> = t
                    .blocked_by
                    .iter()
                    .map(|d| match d {
                        TaskRef::Index(i) => Value::from(*i),
                        TaskRef::Id(id) => Value::from(id.to_string()),
                    })
                    .collect();
                json!({"subject": t.subject, "description": t.description, "blockedBy": deps})
            })
            .collect();
        json!({
            "team": self.team.as_str(),
            "newTeam": self.new_team,
            "backend": self.backend.kind.as_str(),
            "why": self.backend.why,
            "leadSessionId": self.lead_session_id,
            "lead": self.lead.as_ref().map(launch_json),
            "teammates": teammates,
            "tasks": tasks,
        })
    }

    fn make_backend(&self, store: &Store) -> Result<AnyBackend> {
        let opts = &self.opts;
        Ok(match self.backend.kind {
            BackendKind::Tmux => AnyBackend::Tmux(TmuxBackend::for_launch(
                opts.exec.clone(),
                self.team.as_str(),
                self.split,
                &opts.tmux_env,
            )?),
            BackendKind::Iterm2 => AnyBackend::Iterm2(Iterm2Backend::new(
                opts.exec.clone(),
                opts.detect.iterm_session_id.as_deref().unwrap_or_default(),
                opts.swarm_exe.clone(),
                absolute(&store.spawn_dir(&self.team)),
                self.root.clone(),
                self.team.to_string(),
            )),
            BackendKind::InProcess => AnyBackend::InProcess(InProcessBackend::new()),
        })
    }

    /// Creates the team, seeds the tasks and spawns every teammate.
    pub fn execute(self, store: &Store, progress: Progress) -> Result<Launched> {
        let roster = Roster::new(store, &self.team);
        if self.new_team {
            roster.create(
                &self.description,
                &self.base_cwd.display().to_string(),
                &self.lead_session_id,
            )?;
            progress(&format!("created team {}", self.team));
        }
        let tasks = match self.seed_tasks(store) {
            Ok(t) => t,
            Err(e) => {
                self.undo_team(store);
                return Err(e);
            }
        };
        if !tasks.is_empty() {
            progress(&format!(
                "seeded {} task{}: {}",
                tasks.len(),
                if tasks.len() == 1 { "" } else { "s" },
                tasks
                    .iter()
                    .map(|t| format!("#{t}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let mut any = match self.make_backend(store) {
            Ok(b) => b,
            Err(e) => {
                self.undo_team(store);
                return Err(e);
            }
        };
        let backend = any.as_dyn();
        let mut lead_pane = None;
        if let Some(lead) = &self.lead {
            let result = (|| {
                let pane = backend.open_pane(&PaneSpec {
                    name: LEAD.into(),
                    color: LEAD_COLOR.into(),
                })?;
                let extra = backend.member_extra();
                roster.update_member(&AgentName::lead(), |m| {
                    m.tmux_pane_id = pane.to_string();
                    m.color = Some(LEAD_COLOR.into());
                    m.extra.extend(extra);
                })?;
                backend.start(&pane, lead)?;
                Ok::<_, Error>(pane)
            })();
            match result {
                Ok(pane) => {
                    progress(&format!("lead console in pane {pane}"));
                    lead_pane = Some(pane.to_string());
                }
                Err(e) => {
                    self.undo_team(store);
                    return Err(e);
                }
            }
        }
        let mut launched = Vec::new();
        for t in &self.teammates {
            match spawn_one(store, &self.team, backend, t) {
                Ok(done) => {
                    progress(&format!(
                        "{} ({}): {} {}{}",
                        t.name,
                        t.color,
                        t.agent.label(),
                        match self.backend.kind {
                            BackendKind::InProcess => format!(
                                "as pid {} (log {})",
                                done.pid.unwrap_or_default(),
                                t.launch.log.as_deref().unwrap_or(Path::new("")).display()
                            ),
                            kind => format!("in {kind} pane {}", done.pane_id),
                        },
                        t.worktree
                            .as_ref()
                            .map(|w| format!(", worktree {} on {}", w.path.display(), w.branch))
                            .unwrap_or_default()
                    ));
                    launched.push(done);
                }
                Err(e) => {
                    if launched.is_empty() {
                        if let Some(pane) = &lead_pane {
                            let _ = backend.kill(&PaneId(pane.clone()));
                        }
                        self.undo_team(store);
                        return Err(e);
                    }
                    let names: Vec<&str> = launched.iter().map(|l| l.name.as_str()).collect();
                    return Err(Error::Backend(format!(
                        "failed to launch {}: {e}; it was rolled back, and {} keep running (`swarm shutdown --all` stops them)",
                        t.name,
                        names.join(", ")
                    )));
                }
            }
        }
        if let Err(e) = backend.finish_layout() {
            eprintln!("swarm: warning: could not tile the panes: {e}");
        }
        let attach_hint = backend.attach_hint();
        let in_process = match any {
            AnyBackend::InProcess(b) => Some(b),
            _ => None,
        };
        Ok(Launched {
            team: self.team.clone(),
            backend: self.backend.kind,
            lead_pane,
            teammates: launched,
            tasks,
            attach_hint,
            in_process,
        })
    }

    fn seed_tasks(&self, store: &Store) -> Result<Vec<TaskId>> {
        let list = TaskList::new(store, &self.team);
        let mut ids: Vec<TaskId> = Vec::new();
        for task in &self.tasks {
            let blocked_by = task
                .blocked_by
                .iter()
                .map(|d| match d {
                    TaskRef::Index(i) => ids[*i].clone(),
                    TaskRef::Id(id) => id.clone(),
                })
                .collect();
            let created = list.create(NewTask {
                subject: task.subject.clone(),
                description: task.description.clone(),
                blocked_by,
                ..Default::default()
            })?;
            ids.push(created.id);
        }
        Ok(ids)
    }

    /// Deletes a team this launch created, when nothing of it got running.
    fn undo_team(&self, store: &Store) {
        if self.new_team {
            let _ = Roster::new(store, &self.team).delete(true);
        }
    }
}

/// Spawns one teammate in section 10's order, rolling back on failure.
fn spawn_one(
    store: &Store,
    team: &TeamName,
    backend: &mut dyn PaneBackend,
    t: &PreparedTeammate,
) -> Result<LaunchedTeammate> {
    let roster = Roster::new(store, team);
    roster.add_member(t.member.clone())?;
    let mut worktree_made = false;
    let mut pane: Option<PaneId> = None;
    let result = (|| {
        if let Some(wt) = &t.worktree {
            wt.create()?;
            worktree_made = true;
        }
        let opened = backend.open_pane(&PaneSpec {
            name: t.name.to_string(),
            color: t.color.clone(),
        })?;
        pane = Some(opened.clone());
        let extra = backend.member_extra();
        let kind = backend.kind();
        roster.update_member(&t.name, |m| {
            m.tmux_pane_id = opened.to_string();
            m.backend_type = Some(kind.as_str().into());
            m.is_active = Some(true);
            m.extra.extend(extra);
        })?;
        if !t.prompt.trim().is_empty() {
            let message =
                InboxMessage::new(LEAD, t.prompt.clone()).with_color(Some(LEAD_COLOR.into()));
            Mailbox::new(store, team).append(&t.name, message)?;
        }
        let started = backend.start(&opened, &t.launch)?;
        if let Some(pid) = started.pid {
            roster.update_member(&t.name, |m| in_process::record_pid(m, pid))?;
        }
        Ok::<_, Error>(LaunchedTeammate {
            name: t.name.to_string(),
            color: t.color.clone(),
            agent: t.agent.label(),
            pane_id: opened.to_string(),
            cwd: t.launch.cwd.clone(),
            pid: started.pid,
            worktree: t.worktree.as_ref().map(|w| w.path.clone()),
        })
    })();
    if result.is_err() {
        if let Some(p) = &pane {
            let _ = backend.kill(p);
        }
        if worktree_made {
            if let Some(wt) = &t.worktree {
                let _ = wt.remove();
            }
        }
        let _ = roster.remove_member(&t.name);
        let _ = std::fs::remove_file(store.inbox_path(team, &t.name));
    }
    result
}

/// Validates and launches in one go: the library entry point (`swarm demo` and others).
pub fn launch(
    store: &Store,
    plan: LaunchPlan,
    opts: &LaunchOptions,
    progress: Progress,
) -> Result<Launched> {
    prepare(store, plan, opts)?.execute(store, progress)
}

/// Default grace between SIGTERM and SIGKILL for in-process teammates.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(3);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::exec::testing::Recorder;

    fn opts(dir: &Path) -> LaunchOptions {
        let bin = dir.join("claude");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        LaunchOptions {
            backend: BackendChoice::InProcess,
            split: false,
            lead_pane: true,
            agent: None,
            inherited: Inherited::default(),
            swarm_exe: "/opt/swarm".into(),
            environ: vec![
                ("PATH".into(), dir.display().to_string()),
                ("HOME".into(), "/home/u".into()),
                ("ANTHROPIC_BASE_URL".into(), "http://proxy".into()),
            ],
            detect: DetectEnv::default(),
            tmux_env: TmuxEnv::default(),
            exec: Arc::new(Recorder::default()),
        }
    }

    fn plan(names: &[&str]) -> LaunchPlan {
        LaunchPlan {
            team: "t".parse().unwrap(),
            description: String::new(),
            agent: None,
            cwd: Some("/".into()),
            worktree: false,
            teammates: names
                .iter()
                .map(|n| TeammatePlan::new(AgentName::teammate(n).unwrap(), "go"))
                .collect(),
            tasks: vec![],
        }
    }

    #[test]
    fn claude_argv_and_env_follow_section_10() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("root"));
        let mut o = opts(dir.path());
        o.inherited.model = Some("sonnet".into());
        o.inherited.extra = vec!["--verbose".into()];
        let mut p = plan(&["coder", "tester"]);
        p.teammates[1].permission_mode = Some("acceptEdits".into());
        p.teammates[1].plan_mode_required = Some(true);
        let prepared = prepare(&store, p, &o).unwrap();
        let sid = prepared.lead_session_id.clone();
        let claude = dir.path().join("claude").display().to_string();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            prepared.teammates[0].launch.argv,
            s(&[
                &claude,
                "--agent-id",
                "coder@t",
                "--agent-name",
                "coder",
                "--team-name",
                "t",
                "--agent-color",
                "blue",
                "--parent-session-id",
                &sid,
                "--permission-mode",
                "default",
                "--model",
                "sonnet",
                "--verbose"
            ])
        );
        assert_eq!(
            prepared.teammates[1].launch.argv[8..],
            s(&[
                "green",
                "--parent-session-id",
                &sid,
                "--plan-mode-required",
                "--permission-mode",
                "acceptEdits",
                "--model",
                "sonnet",
                "--verbose"
            ])
        );
        let root = absolute(&dir.path().join("root")).display().to_string();
        assert_eq!(
            prepared.teammates[0].launch.env,
            vec![
                ("CLAUDECODE".to_string(), "1".to_string()),
                ("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS".into(), "1".into()),
                ("ANTHROPIC_BASE_URL".into(), "http://proxy".into()),
                ("CLAUDE_CONFIG_DIR".into(), root),
            ]
        );
    }

    #[test]
    fn runtime_teammates_get_the_fixed_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("root"));
        let mut o = opts(dir.path());
        o.agent = Some(AgentKind::Shell);
        o.inherited.dangerously_skip_permissions = true;
        let mut p = plan(&["sh1", "cli"]);
        p.teammates[1].agent = Some(AgentKind::parse("claude --print").unwrap());
        let prepared = prepare(&store, p, &o).unwrap();
        let a = &prepared.teammates[0].launch;
        assert_eq!(a.argv[..2], ["/opt/swarm", "teammate"]);
        assert_eq!(
            a.argv[a.argv.len() - 4..],
            ["--cwd", "/", "--agent", "shell"]
        );
        let b = &prepared.teammates[1].launch;
        let dash = b.argv.iter().position(|w| w == "--").unwrap();
        assert_eq!(
            b.argv[dash + 1..],
            [
                dir.path().join("claude").display().to_string(),
                "--print".into(),
                "--dangerously-skip-permissions".into()
            ]
        );
        assert!(b
            .env
            .contains(&("SWARM_BACKEND".into(), "in-process".into())));
        assert!(b.env.contains(&("SWARM_AGENT_ID".into(), "cli@t".into())));
    }

    #[test]
    fn bad_input_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("root"));
        let o = opts(dir.path());
        let e = prepare(&store, plan(&["a", "A"]), &o).unwrap_err();
        assert!(e.to_string().contains("duplicate teammate name"), "{e}");
        let mut p = plan(&["a"]);
        p.teammates[0].env = vec![("BAD-KEY".into(), "x".into())];
        assert_eq!(prepare(&store, p, &o).unwrap_err().exit_code(), 2);
        let mut p = plan(&["a"]);
        p.agent = Some(AgentKind::parse("no-such-agent-binary --x").unwrap());
        let e = prepare(&store, p, &o).unwrap_err();
        assert!(e.to_string().contains("not found on PATH"), "{e}");
        let mut no_claude = opts(dir.path());
        no_claude.environ = vec![("PATH".into(), "/nonexistent".into())];
        let e = prepare(&store, plan(&["a"]), &no_claude).unwrap_err();
        assert!(
            e.to_string()
                .contains("claude was not found: looked in PATH (/nonexistent)"),
            "{e}"
        );
        let mut p = plan(&["a"]);
        p.tasks = vec![TaskPlan {
            subject: "x".into(),
            description: String::new(),
            blocked_by: vec![TaskRef::Index(0)],
        }];
        assert!(prepare(&store, p, &o).is_err());
        assert!(!dir.path().join("root").exists());
    }
}
