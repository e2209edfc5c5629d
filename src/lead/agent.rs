//! An agent as the team's lead: `swarm lead --team T -- CMD` (started in the lead pane by
//! `swarm launch --lead AGENT`).
//!
//! It is the lead console plus an agent. The console part is `console::Console` as it is: it
//! handles every message in `team-lead.json` (shutdown approvals, permission and plan questions,
//! which stay the human's unless `--approvals auto`), reaps dead teammates, and takes what the
//! person types in the pane (`@name text`, `/status`, `y`/`n`), so the human console keeps
//! working alongside. The agent part runs the agent CLI once per turn with the teammate
//! runtime's machinery (`teammate::process` runs the turn in a process group of its own,
//! `teammate::agent` builds the command line, `teammate::session` keeps one conversation), with
//! the lead's identity in its environment, so its `swarm` commands act as the lead. Its first
//! turn is the goal plus a guide to the team (`prompt`); after that it is woken, on file events,
//! with the blocks `prompt` makes of what the console handled, and with `killed`
//! notifications for tasks whose teammate died with them.
//!
//! The team ends when the agent runs `swarm done` (a file the lead side writes, not words in its
//! output), or with `--exit-when-done` once every task is completed: every teammate is then shut
//! down through the handshake (`lifecycle::shutdown`). Then, in a pane and without
//! `--exit-when-done`, the console stays with the summary on screen until `/quit` (the pane is
//! where the person reads how the team ended); otherwise the runtime exits 0.

mod decide;
mod facts;
mod prompt;

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc::unbounded_channel;

use super::console::{Console, LeadOptions};
use super::{typed_lines, watch, watch_lead_inbox, Wake};
use crate::error::{Error, Result};
use crate::process::signals::Signals;
use crate::store::fsio;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::requests::{self, Request};
use crate::store::roster::Roster;
use crate::store::tasks::{TaskList, TaskStatus};
use crate::store::usage;
use crate::store::watcher::rescan_interval;
use crate::teammate::args::PromptVia;
use crate::teammate::pane::Pane;
use crate::teammate::process::TurnHandle;
use crate::teammate::session::Session;
use crate::teammate::work::{Launch, Outcome, Work};
use crate::teammate::Agent;

/// How long teammates get to approve the final shutdown before they are stopped anyway.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// Who decides teammates' permission and plan requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Approvals {
    /// The person at the console (the lead pane, or `swarm permission approve`).
    Human,
    /// The lead agent, in a turn whose answer must be `approve` or `deny: REASON` (the person
    /// at the console can still answer first).
    Lead,
    /// Approved at once, each recorded as approved automatically.
    Auto,
}

impl Approvals {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Approvals::Human => "human",
            Approvals::Lead => "lead",
            Approvals::Auto => "auto",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct LeadAgentOptions {
    /// The agent command line, run once per turn with the prompt as its last argument.
    pub(crate) argv: Vec<String>,
    pub(crate) approvals: Approvals,
    pub(crate) exit_when_done: bool,
}

/// Where the launcher leaves the goal: `teams/<team>/lead/goal.md`.
pub(crate) fn goal_path(store: &Store, team: &TeamName) -> PathBuf {
    store.team_dir(team).join("lead").join("goal.md")
}

/// What `swarm done` writes: `teams/<team>/lead/done.json`.
pub(crate) fn done_path(store: &Store, team: &TeamName) -> PathBuf {
    store.team_dir(team).join("lead").join("done.json")
}

/// Marks that the goal turn was handed over, so a restarted lead does not start over.
fn started_path(store: &Store, team: &TeamName) -> PathBuf {
    store.team_dir(team).join("lead").join("started")
}

/// Writes the goal for the lead agent's first turn.
pub(crate) fn write_goal(store: &Store, team: &TeamName, goal: &str) -> Result<()> {
    let path = goal_path(store, team);
    fsio::ensure_dir(path.parent().expect("under the team dir"))?;
    fsio::write_atomic(&path, goal.as_bytes())
}

enum TurnEvent {
    HandedOver,
    Done(Outcome),
}

/// Runs the lead agent until the team is done (0), `/quit` (0) or a signal (128 + signal).
pub(crate) fn run(store: &Store, team: &TeamName, opts: LeadAgentOptions) -> Result<i32> {
    Roster::new(store, team).load()?;
    crate::store::authority::require_lead(store, team, "run the lead agent")?;
    let goal = fsio::read_file(&goal_path(store, team))?.ok_or_else(|| {
        Error::usage(format!(
            "team {team} has no goal for its lead agent ({}); launch it with `swarm launch --lead AGENT --goal TEXT`",
            goal_path(store, team).display()
        ))
    })?;
    let goal = String::from_utf8_lossy(&goal).into_owned();
    crate::process::block_on(LeadAgent::new(store, team, opts)?.serve(goal))
}

/// Whether this lead runs in a pane of its own (tmux, iTerm2), where a person reads and types
/// after the team is done; an in-process lead is a child of the foreground `swarm launch`,
/// which ends with the team.
fn in_a_pane() -> bool {
    std::env::var("SWARM_BACKEND").is_ok_and(|b| !b.is_empty() && b != "in-process")
}

struct LeadAgent<'a> {
    store: &'a Store,
    team: &'a TeamName,
    opts: LeadAgentOptions,
    agent: Agent,
    session: Option<Session>,
    pane: Pane,
    /// Tasks in progress at the last look, with their owners: one that went back to pending
    /// because its owner died is reported `killed`.
    in_progress: BTreeMap<String, String>,
    /// Whether an unsigned `done.json` was reported already (it is looked at on every wake).
    forged_done_noted: std::cell::Cell<bool>,
}

