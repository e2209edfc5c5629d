//! The runtime's state and its event loop.
//!
//! It holds the member's liveness lock for its whole life (and takes it again when its file is
//! deleted: see `keep_alive_lock`) and sleeps until the inbox or the task
//! list changes (file-system events plus a slow re-scan, never a busy poll), a turn ends or a
//! signal arrives: one `tokio::select!` on a single-threaded runtime waits for all of them.
//! Every time it wakes it reads the inbox first, once, then starts the next turn over what it
//! found if none is running. The loop owns all state; the file watches and the turn's worker
//! only send it events, so there is no shared mutable state beyond the running turn's process
//! group. The loop's steps live in the files below: `inbox` (protocol messages and who may send
//! them), `turns` (choosing and starting turns), `claim` (tasks; `home_claim` on a remote host's
//! mirror), `report` (idle notifications and plans), `membership` (is this still our team and
//! our roster entry), `limits` (maxTurns and the turn timeout), `memory` (the team memory
//! in prompts), `shutdown` (a shutdown request that meets a running turn: finish or
//! refuse), `stop` (approving, signals, leaving, failures).

mod acted;
mod claim;
mod damage;
mod home_claim;
mod inbox;
mod interrupt;
mod limits;
mod membership;
mod memory;
mod report;
mod shutdown;
mod stop;
mod turns;

use std::collections::{HashSet, VecDeque};
use std::time::Instant;

use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use super::config::Config;
use super::pane::Pane;
use super::plan::PlanState;
use super::process::TurnHandle;
use super::session::Session;
use super::turn::{Turn, TurnKind};
use super::work::{Launch, Outcome};
use crate::error::{Error, Result};
use crate::process::signals::Signals;
use crate::store::fsio;
use crate::store::liveness::{AliveLock, Kept};
use crate::store::mailbox::{bell, InboxMessage, Mailbox, Parsed};
use crate::store::memory::TeamMemory;
use crate::store::names::TaskId;
use crate::store::roster::Roster;
use crate::store::shutdown_ask::{ShutdownAsk, REFUSED_FILE};
use crate::store::tasks::{TaskIndex, TaskList};
use crate::store::watcher::{rescan_interval, Subscription};
use inbox::Unread;
use membership::Membership;

enum Event {
    /// The inbox or task directory changed.
    Wake,
    /// The running turn's agent has its prompt: its messages can be marked delivered.
    HandedOver,
    TurnDone(Outcome),
}

/// The turn now running.
struct Current {
    turn: Turn,
    handle: TurnHandle,
    started: Instant,
    /// The inbox messages the turn carries, until its agent has them.
    undelivered: Vec<InboxMessage>,
    /// The turn's `SWARM_TURN_TOKEN`, which its refusal of a shutdown carries (`shutdown`).
    token: String,
}

/// Runs the teammate until a shutdown is approved (exit 0) or a signal stops it (128 + signal).
pub(crate) fn run(config: Config) -> Result<i32> {
    crate::process::block_on(serve(config))
}

