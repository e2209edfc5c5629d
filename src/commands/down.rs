//! `swarm down`: the whole team stopped and its screen closed, its files kept.
//!
//! Every teammate that runs (or is still marked active) gets the shutdown handshake
//! (`lifecycle::shutdown`); then the lead console's pane and every other pane marked as this
//! team's are closed (`lifecycle::teardown`), which closes the tmux window or session swarm made
//! for it. The roster, inboxes and tasks stay, so `swarm up` brings the team back (from the swarm
//! file it was launched from, recorded on its roster). A teammate that rejects the request
//! (without `--force`) keeps the team up: nothing is closed under it.
//!
//! What a launch killed half way left is settled first (`lifecycle::orphans`): its panes are
//! found by their marks on the server it recorded, so they close with the rest. A team whose
//! directory is gone has no roster to name its panes; they are found by their marks on the
//! servers this shell would launch on, and closed.

use serde_json::json;

use super::Context;
use crate::commands::cli::DownArgs;
use crate::error::{Error, Result};
use crate::lifecycle::{self, ShutdownOptions};
use crate::output;
use crate::store::names::{AgentName, TeamName};
use crate::store::roster::Roster;

pub(crate) fn down(ctx: &Context, args: DownArgs) -> Result<i32> {
    // A busy teammate finishes its turn within the grace, as `swarm shutdown` gives it.
    let reason = Some("the team is going down".into());
    let opts = ShutdownOptions::from_flags(args.timeout, args.grace, args.force, reason)?;
    let team = ctx.team()?;
    crate::store::authority::require_lead(&ctx.store, &team, "take the team down")?;
    let roster = Roster::new(&ctx.store, &team);
    if !roster.exists() {
        return down_deleted(ctx, &team);
    }
    super::launch::settle_killed_launch(ctx, &team)?;
    let config = roster.load()?;
    let names: Vec<AgentName> = config
        .teammates()
        .filter(|m| !m.retired() || lifecycle::member_running(&ctx.store, &team, m))
        .map(|m| m.name.clone())
        .collect();
    let outcomes = if names.is_empty() {
        Vec::new()
    } else {
        lifecycle::shutdown(&ctx.store, &team, &names, &opts)?
    };
    let still_up: Vec<&str> = outcomes
        .iter()
        .filter(|o| !o.killed && !o.retired)
        .map(|o| o.name.as_str())
        .collect();
    let closed = if still_up.is_empty() {
        let config = roster.load()?;
        // Nobody is left on the team's other hosts: their links go too.
        crate::remote::member::stop_links(&ctx.store, &team, &config.members);
        lifecycle::close_team_panes(&ctx.store, &team, &config)?
    } else {
        0
    };
    if ctx.json {
        output::json(&json!({
            "team": team.as_str(),
            "stopped": outcomes,
            "closedPanes": closed,
            "stillRunning": still_up,
        }))?;
    } else {
        for o in &outcomes {
            output::line(super::ops::describe_outcome(o, opts.timeout.as_secs()))?;
            if let Some(wt) = &o.worktree {
                output::line(format!("  {wt}"))?;
            }
        }
        if !still_up.is_empty() {
            output::line(format!(
                "team {team} is not down: {} still running, so its panes stay open; \
                 `swarm down --team {team} --force` stops them anyway",
                still_up.join(", ")
            ))?;
            return Ok(1);
        }
        let up = match crate::launch::recorded::recorded_file(&ctx.store, &team) {
            Some(_) => format!(
                "swarm up {}",
                crate::backend::argv::team_flags(ctx.store.root(), team.as_str())
            ),
            None => "swarm up FILE".into(),
        };
        output::line(format!(
            "team {team} is down: {} closed; its files stay under {} (`{up}` brings it back)",
            super::team::plural(closed, "pane"),
            ctx.store.team_dir(&team).display()
        ))?;
    }
    Ok(if still_up.is_empty() { 0 } else { 1 })
}

/// `down` of a team with no roster: its panes, found by their marks, are closed; with none
/// found it is the usual "no such team".
fn down_deleted(ctx: &Context, team: &TeamName) -> Result<i32> {
    let found = lifecycle::teardown::panes_of_deleted_teams(
        &ctx.store,
        &[],
        &lifecycle::teardown::servers_here(),
    );
    let mine: Vec<_> = found
        .into_iter()
        .filter(|(t, _, _)| t == team.as_str())
        .collect();
    if mine.is_empty() {
        return Err(Error::NoSuchTeam {
            team: team.to_string(),
            root: ctx.store.root().to_path_buf(),
            hint: String::new(),
        });
    }
    let mut closed = 0;
    for (_, socket, panes) in &mine {
        closed += lifecycle::teardown::close_marked(&ctx.store, team.as_str(), socket, panes);
    }
    if ctx.json {
        output::json(&json!({
            "team": team.as_str(),
            "stopped": [],
            "closedPanes": closed,
            "stillRunning": [],
            "deleted": true,
        }))?;
    } else {
        output::line(format!(
            "team {team} has no files under {} (its directory was deleted); closed {} marked as its own",
            ctx.store.root().display(),
            super::team::plural(closed, "pane"),
        ))?;
    }
    Ok(0)
}
