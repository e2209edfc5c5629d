//! The end of a teammate's life: is it alive, asking it to stop, killing it, and retiring it.
//!
//! These are the operations `swarm status`, `swarm shutdown`, `swarm kill`, the in-process
//! supervisor and the lead console share. A member is judged dead when its liveness lock can be
//! taken or its pane is dead; retiring marks it inactive, returns its unfinished tasks to pending
//! and tells the lead which (PROTOCOL.md sections 7, 8 and 10). Killing goes through the backend
//! named by the member's `backendType` and is idempotent.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::backend::iterm2::Iterm2Backend;
use crate::backend::tmux::{TmuxBackend, TmuxServer};
use crate::backend::{in_process, BackendKind, PaneBackend, PaneId, PaneState, SystemExec};
use crate::error::{Error, Result};
use crate::launch::worktree::{self, Worktree};
use crate::process::group::{terminate_group, Refusal};
use crate::process::pid::PidRecord;
use crate::store::fsio;
use crate::store::liveness::{self, Liveness, ReapGate};
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TaskId, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{timestamp_now, Payload, Protocol, ShutdownRequest};
use crate::store::roster::{Member, Roster};
use crate::store::tasks::TaskList;
use crate::store::watcher::DirWatcher;

/// Sender of the notices swarm itself writes to the lead's inbox.
pub const SYSTEM_SENDER: &str = "system";
/// Between SIGTERM and SIGKILL when killing an in-process teammate.
pub const KILL_GRACE: Duration = Duration::from_secs(3);

/// How a member is doing, from its liveness lock and its pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Health {
    pub liveness: Liveness,
    pub pane: PaneState,
    /// The liveness lock is free, or the pane is dead or gone.
    pub dead: bool,
}

/// The backend a member was launched with (`backendType`, else guessed from the pane id).
pub fn backend_of(member: &Member) -> Option<BackendKind> {
    if let Some(kind) = member.backend_type.as_deref().and_then(BackendKind::parse) {
        return Some(kind);
    }
    if member.tmux_pane_id.starts_with('%') {
        return Some(BackendKind::Tmux);
    }
    (member.tmux_pane_id == in_process::PANE_ID).then_some(BackendKind::InProcess)
}

/// The state of the member's pane or process.
pub fn pane_state(member: &Member) -> Result<PaneState> {
    match backend_of(member) {
        Some(BackendKind::Tmux) if !member.tmux_pane_id.is_empty() => {
            TmuxBackend::on_server(Arc::new(SystemExec), TmuxServer::for_member(member))
                .state(&PaneId(member.tmux_pane_id.clone()))
        }
        Some(BackendKind::InProcess | BackendKind::Iterm2) => Ok(in_process::pid_state(member)),
        _ => Ok(PaneState::Unknown),
    }
}

/// Liveness lock plus pane state; used by `swarm status` and the lead console.
pub fn member_health(store: &Store, team: &TeamName, member: &Member) -> Result<Health> {
    let name: AgentName = member.name.parse()?;
    let liveness = liveness::probe(store, team, &name)?;
    let pane = pane_state(member)?;
    let dead = liveness == Liveness::Dead || pane.is_dead();
    Ok(Health {
        liveness,
        pane,
        dead,
    })
}

