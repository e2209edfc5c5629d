//! Plan mode's progress (`--plan-mode-required`, PROTOCOL.md section 7).
//!
//! A teammate in plan mode changes nothing until the lead approved a plan: its first turn only
//! writes one, which goes to the lead as a `plan_approval_request`; a rejection asks for a
//! revised plan with the lead's feedback, an approval lets one turn carry the plan out, and from
//! then on the teammate works as any other. Only a response to the request still open counts,
//! so a stale or forged answer cannot skip the approval.

/// Where a teammate stands in plan mode.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum PlanState {
    NotRequired,
    /// A planning turn is due: at start, or after a rejection. `stalled` after a planning turn
    /// failed: wait for a new message rather than retry at once.
    Needed {
        previous: Option<String>,
        feedback: Option<String>,
        stalled: bool,
    },
    Pending {
        request_id: String,
        plan: String,
    },
    /// Approved: the turn that carries the plan out is due.
    Approved {
        plan: String,
        feedback: Option<String>,
    },
    Done,
}

impl PlanState {
    pub(super) fn at_start(plan_mode_required: bool) -> PlanState {
        if plan_mode_required {
            PlanState::Needed {
                previous: None,
                feedback: None,
                stalled: false,
            }
        } else {
            PlanState::NotRequired
        }
    }

    /// The plan awaiting the lead's answer to `request_id`, if that request is the open one.
    pub(super) fn open_plan(&self, request_id: &str) -> Option<String> {
        match self {
            PlanState::Pending {
                request_id: open,
                plan,
            } if open == request_id => Some(plan.clone()),
            _ => None,
        }
    }

    /// The lead's answer to the open plan.
    pub(super) fn answered(&mut self, plan: String, approved: bool, feedback: Option<String>) {
        *self = if approved {
            PlanState::Approved { plan, feedback }
        } else {
            PlanState::Needed {
                previous: Some(plan),
                feedback,
                stalled: false,
            }
        };
    }

    /// A planning turn failed: wait for a new message before planning again.
    pub(super) fn stall(&mut self) {
        if let PlanState::Needed { stalled, .. } = self {
            *stalled = true;
        }
    }
}
