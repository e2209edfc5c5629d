//! Validating a plan and building every command line, without writing anything.
//!
//! [`prepare`] is a list of small steps, each refusing bad input with exit 2 before the store is
//! touched: the teammate names (unique ignoring case, not already on the roster), the inherited
//! flags, the backend, each teammate (its directory, worktree, environment, permission mode,
//! model and program) and the task dependencies. What comes out, a [`Prepared`], is exactly
//! what `Prepared::execute` (in `spawn`) runs and what `--dry-run` prints.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::checks::{check_inherited, check_names, check_tasks, check_teammate};
use super::claude_config::ClaudeConfig;
use super::command_line::AgentFlags;
use super::plan::{IfRunning, LAUNCH_FIELD};
use super::sandbox::{Containment, FIELD};
use super::{AgentKind, Inherited, LaunchOptions, LaunchPlan, TaskPlan, TeammatePlan};
use crate::backend::{absolute, detect, BackendKind, Detected, Launch};
use crate::error::{Error, Result};
use crate::lifecycle::worktree::{self, Worktree};
use crate::remote::hello::{HostInfo, Hosts};
use crate::remote::{Host, HOST_FIELD, REMOTE_FIELD};
use crate::store::colour::Colour;
use crate::store::names::{AgentName, TeamName, LEAD};
use crate::store::paths::Store;
use crate::store::roster::{Member, Roster, TeamConfig, AGENT_FIELD};
use crate::teammate::args::{PromptVia, TeammateArgs};

/// One teammate, validated and with its command line built.
#[derive(Debug, Clone)]
pub(crate) struct PreparedTeammate {
    pub(super) name: AgentName,
    pub(super) prompt: String,
    pub(super) agent: AgentKind,
    pub(super) color: String,
    pub(super) launch: Launch,
    /// A worktree to create at spawn (not one the teammate keeps from an earlier run).
    pub(super) worktree: Option<Worktree>,
    pub(super) member: Member,
    /// The roster entry of a teammate started again: its old pane or process is closed first,
    /// and it keeps its inbox and tasks.
    pub(super) previous: Option<Member>,
    /// A teammate on another host: its command line there (`launch` is its local pane's).
    pub(super) remote: Option<RemoteLaunch>,
    /// A local claude teammate's config directory (`launch::claude_config`).
    pub(super) claude_config: Option<ClaudeConfig>,
    /// The Claude Code session a claude teammate started again carries on (`launch::again`).
    pub(super) resume: Option<String>,
}

/// A launch that passed validation; nothing is written yet.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub(super) team: TeamName,
    pub(super) description: String,
    pub(super) new_team: bool,
    pub(super) lead_session_id: String,
    pub(super) base_cwd: PathBuf,
    pub(crate) backend: Detected,
    pub(super) split: bool,
    /// The lead console's command, when it gets a pane.
    pub(super) lead: Option<Launch>,
    /// The lead agent's goal, written for its first turn (`lead::agent`).
    pub(super) lead_goal: Option<String>,
    pub(super) teammates: Vec<PreparedTeammate>,
    /// Teammates of the plan that are running already and are left alone (`swarm up`).
    pub(super) left_running: Vec<String>,
    /// The lead's roster entry when its pane is to be opened again (its old one died).
    pub(super) previous_lead: Option<Member>,
    pub(super) tasks: Vec<TaskPlan>,
    pub(super) root: PathBuf,
    pub(super) opts: LaunchOptions,
}

/// What every teammate of one launch shares, worked out once.
pub(super) struct Shared<'a> {
    pub(super) store: &'a Store,
    pub(super) opts: &'a LaunchOptions,
    pub(super) team: &'a TeamName,
    pub(super) root: PathBuf,
    pub(super) backend: BackendKind,
    pub(super) base_cwd: PathBuf,
    lead_session_id: String,
    /// `--settings` as teammates get it: a file relative to the base directory made absolute.
    settings: Option<String>,
    default_agent: AgentKind,
    pub(super) default_worktree: bool,
    /// Teammates already on the roster; colours continue after them.
    already: usize,
    /// `claude`, looked up at the first claude teammate.
    pub(super) claude_bin: Option<PathBuf>,
    /// Hosts of remote teammates, each checked once (`remote::hello`).
    pub(super) hosts: Hosts,
    /// The plan's `remoteSwarm`.
    pub(super) plan_remote_swarm: Option<String>,
    sandbox: super::sandbox::Sandbox,
}

