//! Whether a member runs ([`Runs`]): its liveness lock and its pane or process, taken together
//! into one verdict, with how its run ended or why nobody can tell.
//!
//! A member is judged dead when its liveness lock can be taken (the runtime holding it is gone;
//! unless the lock's record names another process than the live pane runs: a runtime starting
//! there) or its pane is dead (but not a pane merely gone while the lock is held and the process
//! swarm recorded starting runs: the roster's pane id was edited); either alone can lag (a pane kept by remain-on-exit, a lock not yet
//! released), so `swarm status`, `swarm shutdown` and the lead console all ask here. It is alive
//! when its runtime holds its lock or its pane or recorded process runs, and otherwise
//! unknown: a pane on a tmux server nobody recorded (a Claude Code lead's rosters never say)
//! that no pane of swarm's server is found to run, a member with no pid, is never called dead,
//! so nothing acts on a guess. The roster's `isActive`
//! plays no part: to Claude Code it means busy, and it is `false` whenever a teammate is idle.
//!
//! A team a Claude Code lead made records its lead process in `leadProcess`; [`lead_health`]
//! judges it the way Claude does: same pid space (`<hostname>#<pid namespace>`), the pid
//! running, and started at the recorded `procStart`.

use std::fmt;

use serde::Serialize;

use crate::backend::{for_member, BackendKind, MemberBackend, PaneState};
use crate::error::Result;
use crate::process::pid::PidRecord;
use crate::process::spawn_record;
use crate::store::liveness::{self, Liveness};
use crate::store::names::TeamName;
use crate::store::paths::Store;
use crate::store::roster::{LeadProcess, Member};

/// The one answer to "does it run?", with what it rests on when the answer is not yes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Runs {
    Yes,
    /// Its run ended, and this says how.
    No(Ended),
    /// Nothing swarm can look at says either way, for this reason.
    Unknown(Unsure),
}

impl Runs {
    pub(crate) fn running(&self) -> bool {
        *self == Runs::Yes
    }

    /// Whether something positively says it does not run (never a guess).
    pub(crate) fn ended(&self) -> bool {
        matches!(self, Runs::No(_))
    }
}

/// How a member's run ended, as far as its pane, pid and lock tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Its pane's process exited with this code (the pane kept by remain-on-exit).
    Exit(i32),
    /// Its pane's process was killed by this signal.
    Signal(i32),
    /// Its pane is gone (closed, or its tmux server went away).
    PaneGone,
    /// Its recorded process is gone, or its pane's process ended without a status.
    ProcessGone,
    /// Its runtime let go of its liveness lock (exited) while its pane or process looks alive.
    RuntimeGone,
}

impl fmt::Display for Ended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ended::Exit(code) => write!(f, "exit {code}"),
            Ended::Signal(signal) => write!(f, "signal {signal}"),
            Ended::PaneGone => f.write_str("pane gone"),
            Ended::ProcessGone => f.write_str("process gone"),
            Ended::RuntimeGone => f.write_str("runtime gone"),
        }
    }
}

/// Why nothing says whether a member runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unsure {
    /// No pane, pid or liveness lock to look at: never started by swarm (`team add`), not
    /// started yet, or a lead working from a shell.
    NoPane,
    /// A tmux pane on a server the roster does not name (Claude Code's rosters never say).
    NoServer,
    /// An in-process or iTerm2 member with no pid swarm recorded.
    NoPid,
    /// A Claude Code lead process recorded in another pid space (another host or namespace).
    OtherPidSpace(String),
    /// A teammate a Claude Code lead runs inside its own process: only the lead runs.
    InsideLead,
    /// Looking failed; the error, shortened.
    Unreadable(String),
}

impl fmt::Display for Unsure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unsure::NoPane => f.write_str("no pane"),
            Unsure::NoServer => f.write_str("no tmux server recorded"),
            Unsure::NoPid => f.write_str("no pid recorded"),
            Unsure::OtherPidSpace(space) => write!(f, "recorded in another pid space ({space})"),
            Unsure::InsideLead => f.write_str("inside the lead"),
            Unsure::Unreadable(e) => f.write_str(e),
        }
    }
}

/// What a member's liveness lock and pane say, and the verdict they add up to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Health {
    pub liveness: Liveness,
    pub pane: PaneState,
    pub runs: Runs,
}

