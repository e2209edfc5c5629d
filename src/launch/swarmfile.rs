//! The swarm file: a team, its teammates and its starting tasks, as one JSON document (or YAML,
//! the same schema, in a file named `.yaml` or `.yml`: what tmuxinator and tmuxp users write).
//!
//! ```json
//! {"team": "refactor", "description": "split the parser", "agent": "claude", "cwd": ".",
//!  "teammates": [{"name": "coder", "prompt": "Split parser.rs", "model": "sonnet",
//!                 "worktree": true, "env": {"RUST_LOG": "debug"}}],
//!  "tasks": [{"subject": "Design"},
//!            {"subject": "Build", "activeForm": "Building", "blockedBy": [0]}]}
//! ```
//! `agent` is `claude`, `shell`, or another CLI agent as a string of words or an array. A
//! relative `cwd` is taken from the file's directory. `blockedBy` lists numbers (0-based indexes
//! of earlier tasks in this file) or strings (ids of tasks already in the team's list, "3" or
//! "#3"). A teammate's `host` (default: the file's `host`) is an ssh destination it runs on,
//! its `cwd` then a directory there (relative to the remote home), with the swarm found on the
//! remote PATH or at the file's `remoteSwarm`. A task's `key` (default: its subject) is kept in
//! its metadata as `swarmKey`, so launching the file again does not seed it twice.
//! `panesPerWindow` (tmux, default 16) is the most panes one window holds before the next
//! window of the team's session opens. `"sandbox": false` (the file's, or a teammate's) runs
//! teammates uncontained, as `--no-sandbox` does (`launch::sandbox`). Unknown fields are refused, so a typo does not silently
//! drop a setting.

use std::collections::BTreeMap;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::launch::{AgentKind, LaunchPlan, LeadPlan, TaskPlan, TaskRef, TeammatePlan};
use crate::remote::Host;
use crate::store::names::{AgentName, TeamName};
use crate::teammate::args::{Limits, OnLimit};

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum AgentField {
    Line(String),
    Words(Vec<String>),
}