/// Validates a plan and builds every command line. Writes nothing.
pub(crate) fn prepare(store: &Store, plan: LaunchPlan, opts: &LaunchOptions) -> Result<Prepared> {
    let roster = Roster::new(store, &plan.team);
    let existing: Option<TeamConfig> = if roster.exists() {
        let config = roster.load()?;
        for (field, why) in config.ignored_fields() {
            eprintln!(
                "swarm: warning: team {}: config.json's {field} is ignored: {why}",
                plan.team
            );
        }
        Some(config)
    } else {
        None
    };
    check_names(&plan)?;
    crate::process::fd_limit::check_launch()?;
    check_inherited(&opts.inherited)?;
    let backend = choose_backend(opts)?;
    let base_cwd = absolute(&match &plan.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(Error::io("read", "the current directory"))?,
    });
    let mut shared = Shared {
        store,
        opts,
        team: &plan.team,
        root: absolute(store.root()),
        backend: backend.kind,
        lead_session_id: lead_session_id(existing.as_ref()),
        settings: settings_arg(&opts.inherited, &base_cwd),
        default_agent: opts
            .agent
            .clone()
            .or_else(|| plan.agent.clone())
            .unwrap_or(AgentKind::Claude),
        default_worktree: plan.worktree,
        already: existing.as_ref().map_or(0, |c| c.teammates().count()),
        claude_bin: None,
        hosts: Hosts::default(),
        plan_remote_swarm: plan.remote_swarm.clone(),
        sandbox: super::sandbox::Sandbox::new(opts),
        base_cwd,
    };
    let mut teammates = Vec::new();
    let mut left_running = Vec::new();
    let mut added = 0;
    for t in &plan.teammates {
        let on_roster = existing
            .as_ref()
            .and_then(|c| c.teammates().find(|m| t.name.same_as(m.name.as_str())));
        match on_roster {
            Some(m) if crate::lifecycle::member_running(store, &plan.team, m) => {
                match opts.if_running {
                    IfRunning::Keep => left_running.push(m.name.to_string()),
                    IfRunning::Refuse => {
                        return Err(Error::usage(format!(
                            "{} is already running in team {}; `swarm up FILE` starts only the \
                             teammates that are not running, and `swarm restart {}` restarts this one",
                            m.name, plan.team, m.name
                        )))
                    }
                }
            }
            Some(m) => teammates.push(shared.again(m)?),
            None => {
                let color = Colour::nth(shared.already + added).name.to_string();
                added += 1;
                let settings = shared.settings.clone();
                teammates.push(shared.teammate(color, t, &opts.inherited, settings, None)?);
            }
        }
    }
    check_tasks(store, &plan, existing.is_some())?;
    let previous_lead = existing
        .as_ref()
        .and_then(|c| c.member(LEAD))
        .filter(|lead| super::recorded::lead_pane_died(store, &plan.team, lead))
        .cloned();
    let wants_pane = backend.kind == BackendKind::Tmux
        && opts.lead_pane
        && !opts.split
        && (existing.is_none() || previous_lead.is_some());
    // In-process, an agent lead runs as one more child of the launcher, its console on the
    // launcher's terminal.
    let lead_child =
        backend.kind == BackendKind::InProcess && plan.lead.is_some() && existing.is_none();
    let (lead, lead_goal) = super::lead_pane::lead_pane(
        (wants_pane || lead_child).then_some(backend.kind),
        plan.lead.as_ref(),
        opts,
        &shared.root,
        &plan.team,
        shared.base_cwd.clone(),
    )?;
    let Shared {
        root,
        base_cwd,
        lead_session_id,
        ..
    } = shared;
    Ok(Prepared {
        team: plan.team,
        description: plan.description,
        new_team: existing.is_none(),
        lead_session_id,
        base_cwd,
        backend,
        split: opts.split,
        previous_lead: previous_lead.filter(|_| lead.is_some()),
        lead,
        lead_goal,
        teammates,
        left_running,
        tasks: plan.tasks,
        root,
        opts: opts.clone(),
    })
}

