//! A launch killed half way: its panes found by their marks on the server it recorded, then
//! adopted or closed.
//!
//! A launch writes its intent into the roster before it calls tmux: the write that reserves its
//! members gives each one (and the lead, when a console pane is to open) the tmux server
//! (`swarmTmuxSocket`) and [`OPENING_FIELD`], the launcher's pid and start time; the write that
//! records the pane ids takes [`OPENING_FIELD`] away. A member that still carries it while that
//! launcher is gone was being opened when the launcher died, and whatever tmux made for it is
//! on the recorded server with the member's `@swarm-*` marks (every pane has them from the call
//! that made it). [`reconcile`] settles such a team before `up`, `down` and `prune` act on it:
//! a member's live marked pane is adopted (its id recorded), a member that never got one is
//! retired (so `up` starts it and `down` sends it no shutdown request), and every other
//! marked pane of the team (a second pane of one member, a pane of no member on the roster) is
//! closed. Members whose launcher is still running are left to it; a launch that waits for its
//! teammates to come up (`launch::verify`) keeps their intent on record until it has judged
//! them, so the lead console leaves a teammate that dies at once for the launch to report. Panes are only ever looked
//! for on servers the roster names, and only panes whose marks name this root and team are
//! touched.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Value};

use crate::backend::tmux::{MarkedPane, PaneOwner, TmuxBackend, TmuxServer};
use crate::backend::SystemExec;
use crate::error::Result;
use crate::process::pid::PidRecord;
use crate::store::names::TeamName;
use crate::store::paths::Store;
use crate::store::roster::{Member, Roster};

/// Roster field (swarm-only) of a member a launch is opening: `{"pid": N, "pidStart": T}` of
/// the launcher.
pub(crate) const OPENING_FIELD: &str = "swarmOpening";

/// Marks `member` as being opened by this process.
pub(crate) fn mark_opening(member: &mut Member) {
    let me = PidRecord::of(std::process::id());
    member.extra.insert(
        OPENING_FIELD.into(),
        json!({"pid": me.pid, "pidStart": me.start}),
    );
}

/// The launch of `member` is over (its pane recorded, or rolled back).
pub(crate) fn clear_opening(member: &mut Member) {
    member.extra.remove(OPENING_FIELD);
}

/// The launcher that is opening `member`, if a launch is.
fn opening(member: &Member) -> Option<PidRecord> {
    let o = member.extra.get(OPENING_FIELD)?;
    let pid = u32::try_from(o.get("pid")?.as_u64()?).ok()?;
    let start = o.get("pidStart").and_then(Value::as_u64);
    Some(PidRecord { pid, start })
}

/// A launch that is still running is opening `member` (or still waiting for it to come up,
/// `launch::verify`): leave it to that launch. The lead console does not reap such a member, so
/// the launch sees its pane, exit status and last output before anything closes them.
pub(crate) fn being_opened(member: &Member) -> bool {
    opening(member).is_some_and(|launcher| launcher.alive())
}

/// This process's launch of `names` is over, pane recorded and verified: their intent goes.
pub(crate) fn finish_opening(store: &Store, team: &TeamName, names: &[&str]) -> Result<()> {
    let me = std::process::id();
    let mine =
        |m: &Member| names.contains(&m.name.as_str()) && opening(m).is_some_and(|l| l.pid == me);
    if !Roster::new(store, team).load()?.members.iter().any(mine) {
        return Ok(());
    }
    Roster::new(store, team).update(|c| {
        for m in c.members.iter_mut().filter(|m| mine(m)) {
            clear_opening(m);
        }
        Ok(())
    })
}

/// What [`reconcile`] did.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Reconciled {
    /// Members whose pane was found by its marks and recorded: (name, pane).
    pub adopted: Vec<(String, String)>,
    /// Teammates a killed launch reserved that never got a pane: now marked not running.
    pub never_started: Vec<String>,
    /// Marked panes of the team that no member has, closed.
    pub closed: usize,
}