impl<'a> LeadAgent<'a> {
    fn new(store: &'a Store, team: &'a TeamName, opts: LeadAgentOptions) -> Result<LeadAgent<'a>> {
        let agent = Agent::Command {
            argv: opts.argv.clone(),
            prompt_via: PromptVia::Arg,
        };
        let session = match agent.adapter() {
            Some(adapter) => Some(Session::open(store, team, &AgentName::lead(), adapter)?),
            None => None,
        };
        Ok(LeadAgent {
            store,
            team,
            opts,
            agent,
            session,
            pane: Pane::new(crate::store::names::LEAD, crate::store::colour::LEAD_COLOR),
            in_progress: BTreeMap::new(),
            forged_done_noted: std::cell::Cell::new(false),
        })
    }

    async fn serve(mut self, goal: String) -> Result<i32> {
        let (store, team) = (self.store, self.team);
        let mut signals = Signals::catch()?;
        let mut console = Console::new(
            store,
            team,
            LeadOptions {
                auto_approve: self.opts.approvals == Approvals::Auto,
                exit_when_done: false,
                // Only the person decides: they are told when a request waits on them.
                notify_after: (self.opts.approvals == Approvals::Human)
                    .then_some(crate::lead::nudge::DEFAULT_AFTER),
            },
        );
        console.handled = Some(Vec::new());
        let (wake, mut wakes) = unbounded_channel();
        let _inbox = watch_lead_inbox(store, team, &wake)?;
        let _alive = watch(&store.alive_dir(team), &wake, Wake::Exited)?;
        let _tasks = watch(&store.tasks_dir(team), &wake, Wake::Changed)?;
        let lead_dir = goal_path(store, team)
            .parent()
            .expect("a dir")
            .to_path_buf();
        let _lead = watch(&lead_dir, &wake, Wake::Changed)?;
        let (turn_tx, mut turn_rx) = unbounded_channel();
        let mut lines = typed_lines();
        self.pane.say(format!(
            "lead agent of team {team} is up, running `{}` (approvals: {}{})",
            self.opts.argv.join(" "),
            self.opts.approvals.as_str(),
            if self.opts.exit_when_done {
                ", exits when every task is completed"
            } else {
                ""
            }
        ));
        let mut current: Option<TurnHandle> = None;
        let mut pending = prompt::Waiting::default();
        let mut queue: VecDeque<Request> = VecDeque::new();
        // The request the running turn decides, if it is a decision turn.
        let mut deciding: Option<Request> = None;
        let mut first_done = started_path(store, team).exists();
        let mut notices =
            prompt::Notices::new(store, team, crate::store::lead_key::verifier(store, team)?);
        loop {
            console.drain_inbox()?;
            console.questions.forget_decided()?;
            console.notify_waiting();
            console.reap_dead()?;
            // Native claude teammates claim nothing themselves: the lead hands tasks out.
            console.dispatch_tasks();
            let handled = console.handled.replace(Vec::new()).unwrap_or_default();
            if !handled.is_empty() {
                // Task notifications say what the task files say, read after the reports.
                let tasks = TaskList::new(store, team).list()?;
                let roster = Roster::new(store, team).load()?;
                notices.refresh();
                for m in &handled {
                    if let Some(block) = notices.block(m, &tasks, &roster) {
                        pending.push(block);
                    }
                }
            }
            for m in &handled {
                let Some(request) = requests::of_message(store, team, m)? else {
                    continue;
                };
                match self.opts.approvals {
                    Approvals::Human => {}
                    Approvals::Lead => queue.push_back(request),
                    // The console approved it as it handled it.
                    Approvals::Auto => {
                        decide::record(store, team, &request, true, None, decide::BY_AUTO)?
                    }
                }
            }
            for block in self.killed_tasks(&notices)? {
                pending.push(prompt::Block::notice(block));
            }
            if let Some(why) = self.finished(current.is_none() && pending.is_empty())? {
                if let Some(turn) = current.take() {
                    turn.stop(rustix::process::Signal::TERM);
                }
                let code = self.end(&why)?;
                if self.opts.exit_when_done || !in_a_pane() {
                    return Ok(code);
                }
                // The pane stays with the summary, and the console keeps working in it.
                self.pane
                    .say("the console stays: @name text, /status, /tasks; /quit closes it");
                loop {
                    console.drain_inbox()?;
                    console.questions.forget_decided()?;
                    tokio::select! {
                        line = lines.recv() => match line {
                            Some(line) if console.command(line.trim())? => {}
                            _ => return Ok(code),
                        },
                        Some(_) = wakes.recv() => while wakes.try_recv().is_ok() {},
                        caught = signals.recv() => return Ok(128 + caught.number()),
                        () = tokio::time::sleep(rescan_interval()) => {}
                    }
                }
            }
            if current.is_none() {
                let prompt = if !first_done {
                    let roster = Roster::new(store, team).load()?;
                    let tasks = TaskList::new(store, team).list()?;
                    Some(prompt::first_turn(&goal, team.as_str(), &roster, &tasks))
                } else if let Some(said) = pending.take_person() {
                    // What the person said goes ahead of requests and notifications.
                    Some(said)
                } else if let Some(request) = self.next_undecided(&mut queue)? {
                    let prompt = decide::prompt(&request);
                    deciding = Some(request);
                    Some(prompt)
                } else {
                    pending.take_all()
                };
                if let Some(prompt) = prompt {
                    current = Some(self.start(&prompt, &turn_tx));
                }
            }
            tokio::select! {
                Some(line) = lines.recv() => {
                    if !console.command(line.trim())? {
                        if let Some(turn) = current.take() {
                            turn.stop(rustix::process::Signal::TERM);
                        }
                        return Ok(0);
                    }
                }
                Some(_) = wakes.recv() => while wakes.try_recv().is_ok() {},
                Some(event) = turn_rx.recv() => match event {
                    TurnEvent::HandedOver => {
                        if !first_done {
                            fsio::write_atomic(&started_path(store, team), b"")?;
                            first_done = true;
                        }
                        if let Some(session) = self.session.as_mut() {
                            session.handed_over(store, team, &AgentName::lead())?;
                        }
                    }
                    TurnEvent::Done(outcome) => {
                        current = None;
                        if let (Some(session), Some(adapter)) =
                            (self.session.as_mut(), self.agent.adapter())
                        {
                            let (out, err) = (&outcome.output, &outcome.stderr);
                            session.after_turn(adapter, out, err, store, team, &AgentName::lead())?;
                        }
                        let lead = AgentName::lead();
                        if let Err(e) = usage::record_turn(store, team, &lead, &outcome.output) {
                            self.pane.say(format!("could not record the turn's token usage: {e}"));
                        }
                        if let Some(request) = deciding.take() {
                            self.pane.say(match decide::parse_answer(&outcome.output) {
                                Some((approve, feedback)) => {
                                    decide::apply(store, team, &request, approve, feedback)?
                                }
                                None => "the lead agent gave no explicit `approve` or `deny: REASON`; the request stays with the console".to_string(),
                            });
                        }
                        self.pane.say(match &outcome.failure {
                            None => "■ lead turn done".to_string(),
                            Some(why) => format!("✘ lead turn failed: {why}"),
                        });
                        if outcome.failure.is_some() && !first_done {
                            // The agent never started: try again on the slow re-scan.
                            tokio::time::sleep(rescan_interval()).await;
                        }
                    }
                },
                caught = signals.recv() => {
                    if let Some(turn) = current.take() {
                        turn.stop(rustix::process::Signal::TERM);
                    }
                    return Ok(128 + caught.number());
                }
                () = tokio::time::sleep(rescan_interval()) => {}
            }
        }
    }

    /// The first queued request nobody has decided yet; those the person decided meanwhile
    /// are dropped (the console's queue says who decided them).
    fn next_undecided(&self, queue: &mut VecDeque<Request>) -> Result<Option<Request>> {
        while let Some(request) = queue.pop_front() {
            if requests::decided(self.store, self.team, &request)?.is_none() {
                return Ok(Some(request));
            }
        }
        Ok(None)
    }

    /// Starts one turn of the agent with `prompt`.
    fn start(
        &self,
        prompt: &str,
        tx: &tokio::sync::mpsc::UnboundedSender<TurnEvent>,
    ) -> TurnHandle {
        self.pane.say("▶ lead turn");
        let steps = match self.agent.prompt_work(prompt, self.session.as_ref()) {
            Work::Run { steps, .. } => steps,
            Work::Reply { .. } => unreachable!("an agent command always runs"),
        };
        let mut env = vec![
            (
                "SWARM_ROOT".to_string(),
                self.store.root().as_os_str().to_owned(),
            ),
            ("SWARM_TEAM".to_string(), self.team.as_str().into()),
            (
                "SWARM_AGENT_NAME".to_string(),
                crate::store::names::LEAD.into(),
            ),
            (
                "SWARM_AGENT_ID".to_string(),
                AgentName::lead().agent_id(self.team).into(),
            ),
        ];
        if let Some(path) = crate::teammate::config::path_with_this_swarm() {
            env.push(("PATH".to_string(), path));
        }
        let launch = Launch {
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            env,
        };
        let (handed, done) = (tx.clone(), tx.clone());
        TurnHandle::start(
            steps,
            String::new(),
            launch,
            self.pane.clone(),
            move || {
                let _ = handed.send(TurnEvent::HandedOver);
            },
            move |outcome| {
                let _ = done.send(TurnEvent::Done(outcome));
            },
        )
    }

    /// `<task-notification status="killed">` for each task that was in progress last time and
    /// went back to pending because its owner is no longer active.
    fn killed_tasks(&mut self, notices: &prompt::Notices) -> Result<Vec<String>> {
        let tasks = TaskList::new(self.store, self.team).list()?;
        let roster = Roster::new(self.store, self.team).load()?;
        let mut killed = Vec::new();
        for t in &tasks {
            let id = t.id.to_string();
            let Some(owner) = self.in_progress.get(&id) else {
                continue;
            };
            let active = roster.member(owner).is_some_and(|m| !m.retired());
            if t.status == TaskStatus::Pending && t.owner.is_none() && !t.parked() && !active {
                killed.push(prompt::task_notification(
                    &id,
                    "killed",
                    owner,
                    &format!("{owner} stopped before finishing task #{id}"),
                    "",
                    &notices.facts(&id, owner, &roster),
                ));
            }
        }
        self.in_progress = tasks
            .iter()
            .filter(|t| t.status == TaskStatus::InProgress)
            .filter_map(|t| Some((t.id.to_string(), t.owner.clone()?)))
            .collect();
        Ok(killed)
    }

    /// Why the team is over, if it is: the agent ran `swarm done`, or (`--exit-when-done`,
    /// with nothing left to tell the agent) every task is completed.
    fn finished(&self, quiet: bool) -> Result<Option<String>> {
        let path = done_path(self.store, self.team);
        if let Some(bytes) = fsio::read_file(&path)? {
            let record = serde_json::from_slice::<serde_json::Value>(&bytes).unwrap_or_default();
            let signed =
                crate::store::lead_key::verifier(self.store, self.team)?.is_some_and(|v| {
                    v.verifies_record(
                        self.team.as_str(),
                        crate::store::lead_key::DONE_RECORD,
                        &record,
                    )
                });
            if signed {
                let summary = record["summary"].as_str().unwrap_or_default();
                return Ok(Some(format!("the lead agent is done: {summary}")));
            }
            // Anyone can write the file: only the lead's signed `swarm done` ends the team.
            if !self.forged_done_noted.replace(true) {
                self.pane.say(format!(
                    "ignored {}: it does not carry the team lead's signature (not written by \
                     `swarm done` on the lead's side)",
                    path.display()
                ));
            }
        }
        if self.opts.exit_when_done && quiet {
            let tasks = TaskList::new(self.store, self.team).list()?;
            if !tasks.is_empty() && tasks.iter().all(|t| t.status == TaskStatus::Completed) {
                return Ok(Some("every task is completed".into()));
            }
        }
        Ok(None)
    }

    /// Shuts every active teammate down through the handshake, then ends.
    fn end(&self, why: &str) -> Result<i32> {
        self.pane.say(format!("{why}; shutting the team down"));
        let roster = Roster::new(self.store, self.team).load()?;
        let names: Vec<AgentName> = roster
            .teammates()
            .filter(|m| !m.retired())
            .map(|m| m.name.clone())
            .collect();
        let opts = crate::lifecycle::ShutdownOptions {
            timeout: SHUTDOWN_TIMEOUT,
            force: true,
            reason: Some("the team is done".into()),
            grace: None,
        };
        for outcome in crate::lifecycle::shutdown(self.store, self.team, &names, &opts)? {
            self.pane.say(format!(
                "{}: {}{}",
                outcome.name,
                outcome.outcome.as_str(),
                if outcome.killed { ", pane closed" } else { "" }
            ));
        }
        self.pane.say("the team is done");
        Ok(0)
    }
}
