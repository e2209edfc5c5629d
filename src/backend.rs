//! Where a teammate runs: a tmux pane, an iTerm2 split, or a child process of the launcher.
//!
//! The launcher talks to one [`PaneBackend`] and never to tmux or iTerm2 directly, so the spawn
//! order (reserve, open, record, prompt, start) is written once. Every external program goes
//! through the [`Exec`] seam: tests swap in a recorder and assert the exact argv, and nothing
//! user-provided is ever pasted into a shell string. Detection follows PROTOCOL.md section 10.
//! For a member that is already running, [`for_member`] is the one place that decides which
//! backend runs it and how its pane or process is inspected and killed: a tmux pane only on the
//! server recorded for it and only while the pane's marks name the member's root, team and name;
//! a pane with no server recorded (a Claude Code lead's roster) only where its process says it
//! runs that member (`tmux/claude_pane.rs`).
//! Every pane starts through the `swarm pane-exec` trampoline ([`pane_exec`]). Backends know
//! panes and processes, not the protocol or the shutdown policy.

pub(crate) mod argv;
pub(crate) mod detect;
pub(crate) mod in_process;
pub(crate) mod iterm2;
pub(crate) mod pane;
pub(crate) mod pane_exec;
pub(crate) mod tmux;

pub(crate) use crate::process::exec::{Exec, SystemExec};
pub(crate) use argv::{absolute, display_argv, shell_quote};
pub(crate) use detect::{detect, BackendChoice, DetectEnv, Detected};
pub(crate) use pane::{
    BackendKind, Launch, PaneBackend, PaneId, PaneSpec, PaneState, IN_PROCESS_PANE_ID,
};

use std::sync::Arc;
use std::time::Duration;

use crate::error::Result;
use crate::process::group::{terminate_group, Refusal};
use crate::process::pid::{recorded_exit, PidRecord};
use crate::process::spawn_record::{self, Untrusted};
use crate::store::names::TeamName;
use crate::store::paths::Store;
use crate::store::roster::Member;
use iterm2::Iterm2Backend;
use tmux::{ClaudeMember, PaneOwner, TmuxBackend, TmuxEnv, TmuxServer};

/// Between SIGTERM and SIGKILL when killing a teammate's recorded process group.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(3);

/// A running member and the backend that runs it.
#[derive(Debug)]
pub(crate) struct MemberBackend<'a> {
    member: &'a Member,
    runner: Runner,
    /// Where swarm's own record of the member's process is looked up (`spawn_record`).
    store: Store,
    team: TeamName,
    /// Off once the caller found the recorded process untrusted: only its pane is closed.
    signals: bool,
    /// Set for a kill meant for one run (the one that approved its shutdown): only a process
    /// swarm recorded with this pid is signalled, never a later run's.
    run: Option<u32>,
}

#[derive(Debug)]
enum Runner {
    /// On the tmux server recorded for the member.
    Tmux(TmuxBackend),
    /// A tmux pane id with no server recorded, as a Claude Code lead writes it: the id names
    /// nothing swarm can trust, so the member is looked for by what runs in the panes of the
    /// server swarm is in; not found, its state is unknown and nothing is touched.
    Unrecorded(ClaudeMember),
    Iterm2(Iterm2Backend),
    InProcess,
}

/// The backend that runs `member` of `team` in `store`: its `backendType`, else guessed from the
/// pane id (a tmux `%N`, or `in-process`); `None` when swarm did not start it.
pub(crate) fn for_member<'a>(
    store: &Store,
    team: &TeamName,
    member: &'a Member,
) -> Option<MemberBackend<'a>> {
    let kind = member
        .backend_type
        .as_deref()
        .and_then(BackendKind::parse)
        .or_else(|| {
            if member.tmux_pane_id.starts_with('%') {
                Some(BackendKind::Tmux)
            } else {
                (member.tmux_pane_id == IN_PROCESS_PANE_ID).then_some(BackendKind::InProcess)
            }
        })?;
    let runner = match kind {
        BackendKind::Tmux => match TmuxServer::for_member(member) {
            Some(server) => Runner::Tmux(TmuxBackend::for_member(
                Arc::new(SystemExec),
                server,
                PaneOwner::new(store.root(), team.as_str()),
                PaneId(member.tmux_pane_id.clone()),
                member.name.as_str(),
            )),
            None => Runner::Unrecorded(ClaudeMember::new(
                store.root(),
                team.as_str(),
                member.name.as_str(),
            )),
        },
        BackendKind::Iterm2 => Runner::Iterm2(Iterm2Backend::for_ops(Arc::new(SystemExec))),
        BackendKind::InProcess => Runner::InProcess,
    };
    Some(MemberBackend {
        member,
        runner,
        store: store.clone(),
        team: team.clone(),
        signals: true,
        run: None,
    })
}

