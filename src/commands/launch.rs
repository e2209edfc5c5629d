//! `swarm launch`: a swarm file or flags in, a running team out (or, with `--dry-run`, the exact
//! command lines that would run).

use std::time::Duration;

use super::Context;
use crate::backend::{display_argv, shell_quote, BackendKind};
use crate::commands::cli::LaunchArgs;
use crate::error::{Error, Result};
use crate::launch::supervisor::{Event, SuperviseOptions};
use crate::launch::swarmfile::{self, LaunchPlanParts};
use crate::launch::verify::{report, wait_until_up};
use crate::launch::{
    self, AgentKind, CommandLine, DryRun, IfRunning, Inherited, LaunchOptions, TeammatePlan,
    DEFAULT_GRACE,
};
use crate::lifecycle;
use crate::output;
use crate::store::lead_key::LeadKey;
use crate::store::names::{AgentName, TeamName};
use crate::store::roster::Roster;

/// What a dry run shows for `--lead-verify-key` of a team that has no lead key yet: the launch
/// makes the key, a dry run writes nothing.
const KEY_MADE_AT_LAUNCH: &str = "<the team's lead key, made by the launch>";

/// `swarm launch` (`IfRunning::Refuse`) and `swarm up` (`IfRunning::Keep`).
pub(crate) fn run(ctx: &Context, args: LaunchArgs, if_running: IfRunning) -> Result<i32> {
    let (file_team, mut parts) = match &args.file {
        Some(path) => {
            let loaded = swarmfile::load(path)?;
            (loaded.team, loaded.plan)
        }
        None => (None, LaunchPlanParts::default()),
    };
    let team = match file_team {
        Some(t) => t,
        None => ctx.team().map_err(|e| {
            Error::usage(format!("{e}; a swarm file can name its team with \"team\""))
        })?,
    };
    for spec in &args.teammate {
        let (name, prompt) = spec.split_once('=').ok_or_else(|| {
            Error::usage(format!(
                "--teammate {spec:?}: use NAME=PROMPT, e.g. --teammate coder=\"Fix the parser\""
            ))
        })?;
        parts
            .teammates
            .push(TeammatePlan::new(AgentName::teammate(name)?, prompt));
    }
    place_on_hosts(&mut parts, &args.host)?;
    if let Some(d) = args.description {
        parts.description = d;
    }
    if let Some(cwd) = args.cwd {
        parts.cwd = Some(cwd);
    }
    parts.worktree |= args.worktree;
    if args.lead.is_some() || args.goal.is_some() || args.approvals.is_some() || args.exit_when_done
    {
        let lead = parts.lead.get_or_insert_with(Default::default);
        if let Some(agent) = &args.lead {
            lead.agent = Some(AgentKind::parse(agent)?);
        }
        if let Some(goal) = args.goal {
            lead.goal = goal;
        }
        if let Some(approvals) = args.approvals {
            lead.approvals = approvals;
        }
        lead.exit_when_done |= args.exit_when_done;
    }
    let panes_per_window = args
        .panes_per_window
        .map(usize::from)
        .or(parts.panes_per_window);
    // The roster stays flat: teammates do not spawn teammates; the lead side adds members.
    crate::store::authority::require_lead(&ctx.store, &team, "launch teammates")?;
    let no_sandbox = args.no_sandbox || parts.sandbox == Some(false);
    let plan = parts.into_plan(team);

    let mut opts = LaunchOptions::from_process()?;
    opts.backend = args.backend;
    opts.split = args.split;
    opts.lead_pane = !args.no_lead_pane;
    opts.panes_per_window = panes_per_window;
    opts.verify = !args.no_wait && !args.dry_run;
    opts.if_running = if_running;
    opts.dry_run = args.dry_run;
    opts.remote_swarm = args.remote_swarm;
    opts.agent = args.agent.as_deref().map(AgentKind::parse).transpose()?;
    opts.inherited = Inherited {
        model: args.model,
        permission_mode: args.permission_mode,
        dangerously_skip_permissions: args.dangerously_skip_permissions,
        settings: args.settings,
        agent_type: args.agent_type,
        plan_mode_required: args.plan_mode_required,
        prompt_via: args.prompt_via,
        limits: args.limits,
        no_sandbox,
        extra: args.extra,
    };
    // A refused launch leaves no key behind for a team that had none, and a dry run makes none:
    // its argv shows where the key the launch makes goes.
    let team = plan.team.clone();
    let had_key = LeadKey::exists(&ctx.store, &team)?;
    let forget_new_key = || {
        if !had_key {
            let _ = LeadKey::forget(&ctx.store, &team);
        }
    };
    opts.lead_verify_key = if args.dry_run && !had_key {
        Some(KEY_MADE_AT_LAUNCH.to_string())
    } else {
        LeadKey::for_caller(&ctx.store, &team)?.map(|key| key.verify_key())
    };
    if !args.dry_run && Roster::new(&ctx.store, &team).exists() {
        // What a launch killed half way left: its panes adopted or closed, so the plan below
        // sees who really runs and the lead console is not opened twice.
        settle_killed_launch(ctx, &team)?;
    }
    let prepared = launch::prepare(&ctx.store, plan, &opts).inspect_err(|_| forget_new_key())?;
    eprintln!(
        "swarm: backend {}: {}",
        prepared.backend.kind, prepared.backend.why
    );
    if args.dry_run {
        return print_dry_run(ctx.json, &prepared.dry_run(&ctx.store)?).map(|()| 0);
    }
    if let Some(warning) = prepared.claude_config_warning() {
        eprintln!("swarm: warning: {warning}");
    }
    let json = ctx.json;
    let mut progress = |line: &str| {
        if json {
            eprintln!("swarm: {line}");
        } else {
            let _ = output::line(line);
        }
    };
    let mut launched = prepared.execute(&ctx.store, &mut progress)?;
    // A team this launch made publishes its key now (one that existed did in `require_lead`).
    if let Some(key) = LeadKey::for_caller(&ctx.store, &launched.team)? {
        crate::store::authority::publish(&ctx.store, &launched.team, &key)?;
    }
    crate::launch::recorded::record_file(&ctx.store, &launched.team, args.file.as_deref())?;
    let wait = (!args.no_wait).then(|| Duration::from_secs(args.wait));
    let file = args
        .file
        .as_ref()
        .map(|f| shell_quote(&f.display().to_string()));
    let in_process = launched.backend == BackendKind::InProcess;
    // In-process teammates are checked by the supervisor, which catches Ctrl-C meanwhile.
    if let (Some(bound), false) = (wait, in_process) {
        let starting = launched.starting();
        launched.not_up = wait_until_up(&ctx.store, &launched.team, &starting, bound);
    }
    if !launched.not_up.is_empty() && !json {
        let started = launched.teammates.len();
        for line in report(&launched.team, &launched.not_up, started, file.as_deref()) {
            eprintln!("{line}");
        }
    }
    let mut failed_to_start = !launched.not_up.is_empty();
    if json {
        if launched.backend == BackendKind::InProcess {
            output::json_line(&launched)?;
        } else {
            output::json(&launched)?;
        }
    } else {
        let n = launched.teammates.len();
        let started = match launched.not_up.len() {
            0 => format!("{} started", super::team::plural(n, "teammate")),
            down => format!("{} of {n} teammates up, {down} did not come up", n - down),
        };
        output::line(match launched.left_running.len() {
            0 => format!("team {}: {started}", launched.team),
            n => format!("team {}: {started}, {n} already running", launched.team),
        })?;
        if let Some(hint) = &launched.attach_hint {
            output::line(format!("  {hint}"))?;
        }
        if launched.backend != BackendKind::InProcess {
            output::line(format!(
                "  `swarm status {0}` shows them; `swarm down {0}` stops them and closes the panes",
                crate::backend::argv::team_flags(ctx.store.root(), launched.team.as_str())
            ))?;
        }
    }
    if !in_process {
        return Ok(if failed_to_start { 1 } else { 0 });
    }
    if !json {
        output::line("Ctrl-C shuts the team down gracefully")?;
    }
    let sup = SuperviseOptions {
        shutdown_timeout: Duration::from_secs(args.shutdown_timeout),
        grace: DEFAULT_GRACE,
        startup: wait,
    };
    let (team, started) = (launched.team.clone(), launched.teammates.len());
    let mut on_event = |e: Event| {
        if let Event::NotUp { teammates } = &e {
            failed_to_start = true;
            if !json {
                for line in report(&team, teammates, started, file.as_deref()) {
                    eprintln!("{line}");
                }
                return;
            }
        }
        let _ = if json {
            output::json_line(&e)
        } else {
            output::line(e.line())
        };
    };
    let exits = launched.supervise(&ctx.store, &sup, &mut on_event)?;
    let failed = exits
        .iter()
        .filter(|e| !e.stopped && e.code != Some(0))
        .count();
    Ok(if failed > 0 || failed_to_start { 1 } else { 0 })
}

