//! The in-process supervisor: the launcher staying in the foreground with its teammates.
//!
//! `swarm launch` with the in-process backend hands its children here. The supervisor reports
//! each exit, records it in the roster, retires the member and finishes its worktree. An agent
//! lead's runtime is one of the children (its console on this terminal): its exit is recorded,
//! but it is no teammate to retire. On SIGINT, SIGTERM or SIGHUP it shuts the team down: the
//! lead's runtime first, with SIGTERM (asked nothing), then a request to each teammate (a busy
//! one's turn may take the wait less 5 s to finish, as with `swarm shutdown`), then the
//! shared [`Stopping`] machine settles each on its answer or the end of the wait; an approval
//! gets the grace to exit by itself, everything else gets SIGTERM to its group, the grace, then
//! SIGKILL. A second signal skips the wait, a third skips the grace.
//!
//! With `startup` set it also waits, as every launch does (`verify`), for each teammate to come
//! up, on a thread of its own so a Ctrl-C during the wait is still a graceful shutdown, and
//! reports the ones that did not ([`Event::NotUp`]) before anything else about them.
//!
//! It is one tokio loop (`select!` over child exits, caught signals, file events on the lead's
//! inbox, the start-up check, and the next deadline), so nothing polls. A child's exit is learned on a plain thread
//! with `waitid(WEXITED | WNOWAIT)`, which leaves the leader a zombie: the supervisor signals
//! whatever the teammate left in its process group first and reaps the leader after, so the
//! group id cannot have been handed to another process in between. (Plain threads, not tokio's
//! blocking pool: the runtime waits for its pool on shutdown, and a child may outlive an error.)

mod event;

pub(crate) use event::Event;

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use rustix::process::Signal;
use serde::Serialize;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::time::{sleep_until, Instant};

use super::verify::{self, NotUp, Starting};
use crate::error::Result;
use crate::lifecycle::{finish_worktree, retire_member, Replies, ShutdownResult, Stopping};
use crate::process::group::signal_group;
use crate::process::pid::{record_exit, PidRecord};
use crate::process::signals::{Early, Signals};
use crate::process::spawn::LoggedChild;
use crate::store::fsio;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::roster::Roster;
use crate::store::watcher::{rescan_interval, Subscription};

/// How the supervisor shuts the team down on a signal.
#[derive(Debug, Clone)]
pub(crate) struct SuperviseOptions {
    /// How long teammates get to answer a shutdown request.
    pub shutdown_timeout: Duration,
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Wait for the teammates to come up, giving up after this long without progress
    /// (`verify::wait_until_up`); `None`: do not check.
    pub startup: Option<Duration>,
}

impl Default for SuperviseOptions {
    fn default() -> Self {
        SuperviseOptions {
            shutdown_timeout: Duration::from_secs(30),
            grace: Duration::from_secs(3),
            startup: None,
        }
    }
}

/// How one teammate ended.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ChildExit {
    pub name: String,
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// Stopped by the supervisor (shutdown), not on its own.
    pub stopped: bool,
}

/// How long a failed write waits before it is tried again.
pub(super) const RETRY_AFTER: Duration = Duration::from_secs(1);

#[derive(Debug)]
struct Supervised {
    name: AgentName,
    child: LoggedChild,
    exited: bool,
    /// Set for every running teammate once the shutdown began.
    stopping: Option<Stopping>,
    /// When SIGTERM goes to the group (shutdown decided).
    stop_at: Option<Instant>,
    /// When SIGTERM went to the group, so SIGKILL follows after the grace.
    terminated_at: Option<Instant>,
    killed: bool,
    why: Option<String>,
    /// Exited and reaped, but what its exit means for the roster is not written yet (a write
    /// failed: `Supervisor::settle`).
    unsettled: Option<ExitStatus>,
}

/// Stays until every teammate in `children` has exited; shuts the team down on a signal.
pub(crate) fn supervise(
    store: &Store,
    team: &TeamName,
    children: Vec<(AgentName, LoggedChild)>,
    signals: Early,
    starting: &[Starting],
    opts: &SuperviseOptions,
    on_event: &mut dyn FnMut(Event),
) -> Result<Vec<ChildExit>> {
    if children.is_empty() {
        return Ok(vec![]);
    }
    let children = children
        .into_iter()
        .map(|(name, child)| Supervised {
            name,
            child,
            exited: false,
            stopping: None,
            stop_at: None,
            terminated_at: None,
            killed: false,
            why: None,
            unsettled: None,
        })
        .collect();
    let mut supervisor = Supervisor {
        store,
        team,
        opts,
        on_event,
        children,
        starting,
        exits: Vec::new(),
        signals: 0,
        deadline: None,
        failed: None,
    };
    signals.block_on(|signals| supervisor.run(signals))?;
    Ok(supervisor.exits)
}

