//! `swarm prune`: cleaning up after teams that stopped without saying so.
//!
//! Across every team under the root (or only the teams named, when some are), a teammate whose
//! state (`lifecycle::state`) is dead (not running, by its pane, process and liveness lock, and
//! not retired), or stopped but still owning an unfinished task, is retired: marked inactive,
//! its tasks back to pending, the lead told. Teams
//! named on the command line, and with `--older-than` teams with nothing running whose files
//! have not changed for that long, are deleted with their tasks (and their leftover panes
//! closed, their unchanged git worktrees removed and the changed ones kept and named). Panes
//! marked as a team of this root whose directory is gone (looked for on the servers this shell
//! would launch on) are closed too, and what a launch killed half way left is settled first
//! (`lifecycle::orphans`). The plan is printed and confirmed first unless `--yes`; answering no
//! does nothing (exit 0); without a terminal to ask on, and without `--yes`, nothing is done
//! (exit 2).

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::json;

use super::Context;
use crate::backend::tmux::MarkedPane;
use crate::commands::cli::PruneArgs;
use crate::error::{Error, Result};
use crate::lifecycle::{self, MemberState};
use crate::output;
use crate::store::names::{AgentName, TeamName};
use crate::store::roster::{list_teams, Roster};
use crate::store::tasks::TaskList;

/// What prune will do.
#[derive(Debug, Default)]
struct Plan {
    /// (team, teammate) pairs to retire.
    retire: Vec<(TeamName, AgentName)>,
    /// Teams to delete, each with why.
    delete: Vec<(TeamName, String)>,
    /// Panes of teams whose directory is gone: team, server, panes.
    orphans: Vec<(String, PathBuf, Vec<MarkedPane>)>,
}