impl MemberBackend<'_> {
    pub(crate) fn kind(&self) -> BackendKind {
        match self.runner {
            Runner::Tmux(_) | Runner::Unrecorded(_) => BackendKind::Tmux,
            Runner::Iterm2(_) => BackendKind::Iterm2,
            Runner::InProcess => BackendKind::InProcess,
        }
    }

    /// This backend without signals: [`MemberBackend::kill`] then closes the member's pane and
    /// leaves every process alone.
    pub(crate) fn without_signals(mut self) -> Self {
        self.signals = false;
        self
    }

    /// This backend signalling only the run whose pid is `run`, when set.
    pub(crate) fn only_run(mut self, run: Option<u32>) -> Self {
        self.run = run;
        self
    }

    /// The tmux backend on the member's server, for what only tmux can do (attach, capture).
    pub(crate) fn tmux(&self) -> Option<&TmuxBackend> {
        match &self.runner {
            Runner::Tmux(b) => Some(b),
            _ => None,
        }
    }

    /// Whether swarm can positively identify what runs the member, so stopping it stops that
    /// and nothing else: a pane on its recorded server (whose marks the backend checks), a pane
    /// whose process is the member (a Claude Code lead's teammate), a recorded pid; iTerm2
    /// sessions are addressed by their own ids. A process counts only when swarm's own records
    /// say it started one for the member (`spawn_record`), never because the roster says so.
    pub(crate) fn identifiable(&self) -> bool {
        match &self.runner {
            Runner::Tmux(_) | Runner::Iterm2(_) => true,
            Runner::Unrecorded(m) => m
                .find(Arc::new(SystemExec), &TmuxEnv::from_process())
                .is_ok_and(|found| found.is_some()),
            Runner::InProcess => {
                spawn_record::load(&self.store, &self.team, self.member.name.as_str()).is_some()
            }
        }
    }

    /// The member's pane as recorded (`tmuxPaneId`); `None` when none was recorded.
    pub(crate) fn pane(&self) -> Option<PaneId> {
        let id = &self.member.tmux_pane_id;
        (!id.is_empty()).then(|| PaneId(id.clone()))
    }

    /// The state of the member's pane (tmux) or recorded process (in-process, iTerm2).
    pub(crate) fn state(&self) -> Result<PaneState> {
        match (&self.runner, self.pane()) {
            (Runner::Tmux(b), Some(pane)) => b.state(&pane),
            (Runner::Tmux(_), None) => Ok(PaneState::Unknown),
            (Runner::Unrecorded(m), _) => Ok(
                match m.find(Arc::new(SystemExec), &TmuxEnv::from_process())? {
                    Some(found) => PaneState::Alive {
                        pid: Some(found.pane_pid),
                    },
                    None => PaneState::Unknown,
                },
            ),
            (Runner::Iterm2(_), _) => Ok(pid_state(self.member)),
            (Runner::InProcess, _) => Ok(match pid_state(self.member) {
                PaneState::Unknown if self.member.tmux_pane_id == IN_PROCESS_PANE_ID => {
                    PaneState::InsideLead
                }
                state => state,
            }),
        }
    }

    /// Kills the member's pane and the process group swarm recorded starting for it (in its own
    /// records, not the roster's); already dead is fine. `true` when it signalled that process
    /// group while it still ran (beyond what closing the pane does).
    pub(crate) fn kill(&mut self) -> Result<bool> {
        let pane = self.pane();
        let mut signalled = false;
        if self.signals {
            if let Runner::Iterm2(_) | Runner::InProcess = self.runner {
                signalled = self.stop_recorded(None);
            }
        }
        match &mut self.runner {
            Runner::Tmux(b) => {
                let Some(pane) = pane else {
                    return Ok(self.signals && self.stop_recorded(None));
                };
                // The pane's process, when the pane is the member's (its marks name it): closing
                // the pane hangs that process up, which is all a kill ever did to it.
                let hung_up = match b.state(&pane)? {
                    PaneState::Alive { pid } => pid,
                    _ => None,
                };
                b.kill(&pane)?;
                // Any member can edit `tmuxPaneId` (pointing it at another's pane, which the
                // marks then leave alone), so the process swarm started for the member is
                // stopped too, unless the pane just closed was that very process.
                Ok(self.signals && self.stop_recorded(hung_up))
            }
            Runner::Unrecorded(m) => {
                if !m.kill(Arc::new(SystemExec), &TmuxEnv::from_process())? {
                    if let Some(p) = pane {
                        eprintln!(
                            "swarm: warning: not touching {}'s pane {p}: no tmux server was \
                             recorded for it and no pane on this one runs it",
                            self.member.name
                        );
                    }
                }
                Ok(false)
            }
            Runner::Iterm2(b) => pane.map_or(Ok(()), |p| b.kill(&p)).map(|()| signalled),
            Runner::InProcess => Ok(signalled),
        }
    }
    /// Stops the process group swarm recorded starting for the member, if its record still
    /// names that process (and the run this kill is for, when set); one swarm cannot trust is
    /// reported, never signalled. `hung_up` is the pid of the member's pane just closed: the
    /// recorded process when that is it, which the hangup ends (waiting here for it to go would
    /// cost every kill of a live pane the time it takes to exit). `true` when it signalled the
    /// group.
    fn stop_recorded(&self, hung_up: Option<u32>) -> bool {
        let member = self.member;
        // Before any look at the process: one hung up a moment ago is on its way out (its
        // environment may be gone already, which would read as another process). Read once:
        // what is judged is what is signalled.
        let recorded = spawn_record::load(&self.store, &self.team, member.name.as_str());
        let pid = recorded.as_ref().map(|r| r.pid);
        if hung_up.is_some() && hung_up == pid {
            return false;
        }
        if self
            .run
            .is_some_and(|run| pid.is_some_and(|pid| pid != run))
        {
            // Started again since the run this kill is for: that run's process is not this one.
            return false;
        }
        let record = match spawn_record::signal_target_of(recorded) {
            Ok(record) => record,
            Err(Untrusted::Group(Refusal::Gone)) => return false,
            // No record to go by: nothing to stop beyond the pane (closed, if it was the member's).
            Err(Untrusted::NotStarted)
                if hung_up.is_some() || PidRecord::of_member(member).is_none() =>
            {
                return false
            }
            Err(why) => {
                eprintln!(
                    "swarm: warning: not signalling any process of {}: {why}",
                    member.name
                );
                return false;
            }
        };
        match terminate_group(&record, KILL_GRACE) {
            Ok(()) => true,
            Err(Refusal::Gone) => false,
            Err(why) => {
                eprintln!(
                    "swarm: warning: not signalling {}'s process {}: {why}",
                    member.name, record.pid
                );
                false
            }
        }
    }
}

