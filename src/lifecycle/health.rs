//! Whether a member is alive: its liveness lock and its pane or process, taken together.
//!
//! A member is judged dead when its liveness lock can be taken (the runtime holding it is gone)
//! or its pane is dead; either alone can lag (a pane kept by remain-on-exit, a lock not yet
//! released), so `swarm status`, `swarm shutdown` and the lead console all ask here.

use serde::Serialize;

use crate::backend::{for_member, PaneState};
use crate::error::Result;
use crate::store::liveness::{self, Liveness};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::roster::Member;

/// How a member is doing, from its liveness lock and its pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Health {
    pub liveness: Liveness,
    pub pane: PaneState,
    /// The liveness lock is free, or the pane is dead or gone.
    pub dead: bool,
}

/// Liveness lock plus pane state; used by `swarm status` and the lead console.
pub fn member_health(store: &Store, team: &TeamName, member: &Member) -> Result<Health> {
    let name: AgentName = member.name.parse()?;
    let liveness = liveness::probe(store, team, &name)?;
    let pane = match for_member(store, team, member) {
        Some(backend) => backend.state()?,
        None => PaneState::Unknown,
    };
    let dead = liveness == Liveness::Dead || pane.is_dead();
    Ok(Health {
        liveness,
        pane,
        dead,
    })
}
