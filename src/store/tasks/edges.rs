//! The task DAG's edges: `blockedBy` on the waiting task and `blocks` on its blocker, kept in
//! step on both ends under the list lock, each id at most once, and no edge that would close a
//! cycle (a task that waits on itself, however far round, could never be claimed).

use std::collections::{BTreeMap, HashSet};

use super::TaskList;
use crate::error::{Error, Result};
use crate::store::names::TaskId;

impl TaskList<'_> {
    /// Makes `task` wait for `blocker`. Refused if `blocker` already (transitively) waits for
    /// `task`, which would close a cycle.
    pub fn add_dependency(&self, task: &TaskId, blocker: &TaskId) -> Result<()> {
        let cycle = || Error::DependencyCycle {
            from: task.to_string(),
            to: blocker.to_string(),
        };
        if task == blocker {
            return Err(cycle());
        }
        let _list = self.list_lock()?;
        self.get(task)?;
        self.get(blocker)?;
        let graph: BTreeMap<TaskId, Vec<TaskId>> = self
            .list()?
            .into_iter()
            .map(|t| (t.id, t.blocked_by))
            .collect();
        let mut stack = vec![blocker.clone()];
        let mut seen = HashSet::new();
        while let Some(id) = stack.pop() {
            if &id == task {
                return Err(cycle());
            }
            if seen.insert(id.clone()) {
                stack.extend(graph.get(&id).into_iter().flatten().cloned());
            }
        }
        self.modify(task, |t| push_unique(&mut t.blocked_by, blocker))?;
        self.modify(blocker, |t| push_unique(&mut t.blocks, task))?;
        Ok(())
    }

    pub fn remove_dependency(&self, task: &TaskId, blocker: &TaskId) -> Result<()> {
        let _list = self.list_lock()?;
        self.modify(task, |t| t.blocked_by.retain(|b| b != blocker))?;
        if self.get_opt(blocker)?.is_some() {
            self.modify(blocker, |t| t.blocks.retain(|b| b != task))?;
        }
        Ok(())
    }
}

pub(super) fn push_unique(v: &mut Vec<TaskId>, id: &TaskId) {
    if !v.contains(id) {
        v.push(id.clone());
    }
}

pub(super) fn dedup(v: Vec<TaskId>) -> Vec<TaskId> {
    let mut out = Vec::with_capacity(v.len());
    for id in v {
        push_unique(&mut out, &id);
    }
    out
}
