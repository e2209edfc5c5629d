//! Asking teammates to stop: the one shutdown state machine, and `swarm shutdown` built on it.
//!
//! A shutdown goes request -> an answer in the lead's inbox, the process's death, or the end
//! of the wait -> stop -> retire (PROTOCOL.md section 8). [`Stopping`] is that machine for one
//! teammate and settles on a [`ShutdownResult`]; [`shutdown`] (the `swarm shutdown` command)
//! waits on inbox events and the member's health, and the in-process supervisor
//! (`crate::launch::supervisor`) drives the same machine from its event loop. Each caller then
//! stops the teammate its own way: a one-shot command through the member's backend, the
//! supervisor with SIGTERM, a grace and SIGKILL to a child it owns.

use std::fmt;
use std::time::{Duration, Instant};

use serde::Serialize;

mod options;

pub(crate) use options::{grace_within, ShutdownOptions};

use super::health::{ended, identifiable};
use super::retire::{finish_worktree, kill_member, mark_retired, release_and_tell, Killed};
use crate::error::{Error, Result};
use crate::lifecycle::worktree;
use crate::store::fsio;
use crate::store::liveness::{self, Liveness};
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TaskId, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{timestamp_now, Payload, Protocol, ShutdownRequest, GRACE_FIELD};
use crate::store::roster::{Member, Roster};
use crate::store::watcher::DirWatcher;

/// A teammate's answer to a shutdown request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub(crate) enum ShutdownReply {
    Approved,
    Rejected { reason: String },
}

/// How one teammate's shutdown settled. Serialized as `"result": "approved"` and so on, with
/// `"reason"` beside it for a rejection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub(crate) enum ShutdownResult {
    Approved,
    Rejected {
        reason: String,
    },
    /// No answer before the wait ended.
    TimedOut,
    /// Its process ended before it answered.
    Exited,
    /// It was not running when the shutdown began, so it was not asked.
    NotRunning,
    /// Its team is led by Claude Code, whose teammates refuse a request swarm signs, so it was
    /// not asked (only `--force` stops it, and only where swarm can identify its pane).
    NotAsked,
}

impl ShutdownResult {
    /// The name in `swarm shutdown --json`'s `result` field.
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            ShutdownResult::Approved => "approved",
            ShutdownResult::Rejected { .. } => "rejected",
            ShutdownResult::TimedOut => "timed_out",
            ShutdownResult::Exited => "exited",
            ShutdownResult::NotRunning => "not_running",
            ShutdownResult::NotAsked => "not_asked",
        }
    }
}

impl fmt::Display for ShutdownResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<ShutdownReply> for ShutdownResult {
    fn from(reply: ShutdownReply) -> ShutdownResult {
        match reply {
            ShutdownReply::Approved => ShutdownResult::Approved,
            ShutdownReply::Rejected { reason } => ShutdownResult::Rejected { reason },
        }
    }
}

/// Appends a `shutdown_request` to `name`'s inbox; returns its requestId. `grace` is how long a
/// busy teammate's running turn may take to finish (section 7d); without it the runtime gives
/// [`crate::store::protocol::DEFAULT_GRACE`].
pub(crate) fn send_shutdown_request(
    store: &Store,
    team: &TeamName,
    name: &AgentName,
    reason: Option<&str>,
    grace: Option<Duration>,
) -> Result<String> {
    let request_id = crate::store::protocol::shutdown_request_id(name);
    let mut extra = serde_json::Map::new();
    if let Some(grace) = grace {
        extra.insert(GRACE_FIELD.into(), grace.as_secs().into());
    }
    let request = Protocol::ShutdownRequest(ShutdownRequest {
        request_id: request_id.clone(),
        from: crate::store::names::LEAD.into(),
        reason: reason.map(str::to_string),
        timestamp: timestamp_now(),
        extra,
    });
    let message = InboxMessage::protocol(&AgentName::lead(), &request)
        .with_color(Some(crate::store::colour::LEAD_COLOR.into()));
    Mailbox::new(store, team).send(name, message)?;
    Ok(request_id)
}

/// The shutdown answers in the lead's inbox (delivered or not: a lead console may have marked
/// them) at one moment. A pass over N teammates reads the inbox once into this, where a read
/// for each teammate parsed it N times a pass (a `swarm down` of 200 teammates spent most of its
/// two minutes there and in tmux calls).
#[derive(Debug, Default)]
pub(crate) struct Replies(Vec<(String, String, ShutdownReply)>);