async fn serve(config: Config) -> Result<i32> {
    // Caught from the start, so a signal that comes while the lock is taken still stops us
    // cleanly once the loop runs.
    let mut signals = Signals::catch()?;
    // Its claims and completions are its own in the task history, however it was started.
    crate::store::tasks::history::act_as(&config.name);
    // Read once for the whole start (`Stamped`): a member off the roster is refused before
    // anything is written, and what it says stands for the rejoin and the loop's first look
    // unless the file changed since.
    let not_a_member = || Error::NoSuchMember {
        team: config.team.to_string(),
        name: config.name.to_string(),
    };
    let mut known = Roster::new(&config.store, &config.team).load_stamped()?;
    known
        .config
        .member(config.name.as_str())
        .ok_or_else(not_a_member)?;
    let mut alive = AliveLock::hold(&config.store, &config.team, &config.name)?;
    // A runtime started again after its predecessor died (and the lead retired it) is a member
    // again; the roster must say so, or its next death would go unnoticed.
    let rejoined = crate::lifecycle::rejoin(&config.store, &config.team, &config.name, &mut known)?;
    let settled = known
        .stamp
        .filter(|s| s.settled(std::time::SystemTime::now()));
    let membership = Membership::of(&known.config, config.name.as_str())
        .ok_or_else(not_a_member)?
        .read_at(settled);
    let (tx, rx) = mpsc::unbounded_channel();
    let mut _subscriptions = Vec::new();
    // Its bell, which every commit of a message to it rings (`mailbox::bell`: a watch on
    // `inboxes/` wakes every runtime of the team at every inbox write, whatever entry it
    // filters on), or its own inbox among the team's where it can have no bell; every task
    // (one may have become claimable), and the roster, which is replaced on every change; the
    // team directory going is the team deleted (see `membership`); and its agent's refusal of
    // a shutdown (`shutdown`), which answers a request at once.
    let own_inbox = format!("{}.json", config.name);
    let messages = match bell::install(&config.store, &config.team, &config.name) {
        Ok(dir) => (dir, bell::BELL),
        Err(e) => {
            eprintln!("swarm: warning: no bell to wake this runtime ({e}); watching the inboxes");
            (config.store.inboxes_dir(&config.team), own_inbox.as_str())
        }
    };
    let ask = ShutdownAsk::new(&config.store, &config.team, &config.name);
    // A previous run's are not this run's.
    ask.clear_asked();
    ask.clear_refusal();
    for (dir, entry) in [
        (messages.0, Some(messages.1)),
        (config.store.tasks_dir(&config.team), None),
        (config.store.team_dir(&config.team), Some("config.json")),
        (ask.dir().to_path_buf(), Some(REFUSED_FILE)),
    ] {
        fsio::ensure_dir(&dir)?;
        let tx = tx.clone();
        let wake = move || {
            let _ = tx.send(Event::Wake);
        };
        _subscriptions.push(match entry {
            Some(entry) => Subscription::changes_to(&dir, entry, wake)?,
            None => Subscription::changes(&dir, wake)?,
        });
    }
    let session = match config.agent.adapter() {
        Some(adapter) => Some(Session::open(
            &config.store,
            &config.team,
            &config.name,
            adapter,
        )?),
        None => None,
    };
    let index = TaskIndex::open(&config.store, &config.team)?;
    // Every wait is in place: `swarm status` shows whether they are watched or polled.
    alive.record_events(crate::store::watcher::mode().as_str())?;
    let mut runtime = Runtime::new(config, alive, membership, index, tx, rx);
    if let Some(session) = &session {
        let id = if session.id.is_empty() {
            "not named yet (the agent names it on its first turn)"
        } else {
            &session.id
        };
        runtime.pane.say(format!(
            "conversation {id} ({} turn{} so far)",
            session.turns,
            if session.turns == 1 { "" } else { "s" }
        ));
    }
    runtime.session = session;
    if rejoined {
        runtime
            .pane
            .say("marked active again (the team had retired this member)");
    }
    let result = runtime.main_loop(&mut signals).await;
    if result.is_err() {
        runtime.abandon().await;
    }
    result
}

/// How often the runtime checks that its liveness lock file is still the one it holds.
const ALIVE_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

struct Runtime {
    cfg: Config,
    /// The member's liveness lock, and the timer that checks its file is still there.
    alive: AliveLock,
    alive_check: tokio::time::Interval,
    /// The team and member this runtime started for.
    membership: Membership,
    pane: Pane,
    tx: UnboundedSender<Event>,
    rx: UnboundedReceiver<Event>,
    launch: Launch,
    current: Option<Current>,
    turns: u64,
    plan: PlanState,
    /// Every message the plan covers (plan mode only).
    plan_context: Vec<InboxMessage>,
    /// The task list in memory (see `claim`).
    index: TaskIndex,
    /// Tasks the lead assigned with `task_assignment`, not yet taken.
    assigned: VecDeque<TaskId>,
    /// Ordinary messages already announced in the pane (not yet delivered).
    announced: HashSet<String>,
    /// The inbox as this runtime last read or wrote it, so a mark needs no second parse.
    inbox: Option<Parsed>,
    /// After a turn whose agent could not start, message turns wait until then, so a broken
    /// agent command is retried on the slow re-scan, not in a busy loop.
    retry_messages_at: Option<Instant>,
    /// The member's conversation, for an agent CLI that keeps one (`session.rs`).
    session: Option<Session>,
    /// A hook's feedback that is the next turn (`hooks.rs`).
    feedback: Option<TurnKind>,
    /// A task completion whose idle notification a `TeammateIdle` hook held back: the next
    /// notification carries it, so the lead still hears of it.
    held_completion: Option<(String, String)>,
    /// The team memory, and what of it the agent has seen.
    memory: memory::MemoryNotes,
    /// The lead messages acted on, kept on disk (`acted.rs`), so none is obeyed twice.
    acted: acted::Acted,
    /// Said once at start when the acted file was damaged.
    acted_note: Option<String>,
    /// The last damage said (`damage`), so the same one is said once, not at every retry.
    last_damage: Option<String>,
    /// The lead's interrupt request read in the inbox, acted on before the next wait.
    interrupt: Option<crate::store::protocol::InterruptRequest>,
    /// It ran its `--max-turns` and said so (`limits`): it starts no more turns.
    at_turn_limit: bool,
    /// After an interrupt the teammate takes no task from the pool (it would take the one just
    /// released straight back) until the lead writes to it or assigns it one.
    pool_paused: bool,
    /// A shutdown request waiting for the running turn to finish (`shutdown`).
    held: Option<shutdown::Held>,
}

