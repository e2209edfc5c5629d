//! The timeline's sources other than messages: the roster (the team and who joined), the task
//! history, the task files (for what the history does not explain), permission records and the
//! lead agent's decisions.
//!
//! A team Claude Code made has no history: each of its task files then gives one event, dated
//! by the file's modification time, that says what state the task is in and who owns it
//! (`seen`). A swarm team's files agree with its history except for writes by Claude Code
//! teammates no observer caught yet, which show the same way.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::UNIX_EPOCH;

use serde::Deserialize;

use super::event::{Event, Kind, Source};
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::lead_key::{self, DECISION_RECORD};
use crate::store::names::{TaskId, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{parse_timestamp, truncate};
use crate::store::requests::{self, Kind as RequestKind, Request};
use crate::store::roster::TeamConfig;
use crate::store::tasks::history::{self, first_seen, transition, Entry, State, Transition};
use crate::store::tasks::Task;

/// Transitions an owner makes itself: a task file seen in such a state names its owner as the
/// likely actor.
fn by_owner(t: Transition) -> bool {
    matches!(
        t,
        Transition::Claimed | Transition::Started | Transition::Completed | Transition::Failed
    )
}

/// The roster's events not shown yet: the team's creation, then each member's joining.
pub(super) fn roster(config: &TeamConfig, shown: &mut HashSet<(String, u64)>) -> Vec<Event> {
    let mut out = Vec::new();
    let lead = config
        .members
        .iter()
        .find(|m| m.is_lead())
        .map_or(crate::store::names::LEAD, |m| m.name.as_str());
    if config.created_at > 0 && shown.insert((String::new(), config.created_at)) {
        out.push(
            Event::new(config.created_at, Kind::TeamCreated, Source::Roster)
                .by(lead)
                .text(truncate(&config.description, 200)),
        );
    }
    for m in &config.members {
        if m.joined_at > 0 && shown.insert((m.name.to_string(), m.joined_at)) {
            out.push(
                Event::new(m.joined_at, Kind::MemberJoined, Source::Roster)
                    .by(m.name.as_str())
                    .text(match m.agent_label() {
                        Some(agent) => agent,
                        None if m.is_lead() => "",
                        None => &m.agent_type,
                    }),
            );
        }
    }
    out
}

/// The event a history entry stands for; `None` if its timestamp cannot be read.
fn history_event(e: &Entry, source: Source) -> Option<Event> {
    let at = parse_timestamp(&e.timestamp)?;
    let mut event = Event::new(at, Kind::Task(e.event), source).text(&e.subject);
    event.task = Some(e.task.clone());
    event.seen = e.seen;
    event.actor = e.by.clone().or_else(|| {
        // Nobody recorded who: the owner does what owners do.
        by_owner(e.event).then(|| e.owner.clone()).flatten()
    });
    // Whose task it is (or was), when that is not the actor: so `--member` finds it.
    let owner = match e.event {
        Transition::Released | Transition::Failed => e.previous_owner.clone(),
        _ => e.owner.clone(),
    };
    event.to = owner.filter(|o| event.actor.as_ref() != Some(o));
    event.detail = e.reason.clone();
    Some(event)
}

/// What the history last said of each task, and how far it has been read.
#[derive(Default)]
pub(super) struct Tasks {
    offset: u64,
    said: HashMap<TaskId, Option<State>>,
    subjects: HashMap<TaskId, String>,
    pub(super) undated: usize,
}

impl Tasks {
    /// The history's new entries.
    pub(super) fn read_history(
        &mut self,
        store: &Store,
        team: &TeamName,
        emit: &mut dyn FnMut(Event),
    ) -> Result<()> {
        let path = store.task_history_path(team);
        let (said, subjects, undated) = (&mut self.said, &mut self.subjects, &mut self.undated);
        self.offset = history::read_from(&path, self.offset, |e| {
            said.insert(e.task.clone(), e.state());
            subjects.insert(e.task.clone(), e.subject.clone());
            match history_event(&e, Source::History) {
                Some(event) => emit(event),
                None => *undated += 1,
            }
        })?;
        Ok(())
    }

    /// Task files whose state the history does not say, as `seen` events; `settled` says
    /// whether a disagreement may be shown now (a writer may be between its write and its
    /// history line: the follower waits a moment, see `Timeline`).
    pub(super) fn read_files(
        &mut self,
        store: &Store,
        team: &TeamName,
        settled: &mut dyn FnMut(&TaskId, &State) -> bool,
        emit: &mut dyn FnMut(Event),
    ) -> Result<()> {
        let dir = store.tasks_dir(team);
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io("list", &dir)(e)),
        };
        let mut present = HashSet::new();
        let mut ids: Vec<TaskId> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json")?.parse().ok())
            .collect();
        ids.sort();
        for id in ids {
            let path = store.task_path(team, &id);
            let Ok(Some(task)) = fsio::read_json::<Task>(&path) else {
                continue;
            };
            if task.id != id {
                continue;
            }
            present.insert(id.clone());
            let now = State::of(&task);
            let before = self.said.get(&id).cloned().flatten();
            if before.as_ref() == Some(&now) || !settled(&id, &now) {
                continue;
            }
            let event = match &before {
                None => first_seen(&now),
                Some(b) => match transition(Some(b), Some(&now), None) {
                    Some(t) => t,
                    None => continue,
                },
            };
            let entry = Entry {
                timestamp: crate::store::protocol::format_timestamp(modified_ms(&path)),
                task: id.clone(),
                event,
                by: None,
                status: now.status,
                owner: now.owner.clone(),
                previous_owner: before
                    .and_then(|b| b.owner)
                    .filter(|p| Some(p) != now.owner.as_ref()),
                failed: now.parked,
                reason: task
                    .metadata
                    .get("failureReason")
                    .and_then(|r| r.as_str())
                    .map(str::to_string)
                    .filter(|_| now.parked),
                subject: task.subject.clone(),
                seen: true,
            };
            self.said.insert(id.clone(), Some(now));
            self.subjects.insert(id, task.subject);
            emit(history_event(&entry, Source::TaskFile).expect("a timestamp we formatted"));
        }
        // Tasks the history (or an earlier look) knows that have no file any more.
        let gone: Vec<TaskId> = self
            .said
            .iter()
            .filter(|(id, s)| s.is_some() && !present.contains(*id))
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            let mut event = Event::new(
                crate::store::fsio::now_ms(),
                Kind::Task(Transition::Deleted),
                Source::TaskFile,
            )
            .text(self.subjects.get(&id).cloned().unwrap_or_default());
            event.task = Some(id.clone());
            event.seen = true;
            self.said.insert(id, None);
            emit(event);
        }
        Ok(())
    }
}