struct Supervisor<'a> {
    store: &'a Store,
    team: &'a TeamName,
    opts: &'a SuperviseOptions,
    on_event: &'a mut dyn FnMut(Event),
    children: Vec<Supervised>,
    starting: &'a [Starting],
    exits: Vec<ChildExit>,
    /// Signals caught so far.
    signals: usize,
    /// The end of the wait for answers, once the shutdown began.
    deadline: Option<Instant>,
    /// The last write that failed and when to try again: the supervisor never ends on one
    /// while its teammates live (issue 21: on a full disk the launcher exited and left them
    /// unsupervised).
    failed: Option<(String, Instant)>,
}

impl Supervisor<'_> {
    async fn run(&mut self, mut signals: Signals) -> Result<()> {
        let (exit_tx, mut exited) = unbounded_channel();
        for (i, c) in self.children.iter().enumerate() {
            (self.on_event)(Event::Running {
                name: c.name.to_string(),
                pid: c.child.pid(),
                log: c.child.log().map(|l| l.display().to_string()),
            });
            let (tx, pid) = (exit_tx.clone(), c.child.pid());
            std::thread::spawn(move || {
                LoggedChild::wait_exited(pid);
                let _ = tx.send(i);
            });
        }
        let (inbox_tx, mut inbox) = unbounded_channel();
        let mut inbox_tx = Some(inbox_tx);
        let mut _watch: Option<Subscription> = None;
        let mut startup = self.check_startup();
        loop {
            if self.children.iter().all(|c| c.exited) && self.settled_or_given_up().await {
                // Every one has exited: the check ends at once; its report still comes first.
                if let Some(rx) = &mut startup {
                    if let Some(not_up) = rx.recv().await {
                        self.report_not_up(not_up);
                    }
                }
                return Ok(());
            }
            let wake = self.next_wake();
            let wake = match &self.failed {
                Some((_, retry)) => Some(wake.map_or(*retry, |w| w.min(*retry))),
                None => wake,
            };
            tokio::select! {
                Some(not_up) = recv_or_never(&mut startup) => {
                    startup = None;
                    self.report_not_up(not_up);
                }
                Some(i) = exited.recv() => self.reap(i)?,
                _ = signals.recv() => {
                    self.signals += 1;
                    if self.deadline.is_none() {
                        _watch = self.watch_inbox(inbox_tx.take());
                        self.start_shutdown();
                    }
                }
                Some(()) = inbox.recv() => drain(&mut inbox),
                () = sleep_or_never(wake) => {}
            }
            let pass = self.settle_all().and_then(|()| self.advance());
            self.note(pass);
        }
    }

    /// Says a failed write once (until another fails or one succeeds) and schedules the retry.
    fn note(&mut self, pass: Result<()>) {
        match pass {
            Ok(()) => self.failed = None,
            Err(e) => {
                let error = e.to_string();
                if self.failed.as_ref().map(|(said, _)| said) != Some(&error) {
                    (self.on_event)(Event::Deferred {
                        error: error.clone(),
                    });
                }
                self.failed = Some((error, Instant::now() + RETRY_AFTER));
            }
        }
    }

    /// Writes what the exits reaped so far mean, for each not written yet.
    fn settle_all(&mut self) -> Result<()> {
        for i in 0..self.children.len() {
            if let Some(status) = self.children[i].unsettled {
                self.settle(i, status)?;
                self.children[i].unsettled = None;
            }
        }
        Ok(())
    }

    /// With every teammate gone: whether what their exits mean is written, trying again for a
    /// while when a write fails; past that the launcher ends all the same (nobody is left to
    /// supervise, and `swarm status` judges the dead by their processes).
    async fn settled_or_given_up(&mut self) -> bool {
        const GIVE_UP: Duration = Duration::from_secs(10);
        let until = Instant::now() + GIVE_UP;
        loop {
            let pass = self.settle_all();
            let done = pass.is_ok();
            self.note(pass);
            if done || Instant::now() >= until {
                return true;
            }
            sleep_until(Instant::now() + RETRY_AFTER).await;
        }
    }

    /// Starts the start-up check on a thread of its own; its answer comes on the channel.
    fn check_startup(&self) -> Option<UnboundedReceiver<Vec<NotUp>>> {
        let bound = self.opts.startup?;
        let (tx, rx) = unbounded_channel();
        let (store, team, starting) = (
            self.store.clone(),
            self.team.clone(),
            self.starting.to_vec(),
        );
        std::thread::spawn(move || {
            let _ = tx.send(verify::wait_until_up(&store, &team, &starting, bound));
        });
        Some(rx)
    }

    fn report_not_up(&mut self, not_up: Vec<NotUp>) {
        if !not_up.is_empty() {
            (self.on_event)(Event::NotUp { teammates: not_up });
        }
    }

    /// Answers land in the lead's inbox: wake on its changes while the shutdown waits.
    fn watch_inbox(&self, tx: Option<UnboundedSender<()>>) -> Option<Subscription> {
        let tx = tx?;
        let dir = self.store.inboxes_dir(self.team);
        let watched = fsio::ensure_dir(&dir).and_then(|()| {
            Subscription::changes(&dir, move || {
                let _ = tx.send(());
            })
        });
        match watched {
            Ok(w) => Some(w),
            Err(e) => {
                // The re-scan timer still finds the answers.
                eprintln!("swarm: warning: {e}");
                None
            }
        }
    }

    fn start_shutdown(&mut self) {
        self.deadline = Some(Instant::now() + self.opts.shutdown_timeout);
        let names: Vec<String> = self
            .running()
            .filter(|c| !c.name.is_lead())
            .map(|c| c.name.to_string())
            .collect();
        (self.on_event)(Event::ShutdownStarted { teammates: names });
        let (store, team) = (self.store, self.team);
        for c in self.children.iter_mut().filter(|c| !c.exited) {
            if c.name.is_lead() {
                // The lead agent's runtime goes first, so it hands out and decides nothing more;
                // it is asked nothing (it is not a teammate).
                c.why = Some("stopped by the launcher".into());
                c.stop_at = Some(Instant::now());
                continue;
            }
            let mut stopping = Stopping::new(c.name.clone());
            let grace = crate::lifecycle::grace_within(self.opts.shutdown_timeout);
            let reason = Some("the launcher was interrupted");
            if let Err(e) = stopping.ask(store, team, reason, grace) {
                eprintln!("swarm: warning: could not ask {} to stop: {e}", c.name);
            }
            c.stopping = Some(stopping);
        }
    }

    fn running(&self) -> impl Iterator<Item = &Supervised> {
        self.children.iter().filter(|c| !c.exited)
    }

    /// The next moment something is due: the end of the wait, a SIGTERM or SIGKILL, or a
    /// re-scan of the inbox (file events can be lost) while answers are awaited.
    fn next_wake(&self) -> Option<Instant> {
        let deadline = self.deadline?;
        let mut wake: Option<Instant> = None;
        let mut at = |t: Instant| wake = Some(wake.map_or(t, |w| w.min(t)));
        for c in self.running() {
            match (c.stop_at, c.terminated_at) {
                (None, _) => {
                    at(deadline);
                    at(Instant::now() + rescan_interval());
                }
                (Some(stop), None) => at(stop),
                (_, Some(t)) if !c.killed => at(t + self.opts.grace),
                _ => {}
            }
        }
        wake
    }

    /// The shutdown policy, run after every wake: settle what can be settled, then signal.
    fn advance(&mut self) -> Result<()> {
        let Some(deadline) = self.deadline else {
            return Ok(());
        };
        let (store, team, grace) = (self.store, self.team, self.opts.grace);
        let now = Instant::now();
        let force = self.signals > 1 || now >= deadline;
        let replies = Replies::read(store, team)?;
        for c in self.children.iter_mut().filter(|c| !c.exited) {
            if c.stop_at.is_none() {
                let stopping = c
                    .stopping
                    .get_or_insert_with(|| Stopping::new(c.name.clone()));
                let name = c.name.to_string();
                if stopping.check(store, team, &replies, Duration::ZERO, || Ok(false))? {
                    match &stopping.result {
                        Some(ShutdownResult::Rejected { reason }) => {
                            (self.on_event)(Event::Rejected {
                                name,
                                reason: reason.clone(),
                            });
                            c.why = Some(format!("shutdown rejected ({reason}), stopped"));
                            c.stop_at = Some(now);
                        }
                        _ => {
                            (self.on_event)(Event::Approved { name });
                            c.why = Some("shutdown approved".into());
                            // It said it would go: give it the grace to exit by itself.
                            c.stop_at = Some(now + grace);
                        }
                    }
                } else if force {
                    if now >= deadline {
                        (self.on_event)(Event::TimedOut { name });
                    }
                    stopping.time_out();
                    c.why = Some("stopped by the launcher".into());
                    c.stop_at = Some(now);
                }
            }
            let record = c.child.record();
            match (c.stop_at, c.terminated_at) {
                (Some(at), None) if now >= at || self.signals > 1 => {
                    let _ = signal_group(&record, Signal::TERM);
                    c.terminated_at = Some(now);
                }
                (_, Some(t)) if !c.killed && (now >= t + grace || self.signals > 2) => {
                    let _ = signal_group(&record, Signal::KILL);
                    c.killed = true;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Child `i` has exited (and is still a zombie): stop its group, reap it, record and retire.
    fn reap(&mut self, i: usize) -> Result<()> {
        let (store, team) = (self.store, self.team);
        let c = &mut self.children[i];
        if c.exited {
            return Ok(());
        }
        // An answer may have landed just before the exit: take it into account (one that
        // cannot be read now is not a reason to leave the child unreaped).
        if let (Some(stopping), None) = (&mut c.stopping, &c.why) {
            let _ = stopping.check(store, team, &Replies::default(), Duration::ZERO, || {
                Ok(true)
            });
            match &stopping.result {
                Some(ShutdownResult::Approved) => {
                    (self.on_event)(Event::Approved {
                        name: c.name.to_string(),
                    });
                    c.why = Some("shutdown approved".into());
                }
                Some(ShutdownResult::Rejected { reason }) => {
                    c.why = Some(format!("exited after rejecting the shutdown ({reason})"));
                }
                _ => {}
            }
        }
        // Whatever the teammate left running in its group goes with it. The leader is not
        // reaped yet, so the group id still belongs to this teammate.
        let _ = signal_group(&c.child.record(), Signal::TERM);
        let status = c.child.reap()?;
        c.exited = true;
        (self.on_event)(Event::Exited {
            name: c.name.to_string(),
            code: status.code(),
            signal: status.signal(),
        });
        // What the exit means is written by `settle`, now or, when a write fails, later.
        c.unsettled = Some(status);
        Ok(())
    }

    /// Records child `i`'s exit with `status` in the roster: its exit, its retirement and its
    /// tasks back to pending, its worktree. Safe to try again after a failure: each step is.
    fn settle(&mut self, i: usize, status: ExitStatus) -> Result<()> {
        let (store, team) = (self.store, self.team);
        let shutting_down = self.deadline.is_some();
        let c = &mut self.children[i];
        let roster = Roster::new(store, team);
        // The roster entry is this child's only while it records this child's pid: after
        // `team remove` (and a new member under the name) or `team delete` it is someone else's,
        // or nobody's, and must not be marked or retired for this exit.
        let ours = roster.load().ok().and_then(|config| {
            config
                .member(c.name.as_str())
                .and_then(PidRecord::of_member)
        }) == Some(c.child.record());
        let exit = ChildExit {
            name: c.name.to_string(),
            code: status.code(),
            signal: status.signal(),
            stopped: shutting_down && c.stop_at.is_some(),
        };
        if !ours {
            self.exits.push(exit);
            return Ok(());
        }
        let _ = roster.update_member(&c.name, |m| record_exit(m, status));
        if c.name.is_lead() {
            // Not a teammate: nothing to retire, no tasks to return.
            self.exits.push(exit);
            return Ok(());
        }
        let why = c.why.clone().unwrap_or_else(|| match status.code() {
            Some(code) => format!("its process exited with status {code}"),
            None => format!(
                "its process was killed by signal {}",
                status.signal().unwrap_or(0)
            ),
        });
        let released = retire_member(store, team, &c.name, &why)?;
        (self.on_event)(Event::Retired {
            name: c.name.to_string(),
            released,
        });
        if let Ok(member) = roster.require_member(c.name.as_str()) {
            if let Some(outcome) = finish_worktree(store, team, &member)? {
                (self.on_event)(Event::Worktree {
                    name: c.name.to_string(),
                    outcome: outcome.to_string(),
                });
            }
        }
        self.exits.push(exit);
        Ok(())
    }
}

/// Empties the queue, so one wake covers every event that piled up.
fn drain(rx: &mut UnboundedReceiver<()>) {
    while rx.try_recv().is_ok() {}
}

/// The next message on `rx`, or never when there is no channel.
async fn recv_or_never<T>(rx: &mut Option<UnboundedReceiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_or_never(wake: Option<Instant>) {
    match wake {
        Some(t) => sleep_until(t).await,
        None => std::future::pending().await,
    }
}
