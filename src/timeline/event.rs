//! One thing that happened in a team, as `swarm timeline` shows it: when, what, who did it, to
//! whom, about which task or request, and which file says so.
//!
//! Every source (inboxes and their archives, the task history and task files, permission
//! records, the lead's decisions, the roster) is turned into this one shape, so the timeline
//! sorts, filters and prints all of them alike, and `--json` prints exactly these fields.

use serde::Serialize;

use crate::store::names::TaskId;
use crate::store::protocol::format_timestamp;
use crate::store::tasks::history::Transition;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    TeamCreated,
    MemberJoined,
    /// A teammate ended a turn (`idle_notification`).
    MemberIdle,
    /// swarm retired it (shut down, killed, or found dead), from the notice the lead got.
    MemberLeft,
    Message,
    Task(Transition),
    PermissionRequested,
    PermissionApproved,
    PermissionRejected,
    PlanRequested,
    PlanApproved,
    PlanRejected,
    ShutdownRequested,
    ShutdownApproved,
    ShutdownRejected,
}

impl Kind {
    /// The name `--json` prints: `message`, `task.claimed`, `permission.approved`, ...
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::TeamCreated => "team.created",
            Kind::MemberJoined => "member.joined",
            Kind::MemberIdle => "member.idle",
            Kind::MemberLeft => "member.left",
            Kind::Message => "message",
            Kind::Task(t) => match t {
                Transition::Created => "task.created",
                Transition::Claimed => "task.claimed",
                Transition::Assigned => "task.assigned",
                Transition::Started => "task.started",
                Transition::Completed => "task.completed",
                Transition::Failed => "task.failed",
                Transition::Released => "task.released",
                Transition::Stopped => "task.stopped",
                Transition::Reopened => "task.reopened",
                Transition::Retried => "task.retried",
                Transition::Deleted => "task.deleted",
            },
            Kind::PermissionRequested => "permission.requested",
            Kind::PermissionApproved => "permission.approved",
            Kind::PermissionRejected => "permission.rejected",
            Kind::PlanRequested => "plan.requested",
            Kind::PlanApproved => "plan.approved",
            Kind::PlanRejected => "plan.rejected",
            Kind::ShutdownRequested => "shutdown.requested",
            Kind::ShutdownApproved => "shutdown.approved",
            Kind::ShutdownRejected => "shutdown.rejected",
        }
    }
}

/// Which file an event was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Source {
    Roster,
    /// A live inbox, `inboxes/<agent>.json`.
    Inbox,
    /// Delivered history, `inboxes/<agent>.archive.jsonl`.
    Archive,
    /// `tasks/<team>/.swarm-history.jsonl`.
    History,
    /// A task file whose state the history does not explain (reconstructed).
    TaskFile,
    /// `permissions/pending/` or `permissions/resolved/`.
    Permission,
    /// `lead/decisions.jsonl`.
    Decisions,
}

/// One event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    /// Milliseconds since the epoch.
    pub(crate) at: u64,
    pub(crate) kind: Kind,
    /// Who did it (`None`: nobody recorded who).
    pub(crate) actor: Option<String>,
    /// To whom: a message's recipient, a decision's requester, a task's new owner.
    pub(crate) to: Option<String>,
    pub(crate) task: Option<TaskId>,
    /// A permission, plan or shutdown request id.
    pub(crate) request: Option<String>,
    /// The main words: a message's summary (else its first line), a task's subject, a tool.
    pub(crate) text: String,
    /// More: a failure reason, a decision's feedback, what a permission is for.
    pub(crate) detail: Option<String>,
    pub(crate) source: Source,
    /// Not recorded when it happened: appended later by an observer, or reconstructed from a
    /// file (its time is then the file's modification time, its actor a guess from the owner).
    pub(crate) seen: bool,
}

impl Event {
    pub(crate) fn new(at: u64, kind: Kind, source: Source) -> Event {
        Event {
            at,
            kind,
            actor: None,
            to: None,
            task: None,
            request: None,
            text: String::new(),
            detail: None,
            source,
            seen: false,
        }
    }

    pub(crate) fn by(mut self, actor: impl Into<String>) -> Event {
        self.actor = Some(actor.into());
        self
    }

    pub(crate) fn to(mut self, to: impl Into<String>) -> Event {
        self.to = Some(to.into());
        self
    }

    pub(crate) fn text(mut self, text: impl Into<String>) -> Event {
        self.text = text.into();
        self
    }

    pub(crate) fn detail(mut self, detail: Option<String>) -> Event {
        self.detail = detail.filter(|d| !d.is_empty());
        self
    }

    pub(crate) fn request(mut self, id: impl Into<String>) -> Event {
        self.request = Some(id.into());
        self
    }

    /// Whether `name` did it or it was done to `name` (names are unique in any case).
    pub(crate) fn involves(&self, name: &str) -> bool {
        [&self.actor, &self.to]
            .into_iter()
            .flatten()
            .any(|n| n.eq_ignore_ascii_case(name))
    }

    /// The object `--json` prints for it; `start` is the run's start (ms).
    pub(crate) fn json(&self, start: u64) -> Json<'_> {
        Json {
            at: format_timestamp(self.at),
            since_start: self.at as i64 - start as i64,
            kind: self.kind.name(),
            actor: self.actor.as_deref(),
            to: self.to.as_deref(),
            task: self.task.as_ref(),
            request: self.request.as_deref(),
            text: &self.text,
            detail: self.detail.as_deref(),
            source: self.source,
            seen: self.seen,
        }
    }
}

/// An event as one line of `--json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Json<'a> {
    at: String,
    /// Milliseconds since the run's start (negative before it).
    since_start: i64,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    actor: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    to: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    task: Option<&'a TaskId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request: Option<&'a str>,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
    source: Source,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    seen: bool,
}
