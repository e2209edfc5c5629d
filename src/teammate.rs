//! The teammate runtime: the process inside each pane that gives any agent CLI the team
//! protocol a real `claude` teammate speaks by itself.
//!
//! It holds the member's liveness lock for its whole life and sleeps until the inbox or the task
//! list changes (file-system events plus a slow re-scan, never a busy poll). Protocol messages
//! are handled here: shutdown, plan approval, permission answers, task assignments. Ordinary
//! messages go to the agent as one turn and are marked delivered, by `msg_id`, once handed
//! over; messages that arrive during a turn wait for the next. When there is nothing to answer
//! the runtime claims the next available task and runs it as a turn. After every turn the lead
//! gets an `idle_notification`.
//!
//! One thread owns all state; the file watchers, the signal catcher and the turn's worker only
//! send it events, so there is no shared mutable state beyond the running turn's process group.

pub mod args;
mod pane;
mod process;
mod shell_agent;
mod turn;

use std::collections::{HashSet, VecDeque};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use serde_json::Map;

pub use pane::Pane;
pub use process::{Outcome, Step, Work};
pub use turn::{appendix, teammate_message, Turn, TurnKind};

use crate::error::{ClaimFailure, Error, Result};
use crate::store::fsio;
use crate::store::liveness::AliveLock;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TaskId, TeamName, LEAD};
use crate::store::paths::Store;
use crate::store::permissions::Permissions;
use crate::store::protocol::{
    timestamp_now, truncate, IdleNotification, Payload, PlanApprovalRequest, Protocol,
    ShutdownApproved, ShutdownRequest, RESULT_LIMIT,
};
use crate::store::tasks::{Task, TaskList, TaskOutcome, TaskStatus};
use crate::store::watcher::DirWatcher;
use crate::teammate::args::PromptVia;
use process::{Launch, TurnHandle};

/// How long a stopped turn gets between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// The agent behind the teammate.
#[derive(Debug, Clone, PartialEq)]
pub enum Agent {
    /// The built-in shell agent (`shell_agent.rs`).
    Shell,
    /// An agent CLI, run once per turn with the prompt.
    Command {
        argv: Vec<String>,
        prompt_via: PromptVia,
    },
}

/// The runtime's validated configuration (built by `commands::teammate` from the flags).
#[derive(Debug, Clone)]
pub struct Config {
    pub store: Store,
    pub team: TeamName,
    pub name: AgentName,
    pub color: String,
    pub parent_session_id: String,
    pub plan_mode_required: bool,
    /// Absolute directory the agent runs in.
    pub cwd: PathBuf,
    pub agent: Agent,
    /// `tmux`, `iterm2` or `in-process` (from `$SWARM_BACKEND`).
    pub backend: String,
    /// Reported in `shutdown_approved`: `$TMUX_PANE`, else `in-process`.
    pub pane_id: String,
}

enum Event {
    /// The inbox or task directory changed, or the slow re-scan came round.
    Wake,
    TurnDone(Outcome),
    Signal(libc::c_int),
}

/// Plan mode's progress (`--plan-mode-required`).
#[derive(Debug, Clone, PartialEq)]
enum PlanState {
    NotRequired,
    /// A planning turn is due: at start, or after a rejection. `stalled` after a planning turn
    /// failed: wait for a new message rather than retry at once.
    Needed {
        previous: Option<String>,
        feedback: Option<String>,
        stalled: bool,
    },
    Pending {
        request_id: String,
        plan: String,
    },
    /// Approved: the turn that carries the plan out is due.
    Approved {
        plan: String,
        feedback: Option<String>,
    },
    Done,
}

struct Current {
    turn: Turn,
    handle: TurnHandle,
    started: Instant,
}

