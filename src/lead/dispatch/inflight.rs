//! Task announcements in flight, so one a dead lead never finished is made by the next.
//!
//! Handing a task to a claude teammate is two writes to two files: the claim (the task gets its
//! owner) and the `task_assignment` in the teammate's inbox. A lead killed between them, or
//! while its assignment waits in the inbox's spool for a lock, leaves the teammate owning a task
//! it never heard of, idle for good: a claude teammate never looks for work by itself. So before
//! each claim a dispatcher writes `teams/<team>/lead/announcing/<name>.<pid>.json` (its pid and
//! start time, then the task it claimed) and removes it once the assignment is in the inbox.
//! Every pass first takes up such records whose writer is gone (or is this process, after a
//! pass that failed part way): unless the inbox holds an assignment of that task from the lead
//! already, the spool is taken in, and if that did not bring one, the task is announced again,
//! once; then the record goes. A lead killed in the instant after its assignment landed, and
//! was read, can so cause one duplicate assignment; never a lost one.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{send_assignment, Assigned};
use crate::error::{Error, Result};
use crate::process::pid::PidRecord;
use crate::store::fsio;
use crate::store::mailbox::Mailbox;
use crate::store::names::{AgentName, TaskId, TeamName, LEAD};
use crate::store::paths::Store;
use crate::store::protocol::{Payload, Protocol};
use crate::store::tasks::{TaskList, TaskStatus};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    to: String,
    pid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pid_start: Option<u64>,
    /// The task claimed, once the claim returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task: Option<String>,
}

fn dir(store: &Store, team: &TeamName) -> PathBuf {
    store.team_dir(team).join("lead").join("announcing")
}

/// One announcement this dispatcher is making.
pub(super) struct Inflight {
    path: PathBuf,
    record: Record,
}

impl Inflight {
    /// Recorded before the claim for `to`.
    pub(super) fn begin(store: &Store, team: &TeamName, to: &AgentName) -> Result<Inflight> {
        let me = PidRecord::of(std::process::id());
        let dir = dir(store, team);
        fsio::ensure_dir(&dir)?;
        let inflight = Inflight {
            path: dir.join(format!("{to}.{}.json", me.pid)),
            record: Record {
                to: to.to_string(),
                pid: me.pid,
                pid_start: me.start,
                task: None,
            },
        };
        fsio::write_json(&inflight.path, &inflight.record)?;
        Ok(inflight)
    }

    /// The claim returned `task`.
    pub(super) fn claimed(&mut self, task: &TaskId) -> Result<()> {
        self.record.task = Some(task.to_string());
        fsio::write_json(&self.path, &self.record)
    }

    /// Nothing was claimed, or the assignment is in the inbox.
    pub(super) fn done(self) -> Result<()> {
        remove(&self.path)
    }
}

fn remove(path: &std::path::Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("remove", path)(e)),
        _ => Ok(()),
    }
}

/// Takes up the records of dispatchers that are gone (see the module doc); returns the tasks
/// announced again.
pub(super) fn recover(store: &Store, team: &TeamName) -> Result<Vec<Assigned>> {
    let Ok(entries) = std::fs::read_dir(dir(store, team)) else {
        return Ok(vec![]);
    };
    let me = std::process::id();
    let mut again = Vec::new();
    for path in entries.flatten().map(|e| e.path()) {
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Some(record) = fsio::read_json::<Record>(&path).ok().flatten() else {
            remove(&path)?;
            continue;
        };
        let writer = PidRecord {
            pid: record.pid,
            start: record.pid_start,
        };
        if record.pid != me && writer.alive() {
            continue;
        }
        if let Some(assigned) = announce_again(store, team, &record)? {
            again.push(assigned);
        }
        remove(&path)?;
    }
    Ok(again)
}

