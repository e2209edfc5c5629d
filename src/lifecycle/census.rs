//! Who in a team is really running, counted: [`census`] counts a team's teammates by their
//! [`MemberState`] (running, of them idle or busy; stopped; dead, meaning not running though
//! nobody retired it; unknown), for `team list`, `prune`, the current-team lookup and `swarm up`,
//! so they all agree with each other and with `swarm status`. [`member_running`] is the yes or
//! no of the same judgement for callers that only need that.

use serde::Serialize;

use super::health::member_health;
use super::state::{member_state, MemberState};
use crate::store::names::TeamName;
use crate::store::paths::Store;
use crate::store::roster::{Member, TeamConfig};
use crate::store::tasks::TaskList;

/// Whether `member` of `team` runs now; a member whose state cannot be read does not.
pub(crate) fn member_running(store: &Store, team: &TeamName, member: &Member) -> bool {
    member_health(store, team, member).is_ok_and(|h| h.runs.running())
}

/// One team's teammates counted by state.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Census {
    pub teammates: usize,
    pub running: usize,
    pub idle: usize,
    pub busy: usize,
    /// Not running and retired: shut down, killed or reaped.
    pub stopped: usize,
    /// Not running but not retired: crashed, or its pane or server went away unseen (what
    /// `swarm prune` retires).
    pub dead: usize,
    /// Neither running nor dead as far as swarm can see (see [`MemberState::Unknown`]): never
    /// counted as dead, never pruned.
    pub unknown: usize,
}

/// Counts the team's teammates by state.
pub(crate) fn census(store: &Store, team: &TeamName, config: &TeamConfig) -> Census {
    let tasks = TaskList::new(store, team).list().unwrap_or_default();
    let mut c = Census::default();
    for m in config.teammates() {
        c.teammates += 1;
        match member_state(store, team, config, m, &tasks) {
            MemberState::Busy(_) => {
                c.running += 1;
                c.busy += 1;
            }
            MemberState::Idle => {
                c.running += 1;
                c.idle += 1;
            }
            MemberState::Stopped(_) => c.stopped += 1,
            MemberState::Dead(_) => c.dead += 1,
            MemberState::Unknown(_) => c.unknown += 1,
        }
    }
    c
}
