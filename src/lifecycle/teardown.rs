//! Closing what a team left on screen: its tmux panes, and with them the window or session.
//!
//! After every teammate is stopped (the shutdown handshake), `swarm down` and `swarm prune`
//! close the rest: the lead console's pane and any pane kept by remain-on-exit. Only panes whose
//! `@swarm-root/@swarm-team` marks name this root and team are closed, on each tmux server the
//! roster recorded for a member, so a window or session swarm made goes away with its last pane
//! and one a user split their own panes into stays.
//!
//! A team whose directory was deleted has no roster to name a server, so its panes are looked
//! for by their marks on the servers this shell would launch on ([`servers_here`]): the one
//! `SWARM_TMUX_SOCKET` or `$TMUX` names, and tmux's default.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::backend::tmux::{MarkedPane, PaneOwner, TmuxBackend, TmuxEnv, TmuxServer};
use crate::backend::{PaneState, SystemExec};
use crate::error::Result;
use crate::process::pid::PidRecord;
use crate::process::spawn_record;
use crate::store::names::TeamName;
use crate::store::names::LEAD;
use crate::store::paths::Store;
use crate::store::roster::{Member, TeamConfig};

/// Kills every pane of `team` on the servers its roster names, keeping each member's last lines
/// first; returns how many.
pub(crate) fn close_team_panes(
    store: &Store,
    team: &TeamName,
    config: &TeamConfig,
) -> Result<usize> {
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
    let console = config
        .member(LEAD)
        .filter(|m| m.tmux_pane_id.starts_with('%'))
        .and_then(|lead| lead_console(store, team, lead));
    let mut closed = 0;
    for socket in servers {
        closed += team_backend(store, team.as_str(), socket).kill_team_panes()?;
    }
    if let Some(console) = console {
        wait_for_lead_console(console);
    }
    Ok(closed)
}

/// The lead console swarm started for `team` in a tmux pane: the process swarm's own record
/// names ([`spawn_record::signal_target`]), else the one running in the lead's marked pane. A
/// launch killed before it recorded its spawns leaves no record, and its console, adopted by
/// `down` (`lifecycle::orphans`), still reads the teammates' approvals. Only waited for, never
/// signalled, so the pane's word is enough here.
fn lead_console(store: &Store, team: &TeamName, lead: &Member) -> Option<PidRecord> {
    if let Ok(console) = spawn_record::signal_target(store, team, LEAD) {
        return Some(console);
    }
    // A pane on a server swarm recorded, with the lead's marks: one swarm opened and closes
    // now, never a Claude Code lead's own pane, which stays open and must not be waited for.
    let pane = crate::backend::for_member(store, team, lead).filter(|b| b.tmux().is_some())?;
    match pane.state() {
        Ok(PaneState::Alive { pid: Some(pid) }) => Some(PidRecord::of(pid)),
        _ => None,
    }
}

/// How long `down` waits for the lead console to end once its pane is closed.
const CONSOLE_EXIT: Duration = Duration::from_secs(10);

/// Waits, bounded, until the lead console has exited once its pane is closed. Its pane's SIGHUP
/// ends it only after the pass it is in, and a pass can be seconds of retiring the teammates
/// whose approvals it is reading: an `up` right after `down` raced it, and the old console
/// closed the panes of teammates just started again.
fn wait_for_lead_console(console: PidRecord) {
    let until = Instant::now() + CONSOLE_EXIT;
    while console.alive() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The servers a launch from this shell would use: the one the environment names, then tmux's
/// default; as socket paths.
pub(crate) fn servers_here() -> Vec<PathBuf> {
    let env = TmuxEnv::from_process();
    let plain = TmuxEnv {
        tmux: None,
        tmux_pane: None,
        socket: None,
        tmpdir: env.tmpdir.clone(),
    };
    let mut servers = vec![PathBuf::from(env.expected_socket())];
    let default = PathBuf::from(plain.expected_socket());
    if !servers.contains(&default) {
        servers.push(default);
    }
    servers
}

/// Panes marked as this root's on `servers` whose team has no roster (its directory was
/// deleted), by team and server; `known` are the teams that still have one.
pub(crate) fn panes_of_deleted_teams(
    store: &Store,
    known: &[TeamName],
    servers: &[PathBuf],
) -> Vec<(String, PathBuf, Vec<MarkedPane>)> {
    let mut found: Vec<(String, PathBuf, Vec<MarkedPane>)> = Vec::new();
    for socket in servers {
        // Any team name will do: the listing is of the whole root.
        let b = team_backend(store, "", socket.clone());
        let Ok(panes) = b.root_panes() else {
            continue;
        };
        for (team, pane) in panes {
            if known.iter().any(|k| k.as_str() == team) {
                continue;
            }
            match found.iter_mut().find(|(t, s, _)| *t == team && s == socket) {
                Some((_, _, list)) => list.push(pane),
                None => found.push((team, socket.clone(), vec![pane])),
            }
        }
    }
    found
}

/// Closes `panes` of `team` on `socket` (listed by [`panes_of_deleted_teams`]); returns how
/// many went.
pub(crate) fn close_marked(
    store: &Store,
    team: &str,
    socket: &std::path::Path,
    panes: &[MarkedPane],
) -> usize {
    let b = team_backend(store, team, socket.to_path_buf());
    panes.iter().filter(|p| b.close_marked(p)).count()
}

fn team_backend(store: &Store, team: &str, socket: PathBuf) -> TmuxBackend {
    TmuxBackend::for_team(
        Arc::new(SystemExec),
        TmuxServer::Path(socket),
        PaneOwner::new(store.root(), team),
    )
}
