//! Running a prepared launch: the team, its tasks, the lead pane and every teammate, with
//! rollback, and with its intent on record before any pane opens.
//!
//! The store comes first, while nothing runs: each new teammate's inbox with its prompt as the
//! first message from `team-lead` (all in one pass, one directory sync: `Mailbox::first_messages`),
//! then every teammate's roster entry in one roster write (already active, with its backend, so
//! a lead console that starts with them does not take them for dead), then each one's worktree.
//! That roster write is also the launch's intent: it names the tmux server the panes will open
//! on and marks every member being opened with this launcher ([`lifecycle::orphans`]), so a
//! launcher killed at any later point leaves panes that `up`, `down` and `prune` find by their
//! marks. Then the backend opens every pane at once, each already running its command (tmux:
//! usually one tmux call for the whole launch), and one more roster write records the pane ids
//! and ends the intent. Anything that fails before a teammate runs rolls the whole launch back
//! (panes, worktrees, roster entries, inboxes, and a team this launch created); a backend that
//! starts panes one by one can stop part way, and then the error names the teammates that keep
//! running and how to stop them.
//!
//! A teammate started again (`swarm up`, `swarm restart`: on the roster, not running) keeps its
//! entry and inbox: its old pane or process is closed and the entry replaced instead of added,
//! it gets no first message unless it is a claude teammate with no session to resume
//! (`launch::again`), the lead entries it never read are signed afresh (a claude
//! teammate believes none more than 120 s older than its start; `store/mailbox/restamp.rs`),
//! and a rollback only marks it not running. Tasks are seeded once:
//! one whose key is already in the list is not created again.

use std::collections::HashMap;
use std::path::Path;

use super::plan::TASK_KEY;
use super::running::{make_backend, Launched, LaunchedTeammate};
use super::{Prepared, PreparedTeammate, TaskRef};
use crate::backend::pane::{Launch, NewPane, Opened, Started};
use crate::backend::{BackendKind, PaneBackend, PaneId, PaneSpec, PaneState};
use crate::error::{Error, Result};
use crate::lifecycle::orphans::{clear_opening, mark_opening};
use crate::process::spawn_record::{self, SpawnToken};
use crate::store::colour::LEAD_COLOR;
use crate::store::lead_key::LeadKey;
use crate::store::liveness::{self, Liveness};
use crate::store::mailbox::Mailbox;
use crate::store::names::{TaskId, LEAD};
use crate::store::paths::Store;
use crate::store::roster::Roster;
use crate::store::tasks::{NewTask, TaskList};

/// A progress line for each step of the launch.
pub(crate) type Progress<'a> = &'a mut dyn FnMut(&str);

impl Prepared {
    /// Creates the team, seeds the tasks and spawns every teammate.
    pub(crate) fn execute(self, store: &Store, progress: Progress) -> Result<Launched> {
        let began = std::time::SystemTime::now();
        let nothing = self.teammates.is_empty() && self.lead.is_none();
        // The backend before anything is written: it writes nothing itself, and its socket
        // path is part of the intent the roster records.
        let mut any = match nothing {
            true => None,
            false => Some(make_backend(&self, store)?),
        };
        if self.new_team {
            let extra = any
                .as_mut()
                .filter(|_| self.lead.is_some())
                .map(|b| b.as_dyn().member_extra());
            Roster::new(store, &self.team).create_with_lead(
                &self.description,
                &self.base_cwd.display().to_string(),
                &self.lead_session_id,
                |lead| {
                    // A console pane is to open: its server and this launch are on record
                    // from the first write, so `swarm up` brings it back whenever this dies.
                    if let Some(extra) = extra {
                        lead.extra.extend(extra);
                        mark_opening(lead);
                    }
                },
            )?;
            progress(&format!("created team {}", self.team));
            #[cfg(feature = "seams")]
            crate::launch::fault::at("created");
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
        let Some(mut any) = any else {
            return Ok(Launched {
                team: self.team.clone(),
                backend: self.backend.kind,
                lead_pane: None,
                teammates: vec![],
                left_running: self.left_running.clone(),
                tasks,
                attach_hint: None,
                not_up: vec![],
                in_process: None,
                began,
            });
        };
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
        let worktrees = self
            .reserve_and_prepare(store, backend)
            .inspect_err(|_| self.undo_team(store))?;
        #[cfg(feature = "seams")]
        crate::launch::fault::at("reserved");
        // Teammates on other hosts start there once their mirror holds what was just written;
        // their local panes open below with everyone else's.
        if let Err(e) = self.start_remote(store, progress) {
            self.undo_teammates(store, &self.teammates, &worktrees);
            self.undo_team(store);
            return Err(e);
        }
        let (lead_pane, launched, stopped) = match self.open_all(store, backend) {
            Ok(opened) => opened,
            Err(e) => {
                self.undo_teammates(store, &self.teammates, &worktrees);
                self.undo_team(store);
                return Err(e);
            }
        };
        match &lead_pane {
            Some(_) if backend.kind() == BackendKind::InProcess => {
                progress("lead agent started here: its console is on this terminal")
            }
            Some(pane) => progress(&format!("lead console in pane {pane}")),
            None => {}
        }
        for (t, done) in self.teammates.iter().zip(&launched) {
            progress(&self.spawned_line(t, done));
        }
        if let Some(e) = stopped {
            return Err(self.partly_launched(store, &launched, &worktrees, e));
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
            not_up: vec![],
            in_process: any.into_children(),
            began,
        })
    }