impl Replies {
    pub(crate) fn read(store: &Store, team: &TeamName) -> Result<Replies> {
        let messages = Mailbox::new(store, team).read(&AgentName::lead(), false)?;
        let mut found = Vec::new();
        for m in messages {
            let Payload::Protocol(p) = m.payload() else {
                continue;
            };
            let (from, request_id, reply) = match *p {
                Protocol::ShutdownApproved(a) => (a.from, a.request_id, ShutdownReply::Approved),
                Protocol::ShutdownRejected(r) => (
                    r.from,
                    r.request_id,
                    ShutdownReply::Rejected { reason: r.reason },
                ),
                _ => continue,
            };
            // The answer counts only from the teammate it names.
            if from == m.from {
                found.push((from, request_id, reply));
            }
        }
        Ok(Replies(found))
    }

    /// `name`'s answer to `request_id`, the first one it sent.
    fn of(&self, name: &AgentName, request_id: &str) -> Option<ShutdownReply> {
        self.0
            .iter()
            .find(|(from, id, _)| from == name.as_str() && id == request_id)
            .map(|(_, _, reply)| reply.clone())
    }
}

/// One teammate's way through a shutdown: asked, then settled by its answer, its death or the
/// end of the wait.
#[derive(Debug)]
pub(crate) struct Stopping {
    pub name: AgentName,
    /// The request sent, if sending worked.
    pub request_id: Option<String>,
    /// `None` until settled.
    pub result: Option<ShutdownResult>,
    /// When its process was first seen ended with no answer in: see [`Stopping::check`].
    gone_since: Option<Instant>,
}

/// How long an answer from a member on another host may come after home saw that member end.
/// Home sees the end first through the member's local pane, which closes with the remote one,
/// while the answer comes home with the relay's next delivery; called "exited" at once, a
/// remote teammate that had approved was reported as one that had not (a full run of the suite).
pub(crate) const REMOTE_ANSWER_GRACE: Duration = Duration::from_secs(5);

impl Stopping {
    /// A teammate not asked yet.
    pub(crate) fn new(name: AgentName) -> Stopping {
        Stopping {
            name,
            request_id: None,
            result: None,
            gone_since: None,
        }
    }

    /// A teammate that is not running: settled without asking.
    pub(crate) fn not_running(name: AgentName) -> Stopping {
        Stopping {
            result: Some(ShutdownResult::NotRunning),
            ..Stopping::new(name)
        }
    }

    /// A teammate swarm cannot ask (see [`ShutdownResult::NotAsked`]).
    fn not_asked(name: AgentName) -> Stopping {
        Stopping {
            result: Some(ShutdownResult::NotAsked),
            ..Stopping::new(name)
        }
    }

    /// Sends the shutdown request, which gives a busy teammate `grace` to finish its turn.
    pub(crate) fn ask(
        &mut self,
        store: &Store,
        team: &TeamName,
        reason: Option<&str>,
        grace: Duration,
    ) -> Result<()> {
        self.request_id = Some(send_shutdown_request(
            store,
            team,
            &self.name,
            reason,
            Some(grace),
        )?);
        Ok(())
    }

    pub(crate) fn settled(&self) -> bool {
        self.result.is_some()
    }

    /// Looks for the answer in `replies` (the lead's inbox as this pass read it). Without one,
    /// asks `gone` whether the process has ended; if so, reads the inbox once more (it may have
    /// answered just before it exited) and else settles on [`ShutdownResult::Exited`], once it
    /// has been gone for `grace` (the answer of a member on another host comes home after its
    /// end is seen: [`REMOTE_ANSWER_GRACE`]). `true` when this call settled it.
    pub(crate) fn check(
        &mut self,
        store: &Store,
        team: &TeamName,
        replies: &Replies,
        grace: Duration,
        gone: impl FnOnce() -> Result<bool>,
    ) -> Result<bool> {
        if self.settled() {
            return Ok(false);
        }
        if let Some(reply) = self.reply(replies) {
            self.result = Some(reply.into());
        } else if gone()? {
            let since = *self.gone_since.get_or_insert_with(Instant::now);
            match self.reply(&Replies::read(store, team)?) {
                Some(reply) => self.result = Some(reply.into()),
                None if since.elapsed() >= grace => self.result = Some(ShutdownResult::Exited),
                None => {}
            }
        }
        Ok(self.settled())
    }

    /// The wait is over: an unsettled teammate timed out. `true` when this call settled it.
    pub(crate) fn time_out(&mut self) -> bool {
        if self.settled() {
            return false;
        }
        self.result = Some(ShutdownResult::TimedOut);
        true
    }

