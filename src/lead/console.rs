//! The lead's side of the protocol: what the console does with each message in `team-lead.json`.
//!
//! Text is printed; a shutdown approval retires the member (only for a request someone really
//! sent); permission and plan requests become questions for the person (`questions`), or are
//! approved with `--auto-approve`, and the person is told of those left open too long
//! (`nudge`); teammates whose runtime died are retired so their tasks go
//! back to the pool; idle claude teammates are handed available tasks (`dispatch`). Each pass handles every undelivered message and only then marks exactly
//! those, so a console stopped mid-pass sees the rest again on its next start.
//!
//! Everything printed goes through `say` or `say_from`, which make control characters visible:
//! what teammates write must not be able to rewrite the lines the person reads. A text over
//! several lines has its later lines indented, so none of them passes for a console line.

use super::dispatch;
use super::nudge::Nudge;
use super::paint::{shown, Paint};
use super::questions::Questions;
use crate::error::{Error, Result};
use crate::lifecycle;
use crate::store::liveness::{self, ReapGate};
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{Payload, Protocol, ShutdownApproved};
use crate::store::requests;
use crate::store::roster::{Member, Roster, TeamConfig};
use crate::store::tasks::history::Observer;
use crate::store::tasks::{Task, TaskIndex, TaskList};

#[derive(Debug, Clone)]
pub(crate) struct LeadOptions {
    /// Approve every permission and plan request without asking.
    pub(crate) auto_approve: bool,
    /// Return once every teammate is inactive (after at least one was active).
    pub(crate) exit_when_done: bool,
    /// Tell the person (bell, tmux, `Notification` hooks) about a request open this long;
    /// `None` never (`nudge`).
    pub(crate) notify_after: Option<std::time::Duration>,
}

pub(super) struct Console<'a> {
    pub(super) store: &'a Store,
    pub(super) team: &'a TeamName,
    pub(super) opts: LeadOptions,
    /// The open questions; `y` and `n` answer the current one.
    pub(super) questions: Questions<'a>,
    pub(super) paint: Paint,
    pub(super) lead: AgentName,
    /// The task list in memory for `/tasks` and `/status`, opened on first use.
    task_index: std::cell::RefCell<Option<TaskIndex>>,
    /// Records in the task history what Claude Code teammates change in the task list.
    history: Observer,
    /// When set (the lead agent's runtime), every message a pass handled is kept here too.
    pub(super) handled: Option<Vec<InboxMessage>>,
    /// Tells the person about requests left open too long.
    pub(super) nudge: Nudge,
    /// The shutdown approvals a pass read: their senders are retired together once the pass
    /// has read every message (`retire_approved`).
    approved: Vec<Leaving>,
}

/// A teammate to retire, and why; the approval it sent, when it is leaving by approving.
struct Leaving {
    name: AgentName,
    color: String,
    why: &'static str,
    approval: Option<ShutdownApproved>,
}