/// The backend section 10's detection picks; `--split` needs tmux.
fn choose_backend(opts: &LaunchOptions) -> Result<Detected> {
    let backend = detect(opts.backend, &opts.detect)?;
    if opts.split && backend.kind != BackendKind::Tmux {
        return Err(Error::usage(format!(
            "--split only applies to tmux, and the backend is {}",
            backend.kind
        )));
    }
    Ok(backend)
}

/// An existing team keeps its lead session; a new one gets a fresh id.
fn lead_session_id(existing: Option<&TeamConfig>) -> String {
    existing
        .map(|c| c.lead_session_id.clone())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
}

/// `--settings` is JSON or a file; a file that exists under the base directory is passed by its
/// absolute path, since teammates may start elsewhere.
fn settings_arg(inh: &Inherited, base_cwd: &Path) -> Option<String> {
    inh.settings.as_ref().map(|s| {
        let p = base_cwd.join(s);
        if !s.trim_start().starts_with('{') && p.is_file() {
            p.display().to_string()
        } else {
            s.clone()
        }
    })
}

impl Shared<'_> {
    /// A teammate of the plan, checked and with its command line built; `previous` is its
    /// roster entry when it is started again.
    pub(super) fn teammate(
        &mut self,
        color: String,
        t: &TeammatePlan,
        inh: &Inherited,
        settings: Option<String>,
        previous: Option<&Member>,
    ) -> Result<PreparedTeammate> {
        let name = &t.name;
        let agent = t
            .agent
            .clone()
            .unwrap_or_else(|| self.default_agent.clone());
        let place = match &t.host {
            Some(host) => Some(self.remote_place(t, host, previous)?),
            None => None,
        };
        let (base, cwd, worktree, kept) = match &place {
            Some(place) => place.dirs(),
            None => self.teammate_cwd(t, previous)?,
        };
        check_teammate(t, &agent)?;
        let model = t.model.clone().or_else(|| inh.model.clone());
        let agent_type = t.agent_type.clone().or_else(|| inh.agent_type.clone());
        let flags = AgentFlags::new(
            t.permission_mode.as_deref(),
            inh,
            agent_type.as_deref(),
            model.as_deref(),
            settings.as_deref(),
        );
        let prompt_via = t.prompt_via.or(inh.prompt_via).unwrap_or(PromptVia::Arg);
        let identity = TeammateArgs {
            agent_id: name.agent_id(self.team),
            agent_name: name.to_string(),
            team_name: self.team.to_string(),
            agent_color: color.clone(),
            parent_session_id: self.lead_session_id.clone(),
            // `--permission-mode plan` is plan mode: the lead approves the plan first.
            plan_mode_required: t.plan_mode_required.unwrap_or(inh.plan_mode_required)
                || flags.mode() == "plan",
            lead_verify_key: self.opts.lead_verify_key.clone(),
            cwd: Some(cwd.clone()),
            prompt_via,
            agent: None,
            limits: super::recorded::runtime_limits(t, inh, &agent),
            command: vec![],
        };
        let (mut launch, mut remote, claude_config) = match place {
            Some(place) => {
                let (launch, remote) =
                    self.remote_launch(t, &agent, &identity, &flags, place, cwd.clone())?;
                (launch, Some(remote), None)
            }
            None => {
                let (launch, config) = self.launch(t, &agent, &identity, &flags, cwd.clone())?;
                (launch, None, config)
            }
        };
        let contain = t.sandbox.unwrap_or(!inh.no_sandbox);
        let containment = match &mut remote {
            // Contained by its host as it starts there (`launch::host`), which says how.
            Some(r) => {
                r.sandbox = contain;
                Containment::not_started_on(&r.host)
            }
            None => (self.sandbox).contain(&mut launch, &self.root, self.team, name, contain)?,
        };
        let mut member = match previous {
            Some(p) => super::recorded::fresh_entry(p),
            None => {
                let mut m = Member::teammate(self.team, name, &color, "");
                m.prompt = Some(t.prompt.clone());
                m
            }
        };
        member.cwd = cwd.display().to_string();
        member.agent_type = agent_type
            .clone()
            .unwrap_or_else(|| "general-purpose".into());
        member.model = model;
        member.plan_mode_required = Some(identity.plan_mode_required);
        member.backend_type = Some(self.backend.as_str().into());
        member.is_active = Some(false);
        member.mode = Some(flags.mode().to_string());
        member
            .extra
            .insert(AGENT_FIELD.into(), Value::from(agent.label()));
        let record = super::recorded::record(
            t,
            inh,
            &agent,
            base,
            worktree.is_some() || kept.is_some(),
            agent_type,
            settings,
            prompt_via,
        );
        member.extra.insert(LAUNCH_FIELD.into(), record);
        member.extra.insert(FIELD.into(), containment.to_json());
        if let Some(r) = &remote {
            member
                .extra
                .insert(HOST_FIELD.into(), Value::from(r.host.to_string()));
            // Started again on its host: counted in, so its host's link serves it.
            member.reinstate();
        } else {
            member.extra.remove(HOST_FIELD);
            member.extra.remove(REMOTE_FIELD);
        }
        match worktree.as_ref().or(kept.as_ref()) {
            Some(wt) => {
                member.extra.insert(worktree::FIELD.into(), wt.to_json());
            }
            None => {
                member.extra.remove(worktree::FIELD);
            }
        }
        // A native claude teammate's first turn is its prompt: the worktree notice goes there
        // (a runtime teammate's guide says it itself, `teammate::guide`).
        let prompt = match (&agent, worktree.as_ref().or(kept.as_ref())) {
            (AgentKind::Claude, Some(wt)) if remote.is_none() && !t.prompt.trim().is_empty() => {
                let notice = crate::teammate::guide::worktree_notice(wt, &[&t.prompt]);
                format!("{}\n\n---\n{notice}", t.prompt)
            }
            _ => t.prompt.clone(),
        };
        Ok(PreparedTeammate {
            name: name.clone(),
            prompt,
            agent,
            color,
            launch,
            // A remote teammate's worktree is made on its host, by `relay spawn`.
            worktree: worktree.filter(|_| remote.is_none()),
            member,
            previous: previous.cloned(),
            remote,
            claude_config,
            resume: t.resume.clone(),
        })
    }
}

