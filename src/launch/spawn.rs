//! Running a prepared launch: the team, its tasks, the lead pane and each teammate, in the
//! order of PROTOCOL.md section 10, with rollback.
//!
//! For each teammate: reserve the roster entry, open the pane, record pane id, backend and
//! `isActive`, write the prompt as the first inbox message from `team-lead`, start the command.
//! A teammate started again (on the roster, not running) keeps its entry and inbox: its old
//! pane is closed and the entry updated instead of added, and it gets no first message.
//! Tasks are seeded once: one whose key is already in the list is not created again.
//! A teammate that fails to spawn is rolled back (pane, worktree, roster entry, inbox). When the
//! first one fails nothing runs yet, so the lead pane and a team this launch created go too;
//! after that the error names the teammates that keep running and how to stop them.

use std::collections::HashMap;
use std::path::Path;

use super::plan::TASK_KEY;
use super::running::{make_backend, Launched, LaunchedTeammate};
use super::{Prepared, PreparedTeammate, TaskRef};
use crate::backend::{BackendKind, PaneBackend, PaneId, PaneSpec};
use crate::error::{Error, Result};
use crate::store::colour::LEAD_COLOR;
use crate::store::liveness::{self, Liveness};
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TaskId, TeamName, LEAD};
use crate::store::paths::Store;
use crate::store::roster::Roster;
use crate::store::tasks::{NewTask, TaskList};

/// A progress line for each step of the launch.
pub(crate) type Progress<'a> = &'a mut dyn FnMut(&str);

impl Prepared {
    /// Creates the team, seeds the tasks and spawns every teammate.
    pub(crate) fn execute(self, store: &Store, progress: Progress) -> Result<Launched> {
        if self.new_team {
            Roster::new(store, &self.team).create(
                &self.description,
                &self.base_cwd.display().to_string(),
                &self.lead_session_id,
            )?;
            progress(&format!("created team {}", self.team));
        }
        let (tasks, already) = self
            .seed_tasks(store)
            .inspect_err(|_| self.undo_team(store))?;
        if !tasks.is_empty() {
            progress(&seeded_line(&tasks));
        }
        if already > 0 {
            progress(&format!(
                "{already} task{} of the plan {} already in the list, not seeded again",
                if already == 1 { "" } else { "s" },
                if already == 1 { "is" } else { "are" }
            ));
        }
        for name in &self.left_running {
            progress(&format!("{name} is already running; left alone"));
        }
        if self.teammates.is_empty() && self.lead.is_none() {
            return Ok(Launched {
                team: self.team.clone(),
                backend: self.backend.kind,
                lead_pane: None,
                teammates: vec![],
                left_running: self.left_running.clone(),
                tasks,
                attach_hint: None,
                in_process: None,
            });
        }
        let mut any = make_backend(&self, store).inspect_err(|_| self.undo_team(store))?;
        let backend = any.as_dyn();
        if let Some(old) = &self.previous_lead {
            // A dead lead pane kept by remain-on-exit goes before the new one opens.
            if let Some(mut b) = crate::backend::for_member(store, &self.team, old) {
                let _ = b.kill();
            }
        }
        if let Some(goal) = &self.lead_goal {
            crate::lead::agent::write_goal(store, &self.team, goal)
                .inspect_err(|_| self.undo_team(store))?;
        }
        let lead_pane = match &self.lead {
            Some(lead) => {
                let pane = self
                    .open_lead_pane(store, backend, lead)
                    .inspect_err(|_| self.undo_team(store))?;
                progress(&format!("lead console in pane {pane}"));
                Some(pane)
            }
            None => None,
        };
        let launched = self.spawn_all(store, backend, lead_pane.as_ref(), progress)?;
        if let Err(e) = backend.finish_layout() {
            eprintln!("swarm: warning: could not tile the panes: {e}");
        }
        let attach_hint = backend.attach_hint();
        Ok(Launched {
            team: self.team.clone(),
            backend: self.backend.kind,
            lead_pane: lead_pane.map(|p| p.to_string()),
            teammates: launched,
            left_running: self.left_running.clone(),
            tasks,
            attach_hint,
            in_process: any.into_children(),
        })
    }

