//! Who the caller is, and what it may do in another member's name.
//!
//! A teammate's shell has `SWARM_AGENT_NAME` set to its own name (the launcher and the runtime
//! put it there). Such a caller acts only as itself: `--from`, `--agent` and
//! `inbox NAME --mark-read` naming another member are refused, and it cannot decide permission
//! requests. The caller "holds the lead key" when `SWARM_AGENT_NAME` is unset or `team-lead`
//! (the user's shell, the lead console, the launcher): only such a process loads the team's
//! private key (see `store::lead_key`), so only it can sign, and it may act for any member.
//! This stops a teammate that goes through swarm, or a prompt-injected agent; code that
//! unsets the variable runs as the same user and is out of reach (README, threat model).

use crate::error::{Error, Result};
use crate::store::lead_key::caller_is_lead_side;

/// The teammate this shell belongs to, if it is one.
fn teammate_caller() -> Option<String> {
    if caller_is_lead_side() {
        return None;
    }
    std::env::var("SWARM_AGENT_NAME").ok()
}

/// Refuses `flag NAME` when a teammate's shell names someone else.
pub(crate) fn check_acting_as(name: &str, flag: &str) -> Result<()> {
    match teammate_caller() {
        Some(me) if !me.eq_ignore_ascii_case(name) => Err(Error::usage(format!(
            "refusing {flag} {name:?}: this shell is teammate {me:?} (SWARM_AGENT_NAME), and a \
             teammate acts only as itself; only the lead's shell, which holds the team's lead \
             key, may act for another member"
        ))),
        _ => Ok(()),
    }
}

/// Refuses `what` to a teammate's shell: it is the lead's to do.
pub(crate) fn require_lead(what: &str) -> Result<()> {
    match teammate_caller() {
        Some(me) => Err(Error::usage(format!(
            "refusing to {what}: this shell is teammate {me:?} (SWARM_AGENT_NAME), and only \
             the team lead may"
        ))),
        None => Ok(()),
    }
}