    /// Each new teammate's inbox and prompt (first, so no teammate is on the roster without
    /// it), then every teammate's roster entry (a new one added, one started again replaced)
    /// with the launch's intent, in one write, then each one's worktree; returns which
    /// worktrees were made. On error everything it did is undone but the team.
    fn reserve_and_prepare(&self, store: &Store, backend: &dyn PaneBackend) -> Result<Vec<bool>> {
        let kind = backend.kind().as_str();
        let intent = backend.member_extra();
        let entry = |t: &PreparedTeammate| {
            let mut m = t.member.clone();
            m.backend_type = Some(kind.into());
            m.is_active = Some(true);
            m.extra.extend(intent.clone());
            mark_opening(&mut m);
            m
        };
        let (again, new): (Vec<&PreparedTeammate>, Vec<&PreparedTeammate>) =
            self.teammates.iter().partition(|t| t.previous.is_some());
        let roster = Roster::new(store, &self.team);
        for t in &again {
            let Some(previous) = &t.previous else {
                continue;
            };
            // Its last pane (kept by remain-on-exit) or process goes first; a liveness lock its
            // last runtime left would have the lead judge the new one dead before it starts.
            let _ = crate::lifecycle::kill_member(store, &self.team, previous);
            if liveness::probe(store, &self.team, &t.name)? == Liveness::Dead {
                let _ = std::fs::remove_file(store.alive_path(&self.team, &t.name));
            }
        }
        let firsts = self
            .teammates
            .iter()
            .filter_map(PreparedTeammate::first_message)
            .collect();
        let worktrees = vec![false; self.teammates.len()];
        Mailbox::new(store, &self.team)
            .first_messages(firsts)
            .inspect_err(|_| self.undo_teammates(store, &self.teammates, &worktrees))?;
        #[cfg(feature = "seams")]
        crate::launch::fault::at("prompted");
        let lead_pane = self.lead.is_some();
        roster
            .update(|config| {
                for t in &again {
                    let m =
                        config
                            .member_mut(t.name.as_str())
                            .ok_or_else(|| Error::NoSuchMember {
                                team: self.team.to_string(),
                                name: t.name.to_string(),
                            })?;
                    *m = entry(t);
                }
                for t in &new {
                    if config
                        .members
                        .iter()
                        .any(|m| t.name.same_as(m.name.as_str()))
                    {
                        return Err(Error::MemberExists {
                            team: self.team.to_string(),
                            name: t.name.to_string(),
                        });
                    }
                    config.members.push(entry(t));
                }
                if let Some(lead) = config.member_mut(LEAD).filter(|_| lead_pane) {
                    lead.extra.extend(intent.clone());
                    mark_opening(lead);
                }
                Ok(())
            })
            .inspect_err(|_| self.undo_teammates(store, &self.teammates, &worktrees))?;
        let mut worktrees = worktrees;
        let mailbox = Mailbox::new(store, &self.team);
        for (i, t) in self.teammates.iter().enumerate() {
            let step = (|| {
                if let Some(wt) = &t.worktree {
                    wt.create()?;
                    worktrees[i] = true;
                }
                // Started again, it must still believe what the lead sent it and it never read.
                if t.previous.is_some() {
                    if let Some(key) = LeadKey::for_caller(store, &self.team)? {
                        mailbox.restamp_for_restart(&t.name, &key)?;
                    }
                }
                Ok::<_, Error>(())
            })();
            if let Err(e) = step {
                self.undo_teammates(store, &self.teammates, &worktrees);
                return Err(e);
            }
        }
        Ok(worktrees)
    }

