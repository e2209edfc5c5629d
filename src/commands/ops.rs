//! `swarm status | attach | shutdown | kill`: operating a running team (`swarm logs` is in
//! `logs.rs`).
//!
//! Unlike the store commands these look past the files at the processes and panes behind each
//! member (through `lifecycle` and the backends), to show who is alive, go to a pane, print its
//! output, or stop a teammate and return its tasks. What the team's files and panes say is
//! printed with control characters made visible (`output::terminal`); `--json` stays raw.

use std::io::IsTerminal;

use serde_json::json;

use super::Context;
use crate::backend::tmux::{TmuxEnv, TmuxServer};
use crate::backend::{for_member, BackendKind, PaneBackend as _, PaneId, PaneState};
use crate::commands::cli::ShutdownArgs;
use crate::error::{Error, Result};
use crate::launch::sandbox::Containment;
use crate::lifecycle::{
    self, Health, Killed, MemberState, ShutdownOptions, ShutdownOutcome, ShutdownResult,
};
use crate::output;
use crate::output::terminal::visible;
use crate::store::liveness::{self, Liveness};
use crate::store::mailbox::Mailbox;
use crate::store::memory::TeamMemory;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::requests::{self, Kind, Request};
use crate::store::roster::{Member, Roster};
use crate::store::tasks::{Task, TaskList};
use crate::store::usage::TeamUsage;
use crate::store::watcher::Mode;