/// For a member no backend runs by the roster's account (`backendType` and `tmuxPaneId` are as
/// editable as the rest of it): the process group swarm recorded starting for it, if its record
/// still names a running process (the caller reports one it cannot trust). `true` when
/// signalled.
/// `run`, when set, is the only pid it may signal.
pub(crate) fn stop_recorded_group(
    store: &Store,
    team: &TeamName,
    member: &Member,
    run: Option<u32>,
) -> bool {
    let record = spawn_record::load(store, team, member.name.as_str())
        .filter(|r| run.is_none_or(|pid| r.pid == pid));
    match spawn_record::signal_target_of(record) {
        Ok(record) => terminate_group(&record, KILL_GRACE).is_ok(),
        Err(_) => false,
    }
}

/// A member's process state from its recorded exit and pid (in-process and iTerm2 members).
pub(crate) fn pid_state(member: &Member) -> PaneState {
    if let Some((code, signal)) = recorded_exit(member) {
        return PaneState::Dead { code, signal };
    }
    match PidRecord::of_member(member) {
        Some(record) if record.alive() => PaneState::Alive {
            pid: Some(record.pid),
        },
        Some(_) => PaneState::Dead {
            code: None,
            signal: None,
        },
        // Recorded on this host before it rebooted: that process is gone. One recorded on
        // another machine says nothing here.
        None if member.extra.contains_key(crate::process::pid::PID_FIELD)
            && crate::process::pid::recorded_where(member)
                == crate::store::machine::Whose::EarlierBoot =>
        {
            PaneState::Dead {
                code: None,
                signal: None,
            }
        }
        None => PaneState::Unknown,
    }
}
