//! Reading the inbox, once per wake and with one parse (marking what it handled reuses it):
//! protocol messages are acted on at once, ordinary ones wait for a turn.
//!
//! Protocol messages (PROTOCOL.md section 7) never reach the agent: a shutdown request from the
//! lead ends the runtime, a plan answer moves plan mode on, a permission answer is only noted
//! (the requester waits on its own file), a task assignment queues the task. Each is checked
//! against who may send it, because any teammate can write to any inbox. Handled protocol
//! messages are marked delivered by `msg_id`; ordinary messages are only announced in the pane
//! and handed to `turns`, undelivered until a turn hands them over.
//!
//! A `from: "team-lead"` proves nothing either, so the lead side signs its entries (`lead_sig`,
//! see `store::lead_key`) and the runtime, started with the lead's public key
//! (`--lead-verify-key`), acts on a control message only when its signature holds. An unsigned
//! or forged one is ignored, said in the pane and reported to the lead, who should know a
//! teammate is trying. The signature checked is swarm's bound one (`swarm_lead_sig`), which
//! names this team and this member, so a signed message copied from another inbox is a forgery
//! here; and a lead message acted on once (`acted`) is never acted on again. A runtime started
//! without a key (a team from before lead keys) acts as before and says once that it cannot
//! tell.

use super::Runtime;
use crate::error::Result;
use crate::store::mailbox::InboxMessage;
use crate::store::names::TaskId;
use crate::store::protocol::{Payload, Protocol, ShutdownRequest};
use crate::teammate::agent::Agent;
use crate::teammate::pane::suffix;

/// What one read of the inbox leaves for the loop.
pub(super) enum Unread {
    /// The lead's shutdown request, which the loop must honour.
    Shutdown(ShutdownRequest),
    /// The ordinary messages waiting for a turn, oldest first.
    Ordinary(Vec<InboxMessage>),
}

impl Runtime {
    /// Reads the inbox: handles protocol messages at once and returns the ordinary ones, which
    /// stay unread until a turn hands them over.
    pub(super) fn read_inbox(&mut self) -> Result<Unread> {
        let inbox = self.mailbox().read_parsed(&self.cfg.name)?;
        let unread: Vec<InboxMessage> = inbox.unread().cloned().collect();
        self.inbox = Some(inbox);
        let (mut handled, mut ordinary) = (Vec::new(), Vec::new());
        let mut shutdown = None;
        for m in unread {
            if self.acted.contains(&m.key()) {
                // Acted on already (before a restart, or a copy put back unread): nothing a
                // second time.
                handled.push(m.key());
                if self.acted.first_report(&m.key()) {
                    self.pane.say(format!(
                        "ignored a second delivery of {}'s message {}: it was acted on already",
                        m.from,
                        m.key()
                    ));
                }
                continue;
            }
            match m.payload() {
                Payload::Protocol(p) => {
                    handled.push(m.key());
                    if let Some(req) = self.on_protocol(&m, *p)? {
                        shutdown = Some(req);
                        break;
                    }
                }
                Payload::Text(_) if self.refused_command(&m) => {
                    handled.push(m.key());
                    self.forged(&m, "`$ ` command")?;
                }
                Payload::Text(_) => {
                    let mut m = m;
                    m.unverified =
                        m.from.is_lead() && self.cfg.lead_key.is_some() && !self.lead_signed(&m);
                    self.pool_paused = false;
                    if self.announced.insert(m.key()) {
                        let later = if self.current.is_some() {
                            " (delivered after this turn)"
                        } else {
                            ""
                        };
                        self.pane
                            .say(format!("message from {}: {}{later}", m.from, preview(&m)));
                    }
                    ordinary.push(m);
                }
            }
        }
        // The inbox as just read: marked without a second parse unless someone wrote since.
        let mut inbox = self.inbox.take();
        self.mailbox()
            .mark_delivered_in(&self.cfg.name, &handled, &mut inbox)?;
        self.inbox = inbox;
        Ok(match shutdown {
            Some(request) => Unread::Shutdown(request),
            None => Unread::Ordinary(ordinary),
        })
    }

    fn ignore(&self, m: &InboxMessage, what: &str, why: &str) {
        self.pane
            .say(format!("ignored {what} from {}: {why}", m.from));
    }

