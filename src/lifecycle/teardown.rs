//! Closing what a team left on screen: its tmux panes, and with them the window or session.
//!
//! After every teammate is stopped (the shutdown handshake), `swarm down` and `swarm prune`
//! close the rest: the lead console's pane and any pane kept by remain-on-exit. Only panes whose
//! `@swarm-root/@swarm-team` marks name this root and team are closed, on each tmux server the
//! roster recorded for a member, so a window or session swarm made goes away with its last pane
//! and one a user split their own panes into stays.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use crate::backend::tmux::{PaneOwner, TmuxBackend, TmuxServer};
use crate::backend::SystemExec;
use crate::error::Result;
use crate::store::names::TeamName;
use crate::store::paths::Store;
use crate::store::roster::TeamConfig;

/// Kills every pane of `team` on the servers its roster names, keeping each member's last lines
/// first; returns how many.
pub fn close_team_panes(store: &Store, team: &TeamName, config: &TeamConfig) -> Result<usize> {
    let servers: BTreeSet<PathBuf> = config
        .members
        .iter()
        .filter_map(TmuxServer::for_member)
        .filter_map(|s| match s {
            TmuxServer::Path(p) => Some(p),
            _ => None,
        })
        .collect();
    for member in &config.members {
        if let Some(backend) = crate::backend::for_member(store, team, member) {
            super::retire::keep_output(store, team, member, &backend);
        }
    }
    let mut closed = 0;
    for socket in servers {
        let backend = TmuxBackend::for_team(
            Arc::new(SystemExec),
            TmuxServer::Path(socket),
            PaneOwner::new(store.root(), team.as_str()),
        );
        closed += backend.kill_team_panes()?;
    }
    Ok(closed)
}