    /// Opens the lead pane (first) and every teammate's pane, each running its command, and
    /// records them in one roster write. Returns the lead pane, the teammates that run, in
    /// order, and the error that stopped the others when the backend stopped part way (they
    /// are not rolled back here). An error means nothing runs any more.
    fn open_all(&self, store: &Store, backend: &mut dyn PaneBackend) -> Result<OpenedTeam> {
        let lead_spec = PaneSpec {
            name: LEAD.into(),
            color: LEAD_COLOR.into(),
        };
        let specs: Vec<PaneSpec> = self
            .teammates
            .iter()
            .map(|t| PaneSpec {
                name: t.name.to_string(),
                color: t.color.clone(),
            })
            .collect();
        // Each process gets a token of its own in its environment, which swarm's record of it
        // holds too (`process::spawn_record`): only a process carrying it is ever signalled.
        let with_token = |launch: &Launch| -> Result<(Launch, SpawnToken)> {
            let token = SpawnToken::new()?;
            let mut launch = launch.clone();
            token.add_to(&mut launch.env);
            Ok((launch, token))
        };
        let lead_launch = self.lead.as_ref().map(with_token).transpose()?;
        let teammate_launches = self
            .teammates
            .iter()
            .map(|t| with_token(&t.launch))
            .collect::<Result<Vec<_>>>()?;
        let mut panes: Vec<NewPane> = Vec::with_capacity(specs.len() + 1);
        if let Some((lead, _)) = &lead_launch {
            panes.push(NewPane {
                spec: &lead_spec,
                launch: lead,
            });
        }
        panes.extend(
            teammate_launches
                .iter()
                .zip(&specs)
                .map(|((launch, _), spec)| NewPane { spec, launch }),
        );
        let Opened {
            panes: mut opened,
            error,
        } = backend.open_started(&panes);
        #[cfg(feature = "seams")]
        crate::launch::fault::at("opened");
        let (lead_pane, lead_pid) = match self.lead {
            Some(_) if opened.is_empty() => (None, None),
            Some(_) => {
                let (pane, started) = opened.remove(0);
                (Some(pane), started.pid)
            }
            None => (None, None),
        };
        if opened.is_empty() {
            if let Some(pane) = &lead_pane {
                let _ = backend.kill(pane);
            }
            return Err(error.unwrap_or_else(|| Error::Backend("no pane was opened".into())));
        }
        let launched: Vec<LaunchedTeammate> = self
            .teammates
            .iter()
            .zip(&opened)
            .map(|(t, (pane, started))| launched(t, pane, started))
            .collect();
        let lead = lead_pane.as_ref().map(|pane| (pane, lead_pid));
        let tokens = Tokens {
            lead: lead_launch.as_ref().map(|(_, t)| t),
            teammates: teammate_launches.iter().map(|(_, t)| t).collect(),
        };
        if let Err(e) = self.record(store, backend, lead, &launched, &tokens) {
            for (pane, _) in &opened {
                let _ = backend.kill(pane);
            }
            if let Some(pane) = &lead_pane {
                let _ = backend.kill(pane);
            }
            return Err(e);
        }
        Ok((lead_pane, launched, error))
    }

    /// One roster write for every pane opened: the lead's pane, colour and process (an
    /// in-process lead agent's), each teammate's pane, process and backend fields.
    fn record(
        &self,
        store: &Store,
        backend: &dyn PaneBackend,
        lead: Option<(&PaneId, Option<u32>)>,
        launched: &[LaunchedTeammate],
        tokens: &Tokens,
    ) -> Result<()> {
        let extra = backend.member_extra();
        // swarm's own record of each process it started, before the roster names it.
        if let (Some((_, Some(pid))), Some(token)) = (lead, tokens.lead) {
            spawn_record::save(store, &self.team, LEAD, pid, token)?;
        }
        for (done, token) in launched.iter().zip(&tokens.teammates) {
            // A tmux pane's process is the teammate (its trampoline `exec`s it), forked by tmux:
            // recorded too, so a kill stops it even when the roster's pane id names another pane.
            let pane_pid = || match backend.state(&PaneId(done.pane_id.clone())) {
                Ok(PaneState::Alive { pid }) => pid,
                _ => None,
            };
            let tmux = backend.kind() == BackendKind::Tmux;
            let pid = done.pid.or(done.pane_pid);
            if let Some(pid) = pid.or_else(|| tmux.then(pane_pid).flatten()) {
                spawn_record::save(store, &self.team, &done.name, pid, token)?;
            }
        }
        Roster::new(store, &self.team).update(|config| {
            if let Some(m) = config.member_mut(LEAD).filter(|_| self.lead.is_some()) {
                if let Some((pane, pid)) = lead {
                    m.tmux_pane_id = pane.to_string();
                    m.color = Some(LEAD_COLOR.into());
                    m.extra.extend(extra.clone());
                    if let Some(pid) = pid {
                        crate::process::pid::record_pid(m, pid);
                    }
                }
                clear_opening(m);
            }
            for done in launched {
                let m = config
                    .member_mut(&done.name)
                    .ok_or_else(|| Error::NoSuchMember {
                        team: self.team.to_string(),
                        name: done.name.clone(),
                    })?;
                m.tmux_pane_id = done.pane_id.clone();
                m.extra.extend(extra.clone());
                if !self.opts.verify {
                    // Else the wait for it to come up ends the intent (`verify`).
                    clear_opening(m);
                }
                if let Some(pid) = done.pid {
                    crate::process::pid::record_pid(m, pid);
                }
            }
            Ok(())
        })
    }