impl<'a> Console<'a> {
    pub(super) fn new(store: &'a Store, team: &'a TeamName, opts: LeadOptions) -> Console<'a> {
        Console {
            store,
            team,
            questions: Questions::new(store, team, opts.auto_approve),
            opts: opts.clone(),
            paint: Paint::detect(),
            lead: AgentName::lead(),
            task_index: std::cell::RefCell::new(None),
            history: Observer::new(store, team),
            handled: None,
            approved: Vec::new(),
            nudge: Nudge::new(
                store,
                team,
                opts.notify_after.filter(|_| !opts.auto_approve),
            ),
        }
    }

    /// Every task, by id, as fresh as a scan: from the console's task index, which re-reads
    /// only the files that changed since the last look.
    pub(super) fn tasks(&self) -> Result<Vec<Task>> {
        let mut index = self.task_index()?;
        index.refresh()?;
        Ok(index.tasks().cloned().collect())
    }

    /// The console's task index, opened on first use.
    fn task_index(&self) -> Result<std::cell::RefMut<'_, TaskIndex>> {
        let mut slot = self.task_index.borrow_mut();
        if slot.is_none() {
            *slot = Some(TaskIndex::open(self.store, self.team)?);
        }
        Ok(std::cell::RefMut::map(slot, |s| {
            s.as_mut().expect("opened just above")
        }))
    }

    /// Prints `text` with control characters made visible and later lines indented.
    pub(super) fn say(&self, text: &str) {
        let _ = crate::output::line(shown(text));
    }

    /// `name` in its colour, then `rest`, both with control characters made visible.
    pub(super) fn say_from(&self, name: &str, color: &str, rest: &str) {
        let _ = crate::output::line(format!("{}{}", self.paint.name(name, color), shown(rest)));
    }

    /// Appends to the task history what others (Claude Code teammates) changed in the task list
    /// since the last pass. A failure is reported and the console goes on.
    fn observe_tasks(&mut self) {
        let seen = self.tasks().and_then(|tasks| {
            self.history
                .observe(&TaskList::new(self.store, self.team), &tasks)
        });
        if let Err(e) = seen {
            self.say(&format!(
                "! could not bring the task history up to date: {e}"
            ));
        }
    }

    /// Hands available tasks to idle claude teammates ([`dispatch`]). A failure is reported and
    /// the console goes on: the next pass tries again.
    pub(super) fn dispatch_tasks(&self) {
        let assigned = self
            .task_index()
            .and_then(|mut index| dispatch::dispatch(self.store, self.team, &mut index));
        match assigned {
            Ok(assigned) => {
                for a in assigned {
                    self.say(&format!(
                        "assigned task #{} ({}) to {}",
                        a.task.id, a.task.subject, a.to
                    ));
                }
            }
            Err(e) => self.say(&format!("! could not hand out tasks: {e}")),
        }
    }

    /// One pass: the inbox, the questions decided elsewhere, the teammates that died; `true`
    /// when the console is to stop now (`--exit-when-done` and every teammate done).
    pub(super) fn pass(&mut self) -> Result<bool> {
        // Questions decided elsewhere go before new ones are shown, not right after: a `y` typed
        // at a prompt this pass printed must still mean that prompt's request.
        self.questions.forget_decided()?;
        self.drain_inbox()?;
        self.notify_waiting();
        self.reap_dead()?;
        self.observe_tasks();
        self.dispatch_tasks();
        Ok(self.opts.exit_when_done && self.all_done()?)
    }

    /// Tells the person about the questions left open too long (`nudge`).
    pub(super) fn notify_waiting(&mut self) {
        self.nudge.check(self.questions.waiting());
    }

    /// Whether there are teammates and every one of them is retired (stopped, or found dead and
    /// reaped). An idle teammate (`isActive: false`, which Claude Code writes between turns) is
    /// not done.
    fn all_done(&self) -> Result<bool> {
        let config = Roster::new(self.store, self.team).load()?;
        let mut teammates = config.teammates().peekable();
        Ok(teammates.peek().is_some() && config.teammates().all(|m| m.retired()))
    }

    /// Handles every undelivered message in the lead's inbox, then marks exactly those.
    pub(super) fn drain_inbox(&mut self) -> Result<()> {
        let mailbox = Mailbox::new(self.store, self.team);
        let unread = mailbox.read(&self.lead, true)?;
        if unread.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = unread.iter().map(InboxMessage::key).collect();
        let kept = if self.handled.is_some() {
            unread.clone()
        } else {
            Vec::new()
        };
        for message in unread {
            match self.handle(&message) {
                // The roster changed under the message (the member was removed meanwhile):
                // the console says so and goes on, whatever the team does to its roster.
                Err(e @ Error::NoSuchMember { .. }) => self.say(&format!("! {e}")),
                other => other?,
            }
        }
        self.retire_approved()?;
        mailbox.mark_delivered(&self.lead, &keys)?;
        if let Some(handled) = self.handled.as_mut() {
            handled.extend(kept);
        }
        Ok(())
    }

    fn handle(&mut self, m: &InboxMessage) -> Result<()> {
        let color = m.color.clone().unwrap_or_default();
        let say = |rest: &str| self.say_from(m.from.as_str(), &color, rest);
        match m.payload() {
            Payload::Text(text) => {
                let summary = m
                    .summary
                    .as_deref()
                    .map(|s| format!(" ({})", crate::output::terminal::visible(s)))
                    .unwrap_or_default();
                say(&format!("{summary}: {text}"));
            }
            Payload::Protocol(p) => match *p {
                Protocol::IdleNotification(n) => say(&format!(" {}", n.describe())),
                // Frames that report a teammate's own work count only from that teammate.
                Protocol::TaskCompleted(ref c) if c.from.as_deref().is_none_or(|f| f == m.from) => {
                    say(&format!(" {}", p.describe().unwrap_or_default()))
                }
                Protocol::TeammateTerminated(_) => {
                    say(&format!(" {}", p.describe().unwrap_or_default()))
                }
                Protocol::ShutdownApproved(a)
                    if a.from == m.from && self.asked(&m.from, &a.request_id)? =>
                {
                    self.approved.push(Leaving {
                        name: m.from.clone(),
                        color,
                        why: "it approved shutdown",
                        approval: Some(a),
                    });
                }
                Protocol::ShutdownRejected(r) if r.from == m.from => {
                    say(&format!(" declined shutdown: {}", r.reason));
                }
                Protocol::PermissionRequest(_) | Protocol::PlanApprovalRequest(_) => {
                    // A Claude Code teammate's permission request is only the message: this
                    // files it, so `ls pending/` shows it and it is decided like any other.
                    match requests::of_message(self.store, self.team, m)? {
                        Some(request) => self.questions.ask(request)?,
                        None => say(&format!(" sent {} (ignored)", p.type_name())),
                    }
                }
                other => say(&format!(" sent {} (ignored)", other.type_name())),
            },
        }
        Ok(())
    }

    /// Whether `name` was started again after the run that sent `approval`, or is being
    /// started again: how, as the end of a sentence. The approval names its run, and the
    /// member's lock now names another, or (the lock file can be missing: a launch removes a
    /// dead one before it starts the member again) swarm's own record of the process it started
    /// last names another pid. Until a launch has made the new run's pane neither says so, and
    /// its intent on the roster does (`lifecycle::orphans`). An approval read late (the console
    /// was busy or stopped while `restart`, or `down` and `up`, ran) would otherwise retire the
    /// member, and the kill that goes with it would stop the new run once it is recorded. An
    /// approval that names no run (Claude Code's) is the current run's, unless a launch is
    /// opening the member.
    fn earlier_run(&self, member: &Member, approval: &ShutdownApproved) -> Option<&'static str> {
        if let Some(sent_by) = approving_run(approval) {
            let lock = liveness::recorded_run(self.store, self.team, &member.name);
            let spawned =
                crate::process::spawn_record::load(self.store, self.team, member.name.as_str());
            let started = lock.is_some_and(|now| now != sent_by)
                || spawned
                    .zip(liveness::run_pid(sent_by))
                    .is_some_and(|(now, then)| now.pid != then);
            if started {
                return Some("it was started again since");
            }
        }
        lifecycle::orphans::being_opened(member).then_some("it is being started again")
    }

    /// Retires every teammate whose approval this pass read, in one roster write. Each approval
    /// is judged under the reap gate, as its sender is retired, not when it was read: a launch
    /// may start the member again while the console reads the rest of the pass (`swarm up` just
    /// after `down`), and the runtime it starts rejoins under that gate, so it is either seen
    /// here (its lock names it) or rejoins after the retirement. Judged when read, a pass of 16
    /// approvals retired members `up` had started meanwhile (a CI run).
    fn retire_approved(&mut self) -> Result<()> {
        let approved = std::mem::take(&mut self.approved);
        if approved.is_empty() {
            return Ok(());
        }
        let gate = ReapGate::take(self.store, self.team)?;
        let config = Roster::new(self.store, self.team).load()?;
        self.retire_all(gate, &config, approved)
    }

    /// Whether a shutdown request with this id was sent to `name` (by this console or by
    /// `swarm shutdown` in another shell): replies to requests nobody made are ignored.
    fn asked(&self, name: &AgentName, request_id: &str) -> Result<bool> {
        shutdown_was_requested(self.store, self.team, name, request_id)
    }

    /// Teammates whose runtime died without approving shutdown: retire them so their tasks go
    /// back to the pool. A runtime writes its approval before it lets go of its lock, so the
    /// inbox is read again each time one is found dead: an approval that arrived during this
    /// pass is reported as the approval it is, not as a death. The verdict is checked again under the
    /// reap gate, so a runtime started again in the meantime (`lifecycle::rejoin`) is left alone.
    pub(super) fn reap_dead(&mut self) -> Result<()> {
        let roster = Roster::new(self.store, self.team);
        for m in roster.load()?.teammates().filter(|m| !m.retired()) {
            // Its launch is still judging it, and reports it if it died (`launch::verify`).
            if lifecycle::orphans::being_opened(m) {
                continue;
            }
            if !lifecycle::ended(self.store, self.team, m)? {
                continue;
            }
            // After seeing this death, not before: its approval is in by now if it sent one.
            self.drain_inbox()?;
            let gate = ReapGate::take(self.store, self.team)?;
            let config = roster.load()?;
            let Some(m) = config.member(m.name.as_str()) else {
                continue;
            };
            if m.retired() || !lifecycle::ended(self.store, self.team, m)? {
                continue;
            }
            self.say_from(
                m.name.as_str(),
                m.color_or_default(),
                " stopped without saying goodbye",
            );
            let leaving = Leaving {
                name: m.name.clone(),
                color: m.color_or_default().to_string(),
                why: "its process died",
                approval: None,
            };
            self.retire_all(gate, &config, vec![leaving])?;
            self.last_words(&m.name);
        }
        Ok(())
    }

    /// Prints the last lines of a dead teammate's output (its pane's, kept when the pane was
    /// closed, or its in-process log), where the reason it died usually is.
    fn last_words(&self, name: &AgentName) {
        let lines = lifecycle::kept_output::last_lines(self.store, self.team, name, LAST_WORDS);
        if lines.is_empty() {
            return;
        }
        let flags = crate::backend::argv::team_flags(self.store.root(), self.team.as_str());
        self.say(&format!(
            "  its last lines (`swarm logs {flags} {name}` shows more):"
        ));
        for line in lines {
            self.say(&format!("  | {line}"));
        }
    }

    /// Retires each member, in one roster write, then closes its pane (already gone is fine);
    /// the notices lifecycle writes to the lead's inbox are printed on the next pass. `gate` is
    /// the reap gate, `config` read under it; the retirement is written under it, the kills
    /// come after it is let go (stopping one can take seconds, and a starting runtime waits for
    /// the gate). A member no longer on the roster (removed meanwhile) has nothing left to
    /// retire; one that approved is left alone when the approval was an earlier run's, and its
    /// kill is for the run that approved only, so a run started once the gate is free is never
    /// touched.
    fn retire_all(
        &self,
        gate: ReapGate,
        config: &TeamConfig,
        mut leaving: Vec<Leaving>,
    ) -> Result<()> {
        let mut seen = std::collections::HashSet::new();
        leaving.retain(|l| seen.insert(l.name.clone()));
        let mut going = Vec::new();
        for l in leaving {
            let Some(member) = config.member(l.name.as_str()) else {
                self.say(&format!("{} is no longer on the team", l.name));
                continue;
            };
            let mut run = None;
            if let Some(approval) = &l.approval {
                if let Some(since) = self.earlier_run(member, approval) {
                    let rest = format!(" approved shutdown of an earlier run; {since}");
                    self.say_from(l.name.as_str(), &l.color, &rest);
                    continue;
                }
                self.say_from(l.name.as_str(), &l.color, " approved shutdown");
                run = approving_run(approval).and_then(liveness::run_pid);
            }
            going.push((l, member, run));
        }
        if going.is_empty() {
            return Ok(());
        }
        let names: Vec<AgentName> = going.iter().map(|(l, ..)| l.name.clone()).collect();
        let was_active = lifecycle::mark_retired(self.store, self.team, &names)?;
        drop(gate);
        for ((l, member, run), was_active) in going.iter().zip(was_active) {
            let name = &l.name;
            let killed = match run {
                Some(pid) => lifecycle::kill_run(self.store, self.team, member, *pid),
                None => lifecycle::kill_member(self.store, self.team, member).map(Some),
            };
            match killed {
                Ok(Some(killed)) => {
                    if let Some(report) = killed.report(name.as_str()) {
                        self.say(&format!("! {report}"));
                    }
                }
                Ok(None) => self.say(&format!("{name} was started again since; left running")),
                Err(e) => self.say(&format!("! could not close {name}'s pane: {e}")),
            }
            match was_active {
                Some(was) => drop(lifecycle::release_and_tell(
                    self.store, self.team, name, l.why, was,
                )?),
                None => self.say(&format!("{name} is no longer on the team")),
            }
        }
        Ok(())
    }
}

