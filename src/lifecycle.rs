//! The end of a teammate's life: is it alive, asking it to stop, killing it, and retiring it.
//!
//! These are the operations `swarm status`, `swarm shutdown`, `swarm kill`, the in-process
//! supervisor and the lead console share (PROTOCOL.md sections 7, 8 and 10): [`health`] judges
//! whether a member runs, [`state`] turns that, the retired mark and the task list into the one
//! state every view shows, and [`census`] counts a team by it; [`shutdown`] is the one shutdown
//! state machine and the command built on it, [`interrupt`] stops one running turn and keeps
//! the teammate, [`teardown`] closes a team's panes (each keeping
//! its last lines first: [`kept_output`]), [`orphans`] settles what a killed launch left,
//! [`retire`]
//! kills, retires and cleans up, [`worktree`] makes a teammate's git worktree at
//! launch and removes it (if unchanged) at retirement. Which backend runs a member is decided by
//! [`crate::backend::for_member`], never here.

pub(crate) mod census;
pub(crate) mod health;
pub(crate) mod interrupt;
pub(crate) mod kept_output;
pub(crate) mod orphans;
pub(crate) mod retire;
pub(crate) mod shutdown;
pub(crate) mod state;
pub(crate) mod teardown;
pub(crate) mod worktree;

pub(crate) use census::{census, member_running, Census};
pub(crate) use health::{
    claude_led_notice, ended, lead_health, member_health, stopped_teammate, Health,
};
pub(crate) use interrupt::{interrupt, InterruptOptions};
pub(crate) use orphans::reconcile;
pub(crate) use retire::{
    finish_team_worktrees, finish_worktree, kill_member, kill_run, mark_retired, rejoin,
    release_and_tell, retire_member, Killed,
};
pub(crate) use shutdown::{
    grace_within, send_shutdown_request, shutdown, Replies, ShutdownOptions, ShutdownOutcome,
    ShutdownResult, Stopping,
};
pub(crate) use state::{current_task, judge, member_state, MemberState};
pub(crate) use teardown::close_team_panes;
