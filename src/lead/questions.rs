//! The questions waiting for the person at the lead console, and how `y` / `n` answer them.
//!
//! One question is current: it is the one shown in full, and the prompt line under it names its
//! id, so `y` and `n` answer exactly what the person read. Questions that arrive meanwhile wait
//! behind it with a one-line notice and are shown in full when their turn comes. A permission
//! request can also be decided from another shell (`swarm permission approve ID`): before every
//! pass and before every answer the queue drops such requests with a line saying who decided,
//! so an answer typed for one request never lands on another. What a permission question shows
//! is the pending record (what an approval would let run), not the message that announced it.
//! A plan verdict gives the teammate back its roster `mode` and carries the plan's digest
//! (`PlanApprovalResponse::answer`): Claude Code otherwise drops the launch mode, and a teammate
//! started with `--lead-verify-key` refuses an approval without the digest.

use std::collections::VecDeque;

use super::paint::shown;
use crate::error::{Error, Result};
use crate::output::terminal::visible;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::permissions::{Decision, PermissionRecord, Permissions};
use crate::store::protocol::{
    mode_after_plan, PlanApprovalRequest, PlanApprovalResponse, Protocol,
};
use crate::store::roster::Roster;

/// A question waiting for the person's `y` / `n [feedback]`.
#[derive(Debug)]
pub(super) enum Question {
    Permission(Box<PermissionRecord>),
    Plan(PlanApprovalRequest),
}

impl Question {
    fn id(&self) -> &str {
        match self {
            Question::Permission(r) => &r.id,
            Question::Plan(r) => &r.request_id,
        }
    }

    /// The whole question: who asks, for which tool, with which input (in full).
    fn full(&self) -> String {
        match self {
            Question::Permission(r) => {
                let mut text = format!(
                    "? {}: {} asks to use {} with {}",
                    r.id,
                    visible(&r.worker_name),
                    visible(&r.tool_name),
                    visible(&r.input.to_string())
                );
                if !r.description.is_empty() {
                    text.push_str(&format!(
                        "\n{}'s description: {}",
                        visible(&r.worker_name),
                        visible(&r.description)
                    ));
                }
                text
            }
            Question::Plan(r) => format!(
                "? {}: {} submitted a plan ({}):\n{}",
                visible(&r.request_id),
                visible(&r.from),
                visible(&r.plan_file_path),
                r.plan_content
            ),
        }
    }

    /// One line for a question waiting behind the current one.
    fn brief(&self) -> String {
        match self {
            Question::Permission(r) => format!(
                "{} from {} ({})",
                r.id,
                visible(&r.worker_name),
                visible(&r.tool_name)
            ),
            Question::Plan(r) => format!("{} (a plan from {})", r.request_id, visible(&r.from)),
        }
    }
}

/// The open questions, the current one first.
pub(super) struct Questions<'a> {
    store: &'a Store,
    team: &'a TeamName,
    lead: AgentName,
    /// Approve every request at once instead of asking.
    auto_approve: bool,
    open: VecDeque<Question>,
}

fn say(text: &str) {
    let _ = crate::output::line(shown(text));
}

