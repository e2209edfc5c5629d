//! The lead console: `swarm lead --team T`.
//!
//! It is the lead's side of the protocol for a person at a terminal (the first pane of a launch)
//! or for a script (`--auto-approve`). It follows `team-lead.json` live, prints what teammates
//! say as readable coloured lines, answers the protocol (shutdown approvals retire the member;
//! permission and plan requests are put to the person, or approved with `--auto-approve`),
//! notices teammates that died, and sends what the person types: `@name text`, `@* text`,
//! `/status`, `/tasks`, `/shutdown [name]`.

use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::lifecycle;
use crate::store::liveness::{Liveness, ReapGate};
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::permissions::{Decision, Permissions};
use crate::store::protocol::{
    timestamp_now, IdleNotification, Payload, PermissionRequest, PlanApprovalRequest,
    PlanApprovalResponse, Protocol,
};
use crate::store::roster::{Member, Roster};
use crate::store::tasks::{TaskList, TaskStatus};
use crate::store::watcher::DirWatcher;

#[derive(Debug, Clone, Default)]
pub struct LeadOptions {
    /// Approve every permission and plan request without asking.
    pub auto_approve: bool,
    /// Return once every teammate is inactive (after at least one was active).
    pub exit_when_done: bool,
}

/// A question waiting for the person's `y` / `n [feedback]`.
#[derive(Debug)]
enum Question {
    Permission(PermissionRequest, String),
    Plan(PlanApprovalRequest),
}

enum Event {
    Line(String),
    InputClosed,
    Changed,
    /// Something in `alive/` was closed after writing: a runtime may have died.
    Exited,
}

/// After a runtime's exit is seen, one more look this soon: the kernel reports the close of its
/// lock file as it tears the descriptor down, possibly a moment before the lock is free.
const SECOND_LOOK: Duration = Duration::from_millis(150);

pub struct Console<'a> {
    store: &'a Store,
    team: &'a TeamName,
    opts: LeadOptions,
    questions: VecDeque<Question>,
    paint: Paint,
    lead: AgentName,
}

