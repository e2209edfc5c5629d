//! The current team: which team a command acts on when the user did not say.
//!
//! In order: `--team`, `$SWARM_TEAM` (clap reads both into one value), the team whose tmux pane
//! this is (`$TMUX_PANE`, on the tmux server `$TMUX` names, carrying the
//! `@swarm-root/@swarm-team/@swarm-member` marks of this root, a team and one of its members:
//! the marks are set in the tmux call that makes the pane, so this holds even before the roster
//! records the pane's id), then the only team with a teammate really running
//! (`lifecycle::census`), then the only team there is (one whose teammates were all shut down is
//! still the user's team). Anything else is an error that names the running teams, so the user
//! can pick one with `--team`.

use std::path::PathBuf;
use std::sync::Arc;

use crate::backend::tmux::{PaneOwner, TmuxBackend, TmuxEnv, TmuxServer};
use crate::backend::PaneId;
use crate::error::{Error, Result};
use crate::lifecycle;
use crate::process::exec::SystemExec;
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
    match (running.as_slice(), teams.as_slice()) {
        ([one], _) | ([], [one]) => Ok(one.clone()),
        ([], []) => Err(Error::usage(format!(
            "no team given, and there are no teams under {}: {}",
            store.root().display(),
            super::demo::elsewhere(store, None).unwrap_or_else(|| {
                "pass --team NAME or set SWARM_TEAM (`swarm launch FILE` makes one)".into()
            })
        ))),
        ([], _) => Err(Error::usage(format!(
            "no team given, and no team under {} has a running teammate: pass --team NAME or \
             set SWARM_TEAM (teams: {})",
            store.root().display(),
            join(&teams)
        ))),
        (many, _) => Err(Error::usage(format!(
            "no team given, and {} teams are running ({}): pass --team NAME or set SWARM_TEAM",
            many.len(),
            join(many)
        ))),
    }
}

/// The team under `store` whose name is closest to `name`, when one is close enough to be a
/// typo of it (an edit or two, by length): what "did you mean" offers.
pub(crate) fn closest_team(store: &Store, name: &str) -> Option<TeamName> {
    let limit = (name.chars().count() / 3).max(1);
    list_teams(store)
        .ok()?
        .into_iter()
        .map(|t| (edit_distance(name, t.as_str()), t))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, t)| t)
}

/// Levenshtein distance: the fewest one-character insertions, deletions and substitutions.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

fn join(teams: &[TeamName]) -> String {
    teams
        .iter()
        .map(TeamName::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The team whose member's marks `$TMUX_PANE`, on the server `$TMUX` names, carries.
fn team_of_this_pane(store: &Store, teams: &[TeamName], env: &TmuxEnv) -> Option<TeamName> {
    let pane = PaneId(env.tmux_pane.clone()?);
    let socket = env.tmux.as_deref()?.split(',').next()?;
    for team in teams {
        let Ok(config) = Roster::new(store, team).load() else {
            continue;
        };
        let members: Vec<&str> = config.members.iter().map(|m| m.name.as_str()).collect();
        let backend = TmuxBackend::for_team(
            Arc::new(SystemExec),
            TmuxServer::Path(PathBuf::from(socket)),
            PaneOwner::new(store.root(), team.as_str()),
        );
        if backend.marked_member(&pane, &members).is_some() {
            return Some(team.clone());
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

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("helo", "hello"), 1);
        assert_eq!(edit_distance("hello", "hello"), 0);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