    /// Whether the teammate is to be stopped now it is settled: always, except after a
    /// rejection, or without being asked, unless `force` overrules.
    pub(crate) fn stops(&self, force: bool) -> bool {
        force
            || !matches!(
                self.result,
                Some(ShutdownResult::Rejected { .. } | ShutdownResult::NotAsked)
            )
    }

    fn reply(&self, replies: &Replies) -> Option<ShutdownReply> {
        replies.of(&self.name, self.request_id.as_deref()?)
    }
}

/// How one teammate's shutdown went.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ShutdownOutcome {
    pub name: String,
    #[serde(flatten)]
    pub outcome: ShutdownResult,
    #[serde(rename = "requestId", skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    pub killed: bool,
    pub retired: bool,
    /// Swarm could not identify its pane or process (a tmux pane on a server nobody recorded, a
    /// Claude Code in-process teammate), so it was neither stopped nor retired.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unidentified: bool,
    pub released: Vec<TaskId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<worktree::Outcome>,
}

/// Asks each teammate to stop (all requests first), waits for the answers (or their death) up to
/// the timeout, then kills, retires and cleans up each one. A rejection is honoured unless
/// `force`.
pub(crate) fn shutdown(
    store: &Store,
    team: &TeamName,
    names: &[AgentName],
    opts: &ShutdownOptions,
) -> Result<Vec<ShutdownOutcome>> {
    let roster = Roster::new(store, team);
    let config = roster.load()?;
    let mut members = Vec::new();
    for name in names {
        if name.is_lead() {
            return Err(Error::usage(
                "the lead is not shut down with `swarm shutdown`; name a teammate or use --all",
            ));
        }
        let member = config
            .member(name.as_str())
            .cloned()
            .ok_or_else(|| Error::NoSuchMember {
                team: team.to_string(),
                name: name.to_string(),
            })?;
        members.push(member);
    }
    // A Claude Code lead's teammates refuse lead messages swarm signs: asking only waits out
    // the timeout.
    let can_ask = !config.led_by_claude();
    let mut pending = side_by_side(members, |member| {
        let name = member.name.clone();
        let stopping = if ended(store, team, &member)? {
            Stopping::not_running(name)
        } else if !can_ask {
            Stopping::not_asked(name)
        } else {
            let mut s = Stopping::new(name);
            s.ask(store, team, opts.reason.as_deref(), opts.grace())?;
            s
        };
        Ok((stopping, member))
    })?;
    let dir = store.inboxes_dir(team);
    fsio::ensure_dir(&dir)?;
    let watcher = DirWatcher::new(&dir)?;
    let deadline = Instant::now() + opts.timeout;
    loop {
        let replies = Replies::read(store, team)?;
        for (s, member) in pending.iter_mut() {
            let grace = if crate::remote::host_of(member).is_some() {
                REMOTE_ANSWER_GRACE
            } else {
                Duration::ZERO
            };
            s.check(store, team, &replies, grace, || ended(store, team, member))?;
        }
        if pending.iter().all(|(s, _)| s.settled()) || Instant::now() >= deadline {
            break;
        }
        watcher.wait(Some(
            deadline.min(Instant::now() + Duration::from_millis(500)),
        ));
    }
    let stopped = side_by_side(pending, |(s, member)| stop(store, team, opts, s, member))?;
    // Retired in one roster write: one each, `swarm down` of 200 rewrote the 160 KB roster 200
    // times, one rewrite after another under its lock.
    let retiring: Vec<AgentName> = stopped
        .iter()
        .filter(|s| s.retire.is_some())
        .map(|s| s.member.name.clone())
        .collect();
    if retiring.is_empty() {
        return Ok(stopped.into_iter().map(|s| s.outcome).collect());
    }
    let mut was_active = mark_retired(store, team, &retiring)?.into_iter();
    let config = Roster::new(store, team).load()?;
    let stopped: Vec<(Stopped, Option<bool>)> = stopped
        .into_iter()
        .map(|s| {
            let was = match s.retire {
                Some(_) => was_active.next().flatten(),
                None => None,
            };
            (s, was)
        })
        .collect();
    side_by_side(stopped, |(s, was_active)| {
        let mut outcome = s.outcome;
        // Off the roster by now (removed meanwhile): nothing left to retire.
        if let (Some(why), Some(was_active)) = (s.retire, was_active) {
            outcome.released = release_and_tell(store, team, &s.member.name, &why, was_active)?;
            outcome.retired = true;
            if let Some(current) = config.member(s.member.name.as_str()) {
                outcome.worktree = finish_worktree(store, team, current)?;
            }
        }
        Ok(outcome)
    })
}

