//! The one type for a request waiting on the lead, permission or plan, and the same request
//! once decided.
//!
//! Each holds the record it came from: the pending permission record (what an approval would let
//! run) or the plan as its teammate sent it. Every front end shows these and nothing else, and
//! every decision is made on one of them, so what the person read is what was decided.

use serde::Serialize;

use super::kind::Kind;
use super::permission::PermissionRecord;
use super::plan::PlanRecord;
use super::verdict::{word, Resolution};
use crate::error::Error;
use crate::store::names::LEAD;

/// A permission or plan request; its JSON is its record's.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum Request {
    Permission(Box<PermissionRecord>),
    Plan(Box<PlanRecord>),
}

impl Request {
    pub(crate) fn id(&self) -> &str {
        match self {
            Request::Permission(r) => &r.id,
            Request::Plan(r) => &r.id,
        }
    }

    /// The teammate that asks.
    pub(crate) fn from(&self) -> &str {
        match self {
            Request::Permission(r) => &r.worker_name,
            Request::Plan(r) => &r.worker_name,
        }
    }

    pub(crate) fn kind(&self) -> Kind {
        match self {
            Request::Permission(_) => Kind::Permission,
            Request::Plan(_) => Kind::Plan,
        }
    }

    /// One line: what is asked (`wants Bash: make`, `submitted a plan: 1. parse`).
    pub(crate) fn what(&self) -> String {
        match self {
            Request::Permission(r) => {
                let detail = if r.description.is_empty() {
                    r.input.to_string()
                } else {
                    r.description.clone()
                };
                format!("wants {}: {detail}", r.tool_name)
            }
            Request::Plan(r) => format!("submitted a plan: {}", r.first_line()),
        }
    }

    /// Where it stands: pending, or decided by whom and how.
    pub(crate) fn resolution(&self) -> &Resolution {
        match self {
            Request::Permission(r) => &r.resolution,
            Request::Plan(r) => &r.resolution,
        }
    }

    pub(crate) fn created_at(&self) -> u64 {
        match self {
            Request::Permission(r) => r.created_at,
            Request::Plan(r) => r.created_at,
        }
    }
}

/// A request with its verdict: what `decide` returns, and how a resolved record reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub(crate) struct Decided(Request);

impl Decided {
    /// A record read from `resolved/` (whatever its `status` says, it is decided).
    pub(crate) fn new(record: Request) -> Decided {
        Decided(record)
    }

    pub(crate) fn request(&self) -> &Request {
        &self.0
    }

    pub(crate) fn approved(&self) -> bool {
        self.0.resolution().approved()
    }

    /// `approved` or `rejected`.
    pub(crate) fn word(&self) -> &'static str {
        word(self.approved())
    }

    /// Who decided, as the record says (the lead when it does not).
    pub(crate) fn by(&self) -> &str {
        self.0.resolution().resolved_by.as_deref().unwrap_or(LEAD)
    }

    /// What the decider is told: `approved coder's use of Bash`, `rejected coder's plan`.
    pub(crate) fn line(&self) -> String {
        match &self.0 {
            Request::Permission(r) => {
                format!("{} {}'s use of {}", self.word(), r.worker_name, r.tool_name)
            }
            Request::Plan(r) => format!("{} {}'s plan", self.word(), r.worker_name),
        }
    }

    /// The refusal of a second decision.
    pub(crate) fn already(&self) -> Error {
        Error::AlreadyDecided {
            id: self.0.id().to_string(),
            verdict: self.word(),
            by: self.by().to_string(),
        }
    }
}
