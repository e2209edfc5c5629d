//! Whether a member is alive: its liveness lock and its pane or process, taken together.
//!
//! A member is judged dead when its liveness lock can be taken (the runtime holding it is gone)
//! or its pane is dead; either alone can lag (a pane kept by remain-on-exit, a lock not yet
//! released), so `swarm status`, `swarm shutdown` and the lead console all ask here. It is alive
//! when its runtime holds its lock or its pane or recorded process runs, and otherwise
//! unknown: a pane on a tmux server nobody recorded (a Claude Code lead's rosters never say), a
//! member with no pid, is never called dead, so nothing acts on a guess. The roster's `isActive`
//! plays no part: to Claude Code it means busy, and it is `false` whenever a teammate is idle.
//!
//! A team a Claude Code lead made records its lead process in `leadProcess`; [`lead_health`]
//! judges it the way Claude does: same pid space (`<hostname>#<pid namespace>`), the pid
//! running, and started at the recorded `procStart`.

use serde::Serialize;

use crate::backend::{for_member, BackendKind, PaneState};
use crate::error::Result;
use crate::process::pid::PidRecord;
use crate::store::liveness::{self, Liveness};
use crate::store::names::TeamName;
use crate::store::paths::Store;
use crate::store::roster::{LeadProcess, Member};

/// The one answer to "does it run?".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Alive,
    Dead,
    /// Nothing swarm can look at says either way.
    Unknown,
}

/// How a member is doing, from its liveness lock and its pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Health {
    pub liveness: Liveness,
    pub pane: PaneState,
    /// The liveness lock is free, or the pane is dead or gone.
    pub dead: bool,
    pub verdict: Verdict,
}

/// Liveness lock plus pane state; used by `swarm status` and the lead console.
pub fn member_health(store: &Store, team: &TeamName, member: &Member) -> Result<Health> {
    let liveness = liveness::probe(store, team, &member.name)?;
    let pane = match for_member(store, team, member) {
        Some(backend) => backend.state()?,
        None => PaneState::Unknown,
    };
    let dead = liveness == Liveness::Dead || pane.is_dead();
    let verdict = if dead {
        Verdict::Dead
    } else if liveness == Liveness::Alive || matches!(pane, PaneState::Alive { .. }) {
        Verdict::Alive
    } else {
        Verdict::Unknown
    };
    Ok(Health {
        liveness,
        pane,
        dead,
        verdict,
    })
}

/// Whether swarm can positively identify what runs `member`, so stopping it stops that and
/// nothing else: a tmux pane on the server recorded for it (the backend then checks the pane's
/// marks), or a recorded pid. A tmux pane id with no server (Claude Code's rosters never say
/// which) and an in-process member without a pid (Claude Code's own) are not; a member with no
/// pane at all has nothing to stop.
pub fn identifiable(store: &Store, team: &TeamName, member: &Member) -> bool {
    match for_member(store, team, member) {
        None => true,
        Some(b) => match b.kind() {
            BackendKind::Tmux => b.tmux().is_some(),
            BackendKind::InProcess => PidRecord::of_member(member).is_some(),
            BackendKind::Iterm2 => true,
        },
    }
}

/// A Claude Code lead's process, as far as this machine can tell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeadHealth {
    pub pid: u32,
    pub verdict: Verdict,
    /// Why, in a few words ("start time matches", "another pid space: host#pid:[1]").
    pub why: String,
}

/// Judges a recorded `leadProcess`: its pid is only looked at in the pid space it was recorded
/// in, and only believed while the process there started when the record says.
pub fn lead_health(lead: &LeadProcess) -> LeadHealth {
    let (verdict, why) = if lead.pid_space != pid_space() {
        (
            Verdict::Unknown,
            format!("recorded in another pid space ({})", lead.pid_space),
        )
    } else {
        let start = lead.proc_start.as_deref().and_then(|s| s.parse().ok());
        let record = PidRecord {
            pid: lead.pid,
            start,
        };
        match (record.alive(), start) {
            (true, Some(_)) => (Verdict::Alive, "its start time matches".to_string()),
            (true, None) => (Verdict::Alive, "no start time to check".into()),
            (false, _) => (Verdict::Dead, "that process is gone".into()),
        }
    };
    LeadHealth {
        pid: lead.pid,
        verdict,
        why,
    }
}

/// Why swarm cannot lead `team`, a team a Claude Code lead made, and what works instead: one
/// sentence for `swarm status` and the commands that refuse.
pub fn claude_led_notice(team: &TeamName) -> String {
    format!(
        "team {team} is led by Claude Code: swarm has no lead key for it, and its teammates \
         refuse lead-side control messages swarm signs (shutdown requests, permission and plan \
         answers); what works: `swarm send`, `swarm task`, and `swarm shutdown --force NAME` \
         for a teammate whose pane swarm can identify"
    )
}

/// This process's pid space as Claude Code names it: the host name, then `#` and the pid
/// namespace link (`pid:[4026531836]`) where there is one.
fn pid_space() -> String {
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    match std::fs::read_link("/proc/self/ns/pid") {
        Ok(ns) => format!("{host}#{}", ns.display()),
        Err(_) => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lead_process_is_believed_only_in_its_pid_space_and_with_its_start_time() {
        let me = std::process::id();
        let start = crate::process::pid::start_time(me).map(|t| t.to_string());
        let lead = |pid, pid_space: String, proc_start: Option<String>| LeadProcess {
            pid,
            pid_space,
            claimed_at: 0,
            proc_start,
        };
        let here = lead(me, pid_space(), start.clone());
        assert_eq!(lead_health(&here).verdict, Verdict::Alive);
        let recycled = lead(me, pid_space(), Some("1".into()));
        assert_eq!(lead_health(&recycled).verdict, Verdict::Dead);
        let elsewhere = lead(me, "other-host#pid:[1]".into(), start);
        assert_eq!(lead_health(&elsewhere).verdict, Verdict::Unknown);
    }
}