/// Liveness lock plus pane state, judged: dead when the lock can be taken or the pane is dead,
/// alive when the lock is held or the pane or process runs, otherwise unknown (and why).
pub(crate) fn member_health(store: &Store, team: &TeamName, member: &Member) -> Result<Health> {
    let liveness = liveness::probe(store, team, &member.name)?;
    let backend = for_member(store, team, member);
    let pane = match &backend {
        Some(backend) => backend.state()?,
        None => PaneState::Unknown,
    };
    // A member on another host: what its host's link last heard, with its local pane.
    let (liveness, pane) =
        crate::remote::member::judge(store, team, member, pane).unwrap_or((liveness, pane));
    let in_tmux = backend
        .as_ref()
        .is_some_and(|b| b.kind() == BackendKind::Tmux);
    let runs = match (pane, liveness) {
        (PaneState::Dead { code, signal }, _) => Runs::No(match (code, signal) {
            (Some(code), _) => Ended::Exit(code),
            (None, Some(signal)) => Ended::Signal(signal),
            (None, None) => Ended::ProcessGone,
        }),
        // The roster's pane id names no pane of the member's, yet its runtime holds its lock and
        // the process swarm recorded starting for it (its own record, not the roster's) still
        // runs: the pane id was edited (any member can write the roster), and judged dead the
        // member would be retired, and stopped, by the lead console. After a real pane kill
        // that process goes in a moment.
        (PaneState::Gone, Liveness::Alive)
            if in_tmux
                && spawn_record::signal_target(store, team, member.name.as_str()).is_ok() =>
        {
            Runs::Yes
        }
        (PaneState::Gone, _) => Runs::No(Ended::PaneGone),
        (PaneState::InsideLead, _) => Runs::Unknown(Unsure::InsideLead),
        // A free lock whose record names another process than the one a tmux pane runs is an
        // earlier runtime's: the pane's own runtime (the same pid, swarm execs into it) is
        // starting, started again by `up` or slow on a loaded machine, and takes the lock in
        // a moment. Judged dead, the lead console would retire it and close its pane. (Only
        // for a pane tmux reports: an in-process member's pid comes from the roster, which a
        // teammate can forge.)
        (PaneState::Alive { pid: Some(pid) }, Liveness::Dead)
            if in_tmux
                && liveness::recorded_holder(store, team, &member.name)
                    .is_some_and(|h| h != pid) =>
        {
            Runs::Yes
        }
        (_, Liveness::Dead) => Runs::No(Ended::RuntimeGone),
        (PaneState::Alive { .. }, _) | (_, Liveness::Alive) => Runs::Yes,
        (PaneState::Unknown, Liveness::Unknown) => Runs::Unknown(unsure(backend.as_ref())),
    };
    Ok(Health {
        liveness,
        pane,
        runs,
    })
}

/// Whether `member` is known to have stopped running, its liveness lock asked first: a runtime
/// holding it runs, and that answer needs no tmux call (a pass of `swarm down` or the lead
/// console over 200 teammates made 200 of them, on every wake).
pub(crate) fn ended(store: &Store, team: &TeamName, member: &Member) -> Result<bool> {
    if liveness::probe(store, team, &member.name)? == Liveness::Alive {
        return Ok(false);
    }
    Ok(member_health(store, team, member)?.runs.ended())
}

/// How teammate `member` ended, when it is known not to run: a message to it waits unread
/// (`swarm send` and the lead console say so). Its liveness lock first: a running runtime holds
/// it, and that answer needs no tmux call. The lead, and a member nobody can judge (one run by
/// hand, a Claude Code lead's), say nothing.
pub(crate) fn stopped_teammate(store: &Store, team: &TeamName, member: &Member) -> Option<Ended> {
    if member.is_lead() || liveness::probe(store, team, &member.name).ok()? == Liveness::Alive {
        return None;
    }
    match member_health(store, team, member).ok()?.runs {
        Runs::No(ended) => Some(ended),
        _ => None,
    }
}

/// Why a member with neither a pane state nor a liveness lock cannot be judged.
fn unsure(backend: Option<&MemberBackend>) -> Unsure {
    match backend.map(|b| (b.kind(), b.tmux().is_some(), b.pane().is_some())) {
        Some((BackendKind::Tmux, false, true)) => Unsure::NoServer,
        Some((BackendKind::InProcess | BackendKind::Iterm2, ..)) => Unsure::NoPid,
        _ => Unsure::NoPane,
    }
}

/// Whether swarm can positively identify what runs `member`, so stopping it stops that and
/// nothing else ([`crate::backend::MemberBackend::identifiable`]): a tmux pane id with no
/// server whose process is not found and an in-process member without a pid (Claude Code's
/// own) are not; a member with no pane at all has nothing to stop.
pub(crate) fn identifiable(store: &Store, team: &TeamName, member: &Member) -> bool {
    for_member(store, team, member).is_none_or(|b| b.identifiable())
}

/// A Claude Code lead's process, as far as this machine can tell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct LeadHealth {
    pub pid: u32,
    #[serde(skip)]
    pub runs: Runs,
    /// Why, in a few words ("its start time matches", "recorded in another pid space (...)").
    pub why: String,
}

/// Judges a recorded `leadProcess`: its pid is only looked at in the pid space it was recorded
/// in, and only believed while the process there started when the record says.
pub(crate) fn lead_health(lead: &LeadProcess) -> LeadHealth {
    let (runs, why) = if lead.pid_space != pid_space() {
        let unsure = Unsure::OtherPidSpace(lead.pid_space.clone());
        let why = unsure.to_string();
        (Runs::Unknown(unsure), why)
    } else {
        let start = lead.proc_start.as_deref().and_then(|s| s.parse().ok());
        let record = PidRecord {
            pid: lead.pid,
            start,
        };
        match (record.alive(), start) {
            (true, Some(_)) => (Runs::Yes, "its start time matches".to_string()),
            (true, None) => (Runs::Yes, "no start time to check".into()),
            (false, _) => (Runs::No(Ended::ProcessGone), "that process is gone".into()),
        }
    };
    LeadHealth {
        pid: lead.pid,
        runs,
        why,
    }
}

/// Why swarm cannot lead `team`, a team a Claude Code lead made, and what works instead: one
/// sentence for `swarm status` and the commands that refuse.
pub(crate) fn claude_led_notice(team: &TeamName) -> String {
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
        assert_eq!(lead_health(&here).runs, Runs::Yes);
        let recycled = lead(me, pid_space(), Some("1".into()));
        assert_eq!(lead_health(&recycled).runs, Runs::No(Ended::ProcessGone));
        let elsewhere = lead(me, "other-host#pid:[1]".into(), start);
        assert!(matches!(
            lead_health(&elsewhere).runs,
            Runs::Unknown(Unsure::OtherPidSpace(_))
        ));
    }
}