    /// The error for a launch the backend stopped part way: the teammates that did not start
    /// are rolled back, the ones that did keep running.
    fn partly_launched(
        &self,
        store: &Store,
        launched: &[LaunchedTeammate],
        worktrees: &[bool],
        e: Error,
    ) -> Error {
        let rest = &self.teammates[launched.len()..];
        self.undo_teammates(store, rest, &worktrees[launched.len()..]);
        let names: Vec<&str> = launched.iter().map(|l| l.name.as_str()).collect();
        let later: Vec<&str> = rest.iter().skip(1).map(|t| t.name.as_str()).collect();
        let later = if later.is_empty() {
            String::new()
        } else {
            format!(" (as were {}, not started yet)", later.join(", "))
        };
        Error::Backend(format!(
            "failed to launch {}: {e}; it was rolled back{later}, and {} keep running (`swarm shutdown --all` stops them)",
            rest[0].name,
            names.join(", ")
        ))
    }

    /// Undoes [`Self::reserve_and_prepare`] for `teammates` (whose made worktrees `worktrees`
    /// says): their worktrees, and a new teammate's inbox and roster entry; one started again
    /// keeps both and is marked not running. The roster changes in one write.
    fn undo_teammates(&self, store: &Store, teammates: &[PreparedTeammate], worktrees: &[bool]) {
        for (t, made) in teammates.iter().zip(worktrees) {
            if let (true, Some(wt)) = (made, &t.worktree) {
                let _ = wt.remove();
            }
            super::remote::stop_remote(store, &self.team, t);
            if t.previous.is_none() {
                let _ = std::fs::remove_file(store.inbox_path(&self.team, &t.name));
            }
        }
        let _ = Roster::new(store, &self.team).update(|config| {
            for t in teammates.iter().filter(|t| t.previous.is_some()) {
                if let Some(m) = config.member_mut(t.name.as_str()) {
                    m.is_active = Some(false);
                    m.tmux_pane_id.clear();
                    clear_opening(m);
                }
            }
            if let Some(lead) = config.member_mut(LEAD) {
                clear_opening(lead);
            }
            config.members.retain(|m| {
                !teammates
                    .iter()
                    .any(|t| t.previous.is_none() && t.name == m.name)
            });
            Ok(())
        });
    }

    /// The tasks of the plan, in order, with plan indexes turned into the new ids; a task whose
    /// key is already in the list (seeded by an earlier launch) is that task, not a new one.
    /// Returns the new ids and how many were there already.
    /// The plan's tasks already in the list, by key: seeded by an earlier launch of the team.
    pub(super) fn seeded_before(&self, list: &TaskList) -> Result<HashMap<String, TaskId>> {
        if self.tasks.is_empty() || self.new_team {
            return Ok(HashMap::new());
        }
        Ok(list
            .list()?
            .into_iter()
            .filter_map(|t| {
                let key = t.metadata.get(TASK_KEY)?.as_str()?.to_string();
                Some((key, t.id))
            })
            .collect())
    }

    fn seed_tasks(&self, store: &Store) -> Result<(Vec<TaskId>, usize)> {
        let list = TaskList::new(store, &self.team);
        let seeded = self.seeded_before(&list)?;
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

/// What [`Prepared::open_all`] hands back: the lead pane, the teammates that run, and the
/// error that stopped the rest.
type OpenedTeam = (Option<PaneId>, Vec<LaunchedTeammate>, Option<Error>);

/// The launch's record of a teammate that runs in `pane`.
/// The spawn tokens of one launch's processes: the lead's, then each teammate's in order.
struct Tokens<'a> {
    lead: Option<&'a SpawnToken>,
    teammates: Vec<&'a SpawnToken>,
}

fn launched(t: &PreparedTeammate, pane: &PaneId, started: &Started) -> LaunchedTeammate {
    LaunchedTeammate {
        name: t.name.to_string(),
        color: t.color.clone(),
        agent: t.agent.label(),
        pane_id: pane.to_string(),
        cwd: t.launch.cwd.clone(),
        pid: started.pid,
        pane_pid: started.pane_pid,
        worktree: t.worktree.as_ref().map(|w| w.path.clone()),
    }
}