pub(crate) fn status(ctx: &Context) -> Result<()> {
    let team = ctx.existing_team()?;
    let config = Roster::new(&ctx.store, &team).load()?;
    let tasks = TaskList::new(&ctx.store, &team).list()?;
    let mailbox = Mailbox::new(&ctx.store, &team);
    let lead = config.lead_process().map(|p| lifecycle::lead_health(&p));
    let usage = TeamUsage::read(&ctx.store, &team, &config);
    let led_by_claude = config.led_by_claude();
    // Each member judged once; the table and `--json` both render these.
    let rows: Vec<Row> = config
        .members
        .iter()
        .map(|m| {
            let (health, state) = lifecycle::judge(&ctx.store, &team, &config, m, &tasks);
            let unread = mailbox.read(&m.name, true).map(|v| v.len()).unwrap_or(0);
            // How a running runtime learns of changes, as it recorded in its liveness file.
            let events = match &health {
                Some(h) if h.liveness == Liveness::Alive => {
                    liveness::recorded_events(&ctx.store, &team, &m.name)
                        .and_then(|e| Mode::parse(&e))
                }
                _ => None,
            };
            Row {
                member: m,
                health,
                state,
                task: lifecycle::current_task(&tasks, m.name.as_str()),
                unread,
                usage: usage
                    .as_ref()
                    .map_or(json!("unknown"), |u| u.member_json(m.name.as_str())),
                events,
            }
        })
        .collect();
    let (pending, plans): (Vec<Request>, Vec<Request>) = requests::pending(&ctx.store, &team)?
        .into_iter()
        .partition(|r| r.kind() == Kind::Permission);
    let quarantined = quarantined(&ctx.store, &team);
    let notes = crate::store::notes::all(&ctx.store, &team);
    // A memory that cannot be read is said, not a reason to fail the whole status.
    let memory = TeamMemory::of_team(&ctx.store, &config).map(|m| {
        let figures = m.figures().map_err(|e| e.to_string());
        (m, figures)
    });
    let hosts = crate::remote::state::hosts(&ctx.store, &team, &config.members);
    if ctx.json {
        return output::json(&json!({
            "team": team.as_str(),
            "description": config.description,
            "members": rows.iter().map(Row::json).collect::<Vec<_>>(),
            "hosts": hosts,
            "ledByClaude": led_by_claude,
            "leadProcess": lead,
            "pendingPermissions": pending,
            "pendingPlans": plans,
            "quarantined": quarantined,
            "notes": notes,
            "ignoredFields": config.ignored_fields().iter()
                .map(|(field, why)| json!({"field": field, "why": why}))
                .collect::<Vec<_>>(),
            "memory": memory.as_ref().map(|(m, f)| match f {
                Ok(f) => json!({"dir": m.dir(), "topics": f.topics,
                    "lastWriteBy": f.last_write_by, "lastWriteAt": f.last_write_at}),
                Err(e) => json!({"dir": m.dir(), "error": e}),
            }),
            "usage": match &usage {
                Ok(u) => u.total_json(),
                Err(e) => json!({"error": e.to_string()}),
            },
        }));
    }
    output::line(format!("team {}  {}", team, visible(&config.description)))?;
    let mut table = vec![[
        "NAME",
        "COLOR",
        "BACKEND",
        "PANE",
        "STATE",
        "CONTAINED",
        "UNREAD",
        "TASK",
    ]
    .map(String::from)];
    for r in &rows {
        let m = r.member;
        table.push([
            visible(m.name.as_str()).into_owned(),
            visible(m.color_or_default()).into_owned(),
            match crate::remote::host_of(m) {
                Some(host) => format!(
                    "{}@{}",
                    visible(m.backend_type.as_deref().unwrap_or("-")),
                    host
                ),
                None => visible(m.backend_type.as_deref().unwrap_or("-")).into_owned(),
            },
            if m.tmux_pane_id.is_empty() {
                "-".into()
            } else {
                visible(&m.tmux_pane_id).into_owned()
            },
            visible(&r.state.to_string()).into_owned(),
            match Containment::of(m) {
                Some(c) if c.contained => "yes".into(),
                Some(_) => "no".into(),
                None => "-".into(),
            },
            r.unread.to_string(),
            r.task
                .map(|t| format!("#{} {}", t.id, visible(&t.subject)))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    use crate::output::table::{
        self,
        Align::{Left, Right},
    };
    table::print(&table, &[Left, Left, Left, Left, Left, Left, Right])?;
    let uncontained: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            let c = Containment::of(r.member).filter(|c| !c.contained)?;
            Some(format!("{} ({})", r.member.name, visible(&c.how)))
        })
        .collect();
    if !uncontained.is_empty() {
        output::line(format!("uncontained: {}", uncontained.join(", ")))?;
    }
    for h in &hosts {
        output::line(visible(&h.line))?;
        if let Some(w) = &h.warning {
            output::line(w)?;
        }
    }
    if let Some(lead) = &lead {
        output::line(format!(
            "lead process: pid {} ({})",
            lead.pid,
            visible(&lead.why)
        ))?;
    }
    if led_by_claude {
        output::line(lifecycle::claude_led_notice(&team))?;
    }
    if let Some((_, figures)) = &memory {
        let text = match figures {
            Ok(f) => f.text(),
            Err(e) => format!("unreadable: {e}"),
        };
        output::line(format!("team memory: {}", visible(&text)))?;
    }
    for (title, waiting) in [("pending permissions", &pending), ("pending plans", &plans)] {
        if waiting.is_empty() {
            output::line(format!("{title}: none"))?;
            continue;
        }
        output::line(format!("{title}: {}", waiting.len()))?;
        for r in waiting {
            output::line(format!(
                "  {} {} {}",
                visible(r.id()),
                visible(r.from()),
                visible(&r.what())
            ))?;
        }
    }
    if !quarantined.is_empty() {
        output::line("quarantined (could not be parsed, or not a file; moved aside):")?;
        for q in &quarantined {
            output::line(format!("  {}", visible(q)))?;
        }
    }
    for (field, why) in config.ignored_fields() {
        output::line(format!("ignored: config.json's {field}: {why}"))?;
    }
    if !notes.is_empty() {
        output::line("notes (damage met and gone past):")?;
        for n in &notes {
            output::line(format!(
                "  {} {}: {}",
                visible(&n.at),
                visible(&n.who),
                visible(&n.text)
            ))?;
        }
    }
    Ok(())
}

/// One member as `swarm status` shows it.
struct Row<'a> {
    member: &'a Member,
    /// What its lock and pane said (`None` for a lead with no pane, or when probing failed).
    health: Option<Health>,
    state: MemberState,
    task: Option<&'a Task>,
    unread: usize,
    /// Its tokens and estimated cost (`store::usage`), or "unknown".
    usage: serde_json::Value,
    /// How its runtime learns of changes (inotify or polling), when it runs and recorded it.
    events: Option<Mode>,
}

