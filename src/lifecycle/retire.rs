//! The end of a member's life: killing it, retiring it, rejoining, and its worktree.
//!
//! Retiring marks a member inactive, returns its unfinished tasks to pending and tells the lead
//! which (PROTOCOL.md sections 7 and 8); a runtime that starts again rejoins under the reap gate.
//! Killing goes through the backend that runs the member ([`crate::backend::for_member`]) and is
//! idempotent; a pane's last lines are kept before it is closed (`kept_output`).

use crate::backend::{for_member, PaneState};
use crate::error::{Error, Result};
use crate::lifecycle::kept_output;
use crate::lifecycle::worktree::{self, Worktree};
use crate::process::group::Refusal;
use crate::process::pid::PidRecord;
use crate::process::spawn_record::{self, Untrusted};
use crate::store::liveness::ReapGate;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TaskId, TeamName};
use crate::store::paths::Store;
use crate::store::roster::{Member, Roster, Stamped, TeamConfig};
use crate::store::tasks::TaskList;

/// Marks `name` inactive, returns its unfinished tasks to pending and tells the lead which and
/// why. Nothing is sent when the member was already inactive and no task moved.
pub(crate) fn retire_member(
    store: &Store,
    team: &TeamName,
    name: &AgentName,
    why: &str,
) -> Result<Vec<TaskId>> {
    let was_active =
        mark_retired(store, team, std::slice::from_ref(name))?[0].ok_or_else(|| {
            Error::NoSuchMember {
                team: team.to_string(),
                name: name.to_string(),
            }
        })?;
    release_and_tell(store, team, name, why, was_active)
}

/// [`retire_member`]'s roster half for many members in one roster write: whether each was
/// active, `None` for one no longer on the roster. `swarm down` of 200, and the lead console
/// reading their approvals, rewrote the 160 KB roster once per member, each rewrite waiting for
/// the one before under the roster lock.
pub(crate) fn mark_retired(
    store: &Store,
    team: &TeamName,
    names: &[AgentName],
) -> Result<Vec<Option<bool>>> {
    Roster::new(store, team).update(|config| {
        Ok(names
            .iter()
            .map(|name| config.member_mut(name.as_str()).map(Member::retire))
            .collect())
    })
}

