//! One module per command group; each turns parsed arguments into store operations and output.

pub(crate) mod cli;
pub(crate) mod completions;
mod current;
#[cfg(feature = "seams")]
pub(crate) mod debug;
mod demo;
mod done;
mod down;
mod identity;
mod init;
mod interrupt;
mod launch;
mod logs;
mod man;
mod memory;
mod message;
mod ops;
mod permission;
mod prune;
mod relay;
mod shutdown_request;
mod task;
mod team;
mod teammate;
mod timeline;
mod top;
mod trust;
mod up;
mod usage;

use crate::commands::cli::{Cli, Command};
use crate::error::{Error, Result};
use crate::process::successor::Successor;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;

/// What every command needs: where the store is, which team, how to print.
pub(crate) struct Context {
    pub(crate) store: Store,
    /// `--team` / `$SWARM_TEAM`, already validated by clap.
    pub(crate) team: Option<TeamName>,
    pub(crate) json: bool,
    /// The current team, once worked out.
    current: std::cell::OnceCell<TeamName>,
}

impl Context {
    /// The current team: `--team`, `$SWARM_TEAM`, the team of this tmux pane, or the only team
    /// with a running teammate (see `commands::current`); else an error naming the candidates.
    pub(crate) fn team(&self) -> Result<TeamName> {
        if let Some(team) = self.current.get() {
            return Ok(team.clone());
        }
        let team = current::current_team(&self.store, self.team.as_ref())?;
        Ok(self.current.get_or_init(|| team).clone())
    }

    /// Like [`Context::team`], but the team must exist.
    pub(crate) fn existing_team(&self) -> Result<TeamName> {
        let team = self.team()?;
        crate::store::roster::Roster::new(&self.store, &team).load()?;
        Ok(team)
    }
}

/// Parses an agent name that did not come through clap (a hook's input, a debug tool's flag).
pub(crate) fn agent(name: &str) -> Result<AgentName> {
    name.parse()
}

/// Runs a parsed command line; returns the exit code for commands whose outcome is a code.
pub(crate) fn dispatch(cli: Cli) -> Result<i32> {
    let store = match &cli.command {
        // The demo's team is no business of a real Claude Code's directory.
        Command::Demo(_)
            if cli.root.is_none()
                && std::env::var_os("SWARM_ROOT").is_none_or(|v| v.is_empty()) =>
        {
            Store::new(crate::store::paths::resolve(&demo::data_dir()?))
        }
        _ => Store::discover(cli.root.as_deref())?,
    };
    let ctx = Context {
        store,
        team: cli.team,
        json: cli.json,
        current: std::cell::OnceCell::new(),
    };
    run(&ctx, cli.command).map_err(|e| match e {
        Error::NoSuchTeam { team, root, .. } => Error::NoSuchTeam {
            hint: demo::elsewhere(&ctx.store, Some(&team))
                .or_else(|| {
                    current::closest_team(&ctx.store, &team).map(|t| format!("did you mean {t}?"))
                })
                .map(|h| format!("; {h}"))
                .unwrap_or_default(),
            team,
            root,
        },
        e => e,
    })
}

/// Runs `command` in `ctx`.
fn run(ctx: &Context, command: Command) -> Result<i32> {
    if reports_unconfirmed(&command) {
        crate::store::fsio::unconfirmed::collect();
    }
    match command {
        Command::Team(cmd) => team::run(ctx, cmd).map(|()| 0),
        Command::Send(args) => message::send(ctx, args).map(|()| 0),
        Command::Inbox(args) => message::inbox(ctx, args).map(|()| 0),
        Command::Task(cmd) => task::run(ctx, cmd).map(|()| 0),
        Command::Permission(cmd) => permission::run(ctx, cmd),
        Command::Memory(cmd) => memory::run(ctx, cmd).map(|()| 0),
        Command::Teammate(args) => teammate::run(ctx, args),
        Command::Hook(cmd) => teammate::hook(ctx, cmd),
        Command::Demo(args) => demo(ctx, args),
        Command::Done(args) => done::run(ctx, args).map(|()| 0),
        Command::Lead(args) if !args.command.is_empty() => {
            let team = ctx.existing_team()?;
            let opts = crate::lead::agent::LeadAgentOptions {
                argv: args.command,
                approvals: args.approvals,
                exit_when_done: args.exit_when_done,
            };
            crate::lead::agent::run(&ctx.store, &team, opts)
        }
        Command::Lead(args) => {
            let team = ctx.existing_team()?;
            let opts = crate::lead::LeadOptions {
                auto_approve: args.auto_approve,
                exit_when_done: args.exit_when_done,
                notify_after: Some(args.notify_after).filter(|d| !d.is_zero()),
            };
            crate::lead::run(&ctx.store, &team, opts)
        }
        Command::Init { file } => init::run(file).map(|()| 0),
        Command::Launch(args) => launch::run(ctx, args, crate::launch::IfRunning::Refuse),
        Command::Up(args) => up::up(ctx, args),
        Command::Restart(args) => up::restart(ctx, args),
        Command::Down(args) => down::down(ctx, args),
        Command::Prune(args) => prune::prune(ctx, args),
        Command::Status { watch: false } => ops::status(ctx).map(|()| 0),
        Command::Status { watch: true } => top::watch(ctx),
        Command::Top => top::run(ctx),
        Command::Timeline(args) => timeline::run(ctx, args).map(|()| 0),
        Command::Usage => usage::run(ctx).map(|()| 0),
        Command::Completions(args) => completions::run(&args).map(|()| 0),
        Command::Man(args) => man::run(ctx, &args).map(|()| 0),
        Command::Attach { name } => ops::attach(ctx, name).map(|()| 0),
        Command::Shutdown(args) => ops::shutdown(ctx, args),
        Command::ShutdownRequest(cmd) => shutdown_request::run(ctx, cmd),
        Command::Interrupt(args) => interrupt::run(ctx, args),
        Command::Kill { name } => ops::kill(ctx, &name).map(|()| 0),
        Command::Trust(args) => trust::run(ctx, args).map(|()| 0),
        Command::Logs { name, follow } => logs::logs(ctx, &name, follow).map(|()| 0),
        Command::PaneExec { spec } => succeed(crate::backend::pane_exec::successor(&spec)?),
        Command::SandboxExec(args) => {
            let inner = !args.execs_onward();
            let next = crate::launch::sandbox::successor(args)?;
            if inner && !next.is_this_swarm() {
                // Its parent, so the agent's last words reach the pane (`last_words`).
                return crate::process::last_words::parent_of(next);
            }
            succeed(next)
        }
        Command::Relay(cmd) => relay::run(ctx, cmd),
        #[cfg(feature = "seams")]
        Command::Debug(cmd) => debug::run(ctx, cmd),
    }
}

