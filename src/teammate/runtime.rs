//! The runtime's state and its event loop.
//!
//! It holds the member's liveness lock for its whole life and sleeps until the inbox or the task
//! list changes (file-system events plus a slow re-scan, never a busy poll), a turn ends or a
//! signal arrives. Every time it wakes it reads the inbox first, then starts the next turn if
//! none is running. One thread owns all state; the file watchers, the signal catcher and the
//! turn's worker only send it events, so there is no shared mutable state beyond the running
//! turn's process group. The loop's steps live in the files below: `inbox` (protocol messages),
//! `turns` (choosing and starting turns), `claim` (tasks), `report` (idle notifications and
//! plans), `stop` (shutdown, signals, failures).

mod claim;
mod inbox;
mod report;
mod stop;
mod turns;

use std::collections::{HashSet, VecDeque};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Instant;

use super::config::Config;
use super::pane::Pane;
use super::plan::PlanState;
use super::process::TurnHandle;
use super::turn::Turn;
use super::work::{Launch, Outcome};
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::liveness::AliveLock;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::TaskId;
use crate::store::tasks::TaskList;
use crate::store::watcher::DirWatcher;

enum Event {
    /// The inbox or task directory changed, or the slow re-scan came round.
    Wake,
    TurnDone(Outcome),
    Signal(libc::c_int),
}

/// The turn now running.
struct Current {
    turn: Turn,
    handle: TurnHandle,
    started: Instant,
}

/// Runs the teammate until a shutdown is approved (exit 0) or a signal stops it (128 + signal).
pub(crate) fn run(config: Config) -> Result<i32> {
    let signals = signals::block();
    let _alive = AliveLock::hold(&config.store, &config.team, &config.name)?;
    // A runtime started again after its predecessor died (and the lead retired it) is a member
    // again; the roster must say so, or its next death would go unnoticed.
    let rejoined = crate::lifecycle::rejoin(&config.store, &config.team, &config.name)?;
    let (tx, rx) = mpsc::channel();
    signals::forward(signals, tx.clone());
    for dir in [
        config.store.inboxes_dir(&config.team),
        config.store.tasks_dir(&config.team),
    ] {
        fsio::ensure_dir(&dir)?;
        let watcher = DirWatcher::new(&dir)?;
        let tx = tx.clone();
        std::thread::spawn(move || loop {
            watcher.wait(None);
            if tx.send(Event::Wake).is_err() {
                break;
            }
        });
    }
    let mut runtime = Runtime::new(config, tx, rx);
    if rejoined {
        runtime
            .pane
            .say("marked active again (the team had retired this member)");
    }
    let result = runtime.main_loop();
    if result.is_err() {
        runtime.abandon();
    }
    result
}

struct Runtime {
    cfg: Config,
    pane: Pane,
    tx: Sender<Event>,
    rx: Receiver<Event>,
    launch: Launch,
    current: Option<Current>,
    turns: u64,
    plan: PlanState,
    /// Every message the plan covers (plan mode only).
    plan_context: Vec<InboxMessage>,
    /// Tasks the lead assigned with `task_assignment`, not yet taken.
    assigned: VecDeque<TaskId>,
    /// Ordinary messages already announced in the pane (not yet delivered).
    announced: HashSet<String>,
}

impl Runtime {
    fn new(cfg: Config, tx: Sender<Event>, rx: Receiver<Event>) -> Runtime {
        Runtime {
            pane: Pane::new(cfg.name.as_str(), &cfg.color),
            launch: cfg.launch(),
            plan: PlanState::at_start(cfg.plan_mode_required),
            cfg,
            tx,
            rx,
            current: None,
            turns: 0,
            plan_context: Vec::new(),
            assigned: VecDeque::new(),
            announced: HashSet::new(),
        }
    }

    fn mailbox(&self) -> Mailbox<'_> {
        Mailbox::new(&self.cfg.store, &self.cfg.team)
    }

    fn tasks(&self) -> TaskList<'_> {
        TaskList::new(&self.cfg.store, &self.cfg.team)
    }

    fn main_loop(&mut self) -> Result<i32> {
        self.pane.say(format!(
            "{} of team {} is up, running {} in {}{}",
            self.cfg.name,
            self.cfg.team,
            self.cfg.agent.describe(),
            self.cfg.cwd.display(),
            if self.cfg.plan_mode_required {
                " (plan mode: a plan must be approved first)"
            } else {
                ""
            }
        ));
        loop {
            if let Some(code) = self.read_inbox()? {
                return Ok(code);
            }
            if self.current.is_none() && self.next_turn()? {
                continue;
            }
            let first = self
                .rx
                .recv()
                .map_err(|_| Error::Backend("the runtime's event channel closed".into()))?;
            // Wakes that piled up during a turn are one re-read, not one each.
            let events: Vec<Event> = std::iter::once(first).chain(self.rx.try_iter()).collect();
            for event in events {
                match event {
                    Event::Wake => {}
                    Event::TurnDone(outcome) => self.finish_turn(outcome)?,
                    Event::Signal(sig) => return self.interrupted(sig),
                }
            }
        }
    }
}

/// Signals become events: SIGINT, SIGTERM and SIGHUP are blocked in every thread and taken by
/// one thread with `sigwait`, so the main loop can stop the agent and return its task before
/// exiting. Children start with an empty mask (`process.rs` resets it) and default SIGPIPE.
mod signals {
    use std::sync::mpsc::Sender;

    use super::Event;

    const HANDLED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

    /// Blocks the handled signals in this thread and every thread started after it.
    pub(super) fn block() -> libc::sigset_t {
        // SAFETY: sigemptyset/sigaddset initialise the set; pthread_sigmask only reads it.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in HANDLED {
                libc::sigaddset(&mut set, sig);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            set
        }
    }

    pub(super) fn forward(set: libc::sigset_t, tx: Sender<Event>) {
        std::thread::spawn(move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is an initialised sigset, `sig` a valid out-parameter.
            if unsafe { libc::sigwait(&set, &mut sig) } == 0 && tx.send(Event::Signal(sig)).is_err()
            {
                break;
            }
        });
    }
}