/// [`retire_member`]'s other half, once the roster says `name` is retired: its unfinished tasks
/// go back to pending, and the lead is told unless it `was_active` no longer and no task moved.
pub(crate) fn release_and_tell(
    store: &Store,
    team: &TeamName,
    name: &AgentName,
    why: &str,
    was_active: bool,
) -> Result<Vec<TaskId>> {
    let released = TaskList::new(store, team).release_agent(name.as_str())?;
    if was_active || !released.is_empty() {
        let tasks = if released.is_empty() {
            "it had no unfinished tasks".to_string()
        } else {
            format!(
                "its unfinished tasks went back to pending: {}",
                released
                    .iter()
                    .map(|t| format!("#{t}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let text = format!("{name} is no longer active ({why}); {tasks}.");
        let message = InboxMessage::new(&AgentName::system(), text)
            .with_summary(Some(format!("{name} left the team")));
        Mailbox::new(store, team).send(&AgentName::lead(), message)?;
    }
    Ok(released)
}

/// Marks a starting runtime's member active again; `true` if it was inactive (retired after an
/// earlier runtime died or was stopped). Called with the member's liveness lock already held and
/// done under the [`ReapGate`], so a lead that found the old runtime dead finishes retiring it
/// (and returning its tasks) before the new one is counted in and claims work; and a runtime
/// that dies again is reaped again, since only active members are watched.
/// `known` is the roster as the runtime read it at its start; it is read again only if the file
/// changed since (`Stamped`), and after a reinstatement, so it is the roster as it stands.
pub(crate) fn rejoin(
    store: &Store,
    team: &TeamName,
    name: &AgentName,
    known: &mut Stamped,
) -> Result<bool> {
    let roster = Roster::new(store, team);
    let _gate = ReapGate::take(store, team)?;
    roster.refresh(known)?;
    let member = known
        .config
        .member(name.as_str())
        .ok_or_else(|| Error::NoSuchMember {
            team: team.to_string(),
            name: name.to_string(),
        })?;
    if !member.retired() {
        return Ok(false);
    }
    let rejoined = roster.update_member(name, |m| {
        m.is_active = Some(true);
        m.reinstate()
    })?;
    *known = roster.load_stamped()?;
    Ok(rejoined)
}

/// What [`kill_member`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Killed {
    /// Its pane was closed and its recorded process group stopped (or they were already gone);
    /// `signalled` when that group still ran once the pane the roster names was closed (the
    /// roster pointed elsewhere, or at no pane), so swarm signalled it.
    Stopped { signalled: bool },
    /// The process the roster or swarm's own records name is not one swarm can trust (not in
    /// swarm's records, without the spawn token, recycled, not a group leader), so nothing was
    /// signalled; its pane, if any, was still closed.
    NotSignalled { pid: u32, why: Untrusted },
}

impl Killed {
    /// For a refused record: what happened and what the user can do, on one line.
    pub(crate) fn report(&self, name: &str) -> Option<String> {
        match self {
            Killed::Stopped { .. } => None,
            Killed::NotSignalled { pid, why } => Some(format!(
                "did not signal {name}'s process (pid {pid}): {why}; if {name} is still running, \
                 stop it yourself (`ps -o pid,pgid,lstart,args -p {pid}` shows what that pid is now)"
            )),
        }
    }
}

/// Kills the member's pane or process group through its backend; already dead is fine. The
/// process is taken from swarm's own record of what it started ([`spawn_record`]), never from
/// the roster: one swarm cannot trust (a live roster pid with no such record, a recorded pid
/// without the spawn's token) is never signalled, its pane still closed, and the caller reports
/// it. A member whose roster names no backend (fields any member can clear) still has the
/// process swarm recorded starting for it stopped.
pub(crate) fn kill_member(store: &Store, team: &TeamName, member: &Member) -> Result<Killed> {
    stop(store, team, member, None)
}

/// [`kill_member`] for one run: the one whose pid is `run_pid`, a run that approved its
/// shutdown. `None`, with nothing closed or signalled, once swarm's record of what it started
/// for the member names another process, or the member's pane runs another one: the member
/// was started again since (`swarm up` or `restart` while the approval waited to be read).
pub(crate) fn kill_run(
    store: &Store,
    team: &TeamName,
    member: &Member,
    run_pid: u32,
) -> Result<Option<Killed>> {
    let recorded = spawn_record::load(store, team, member.name.as_str());
    if recorded.is_some_and(|r| r.pid != run_pid) || later_run_in_pane(store, team, member, run_pid)
    {
        return Ok(None);
    }
    stop(store, team, member, Some(run_pid)).map(Some)
}

/// Whether the member's recorded tmux pane runs a process other than `run_pid`. A local
/// runtime's pane process is the runtime itself (its liveness record names that pid, outside
/// any sandbox), so another pid there is a later run. tmux numbers panes from `%0` again once
/// its server exits, and a launch opens a pane before it records the spawn: until then the pane
/// id an earlier run left on the roster names the new run's pane, with the member's marks.
/// A member on another host is left out: its local pane is the connection, not the runtime.
fn later_run_in_pane(store: &Store, team: &TeamName, member: &Member, run_pid: u32) -> bool {
    if crate::remote::RemoteMember::of(member).is_some() {
        return false;
    }
    for_member(store, team, member)
        .filter(|b| b.tmux().is_some())
        .is_some_and(
            |b| matches!(b.state(), Ok(PaneState::Alive { pid: Some(pid) }) if pid != run_pid),
        )
}

fn stop(store: &Store, team: &TeamName, member: &Member, run: Option<u32>) -> Result<Killed> {
    let refused =
        match spawn_record::signal_target(store, team, member.name.as_str()) {
            Ok(_) | Err(Untrusted::Group(Refusal::Gone)) => None,
            // Nothing recorded anywhere, or a roster pid that names nothing running: nothing to stop.
            Err(Untrusted::NotStarted) => PidRecord::of_member(member)
                .filter(PidRecord::alive)
                .map(|r| Killed::NotSignalled {
                    pid: r.pid,
                    why: Untrusted::NotStarted,
                }),
            Err(why) => Some(Killed::NotSignalled {
                pid: spawn_record::load(store, team, member.name.as_str()).map_or(0, |r| r.pid),
                why,
            }),
        };
    let signalled = match for_member(store, team, member) {
        Some(backend) => {
            keep_output(store, team, member, &backend);
            let mut backend = match refused {
                Some(_) => backend.without_signals(),
                None => backend.only_run(run),
            };
            backend.kill()?
        }
        None => refused.is_none() && crate::backend::stop_recorded_group(store, team, member, run),
    };
    // A member on another host: its pane there too. Unreachable now, its host's relay stops it
    // once connected again (the member is retired by then).
    if let Err(e) = crate::remote::member::stop(team, member) {
        eprintln!(
            "swarm: warning: {}'s pane on its host stays until the host is reachable: {e}",
            member.name
        );
    }
    Ok(refused.unwrap_or(Killed::Stopped { signalled }))
}

/// Keeps the last lines of the pane about to be closed ([`kept_output`]); a pane that cannot be
/// read is still closed, with a warning.
pub(crate) fn keep_output(
    store: &Store,
    team: &TeamName,
    member: &Member,
    backend: &crate::backend::MemberBackend<'_>,
) {
    if let Err(e) = kept_output::keep_pane_output(store, team, member, backend) {
        eprintln!(
            "swarm: warning: could not keep the last lines of {}'s pane: {e}",
            member.name
        );
    }
}

/// For a team being deleted: each teammate's git worktree removed with its branch if unchanged,
/// else kept on its branch; one line per worktree saying which (a failure is a line too: the
/// team goes either way, and its worktrees are the user's work).
pub(crate) fn finish_team_worktrees(config: &TeamConfig) -> Vec<String> {
    config
        .teammates()
        .filter_map(|m| Some((m, Worktree::of_member(m)?)))
        .map(|(m, wt)| match wt.finish() {
            Ok(outcome) => format!("{}: {outcome}", m.name),
            Err(e) => format!(
                "{}: worktree {} left as it is: {e}",
                m.name,
                wt.path.display()
            ),
        })
        .collect()
}

/// Removes the member's worktree if unchanged, else keeps it; `None` if it has none.
pub(crate) fn finish_worktree(
    store: &Store,
    team: &TeamName,
    member: &Member,
) -> Result<Option<worktree::Outcome>> {
    let Some(wt) = Worktree::of_member(member) else {
        return Ok(None);
    };
    let outcome = match crate::remote::RemoteMember::of(member) {
        // Made on the member's host, finished there.
        Some(remote) => {
            let out = crate::remote::member::run_on_host(
                team,
                &remote,
                &["worktree", "--mirror", &remote.mirror],
                wt.to_json().to_string().as_bytes(),
            )?;
            serde_json::from_str(&out).map_err(|e| {
                crate::error::Error::Backend(format!(
                    "{} answered something else about the worktree ({e}): {out}",
                    remote.host
                ))
            })?
        }
        None => wt.finish()?,
    };
    if matches!(outcome, worktree::Outcome::Removed { .. }) {
        Roster::new(store, team).update_member(&member.name, |m| {
            m.extra.remove(worktree::FIELD);
        })?;
    }
    Ok(Some(outcome))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::team_with;
    use crate::store::tasks::{NewTask, TaskStatus};

    #[test]
    fn retiring_releases_tasks_and_tells_the_lead_once() {
        let (_dir, store, team) = team_with(&["coder"]);
        let coder: AgentName = "coder".parse().unwrap();
        let tasks = TaskList::new(&store, &team);
        let t1 = tasks
            .create(NewTask {
                subject: "a".into(),
                ..Default::default()
            })
            .unwrap();
        tasks.claim(&t1.id, &coder, true).unwrap();
        let released = retire_member(&store, &team, &coder, "shutdown approved").unwrap();
        assert_eq!(released, std::slice::from_ref(&t1.id));
        assert_eq!(tasks.get(&t1.id).unwrap().status, TaskStatus::Pending);
        let config = Roster::new(&store, &team).load().unwrap();
        assert!(config.member("coder").unwrap().retired());
        let lead = Mailbox::new(&store, &team)
            .read(&AgentName::lead(), false)
            .unwrap();
        assert_eq!(lead.len(), 1);
        assert!(lead[0].text.contains("#1"), "{}", lead[0].text);
        assert!(lead[0].text.contains("shutdown approved"));
        // Again: nothing changed, so no second message.
        assert!(retire_member(&store, &team, &coder, "again")
            .unwrap()
            .is_empty());
        assert_eq!(
            Mailbox::new(&store, &team)
                .read(&AgentName::lead(), false)
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn a_runtime_rejoins_after_a_retirement_made_since_it_read_the_roster() {
        let (_dir, store, team) = team_with(&["coder"]);
        let coder: AgentName = "coder".parse().unwrap();
        let roster = Roster::new(&store, &team);
        let mut known = roster.load_stamped().unwrap();
        assert!(
            !rejoin(&store, &team, &coder, &mut known).unwrap(),
            "not retired"
        );
        // Retired after the runtime's first read, before its rejoin: the rejoin sees it.
        roster.update_member(&coder, Member::retire).unwrap();
        assert!(!known.config.member("coder").unwrap().retired());
        assert!(rejoin(&store, &team, &coder, &mut known).unwrap());
        assert!(
            !known.config.member("coder").unwrap().retired(),
            "as it stands now"
        );
        assert!(!roster.load().unwrap().member("coder").unwrap().retired());
        // Off the roster by now: refused.
        roster
            .update(|c| {
                c.members.retain(|m| m.name.as_str() != "coder");
                Ok(())
            })
            .unwrap();
        assert!(matches!(
            rejoin(&store, &team, &coder, &mut known),
            Err(Error::NoSuchMember { .. })
        ));
    }

    #[test]
    fn a_kill_for_one_run_leaves_the_run_started_after_it_alone() {
        use std::os::unix::process::{CommandExt, ExitStatusExt};

        let (_dir, store, team) = team_with(&["coder"]);
        let token = spawn_record::SpawnToken::new().unwrap();
        let mut env = Vec::new();
        token.add_to(&mut env);
        let mut later = std::process::Command::new("sleep")
            .arg("30")
            .envs(env)
            .process_group(0)
            .spawn()
            .unwrap();
        spawn_record::save(&store, &team, "coder", later.id(), &token).unwrap();
        let member = Roster::new(&store, &team)
            .load()
            .unwrap()
            .member("coder")
            .cloned()
            .unwrap();
        // The run that approved was pid 4194000 (long gone); swarm's record names a later one.
        assert_eq!(kill_run(&store, &team, &member, 4_194_000).unwrap(), None);
        assert_eq!(later.try_wait().unwrap(), None, "the later run still runs");
        // The same kill meant for the later run stops it.
        assert_eq!(
            kill_run(&store, &team, &member, later.id()).unwrap(),
            Some(Killed::Stopped { signalled: true })
        );
        assert!(later.wait().unwrap().signal().is_some());
    }
}

#[cfg(test)]
mod pane_tests {
    use super::*;
    use crate::backend::tmux::SOCKET_FIELD;
    use crate::store::fixture::team_with;
    use std::process::Command;

    /// A tmux server of its own on a socket in the test's directory, killed on drop.
    struct Server(std::path::PathBuf);

    impl Server {
        fn tmux(&self, args: &[&str]) -> String {
            let out = Command::new("tmux")
                .arg("-S")
                .arg(&self.0)
                .args(["-f", "/dev/null"])
                .args(args)
                .env_remove("TMUX")
                .env_remove("TMUX_PANE")
                .output()
                .expect("tmux runs (scripts/test installs it)");
            assert!(out.status.success(), "tmux {args:?}: {out:?}");
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = Command::new("tmux")
                .arg("-S")
                .arg(&self.0)
                .arg("kill-server")
                .output();
        }
    }

    #[test]
    fn a_kill_for_one_run_leaves_a_later_run_under_the_same_pane_id_alone() {
        // tmux numbers panes from %0 again once its server exits, so the pane id the approving
        // run left on the roster can name the pane a launch has just opened for the member's
        // next run, before anything records that run (a launch killed before it recorded its
        // spawns leaves no spawn record to tell them apart). The earlier run's lead console,
        // finishing its last pass after `down`, closed that new pane (`up` said a teammate's
        // pane was gone, a CI run).
        let (dir, store, team) = team_with(&["coder"]);
        let server = Server(dir.path().join("tmux.sock"));
        let root = std::fs::canonicalize(store.root()).unwrap();
        let (pane, pid) = {
            let line = server.tmux(&[
                "new-session",
                "-d",
                "-P",
                "-F",
                "#{pane_id} #{pane_pid}",
                "sleep",
                "60",
            ]);
            let (pane, pid) = line.split_once(' ').unwrap();
            (pane.to_string(), pid.parse::<u32>().unwrap())
        };
        for (option, value) in [
            ("@swarm-root", root.to_str().unwrap()),
            ("@swarm-team", "t"),
            ("@swarm-member", "coder"),
        ] {
            server.tmux(&["set", "-p", "-t", &pane, option, value]);
        }
        let member = Roster::new(&store, &team)
            .update_member(&"coder".parse().unwrap(), |m| {
                m.tmux_pane_id = pane.clone();
                m.backend_type = Some("tmux".into());
                m.extra
                    .insert(SOCKET_FIELD.into(), server.0.to_str().unwrap().into());
                m.clone()
            })
            .unwrap();
        let alive = || server.tmux(&["list-panes", "-a", "-F", "#{pane_id}"]) == pane;
        // The run that approved was pid 4194000, long gone; another process runs in its pane id.
        assert_eq!(kill_run(&store, &team, &member, 4_194_000).unwrap(), None);
        assert!(alive(), "the later run's pane is still open");
        // The same kill meant for the run in that pane closes it.
        assert_eq!(
            kill_run(&store, &team, &member, pid).unwrap(),
            Some(Killed::Stopped { signalled: false })
        );
        // It was the server's only pane, so the server is gone with it.
        let listed = Command::new("tmux")
            .arg("-S")
            .arg(&server.0)
            .args(["list-panes", "-a"])
            .output()
            .unwrap();
        assert!(!listed.status.success(), "closed: {listed:?}");
    }
}
