//! Requests waiting on the lead: a teammate's permission request (PROTOCOL.md section 9) or
//! plan (section 7, `plan_approval_request`), one model for both.
//!
//! [`Request`] is the one type every front end shows (the lead console, the lead agent,
//! `swarm top`, `swarm permission`, `swarm status`), [`pending`] the one listing of what waits,
//! and [`decide`] the one way to answer: it writes the resolved record, sends the answer as the
//! lead and records who decided, or refuses a second decision with [`Error::AlreadyDecided`].
//! The front ends only present a request and collect the verdict; none of them writes a record
//! or an answer itself, so they cannot disagree on what a decision does or what it is called.
//!
//! The files: a permission request is `permissions/pending/<id>.json` (or, from a Claude Code
//! teammate, only its message in the lead's inbox: see `permission`); a plan waits as its
//! message (see `plan`); both kinds are decided into `permissions/resolved/<id>.json`, told
//! apart by their ids (`kind`).

mod decide;
mod kind;
mod permission;
mod plan;
mod records;
mod request;
mod signed;
mod verdict;

use std::time::Instant;

use crate::error::{Error, Result};
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{Payload, Protocol};
use crate::store::watcher::DirWatcher;

pub(crate) use decide::decide;
pub(crate) use kind::Kind;
pub(crate) use permission::{Ask, PermissionRecord, Permissions};
pub(crate) use plan::PlanRecord;
pub(crate) use request::{Decided, Request};
pub(crate) use verdict::{Decider, Verdict};

use plan::Plans;

/// What waits on the lead, permissions first, each kind oldest first.
pub(crate) fn pending(store: &Store, team: &TeamName) -> Result<Vec<Request>> {
    let lead_inbox = Mailbox::new(store, team).read(&AgentName::lead(), false)?;
    pending_in(store, team, &lead_inbox)
}

/// [`pending`], with the lead's inbox already read (all of it, read or not).
pub(crate) fn pending_in(
    store: &Store,
    team: &TeamName,
    lead_inbox: &[InboxMessage],
) -> Result<Vec<Request>> {
    let mut open: Vec<Request> = Permissions::new(store, team)
        .pending_in(lead_inbox)?
        .into_iter()
        .map(|r| Request::Permission(Box::new(r)))
        .collect();
    open.extend(
        Plans::new(store, team)
            .waiting(lead_inbox)?
            .into_iter()
            .map(|r| Request::Plan(Box::new(r))),
    );
    Ok(open)
}

/// Every decision on record, oldest request first.
pub(crate) fn resolved(store: &Store, team: &TeamName) -> Result<Vec<Decided>> {
    let mut all: Vec<Request> = Permissions::new(store, team)
        .resolved()?
        .into_iter()
        .map(|r| Request::Permission(Box::new(r)))
        .collect();
    all.extend(
        Plans::new(store, team)
            .resolved()?
            .into_iter()
            .map(|r| Request::Plan(Box::new(r))),
    );
    all.sort_by(|a, b| (a.created_at(), a.id()).cmp(&(b.created_at(), b.id())));
    Ok(all.into_iter().map(Decided::new).collect())
}

/// Where a request stands.
enum Found {
    Waiting(Request),
    Decided(Decided),
}

/// The request `id` names, waiting or decided; `None` if nobody sent it (or, for a plan, its
/// teammate has sent a newer one since: its runtime waits for that one only).
fn find(store: &Store, team: &TeamName, id: &str) -> Result<Option<Found>> {
    match Kind::of(id)? {
        Kind::Permission => {
            let perms = Permissions::new(store, team);
            // A pending file beside a resolved one is a decision left halfway: deciding it
            // again finishes that decision.
            if let Some(r) = perms.pending_record(id)? {
                return Ok(Some(Found::Waiting(Request::Permission(Box::new(r)))));
            }
            if let Some(r) = perms.decision(id)? {
                return Ok(Some(Found::Decided(Decided::new(Request::Permission(
                    Box::new(r),
                )))));
            }
            let lead_inbox = Mailbox::new(store, team).read(&AgentName::lead(), false)?;
            Ok(perms
                .unfiled(&lead_inbox)?
                .into_iter()
                .find(|r| r.id == id)
                .map(|r| Found::Waiting(Request::Permission(Box::new(r)))))
        }
        Kind::Plan => {
            let plans = Plans::new(store, team);
            if let Some(r) = plans.record(id)? {
                return Ok(Some(Found::Decided(Decided::new(Request::Plan(Box::new(
                    r,
                ))))));
            }
            let lead_inbox = Mailbox::new(store, team).read(&AgentName::lead(), false)?;
            let Some(plan) = plans.latest(&lead_inbox).into_iter().find(|p| p.id == id) else {
                return Ok(None);
            };
            Ok(Some(match decide::decided_plan(&plans, &plan)? {
                Some(d) => Found::Decided(d),
                None => Found::Waiting(Request::Plan(Box::new(plan))),
            }))
        }
    }
}

