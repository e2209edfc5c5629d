//! The task list's history, `tasks/<team>/.swarm-history.jsonl` (swarm-only): one JSON line per
//! task transition.
//!
//! A task file says only what a task is now. Someone debugging a team wants to know who claimed
//! it and when, who finished or failed it, who gave it back, so every transition swarm writes
//! (created, claimed, assigned, started, completed, failed, released, stopped, reopened,
//! retried, deleted) is appended here by the one place that writes it, while that writer still
//! holds the task's lock (create and delete: the list lock). Writers that know nothing of the
//! history (Claude Code teammates, hand edits) are caught up with by an [`Observer`] (the lead
//! console runs one): what it appends says `"seen": true` and names no actor, since nobody
//! recorded who it was. So after every append the last line of a task states what its file
//! holds (status, owner, parked), and a file that disagrees was written by someone else.
//!
//! The file is a record, never the truth: appended without fsync in one `O_APPEND` write per
//! line (a crash can lose the last lines, never tear the others), read by `swarm timeline`,
//! which skips a line it cannot parse. A failed append warns on stderr and never fails the task
//! write it describes. Claude Code reads only `*.json` in the directory, and the watchers ignore
//! dot files, so appends wake no one but the timeline.

mod observe;

use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

pub(crate) use observe::Observer;

use super::{Task, TaskStatus};
use crate::error::Result;
use crate::store::fsio;
use crate::store::names::{AgentName, TaskId, TeamName, LEAD};
use crate::store::paths::Store;
use crate::store::protocol::timestamp_now;

/// What happened to a task in one write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Transition {
    Created,
    /// Taken by its new owner itself, in progress.
    Claimed,
    /// Given an owner by someone else (or its owner changed hands).
    Assigned,
    /// Its owner set it in progress.
    Started,
    Completed,
    /// Parked by a failed turn (`swarmFailed`).
    Failed,
    /// Back to no owner.
    Released,
    /// Back from in progress to pending, owner kept.
    Stopped,
    /// A completed task is unfinished again.
    Reopened,
    /// The failure flag was cleared: it may be claimed again.
    Retried,
    Deleted,
}

impl Transition {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Transition::Created => "created",
            Transition::Claimed => "claimed",
            Transition::Assigned => "assigned",
            Transition::Started => "started",
            Transition::Completed => "completed",
            Transition::Failed => "failed",
            Transition::Released => "released",
            Transition::Stopped => "stopped",
            Transition::Reopened => "reopened",
            Transition::Retried => "retried",
            Transition::Deleted => "deleted",
        }
    }
}

/// What a transition is judged on: the fields claimers and the lead act on. Edits to a subject,
/// a description or the dependencies are not transitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct State {
    pub(crate) status: TaskStatus,
    pub(crate) owner: Option<String>,
    pub(crate) parked: bool,
}

impl State {
    pub(crate) fn of(task: &Task) -> State {
        State {
            status: task.status,
            owner: task.owner.clone().filter(|o| !o.is_empty()),
            parked: task.parked(),
        }
    }

    fn of_entry(entry: &Entry) -> Option<State> {
        (entry.event != Transition::Deleted).then(|| State {
            status: entry.status,
            owner: entry.owner.clone(),
            parked: entry.failed,
        })
    }
}

/// The transition from `before` to `after` (`None`: no task) when `by` made the write (`None`:
/// nobody knows who); `None` when nothing a transition is about changed.
pub(crate) fn transition(
    before: Option<&State>,
    after: Option<&State>,
    by: Option<&str>,
) -> Option<Transition> {
    use Transition::*;
    let (b, a) = match (before, after) {
        (None, None) => return None,
        (None, Some(_)) => return Some(Created),
        (Some(_), None) => return Some(Deleted),
        (Some(b), Some(a)) if a == b => return None,
        (Some(b), Some(a)) => (b, a),
    };
    let done = TaskStatus::Completed;
    Some(if a.parked && !b.parked {
        Failed
    } else if a.status == done && b.status != done {
        Completed
    } else if b.status == done {
        Reopened
    } else if b.parked && !a.parked {
        Retried
    } else if a.owner != b.owner {
        match &a.owner {
            None => Released,
            Some(owner) if a.status == TaskStatus::InProgress && by.is_none_or(|b| b == owner) => {
                Claimed
            }
            Some(_) => Assigned,
        }
    } else if a.status == TaskStatus::InProgress {
        Started
    } else {
        Stopped
    })
}

