//! A teammate's exact command line and environment, as PROTOCOL.md section 10 writes them.
//!
//! A `claude` teammate gets `claude` with the identity flags, then the flags it inherits from
//! the launch; every other kind runs under swarm's teammate runtime, `<swarm exe> teammate`
//! with the same identity flags built from [`TeammateArgs`] (the struct `swarm teammate` parses,
//! so the two ends cannot drift) and the agent's own command after `--`. The environment is
//! layered: what the agent kind needs, then [`FORWARDED_ENV`], then the teammate's own; a later
//! value replaces an earlier one in place, so the order stays readable in `--dry-run`.

use std::path::{Path, PathBuf};

use super::Inherited;
use crate::backend::{BackendKind, Launch};
use crate::store::lead_key::VERIFY_KEY_ENV;
use crate::store::names::{TeamName, LEAD};
use crate::teammate::args::TeammateArgs;

/// The permission mode a `claude` teammate gets when nobody chose one. Section 10: claude's own
/// default (`auto`) refuses tools when `ANTHROPIC_BASE_URL` points at another server, so swarm
/// always passes a mode; `default` asks before risky tools (the request goes to the lead) and
/// grants nothing the user did not ask for.
pub(crate) const DEFAULT_PERMISSION_MODE: &str = "default";

/// Environment forwarded to every teammate when set in the launcher's (section 10).
pub(super) const FORWARDED_ENV: &[&str] = &[
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_SECURESTORAGE_CONFIG_DIR",
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

/// Claude Code 2.1.328 offers its task tools (TaskList, TaskGet, TaskUpdate, TaskCreate) on some
/// model families only unless this is set, and without them a teammate cannot see the team's
/// task list (section 10). The launcher's own value, then the teammate's, win over swarm's `1`.
const TODO_TOOLS_ENV: &str = "CLAUDE_CODE_ENABLE_TODO_TOOLS";

/// What every `claude` teammate gets unless the launcher's environment or the teammate's own
/// sets the variable otherwise.
const CLAUDE_DEFAULT_ENV: &[(&str, &str)] = &[(TODO_TOOLS_ENV, "1")];

/// An environment in the order it is built; keys are unique.
pub(crate) type Env = Vec<(String, String)>;

/// Sets `key` (replacing an earlier value in place).
fn set_env(env: &mut Env, key: &str, value: &str) {
    match env.iter_mut().find(|(k, _)| k == key) {
        Some(slot) => slot.1 = value.to_string(),
        None => env.push((key.to_string(), value.to_string())),
    }
}

/// The flags a teammate's agent inherits from the launch, in section 10's order: `--agent-type`
/// and the permission flag, then `--model`, `--settings` and the arguments after `--`.
#[derive(Debug, Clone)]
pub(super) struct AgentFlags {
    first: Vec<String>,
    rest: Vec<String>,
    /// The permission mode the flags set, if any.
    mode: Option<String>,
}

impl AgentFlags {
    /// The teammate's own permission mode wins over `--dangerously-skip-permissions`, which wins
    /// over the inherited `--permission-mode`.
    pub(super) fn new(
        own_mode: Option<&str>,
        inherited: &Inherited,
        agent_type: Option<&str>,
        model: Option<&str>,
        settings: Option<&str>,
    ) -> AgentFlags {
        let mut first = Vec::new();
        if let Some(at) = agent_type {
            first.extend(["--agent-type".into(), at.to_string()]);
        }
        let mode = match (
            own_mode,
            inherited.dangerously_skip_permissions,
            inherited.permission_mode.as_deref(),
        ) {
            (Some(m), _, _) | (None, false, Some(m)) => {
                first.extend(["--permission-mode".into(), m.to_string()]);
                Some(m.to_string())
            }
            (None, true, _) => {
                first.push("--dangerously-skip-permissions".into());
                Some("bypassPermissions".into())
            }
            (None, false, None) => None,
        };
        let mut rest = Vec::new();
        if let Some(m) = model {
            rest.extend(["--model".into(), m.to_string()]);
        }
        if let Some(s) = settings {
            rest.extend(["--settings".into(), s.to_string()]);
        }
        rest.extend(inherited.extra.iter().cloned());
        AgentFlags { first, rest, mode }
    }

    /// The mode the teammate runs in, as the roster records it.
    pub(super) fn mode(&self) -> &str {
        self.mode.as_deref().unwrap_or(DEFAULT_PERMISSION_MODE)
    }

    /// The flags as given to a CLI agent.
    fn words(&self) -> impl Iterator<Item = String> + '_ {
        self.first.iter().chain(&self.rest).cloned()
    }

    /// The flags as given to `claude`, which always gets a permission mode.
    fn claude_words(&self) -> impl Iterator<Item = String> + '_ {
        let default_mode = self.mode.is_none().then(|| {
            [
                "--permission-mode".to_string(),
                DEFAULT_PERMISSION_MODE.into(),
            ]
        });
        self.first
            .iter()
            .cloned()
            .chain(default_mode.into_iter().flatten())
            .chain(self.rest.iter().cloned())
    }
}

