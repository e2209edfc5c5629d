//! `swarm team create|list|show|add|remove|delete`: rosters from the command line.
//!
//! A team is its `config.json`; these commands create and read it, and add or remove members
//! by hand (a removed member's unfinished tasks go back to pending, its liveness lock and mailbox
//! go) for teammates swarm did not launch. A removal is first recorded, signed by the lead
//! (`lead/removed/`): that record, not the missing entry, is what makes the member's runtime
//! leave. A forced delete first stops whatever still runs.
//! Any member can write `config.json`, so what it says is printed with control characters made
//! visible.

use std::time::Duration;

use serde_json::json;

use super::Context;
use crate::commands::cli::TeamCommand;
use crate::error::{Error, Result};
use crate::lifecycle::{self, Census, ShutdownOptions, ShutdownOutcome, ShutdownResult};
use crate::output;
use crate::output::terminal::visible;
use crate::store::authority;
use crate::store::colour::Colour;
use crate::store::liveness::{self, Liveness};
use crate::store::names::{AgentName, TeamName};
use crate::store::roster::removal::{self, Removal};
use crate::store::roster::{self, Member, Roster, TeamConfig};
use crate::store::tasks::TaskList;

pub(crate) fn run(ctx: &Context, cmd: TeamCommand) -> Result<()> {
    match cmd {
        TeamCommand::Create { name, description } => {
            let team = pick_explicit(ctx, name, "create")?;
            let cwd = std::env::current_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let config = Roster::new(&ctx.store, &team).create(
                &description,
                &cwd,
                &uuid::Uuid::new_v4().to_string(),
            )?;
            // Made now, so the team's first lead message is already signed, and published, so
            // only a process holding this key acts as the team's lead.
            if let Some(key) = crate::store::lead_key::LeadKey::for_caller(&ctx.store, &team)? {
                authority::publish(&ctx.store, &team, &key)?;
            }
            if ctx.json {
                output::json(&config)
            } else {
                output::line(format!(
                    "created team {team} at {}",
                    ctx.store.team_dir(&team).display()
                ))
            }
        }
        TeamCommand::List => {
            let mut rows = Vec::new();
            for team in roster::list_teams(&ctx.store)? {
                match Roster::new(&ctx.store, &team).load() {
                    Ok(c) => rows.push(c),
                    Err(e) => eprintln!("swarm: warning: skipping team {team}: {e}"),
                }
            }
            let summaries: Vec<_> = rows.iter().map(|c| summary(ctx, c)).collect();
            if ctx.json {
                return output::json(&summaries);
            }
            if rows.is_empty() {
                let elsewhere = super::demo::elsewhere(&ctx.store, None)
                    .map(|h| format!("; {h}"))
                    .unwrap_or_default();
                return output::line(format!(
                    "no teams under {}{elsewhere}",
                    ctx.store.root().display()
                ));
            }
            for (c, s) in rows.iter().zip(&summaries) {
                output::line(format!(
                    "{:<24} {}  {}",
                    visible(&c.name),
                    describe_census(&s.census),
                    visible(&c.description)
                ))?;
            }
            Ok(())
        }
        TeamCommand::Show { name } => {
            let team = pick(ctx, name)?;
            let config = Roster::new(&ctx.store, &team).load()?;
            if ctx.json {
                return output::json(&config);
            }
            output::line(format!(
                "team {}  {}",
                visible(&config.name),
                visible(&config.description)
            ))?;
            let tasks = TaskList::new(&ctx.store, &team).list().unwrap_or_default();
            for m in &config.members {
                // The word every view uses (`lifecycle::state`), not the roster's `isActive`.
                let state = lifecycle::member_state(&ctx.store, &team, &config, m, &tasks).word();
                output::line(format!(
                    "  {:<20} {:<8} {:<9} {:<10} pane {}",
                    visible(m.name.as_str()),
                    visible(m.color_or_default()),
                    state,
                    visible(m.backend_type.as_deref().unwrap_or("-")),
                    if m.tmux_pane_id.is_empty() {
                        "-".into()
                    } else {
                        visible(&m.tmux_pane_id)
                    }
                ))?;
            }
            Ok(())
        }
        TeamCommand::Add {
            name: who,
            color,
            agent_type,
        } => {
            let team = ctx.existing_team()?;
            // The roster stays flat: teammates do not add teammates.
            authority::require_lead(&ctx.store, &team, "add a member")?;
            let roster = Roster::new(&ctx.store, &team);
            let color = match color {
                Some(c) if Colour::named(&c).is_some() => c,
                Some(c) => {
                    return Err(Error::usage(format!(
                        "unknown colour {c:?}; use one of {}",
                        Colour::names().join(", ")
                    )))
                }
                None => roster.load()?.next_color().to_string(),
            };
            let cwd = std::env::current_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let mut member = Member::teammate(&team, &who, &color, &cwd);
            member.agent_type = agent_type;
            member.is_active = Some(true);
            roster.add_member(member.clone())?;
            if ctx.json {
                output::json(&member)
            } else {
                output::line(format!("added {who} ({color}) to team {team}"))
            }
        }
        TeamCommand::Remove { name: who } => {
            let team = ctx.existing_team()?;
            authority::require_lead(&ctx.store, &team, "remove a member")?;
            record_removal(ctx, &team, &who)?;
            Roster::new(&ctx.store, &team).remove_member(&who)?;
            let released = TaskList::new(&ctx.store, &team).release_agent(who.as_str())?;
            clear_what_was_left(ctx, &team, &who)?;
            if ctx.json {
                output::json(&json!({"removed": who.as_str(), "released": released}))
            } else {
                output::line(format!("removed {who} from team {team}"))
            }
        }
        TeamCommand::Delete { name, force } => {
            let team = pick_explicit(ctx, name, "delete")?;
            authority::require_lead(&ctx.store, &team, "delete the team")?;
            let roster = Roster::new(&ctx.store, &team);
            let stopped = if force {
                stop_everyone(ctx, &team)?
            } else {
                Vec::new()
            };
            // Read before the delete: the roster records the worktrees.
            let config = roster.load()?;
            roster.delete(force)?;
            crate::store::lead_key::LeadKey::forget(&ctx.store, &team)?;
            crate::process::spawn_record::forget_team(&ctx.store, &team)?;
            let worktrees = lifecycle::finish_team_worktrees(&config);
            if ctx.json {
                output::json(&json!({"deleted": team.as_str(), "stopped": stopped,
                                     "worktrees": worktrees}))
            } else {
                for o in &stopped {
                    if o.killed || o.retired {
                        output::line(format!("stopped {} ({})", o.name, o.outcome))?;
                    } else {
                        output::line(super::ops::describe_outcome(
                            o,
                            DELETE_SHUTDOWN_TIMEOUT.as_secs(),
                        ))?;
                    }
                }
                for line in &worktrees {
                    output::line(line)?;
                }
                output::line(format!("deleted team {team}"))
            }
        }
    }
}