/// One teammate's shutdown once it is stopped (or left alone), before its retirement.
struct Stopped {
    outcome: ShutdownOutcome,
    member: Member,
    /// Why it is retired, when it is.
    retire: Option<String>,
}

/// The end of one teammate's shutdown, once it settled or the wait ended: stopped, and to be
/// retired, unless it rejected the request (and there is no `--force`) or swarm cannot reach
/// it.
fn stop(
    store: &Store,
    team: &TeamName,
    opts: &ShutdownOptions,
    mut s: Stopping,
    member: Member,
) -> Result<Stopped> {
    s.time_out();
    let result = s.result.clone().unwrap_or(ShutdownResult::TimedOut);
    let mut outcome = ShutdownOutcome {
        name: s.name.to_string(),
        outcome: result.clone(),
        request_id: s.request_id.clone(),
        killed: false,
        retired: false,
        unidentified: false,
        released: vec![],
        worktree: None,
    };
    let left = |outcome| Stopped {
        outcome,
        member: member.clone(),
        retire: None,
    };
    if !s.stops(opts.force) {
        return Ok(left(outcome));
    }
    // Nothing says it stopped and swarm cannot reach it: retiring it would return the tasks
    // of a teammate that may well be working on them.
    let stopped_itself = matches!(
        result,
        ShutdownResult::Approved | ShutdownResult::Exited | ShutdownResult::NotRunning
    );
    if !stopped_itself && !identifiable(store, team, &member) {
        outcome.unidentified = true;
        return Ok(left(outcome));
    }
    let killed = kill_member(store, team, &member)?;
    if let Some(report) = killed.report(s.name.as_str()) {
        eprintln!("swarm: warning: {report}");
    }
    runtime_gone(store, team, &member);
    outcome.killed = matches!(killed, Killed::Stopped { .. });
    let why = match &result {
        ShutdownResult::Approved => "shutdown approved".to_string(),
        ShutdownResult::Rejected { reason } => {
            format!("shut down by force after rejecting: {reason}")
        }
        ShutdownResult::TimedOut => format!(
            "no answer to the shutdown request within {} s, killed",
            opts.timeout.as_secs()
        ),
        ShutdownResult::Exited => "its process exited before answering the shutdown request".into(),
        ShutdownResult::NotRunning => "its process was no longer running".into(),
        ShutdownResult::NotAsked => "stopped by force".into(),
    };
    Ok(Stopped {
        outcome,
        member,
        retire: Some(why),
    })
}

/// How long a stop waits for the teammate's runtime to let go of its liveness lock.
const RUNTIME_EXIT: Duration = Duration::from_secs(10);

/// Waits, bounded, until `member`'s runtime has let go of its liveness lock: it does when it
/// exits, a moment after its approval or its pane's close. Stopped means stopped: an `up` right
/// after `down` met the old lock still held, and the new runtime refused to start beside it.
fn runtime_gone(store: &Store, team: &TeamName, member: &Member) {
    let until = Instant::now() + RUNTIME_EXIT;
    while liveness::probe(store, team, &member.name).ok() == Some(Liveness::Alive)
        && Instant::now() < until
    {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How many teammates a shutdown asks, and stops, at once.
const AT_ONCE: usize = 8;

/// `f` over `items` on up to [`AT_ONCE`] threads, the answers in the items' order; the first
/// error wins. Each request and each retirement is a durable append (fsyncs, a tmux call or
/// two): one after the other, 200 of them were most of a minute of `swarm down`.
fn side_by_side<T: Send, R: Send>(
    mut items: Vec<T>,
    f: impl Fn(T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let size = items.len().div_ceil(AT_ONCE).max(1);
    let mut chunks = Vec::new();
    while !items.is_empty() {
        let rest = items.split_off(size.min(items.len()));
        chunks.push(std::mem::replace(&mut items, rest));
    }
    let f = &f;
    std::thread::scope(|scope| {
        let running: Vec<_> = chunks
            .into_iter()
            .map(|chunk| scope.spawn(move || chunk.into_iter().map(f).collect::<Result<Vec<R>>>()))
            .collect();
        let mut out = Vec::new();
        for thread in running {
            out.extend(thread.join().expect("a shutdown thread does not panic")?);
        }
        Ok(out)
    })
}

#[cfg(test)]
mod tests;