/// The transition an observer records for a task the history has never mentioned: named after
/// the state it was first seen in.
pub(crate) fn first_seen(state: &State) -> Transition {
    match state {
        State { parked: true, .. } => Transition::Failed,
        State {
            status: TaskStatus::Completed,
            ..
        } => Transition::Completed,
        State {
            status: TaskStatus::InProgress,
            ..
        } => Transition::Claimed,
        State { owner: Some(_), .. } => Transition::Assigned,
        State { .. } => Transition::Created,
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One line of the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Entry {
    /// When it was written (for a seen change: when the file was last modified).
    pub(crate) timestamp: String,
    pub(crate) task: TaskId,
    pub(crate) event: Transition,
    /// Who made the write; absent for a change an observer saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) by: Option<String>,
    /// The task after the write (for `deleted`: before it).
    pub(crate) status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<String>,
    /// The owner before, when the write changed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) previous_owner: Option<String>,
    /// Parked by a failure (`swarmFailed`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) failed: bool,
    /// Why it failed (`failureReason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    #[serde(default)]
    pub(crate) subject: String,
    /// Appended by an observer for a write the history did not have.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) seen: bool,
}

impl Entry {
    /// The entry for `event`, a write from `before` that left `after`.
    fn new(
        event: Transition,
        before: Option<&State>,
        after: &Task,
        by: Option<String>,
        timestamp: String,
    ) -> Entry {
        let state = State::of(after);
        let previous_owner = before
            .and_then(|b| b.owner.clone())
            .filter(|p| Some(p) != state.owner.as_ref());
        let reason = (event == Transition::Failed)
            .then(|| {
                after
                    .metadata
                    .get("failureReason")?
                    .as_str()
                    .map(str::to_string)
            })
            .flatten();
        Entry {
            timestamp,
            task: after.id.clone(),
            event,
            by,
            status: state.status,
            owner: state.owner,
            previous_owner,
            failed: state.parked,
            reason,
            subject: after.subject.clone(),
            seen: false,
        }
    }

    /// The entry for the deletion of `id`, last known as `before`.
    fn deleted(
        id: TaskId,
        before: &State,
        subject: &str,
        by: Option<String>,
        timestamp: String,
    ) -> Entry {
        Entry {
            timestamp,
            task: id,
            event: Transition::Deleted,
            by,
            status: before.status,
            owner: before.owner.clone(),
            previous_owner: None,
            failed: before.parked,
            reason: None,
            subject: subject.to_string(),
            seen: false,
        }
    }

    /// The task's state after this entry; `None` once it is deleted.
    pub(crate) fn state(&self) -> Option<State> {
        State::of_entry(self)
    }
}

/// Who this process writes the task list as: the member a teammate runtime runs (see
/// [`act_as`]), else `$SWARM_AGENT_NAME` (a teammate's shell), else the lead (the user's shell,
/// the lead console, the launcher).
fn actor() -> String {
    if let Some(name) = ACTOR.get() {
        return name.clone();
    }
    match std::env::var("SWARM_AGENT_NAME") {
        Ok(name) if !name.is_empty() => name,
        _ => LEAD.to_string(),
    }
}

static ACTOR: OnceLock<String> = OnceLock::new();

/// Records this process's task writes as `name`'s: a teammate runtime calls it once at start,
/// whatever its environment says.
pub(crate) fn act_as(name: &AgentName) {
    let _ = ACTOR.set(name.to_string());
}

/// Appends the transition from `before` to `after` (if the write made one) as this process's.
/// Called by each writer of a task file right after its write, still under its lock.
pub(super) fn record(store: &Store, team: &TeamName, before: Option<&Task>, after: Option<&Task>) {
    let by = actor();
    let before_state = before.map(State::of);
    let after_state = after.map(State::of);
    let Some(event) = transition(before_state.as_ref(), after_state.as_ref(), Some(&by)) else {
        return;
    };
    let entry = match (before, after) {
        (_, Some(after)) => Entry::new(
            event,
            before_state.as_ref(),
            after,
            Some(by),
            timestamp_now(),
        ),
        (Some(before), None) => Entry::deleted(
            before.id.clone(),
            &State::of(before),
            &before.subject,
            Some(by),
            timestamp_now(),
        ),
        (None, None) => return,
    };
    if let Err(e) = append_entry(&store.task_history_path(team), &entry) {
        eprintln!(
            "swarm: warning: task #{} was {} but the task history could not say so: {e}",
            entry.task,
            entry.event.as_str()
        );
    }
}

/// Appends one entry as one line.
fn append_entry(path: &Path, entry: &Entry) -> Result<()> {
    let mut line = serde_json::to_vec(entry).expect("history entries serialize");
    line.push(b'\n');
    fsio::append_unsynced(path, &line)
}

/// Reads the complete lines of the history at `path` from byte `offset` on, calling `each` with
/// every entry that parses; returns the offset after the last complete line (a line still being
/// appended is left for the next read).
pub(crate) fn read_from(path: &Path, offset: u64, mut each: impl FnMut(Entry)) -> Result<u64> {
    let Some(mut file) = fsio::open_read(path)? else {
        return Ok(offset);
    };
    file.seek(SeekFrom::Start(offset))
        .map_err(crate::error::Error::io("read", path))?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut line = Vec::new();
    let mut at = offset;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(crate::error::Error::io("read", path))?;
        if n == 0 || line.last() != Some(&b'\n') {
            return Ok(at);
        }
        at += n as u64;
        if let Ok(entry) = serde_json::from_slice::<Entry>(&line) {
            each(entry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Transition::*;

    fn s(status: TaskStatus, owner: Option<&str>, parked: bool) -> State {
        State {
            status,
            owner: owner.map(str::to_string),
            parked,
        }
    }

    #[test]
    fn each_write_is_one_transition_named_for_what_it_changed() {
        use TaskStatus::*;
        let pending = s(Pending, None, false);
        let mine = s(InProgress, Some("a"), false);
        let t = |b: &State, a: &State, by| transition(Some(b), Some(a), by);
        assert_eq!(transition(None, Some(&pending), Some("a")), Some(Created));
        assert_eq!(transition(Some(&pending), None, Some("a")), Some(Deleted));
        assert_eq!(t(&pending, &pending, Some("a")), None);
        assert_eq!(t(&pending, &mine, Some("a")), Some(Claimed));
        assert_eq!(t(&pending, &mine, None), Some(Claimed));
        assert_eq!(t(&pending, &mine, Some("team-lead")), Some(Assigned));
        assert_eq!(
            t(&pending, &s(Pending, Some("a"), false), None),
            Some(Assigned)
        );
        assert_eq!(
            t(&s(Pending, Some("a"), false), &mine, Some("a")),
            Some(Started)
        );
        assert_eq!(
            t(&mine, &s(Completed, Some("a"), false), Some("a")),
            Some(Transition::Completed)
        );
        assert_eq!(t(&mine, &s(Pending, None, true), Some("a")), Some(Failed));
        assert_eq!(t(&mine, &pending, Some("team-lead")), Some(Released));
        assert_eq!(t(&mine, &s(Pending, Some("a"), false), None), Some(Stopped));
        assert_eq!(
            t(&s(Completed, Some("a"), false), &pending, None),
            Some(Reopened)
        );
        assert_eq!(t(&s(Pending, None, true), &pending, None), Some(Retried));
        assert_eq!(
            t(&mine, &s(InProgress, Some("b"), false), None),
            Some(Claimed)
        );
        assert_eq!(
            t(&mine, &s(InProgress, Some("b"), false), Some("team-lead")),
            Some(Assigned)
        );
    }

    #[test]
    fn every_writer_of_the_task_list_appends_its_transition() {
        use crate::store::tasks::{NewTask, TaskList, TaskOutcome, TaskPatch};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let tl = TaskList::new(&store, &team);
        let coder: AgentName = "coder".parse().unwrap();
        let new = |s: &str| NewTask {
            subject: s.into(),
            ..Default::default()
        };
        let a = tl.create(new("a")).unwrap().id;
        let b = tl.create(new("b")).unwrap().id;
        tl.claim(&a, &coder, false).unwrap();
        let failed = TaskOutcome::Failed {
            reason: "exit 1".into(),
        };
        tl.finish(&a, &coder, &failed).unwrap();
        let mut index = crate::store::tasks::TaskIndex::open(&store, &team).unwrap();
        index
            .claim_and_complete(&coder, false, &mut |_| Ok(()))
            .unwrap();
        tl.update(
            &b,
            TaskPatch {
                description: Some("not a transition".into()),
                status: Some(TaskStatus::InProgress),
                ..Default::default()
            },
        )
        .unwrap();
        tl.release_agent("coder").unwrap();
        tl.delete(&b).unwrap();
        let mut seen = Vec::new();
        read_from(&store.task_history_path(&team), 0, |e| {
            seen.push((e.task.number(), e.event, e.owner, e.reason))
        })
        .unwrap();
        let coder = || Some("coder".to_string());
        assert_eq!(
            seen,
            vec![
                (1, Created, None, None),
                (2, Created, None, None),
                (1, Assigned, coder(), None),
                (1, Failed, None, Some("exit 1".into())),
                (2, Assigned, coder(), None),
                (2, Completed, coder(), None),
                (2, Reopened, coder(), None),
                (2, Released, None, None),
                (2, Deleted, None, None),
            ]
        );
    }

    #[test]
    fn a_task_first_seen_is_named_after_its_state() {
        use TaskStatus::*;
        assert_eq!(first_seen(&s(Pending, None, false)), Created);
        assert_eq!(first_seen(&s(Pending, Some("a"), false)), Assigned);
        assert_eq!(first_seen(&s(InProgress, Some("a"), false)), Claimed);
        assert_eq!(
            first_seen(&s(Completed, Some("a"), false)),
            Transition::Completed
        );
        assert_eq!(first_seen(&s(Pending, None, true)), Failed);
    }

    #[test]
    fn a_line_still_being_written_is_left_for_the_next_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let line = r#"{"timestamp":"2026-01-01T00:00:00.000Z","task":"1","event":"created","status":"pending","subject":"a"}"#;
        std::fs::write(&path, format!("{line}\nnot json\n{}", &line[..20])).unwrap();
        let mut seen = Vec::new();
        let end = read_from(&path, 0, |e| seen.push(e)).unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].event, Created);
        assert_eq!(end as usize, line.len() + 1 + "not json\n".len());
        assert_eq!(
            read_from(&path, end, |_| panic!("nothing complete")).unwrap(),
            end
        );
    }
}