/// A teammate's command line on its host, and what to make there first.
#[derive(Debug, Clone)]
pub(crate) struct RemoteLaunch {
    pub(crate) host: Host,
    pub(crate) info: HostInfo,
    pub(crate) launch: Launch,
    /// A worktree to create there (not one it keeps from an earlier run).
    pub(crate) worktree: Option<Worktree>,
    /// Whether its host is to contain it (`launch::host`).
    pub(crate) sandbox: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::TaskRef;

    fn opts(dir: &Path) -> LaunchOptions {
        let bin = dir.join("claude");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        LaunchOptions::for_test(vec![
            ("PATH".into(), dir.display().to_string()),
            ("HOME".into(), "/home/u".into()),
            ("ANTHROPIC_BASE_URL".into(), "http://proxy".into()),
        ])
    }

    fn plan(names: &[&str]) -> LaunchPlan {
        LaunchPlan {
            lead: None,
            remote_swarm: None,
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
                ("SWARM_ROOT".into(), root.clone()),
                ("SWARM_TEAM".into(), "t".into()),
                ("SWARM_AGENT_NAME".into(), "coder".into()),
                ("SWARM_AGENT_ID".into(), "coder@t".into()),
                ("SWARM_BIN".into(), "/opt/swarm".into()),
                ("CLAUDE_CODE_ENABLE_TODO_TOOLS".into(), "1".into()),
                ("ANTHROPIC_BASE_URL".into(), "http://proxy".into()),
                ("CLAUDE_CONFIG_DIR".into(), root),
                // The store is not ~/.claude: the login stays the user's (`claude_config`).
                ("CLAUDE_SECURESTORAGE_CONFIG_DIR".into(), String::new()),
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
        p.tasks = vec![TaskPlan::new("x", "", vec![TaskRef::Index(0)])];
        assert!(prepare(&store, p, &o).is_err());
        assert!(!dir.path().join("root").exists());
    }

    #[test]
    fn a_claude_teammate_carrying_on_a_session_resumes_it_after_its_identity_flags() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = plan(&["coder"]);
        p.teammates[0].resume = Some("s-1".into());
        let prepared = prepare(&Store::new(dir.path().join("r")), p, &opts(dir.path())).unwrap();
        let argv = &prepared.teammates[0].launch.argv;
        let at = argv
            .iter()
            .position(|w| w == "--parent-session-id")
            .unwrap();
        assert_eq!(argv[at + 2..at + 4], ["--resume", "s-1"]);
    }
}
