//! The task list kept in memory, and the one way to claim the next task: long-lived claimers
//! (the teammate runtime, the lead's dispatcher, the claim loop) keep an index so an idle
//! claimer does not open and parse every task file on every look; a one-shot `swarm task next
//! --claim` opens one for its single claim, loaded by stat (`by_stat`), so it parses only the
//! files that changed since a listing last read them. Which task is available is
//! [`Task::available`], here as everywhere.
//!
//! The files stay the truth (PROTOCOL.md section 8; Claude Code, `swarm task` and hand edits
//! write them without knowing about any index). The index learns of changes from the file
//! events of `tasks/<team>/` (see `events`) and re-reads only the files they name; it drains
//! them under the list lock when it claims with the busy check, so what it sees is as fresh as a
//! scan taken there. When events may have been lost (a full queue, no events at all) it stats
//! every file and re-reads only those whose inode, size or times changed. Each claim is still
//! decided on the file as read under the task's lock; if that file disagrees with the index and
//! no event explains it, the index no longer trusts itself and rescans. So a stale index can make
//! a claimer try the wrong task first, never claim a completed or someone else's task.
//!
//! A claim of the next task is a lease (PROTOCOL.md 8b): its file is written and fsynced and
//! renamed into place, and its directory is not synced. A crash can undo the rename, and only a
//! crash can: the claim then reads as the task before it, pending with no owner. That is what
//! the claim would have come to anyway, since the crash ended its claimer, and the unfinished
//! tasks of a teammate that died go back to pending. So the claim path costs one fsync, not
//! two. A change that outlives its writer is synced in full: a completion, a claim by name
//! (`swarm task claim`), a claim the lead's dispatcher makes for a teammate ([`assign_next`])
//! and a claim made at home for a runtime on another host, which a crash here does not end.
//!
//! [`assign_next`]: TaskIndex::assign_next
//!
//! Claimers skip completed tasks without walking past them (the index keeps the unfinished ids
//! apart) and try each candidate's hint (see `hints`) before its lock, so sixteen claimers
//! spread over sixteen tasks instead of queueing on the lowest one.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::ErrorKind;
use std::time::Instant;

use super::events::{task_number, Drained, Events};
use super::hints::{Hints, Taken};
use super::{Task, TaskList, TaskStatus};
use crate::error::{Error, Result};
use crate::store::fsio::{self, Stamp};
use crate::store::names::{AgentName, TaskId, TeamName};
use crate::store::notes;
use crate::store::paths::Store;
use crate::store::watcher::rescan_interval;

/// What the claim loop does with a claimed task before it is marked completed.
pub(crate) type Report<'r> = &'r mut dyn FnMut(&Task) -> Result<()>;

/// A team's task list, in memory, kept up to date from file events.
pub struct TaskIndex {
    store: Store,
    team: TeamName,
    hints: Hints,
    /// Whether this index said that someone jams the hints (once is enough).
    said_jammed: bool,
    state: State,
}

/// What the index knows, apart from where the files are.
struct State {
    tasks: BTreeMap<u64, (Task, Stamp)>,
    /// Ids of the tasks not completed, so claimers need not walk past the finished ones.
    unfinished: BTreeSet<u64>,
    events: Events,
    /// The index may disagree with the files: stat every one at the next look.
    rescan_due: bool,
    rescanned_at: Instant,
}

impl TaskIndex {
    /// Loads `team`'s task list and starts following it.
    pub fn open(store: &Store, team: &TeamName) -> Result<TaskIndex> {
        let mut index = TaskIndex::watch(store, team)?;
        index.refresh()?;
        Ok(index)
    }

    /// `open` for a one-shot command: the list is loaded by stat (`by_stat`), so only the
    /// files that changed since a listing last read them are parsed.
    pub(crate) fn open_by_stat(store: &Store, team: &TeamName) -> Result<TaskIndex> {
        let mut index = TaskIndex::watch(store, team)?;
        for (task, stamp) in TaskList::by_stat(store, team).list_by_stat()? {
            index.state.put(task, Some(stamp));
        }
        index.state.rescan_due = false;
        index.state.rescanned_at = Instant::now();
        Ok(index)
    }