/// Marks `name` inactive, returns its unfinished tasks to pending and tells the lead which and
/// why. Nothing is sent when the member was already inactive and no task moved.
pub fn retire_member(
    store: &Store,
    team: &TeamName,
    name: &AgentName,
    why: &str,
) -> Result<Vec<TaskId>> {
    let was_active = Roster::new(store, team).update_member(name, |m| {
        let was = m.active();
        m.is_active = Some(false);
        was
    })?;
    let released = TaskList::new(store, team).release_agent(name.as_str())?;
    if was_active || !released.is_empty() {
        let tasks = if released.is_empty() {
            "it had no unfinished tasks".to_string()
        } else {
            format!(
                "its unfinished tasks went back to pending: {}",
                released
                    .iter()
                    .map(|t| format!("#{t}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let text = format!("{name} is no longer active ({why}); {tasks}.");
        let message = InboxMessage::new(SYSTEM_SENDER, text)
            .with_summary(Some(format!("{name} left the team")));
        Mailbox::new(store, team).append(&AgentName::lead(), message)?;
    }
    Ok(released)
}

/// Marks a starting runtime's member active again; `true` if it was inactive (retired after an
/// earlier runtime died or was stopped). Called with the member's liveness lock already held and
/// done under the [`ReapGate`], so a lead that found the old runtime dead finishes retiring it
/// (and returning its tasks) before the new one is counted in and claims work; and a runtime
/// that dies again is reaped again, since only active members are watched.
pub fn rejoin(store: &Store, team: &TeamName, name: &AgentName) -> Result<bool> {
    let roster = Roster::new(store, team);
    let _gate = ReapGate::take(store, team)?;
    if roster.require_member(name.as_str())?.active() {
        return Ok(false);
    }
    roster.update_member(name, |m| {
        let was = m.active();
        m.is_active = Some(true);
        !was
    })
}

/// Kills the member's pane or process group through its backend; already dead is fine.
pub fn kill_member(store: &Store, team: &TeamName, member: &Member) -> Result<()> {
    // Everything needed is on the member (pane id, socket, pid); the store and team stay in the
    // signature the lead console calls, for backends that will need them.
    let _ = (store, team);
    match backend_of(member) {
        Some(BackendKind::Tmux) => {
            if member.tmux_pane_id.is_empty() {
                return Ok(());
            }
            TmuxBackend::on_server(Arc::new(SystemExec), TmuxServer::for_member(member))
                .kill(&PaneId(member.tmux_pane_id.clone()))
        }
        Some(BackendKind::Iterm2) => {
            stop_recorded_process(member);
            if member.tmux_pane_id.is_empty() {
                return Ok(());
            }
            Iterm2Backend::for_ops(Arc::new(SystemExec)).kill(&PaneId(member.tmux_pane_id.clone()))
        }
        Some(BackendKind::InProcess) => {
            stop_recorded_process(member);
            Ok(())
        }
        None => Ok(()),
    }
}

/// Stops the process group swarm recorded for `member`, if the record still names it; a record
/// swarm cannot trust is reported, never signalled.
fn stop_recorded_process(member: &Member) {
    let Some(record) = PidRecord::of_member(member) else {
        return;
    };
    match terminate_group(&record, KILL_GRACE) {
        Ok(()) | Err(Refusal::Gone) => {}
        Err(why) => eprintln!(
            "swarm: warning: not signalling {}'s recorded pid {}: {why}",
            member.name, record.pid
        ),
    }
}

/// Removes the member's worktree if unchanged, else keeps it; `None` if it has none.
pub fn finish_worktree(
    store: &Store,
    team: &TeamName,
    member: &Member,
) -> Result<Option<worktree::Outcome>> {
    let Some(wt) = Worktree::of_member(member) else {
        return Ok(None);
    };
    let outcome = wt.finish()?;
    if matches!(outcome, worktree::Outcome::Removed { .. }) {
        let name: AgentName = member.name.parse()?;
        Roster::new(store, team).update_member(&name, |m| {
            m.extra.remove(worktree::FIELD);
        })?;
    }
    Ok(Some(outcome))
}

/// A teammate's answer to a shutdown request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum ShutdownReply {
    Approved,
    Rejected { reason: String },
}

/// Appends a `shutdown_request` to `name`'s inbox; returns its requestId.
pub fn send_shutdown_request(
    store: &Store,
    team: &TeamName,
    name: &AgentName,
    reason: Option<&str>,
) -> Result<String> {
    let request_id = crate::store::protocol::shutdown_request_id(name);
    let request = Protocol::ShutdownRequest(ShutdownRequest {
        request_id: request_id.clone(),
        from: crate::store::names::LEAD.into(),
        reason: reason.map(str::to_string),
        timestamp: timestamp_now(),
        extra: Default::default(),
    });
    let message = InboxMessage::protocol(crate::store::names::LEAD, &request)
        .with_color(Some(crate::store::colour::LEAD_COLOR.into()));
    Mailbox::new(store, team).send(name, message)?;
    Ok(request_id)
}

/// Looks through every message in the lead's inbox, delivered or not (a lead console may have
/// marked it), for `name`'s answer to `request_id`.
pub fn find_shutdown_reply(
    store: &Store,
    team: &TeamName,
    name: &AgentName,
    request_id: &str,
) -> Result<Option<ShutdownReply>> {
    let messages = Mailbox::new(store, team).read(&AgentName::lead(), false)?;
    for m in messages.iter().filter(|m| m.from == name.as_str()) {
        if let Payload::Protocol(p) = m.payload() {
            match *p {
                Protocol::ShutdownApproved(a)
                    if a.request_id == request_id && a.from == name.as_str() =>
                {
                    return Ok(Some(ShutdownReply::Approved));
                }
                Protocol::ShutdownRejected(r)
                    if r.request_id == request_id && r.from == name.as_str() =>
                {
                    return Ok(Some(ShutdownReply::Rejected { reason: r.reason }));
                }
                _ => {}
            }
        }
    }
    Ok(None)
}

#[derive(Debug, Clone)]
pub struct ShutdownOptions {
    /// How long to wait for answers before killing anyway.
    pub timeout: Duration,
    /// Kill even a teammate that rejected the request.
    pub force: bool,
    pub reason: Option<String>,
}

impl Default for ShutdownOptions {
    fn default() -> Self {
        ShutdownOptions {
            timeout: Duration::from_secs(30),
            force: false,
            reason: None,
        }
    }
}

/// How one teammate's shutdown went.
#[derive(Debug, Clone, Serialize)]
pub struct ShutdownOutcome {
    pub name: String,
    /// `approved`, `rejected`, `timed_out`, `exited` (gone before answering) or `not_running`.
    pub result: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(rename = "requestId", skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    pub killed: bool,
    pub retired: bool,
    pub released: Vec<TaskId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<worktree::Outcome>,
}

/// Asks each teammate to stop (all requests first), waits for the answers (or their death) up to
/// the timeout, then kills, retires and cleans up each one. A rejection is honoured unless
/// `force`.
pub fn shutdown(
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
    struct Pending {
        name: AgentName,
        member: Member,
        request: Option<String>,
        result: Option<(&'static str, Option<String>)>,
    }
    let mut pending = Vec::new();
    for member in members {
        let name: AgentName = member.name.parse()?;
        let health = member_health(store, team, &member)?;
        let (request, result) = if health.dead {
            (None, Some(("not_running", None)))
        } else {
            let id = send_shutdown_request(store, team, &name, opts.reason.as_deref())?;
            (Some(id), None)
        };
        pending.push(Pending {
            name,
            member,
            request,
            result,
        });
    }
    let dir = store.inboxes_dir(team);
    fsio::ensure_dir(&dir)?;
    let watcher = DirWatcher::new(&dir)?;
    let deadline = Instant::now() + opts.timeout;
    loop {
        for p in pending.iter_mut().filter(|p| p.result.is_none()) {
            let id = p.request.as_deref().unwrap_or_default();
            match find_shutdown_reply(store, team, &p.name, id)? {
                Some(ShutdownReply::Approved) => p.result = Some(("approved", None)),
                Some(ShutdownReply::Rejected { reason }) => {
                    p.result = Some(("rejected", Some(reason)))
                }
                None => {
                    if member_health(store, team, &p.member)?.dead {
                        // It may have answered just before it exited.
                        p.result = Some(match find_shutdown_reply(store, team, &p.name, id)? {
                            Some(ShutdownReply::Approved) => ("approved", None),
                            Some(ShutdownReply::Rejected { reason }) => ("rejected", Some(reason)),
                            None => ("exited", None),
                        });
                    }
                }
            }
        }
        if pending.iter().all(|p| p.result.is_some()) || Instant::now() >= deadline {
            break;
        }
        watcher.wait(Some(
            deadline.min(Instant::now() + Duration::from_millis(500)),
        ));
    }
    let mut outcomes = Vec::new();
    for p in pending {
        let (result, reason) = p.result.unwrap_or(("timed_out", None));
        let mut outcome = ShutdownOutcome {
            name: p.name.to_string(),
            result,
            reason: reason.clone(),
            request_id: p.request.clone(),
            killed: false,
            retired: false,
            released: vec![],
            worktree: None,
        };
        if result == "rejected" && !opts.force {
            outcomes.push(outcome);
            continue;
        }
        kill_member(store, team, &p.member)?;
        outcome.killed = true;
        let why = match result {
            "approved" => "shutdown approved".to_string(),
            "rejected" => format!(
                "shut down by force after rejecting: {}",
                reason.unwrap_or_default()
            ),
            "timed_out" => format!(
                "no answer to the shutdown request within {} s, killed",
                opts.timeout.as_secs()
            ),
            "exited" => "its process exited before answering the shutdown request".into(),
            _ => "its process was no longer running".into(),
        };
        outcome.released = retire_member(store, team, &p.name, &why)?;
        outcome.retired = true;
        let member = roster.require_member(p.name.as_str())?;
        outcome.worktree = finish_worktree(store, team, &member)?;
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tasks::{NewTask, TaskStatus};

    fn team_with(names: &[&str]) -> (tempfile::TempDir, Store, TeamName) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let roster = Roster::new(&store, &team);
        roster.create("", "/", "s").unwrap();
        for n in names {
            let name: AgentName = n.parse().unwrap();
            let mut m = Member::teammate(&team, &name, "blue", "/");
            m.is_active = Some(true);
            roster.add_member(m).unwrap();
        }
        (dir, store, team)
    }

    #[test]
    fn retiring_releases_tasks_and_tells_the_lead_once() {
        let (_dir, store, team) = team_with(&["coder"]);
        let coder: AgentName = "coder".parse().unwrap();
        let tasks = TaskList::new(&store, &team);
        let t1 = tasks
            .create(NewTask {
                subject: "a".into(),
                ..Default::default()
            })
            .unwrap();
        tasks.claim(&t1.id, &coder, true).unwrap();
        let released = retire_member(&store, &team, &coder, "shutdown approved").unwrap();
        assert_eq!(released, std::slice::from_ref(&t1.id));
        assert_eq!(tasks.get(&t1.id).unwrap().status, TaskStatus::Pending);
        let config = Roster::new(&store, &team).load().unwrap();
        assert!(!config.member("coder").unwrap().active());
        let lead = Mailbox::new(&store, &team)
            .read(&AgentName::lead(), false)
            .unwrap();
        assert_eq!(lead.len(), 1);
        assert!(lead[0].text.contains("#1"), "{}", lead[0].text);
        assert!(lead[0].text.contains("shutdown approved"));
        // Again: nothing changed, so no second message.
        assert!(retire_member(&store, &team, &coder, "again")
            .unwrap()
            .is_empty());
        assert_eq!(
            Mailbox::new(&store, &team)
                .read(&AgentName::lead(), false)
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn replies_must_match_the_request_and_the_sender() {
        let (_dir, store, team) = team_with(&["coder", "mallory"]);
        let coder: AgentName = "coder".parse().unwrap();
        let id = send_shutdown_request(&store, &team, &coder, None).unwrap();
        assert!(
            id.starts_with("shutdown-") && id.ends_with("@coder"),
            "{id}"
        );
        let mb = Mailbox::new(&store, &team);
        let lead = AgentName::lead();
        let approve = |from: &str, inner_from: &str, rid: &str| {
            let text = serde_json::json!({"type": "shutdown_approved", "requestId": rid,
                "from": inner_from, "timestamp": "t"})
            .to_string();
            InboxMessage::new(from, text)
        };
        mb.append(&lead, approve("mallory", "coder", &id)).unwrap();
        mb.append(&lead, approve("coder", "coder", "shutdown-1@coder"))
            .unwrap();
        assert_eq!(
            find_shutdown_reply(&store, &team, &coder, &id).unwrap(),
            None
        );
        let mut answer = approve("coder", "coder", &id);
        answer.read = true; // a lead console already delivered it
        mb.append(&lead, answer).unwrap();
        assert_eq!(
            find_shutdown_reply(&store, &team, &coder, &id).unwrap(),
            Some(ShutdownReply::Approved)
        );
    }
}
