//! The lead's answer and who gave it: the words every record and every view uses for a verdict,
//! the answer a front end collects (`Verdict`), the decider a record names (`Decider`), and
//! where a request stands, as both kinds of record keep it (`Resolution`).
//!
//! One word per verdict, `approved` or `rejected`, is the record's `status` (PROTOCOL.md
//! section 9) and what the console, the lead agent, `swarm top` and `swarm permission` print, so
//! a person reading any of them, or the files, reads the same word.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::store::fsio::now_ms;
use crate::store::names::{AgentName, LEAD};

/// `status` of a request nobody has decided yet.
pub(crate) const PENDING: &str = "pending";
pub(crate) const APPROVED: &str = "approved";
pub(crate) const REJECTED: &str = "rejected";

/// The verdict word for an approval or a rejection.
pub(crate) fn word(approved: bool) -> &'static str {
    if approved {
        APPROVED
    } else {
        REJECTED
    }
}

/// What the lead answers.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Verdict {
    pub(crate) approve: bool,
    /// Told to the requester: why not, or what to mind.
    pub(crate) feedback: Option<String>,
    /// Permission requests only: the input to run instead of the one asked for.
    pub(crate) updated_input: Option<Value>,
    /// Permission requests only: pass the request's own `permission_suggestions` back as
    /// `permission_updates`, so the requester applies them (e.g. Claude's "allow this
    /// directory for the session").
    pub(crate) accept_suggestions: bool,
}

impl Verdict {
    /// A plain yes or no, with the feedback typed beside it.
    pub(crate) fn new(approve: bool, feedback: Option<String>) -> Verdict {
        Verdict {
            approve,
            feedback,
            ..Verdict::default()
        }
    }
}

/// Who decided, as the record names it. The answer itself always goes out as the lead, the one
/// sender every requester obeys; this is only what `resolvedBy` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decider {
    /// The person at the lead's side: the console, `swarm top`, `swarm permission`.
    Lead,
    /// The lead agent (`--approvals lead`), in a decision turn of its own.
    LeadAgent,
    /// Another name the person gave (`swarm permission approve --by NAME`).
    Named(AgentName),
}

impl Decider {
    /// `--by NAME`: the lead's own name is no other name.
    pub(crate) fn named(name: AgentName) -> Decider {
        if name.is_lead() {
            Decider::Lead
        } else {
            Decider::Named(name)
        }
    }

    /// What `resolvedBy` records.
    pub(crate) fn recorded(&self) -> String {
        match self {
            Decider::Lead => LEAD.to_string(),
            Decider::LeadAgent => format!("{LEAD} (lead-agent)"),
            Decider::Named(name) => name.to_string(),
        }
    }
}

/// Where a request stands, the same fields in a permission and in a plan record: `status`, and
/// once decided `resolvedBy`, `resolvedAt` and `feedback` (PROTOCOL.md section 9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Resolution {
    /// `pending`, `approved` or `rejected`.
    pub(crate) status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) resolved_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) resolved_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) feedback: Option<String>,
}

impl Resolution {
    pub(crate) fn pending() -> Resolution {
        Resolution {
            status: PENDING.into(),
            resolved_by: None,
            resolved_at: None,
            feedback: None,
        }
    }

    /// `approve` (with `feedback`) decided by `by`, now.
    pub(crate) fn decided(approve: bool, feedback: Option<String>, by: &Decider) -> Resolution {
        Resolution {
            status: word(approve).into(),
            resolved_by: Some(by.recorded()),
            resolved_at: Some(now_ms()),
            feedback,
        }
    }

    pub(crate) fn approved(&self) -> bool {
        self.status == APPROVED
    }
}