/// Settles what a killed launch left of `team`: see the module doc.
pub(crate) fn reconcile(store: &Store, team: &TeamName) -> Result<Reconciled> {
    let roster = Roster::new(store, team);
    let config = roster.load()?;
    let stale = |m: &Member| opening(m).is_some() && !being_opened(m);
    let servers: BTreeSet<PathBuf> = config.members.iter().filter_map(socket_of).collect();
    let owner = PaneOwner::new(store.root(), team.as_str());
    let mut listed: Vec<(PathBuf, TmuxBackend, Vec<MarkedPane>)> = Vec::new();
    for socket in servers {
        let b = TmuxBackend::for_team(
            Arc::new(SystemExec),
            TmuxServer::Path(socket.clone()),
            owner.clone(),
        );
        match b.team_panes() {
            Ok(panes) => listed.push((socket, b, panes)),
            Err(e) => eprintln!(
                "swarm: warning: could not list the panes of tmux server {}: {e}",
                socket.display()
            ),
        }
    }
    let mut done = Reconciled::default();
    let mut close: Vec<(usize, MarkedPane)> = Vec::new();
    for (i, (socket, _, panes)) in listed.iter().enumerate() {
        for pane in panes {
            let Some(m) = config.member(&pane.member) else {
                // Marked for a member the roster does not have (a launch rolled back after
                // tmux made it, or a team deleted and made again).
                close.push((i, pane.clone()));
                continue;
            };
            if being_opened(m) {
                continue;
            }
            if socket_of(m).as_ref() != Some(socket) {
                // The member now runs on another server; this is what an earlier run left.
                close.push((i, pane.clone()));
            }
        }
    }
    for m in &config.members {
        let Some(socket) = socket_of(m) else {
            continue;
        };
        if being_opened(m) {
            continue;
        }
        let Some(i) = listed.iter().position(|(s, _, _)| *s == socket) else {
            continue;
        };
        let mine: Vec<&MarkedPane> = listed[i].2.iter().filter(|p| p.member == m.name).collect();
        let recorded = mine.iter().find(|p| p.id.as_str() == m.tmux_pane_id);
        // A live pane wins: the recorded one, else any; then the recorded dead one, else any.
        let keep = recorded
            .filter(|p| !p.dead)
            .or_else(|| mine.iter().find(|p| !p.dead))
            .or(recorded)
            .or_else(|| mine.first())
            .copied();
        for p in &mine {
            if Some(*p) != keep {
                close.push((i, (*p).clone()));
            }
        }
        match keep {
            Some(p) if p.id.as_str() != m.tmux_pane_id => {
                done.adopted.push((m.name.to_string(), p.id.to_string()));
            }
            None if stale(m) && m.tmux_pane_id.is_empty() && !m.is_lead() => {
                done.never_started.push(m.name.to_string());
            }
            _ => {}
        }
    }
    if config.members.iter().any(stale) || !done.adopted.is_empty() {
        roster.update(|c| {
            for m in c.members.iter_mut() {
                if let Some((_, pane)) = done.adopted.iter().find(|(n, _)| *n == m.name) {
                    m.tmux_pane_id.clone_from(pane);
                }
                if done.never_started.iter().any(|n| m.name.as_str() == n) {
                    // Retired, as a teammate that stopped is: `down` does not ask it to stop
                    // (the request would wait unread for its first runtime), `up` starts it.
                    m.retire();
                }
                if opening(m).is_some() && !being_opened(m) {
                    clear_opening(m);
                }
            }
            Ok(())
        })?;
    }
    for (i, pane) in &close {
        if listed[*i].1.close_marked(pane) {
            done.closed += 1;
        }
    }
    Ok(done)
}

/// The tmux server recorded for `member`, as a socket path.
fn socket_of(member: &Member) -> Option<PathBuf> {
    match TmuxServer::for_member(member)? {
        TmuxServer::Path(p) => Some(p),
        _ => None,
    }
}