/// How long `team delete --force` waits for teammates to answer the shutdown request before it
/// kills them.
const DELETE_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// Before a forced delete: the shutdown handshake with every teammate still running, then a
/// kill, so no runtime outlives its team (and joins a later team of the same name).
fn stop_everyone(ctx: &Context, team: &TeamName) -> Result<Vec<ShutdownOutcome>> {
    let config = Roster::new(&ctx.store, team).load()?;
    let names: Vec<AgentName> = config.teammates().map(|m| m.name.clone()).collect();
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let opts = ShutdownOptions {
        timeout: DELETE_SHUTDOWN_TIMEOUT,
        force: true,
        reason: Some("the team is being deleted".into()),
        grace: None,
    };
    let outcomes = lifecycle::shutdown(&ctx.store, team, &names, &opts)?;
    Ok(outcomes
        .into_iter()
        .filter(|o| o.outcome != ShutdownResult::NotRunning)
        .collect())
}

/// Before `team remove` takes `who` off the roster: the lead's signed record that it ends that
/// membership, which is what makes `who`'s runtime leave (a roster entry gone proves nothing:
/// any member can edit the file). The lead's own entry is refused by the removal itself.
fn record_removal(ctx: &Context, team: &TeamName, who: &AgentName) -> Result<()> {
    let config = Roster::new(&ctx.store, team).load()?;
    let Some(member) = config.member(who.as_str()).filter(|m| !m.is_lead()) else {
        return Ok(());
    };
    let key = crate::store::lead_key::LeadKey::for_caller(&ctx.store, team)?.ok_or_else(|| {
        Error::usage("refusing to remove a member: this process cannot use the team lead's key")
    })?;
    removal::record(&ctx.store, team, &key, &Removal::of(&config, member))
}