/// How many of a dead teammate's last lines the console prints.
const LAST_WORDS: usize = 10;

/// Looks for the `shutdown_request` with `request_id` in `to`'s inbox and its archive.
fn shutdown_was_requested(
    store: &Store,
    team: &TeamName,
    to: &AgentName,
    request_id: &str,
) -> Result<bool> {
    // Only a request the lead side signed counts: anyone can write one into an inbox.
    let Some(lead_key) = crate::store::lead_key::verifier(store, team)? else {
        return Ok(false);
    };
    let is_it = |m: &InboxMessage| {
        m.signed_by(&lead_key)
            && matches!(m.payload(), Payload::Protocol(p)
            if matches!(&*p, Protocol::ShutdownRequest(r) if r.request_id == request_id
                && crate::store::protocol::shutdown_request_target(request_id)
                    .is_none_or(|t| t == to.as_str())))
    };
    if Mailbox::new(store, team).read(to, false)?.iter().any(is_it) {
        return Ok(true);
    }
    let archive = crate::store::fsio::read_file(&store.archive_path(team, to))?.unwrap_or_default();
    Ok(String::from_utf8_lossy(&archive)
        .lines()
        .filter_map(|l| serde_json::from_str::<InboxMessage>(l).ok())
        .any(|m| is_it(&m)))
}

