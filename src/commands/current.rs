//! The current team: which team a command acts on when the user did not say.
//!
//! In order: `--team`, `$SWARM_TEAM` (clap reads both into one value), the team whose tmux pane
//! this is (`$TMUX_PANE` matched against every roster, and believed only when that pane, on the
//! tmux server `$TMUX` names, carries the member's `@swarm-root/@swarm-team/@swarm-member`
//! marks), then the only team with a teammate really running (`lifecycle::census`). Anything
//! else is an error that names the running teams, so the user can pick one with `--team`.

use crate::backend::tmux::{TmuxEnv, TmuxServer};
use crate::backend::{for_member, PaneState};
use crate::error::{Error, Result};
use crate::lifecycle;
use crate::store::names::TeamName;
use crate::store::paths::Store;
use crate::store::roster::{list_teams, Roster};

/// Resolves the team as the module doc says.
pub(crate) fn current_team(store: &Store, explicit: Option<&TeamName>) -> Result<TeamName> {
    if let Some(team) = explicit {
        return Ok(team.clone());
    }
    let teams = list_teams(store)?;
    if let Some(team) = team_of_this_pane(store, &teams, &TmuxEnv::from_process()) {
        return Ok(team);
    }
    let running = running_teams(store, &teams);
    match running.as_slice() {
        [one] => Ok(one.clone()),
        [] if teams.is_empty() => Err(Error::usage(format!(
            "no team given, and there are no teams under {}: pass --team NAME or set SWARM_TEAM \
             (`swarm launch FILE` makes one)",
            store.root().display()
        ))),
        [] => Err(Error::usage(format!(
            "no team given, and no team under {} has a running teammate: pass --team NAME or \
             set SWARM_TEAM (teams: {})",
            store.root().display(),
            join(&teams)
        ))),
        many => Err(Error::usage(format!(
            "no team given, and {} teams are running ({}): pass --team NAME or set SWARM_TEAM",
            many.len(),
            join(many)
        ))),
    }
}

fn join(teams: &[TeamName]) -> String {
    teams
        .iter()
        .map(TeamName::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The team one of whose members' panes is `$TMUX_PANE`, on the server `$TMUX` names, with the
/// member's marks on it.
fn team_of_this_pane(store: &Store, teams: &[TeamName], env: &TmuxEnv) -> Option<TeamName> {
    let pane = env.tmux_pane.as_deref()?;
    let socket = env.tmux.as_deref().and_then(|t| t.split(',').next());
    for team in teams {
        let Ok(config) = Roster::new(store, team).load() else {
            continue;
        };
        for m in config.members.iter().filter(|m| m.tmux_pane_id == pane) {
            let same_server = match (TmuxServer::for_member(m), socket) {
                (Some(TmuxServer::Path(p)), Some(s)) => p.as_os_str() == s,
                _ => false,
            };
            if !same_server {
                continue;
            }
            let owned = for_member(store, team, m)
                .and_then(|b| b.state().ok())
                .is_some_and(|s| s != PaneState::Gone && s != PaneState::Unknown);
            if owned {
                return Some(team.clone());
            }
        }
    }
    None
}

/// Teams with at least one teammate running.
pub(crate) fn running_teams(store: &Store, teams: &[TeamName]) -> Vec<TeamName> {
    teams
        .iter()
        .filter(|team| {
            Roster::new(store, team).load().is_ok_and(|config| {
                config
                    .teammates()
                    .any(|m| lifecycle::member_running(store, team, m))
            })
        })
        .cloned()
        .collect()
}