/// Adopts or closes what a launch killed half way left of `team` (`lifecycle::orphans`), and
/// says so.
pub(crate) fn settle_killed_launch(ctx: &Context, team: &TeamName) -> Result<()> {
    let done = lifecycle::reconcile(&ctx.store, team)?;
    for (name, pane) in &done.adopted {
        eprintln!("swarm: {name}'s pane {pane} (from a launch that was killed) is recorded again");
    }
    if !done.never_started.is_empty() {
        eprintln!(
            "swarm: {} never started (their launch was killed); marked not running",
            done.never_started.join(", ")
        );
    }
    if done.closed > 0 {
        eprintln!(
            "swarm: closed {} of team {team} that no member has",
            super::team::plural(done.closed, "leftover pane")
        );
    }
    Ok(())
}

/// `--host NAME=HOST` puts that teammate on HOST; `--host HOST` every teammate that names no
/// host of its own.
fn place_on_hosts(parts: &mut LaunchPlanParts, specs: &[String]) -> Result<()> {
    for spec in specs {
        match spec.split_once('=') {
            Some((name, host)) => {
                let host: crate::remote::Host = host.parse()?;
                let t = parts
                    .teammates
                    .iter_mut()
                    .find(|t| t.name.same_as(name))
                    .ok_or_else(|| {
                        Error::usage(format!(
                            "--host {spec:?}: no teammate {name:?} in this launch; name one of its teammates, or give --host HOST for all of them"
                        ))
                    })?;
                t.host = Some(host);
            }
            None => {
                let host: crate::remote::Host = spec.parse()?;
                for t in parts.teammates.iter_mut().filter(|t| t.host.is_none()) {
                    t.host = Some(host.clone());
                }
            }
        }
    }
    Ok(())
}