/// A `claude` teammate: `claude`, the identity flags, `--resume SESSION` when it carries on a
/// conversation (`launch::again`), the inherited flags. Its environment also names the member
/// and the store, and `SWARM_BIN`, which `scripts/claude-permission-hook` needs to file the
/// teammate's requests with the lead.
pub(super) fn claude(
    bin: &Path,
    identity: &TeammateArgs,
    resume: Option<&str>,
    flags: &AgentFlags,
    swarm_exe: &Path,
    root: &Path,
) -> (Vec<String>, Env) {
    let mut argv = vec![bin.display().to_string()];
    argv.extend(identity.identity_argv());
    if let Some(session) = resume {
        argv.extend(["--resume".to_string(), session.to_string()]);
    }
    argv.extend(flags.claude_words());
    let mut env: Env = vec![
        ("CLAUDECODE".into(), "1".into()),
        ("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS".into(), "1".into()),
        ("SWARM_ROOT".into(), root.display().to_string()),
        ("SWARM_TEAM".into(), identity.team_name.clone()),
        ("SWARM_AGENT_NAME".into(), identity.agent_name.clone()),
        ("SWARM_AGENT_ID".into(), identity.agent_id.clone()),
        ("SWARM_BIN".into(), swarm_exe.display().to_string()),
    ];
    // The permission hook checks the lead's signed decision with it (`store::lead_key`).
    if let Some(key) = &identity.lead_verify_key {
        env.push((VERIFY_KEY_ENV.into(), key.clone()));
    }
    for (key, value) in CLAUDE_DEFAULT_ENV {
        set_env(&mut env, key, value);
    }
    (argv, env)
}

/// The agent command a CLI teammate runs each turn: the program, its words, the inherited flags.
pub(super) fn agent_command(program: &Path, words: &[String], flags: &AgentFlags) -> Vec<String> {
    let mut command = vec![program.display().to_string()];
    command.extend(words.iter().cloned());
    command.extend(flags.words());
    command
}

/// Any other teammate: `<swarm exe> teammate ARGS`, told where the store is and who it is.
pub(super) fn runtime(
    swarm_exe: &Path,
    args: &TeammateArgs,
    root: &Path,
    backend: BackendKind,
) -> (Vec<String>, Env) {
    let mut argv = vec![swarm_exe.display().to_string(), "teammate".to_string()];
    argv.extend(args.to_argv());
    let env = vec![
        ("SWARM_ROOT".into(), root.display().to_string()),
        ("SWARM_TEAM".into(), args.team_name.clone()),
        ("SWARM_AGENT_NAME".into(), args.agent_name.clone()),
        ("SWARM_AGENT_ID".into(), args.agent_id.clone()),
        ("SWARM_BACKEND".into(), backend.as_str().into()),
    ];
    (argv, env)
}

/// Layers the launcher's forwarded variables (and its values of the claude defaults a teammate
/// was given), then `config` (a claude teammate finds the team under its config dir, so it
/// points at the store: `launch::claude_config`), then the teammate's own.
pub(super) fn layer_env(
    mut env: Env,
    launcher: impl Fn(&str) -> Option<String>,
    config: &[(String, String)],
    own: &[(String, String)],
) -> Env {
    let defaults = CLAUDE_DEFAULT_ENV.iter().map(|(k, _)| k);
    for key in FORWARDED_ENV.iter().chain(defaults) {
        let given = FORWARDED_ENV.contains(key) || env.iter().any(|(k, _)| k == key);
        if let Some(v) = launcher(key).filter(|_| given) {
            set_env(&mut env, key, &v);
        }
    }
    for (k, v) in config.iter().chain(own) {
        set_env(&mut env, k, v);
    }
    env
}

/// The lead console in the first tmux pane, or an in-process agent lead's runtime:
/// `<swarm exe> lead --team T`.
pub(super) fn lead(
    swarm_exe: &Path,
    root: &Path,
    team: &TeamName,
    cwd: PathBuf,
    backend: BackendKind,
) -> Launch {
    Launch {
        argv: vec![
            swarm_exe.display().to_string(),
            "lead".into(),
            "--team".into(),
            team.to_string(),
        ],
        env: vec![
            ("SWARM_ROOT".into(), root.display().to_string()),
            ("SWARM_TEAM".into(), team.to_string()),
            ("SWARM_AGENT_NAME".into(), LEAD.into()),
            ("SWARM_AGENT_ID".into(), format!("{LEAD}@{team}")),
            ("SWARM_BACKEND".into(), backend.as_str().into()),
        ],
        cwd,
        log: None,
    }
}
