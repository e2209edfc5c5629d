//! `swarm up [FILE]` and `swarm restart NAME`: bringing teammates back.
//!
//! Both are launches (`commands::launch`) into a team that may exist already: a teammate on the
//! roster that is not running is started again from what the roster recorded at its first
//! launch (identity, colour, agent, directory, worktree and flags: `launch::prepare`), with its
//! inbox and the task list as they are. `up` leaves running teammates alone and seeds only the
//! file's tasks that are not in the list yet; `restart` first stops the one teammate through the
//! shutdown handshake. A launch from a swarm file records the file on the team's roster
//! (`launch::recorded::FILE_FIELD`), and `up` without one uses it.

use std::time::Duration;

use super::Context;
use crate::backend::{BackendChoice, BackendKind};
use crate::commands::cli::{LaunchArgs, RestartArgs};
use crate::error::{Error, Result};
use crate::launch::recorded::recorded_file;
use crate::launch::{IfRunning, LAUNCH_FIELD};
use crate::lifecycle::{self, ShutdownOptions, ShutdownResult};
use crate::output;
use crate::store::roster::{Member, Roster};

pub(crate) fn up(ctx: &Context, mut args: LaunchArgs) -> Result<i32> {
    if args.file.is_none() && args.teammate.is_empty() {
        let team = ctx.team().ok();
        let recorded = team
            .as_ref()
            .and_then(|team| recorded_file(&ctx.store, team));
        match (recorded, team) {
            (Some(file), _) => args.file = Some(file),
            (None, Some(team)) => {
                return Err(Error::usage(format!(
                    "swarm up needs a swarm file: team {team} was not launched from one; \
                     `swarm up FILE` (e.g. `swarm up examples/shell.json`)"
                )))
            }
            (None, None) => {
                return Err(Error::usage(
                    "swarm up needs a swarm file: `swarm up examples/shell.json`",
                ))
            }
        }
    }
    super::launch::run(ctx, args, IfRunning::Keep)
}

pub(crate) fn restart(ctx: &Context, args: RestartArgs) -> Result<i32> {
    let team = ctx.existing_team()?;
    crate::store::authority::require_lead(&ctx.store, &team, "restart teammates")?;
    let member = Roster::new(&ctx.store, &team).require_member(args.name.as_str())?;
    if member.is_lead() {
        return Err(Error::usage(
            "the lead is not restarted with `swarm restart`; name a teammate",
        ));
    }
    if !member.extra.contains_key(LAUNCH_FIELD) {
        return Err(Error::usage(format!(
            "{} was not started by `swarm launch` or `swarm up`, so swarm does not know how to \
             start it again",
            member.name
        )));
    }
    let name = member.name.clone();
    if lifecycle::member_running(&ctx.store, &team, &member) {
        let opts = ShutdownOptions {
            timeout: Duration::from_secs(args.timeout),
            force: args.force,
            reason: Some("restarting".into()),
            grace: None,
        };
        let outcome = lifecycle::shutdown(&ctx.store, &team, &[name], &opts)?
            .pop()
            .ok_or_else(|| Error::Backend("the shutdown reported nothing".into()))?;
        if !outcome.killed {
            let why = match &outcome.outcome {
                ShutdownResult::Rejected { reason } => {
                    format!("it rejected the shutdown ({reason})")
                }
                other => format!("it could not be stopped ({other})"),
            };
            output::line(format!(
                "{} was not restarted: {why}; `swarm restart --force {}` restarts it anyway",
                member.name, member.name
            ))?;
            return Ok(1);
        }
        if !ctx.json {
            output::line(format!("{}: stopped ({})", member.name, outcome.outcome))?;
        }
    }
    start_again(ctx, &member)
}

/// Starts a stopped teammate again as it was recorded (`swarm up` for that one member, on the
/// backend it ran on): `swarm restart` after the stop, and `swarm send --wake`.
pub(crate) fn start_again(ctx: &Context, member: &Member) -> Result<i32> {
    let backend = match member.backend_type.as_deref().and_then(BackendKind::parse) {
        Some(BackendKind::Tmux) => BackendChoice::Tmux,
        Some(BackendKind::Iterm2) => BackendChoice::Iterm2,
        Some(BackendKind::InProcess) => BackendChoice::InProcess,
        None => BackendChoice::Auto,
    };
    let args = LaunchArgs {
        teammate: vec![format!("{}=", member.name)],
        backend,
        no_lead_pane: true,
        ..LaunchArgs::empty()
    };
    super::launch::run(ctx, args, IfRunning::Keep)
}
