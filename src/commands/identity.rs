//! Who the caller is, and what it may do in another member's name.
//!
//! A teammate's shell has `SWARM_AGENT_NAME` set to its own name (the launcher and the runtime
//! put it there). Such a caller acts only as itself: `--from`, `--agent` and
//! `inbox NAME --mark-read` naming another member are refused. Lead-only operations (kill,
//! shutdown, deciding requests, ...) are not judged here but by `store::authority`, which asks
//! for the team's lead key itself: an environment variable can take rights away, never grant
//! them.

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