/// Runs the teammate until a shutdown is approved (exit 0) or a signal stops it (128 + signal).
pub fn run(config: Config) -> Result<i32> {
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
        let pane = Pane::new(cfg.name.as_str(), &cfg.color);
        let launch = Launch {
            cwd: cfg.cwd.clone(),
            env: agent_env(&cfg),
        };
        let plan = if cfg.plan_mode_required {
            PlanState::Needed {
                previous: None,
                feedback: None,
                stalled: false,
            }
        } else {
            PlanState::NotRequired
        };
        Runtime {
            cfg,
            pane,
            tx,
            rx,
            launch,
            current: None,
            turns: 0,
            plan,
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
        let agent = match &self.cfg.agent {
            Agent::Shell => "the shell agent".to_string(),
            Agent::Command { argv, .. } => format!("`{}`", argv.join(" ")),
        };
        self.pane.say(format!(
            "{} of team {} is up, running {agent} in {}{}",
            self.cfg.name,
            self.cfg.team,
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

    // ---- the inbox -------------------------------------------------------------------------

    /// Handles protocol messages at once; ordinary ones stay unread for the next turn. Returns
    /// the exit code when a shutdown was approved.
    fn read_inbox(&mut self) -> Result<Option<i32>> {
        let unread = self.mailbox().read(&self.cfg.name, true)?;
        let mut handled = Vec::new();
        let mut shutdown = None;
        for m in &unread {
            match m.payload() {
                Payload::Protocol(p) => {
                    handled.push(m.key());
                    if let Some(req) = self.on_protocol(m, *p)? {
                        shutdown = Some(req);
                        break;
                    }
                }
                Payload::Text(_) => {
                    if self.announced.insert(m.key()) {
                        let later = if self.current.is_some() {
                            " (delivered after this turn)"
                        } else {
                            ""
                        };
                        self.pane
                            .say(format!("message from {}: {}{later}", m.from, preview(m)));
                    }
                }
            }
        }
        self.mailbox().mark_delivered(&self.cfg.name, &handled)?;
        match shutdown {
            Some(req) => self.shutdown(req).map(Some),
            None => Ok(None),
        }
    }

    fn ignore(&self, m: &InboxMessage, what: &str, why: &str) {
        self.pane
            .say(format!("ignored {what} from {}: {why}", m.from));
    }

    /// Acts on one protocol message; returns a shutdown request that must be honoured.
    fn on_protocol(&mut self, m: &InboxMessage, p: Protocol) -> Result<Option<ShutdownRequest>> {
        let from_lead = m.from == LEAD;
        match p {
            Protocol::ShutdownRequest(req) => {
                let target = crate::store::protocol::shutdown_request_target(&req.request_id);
                if !from_lead {
                    self.ignore(m, "shutdown_request", "only the lead may ask");
                } else if req.from != m.from {
                    self.ignore(
                        m,
                        "shutdown_request",
                        "its sender does not match the envelope",
                    );
                } else if target.is_some_and(|t| t != self.cfg.name.as_str()) {
                    self.ignore(m, "shutdown_request", "it is addressed to someone else");
                } else {
                    return Ok(Some(req));
                }
            }
            Protocol::PlanApprovalResponse(resp) => {
                let open = match &self.plan {
                    PlanState::Pending { request_id, plan } if *request_id == resp.request_id => {
                        Some(plan.clone())
                    }
                    _ => None,
                };
                match open {
                    _ if !from_lead => {
                        self.ignore(m, "plan_approval_response", "only the lead may decide")
                    }
                    None => self.ignore(
                        m,
                        "plan_approval_response",
                        "it matches no open plan request",
                    ),
                    Some(plan) if resp.approved => {
                        self.pane.say(format!(
                            "plan approved by the lead{}",
                            suffix(resp.feedback.as_deref())
                        ));
                        self.plan = PlanState::Approved {
                            plan,
                            feedback: resp.feedback,
                        };
                    }
                    Some(plan) => {
                        self.pane.say(format!(
                            "plan rejected by the lead{}; revising it",
                            suffix(resp.feedback.as_deref())
                        ));
                        self.plan = PlanState::Needed {
                            previous: Some(plan),
                            feedback: resp.feedback,
                            stalled: false,
                        };
                    }
                }
            }
            Protocol::PermissionResponse(resp) => {
                // The requester (`swarm permission request --wait` or the hook) waits on the
                // resolved file; here the answer only needs to be kept out of the agent's turn.
                let ours = Permissions::new(&self.cfg.store, &self.cfg.team)
                    .decision(&resp.request_id)
                    .ok()
                    .flatten()
                    .filter(|r| r.worker_name == self.cfg.name.as_str());
                match ours {
                    Some(r) => self.pane.say(format!(
                        "permission {} for {}: {}",
                        r.id, r.tool_name, r.status
                    )),
                    None => self.ignore(
                        m,
                        "permission_response",
                        "it matches none of this teammate's requests",
                    ),
                }
            }
            Protocol::TaskAssignment(a) => {
                if !from_lead {
                    self.ignore(m, "task_assignment", "only the lead assigns tasks");
                } else {
                    match a.task_id.parse::<TaskId>() {
                        Ok(id) => {
                            self.pane
                                .say(format!("the lead assigned task #{id}: {}", a.subject));
                            if !self.assigned.contains(&id) {
                                self.assigned.push_back(id);
                            }
                        }
                        Err(e) => self.ignore(m, "task_assignment", &e.to_string()),
                    }
                }
            }
            other => self.ignore(m, other.type_name(), "not a message for a teammate"),
        }
        Ok(None)
    }

    /// Undelivered ordinary messages, oldest first.
    fn ordinary_unread(&self) -> Result<Vec<InboxMessage>> {
        Ok(self
            .mailbox()
            .read(&self.cfg.name, true)?
            .into_iter()
            .filter(|m| matches!(m.payload(), Payload::Text(_)))
            .collect())
    }

    // ---- choosing and starting turns -------------------------------------------------------

    /// Starts the next turn if there is one; `true` if it already finished (no process ran),
    /// so the caller should look again before sleeping.
    fn next_turn(&mut self) -> Result<bool> {
        match self.plan.clone() {
            PlanState::NotRequired | PlanState::Done => {}
            PlanState::Pending { .. } => return Ok(false),
            PlanState::Needed {
                previous,
                feedback,
                stalled,
            } => {
                let fresh = self.ordinary_unread()?;
                if fresh.is_empty() && (stalled || self.plan_context.is_empty()) {
                    return Ok(false);
                }
                self.plan_context.extend(fresh.iter().cloned());
                let kind = TurnKind::Plan { previous, feedback };
                return self.start(kind, self.plan_context.clone(), &fresh);
            }
            PlanState::Approved { plan, feedback } => {
                let fresh = self.ordinary_unread()?;
                self.plan_context.extend(fresh.iter().cloned());
                let messages = std::mem::take(&mut self.plan_context);
                return self.start(TurnKind::Execute { plan, feedback }, messages, &fresh);
            }
        }
        let fresh = self.ordinary_unread()?;
        if !fresh.is_empty() {
            return self.start(TurnKind::Messages, fresh.clone(), &fresh);
        }
        if let Some(task) = self.take_task()? {
            return self.start(TurnKind::Task(Box::new(task)), vec![], &[]);
        }
        Ok(false)
    }

    /// The next task to work on: one the lead assigned, one already ours (a restarted runtime
    /// resumes its task), else the lowest available one.
    fn take_task(&mut self) -> Result<Option<Task>> {
        let me = self.cfg.name.clone();
        let mut waiting = VecDeque::new();
        let mut found = None;
        while let Some(id) = self.assigned.pop_front() {
            if found.is_some() {
                waiting.push_back(id);
                continue;
            }
            match self.tasks().claim(&id, &me, false) {
                Ok(task) => found = Some(task),
                Err(Error::ClaimRefused {
                    reason: ClaimFailure::Blocked,
                    ..
                }) => waiting.push_back(id),
                Err(e @ (Error::ClaimRefused { .. } | Error::NoSuchTask { .. })) => {
                    self.pane
                        .say(format!("cannot take assigned task #{id}: {e}"));
                    self.tell_lead(format!("I cannot take task #{id}: {e}"))?;
                }
                Err(e) => return Err(e),
            }
        }
        self.assigned = waiting;
        if found.is_some() {
            return Ok(found);
        }
        let all = self.tasks().list()?;
        let mine: Vec<&Task> = all
            .iter()
            .filter(|t| t.owner.as_deref() == Some(me.as_str()))
            .filter(|t| t.status != TaskStatus::Completed && !t.parked())
            .collect();
        for task in mine {
            match self.tasks().claim(&task.id, &me, false) {
                Ok(task) => return Ok(Some(task)),
                Err(Error::ClaimRefused { .. } | Error::NoSuchTask { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        // `claim_next` takes the task-list lock; an idle teammate wakes on every re-scan, so it
        // only asks when a claimable task may exist (blockers are checked under the lock).
        let candidate = all
            .iter()
            .any(|t| t.status == TaskStatus::Pending && t.owner.is_none() && !t.parked());
        if !candidate {
            return Ok(None);
        }
        self.tasks().claim_next(&me, true)
    }

    /// Starts a turn over `messages`; `deliver` are the inbox messages it hands over, marked
    /// delivered once the agent has them.
    fn start(
        &mut self,
        kind: TurnKind,
        messages: Vec<InboxMessage>,
        deliver: &[InboxMessage],
    ) -> Result<bool> {
        let turn = Turn {
            kind,
            messages,
            appendix: (self.turns == 0)
                .then(|| appendix(self.cfg.name.as_str(), self.cfg.team.as_str())),
        };
        match &turn.kind {
            TurnKind::Task(t) => self
                .pane
                .say(format!("▶ claimed task #{}: {}", t.id, t.subject)),
            _ => self.pane.say(format!("▶ turn: {}", turn.describe())),
        }
        let work = match &self.cfg.agent {
            Agent::Shell => crate::teammate::shell_agent::work(&turn),
            Agent::Command { argv, prompt_via } => command_work(argv, *prompt_via, &turn.prompt()),
        };
        let started = Instant::now();
        match work {
            Work::Reply { text, success } => {
                self.deliver(deliver)?;
                self.pane.say(&text);
                let failure = (!success).then(|| text.clone());
                let outcome = Outcome {
                    success,
                    output: text,
                    failure,
                };
                self.complete(turn, started, outcome)?;
                Ok(true)
            }
            Work::Run { steps, preface } => {
                let tx = self.tx.clone();
                let handle = TurnHandle::start(
                    steps,
                    preface,
                    self.launch.clone(),
                    self.pane.clone(),
                    move |outcome| {
                        let _ = tx.send(Event::TurnDone(outcome));
                    },
                );
                self.current = Some(Current {
                    turn,
                    handle,
                    started,
                });
                self.deliver(deliver)?;
                Ok(false)
            }
        }
    }

    fn deliver(&mut self, messages: &[InboxMessage]) -> Result<()> {
        let keys: Vec<String> = messages.iter().map(InboxMessage::key).collect();
        self.mailbox().mark_delivered(&self.cfg.name, &keys)?;
        for k in &keys {
            self.announced.remove(k);
        }
        Ok(())
    }

    // ---- ending turns ----------------------------------------------------------------------

    fn finish_turn(&mut self, outcome: Outcome) -> Result<()> {
        match self.current.take() {
            Some(current) => self.complete(current.turn, current.started, outcome),
            None => Ok(()),
        }
    }

    /// Records how a turn ended (task status, plan request) and tells the lead.
    fn complete(&mut self, turn: Turn, started: Instant, outcome: Outcome) -> Result<()> {
        self.turns += 1;
        let secs = started.elapsed().as_secs_f64();
        let describe = turn.describe();
        let mut idle = IdleNotification {
            from: self.cfg.name.to_string(),
            timestamp: String::new(),
            idle_reason: Some(
                if outcome.success {
                    "available"
                } else {
                    "failed"
                }
                .into(),
            ),
            summary: None,
            completed_task_id: None,
            completed_status: None,
            failure_reason: outcome.failure.clone(),
            result: Some(truncate(&outcome.output, RESULT_LIMIT)).filter(|r| !r.is_empty()),
            extra: Map::new(),
        };
        match turn.kind {
            TurnKind::Task(task) => {
                let result = match &outcome.failure {
                    None => TaskOutcome::Completed,
                    Some(reason) => TaskOutcome::Failed {
                        reason: reason.clone(),
                    },
                };
                let written = self.tasks().finish(&task.id, &self.cfg.name, &result)?;
                let completed = written
                    .as_ref()
                    .is_some_and(|t| t.status == TaskStatus::Completed);
                idle.completed_task_id = Some(task.id.to_string());
                idle.completed_status = Some(if completed { "resolved" } else { "failed" }.into());
                let what = format!("task #{} ({})", task.id, task.subject);
                let why = outcome.failure.as_deref().unwrap_or_default();
                let line = match (&written, completed) {
                    (None, _) => format!(
                        "■ {what} ended after {secs:.1} s, but it is no longer ours (released, reassigned or deleted); left as it is"
                    ),
                    (Some(_), true) if outcome.success => {
                        format!("✔ {what} completed in {secs:.1} s")
                    }
                    (Some(_), true) => format!(
                        "✔ {what} was marked completed by the agent, though the turn failed: {why}"
                    ),
                    (Some(_), false) => format!(
                        "✘ {what} FAILED after {secs:.1} s: {why}; parked (swarmFailed) until the lead clears it"
                    ),
                };
                self.pane.say(&line);
                idle.summary = Some(match &outcome.failure {
                    None => format!("completed task #{}", task.id),
                    Some(why) => format!("task #{} failed: {why}", task.id),
                });
            }
            TurnKind::Plan { .. } => {
                if outcome.success {
                    let request_id = self.send_plan(&outcome.output)?;
                    idle.summary = Some(format!("sent a plan for approval ({request_id})"));
                    self.plan = PlanState::Pending {
                        request_id,
                        plan: outcome.output.clone(),
                    };
                } else {
                    self.pane.say(format!(
                        "✘ planning failed after {secs:.1} s: {}; waiting for a new message",
                        outcome.failure.as_deref().unwrap_or("unknown")
                    ));
                    if let PlanState::Needed { stalled, .. } = &mut self.plan {
                        *stalled = true;
                    }
                    idle.summary = Some("planning failed".into());
                }
            }
            kind => {
                if matches!(kind, TurnKind::Execute { .. }) {
                    self.plan = PlanState::Done;
                }
                let line = match &outcome.failure {
                    None => format!("■ turn done in {secs:.1} s"),
                    Some(why) => format!("✘ turn failed after {secs:.1} s: {why}"),
                };
                self.pane.say(line);
                idle.summary = Some(describe);
            }
        }
        idle.timestamp = timestamp_now();
        self.to_lead(&Protocol::IdleNotification(idle), None)
    }

    /// Writes the plan file and sends `plan_approval_request`; returns its request id.
    fn send_plan(&mut self, plan: &str) -> Result<String> {
        let (store, team, name) = (&self.cfg.store, &self.cfg.team, &self.cfg.name);
        fsio::ensure_dir(&store.plans_dir(team))?;
        let path = store.plan_path(team, name);
        fsio::write_atomic(&path, plan.as_bytes())?;
        let request_id = crate::store::protocol::plan_request_id(name, team);
        let request = Protocol::PlanApprovalRequest(PlanApprovalRequest {
            from: name.to_string(),
            timestamp: timestamp_now(),
            plan_file_path: path.display().to_string(),
            plan_content: plan.to_string(),
            request_id: request_id.clone(),
            extra: Map::new(),
        });
        self.to_lead(&request, Some("plan for approval".into()))?;
        self.pane.say(format!(
            "plan written to {} and sent to the lead for approval",
            path.display()
        ));
        Ok(request_id)
    }

    fn to_lead(&self, message: &Protocol, summary: Option<String>) -> Result<()> {
        let envelope = InboxMessage::protocol(self.cfg.name.as_str(), message)
            .with_color(Some(self.cfg.color.clone()))
            .with_summary(summary);
        self.mailbox().append(&AgentName::lead(), envelope)
    }

    fn tell_lead(&self, text: String) -> Result<()> {
        let envelope = InboxMessage::new(self.cfg.name.as_str(), text)
            .with_color(Some(self.cfg.color.clone()));
        self.mailbox().append(&AgentName::lead(), envelope)
    }

    // ---- stopping --------------------------------------------------------------------------

    /// Stops the running turn, if any: SIGTERM to its group, [`STOP_GRACE`], then SIGKILL.
    fn stop_turn(&mut self) {
        let Some(current) = self.current.take() else {
            return;
        };
        self.pane.say("stopping the current turn");
        current.handle.stop(libc::SIGTERM);
        if self.wait_turn_done(STOP_GRACE) {
            return;
        }
        self.pane.say("the turn ignored SIGTERM; sending SIGKILL");
        current.handle.stop(libc::SIGKILL);
        self.wait_turn_done(Duration::from_secs(10));
    }

    fn wait_turn_done(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            match self
                .rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(Event::TurnDone(_)) => return true,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return false,
            }
        }
    }

    /// Returns this teammate's unfinished tasks to pending; says which.
    fn release_tasks(&self) -> Result<()> {
        let released = self.tasks().release_agent(self.cfg.name.as_str())?;
        if !released.is_empty() {
            let ids: Vec<String> = released.iter().map(|id| format!("#{id}")).collect();
            self.pane
                .say(format!("returned task {} to pending", ids.join(", ")));
        }
        Ok(())
    }

    fn shutdown(&mut self, req: ShutdownRequest) -> Result<i32> {
        self.pane.say(format!(
            "shutdown requested by {}{}",
            req.from,
            suffix(req.reason.as_deref())
        ));
        self.stop_turn();
        self.release_tasks()?;
        let approved = Protocol::ShutdownApproved(ShutdownApproved {
            request_id: req.request_id,
            from: self.cfg.name.to_string(),
            timestamp: timestamp_now(),
            pane_id: Some(self.cfg.pane_id.clone()),
            backend_type: Some(self.cfg.backend.clone()),
            extra: Map::new(),
        });
        self.to_lead(&approved, None)?;
        self.pane.say("shutdown approved; bye");
        Ok(0)
    }

    fn interrupted(&mut self, sig: libc::c_int) -> Result<i32> {
        self.pane.say(format!("got signal {sig}; stopping"));
        self.stop_turn();
        self.release_tasks()?;
        Ok(128 + sig)
    }

    /// Best-effort cleanup when the loop failed: stop the agent, hand the tasks back.
    fn abandon(&mut self) {
        self.stop_turn();
        if let Err(e) = self.release_tasks() {
            eprintln!("swarm: warning: could not return this teammate's tasks: {e}");
        }
    }
}

/// A turn of an agent CLI: one run of `argv` with the prompt as its last argument, in place of
/// a `{prompt}` placeholder, or on its stdin.
fn command_work(argv: &[String], via: PromptVia, prompt: &str) -> Work {
    let (program, rest) = argv.split_first().expect("validated: a command is given");
    let mut args: Vec<OsString> = Vec::with_capacity(rest.len() + 1);
    let mut stdin = None;
    match via {
        PromptVia::Stdin => {
            args.extend(rest.iter().map(OsString::from));
            stdin = Some(prompt.as_bytes().to_vec());
        }
        PromptVia::Arg => {
            let placeholder = rest.iter().any(|a| a.contains(PROMPT_PLACEHOLDER));
            args.extend(
                rest.iter()
                    .map(|a| OsString::from(a.replace(PROMPT_PLACEHOLDER, prompt))),
            );
            if !placeholder {
                args.push(prompt.into());
            }
        }
    }
    Work::Run {
        steps: vec![Step {
            program: program.into(),
            args,
            stdin,
            echo: None,
        }],
        preface: String::new(),
    }
}

/// An argument containing this gets the prompt in its place.
pub const PROMPT_PLACEHOLDER: &str = "{prompt}";

/// The environment a turn runs with: who the agent is, and this very `swarm` first on PATH
/// (unless `swarm` on PATH already is this binary), so the agent's `swarm send` speaks the same
/// protocol version to the same store.
fn agent_env(cfg: &Config) -> Vec<(String, OsString)> {
    let mut env = vec![
        (
            "SWARM_ROOT".to_string(),
            cfg.store.root().as_os_str().to_owned(),
        ),
        ("SWARM_TEAM".to_string(), cfg.team.as_str().into()),
        ("SWARM_AGENT_NAME".to_string(), cfg.name.as_str().into()),
        (
            "SWARM_AGENT_ID".to_string(),
            cfg.name.agent_id(&cfg.team).into(),
        ),
    ];
    let Ok(exe) = std::env::current_exe().and_then(|e| e.canonicalize()) else {
        return env;
    };
    let on_path = which::which("swarm")
        .ok()
        .and_then(|p| p.canonicalize().ok());
    if on_path.is_some_and(|p| p == exe) {
        return env;
    }
    if let Some(dir) = exe.parent() {
        let mut paths = vec![dir.to_path_buf()];
        if let Some(path) = std::env::var_os("PATH") {
            paths.extend(std::env::split_paths(&path));
        }
        if let Ok(joined) = std::env::join_paths(paths) {
            env.push(("PATH".to_string(), joined));
        }
    }
    env
}

fn preview(m: &InboxMessage) -> String {
    let text = m.summary.as_deref().unwrap_or(&m.text);
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(72) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}

fn suffix(text: Option<&str>) -> String {
    text.filter(|t| !t.is_empty())
        .map(|t| format!(": {t}"))
        .unwrap_or_default()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn step(work: Work) -> Step {
        match work {
            Work::Run { mut steps, .. } => steps.remove(0),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_prompt_goes_last_in_place_of_the_placeholder_or_on_stdin() {
        let s = step(command_work(&argv(&["agent", "-p"]), PromptVia::Arg, "hi"));
        assert_eq!(s.args, vec![OsString::from("-p"), "hi".into()]);
        assert_eq!(s.stdin, None);
        let s = step(command_work(
            &argv(&["agent", "--msg={prompt}", "-v"]),
            PromptVia::Arg,
            "hi",
        ));
        assert_eq!(s.args, vec![OsString::from("--msg=hi"), "-v".into()]);
        let s = step(command_work(&argv(&["agent", "-"]), PromptVia::Stdin, "hi"));
        assert_eq!(s.args, vec![OsString::from("-")]);
        assert_eq!(s.stdin.as_deref(), Some(&b"hi"[..]));
    }
}
