//! Who in a team is really running, judged from panes, pids and liveness locks.
//!
//! The roster's `isActive` flag says what the last writer believed (and Claude Code uses it for
//! "busy"), so it cannot answer "is this teammate running?". [`running`] answers from
//! [`member_health`] alone: the liveness lock is held or the pane or recorded process is alive,
//! and nothing says it died. [`census`] counts a team that way (running, of them idle or busy;
//! stopped; and dead, meaning not running though nobody retired it), for `team list`, `prune`, the current-team lookup and `swarm up`, so they all agree.

use serde::Serialize;

use super::health::{member_health, Health, Verdict};
use crate::store::names::TeamName;
use crate::store::paths::Store;
use crate::store::roster::{Member, TeamConfig};
use crate::store::tasks::{Task, TaskList, TaskStatus};

/// Whether a member with this health runs: something positively alive, nothing dead.
pub fn running(health: &Health) -> bool {
    health.verdict == Verdict::Alive
}

/// Whether `member` of `team` runs now; a member whose state cannot be read does not.
pub fn member_running(store: &Store, team: &TeamName, member: &Member) -> bool {
    member_health(store, team, member).is_ok_and(|h| running(&h))
}

/// A teammate as the census sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    /// Running and working on a task it owns.
    Busy,
    /// Running with no task in progress.
    Idle,
    /// Not running (stopped cleanly, crashed, or its pane or tmux server is gone).
    Dead,
    /// Nothing swarm can look at says (a pane on a tmux server the roster does not name, as in
    /// teams a Claude Code lead made): never counted as dead, never pruned.
    Unknown,
}

/// One team's teammates counted by presence.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Census {
    pub teammates: usize,
    pub running: usize,
    pub idle: usize,
    pub busy: usize,
    /// Not running and marked inactive: shut down, killed or retired.
    pub stopped: usize,
    /// Not running but still marked active: crashed, or its pane or server went away unseen
    /// (what `swarm prune` retires).
    pub dead: usize,
    /// Neither running nor dead as far as swarm can see (see [`Presence::Unknown`]).
    pub unknown: usize,
}

/// The presence of one teammate, given the team's tasks: busy is a task in progress it owns.
pub fn presence(store: &Store, team: &TeamName, member: &Member, tasks: &[Task]) -> Presence {
    match member_health(store, team, member).map(|h| h.verdict) {
        Ok(Verdict::Alive) => {}
        Ok(Verdict::Unknown) => return Presence::Unknown,
        Ok(Verdict::Dead) | Err(_) => return Presence::Dead,
    }
    let busy = tasks.iter().any(|t| {
        t.status == TaskStatus::InProgress && t.owner.as_deref() == Some(member.name.as_str())
    });
    if busy {
        Presence::Busy
    } else {
        Presence::Idle
    }
}

/// Counts the team's teammates by presence.
pub fn census(store: &Store, team: &TeamName, config: &TeamConfig) -> Census {
    let tasks = TaskList::new(store, team).list().unwrap_or_default();
    let mut c = Census::default();
    for m in config.teammates() {
        c.teammates += 1;
        match presence(store, team, m, &tasks) {
            Presence::Busy => {
                c.running += 1;
                c.busy += 1;
            }
            Presence::Idle => {
                c.running += 1;
                c.idle += 1;
            }
            Presence::Unknown => c.unknown += 1,
            Presence::Dead if m.retired() => c.stopped += 1,
            Presence::Dead => c.dead += 1,
        }
    }
    c
}