    /// An empty index following `team`'s task directory, due for a rescan.
    fn watch(store: &Store, team: &TeamName) -> Result<TaskIndex> {
        let dir = store.tasks_dir(team);
        fsio::ensure_dir(&dir)?;
        // The watch comes before the first scan, so nothing written in between is missed.
        let events = Events::watch(&dir);
        Ok(TaskIndex {
            hints: Hints::new(&dir.join(".claiming")),
            said_jammed: false,
            store: store.clone(),
            team: team.clone(),
            state: State {
                tasks: BTreeMap::new(),
                unfinished: BTreeSet::new(),
                events,
                rescan_due: true,
                rescanned_at: Instant::now(),
            },
        })
    }

    /// Brings the index up to date with every change that has happened so far.
    pub(crate) fn refresh(&mut self) -> Result<()> {
        let list = TaskList::new(&self.store, &self.team);
        self.state.refresh(&list)
    }

    /// Every task, by id, as of the last [`refresh`](Self::refresh).
    pub(crate) fn tasks(&self) -> impl Iterator<Item = &Task> + '_ {
        self.state.tasks.values().map(|(t, _)| t)
    }

    /// Whether a task may be claimable now: a cheap look before [`claim_next`](Self::claim_next),
    /// which takes the list lock.
    pub(crate) fn any_available(&mut self) -> Result<bool> {
        let list = TaskList::new(&self.store, &self.team);
        self.state.refresh(&list)?;
        if self.state.available().next().is_some() {
            return Ok(true);
        }
        Ok(self.state.rescan_if_stale(&list)? && self.state.available().next().is_some())
    }

    /// Tasks anyone may claim now ([`Task::available`]), lowest id first.
    #[cfg(feature = "seams")]
    pub(crate) fn available(&mut self) -> Result<Vec<Task>> {
        self.refresh()?;
        Ok(self
            .state
            .available()
            .map(|id| self.state.tasks[&id].0.clone())
            .collect())
    }

    /// Claims an available task for `agent`, lowest first among those no other indexed claimer
    /// is trying; `None` when there is none (or, with `busy_check`, while `agent` owns another
    /// unfinished task). Decided on the file under the task's lock by [`Task::available`]; the
    /// claim is a lease (see the top of this file): one fsync, no directory sync.
    pub(crate) fn claim_next(
        &mut self,
        agent: &AgentName,
        busy_check: bool,
    ) -> Result<Option<Task>> {
        self.claim(agent, busy_check, None)
    }

    /// `claim_next` for another agent (the lead's dispatcher), synced in full: the crash that
    /// undoes a lease need not end the agent it was claimed for.
    pub(crate) fn assign_next(&mut self, to: &AgentName) -> Result<Option<Task>> {
        let task = self.claim(to, true, None)?;
        if task.is_some() {
            fsio::sync_dir(&self.store.tasks_dir(&self.team));
        }
        Ok(task)
    }

    /// `claim_next` with the busy check for a claimer that may be asking again (`swarm task next
    /// --claim` in a script that retries): while `agent` owns an unfinished task, that task is
    /// its claim (`TaskList::reclaim`), not "no task is available": its last claim may have
    /// gone through unreported (killed before it printed).
    pub(crate) fn claim_next_or_owned(&mut self, agent: &AgentName) -> Result<Option<Task>> {
        if let Some(task) = self.claim_next(agent, true)? {
            return Ok(Some(task));
        }
        let list = TaskList::new(&self.store, &self.team);
        let owned: Vec<u64> = self
            .state
            .unfinished
            .iter()
            .copied()
            .filter(|id| self.state.tasks[id].0.unfinished_by(agent.as_str()))
            .collect();
        for number in owned {
            if let Some(task) = list.reclaim(&TaskId::new(number), agent)? {
                return Ok(Some(task));
            }
        }
        Ok(None)
    }

    /// `claim_next` for a claimer whose work is done at once (the claim loop): `report` runs
    /// once the claim is written, still under the task's lock, and the task is then marked
    /// completed under it, durably (file and directory synced) before this returns. Two lock
    /// cycles (list and task; one without the busy check) and three fsyncs per task, one of
    /// them on the claim's path, as for a claim followed by `swarm task update`.
    pub fn claim_and_complete(
        &mut self,
        agent: &AgentName,
        busy_check: bool,
        report: Report<'_>,
    ) -> Result<Option<Task>> {
        self.claim(agent, busy_check, Some(report))
    }

    fn claim(
        &mut self,
        agent: &AgentName,
        busy_check: bool,
        mut report: Option<Report<'_>>,
    ) -> Result<Option<Task>> {
        let list = TaskList::new(&self.store, &self.team);
        let state = &mut self.state;
        // Lock order as everywhere: the list lock, then a task's.
        let mut list_lock = busy_check.then(|| list.list_lock()).transpose()?;
        state.refresh(&list)?;
        let mut rescanned = false;
        loop {
            let busy = busy_check && state.owns_unfinished(agent);
            let candidates: Vec<u64> = match busy {
                true => Vec::new(),
                false => state.available().collect(),
            };
            for number in candidates {
                let _hint = match self.hints.try_take(number)? {
                    Taken::Mine(hint) => Some(hint),
                    Taken::Busy => continue, // another claimer is on it: try the next one
                    Taken::Jammed(why) => {
                        if !self.said_jammed {
                            self.said_jammed = true;
                            eprintln!("swarm: warning: {why}");
                            let _ = notes::record(&self.store, &self.team, agent, &why);
                        }
                        None
                    }
                };
                let id = TaskId::new(number);
                let _lock = list.task_lock(&id)?;
                let path = self.store.task_path(&self.team, &id);
                let on_disk = match list.get_locked(&id) {
                    Ok(task) => task,
                    Err(Error::NoSuchTask { .. }) => {
                        state.forget(number);
                        state.doubt(&list, number)?;
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                let claimable = on_disk.available(|b| list.finished(b))?;
                if state.tasks.get(&number).map(|(t, _)| t) != Some(&on_disk) {
                    state.put(on_disk.clone(), Stamp::read(&path)?);
                    state.doubt(&list, number)?;
                }
                if !claimable {
                    continue;
                }
                let mut task = on_disk.clone();
                task.owner = Some(agent.to_string());
                task.status = TaskStatus::InProgress;
                // A lease: its directory is not synced (see the top of this file).
                fsio::write_json_unsynced(&path, &task)?;
                state.put(task.clone(), Stamp::read(&path)?);
                // The claim is decided and visible: other claimers may go on while it is
                // recorded (the history needs only the task's lock, still held).
                drop(list_lock.take());
                list.recorded(Some(&on_disk), Some(&task));
                if let Some(report) = report.as_mut() {
                    report(&task)?;
                    let mut done = task.clone();
                    done.status = TaskStatus::Completed;
                    list.write(&task, &done)?;
                    state.put(done, Stamp::read(&path)?);
                }
                return Ok(Some(task));
            }
            // Nothing to claim (or the agent is busy): not a missed event either?
            if rescanned || !state.rescan_if_stale(&list)? {
                return Ok(None);
            }
            rescanned = true;
        }
    }
}

impl State {
    fn refresh(&mut self, list: &TaskList) -> Result<()> {
        let drained = self.events.drain();
        if self.rescan_due || !self.events.live() {
            return self.rescan(list);
        }
        match drained {
            Drained::Rescan => self.rescan(list),
            Drained::Ids(ids) => {
                for id in ids {
                    self.reread(list, id)?;
                }
                Ok(())
            }
        }
    }

    /// Nothing is claimable. Before anyone is told so, rule out missed events, unless the files
    /// were looked at a moment ago; whether it rescanned.
    fn rescan_if_stale(&mut self, list: &TaskList) -> Result<bool> {
        if self.rescan_due || self.rescanned_at.elapsed() >= rescan_interval() {
            self.rescan(list)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Stats every task file and re-reads the ones that changed.
    fn rescan(&mut self, list: &TaskList) -> Result<()> {
        let dir = list.store.tasks_dir(list.team);
        let on_disk: BTreeSet<u64> = match fs::read_dir(&dir) {
            Ok(entries) => entries
                .filter_map(|e| e.ok())
                .filter_map(|e| task_number(e.file_name().to_str()?))
                .collect(),
            Err(e) if e.kind() == ErrorKind::NotFound => BTreeSet::new(),
            Err(e) => return Err(Error::io("list", &dir)(e)),
        };
        let gone: Vec<u64> = self
            .tasks
            .keys()
            .filter(|id| !on_disk.contains(id))
            .copied()
            .collect();
        for id in gone {
            self.forget(id);
        }
        for id in on_disk {
            self.reread(list, id)?;
        }
        self.rescan_due = false;
        self.rescanned_at = Instant::now();
        Ok(())
    }

    /// Re-reads task `id` if its file changed since it was read.
    fn reread(&mut self, list: &TaskList, number: u64) -> Result<()> {
        let id = TaskId::new(number);
        let path = list.store.task_path(list.team, &id);
        let Some(stamp) = Stamp::read(&path)? else {
            self.forget(number);
            return Ok(());
        };
        if self.tasks.get(&number).is_some_and(|(_, s)| *s == stamp) {
            return Ok(());
        }
        // Stamped before the read: a write in between makes the next look read it again.
        match list.read_listed(&id)? {
            Some(task) => self.put(task, Some(stamp)),
            None => self.forget(number),
        }
        Ok(())
    }

    /// The file of `number` was not what the index held. Unless a queued event says it changed
    /// (a writer raced us), events were missed: rescan before trusting the index again.
    fn doubt(&mut self, list: &TaskList, number: u64) -> Result<()> {
        match self.events.drain() {
            Drained::Ids(ids) => {
                let explained = ids.contains(&number);
                for id in ids.into_iter().filter(|id| *id != number) {
                    self.reread(list, id)?;
                }
                if !explained {
                    self.rescan_due = true;
                }
            }
            Drained::Rescan => self.rescan_due = true,
        }
        Ok(())
    }

    fn put(&mut self, task: Task, stamp: Option<Stamp>) {
        let number = task.id.number();
        let Some(stamp) = stamp else {
            self.forget(number);
            return;
        };
        if task.status == TaskStatus::Completed {
            self.unfinished.remove(&number);
        } else {
            self.unfinished.insert(number);
        }
        self.tasks.insert(number, (task, stamp));
    }

    fn forget(&mut self, number: u64) {
        self.tasks.remove(&number);
        self.unfinished.remove(&number);
    }

    fn owns_unfinished(&self, agent: &AgentName) -> bool {
        self.unfinished
            .iter()
            .any(|id| self.tasks[id].0.unfinished_by(agent.as_str()))
    }

    /// Ids of the tasks anyone may claim ([`Task::available`]), blockers looked up in the index.
    fn available(&self) -> impl Iterator<Item = u64> + '_ {
        let finished = |b: &TaskId| {
            self.tasks
                .get(&b.number())
                .is_none_or(|(t, _)| t.status == TaskStatus::Completed)
        };
        self.unfinished
            .iter()
            .copied()
            .filter(move |id| self.tasks[id].0.available_given(finished))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tasks::{NewTask, TaskPatch};

    fn new(subject: &str, blocked_by: &[&TaskId]) -> NewTask {
        NewTask {
            subject: subject.into(),
            blocked_by: blocked_by.iter().map(|&i| i.clone()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn an_index_loaded_by_stat_claims_as_one_loaded_by_a_scan() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let tl = TaskList::new(&store, &team);
        let coder: AgentName = "coder".parse().unwrap();
        let a = tl.create(new("a", &[])).unwrap().id;
        tl.create(new("b", &[&a])).unwrap();
        let c = tl.create(new("c", &[])).unwrap().id;
        // A listing by stat first, so the sidecar is there to be loaded from.
        TaskList::by_stat(&store, &team).list().unwrap();
        tl.claim(&a, &"other".parse().unwrap(), false).unwrap();
        let mut index = TaskIndex::open_by_stat(&store, &team).unwrap();
        assert_eq!(index.claim_next(&coder, true).unwrap().unwrap().id, c);
        assert!(index.claim_next(&coder, true).unwrap().is_none(), "busy");
        assert_eq!(
            index.tasks().collect::<Vec<_>>(),
            tl.list().unwrap().iter().collect::<Vec<_>>()
        );
    }

    /// A claimer asking again gets the task it owns: claimed, or assigned by the lead (then
    /// claimed now), but not an assigned one that is blocked.
    #[test]
    fn a_claimer_asking_again_gets_the_task_it_owns() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let tl = TaskList::new(&store, &team);
        let coder: AgentName = "coder".parse().unwrap();
        let a = tl.create(new("a", &[])).unwrap().id;
        let b = tl.create(new("b", &[&a])).unwrap().id;
        tl.create(new("c", &[])).unwrap();
        let mut index = TaskIndex::open(&store, &team).unwrap();
        assert_eq!(index.claim_next_or_owned(&coder).unwrap().unwrap().id, a);
        assert_eq!(index.claim_next_or_owned(&coder).unwrap().unwrap().id, a);
        tl.release(&a, &coder).unwrap();
        let assign = |id: &TaskId| {
            let patch = TaskPatch {
                owner: Some(Some("coder".into())),
                ..Default::default()
            };
            tl.update(id, patch).unwrap();
        };
        assign(&b);
        assert!(
            index.claim_next_or_owned(&coder).unwrap().is_none(),
            "b is blocked"
        );
        assign(&a);
        let again = index.claim_next_or_owned(&coder).unwrap().unwrap();
        assert_eq!((again.id, again.status), (a, TaskStatus::InProgress));
    }

    #[test]
    fn the_index_claims_the_lowest_available_task_and_skips_a_hinted_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let tl = TaskList::new(&store, &team);
        let coder: AgentName = "coder".parse().unwrap();
        let other: AgentName = "other".parse().unwrap();
        let a = tl.create(new("a", &[])).unwrap().id;
        let b = tl.create(new("b", &[&a])).unwrap().id;
        let c = tl.create(new("c", &[])).unwrap().id;
        let d = tl.create(new("d", &[])).unwrap().id;
        let mut index = TaskIndex::open(&store, &team).unwrap();
        tl.claim(&a, &other, false).unwrap();
        // a is owned and b waits for a: c is next, for both kinds of claim.
        assert_eq!(index.claim_next(&coder, false).unwrap().unwrap().id, c);
        // coder now owns c, so the busy check refuses it another task...
        assert!(index.claim_next(&coder, true).unwrap().is_none());
        // ...and without it coder gets d, the next one.
        assert_eq!(index.claim_next(&coder, false).unwrap().unwrap().id, d);
        assert!(
            index.claim_next(&other, false).unwrap().is_none(),
            "b is blocked"
        );
        // A blocker that is deleted no longer blocks; a task another claimer is trying is left
        // to it.
        tl.delete(&a).unwrap();
        let e = tl.create(new("e", &[])).unwrap().id;
        let rival = TaskIndex::open(&store, &team).unwrap();
        let Taken::Mine(hint) = rival.hints.try_take(b.number()).unwrap() else {
            panic!("free")
        };
        assert_eq!(index.claim_next(&other, true).unwrap().unwrap().id, e);
        drop(hint);
        let done = TaskPatch {
            status: Some(TaskStatus::Completed),
            ..Default::default()
        };
        tl.update(&e, done.clone()).unwrap();
        assert_eq!(index.claim_next(&other, true).unwrap().unwrap().id, b);
        for id in [&b, &c, &d] {
            tl.update(id, done.clone()).unwrap();
        }
        assert!(index.claim_next(&coder, true).unwrap().is_none());
        assert!(index.claim_next(&coder, false).unwrap().is_none());
        assert_eq!(
            index.tasks().collect::<Vec<_>>(),
            tl.list().unwrap().iter().collect::<Vec<_>>(),
            "the index holds what the files hold"
        );
    }
}