impl AgentField {
    fn kind(self) -> Result<AgentKind> {
        match self {
            AgentField::Line(s) => AgentKind::parse(&s),
            AgentField::Words(w) => AgentKind::from_words(w),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum DepField {
    Index(usize),
    Id(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FileTeammate {
    name: String,
    #[serde(default)]
    prompt: String,
    agent: Option<AgentField>,
    agent_type: Option<String>,
    model: Option<String>,
    permission_mode: Option<String>,
    plan_mode_required: Option<bool>,
    /// `arg` or `stdin`: how a runtime teammate's turns get their prompt.
    prompt_via: Option<String>,
    /// The most turns it runs, how many seconds one may take, and what becomes of its task at
    /// either (`fail` or `release`).
    max_turns: Option<NonZeroU64>,
    turn_timeout: Option<NonZeroU64>,
    on_limit: Option<OnLimit>,
    worktree: Option<bool>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    /// An ssh destination to run on; `cwd` is then a directory there.
    host: Option<Host>,
    /// `false`: this teammate runs uncontained (`launch::sandbox`).
    sandbox: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FileTask {
    /// What identifies the task across launches (default: the subject); see `TaskPlan::key`.
    key: Option<String>,
    subject: String,
    #[serde(default)]
    description: String,
    active_form: Option<String>,
    #[serde(default)]
    blocked_by: Vec<DepField>,
}

/// `"lead": {"agent": "claude -p", "goal": "...", "approvals": "human", "exitWhenDone": true}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FileLead {
    agent: Option<AgentField>,
    #[serde(default)]
    goal: String,
    approvals: Option<String>,
    #[serde(default)]
    exit_when_done: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SwarmFile {
    team: Option<String>,
    #[serde(default)]
    description: String,
    agent: Option<AgentField>,
    cwd: Option<PathBuf>,
    #[serde(default)]
    worktree: bool,
    #[serde(default)]
    teammates: Vec<FileTeammate>,
    #[serde(default)]
    tasks: Vec<FileTask>,
    lead: Option<FileLead>,
    /// Default `host` of teammates.
    host: Option<Host>,
    /// The swarm to run on teammates' hosts (default: `swarm` on the remote PATH).
    remote_swarm: Option<String>,
    /// tmux: most panes in one window before the next opens a further window.
    panes_per_window: Option<usize>,
    /// `false`: teammates run uncontained, as with `--no-sandbox`.
    sandbox: Option<bool>,
}

/// A parsed swarm file; `team` is `None` when the file leaves it to `--team`.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) team: Option<TeamName>,
    pub(crate) plan: LaunchPlanParts,
}

/// Everything of a [`LaunchPlan`] but the team.
#[derive(Debug, Default)]
pub(crate) struct LaunchPlanParts {
    pub(crate) description: String,
    pub(crate) agent: Option<AgentKind>,
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) worktree: bool,
    pub(crate) teammates: Vec<TeammatePlan>,
    pub(crate) tasks: Vec<TaskPlan>,
    pub(crate) lead: Option<LeadPlan>,
    pub(crate) remote_swarm: Option<String>,
    /// `panesPerWindow`: a launch option the file can set (`--panes-per-window` wins).
    pub(crate) panes_per_window: Option<usize>,
    /// `sandbox`: `false` is `--no-sandbox` for every teammate that does not set its own.
    pub(crate) sandbox: Option<bool>,
}

impl LaunchPlanParts {
    pub(crate) fn into_plan(self, team: TeamName) -> LaunchPlan {
        LaunchPlan {
            team,
            description: self.description,
            agent: self.agent,
            cwd: self.cwd,
            worktree: self.worktree,
            teammates: self.teammates,
            tasks: self.tasks,
            lead: self.lead,
            remote_swarm: self.remote_swarm,
        }
    }
}

/// Reads a swarm file (`-` is standard input); relative paths in it are taken from its
/// directory.
pub(crate) fn load(path: &Path) -> Result<Loaded> {
    let (bytes, base) = if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
            .map_err(Error::io("read", "standard input"))?;
        (buf, std::env::current_dir().unwrap_or_default())
    } else {
        let bytes = std::fs::read(path)
            .map_err(|e| Error::usage(format!("cannot read swarm file {}: {e}", path.display())))?;
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        (bytes, crate::backend::absolute(dir))
    };
    parse(&bytes, &base, &path.display().to_string())
}

/// Parses swarm-file bytes; `base` resolves a relative `cwd`, `what` names the file in errors
/// and, ending in `.yaml` or `.yml`, says the bytes are YAML.
pub(crate) fn parse(bytes: &[u8], base: &Path, what: &str) -> Result<Loaded> {
    let invalid =
        |e: &dyn std::fmt::Display| Error::usage(format!("swarm file {what} is invalid: {e}"));
    let file: SwarmFile = if what.ends_with(".yaml") || what.ends_with(".yml") {
        serde_norway::from_slice(bytes).map_err(|e| invalid(&e))?
    } else {
        serde_json::from_slice(bytes).map_err(|e| invalid(&e))?
    };
    let team = file.team.as_deref().map(str::parse).transpose()?;
    if file.panes_per_window == Some(0) {
        return Err(Error::usage(format!(
            "swarm file {what}: panesPerWindow is 0; give the most panes one tmux window may hold, 1 or more"
        )));
    }
    let agent = file.agent.map(AgentField::kind).transpose()?;
    let mut teammates = Vec::new();
    for t in file.teammates {
        let name = AgentName::teammate(&t.name)?;
        let mut plan = TeammatePlan::new(name, t.prompt);
        plan.agent = t.agent.map(AgentField::kind).transpose()?;
        plan.agent_type = t.agent_type;
        plan.model = t.model;
        plan.permission_mode = t.permission_mode;
        plan.plan_mode_required = t.plan_mode_required;
        plan.prompt_via = t
            .prompt_via
            .as_deref()
            .map(|v| {
                clap::ValueEnum::from_str(v, false).map_err(|_| {
                    Error::usage(format!(
                        "swarm file {what}: teammate {}: promptVia is {v:?}; use \"arg\" or \"stdin\"",
                        t.name
                    ))
                })
            })
            .transpose()?;
        plan.limits = Limits {
            max_turns: t.max_turns,
            turn_timeout: t.turn_timeout,
            on_limit: t.on_limit,
        };
        plan.worktree = t.worktree;
        plan.env = t.env.into_iter().collect();
        plan.cwd = t.cwd;
        plan.host = t.host.or_else(|| file.host.clone());
        plan.sandbox = t.sandbox;
        teammates.push(plan);
    }
    let mut tasks = Vec::new();
    for (i, t) in file.tasks.into_iter().enumerate() {
        let mut blocked_by = Vec::new();
        for dep in t.blocked_by {
            blocked_by.push(match dep {
                DepField::Index(j) => TaskRef::Index(j),
                DepField::Id(id) => TaskRef::Id(id.parse().map_err(|_| {
                    Error::usage(format!(
                        "swarm file {what}: task {i} is blocked by {id:?}; use a number for an earlier task of the file or a task id string such as \"3\""
                    ))
                })?),
            });
        }
        tasks.push(TaskPlan {
            key: t.key.unwrap_or_else(|| t.subject.clone()),
            subject: t.subject,
            description: t.description,
            active_form: t.active_form,
            blocked_by,
        });
    }
    let lead = match file.lead {
        None => None,
        Some(l) => Some(LeadPlan {
            agent: l.agent.map(AgentField::kind).transpose()?,
            goal: l.goal,
            approvals: match l.approvals.as_deref() {
                None => crate::lead::agent::Approvals::Human,
                Some(v) => clap::ValueEnum::from_str(v, false).map_err(|_| {
                    Error::usage(format!(
                        "swarm file {what}: lead approvals is {v:?}; use \"human\", \"lead\" or \"auto\""
                    ))
                })?,
            },
            exit_when_done: l.exit_when_done,
        }),
    };
    Ok(Loaded {
        team,
        plan: LaunchPlanParts {
            lead,
            panes_per_window: file.panes_per_window,
            sandbox: file.sandbox,
            description: file.description,
            agent,
            cwd: file.cwd.map(|c| base.join(c)),
            worktree: file.worktree,
            teammates,
            tasks,
            remote_swarm: file.remote_swarm,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_parses() {
        let text = br##"{"team": "refactor", "description": "d", "agent": ["codex", "--full-auto"],
            "cwd": "sub", "teammates": [
              {"name": "coder", "prompt": "p", "agent": "shell", "agentType": "reviewer",
               "model": "sonnet", "permissionMode": "plan", "planModeRequired": true,
               "worktree": true, "env": {"A": "1"}, "cwd": "x"},
              {"name": "tester"}],
            "tasks": [{"subject": "a"}, {"subject": "b", "blockedBy": [0, "#7"],
               "activeForm": "Doing b"}]}"##;
        let loaded = parse(text, Path::new("/base"), "f.json").unwrap();
        assert_eq!(loaded.team.unwrap().as_str(), "refactor");
        let p = loaded.plan;
        assert_eq!(
            p.agent,
            Some(AgentKind::Command(vec![
                "codex".into(),
                "--full-auto".into()
            ]))
        );
        assert_eq!(p.cwd.as_deref(), Some(Path::new("/base/sub")));
        assert_eq!(p.teammates[0].agent, Some(AgentKind::Shell));
        assert_eq!(p.teammates[0].env, [("A".to_string(), "1".to_string())]);
        assert_eq!(p.teammates[1].prompt, "");
        assert_eq!(p.tasks[0].active_form, None);
        assert_eq!(p.tasks[1].active_form.as_deref(), Some("Doing b"));
        assert_eq!(
            p.tasks[1].blocked_by,
            [
                TaskRef::Index(0),
                TaskRef::Id(crate::store::names::TaskId::new(7))
            ]
        );
    }

    #[test]
    fn typos_and_bad_names_are_refused() {
        let e = parse(
            br#"{"teammates": [{"name": "a", "promt": "x"}]}"#,
            Path::new("/"),
            "f",
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown field `promt`"), "{e}");
        let e = parse(br#"{"teammates": [{"name": "a;b"}]}"#, Path::new("/"), "f").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let e = parse(
            br#"{"teammates": [{"name": "team-lead"}]}"#,
            Path::new("/"),
            "f",
        )
        .unwrap_err();
        assert!(e.to_string().contains("reserved"), "{e}");
        assert!(parse(
            br#"{"tasks": [{"subject": "a", "blockedBy": ["x"]}]}"#,
            Path::new("/"),
            "f"
        )
        .is_err());
    }
}