/// After `team remove`: the member's liveness lock and mailbox, so a member added later under
/// the same name starts clean. A lock left by a runtime that is gone would make the lead judge
/// the new member dead before its runtime starts; an old shutdown request in the inbox would
/// make an old approval count for the new member. A lock still held is left alone: that runtime
/// sees it is off the roster and stops.
fn clear_what_was_left(ctx: &Context, team: &TeamName, who: &AgentName) -> Result<()> {
    let store = &ctx.store;
    let mut leftovers = vec![store.inbox_path(team, who), store.archive_path(team, who)];
    if liveness::probe(store, team, who)? == Liveness::Alive {
        eprintln!("swarm: warning: {who}'s runtime is still running; it stops now that {who} is off the roster");
    } else {
        leftovers.push(store.alive_path(team, who));
    }
    for path in leftovers {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("remove", &path)(e)),
        }
    }
    Ok(())
}

/// The team to show: the one named, else the current team.
fn pick(ctx: &Context, name: Option<TeamName>) -> Result<TeamName> {
    match name {
        Some(n) => Ok(n),
        None => ctx.team(),
    }
}

/// The team to create or delete: named, or given by --team / $SWARM_TEAM; never guessed.
fn pick_explicit(ctx: &Context, name: Option<TeamName>, verb: &str) -> Result<TeamName> {
    name.or_else(|| ctx.team.clone()).ok_or_else(|| {
        Error::usage(format!(
            "name the team to {verb}: swarm team {verb} NAME (or pass --team)"
        ))
    })
}

/// A team as `team list` shows it: its teammates counted by what really runs.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    name: String,
    description: String,
    created_at: u64,
    #[serde(flatten)]
    census: Census,
}

fn summary(ctx: &Context, c: &TeamConfig) -> Summary {
    let census = match c.name.parse::<TeamName>() {
        Ok(team) => lifecycle::census(&ctx.store, &team, c),
        Err(_) => Census::default(),
    };
    Summary {
        name: c.name.clone(),
        description: c.description.clone(),
        created_at: c.created_at,
        census,
    }
}

/// `3 teammates: 2 running (1 idle, 1 busy), 1 stopped`.
pub(crate) fn describe_census(c: &Census) -> String {
    let mut s = format!("{}: ", plural(c.teammates, "teammate"));
    if c.running > 0 {
        s.push_str(&format!(
            "{} running ({} idle, {} busy)",
            c.running, c.idle, c.busy
        ));
    } else {
        s.push_str("none running");
    }
    if c.stopped > 0 {
        s.push_str(&format!(", {} stopped", c.stopped));
    }
    if c.dead > 0 {
        s.push_str(&format!(
            ", {} dead (`swarm prune` retires {})",
            c.dead,
            if c.dead == 1 { "it" } else { "them" }
        ));
    }
    s
}

/// `1 teammate`, `2 teammates`.
pub(crate) fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}