/// The run that sent `approval` ([`liveness::RUN_FIELD`]); `None` for Claude Code's, which
/// names none.
fn approving_run(approval: &ShutdownApproved) -> Option<&str> {
    approval.extra.get(liveness::RUN_FIELD)?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::team_with;

    fn opts() -> LeadOptions {
        LeadOptions {
            auto_approve: false,
            exit_when_done: false,
            notify_after: None,
        }
    }

    /// `name`'s approval of a shutdown request the lead really sent, from a run long gone.
    fn approval(store: &Store, team: &TeamName, name: &str) -> InboxMessage {
        approval_from(store, team, name, Some("4194000:1"))
    }

    /// [`approval`] naming `run`, or, as Claude Code's does, none.
    fn approval_from(
        store: &Store,
        team: &TeamName,
        name: &str,
        run: Option<&str>,
    ) -> InboxMessage {
        let name: AgentName = name.parse().unwrap();
        let request_id = lifecycle::send_shutdown_request(store, team, &name, None, None).unwrap();
        let approved = Protocol::ShutdownApproved(ShutdownApproved {
            request_id,
            from: name.to_string(),
            timestamp: crate::store::protocol::timestamp_now(),
            pane_id: None,
            backend_type: None,
            extra: serde_json::Map::from_iter(
                run.map(|run| (liveness::RUN_FIELD.to_string(), run.into())),
            ),
        });
        InboxMessage::protocol(&name, &approved)
    }

    #[test]
    fn an_approval_read_before_a_launch_started_its_sender_again_leaves_the_new_run_alone() {
        let (_dir, store, team) = team_with(&["again", "claude", "gone"]);
        let roster = Roster::new(&store, &team);
        let mut console = Console::new(&store, &team, opts());
        for name in ["again", "gone"] {
            console.handle(&approval(&store, &team, name)).unwrap();
        }
        // Claude Code's approval names no run (it used to be taken for the current run's).
        let claude = approval_from(&store, &team, "claude", None);
        console.handle(&claude).unwrap();
        // While the console reads the rest of its pass, `swarm up` starts `again` and `claude`
        // once more: their intent on the roster, as a launch writes it before it opens panes.
        for name in ["again", "claude"] {
            let name: AgentName = name.parse().unwrap();
            roster
                .update_member(&name, lifecycle::orphans::mark_opening)
                .unwrap();
        }
        console.retire_approved().unwrap();
        let config = roster.load().unwrap();
        for name in ["again", "claude"] {
            assert!(
                !config.member(name).unwrap().retired(),
                "the approval {name} sent before is not the new run's"
            );
        }
        assert!(
            config.member("gone").unwrap().retired(),
            "an approval of the current run retires its sender"
        );
    }
}