/// The waiting request `id`; [`Error::AlreadyDecided`] if it is decided, and
/// [`Error::NoSuchRequest`] if nothing by that id waits.
pub(crate) fn lookup(store: &Store, team: &TeamName, id: &str) -> Result<Request> {
    match find(store, team, id)? {
        Some(Found::Waiting(r)) => Ok(r),
        Some(Found::Decided(d)) => Err(d.already()),
        None => Err(Error::NoSuchRequest(id.to_string())),
    }
}

/// The decision on `request`, if someone made one (here or anywhere else).
pub(crate) fn decided(
    store: &Store,
    team: &TeamName,
    request: &Request,
) -> Result<Option<Decided>> {
    match request {
        Request::Permission(r) => Ok(Permissions::new(store, team)
            .decision(&r.id)?
            .map(|r| Decided::new(Request::Permission(Box::new(r))))),
        Request::Plan(r) => decide::decided_plan(&Plans::new(store, team), r),
    }
}

/// The request `m` (a message in the lead's inbox) carries, if it is one its sender made for
/// itself; a permission request is filed first if it is only the message, so it shows in `ls
/// pending/` like any other. It may be decided already: [`decided`] says.
pub(crate) fn of_message(
    store: &Store,
    team: &TeamName,
    m: &InboxMessage,
) -> Result<Option<Request>> {
    if let Some(plan) = PlanRecord::of_message(m, team) {
        let record = Plans::new(store, team).record(&plan.id)?;
        return Ok(Some(Request::Plan(Box::new(record.unwrap_or(plan)))));
    }
    let Payload::Protocol(p) = m.payload() else {
        return Ok(None);
    };
    let Protocol::PermissionRequest(r) = *p else {
        return Ok(None);
    };
    // What is not a request the console says it ignored; it must never stop the console.
    if r.agent_id != m.from || Kind::of(&r.request_id).ok() != Some(Kind::Permission) {
        return Ok(None);
    }
    let perms = Permissions::new(store, team);
    perms.adopt(&r, &m.from)?;
    let record = match perms.pending_record(&r.request_id)? {
        Some(record) => Some(record),
        None => perms.decision(&r.request_id)?,
    };
    Ok(record.map(|r| Request::Permission(Box::new(r))))
}

/// Waits for the decision on `id` until `deadline`; `None` on timeout. A permission request
/// that is only a message is filed first, so its decision has a file to wait on.
pub(crate) fn wait(
    store: &Store,
    team: &TeamName,
    id: &str,
    deadline: Option<Instant>,
) -> Result<Option<Decided>> {
    if Kind::of(id)? == Kind::Permission {
        Permissions::new(store, team).file_from_inbox(id)?;
    }
    let dir = store.resolved_dir(team);
    crate::store::fsio::ensure_dir(&dir)?;
    let watcher = DirWatcher::new(&dir)?;
    loop {
        match find(store, team, id)? {
            Some(Found::Decided(d)) => return Ok(Some(d)),
            // Decided, but the decider is still at it (or died halfway): the decision stands.
            Some(Found::Waiting(r)) => {
                if let Some(d) = decided(store, team, &r)? {
                    return Ok(Some(d));
                }
            }
            None => return Err(Error::NoSuchRequest(id.to_string())),
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
        watcher.wait(deadline);
    }
}
