//! `swarm launch --dry-run`: what a prepared launch would run, as one value.
//!
//! [`DryRun`] is built from a [`Prepared`] and serializes to the `--json` document (keys in the
//! order users and tests read them); the text output is printed from the same value, so the two
//! cannot disagree. Values of secret-looking variables (`*API_KEY*`, `*TOKEN*`, ...) are
//! redacted here, once, for both. A dry run writes nothing: the tasks are shown with the ids
//! they will get (or have, when an earlier launch seeded them), and a team without a lead key
//! yet shows where the key goes instead of one (the launch makes it).

use std::path::PathBuf;

use serde::{Serialize, Serializer};

use super::claude_config::ClaudeConfig;
use super::command_line::Env;
use super::{Prepared, TaskPlan, TaskRef};
use crate::backend::{BackendKind, Launch};
use crate::error::Result;
use crate::lifecycle::worktree::Worktree;
use crate::store::names::TaskId;
use crate::store::paths::Store;
use crate::store::tasks::TaskList;

/// The dry-run document.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DryRun {
    pub(crate) team: String,
    pub(crate) new_team: bool,
    pub(crate) backend: BackendKind,
    pub(crate) why: String,
    pub(crate) lead_session_id: String,
    pub(crate) lead: Option<CommandLine>,
    pub(crate) teammates: Vec<DryRunTeammate>,
    /// Teammates already running, which the launch leaves alone (`swarm up`).
    pub(crate) left_running: Vec<String>,
    pub(crate) tasks: Vec<DryRunTask>,
}

/// A task of the plan with the id it will get.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DryRunTask {
    pub(crate) id: TaskId,
    /// Seeded by an earlier launch (same key): not created again.
    pub(crate) seeded: bool,
    /// The ids of `plan.blocked_by`.
    pub(crate) blocked_by_ids: Vec<TaskId>,
    #[serde(flatten)]
    pub(crate) plan: TaskPlan,
}

/// A command exactly as it would start, secrets redacted: a contained teammate's `sandbox`
/// step, then section 10's `argv` (`launch::sandbox`).
#[derive(Debug, Serialize)]
pub(crate) struct CommandLine {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sandbox: Option<Vec<String>>,
    pub(crate) argv: Vec<String>,
    #[serde(serialize_with = "as_map")]
    pub(crate) env: Env,
    pub(crate) cwd: PathBuf,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DryRunTeammate {
    #[serde(flatten)]
    pub(crate) command: CommandLine,
    pub(crate) name: String,
    pub(crate) color: String,
    pub(crate) agent: String,
    /// How the member keeps one conversation across turns (`teammate::session`).
    pub(crate) conversation: &'static str,
    pub(crate) worktree: Option<Worktree>,
    /// On the roster already, not running: started again as it was.
    pub(crate) again: bool,
    /// A local claude teammate's config directory: which, and what of the user's own it keeps
    /// (`launch::claude_config`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) claude_config: Option<ClaudeConfig>,
    /// Started again: the Claude Code session it carries on (`claude --resume`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) resume: Option<String>,
    /// Whether its prompt is written to its inbox (a new teammate, or a claude teammate
    /// started again with no session to resume).
    pub(crate) first_message: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) log: Option<String>,
    /// The host it runs on, and its command line there (the one above is its local pane's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) remote: Option<CommandLine>,
    /// The first inbox message; the text output shows its first line.
    #[serde(skip)]
    pub(crate) prompt: String,
}

/// Values of these variables are not printed by `--dry-run`.
fn is_secret(key: &str) -> bool {
    ["API_KEY", "TOKEN", "SECRET", "PASSWORD"]
        .iter()
        .any(|s| key.to_ascii_uppercase().contains(s))
}

fn as_map<S: Serializer>(env: &Env, s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(env.iter().map(|(k, v)| (k, v)))
}

impl CommandLine {
    fn of(launch: &Launch) -> CommandLine {
        let env = launch
            .env
            .iter()
            .map(|(k, v)| {
                let shown = if is_secret(k) { "<redacted>" } else { v };
                (k.clone(), shown.to_string())
            })
            .collect();
        let (sandbox, argv) = super::sandbox::split(&launch.argv);
        CommandLine {
            sandbox: sandbox.map(<[String]>::to_vec),
            argv: argv.to_vec(),
            env,
            cwd: launch.cwd.clone(),
        }
    }
}

/// What `--dry-run` says about a member's conversation across turns.
fn conversation(agent: &super::AgentKind) -> &'static str {
    use crate::teammate::session::Adapter;
    match agent {
        super::AgentKind::Claude => "claude keeps its own (a Claude Code teammate)",
        super::AgentKind::Shell => Adapter::describe(None),
        super::AgentKind::Command(words) => Adapter::describe(Adapter::detect(words)),
    }
}

impl Prepared {
    /// The dry-run document: each teammate's exact argv and env, and the tasks.
    pub(crate) fn dry_run(&self, store: &Store) -> Result<DryRun> {
        Ok(DryRun {
            team: self.team.to_string(),
            new_team: self.new_team,
            backend: self.backend.kind,
            why: self.backend.why.clone(),
            lead_session_id: self.lead_session_id.clone(),
            lead: self.lead.as_ref().map(CommandLine::of),
            teammates: self
                .teammates
                .iter()
                .map(|t| DryRunTeammate {
                    command: CommandLine::of(&t.launch),
                    name: t.name.to_string(),
                    color: t.color.clone(),
                    agent: t.agent.label(),
                    conversation: conversation(&t.agent),
                    worktree: t
                        .worktree
                        .clone()
                        .or_else(|| t.remote.as_ref().and_then(|r| r.worktree.clone())),
                    again: t.previous.is_some(),
                    claude_config: t.claude_config.clone(),
                    resume: t.resume.clone(),
                    first_message: t.gets_prompt(),
                    log: t.launch.log.as_ref().map(|l| l.display().to_string()),
                    host: t.remote.as_ref().map(|r| r.host.to_string()),
                    remote: t.remote.as_ref().map(|r| CommandLine::of(&r.launch)),
                    prompt: t.prompt.clone(),
                })
                .collect(),
            left_running: self.left_running.clone(),
            tasks: self.planned_tasks(store)?,
        })
    }

    /// The plan's tasks with the ids seeding would give them, read without writing anything.
    fn planned_tasks(&self, store: &Store) -> Result<Vec<DryRunTask>> {
        let list = TaskList::new(store, &self.team);
        let seeded = self.seeded_before(&list)?;
        let mut next = if self.tasks.is_empty() {
            0
        } else {
            list.largest_issued()?
        };
        let mut planned: Vec<DryRunTask> = Vec::with_capacity(self.tasks.len());
        for plan in &self.tasks {
            let (id, seeded) = match seeded.get(&plan.key) {
                Some(id) => (id.clone(), true),
                None => {
                    next += 1;
                    (TaskId::new(next), false)
                }
            };
            let blocked_by_ids = plan
                .blocked_by
                .iter()
                .map(|d| match d {
                    TaskRef::Index(i) => planned[*i].id.clone(),
                    TaskRef::Id(id) => id.clone(),
                })
                .collect();
            planned.push(DryRunTask {
                id,
                seeded,
                blocked_by_ids,
                plan: plan.clone(),
            });
        }
        Ok(planned)
    }
}