/// Becomes what a hidden step hands its process on to. swarm's own next command runs here, as
/// the exec of the binary would have run it (`process::successor`), where the environment the
/// kernel shows for the process (`/proc/PID/environ`, the one it was executed with) ends up
/// the same: when there is none to give, or when that command executes onward with it (the
/// sandbox's outer step becomes `bwrap`). A teammate's own environment must hold what it was
/// given from its start: swarm finds its spawn token there before it signals it. Anything else
/// is executed.
fn succeed(next: Successor) -> Result<i32> {
    if !next.is_this_swarm() {
        return Err(next.exec());
    }
    let cli = <Cli as clap::Parser>::try_parse_from(&next.argv).map_err(|e| {
        Error::usage(format!(
            "the command to become does not parse: {}",
            e.to_string().trim()
        ))
    })?;
    let execs_onward = matches!(&cli.command, Command::SandboxExec(args) if args.execs_onward());
    if !next.env.is_empty() && !execs_onward {
        return Err(next.exec());
    }
    next.enter_here()?;
    dispatch(cli)
}

/// The one-shot store commands, whose outcome says that a change they made is not confirmed
/// durable (exit 3, see `fsio::unconfirmed`). The rest say it on stderr as it happens: a
/// long-lived process goes on, and `permission request --wait` keeps its exit codes.
fn reports_unconfirmed(command: &Command) -> bool {
    match command {
        Command::Inbox(args) => !args.follow,
        Command::Team(_)
        | Command::Send(_)
        | Command::Task(_)
        | Command::Memory(_)
        | Command::Done(_) => true,
        _ => false,
    }
}

/// Parses a JSON argument, naming the flag in the error.
pub(crate) fn json_arg(flag: &str, text: &str) -> Result<serde_json::Value> {
    serde_json::from_str(text)
        .map_err(|e| Error::usage(format!("{flag} is not valid JSON ({e}): {text}")))
}

fn demo(ctx: &Context, args: crate::commands::cli::DemoArgs) -> Result<i32> {
    let team = match &ctx.team {
        Some(team) => team.clone(),
        None => "demo".parse()?,
    };
    let opts = crate::commands::demo::DemoOptions {
        backend: args.backend,
        timeout: std::time::Duration::from_secs(args.timeout),
        keep: args.keep,
        wait: (!args.no_wait).then(|| std::time::Duration::from_secs(args.wait)),
    };
    // With --json the progress goes to stderr and stdout carries one document.
    let say: fn(&str) = if ctx.json {
        |line| eprintln!("{line}")
    } else {
        |line| {
            let _ = crate::output::line(line);
        }
    };
    let report = crate::commands::demo::run(&ctx.store, &team, &opts, say)?;
    if ctx.json {
        crate::output::json(&report)?;
    } else {
        let mut by: std::collections::BTreeMap<&str, usize> = Default::default();
        for who in report.done_by.values() {
            *by.entry(who).or_default() += 1;
        }
        let by: Vec<String> = by.iter().map(|(w, n)| format!("{w} {n}")).collect();
        crate::output::line(format!(
            "\n{} tasks done in {:.1} s ({}), backend {}.",
            report.done_by.len(),
            report.elapsed,
            by.join(", "),
            report.backend
        ))?;
        if let Ok(text) = std::fs::read_to_string(&report.files.report) {
            crate::output::line(format!("The report the team wrote:\n{}", text.trim_end()))?;
        }
        crate::output::line("Everything the team said and did is plain JSON on disk:")?;
        crate::output::line(format!("  cat {}", report.files.lead_inbox.display()))?;
        crate::output::line(format!("  cat {}", report.files.config.display()))?;
        crate::output::line(format!("  ls {}", report.files.tasks.display()))?;
        crate::output::line(format!("  cat {}", report.files.report.display()))?;
        if !report.kept {
            crate::output::line(format!(
                "And to look at the team again:\n  swarm status {}",
                crate::backend::argv::team_flags(ctx.store.root(), team.as_str())
            ))?;
        }
        if report.kept {
            let root = crate::backend::shell_quote(&ctx.store.root().display().to_string());
            crate::output::line(format!(
                "The team keeps running until you take it down:\n  swarm attach --root {root} --team {team}\n  swarm status --root {root} --team {team}\n  swarm down --root {root} --team {team}"
            ))?;
        }
    }
    Ok(if report.completed && report.not_up.is_empty() {
        0
    } else {
        1
    })
}