    /// The tasks of the plan, in order, with plan indexes turned into the new ids; a task whose
    /// key is already in the list (seeded by an earlier launch) is that task, not a new one.
    /// Returns the new ids and how many were there already.
    fn seed_tasks(&self, store: &Store) -> Result<(Vec<TaskId>, usize)> {
        let list = TaskList::new(store, &self.team);
        let seeded: HashMap<String, TaskId> = if self.tasks.is_empty() || self.new_team {
            HashMap::new()
        } else {
            list.list()?
                .into_iter()
                .filter_map(|t| {
                    let key = t.metadata.get(TASK_KEY)?.as_str()?.to_string();
                    Some((key, t.id))
                })
                .collect()
        };
        let mut ids: Vec<TaskId> = Vec::new();
        let mut created = Vec::new();
        for task in &self.tasks {
            if let Some(id) = seeded.get(&task.key) {
                ids.push(id.clone());
                continue;
            }
            let blocked_by = task
                .blocked_by
                .iter()
                .map(|d| match d {
                    TaskRef::Index(i) => ids[*i].clone(),
                    TaskRef::Id(id) => id.clone(),
                })
                .collect();
            let mut metadata = serde_json::Map::new();
            metadata.insert(TASK_KEY.into(), task.key.clone().into());
            let new = list.create(NewTask {
                subject: task.subject.clone(),
                description: task.description.clone(),
                active_form: task.active_form.clone(),
                blocked_by,
                metadata,
            })?;
            crate::teammate::hooks::gate_created(&list, &self.team, &new)?;
            ids.push(new.id.clone());
            created.push(new.id);
        }
        let already = self.tasks.len() - created.len();
        Ok((created, already))
    }

    /// The lead console's pane, recorded on the lead's roster entry.
    fn open_lead_pane(
        &self,
        store: &Store,
        backend: &mut dyn PaneBackend,
        lead: &crate::backend::Launch,
    ) -> Result<PaneId> {
        let pane = backend.open_pane(&PaneSpec {
            name: LEAD.into(),
            color: LEAD_COLOR.into(),
        })?;
        let extra = backend.member_extra();
        Roster::new(store, &self.team).update_member(&AgentName::lead(), |m| {
            m.tmux_pane_id = pane.to_string();
            m.color = Some(LEAD_COLOR.into());
            m.extra.extend(extra);
        })?;
        backend.start(&pane, lead)?;
        Ok(pane)
    }

    /// Every teammate in order; stops at the first that fails.
    fn spawn_all(
        &self,
        store: &Store,
        backend: &mut dyn PaneBackend,
        lead_pane: Option<&PaneId>,
        progress: Progress,
    ) -> Result<Vec<LaunchedTeammate>> {
        let mut launched: Vec<LaunchedTeammate> = Vec::new();
        for t in &self.teammates {
            match spawn_one(store, &self.team, backend, t) {
                Ok(done) => {
                    progress(&self.spawned_line(t, &done));
                    launched.push(done);
                }
                Err(e) if launched.is_empty() => {
                    if let Some(pane) = lead_pane {
                        let _ = backend.kill(pane);
                    }
                    self.undo_team(store);
                    return Err(e);
                }
                Err(e) => {
                    let names: Vec<&str> = launched.iter().map(|l| l.name.as_str()).collect();
                    return Err(Error::Backend(format!(
                        "failed to launch {}: {e}; it was rolled back, and {} keep running (`swarm shutdown --all` stops them)",
                        t.name,
                        names.join(", ")
                    )));
                }
            }
        }
        Ok(launched)
    }

    fn spawned_line(&self, t: &PreparedTeammate, done: &LaunchedTeammate) -> String {
        let again = if t.previous.is_some() {
            " (started again)"
        } else {
            ""
        };
        let place = match self.backend.kind {
            BackendKind::InProcess => format!(
                "as pid {} (log {})",
                done.pid.unwrap_or_default(),
                t.launch.log.as_deref().unwrap_or(Path::new("")).display()
            ),
            kind => format!("in {kind} pane {}", done.pane_id),
        };
        let worktree = t
            .worktree
            .as_ref()
            .map(|w| format!(", worktree {} on {}", w.path.display(), w.branch))
            .unwrap_or_default();
        format!(
            "{} ({}): {} {place}{worktree}{again}",
            t.name,
            t.color,
            t.agent.label()
        )
    }

