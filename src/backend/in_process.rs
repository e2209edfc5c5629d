//! Teammates as child processes of the launcher, for machines without tmux or iTerm2.
//!
//! Each teammate gets its own process group (so the terminal's Ctrl-C reaches only the
//! launcher, and a kill reaches the teammate's children too), stdin from /dev/null and its
//! output appended to `teams/<team>/logs/<name>.log`. The launcher stays in the foreground and
//! [`InProcessBackend::supervise`]s: it reports each exit, records it in the roster and retires
//! the member; on SIGINT or SIGTERM it does the graceful shutdown (request, wait, SIGTERM to the
//! group, grace, SIGKILL, retire); a second signal skips the wait. The pid and its start time
//! are kept in the roster (`swarmPid`, `swarmPidStart`), so `swarm status` and `swarm kill` work
//! from other shells and a recycled pid is never mistaken for the teammate.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

use super::{BackendKind, Launch, PaneBackend, PaneId, PaneInfo, PaneSpec, PaneState, Started};
use crate::error::{Error, Result};
use crate::lifecycle::{self, ShutdownReply};
use crate::process::pid::PidRecord;
use crate::store::fsio;
use crate::store::names::{AgentName, TaskId, TeamName};
use crate::store::paths::Store;
use crate::store::roster::{Member, Roster};

/// The `tmuxPaneId` of every in-process member (PROTOCOL.md section 5).
pub const PANE_ID: &str = "in-process";
pub const EXIT_FIELD: &str = "swarmExit";

/// Records `pid` (with its start time) on a member that was just started.
pub fn record_pid(member: &mut Member, pid: u32) {
    PidRecord::of(pid).save(member);
    member.extra.remove(EXIT_FIELD);
}

fn exit_json(status: ExitStatus) -> Value {
    match (status.code(), status.signal()) {
        (Some(c), _) => json!({"code": c}),
        (None, Some(s)) => json!({"signal": s}),
        _ => json!({}),
    }
}

/// Signals the group of a child this process started and still holds (so its pid cannot have
/// been recycled).
fn killpg(pgid: u32, signal: rustix::process::Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(pgid as i32).filter(|_| pgid > 1) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

/// A member's process state from its recorded pid and exit (for in-process and iTerm2 members).
pub fn pid_state(member: &Member) -> PaneState {
    if let Some(exit) = member.extra.get(EXIT_FIELD) {
        return PaneState::Dead {
            code: exit.get("code").and_then(Value::as_i64).map(|c| c as i32),
            signal: exit.get("signal").and_then(Value::as_i64).map(|s| s as i32),
        };
    }
    match PidRecord::of_member(member) {
        Some(record) if record.alive() => PaneState::Alive {
            pid: Some(record.pid),
        },
        Some(_) => PaneState::Dead {
            code: None,
            signal: None,
        },
        None => PaneState::Unknown,
    }
}

static SIGNALS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// Counts SIGINT and SIGTERM instead of dying, so the launcher can shut the team down.
fn install_signal_handlers() {
    // SAFETY: the handler only touches an atomic, which is async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut action.sa_mask);
        action.sa_flags = libc::SA_RESTART;
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
    }
}

/// What the supervisor reports as it goes.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Running {
        name: String,
        pid: u32,
        log: String,
    },
    Exited {
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
    },
    ShutdownStarted {
        teammates: Vec<String>,
    },
    Approved {
        name: String,
    },
    Rejected {
        name: String,
        reason: String,
    },
    TimedOut {
        name: String,
    },
    Retired {
        name: String,
        released: Vec<TaskId>,
    },
    Worktree {
        name: String,
        outcome: String,
    },
}