/// The task `record` was claiming, announced to its owner unless its inbox has it already.
fn announce_again(store: &Store, team: &TeamName, record: &Record) -> Result<Option<Assigned>> {
    let Ok(to) = record.to.parse::<AgentName>() else {
        return Ok(None);
    };
    let tasks = TaskList::new(store, team);
    let owned = |status: TaskStatus| status != TaskStatus::Completed;
    let task = match &record.task {
        Some(id) => {
            let Ok(id) = id.parse::<TaskId>() else {
                return Ok(None);
            };
            tasks.get(&id).ok()
        }
        // Killed before the claim returned: claimed with the busy check, the task (if any) is
        // the one unfinished task it owns.
        None => {
            let mut mine: Vec<_> = tasks
                .list()?
                .into_iter()
                .filter(|t| t.owner.as_deref() == Some(to.as_str()) && owned(t.status))
                .collect();
            (mine.len() == 1).then(|| mine.remove(0))
        }
    };
    let Some(task) = task.filter(|t| t.owner.as_deref() == Some(to.as_str()) && owned(t.status))
    else {
        return Ok(None);
    };
    let mailbox = Mailbox::new(store, team);
    let id = task.id.to_string();
    let announced = || -> Result<bool> {
        Ok(mailbox.read(&to, false)?.iter().any(|m| {
            m.from == LEAD
                && matches!(m.payload(), Payload::Protocol(p)
                    if matches!(&*p, Protocol::TaskAssignment(a) if a.task_id == id))
        }))
    };
    if announced()? {
        return Ok(None);
    }
    // Waiting in the spool (its sender killed while it waited for the lock): taking it in is
    // the announcement.
    mailbox.flush(&to)?;
    if !announced()? {
        send_assignment(store, team, &to, &task)?;
    }
    Ok(Some(Assigned { to, task }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::team_with;

    fn assignments(store: &Store, team: &TeamName, to: &AgentName) -> Vec<String> {
        Mailbox::new(store, team)
            .read(to, false)
            .unwrap()
            .iter()
            .filter_map(|m| match m.payload() {
                Payload::Protocol(p) => match *p {
                    Protocol::TaskAssignment(a) => Some(a.task_id),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_dead_dispatchers_claim_is_announced_once_and_a_live_ones_left_alone() {
        let (_dir, store, team) = team_with(&["coder", "tester"]);
        let coder: AgentName = "coder".parse().unwrap();
        let tester: AgentName = "tester".parse().unwrap();
        let tasks = TaskList::new(&store, &team);
        for subject in ["A", "B"] {
            tasks
                .create(crate::store::tasks::NewTask {
                    subject: subject.into(),
                    description: String::new(),
                    active_form: None,
                    blocked_by: vec![],
                    metadata: Default::default(),
                })
                .unwrap();
        }
        let mut index = crate::store::tasks::TaskIndex::open(&store, &team).unwrap();
        let a = index.claim_next(&coder, true).unwrap().unwrap();
        let b = index.claim_next(&tester, true).unwrap().unwrap();
        // A dead dispatcher claimed A for coder and B for tester (dying before the claim
        // returned); a live one (this process's parent) is claiming for tester right now.
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = dead.id();
        dead.wait().unwrap();
        fsio::ensure_dir(&dir(&store, &team)).unwrap();
        let write = |name: &str, r: Record| {
            fsio::write_json(&dir(&store, &team).join(name), &r).unwrap();
        };
        let record = |to: &str, pid: u32, task: Option<&str>| Record {
            to: to.into(),
            pid,
            pid_start: None,
            task: task.map(str::to_string),
        };
        write(
            "coder.1.json",
            record("coder", dead_pid, Some(&a.id.to_string())),
        );
        write("tester.1.json", record("tester", dead_pid, None));
        let parent = rustix::process::getppid().unwrap().as_raw_nonzero().get() as u32;
        write("tester.2.json", record("tester", parent, None));

        let again = recover(&store, &team).unwrap();
        let mut got: Vec<(String, String)> = again
            .iter()
            .map(|x| (x.to.to_string(), x.task.id.to_string()))
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                ("coder".to_string(), a.id.to_string()),
                ("tester".to_string(), b.id.to_string())
            ]
        );
        assert_eq!(assignments(&store, &team, &coder), [a.id.to_string()]);
        assert_eq!(assignments(&store, &team, &tester), [b.id.to_string()]);
        // Once: the dead dispatcher's records are gone, the live one's stays.
        assert!(recover(&store, &team).unwrap().is_empty());
        let left: Vec<_> = std::fs::read_dir(dir(&store, &team))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .collect();
        assert_eq!(left, ["tester.2.json"]);

        // An assignment already in the inbox is not sent again.
        std::fs::remove_file(dir(&store, &team).join("tester.2.json")).unwrap();
        write(
            "coder.3.json",
            record("coder", dead_pid, Some(&a.id.to_string())),
        );
        assert!(recover(&store, &team).unwrap().is_empty());
        assert_eq!(assignments(&store, &team, &coder), [a.id.to_string()]);
    }
}