impl<'a> Questions<'a> {
    pub(super) fn new(store: &'a Store, team: &'a TeamName, auto_approve: bool) -> Questions<'a> {
        Questions {
            store,
            team,
            lead: AgentName::lead(),
            auto_approve,
            open: VecDeque::new(),
        }
    }

    /// A permission request announced in the lead's inbox: asked from its pending record.
    pub(super) fn ask_permission(&mut self, id: &str) -> Result<()> {
        let perms = Permissions::new(self.store, self.team);
        if let Some(record) = perms.decision(id)? {
            say(&decided_line(&record));
            return Ok(());
        }
        let Some(record) = perms.pending()?.into_iter().find(|r| r.id == id) else {
            return Err(Error::NoSuchPermission(id.to_string()));
        };
        self.ask(Question::Permission(Box::new(record)))
    }

    pub(super) fn ask_plan(&mut self, r: PlanApprovalRequest) -> Result<()> {
        self.ask(Question::Plan(r))
    }

    fn ask(&mut self, q: Question) -> Result<()> {
        if self.open.iter().any(|open| open.id() == q.id()) {
            return Ok(());
        }
        if self.auto_approve {
            return self.answer(q, true, None);
        }
        self.open.push_back(q);
        if self.open.len() == 1 {
            self.show_current();
        } else if let (Some(current), Some(new)) = (self.open.front(), self.open.back()) {
            say(&format!(
                "  also waiting: {}; shown once {} is answered",
                new.brief(),
                current.id()
            ));
            say(&prompt(current));
        }
        Ok(())
    }

    fn show_current(&self) {
        if let Some(q) = self.open.front() {
            say(&q.full());
            say(&prompt(q));
        }
    }

    /// Drops the permission requests decided elsewhere, each with a line saying who decided;
    /// shows the next question if the current one went. Returns whether the current one went.
    pub(super) fn forget_decided(&mut self) -> Result<bool> {
        let perms = Permissions::new(self.store, self.team);
        let mut current_went = false;
        let mut kept = VecDeque::new();
        for (i, q) in std::mem::take(&mut self.open).into_iter().enumerate() {
            let decided = match &q {
                Question::Permission(r) => perms.decision(&r.id)?,
                Question::Plan(_) => None,
            };
            match decided {
                Some(record) => {
                    say(&format!("{}; it leaves the queue", decided_line(&record)));
                    current_went |= i == 0;
                }
                None => kept.push_back(q),
            }
        }
        self.open = kept;
        if current_went {
            self.show_current();
        }
        Ok(current_went)
    }

    /// `y` or `n [feedback]`: answers the current question, the one the prompt line named.
    pub(super) fn answer_current(&mut self, approve: bool, feedback: Option<String>) -> Result<()> {
        if self.open.is_empty() {
            return Err(Error::usage("no question is waiting for an answer"));
        }
        // Decided elsewhere since it was shown: this answer was meant for it, not the next one.
        if self.forget_decided()? {
            return Ok(());
        }
        let Some(q) = self.open.pop_front() else {
            return Ok(());
        };
        self.answer(q, approve, feedback)?;
        self.show_current();
        Ok(())
    }

    fn answer(&mut self, q: Question, approve: bool, feedback: Option<String>) -> Result<()> {
        let verb = if approve { "approved" } else { "rejected" };
        match q {
            Question::Permission(r) => {
                let decision = Decision {
                    approve,
                    feedback,
                    updated_input: None,
                    accept_suggestions: false,
                    resolved_by: self.lead.to_string(),
                };
                let perms = Permissions::new(self.store, self.team);
                match perms.resolve(&r.id, decision) {
                    Ok(_) => say(&format!(
                        "{verb} {}'s use of {}",
                        r.worker_name, r.tool_name
                    )),
                    // Someone decided from another shell first; theirs stands.
                    Err(e @ (Error::Usage(_) | Error::NoSuchPermission(_))) => {
                        match perms.decision(&r.id)? {
                            Some(record) => say(&decided_line(&record)),
                            None => say(&format!("! {e}")),
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
            Question::Plan(r) => {
                answer_plan(self.store, self.team, &r, approve, feedback)?;
                say(&format!("{verb} {}'s plan", r.from));
            }
        }
        Ok(())
    }
}

/// Answers a plan request as the lead: a `plan_approval_response` in the requester's inbox
/// (signed by the mailbox, as every lead entry is). The console's `y` / `n` and `swarm top` both
/// decide plans through here.
pub(crate) fn answer_plan(
    store: &Store,
    team: &TeamName,
    request: &PlanApprovalRequest,
    approve: bool,
    feedback: Option<String>,
) -> Result<()> {
    let to: AgentName = request.from.parse()?;
    // The teammate's launch mode goes back with the verdict, or Claude Code falls back to
    // `default` (and rewrites its roster `mode`).
    let roster = Roster::new(store, team).load()?;
    let mode = roster.member(&request.from).and_then(|m| m.mode.as_deref());
    let response = Protocol::PlanApprovalResponse(PlanApprovalResponse::answer(
        request,
        approve,
        feedback,
        Some(mode_after_plan(mode)),
    ));
    Mailbox::new(store, team).send(&to, InboxMessage::protocol(&AgentName::lead(), &response))
}

/// The line under the current question: which request `y` and `n` answer.
fn prompt(q: &Question) -> String {
    format!(
        "  answer y to approve {}, or n [feedback] to reject it",
        visible(q.id())
    )
}

/// `perm-… was approved by NAME elsewhere`.
fn decided_line(r: &PermissionRecord) -> String {
    format!(
        "{} was {} by {} elsewhere",
        r.id,
        visible(&r.status),
        visible(r.resolved_by.as_deref().unwrap_or("someone"))
    )
}
