//! Checking that the lead's control messages really come from the lead.
//!
//! Any teammate can write any inbox, so a `from: "team-lead"` proves nothing; the lead side signs
//! its entries (`lead_sig`, see `store::lead_key`) and the runtime, started with the lead's
//! public key (`--lead-verify-key`), acts on a control message only when its signature holds.
//! An unsigned or forged one is ignored, said in the pane and reported to the lead, who should
//! know a teammate is trying. A runtime started without a key (a team from before lead keys)
//! acts as before and says once that it cannot tell.

use super::Runtime;
use crate::error::Result;
use crate::store::mailbox::InboxMessage;
use crate::store::protocol::Protocol;
use crate::teammate::agent::Agent;

impl Runtime {
    /// Whether `m` may act as the lead's: signed by the lead, or no key to check against.
    pub(super) fn lead_signed(&self, m: &InboxMessage) -> bool {
        self.cfg.lead_key.as_ref().is_none_or(|k| m.signed_by(k))
    }

    /// The message types only the lead may send, which act on this runtime.
    pub(super) fn is_lead_control(p: &Protocol) -> bool {
        matches!(
            p,
            Protocol::ShutdownRequest(_)
                | Protocol::PlanApprovalResponse(_)
                | Protocol::PermissionResponse(_)
                | Protocol::TaskAssignment(_)
        )
    }

    /// A shell agent's `$ cmd` that does not carry the lead's signature: never run.
    pub(super) fn refused_command(&self, m: &InboxMessage) -> bool {
        matches!(self.cfg.agent, Agent::Shell)
            && m.text.trim_start().starts_with("$ ")
            && self.cfg.lead_key.is_some()
            && !self.lead_signed(m)
    }

    /// Ignores `m`, in the pane and to the lead.
    pub(super) fn forged(&self, m: &InboxMessage, what: &str) -> Result<()> {
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