impl Runtime {
    fn new(
        cfg: Config,
        alive: AliveLock,
        membership: Membership,
        index: TaskIndex,
        tx: UnboundedSender<Event>,
        rx: UnboundedReceiver<Event>,
    ) -> Runtime {
        let (acted, acted_note) = acted::Acted::load(&cfg.store, &cfg.team, &cfg.name);
        let mut alive_check = tokio::time::interval(ALIVE_CHECK);
        alive_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Runtime {
            alive,
            alive_check,
            acted,
            acted_note,
            membership,
            index,
            pane: Pane::new(cfg.name.as_str(), &cfg.color),
            launch: cfg.launch(),
            memory: memory::MemoryNotes::new(TeamMemory::for_project(&cfg.store, &cfg.cwd)),
            plan: PlanState::at_start(cfg.plan_mode_required),
            cfg,
            tx,
            rx,
            current: None,
            turns: 0,
            plan_context: Vec::new(),
            assigned: VecDeque::new(),
            announced: HashSet::new(),
            inbox: None,
            retry_messages_at: None,
            session: None,
            feedback: None,
            held_completion: None,
            last_damage: None,
            interrupt: None,
            at_turn_limit: false,
            pool_paused: false,
            held: None,
        }
    }

    fn mailbox(&self) -> Mailbox<'_> {
        Mailbox::new(&self.cfg.store, &self.cfg.team)
    }

    fn tasks(&self) -> TaskList<'_> {
        TaskList::new(&self.cfg.store, &self.cfg.team)
    }

    async fn main_loop(&mut self, signals: &mut Signals) -> Result<i32> {
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
        if let Some(note) = self.verification_note() {
            self.pane.say(note);
        }
        if let Some(note) = self.acted_note.take() {
            self.pane.say(note);
        }
        // Events can be lost (a full inotify queue) or absent (NFS), so the loop also looks
        // again when nothing woke it for a while.
        let rescan = rescan_interval();
        loop {
            // A damaged file costs a note and a retry, never the runtime (`damage`).
            let stopped = match self.pass(signals, rescan).await {
                Err(e) if !damage::fatal(&e) => self.survive(e, signals).await,
                other => other?,
            };
            if let Some(code) = stopped {
                return Ok(code);
            }
        }
    }

    /// One pass of the loop: look at the roster and the inbox, start a turn or wait for a
    /// wake. `Some(code)` when the runtime is done.
    async fn pass(
        &mut self,
        signals: &mut Signals,
        rescan: std::time::Duration,
    ) -> Result<Option<i32>> {
        if let Some(why) = self.left_team()? {
            return self.leave(&why).await.map(Some);
        }
        let ordinary = match self.read_inbox()? {
            Unread::Shutdown(request) => {
                self.asked_to_shut_down(request)?;
                Vec::new()
            }
            Unread::Ordinary(messages) => messages,
        };
        if let Some(request) = self.interrupt.take() {
            self.interrupt(request).await?;
        }
        if let Some(code) = self.settle_shutdown().await? {
            return Ok(Some(code));
        }
        // While a shutdown waits for the running turn, nothing new starts.
        if self.current.is_none() && self.held.is_none() && self.next_turn(ordinary)? {
            return Ok(None);
        }
        let rescan_at = tokio::time::Instant::now() + rescan;
        let grace_ends = self.shutdown_deadline();
        let deadline = self.turn_deadline();
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(grace_ends.unwrap_or(rescan_at)),
                    if grace_ends.is_some() => break,
                event = self.rx.recv() => {
                    let event = event.ok_or_else(|| {
                        Error::Backend("the runtime's event channel closed".into())
                    })?;
                    self.on_event(event)?;
                    // Wakes that piled up during a turn are one re-read, not one each.
                    while let Ok(event) = self.rx.try_recv() {
                        self.on_event(event)?;
                    }
                    break;
                }
                caught = signals.recv() => return self.interrupted(caught).await.map(Some),
                () = limits::until(deadline) => {
                    self.turn_timed_out().await?;
                    break;
                }
                () = tokio::time::sleep_until(rescan_at) => break,
                _ = self.alive_check.tick() => self.keep_alive_lock()?,
            }
        }
        self.last_damage = None;
        Ok(None)
    }

    /// Takes the liveness lock again if its file was deleted or replaced (else `swarm status`
    /// calls us dead and a second runtime could start), saying so in the pane.
    fn keep_alive_lock(&mut self) -> Result<()> {
        // A deleted team is left on the next pass (`membership`); taking its lock again would
        // bring its directory back.
        if !self.cfg.store.team_dir(&self.cfg.team).is_dir() {
            return Ok(());
        }
        if self.alive.keep()? == Kept::Retaken {
            self.pane.say(format!(
                "my liveness lock {} was deleted or replaced; took it again",
                self.cfg
                    .store
                    .alive_path(&self.cfg.team, &self.cfg.name)
                    .display()
            ));
        }
        Ok(())
    }

    fn on_event(&mut self, event: Event) -> Result<()> {
        match event {
            Event::Wake => Ok(()),
            Event::HandedOver => self.handed_over(),
            Event::TurnDone(outcome) => self.finish_turn(outcome),
        }
    }
}