impl Row<'_> {
    fn json(&self) -> serde_json::Value {
        let m = self.member;
        let mut row = json!({
            "name": m.name,
            "color": m.color_or_default(),
            "agent": m.agent_label(),
            "backend": m.backend_type,
            "host": crate::remote::host_of(m),
            "paneId": m.tmux_pane_id,
            "retired": m.retired(),
            "contained": Containment::of(m).map(|c| c.contained),
            "containment": Containment::of(m).map(|c| c.how),
            "liveness": self.health.as_ref().map(|h| h.liveness),
            "pane": self.health.as_ref().map(|h| h.pane),
            "task": self.task.map(|t| json!({"id": t.id, "subject": t.subject})),
            "unread": self.unread,
            "usage": self.usage,
            "events": self.events,
            "worktree": m.extra.get(crate::lifecycle::worktree::FIELD).and_then(|w| w.get("path")),
        });
        if let (Some(row), serde_json::Value::Object(state)) =
            (row.as_object_mut(), self.state.json())
        {
            row.extend(state);
        }
        row
    }
}

/// Files and directories moved aside because they did not parse or were not a file
/// (`*.corrupt-<ms>`), relative to the root.
fn quarantined(store: &Store, team: &TeamName) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![store.team_dir(team), store.tasks_dir(team)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            // A directory where a file belonged is moved aside whole: listed, not walked.
            if e.file_name().to_string_lossy().contains(".corrupt-") {
                found.push(
                    path.strip_prefix(store.root())
                        .unwrap_or(&path)
                        .display()
                        .to_string(),
                );
            } else if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

fn member(ctx: &Context, team: &TeamName, name: &AgentName) -> Result<Member> {
    Roster::new(&ctx.store, team).require_member(name.as_str())
}

pub(crate) fn attach(ctx: &Context, name: Option<AgentName>) -> Result<()> {
    let team = ctx.existing_team()?;
    let config = Roster::new(&ctx.store, &team).load()?;
    let target = match &name {
        Some(n) => member(ctx, &team, n)?,
        None => config
            .members
            .iter()
            .find(|m| {
                m.is_lead()
                    && for_member(&ctx.store, &team, m).map(|b| b.kind()) == Some(BackendKind::Tmux)
            })
            .or_else(|| config.teammates().find(|m| !m.retired()))
            .cloned()
            .ok_or_else(|| Error::usage(format!("team {team} has no panes to attach to")))?,
    };
    let target_backend = for_member(&ctx.store, &team, &target);
    match target_backend.as_ref().map(|b| (b.kind(), b.tmux())) {
        Some((BackendKind::Tmux, Some(backend))) => {
            use std::os::unix::process::CommandExt;
            let pane = PaneId(target.tmux_pane_id.clone());
            if backend.state(&pane)? == PaneState::Gone {
                return Err(Error::usage(format!(
                    "{}'s pane {pane} no longer exists",
                    target.name
                )));
            }
            // switch-client only works on the server this shell's tmux runs; a pane on
            // another server (SWARM_TMUX_SOCKET) is attached to, nested, like from outside.
            let env = TmuxEnv::from_process();
            let here = env.tmux.as_deref().and_then(|t| t.split(',').next());
            let inside = env.inside()
                && matches!(
                    (TmuxServer::for_member(&target), here),
                    (Some(TmuxServer::Path(p)), Some(h)) if p.as_os_str() == h
                );
            let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
            if !inside && !terminal {
                return Err(Error::usage(format!(
                    "swarm attach needs a terminal, and standard input or output is not one; run \
                     it from a terminal, or print the pane with `swarm logs --team {team} {}`",
                    target.name
                )));
            }
            let argv = backend.attach_argv(&pane, inside)?;
            if let (true, Some(from)) = (inside, env.tmux_pane.as_deref()) {
                output::line(format!(
                    "switching to {}'s pane {pane}; {}",
                    visible(target.name.as_str()),
                    backend.way_back(&pane, from)
                ))?;
            }
            let mut attach = std::process::Command::new(&argv[0]);
            attach.args(&argv[1..]);
            if !inside {
                // tmux refuses to attach from inside another of its sessions while $TMUX is set.
                attach.env_remove("TMUX");
            }
            let err = attach.exec();
            Err(Error::Command {
                program: "tmux".into(),
                detail: err.to_string(),
            })
        }
        Some((BackendKind::InProcess, _)) => super::logs::logs(ctx, &target.name, true),
        Some((BackendKind::Iterm2, _)) => output::line(format!(
            "{} runs in iTerm2 session {}, split into the tab swarm was launched from",
            visible(target.name.as_str()),
            visible(&target.tmux_pane_id)
        )),
        Some((BackendKind::Tmux, None)) | None => Err(Error::usage(format!(
            "{} has no pane swarm knows about (it was not started by swarm launch)",
            target.name
        ))),
    }
}

pub(crate) fn shutdown(ctx: &Context, args: ShutdownArgs) -> Result<i32> {
    let opts = ShutdownOptions::from_flags(args.timeout, args.grace, args.force, args.reason)?;
    let team = ctx.existing_team()?;
    let config = Roster::new(&ctx.store, &team).load()?;
    if config.led_by_claude() && !args.force {
        return Err(Error::usage(format!(
            "{}; nothing was sent",
            lifecycle::claude_led_notice(&team)
        )));
    }
    crate::store::authority::require_lead(&ctx.store, &team, "shut teammates down")?;
    // Every teammate swarm has not retired, idle or busy: `isActive` is Claude Code's busy flag.
    let names: Vec<AgentName> = if args.all {
        config
            .teammates()
            .filter(|m| !m.retired())
            .map(|m| m.name.clone())
            .collect()
    } else {
        let name = args.name.ok_or_else(|| {
            Error::usage(format!(
                "name the teammate to stop (`swarm shutdown --team {team} NAME`), or pass --all \
                 to stop every teammate of team {team}"
            ))
        })?;
        vec![member(ctx, &team, &name)?.name]
    };
    if names.is_empty() {
        if ctx.json {
            return output::json(&json!([])).map(|()| 0);
        }
        output::line(format!("team {team} has no active teammates"))?;
        return Ok(0);
    }
    let outcomes = lifecycle::shutdown(&ctx.store, &team, &names, &opts)?;
    let refused = outcomes.iter().filter(|o| !o.killed).count();
    if ctx.json {
        output::json(&outcomes)?;
    } else {
        for o in &outcomes {
            output::line(describe_outcome(o, opts.timeout.as_secs()))?;
            if let Some(wt) = &o.worktree {
                output::line(format!("  {wt}"))?;
            }
        }
    }
    Ok(if refused > 0 { 1 } else { 0 })
}

/// One teammate's shutdown as a line: its answer and what was done about it.
pub(crate) fn describe_outcome(o: &ShutdownOutcome, timeout: u64) -> String {
    let mut line = format!(
        "{}: {}",
        o.name,
        match &o.outcome {
            ShutdownResult::Approved => "approved the shutdown".to_string(),
            ShutdownResult::Rejected { reason } => format!("rejected the shutdown ({reason})"),
            ShutdownResult::TimedOut => format!("no answer within {timeout} s"),
            ShutdownResult::Exited => "exited before answering".into(),
            ShutdownResult::NotRunning => "was not running".into(),
            ShutdownResult::NotAsked => "not asked (swarm cannot speak as this team's lead)".into(),
        }
    );
    if o.killed || o.retired {
        line.push_str(if o.killed {
            "; stopped, marked inactive"
        } else {
            "; marked inactive, but its process was not signalled (see above)"
        });
        if !o.released.is_empty() {
            line.push_str(&format!(
                "; tasks back to pending: {}",
                o.released
                    .iter()
                    .map(|t| format!("#{t}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    } else if o.unidentified {
        line.push_str(
            "; not stopped: swarm cannot identify its pane or process (no tmux server recorded \
             for it, and swarm found no process it started for it), so it touched nothing; stop \
             it from its own lead",
        );
    } else {
        line.push_str(&format!(
            "; still running (`swarm shutdown --force {0}` or `swarm kill {0}` stops it)",
            o.name
        ));
    }
    line
}

/// Stops a teammate and retires it. A member that was already stopped is said to be so (exit 0:
/// what `swarm kill` is for, a stopped and inactive member, holds either way); a recorded pid
/// swarm cannot trust is not signalled, and that is an error (exit 1) once the member is retired.
pub(crate) fn kill(ctx: &Context, name: &AgentName) -> Result<()> {
    let team = ctx.existing_team()?;
    let m = member(ctx, &team, name)?;
    if m.is_lead() {
        return Err(Error::usage(
            "the lead is not killed with `swarm kill`; name a teammate",
        ));
    }
    let who = m.name.clone();
    // In a team a Claude Code lead made, a teammate swarm cannot identify may well run (inside
    // Claude's own process, or a pane on a server the roster does not name).
    let config = Roster::new(&ctx.store, &team).load()?;
    if config.led_by_claude() && !lifecycle::health::identifiable(&ctx.store, &team, &m) {
        return Err(Error::usage(format!(
            "swarm cannot identify {who}'s pane or process (no tmux server or pid recorded for \
             it), so it neither signals it nor marks it stopped; stop it from its own lead"
        )));
    }
    crate::store::authority::require_lead(&ctx.store, &team, "kill a teammate")?;
    let was_running = lifecycle::member_health(&ctx.store, &team, &m)?
        .runs
        .running();
    let killed = lifecycle::kill_member(&ctx.store, &team, &m)?;
    // The roster can point elsewhere (any member can edit it): what stopped a process it started
    // for the member says the member ran.
    let was_running = was_running || killed == (Killed::Stopped { signalled: true });
    let released = lifecycle::retire_member(&ctx.store, &team, &who, "killed with swarm kill")?;
    let current = Roster::new(&ctx.store, &team).require_member(who.as_str())?;
    let worktree = lifecycle::finish_worktree(&ctx.store, &team, &current)?;
    let refused = killed.report(who.as_str());
    if ctx.json {
        output::json(&json!({
            "killed": who.as_str(),
            "wasRunning": was_running,
            "signalled": refused.is_none(),
            "released": released,
            "worktree": worktree,
        }))?;
    } else {
        let mut line = match (&refused, was_running) {
            (Some(_), _) => format!("{who} marked inactive, but not stopped"),
            (None, true) => format!("killed {who}; marked inactive"),
            (None, false) => format!("{who} was not running; marked inactive"),
        };
        if !released.is_empty() {
            line.push_str(&format!(
                "; tasks back to pending: {}",
                released
                    .iter()
                    .map(|t| format!("#{t}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        output::line(line)?;
        if let Some(wt) = worktree {
            output::line(format!("  {wt}"))?;
        }
    }
    match refused {
        Some(report) => Err(Error::Backend(report)),
        None => Ok(()),
    }
}