/// Prints the dry run: the document itself for `--json`, readable lines from it otherwise.
fn print_dry_run(json: bool, doc: &DryRun) -> Result<()> {
    if json {
        return output::json(doc);
    }
    output::line(format!(
        "team {} ({}), backend {}, lead session {}",
        doc.team,
        if doc.new_team {
            "new"
        } else {
            "existing: teammates are added"
        },
        doc.backend,
        doc.lead_session_id
    ))?;
    for name in &doc.left_running {
        output::line(format!("{name} is already running; left alone"))?;
    }
    let show = |title: String, c: &CommandLine| -> Result<()> {
        output::line(title)?;
        output::line(format!("  cwd   {}", c.cwd.display()))?;
        let env: Vec<String> = c
            .env
            .iter()
            .map(|(k, v)| format!("{k}={}", shell_quote(v)))
            .collect();
        output::line(format!("  env   {}", env.join(" ")))?;
        if let Some(sandbox) = &c.sandbox {
            output::line(format!("  in    {} --", display_argv(sandbox)))?;
        }
        output::line(format!("  argv  {}", display_argv(&c.argv)))
    };
    if let Some(lead) = &doc.lead {
        let title = if doc.backend == BackendKind::InProcess {
            "lead agent (a child of the launcher, its console on this terminal)"
        } else {
            "lead console (first pane)"
        };
        show(title.into(), lead)?;
    }
    for t in &doc.teammates {
        let again = if t.again { ", started again" } else { "" };
        show(
            format!("{} ({}, {}{again})", t.name, t.color, t.agent),
            &t.command,
        )?;
        if let (Some(host), Some(remote)) = (&t.host, &t.remote) {
            show(format!("  on {host}, over ssh:"), remote)?;
        }
        output::line(format!("  conversation {}", t.conversation))?;
        if let Some(session) = &t.resume {
            output::line(format!("  resumes session {session} (claude --resume)"))?;
        }
        if let Some(config) = &t.claude_config {
            output::line(format!("  config {}", config.describe()))?;
        }
        if let Some(wt) = &t.worktree {
            output::line(format!(
                "  worktree {} on branch {} (from {})",
                wt.path.display(),
                wt.branch,
                &wt.base[..wt.base.len().min(12)]
            ))?;
        }
        if let Some(log) = &t.log {
            output::line(format!("  log   {log}"))?;
        }
        if !t.prompt.is_empty() && t.first_message {
            output::line(format!(
                "  first message: {}",
                crate::store::protocol::truncate(t.prompt.lines().next().unwrap_or_default(), 100)
            ))?;
        }
    }
    if !doc.tasks.is_empty() {
        output::line("tasks")?;
        for t in &doc.tasks {
            let deps: Vec<String> = t.blocked_by_ids.iter().map(|d| format!("#{d}")).collect();
            output::line(format!(
                "  #{} {}{}{}",
                t.id,
                t.plan.subject,
                if deps.is_empty() {
                    String::new()
                } else {
                    format!(" (blocked by {})", deps.join(", "))
                },
                if t.seeded {
                    " (seeded before: not created again)"
                } else {
                    ""
                }
            ))?;
        }
    }
    Ok(())
}