    /// Deletes a team this launch created, when nothing of it got running.
    fn undo_team(&self, store: &Store) {
        if self.new_team {
            let _ = Roster::new(store, &self.team).delete(true);
        }
    }
}

fn seeded_line(tasks: &[TaskId]) -> String {
    format!(
        "seeded {} task{}: {}",
        tasks.len(),
        if tasks.len() == 1 { "" } else { "s" },
        tasks
            .iter()
            .map(|t| format!("#{t}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Spawns one teammate in section 10's order, rolling back on failure.
fn spawn_one(
    store: &Store,
    team: &TeamName,
    backend: &mut dyn PaneBackend,
    t: &PreparedTeammate,
) -> Result<LaunchedTeammate> {
    let roster = Roster::new(store, team);
    match &t.previous {
        Some(previous) => {
            // Its last pane (kept by remain-on-exit) or process goes first; a liveness lock its
            // last runtime left would have the lead judge the new one dead before it starts.
            let _ = crate::lifecycle::kill_member(store, team, previous);
            if liveness::probe(store, team, &t.name)? == Liveness::Dead {
                let _ = std::fs::remove_file(store.alive_path(team, &t.name));
            }
            let member = t.member.clone();
            roster.update_member(&t.name, |m| *m = member)?;
        }
        None => roster.add_member(t.member.clone())?,
    }
    let mut worktree_made = false;
    let mut pane: Option<PaneId> = None;
    let result = (|| {
        if let Some(wt) = &t.worktree {
            wt.create()?;
            worktree_made = true;
        }
        let opened = backend.open_pane(&PaneSpec {
            name: t.name.to_string(),
            color: t.color.clone(),
        })?;
        pane = Some(opened.clone());
        let extra = backend.member_extra();
        let kind = backend.kind();
        roster.update_member(&t.name, |m| {
            m.tmux_pane_id = opened.to_string();
            m.backend_type = Some(kind.as_str().into());
            m.is_active = Some(true);
            m.extra.extend(extra);
        })?;
        if t.previous.is_none() && !t.prompt.trim().is_empty() {
            let message =
                InboxMessage::new(LEAD, t.prompt.clone()).with_color(Some(LEAD_COLOR.into()));
            Mailbox::new(store, team).append(&t.name, message)?;
        }
        let started = backend.start(&opened, &t.launch)?;
        if let Some(pid) = started.pid {
            roster.update_member(&t.name, |m| crate::process::pid::record_pid(m, pid))?;
        }
        Ok::<_, Error>(LaunchedTeammate {
            name: t.name.to_string(),
            color: t.color.clone(),
            agent: t.agent.label(),
            pane_id: opened.to_string(),
            cwd: t.launch.cwd.clone(),
            pid: started.pid,
            worktree: t.worktree.as_ref().map(|w| w.path.clone()),
        })
    })();
    if result.is_err() {
        rollback(store, team, backend, t, pane.as_ref(), worktree_made);
    }
    result
}

/// Undoes what [`spawn_one`] got done: the pane, the worktree, the roster entry and the inbox.
fn rollback(
    store: &Store,
    team: &TeamName,
    backend: &mut dyn PaneBackend,
    t: &PreparedTeammate,
    pane: Option<&PaneId>,
    worktree_made: bool,
) {
    if let Some(p) = pane {
        let _ = backend.kill(p);
    }
    if worktree_made {
        if let Some(wt) = &t.worktree {
            let _ = wt.remove();
        }
    }
    if t.previous.is_some() {
        // A teammate started again keeps its roster entry and inbox; it is just not running.
        let _ = Roster::new(store, team).update_member(&t.name, |m| {
            m.is_active = Some(false);
            m.tmux_pane_id.clear();
        });
        return;
    }
    let _ = Roster::new(store, team).remove_member(&t.name);
    let _ = std::fs::remove_file(store.inbox_path(team, &t.name));
}