pub(crate) fn prune(ctx: &Context, args: PruneArgs) -> Result<i32> {
    let all_teams = list_teams(&ctx.store)?;
    // The teams this prune may touch (the named ones, else all) are each the lead's to prune:
    // checked before anything is settled, retired or deleted.
    let teams: Vec<TeamName> = all_teams
        .iter()
        .filter(|t| args.teams.is_empty() || args.teams.contains(t))
        .cloned()
        .collect();
    for team in &teams {
        crate::store::authority::require_lead(&ctx.store, team, "prune teams")?;
    }
    let mut plan = Plan {
        orphans: lifecycle::teardown::panes_of_deleted_teams(
            &ctx.store,
            &all_teams,
            &lifecycle::teardown::servers_here(),
        ),
        ..Plan::default()
    };
    for named in &args.teams {
        if !all_teams.contains(named) && !plan.orphans.iter().any(|(t, _, _)| t == named.as_str()) {
            return Err(Error::NoSuchTeam {
                team: named.to_string(),
                root: ctx.store.root().to_path_buf(),
                hint: String::new(),
            });
        }
    }
    for team in &teams {
        // What a killed launch left is part of what there is to prune.
        if Roster::new(&ctx.store, team).load().is_ok() {
            super::launch::settle_killed_launch(ctx, team)?;
        }
        let config = match Roster::new(&ctx.store, team).load() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("swarm: warning: skipping team {team}: {e}");
                continue;
            }
        };
        let census = lifecycle::census(&ctx.store, team, &config);
        let named = args.teams.contains(team);
        if named && census.running > 0 {
            return Err(Error::usage(format!(
                "team {team} has {} running; `swarm down --team {team}` stops it first",
                super::team::plural(census.running, "teammate")
            )));
        }
        let age = idle_for(&ctx.store.team_dir(team), &ctx.store.tasks_dir(team));
        let old = args
            .older_than
            .is_some_and(|limit| census.running == 0 && age >= limit);
        if named || old {
            let why = if named {
                "named".to_string()
            } else {
                format!("nothing running, unchanged for {}", human(age))
            };
            plan.delete.push((team.clone(), why));
            continue;
        }
        // Teams named on the command line say which teams to touch.
        if !args.teams.is_empty() {
            continue;
        }
        let tasks = TaskList::new(&ctx.store, team).list().unwrap_or_default();
        for m in config.teammates() {
            // Dead (not running, not retired), or stopped but still owning work; never one
            // whose state nobody can tell.
            let state = lifecycle::member_state(&ctx.store, team, &config, m, &tasks);
            let owns_work = tasks.iter().any(|t| t.unfinished_by(m.name.as_str()));
            let retire = match state {
                MemberState::Dead(_) => true,
                MemberState::Stopped(_) => owns_work,
                _ => false,
            };
            if retire {
                plan.retire.push((team.clone(), m.name.clone()));
            }
        }
    }
    // A deleted team's panes have no key to check; a teammate's environment is still refused.
    for (team, _, _) in &plan.orphans {
        if let Ok(team) = team.parse::<TeamName>() {
            crate::store::authority::require_lead(&ctx.store, &team, "prune teams")?;
        }
    }
    if plan.retire.is_empty() && plan.delete.is_empty() && plan.orphans.is_empty() {
        if ctx.json {
            output::json(&json!({"retired": [], "deleted": [], "closed": []}))?;
        } else {
            output::line("nothing to prune")?;
        }
        return Ok(0);
    }
    let mut said = Vec::new();
    for (team, name) in &plan.retire {
        said.push(format!(
            "mark {name} of team {team} inactive (not running) and return its tasks"
        ));
    }
    for (team, why) in &plan.delete {
        said.push(format!("delete team {team} and its tasks ({why})"));
    }
    for (team, socket, panes) in &plan.orphans {
        said.push(format!(
            "close {} of team {team}, whose files are gone (tmux server {})",
            super::team::plural(panes.len(), "pane"),
            socket.display()
        ));
    }
    if !args.yes && !confirm(&said)? {
        output::line("nothing pruned")?;
        return Ok(0);
    }
    let mut retired = Vec::new();
    for (team, name) in &plan.retire {
        let released = lifecycle::retire_member(
            &ctx.store,
            team,
            name,
            "swarm prune found it was no longer running",
        )?;
        retired.push(json!({"team": team.as_str(), "name": name, "released": released}));
    }
    let mut deleted = Vec::new();
    let mut worktrees = Vec::new();
    for (team, _) in &plan.delete {
        let roster = Roster::new(&ctx.store, team);
        let config = roster.load()?;
        // Dead panes kept by remain-on-exit would outlive the team otherwise.
        if let Err(e) = lifecycle::close_team_panes(&ctx.store, team, &config) {
            eprintln!("swarm: warning: team {team}: could not close its panes: {e}");
        }
        roster.delete(true)?;
        crate::store::lead_key::LeadKey::forget(&ctx.store, team)?;
        crate::process::spawn_record::forget_team(&ctx.store, team)?;
        worktrees.extend(lifecycle::finish_team_worktrees(&config));
        deleted.push(team.to_string());
    }
    let mut closed = Vec::new();
    for (team, socket, panes) in &plan.orphans {
        let n = lifecycle::teardown::close_marked(&ctx.store, team, socket, panes);
        closed.push(json!({"team": team, "server": socket, "closedPanes": n}));
    }
    if ctx.json {
        output::json(
            &json!({"retired": retired, "deleted": deleted, "worktrees": worktrees,
            "closed": closed}),
        )?;
    } else {
        for line in &said {
            output::line(format!("done: {line}"))?;
        }
        for line in &worktrees {
            output::line(line)?;
        }
    }
    Ok(0)
}

/// Asks on the terminal whether to go ahead; refuses (exit 2, nothing done) when there is none
/// to ask on.
fn confirm(plan: &[String]) -> Result<bool> {
    let listed = plan.join("; ");
    if !std::io::stdin().is_terminal() {
        return Err(Error::usage(format!(
            "swarm prune would {listed}; standard input is not a terminal, so it cannot ask: \
             pass --yes to go ahead"
        )));
    }
    let mut err = std::io::stderr().lock();
    for line in plan {
        let _ = writeln!(err, "swarm prune will {line}");
    }
    let _ = write!(err, "Go ahead? [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(Error::io("read", "standard input"))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// How long since anything under the team's directories changed.
fn idle_for(team_dir: &Path, tasks_dir: &Path) -> Duration {
    let mut newest = SystemTime::UNIX_EPOCH;
    let mut stack = vec![team_dir.to_path_buf(), tasks_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(meta) = e.metadata() else { continue };
            if let Ok(modified) = meta.modified() {
                newest = newest.max(modified);
            }
            if meta.is_dir() {
                stack.push(e.path());
            }
        }
    }
    SystemTime::now()
        .duration_since(newest)
        .unwrap_or(Duration::ZERO)
}

fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        7200..=172_799 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86_400),
    }
}
