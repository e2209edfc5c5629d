//! `swarm shutdown-request show|reject`: a teammate's side of a shutdown (PROTOCOL.md section
//! 7d), run by its agent inside a turn.
//!
//! The runtime holds a shutdown request that meets a running turn and writes it down
//! (`store::shutdown_ask`); `show` prints it (the lead's reason, when the turn is stopped), so
//! an agent can wrap up or decide, and `reject` writes the agent's refusal, which the runtime
//! turns into `shutdown_rejected` with the reason. Both act for `$SWARM_AGENT_NAME`, which a
//! teammate's shell has, and `reject` only with the turn's `$SWARM_TURN_TOKEN`; the lead is
//! never asked to shut down.

use serde_json::json;

use super::Context;
use crate::commands::cli::ShutdownRequestCommand;
use crate::error::{Error, Result};
use crate::output;
use crate::store::fsio::now_ms;
use crate::store::names::{AgentName, TeamName};
use crate::store::roster::Roster;
use crate::store::shutdown_ask::{Asked, ShutdownAsk, TURN_TOKEN_VAR};

pub(crate) fn run(ctx: &Context, cmd: ShutdownRequestCommand) -> Result<i32> {
    let team = ctx.existing_team()?;
    match cmd {
        ShutdownRequestCommand::Show { from } => show(ctx, &team, &from),
        ShutdownRequestCommand::Reject { reason, from } => reject(ctx, &team, &from, &reason),
    }
}

/// The teammate's request files, once `from` is known to be one of the team's teammates.
fn ask_of(ctx: &Context, team: &TeamName, from: &AgentName) -> Result<ShutdownAsk> {
    if from.is_lead() {
        return Err(Error::usage(
            "the lead is never asked to shut down; `swarm shutdown-request` is a teammate's \
             (run it where SWARM_AGENT_NAME names one, or pass --from NAME)",
        ));
    }
    Roster::new(&ctx.store, team).require_member(from.as_str())?;
    Ok(ShutdownAsk::new(&ctx.store, team, from))
}

fn show(ctx: &Context, team: &TeamName, from: &AgentName) -> Result<i32> {
    let asked = ask_of(ctx, team, from)?.asked()?;
    if ctx.json {
        output::json(&json!({"name": from.as_str(), "waiting": asked}))?;
    } else {
        output::line(match &asked {
            Some(a) => describe(a, from),
            None => format!("no shutdown request is waiting for {from}"),
        })?;
    }
    Ok(if asked.is_some() { 0 } else { 1 })
}

fn reject(ctx: &Context, team: &TeamName, from: &AgentName, reason: &str) -> Result<i32> {
    let ask = ask_of(ctx, team, from)?;
    // Only the running turn may refuse: its token is in its environment and nowhere else.
    let token = std::env::var(TURN_TOKEN_VAR)
        .ok()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            Error::usage(format!(
                "only {from}'s running turn may refuse its shutdown: run this from its agent \
                 (whose environment has {TURN_TOKEN_VAR}); nothing was written"
            ))
        })?;
    // Read first: the runtime answers the moment the refusal lands, and clears the request.
    let asked = ask.asked()?;
    ask.refuse(reason, &token)?;
    let reason = reason.trim();
    if ctx.json {
        output::json(&json!({
            "name": from.as_str(),
            "reason": reason,
            "requestId": asked.as_ref().map(|a| a.request_id.as_str()),
        }))?;
    } else {
        output::line(match &asked {
            Some(a) => format!(
                "refused {}'s shutdown request {} ({reason}); {from}'s runtime answers it and \
                 goes on",
                a.from, a.request_id
            ),
            None => format!(
                "no shutdown request is waiting for {from}; one that comes before this turn ends \
                 is refused ({reason})"
            ),
        })?;
    }
    Ok(0)
}

/// `team-lead asked coder to shut down: new branch (request ...); ...`
fn describe(a: &Asked, from: &AgentName) -> String {
    let reason = a
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    let left = a.grace_ends_at.saturating_sub(now_ms()).div_ceil(1000);
    format!(
        "{} asked {from} to shut down{reason} (request {}); the running turn may finish first, \
         and is stopped in {left} s unless it ends sooner or is refused (`swarm shutdown-request \
         reject REASON`)",
        a.from, a.request_id
    )
}