fn modified_ms(path: &Path) -> u64 {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or_else(fsio::now_ms, |d| d.as_millis() as u64)
}

/// Permission and plan requests and their decisions, from the one request model
/// (`store::requests`): the decided ones from their resolved records, which say who decided,
/// then the ones still waiting.
pub(super) fn requests(store: &Store, team: &TeamName, emit: &mut dyn FnMut(Event)) -> Result<()> {
    for decided in requests::resolved(store, team)? {
        let request = decided.request();
        emit(requested(request));
        let Some(at) = request.resolution().resolved_at else {
            continue;
        };
        let kind = match (request.kind(), decided.approved()) {
            (RequestKind::Permission, true) => Kind::PermissionApproved,
            (RequestKind::Permission, false) => Kind::PermissionRejected,
            (RequestKind::Plan, true) => Kind::PlanApproved,
            (RequestKind::Plan, false) => Kind::PlanRejected,
        };
        let mut event = Event::new(at, kind, Source::Permission)
            .by(decided.by())
            .to(request.from())
            .request(request.id())
            .detail(request.resolution().feedback.clone());
        if let Request::Permission(r) = request {
            event.text = r.tool_name.clone();
        }
        emit(event);
    }
    for request in requests::pending(store, team)? {
        emit(requested(&request));
    }
    Ok(())
}

fn requested(request: &Request) -> Event {
    let (kind, text, detail) = match request {
        Request::Permission(r) => (
            Kind::PermissionRequested,
            r.tool_name.clone(),
            truncate(&r.description, 200),
        ),
        Request::Plan(r) => (
            Kind::PlanRequested,
            truncate(r.first_line(), 200),
            String::new(),
        ),
    };
    Event::new(request.created_at(), kind, Source::Permission)
        .by(request.from())
        .request(request.id())
        .text(text)
        .detail(Some(detail))
}

/// One line of `lead/decisions.jsonl`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Decision {
    request_id: String,
    kind: String,
    approved: bool,
    #[serde(default)]
    feedback: Option<String>,
    by: String,
    timestamp: String,
}

/// The lead agent's decisions from `offset` on; returns the new offset. A line without the
/// lead's signature (`leadSig`) is skipped, noted once: anyone can append to the file.
pub(super) fn decisions(
    store: &Store,
    team: &TeamName,
    offset: u64,
    emit: &mut dyn FnMut(Event),
) -> Result<u64> {
    let path = store.decisions_path(team);
    let Some(bytes) = fsio::read_file(&path)? else {
        return Ok(offset);
    };
    let verifier = lead_key::verifier(store, team)?;
    let start = (offset as usize).min(bytes.len());
    let end = bytes[start..]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(start, |i| start + i + 1);
    for line in bytes[start..end].split(|b| *b == b'\n') {
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        let signed = verifier
            .as_ref()
            .is_some_and(|v| v.verifies_record(team.as_str(), DECISION_RECORD, &value));
        if !signed {
            lead_key::note_ignored(&path, "a line without the team lead's signature (leadSig)");
            continue;
        }
        let Ok(d) = serde_json::from_value::<Decision>(value) else {
            continue;
        };
        let Some(at) = parse_timestamp(&d.timestamp) else {
            continue;
        };
        let kind = match (d.kind.as_str(), d.approved) {
            ("plan", true) => Kind::PlanApproved,
            ("plan", false) => Kind::PlanRejected,
            (_, true) => Kind::PermissionApproved,
            (_, false) => Kind::PermissionRejected,
        };
        emit(
            Event::new(at, kind, Source::Decisions)
                .by(format!("{} ({})", crate::store::names::LEAD, d.by))
                .request(d.request_id)
                .detail(d.feedback),
        );
    }
    Ok(end as u64)
}