impl<'a> Console<'a> {
    pub fn new(store: &'a Store, team: &'a TeamName, opts: LeadOptions) -> Console<'a> {
        Console {
            store,
            team,
            opts,
            questions: VecDeque::new(),
            paint: Paint::detect(),
            lead: AgentName::lead(),
        }
    }

    /// Runs until `/quit`, or with `exit_when_done` until every teammate is inactive.
    pub fn run(mut self) -> Result<()> {
        Roster::new(self.store, self.team).load()?;
        let (tx, rx) = channel();
        spawn_input(tx.clone());
        spawn_watch(self.store.inboxes_dir(self.team), tx.clone(), false)?;
        // A dead runtime's lock release is no file event, so without this the lead would only
        // notice on its slow re-scan; the close of the lock file is one.
        spawn_watch(self.store.alive_dir(self.team), tx, true)?;
        let mut look_again = false;
        self.say(&format!(
            "lead console for team {} - @name text, @* text, /status, /tasks, /shutdown [name], /help",
            self.team
        ));
        loop {
            self.drain_inbox()?;
            self.reap_dead()?;
            if self.opts.exit_when_done && self.all_done()? {
                self.drain_inbox()?; // the retirement notices just written
                self.say("every teammate has stopped");
                return Ok(());
            }
            let wait = if look_again {
                SECOND_LOOK
            } else {
                crate::store::watcher::rescan_interval()
            };
            look_again = false;
            match next_event(&rx, wait) {
                Some(Event::Line(line)) => {
                    if !self.command(line.trim())? {
                        return Ok(());
                    }
                }
                Some(Event::Exited) => look_again = true,
                // Without input (a script, `< /dev/null`) the console keeps following.
                Some(Event::InputClosed | Event::Changed) | None => {}
            }
        }
    }

    fn say(&self, text: &str) {
        let _ = crate::output::line(text);
    }

    fn all_done(&self) -> Result<bool> {
        let config = Roster::new(self.store, self.team).load()?;
        let mut teammates = config.teammates().peekable();
        Ok(teammates.peek().is_some() && config.teammates().all(|m| !m.active()))
    }

    /// Handles every undelivered message in the lead's inbox, then marks exactly those.
    fn drain_inbox(&mut self) -> Result<()> {
        let mailbox = Mailbox::new(self.store, self.team);
        let unread = mailbox.read(&self.lead, true)?;
        if unread.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = unread.iter().map(InboxMessage::key).collect();
        for message in unread {
            self.handle(&message)?;
        }
        mailbox.mark_delivered(&self.lead, &keys)?;
        Ok(())
    }

    fn handle(&mut self, m: &InboxMessage) -> Result<()> {
        let color = m.color.clone().unwrap_or_default();
        let who = self.paint.name(&m.from, &color);
        match m.payload() {
            Payload::Text(text) => {
                let summary = m
                    .summary
                    .as_deref()
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default();
                self.say(&format!("{who}{summary}: {text}"));
            }
            Payload::Protocol(p) => match *p {
                Protocol::IdleNotification(n) => self.say(&format!("{who} {}", describe_idle(&n))),
                Protocol::ShutdownApproved(a)
                    if a.from == m.from && self.asked(&m.from, &a.request_id)? =>
                {
                    self.say(&format!("{who} approved shutdown"));
                    self.retire(&m.from, "it approved shutdown")?;
                }
                Protocol::ShutdownRejected(r) if r.from == m.from => {
                    self.say(&format!("{who} declined shutdown: {}", r.reason));
                }
                Protocol::PermissionRequest(r) if r.agent_id == m.from => {
                    self.adopt_permission(&r, &m.from)?;
                    self.ask(Question::Permission(r, m.from.clone()))?;
                }
                Protocol::PlanApprovalRequest(r) if r.from == m.from => {
                    self.ask(Question::Plan(r))?;
                }
                other => self.say(&format!("{who} sent {} (ignored)", other.type_name())),
            },
        }
        Ok(())
    }

    /// Whether a shutdown request with this id was sent to `name` (by this console or by
    /// `swarm shutdown` in another shell): replies to requests nobody made are ignored.
    fn asked(&self, name: &str, request_id: &str) -> Result<bool> {
        let Ok(who) = name.parse::<AgentName>() else {
            return Ok(false);
        };
        shutdown_was_requested(self.store, self.team, &who, request_id)
    }

    /// A Claude Code teammate only sends the message; file it so `ls pending/` shows it and the
    /// normal resolve path applies.
    fn adopt_permission(&self, r: &PermissionRequest, from: &str) -> Result<()> {
        Permissions::new(self.store, self.team).adopt(r, from)
    }

    fn ask(&mut self, q: Question) -> Result<()> {
        if self.opts.auto_approve {
            return self.answer(q, true, None);
        }
        let text = match &q {
            Question::Permission(r, from) => format!(
                "{} asks to use {}: {} {}",
                from, r.tool_name, r.description, r.input
            ),
            Question::Plan(r) => format!(
                "{} submitted a plan ({}):\n{}",
                r.from, r.plan_file_path, r.plan_content
            ),
        };
        self.say(&format!("? {text}"));
        self.questions.push_back(q);
        if self.questions.len() == 1 {
            self.say("  answer y to approve, or n [feedback] to reject");
        }
        Ok(())
    }

    fn answer(&mut self, q: Question, approve: bool, feedback: Option<String>) -> Result<()> {
        match q {
            Question::Permission(r, from) => {
                let decision = Decision {
                    approve,
                    feedback,
                    updated_input: None,
                    resolved_by: self.lead.to_string(),
                };
                match Permissions::new(self.store, self.team).resolve(&r.request_id, decision) {
                    Ok(_) => self.say(&format!(
                        "{} {from}'s use of {}",
                        if approve { "approved" } else { "rejected" },
                        r.tool_name
                    )),
                    // Someone decided from another shell first; theirs stands.
                    Err(e @ (Error::Usage(_) | Error::NoSuchPermission(_))) => {
                        self.say(&format!("{e}"))
                    }
                    Err(e) => return Err(e),
                }
            }
            Question::Plan(r) => {
                let to: AgentName = r.from.parse()?;
                let response = Protocol::PlanApprovalResponse(PlanApprovalResponse {
                    request_id: r.request_id.clone(),
                    approved: approve,
                    feedback: feedback.clone(),
                    timestamp: timestamp_now(),
                    permission_mode: None,
                    extra: Map::new(),
                });
                Mailbox::new(self.store, self.team)
                    .send(&to, InboxMessage::protocol(self.lead.as_str(), &response))?;
                self.say(&format!(
                    "{} {}'s plan",
                    if approve { "approved" } else { "rejected" },
                    r.from
                ));
            }
        }
        Ok(())
    }

    /// Returns false when the console should stop.
    fn command(&mut self, line: &str) -> Result<bool> {
        if line.is_empty() {
            return Ok(true);
        }
        let outcome = self.command_inner(line);
        match outcome {
            Ok(go_on) => Ok(go_on),
            // A typo at the console is reported, never fatal.
            Err(e) if e.exit_code() == 2 => {
                self.say(&format!("! {e}"));
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }

    fn command_inner(&mut self, line: &str) -> Result<bool> {
        if let Some(rest) = line.strip_prefix('@') {
            let (to, text) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            if text.trim().is_empty() {
                return Err(Error::usage("write @name followed by the message"));
            }
            let mailbox = Mailbox::new(self.store, self.team);
            let message =
                InboxMessage::new(self.lead.as_str(), text.trim()).with_color(Some("red".into()));
            if to == "*" {
                let sent = mailbox.broadcast(self.lead.as_str(), message)?;
                self.say(&format!("sent to {} teammates", sent.len()));
            } else {
                mailbox.send(&to.parse()?, message)?;
            }
            return Ok(true);
        }
        let (word, arg) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let arg = arg.trim();
        match word {
            "/status" => self.print_status()?,
            "/tasks" => self.print_tasks()?,
            "/shutdown" => self.request_shutdown(arg)?,
            "/quit" | "/exit" => return Ok(false),
            "/help" => self.say(
                "@name text  message a teammate     @* text   message everyone\n\
                 /status     members and health      /tasks    the task list\n\
                 /shutdown [name]  ask one or all teammates to stop\n\
                 y | n [feedback]  answer the oldest open question\n\
                 /quit       leave the console (teammates keep running)",
            ),
            "y" | "yes" | "n" | "no" => {
                let Some(q) = self.questions.pop_front() else {
                    return Err(Error::usage("no question is waiting for an answer"));
                };
                let approve = word.starts_with('y');
                let feedback = (!arg.is_empty()).then(|| arg.to_string());
                self.answer(q, approve, feedback)?;
            }
            _ => {
                return Err(Error::usage(format!(
                    "unknown command {word:?}; type /help (messages start with @name)"
                )))
            }
        }
        Ok(true)
    }

    fn print_status(&self) -> Result<()> {
        let config = Roster::new(self.store, self.team).load()?;
        let tasks = TaskList::new(self.store, self.team).list()?;
        for m in config.teammates() {
            let name: AgentName = m.name.parse()?;
            let health = lifecycle::member_health(self.store, self.team, m)?;
            let current = tasks
                .iter()
                .find(|t| t.owner.as_deref() == Some(&m.name) && t.status == TaskStatus::InProgress)
                .map(|t| format!("#{} {}", t.id, t.subject))
                .unwrap_or_else(|| "-".into());
            let unread = Mailbox::new(self.store, self.team).read(&name, true)?.len();
            self.say(&format!(
                "{:<20} {:<8} {:<7} unread {:<3} {current}",
                self.paint.name(&m.name, m.color_or_default()),
                if m.active() { "active" } else { "stopped" },
                match (health.dead, health.liveness) {
                    (true, _) => "dead",
                    (false, Liveness::Alive) => "alive",
                    (false, _) => "?",
                },
                unread
            ));
        }
        Ok(())
    }

    fn print_tasks(&self) -> Result<()> {
        let tasks = TaskList::new(self.store, self.team).list()?;
        if tasks.is_empty() {
            self.say("no tasks");
        }
        for t in tasks {
            let owner = t.owner.map(|o| format!(" @{o}")).unwrap_or_default();
            let failed = if t.metadata.get("swarmFailed") == Some(&Value::Bool(true)) {
                " FAILED"
            } else {
                ""
            };
            self.say(&format!(
                "#{:<4} {:<11} {}{owner}{failed}",
                t.id,
                t.status.as_str(),
                t.subject
            ));
        }
        Ok(())
    }

    fn request_shutdown(&self, who: &str) -> Result<()> {
        let config = Roster::new(self.store, self.team).load()?;
        let targets: Vec<&Member> = if who.is_empty() {
            config.teammates().filter(|m| m.active()).collect()
        } else {
            vec![config.member(who).ok_or_else(|| Error::NoSuchMember {
                team: self.team.to_string(),
                name: who.to_string(),
            })?]
        };
        for m in targets {
            lifecycle::send_shutdown_request(self.store, self.team, &m.name.parse()?, None)?;
            self.say(&format!("asked {} to shut down", m.name));
        }
        Ok(())
    }

    /// Teammates whose runtime died without approving shutdown: retire them so their tasks go
    /// back to the pool. The verdict is checked again under the reap gate, so a runtime started
    /// again in the meantime (`lifecycle::rejoin`) is left alone.
    fn reap_dead(&self) -> Result<()> {
        let roster = Roster::new(self.store, self.team);
        let config = roster.load()?;
        for m in config.teammates().filter(|m| m.active()) {
            if !lifecycle::member_health(self.store, self.team, m)?.dead {
                continue;
            }
            let _gate = ReapGate::take(self.store, self.team)?;
            let Some(m) = roster.load()?.member(&m.name).cloned() else {
                continue;
            };
            if !m.active() || !lifecycle::member_health(self.store, self.team, &m)?.dead {
                continue;
            }
            self.say(&format!(
                "{} stopped without saying goodbye",
                self.paint.name(&m.name, m.color_or_default())
            ));
            self.retire(&m.name, "its process died")?;
        }
        Ok(())
    }

    /// Closes the member's pane (already gone is fine) and retires it; the notice lifecycle
    /// writes to the lead's inbox is printed on the next pass.
    fn retire(&self, name: &str, why: &str) -> Result<()> {
        let config = Roster::new(self.store, self.team).load()?;
        if let Some(member) = config.member(name) {
            if let Err(e) = lifecycle::kill_member(self.store, self.team, member) {
                self.say(&format!("! could not close {name}'s pane: {e}"));
            }
        }
        lifecycle::retire_member(self.store, self.team, &name.parse()?, why)?;
        Ok(())
    }
}

/// Looks for the `shutdown_request` with `request_id` in `to`'s inbox and its archive.
pub fn shutdown_was_requested(
    store: &Store,
    team: &TeamName,
    to: &AgentName,
    request_id: &str,
) -> Result<bool> {
    let is_it = |text: &str| {
        matches!(Payload::parse(text), Payload::Protocol(p)
            if matches!(&*p, Protocol::ShutdownRequest(r) if r.request_id == request_id))
    };
    if Mailbox::new(store, team)
        .read(to, false)?
        .iter()
        .any(|m| is_it(&m.text))
    {
        return Ok(true);
    }
    let archive = crate::store::fsio::read_file(&store.archive_path(team, to))?.unwrap_or_default();
    Ok(String::from_utf8_lossy(&archive)
        .lines()
        .filter_map(|l| serde_json::from_str::<InboxMessage>(l).ok())
        .any(|m| is_it(&m.text)))
}

fn describe_idle(n: &IdleNotification) -> String {
    let mut s = match (&n.completed_task_id, n.completed_status.as_deref()) {
        (Some(id), Some("failed")) => format!(
            "failed task #{id}{}",
            n.failure_reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ),
        (Some(id), Some(status)) => format!("finished task #{id} ({status})"),
        (Some(id), None) => format!("finished task #{id}"),
        _ => "is idle".to_string(),
    };
    // A finished task's summary only repeats what the line already says.
    if let Some(summary) = n
        .summary
        .as_deref()
        .filter(|s| !s.is_empty() && n.completed_task_id.is_none())
    {
        s.push_str(&format!(" - {summary}"));
    }
    s
}

fn next_event(rx: &Receiver<Event>, wait: Duration) -> Option<Event> {
    match rx.recv_timeout(wait) {
        Ok(e) => Some(e),
        Err(RecvTimeoutError::Timeout) => None,
        Err(RecvTimeoutError::Disconnected) => {
            std::thread::sleep(Duration::from_millis(200));
            None
        }
    }
}

fn spawn_input(tx: Sender<Event>) {
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(Event::Line(line)).is_err() {
                return;
            }
        }
        let _ = tx.send(Event::InputClosed);
    });
}

/// Wakes the console on changes in `dir`: inbox writes, or (`exits`) runtimes that end.
fn spawn_watch(dir: std::path::PathBuf, tx: Sender<Event>, exits: bool) -> Result<()> {
    crate::store::fsio::ensure_dir(&dir)?;
    let (watcher, event): (_, fn() -> Event) = if exits {
        (DirWatcher::for_exits(&dir)?, || Event::Exited)
    } else {
        (DirWatcher::new(&dir)?, || Event::Changed)
    };
    std::thread::spawn(move || loop {
        watcher.wait(None);
        if tx.send(event()).is_err() {
            return;
        }
    });
    Ok(())
}

/// ANSI colours for names, only on a terminal and without NO_COLOR.
struct Paint {
    on: bool,
}

impl Paint {
    fn detect() -> Paint {
        Paint {
            on: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    fn name(&self, name: &str, color: &str) -> String {
        if !self.on {
            return name.to_string();
        }
        let code = crate::store::colour::Colour::named(color).map_or("1", |c| c.ansi);
        format!("\x1b[{code}m{name}\x1b[0m")
    }
}