    /// Acts on one protocol message; returns a shutdown request that must be honoured.
    fn on_protocol(&mut self, m: &InboxMessage, p: Protocol) -> Result<Option<ShutdownRequest>> {
        if Self::is_lead_control(&p) && !self.lead_signed(m) {
            self.forged(m, p.type_name())?;
            return Ok(None);
        }
        if Self::is_lead_control(&p) && m.from.is_lead() {
            self.acted.record([m.key().as_str()])?;
        }
        let from_lead = m.from.is_lead();
        match p {
            Protocol::ShutdownRequest(req) => {
                let target = crate::store::protocol::shutdown_request_target(&req.request_id);
                if self.lead_asks(m, "shutdown_request", &req.from, target) {
                    return Ok(Some(req));
                }
            }
            Protocol::PlanApprovalResponse(resp) => match self.plan.open_plan(&resp.request_id) {
                _ if !from_lead => {
                    self.ignore(m, "plan_approval_response", "only the lead may decide")
                }
                None => self.ignore(
                    m,
                    "plan_approval_response",
                    "it matches no open plan request",
                ),
                Some(plan) => {
                    self.pane.say(if resp.approved {
                        format!(
                            "plan approved by the lead{}",
                            suffix(resp.feedback.as_deref())
                        )
                    } else {
                        format!(
                            "plan rejected by the lead{}; revising it",
                            suffix(resp.feedback.as_deref())
                        )
                    });
                    self.plan.answered(plan, resp.approved, resp.feedback);
                }
            },
            Protocol::PermissionResponse(resp) => {
                // The requester (`swarm permission request --wait` or the hook) waits on the
                // signed resolved file and checks it itself; here the answer only needs to be
                // kept out of the agent's turn. The lead's signature above names this member.
                let verdict = if resp.subtype == "success" {
                    "approved"
                } else {
                    "rejected"
                };
                self.pane.say(format!(
                    "permission {} {verdict} by the lead",
                    resp.request_id
                ));
            }
            Protocol::InterruptRequest(req) => {
                let target = crate::store::protocol::interrupt_request_target(&req.request_id);
                if self.lead_asks(m, "interrupt_request", &req.from, target) {
                    self.interrupt = Some(req);
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
                            self.pool_paused = false;
                        }
                        Err(e) => self.ignore(m, "task_assignment", &e.to_string()),
                    }
                }
            }
            other => self.ignore(m, other.type_name(), "not a message for a teammate"),
        }
        Ok(None)
    }

    /// Whether a request `what` (a shutdown or an interrupt) may be honoured: sent by the lead,
    /// its inner `from` the envelope's, and addressed to this member by its id (`target`);
    /// says why not in the pane.
    fn lead_asks(&self, m: &InboxMessage, what: &str, from: &str, target: Option<&str>) -> bool {
        let why = if !m.from.is_lead() {
            "only the lead may ask"
        } else if from != m.from.as_str() {
            "its sender does not match the envelope"
        } else if target.is_some_and(|t| t != self.cfg.name.as_str()) {
            "it is addressed to someone else"
        } else {
            return true;
        };
        self.ignore(m, what, why);
        false
    }

    /// Whether `m` may act as the lead's: signed by the lead for this very inbox
    /// (`swarm_lead_sig`), or no key to check against.
    fn lead_signed(&self, m: &InboxMessage) -> bool {
        self.cfg
            .lead_key
            .as_ref()
            .is_none_or(|k| m.signed_for(k, &self.cfg.team, &self.cfg.name))
    }

    /// The message types only the lead may send, which act on this runtime.
    fn is_lead_control(p: &Protocol) -> bool {
        matches!(
            p,
            Protocol::ShutdownRequest(_)
                | Protocol::PlanApprovalResponse(_)
                | Protocol::PermissionResponse(_)
                | Protocol::TaskAssignment(_)
                | Protocol::InterruptRequest(_)
        )
    }

    /// A shell agent's `$ cmd` that does not carry the lead's signature: never run.
    fn refused_command(&self, m: &InboxMessage) -> bool {
        matches!(self.cfg.agent, Agent::Shell)
            && m.text.trim_start().starts_with("$ ")
            && self.cfg.lead_key.is_some()
            && !self.lead_signed(m)
    }

    /// Ignores `m`, in the pane and to the lead.
    fn forged(&self, m: &InboxMessage, what: &str) -> Result<()> {
        let line = format!(
            "ignored a forged {what} from {:?}: it does not carry the team lead's signature",
            m.from
        );
        self.pane.say(&line);
        self.tell_lead(line)
    }

    /// Said once at start: whether lead messages are checked.
    pub(super) fn verification_note(&self) -> Option<&'static str> {
        self.cfg.lead_key.is_none().then_some(
            "started without --lead-verify-key (a team from before lead keys): messages \
             claiming to be from the lead are not verified",
        )
    }
}

/// The first line of a message (or its summary), cut to fit a pane line.
fn preview(m: &InboxMessage) -> String {
    let text = m.summary.as_deref().unwrap_or(&m.text);
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(72) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}