impl Event {
    /// One status line for people.
    pub fn line(&self) -> String {
        match self {
            Event::Running { name, pid, log } => format!("{name}: running (pid {pid}, log {log})"),
            Event::Exited {
                name,
                code: Some(c),
                ..
            } => format!("{name}: exited with status {c}"),
            Event::Exited {
                name,
                signal: Some(s),
                ..
            } => format!("{name}: killed by signal {s}"),
            Event::Exited { name, .. } => format!("{name}: exited"),
            Event::ShutdownStarted { teammates } => format!(
                "shutting down {} (asking each to stop; Ctrl-C again to kill now)",
                teammates.join(", ")
            ),
            Event::Approved { name } => format!("{name}: approved the shutdown"),
            Event::Rejected { name, reason } => {
                format!("{name}: rejected the shutdown ({reason}); stopping it anyway")
            }
            Event::TimedOut { name } => format!("{name}: no answer in time; stopping it"),
            Event::Retired { name, released } if released.is_empty() => {
                format!("{name}: marked inactive")
            }
            Event::Retired { name, released } => format!(
                "{name}: marked inactive; tasks back to pending: {}",
                released
                    .iter()
                    .map(|t| format!("#{t}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Event::Worktree { name, outcome } => format!("{name}: {outcome}"),
        }
    }
}

/// How the supervisor shuts the team down on a signal.
#[derive(Debug, Clone)]
pub struct SuperviseOptions {
    /// How long teammates get to answer a shutdown request.
    pub shutdown_timeout: Duration,
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
}

impl Default for SuperviseOptions {
    fn default() -> Self {
        SuperviseOptions {
            shutdown_timeout: Duration::from_secs(30),
            grace: Duration::from_secs(3),
        }
    }
}

/// How one teammate ended.
#[derive(Debug, Clone, Serialize)]
pub struct ChildExit {
    pub name: String,
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// Stopped by the supervisor (shutdown), not on its own.
    pub stopped: bool,
}

#[derive(Debug)]
struct Supervised {
    name: AgentName,
    child: Child,
    log: String,
    exited: Option<ExitStatus>,
    request: Option<String>,
    /// When SIGTERM goes to the group (shutdown decided).
    stop_at: Option<Instant>,
    /// When SIGTERM went to the group, so SIGKILL follows after the grace.
    terminated_at: Option<Instant>,
    why: Option<String>,
}

/// Children of this process, one per teammate.
#[derive(Debug, Default)]
pub struct InProcessBackend {
    children: Vec<Supervised>,
    pending: Option<String>,
}

impl InProcessBackend {
    pub fn new() -> InProcessBackend {
        InProcessBackend::default()
    }

    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    fn running(&self) -> impl Iterator<Item = &Supervised> {
        self.children.iter().filter(|c| c.exited.is_none())
    }

    /// Stays until every teammate has exited; shuts the team down on SIGINT/SIGTERM.
    pub fn supervise(
        &mut self,
        store: &Store,
        team: &TeamName,
        opts: &SuperviseOptions,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<Vec<ChildExit>> {
        install_signal_handlers();
        let seen_signals = SIGNALS.load(Ordering::SeqCst);
        let mut shutdown_deadline: Option<Instant> = None;
        let mut exits = Vec::new();
        for c in &self.children {
            on_event(Event::Running {
                name: c.name.to_string(),
                pid: c.child.id(),
                log: c.log.clone(),
            });
        }
        loop {
            self.reap(
                store,
                team,
                on_event,
                &mut exits,
                shutdown_deadline.is_some(),
            )?;
            if self.running().next().is_none() {
                return Ok(exits);
            }
            let signals = SIGNALS.load(Ordering::SeqCst) - seen_signals;
            if signals > 0 && shutdown_deadline.is_none() {
                shutdown_deadline = Some(Instant::now() + opts.shutdown_timeout);
                let names: Vec<String> = self.running().map(|c| c.name.to_string()).collect();
                on_event(Event::ShutdownStarted { teammates: names });
                for c in self.children.iter_mut().filter(|c| c.exited.is_none()) {
                    match lifecycle::send_shutdown_request(
                        store,
                        team,
                        &c.name,
                        Some("the launcher was interrupted"),
                    ) {
                        Ok(id) => c.request = Some(id),
                        Err(e) => {
                            eprintln!("swarm: warning: could not ask {} to stop: {e}", c.name)
                        }
                    }
                }
            }
            if let Some(deadline) = shutdown_deadline {
                let now = Instant::now();
                let force = signals > 1 || now >= deadline;
                for c in self.children.iter_mut().filter(|c| c.exited.is_none()) {
                    if c.stop_at.is_none() {
                        let reply = match &c.request {
                            Some(id) => lifecycle::find_shutdown_reply(store, team, &c.name, id)?,
                            None => None,
                        };
                        match reply {
                            Some(ShutdownReply::Approved) => {
                                on_event(Event::Approved {
                                    name: c.name.to_string(),
                                });
                                c.why = Some("shutdown approved".into());
                                // It said it would go: give it the grace to exit by itself.
                                c.stop_at = Some(now + opts.grace);
                            }
                            Some(ShutdownReply::Rejected { reason }) => {
                                on_event(Event::Rejected {
                                    name: c.name.to_string(),
                                    reason: reason.clone(),
                                });
                                c.why = Some(format!("shutdown rejected ({reason}), stopped"));
                                c.stop_at = Some(now);
                            }
                            None if force => {
                                if now >= deadline {
                                    on_event(Event::TimedOut {
                                        name: c.name.to_string(),
                                    });
                                }
                                c.why = Some("stopped by the launcher".into());
                                c.stop_at = Some(now);
                            }
                            None => {}
                        }
                    }
                    match (c.stop_at, c.terminated_at) {
                        (Some(at), None) if now >= at || signals > 1 => {
                            killpg(c.child.id(), rustix::process::Signal::TERM);
                            c.terminated_at = Some(now);
                        }
                        (_, Some(t)) if now.duration_since(t) >= opts.grace || signals > 2 => {
                            killpg(c.child.id(), rustix::process::Signal::KILL);
                        }
                        _ => {}
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn reap(
        &mut self,
        store: &Store,
        team: &TeamName,
        on_event: &mut dyn FnMut(Event),
        exits: &mut Vec<ChildExit>,
        shutting_down: bool,
    ) -> Result<()> {
        let roster = Roster::new(store, team);
        for c in self.children.iter_mut().filter(|c| c.exited.is_none()) {
            let Some(status) = c
                .child
                .try_wait()
                .map_err(|e| Error::Backend(format!("failed to wait for {}: {e}", c.name)))?
            else {
                continue;
            };
            c.exited = Some(status);
            // An answer may have landed just before the exit: take it into account.
            if let (Some(id), None) = (&c.request, &c.why) {
                match lifecycle::find_shutdown_reply(store, team, &c.name, id)? {
                    Some(ShutdownReply::Approved) => {
                        on_event(Event::Approved {
                            name: c.name.to_string(),
                        });
                        c.why = Some("shutdown approved".into());
                    }
                    Some(ShutdownReply::Rejected { reason }) => {
                        c.why = Some(format!("exited after rejecting the shutdown ({reason})"));
                    }
                    None => {}
                }
            }
            // Whatever the teammate left running in its group goes with it.
            killpg(c.child.id(), rustix::process::Signal::TERM);
            let _ = roster.update_member(&c.name, |m| {
                m.extra.insert(EXIT_FIELD.into(), exit_json(status));
            });
            on_event(Event::Exited {
                name: c.name.to_string(),
                code: status.code(),
                signal: status.signal(),
            });
            let why = c.why.clone().unwrap_or_else(|| match status.code() {
                Some(code) => format!("its process exited with status {code}"),
                None => format!(
                    "its process was killed by signal {}",
                    status.signal().unwrap_or(0)
                ),
            });
            let released = lifecycle::retire_member(store, team, &c.name, &why)?;
            on_event(Event::Retired {
                name: c.name.to_string(),
                released,
            });
            if let Ok(member) = roster.require_member(c.name.as_str()) {
                if let Some(outcome) = lifecycle::finish_worktree(store, team, &member)? {
                    on_event(Event::Worktree {
                        name: c.name.to_string(),
                        outcome: outcome.to_string(),
                    });
                }
            }
            exits.push(ChildExit {
                name: c.name.to_string(),
                code: status.code(),
                signal: status.signal(),
                stopped: shutting_down && c.stop_at.is_some(),
            });
        }
        Ok(())
    }

    /// Exit statuses of children that are done, by name.
    pub fn exited(&self) -> HashMap<String, ExitStatus> {
        self.children
            .iter()
            .filter_map(|c| Some((c.name.to_string(), c.exited?)))
            .collect()
    }
}

impl PaneBackend for InProcessBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::InProcess
    }

    fn open_pane(&mut self, spec: &PaneSpec) -> Result<PaneId> {
        self.pending = Some(spec.name.clone());
        Ok(PaneId(PANE_ID.into()))
    }

    fn start(&mut self, _pane: &PaneId, launch: &Launch) -> Result<Started> {
        let name: AgentName = self
            .pending
            .take()
            .ok_or_else(|| Error::Backend("in-process start without open_pane".into()))?
            .parse()?;
        let log = launch
            .log
            .clone()
            .ok_or_else(|| Error::Backend("in-process teammates need a log path".into()))?;
        if let Some(dir) = log.parent() {
            fsio::ensure_dir(dir)?;
        }
        fsio::check_regular(&log)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&log)
            .map_err(Error::io("open", &log))?;
        let err = file.try_clone().map_err(Error::io("open", &log))?;
        let (program, args) = launch
            .argv
            .split_first()
            .ok_or_else(|| Error::Backend("empty argv".into()))?;
        let child = Command::new(program)
            .args(args)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&launch.cwd)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| Error::Command {
                program: program.clone(),
                detail: format!("could not start it: {e}"),
            })?;
        let pid = child.id();
        self.children.push(Supervised {
            name,
            child,
            log: log.display().to_string(),
            exited: None,
            request: None,
            stop_at: None,
            terminated_at: None,
            why: None,
        });
        Ok(Started { pid: Some(pid) })
    }

    fn state(&self, _pane: &PaneId) -> Result<PaneState> {
        Ok(PaneState::Unknown)
    }

    /// Kills the most recently started child (used to roll back a failed spawn).
    fn kill(&mut self, _pane: &PaneId) -> Result<()> {
        if let Some(mut c) = self.children.pop() {
            killpg(c.child.id(), rustix::process::Signal::KILL);
            let _ = c.child.wait();
        }
        Ok(())
    }

    fn list(&self) -> Result<Vec<PaneInfo>> {
        Ok(self
            .children
            .iter()
            .map(|c| PaneInfo {
                pane: PaneId(PANE_ID.into()),
                title: c.name.to_string(),
                state: match c.exited {
                    None => PaneState::Alive {
                        pid: Some(c.child.id()),
                    },
                    Some(s) => PaneState::Dead {
                        code: s.code(),
                        signal: s.signal(),
                    },
                },
            })
            .collect())
    }
}
