//! A launch that says whether it worked: waiting, bounded, until every teammate it started is
//! up, and naming each one that is not with the last lines of its output.
//!
//! A pane opening is not a teammate running: a runtime can exit at once (no file descriptor or
//! inotify instance left, a directory gone, a bad flag), and a `claude` teammate can die while
//! it starts. So `swarm launch`, `up` and `demo` wait until each runtime teammate holds its
//! liveness lock (`store::liveness`), which it takes only once it runs, and each `claude`
//! teammate's process is still alive [`CLAUDE_STARTUP`] after the launch (Claude Code takes
//! no swarm lock). A pane whose process exits on the way is reported at once with its exit
//! status (status 0 is a teammate that did its work and finished, not a failure). The wait is
//! bounded by `--wait` seconds without progress: it ends when every teammate is up or failed,
//! or when none came up for that long, so two hundred runtimes starting on two cores are not
//! called failed for being slow together, and one that hangs is reported after a few seconds.
//! Until the wait ends the launch's intent stays on each teammate's roster entry
//! (`lifecycle::orphans`), so the lead console does not close a dead pane before its output is
//! read. The ones that are up keep running whatever happens to the others; the caller turns a
//! non-empty answer into a report and a non-zero exit status.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::backend::{for_member, BackendKind, PaneId, PaneState};
use crate::lifecycle::member_health;
use crate::lifecycle::orphans::finish_opening;
use crate::process::child::exit_of_unreaped;
use crate::process::pid::PidRecord;
use crate::store::fsio;
use crate::store::liveness::{self, Liveness};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::roster::{Member, Roster};
use crate::store::watcher::DirWatcher;

/// How long a `claude` teammate's process must have lived to count as started.
pub(crate) const CLAUDE_STARTUP: Duration = Duration::from_secs(1);
/// How long a teammate whose process is gone may wait for its exit status to be recorded
/// before it is reported without one.
const STATUS_GRACE: Duration = Duration::from_secs(2);
/// Lines of a teammate's output shown for one that did not come up.
const OUTPUT_LINES: usize = 8;
/// Between two looks at the teammates still starting when nothing woke the wait: a write to a
/// liveness lock (a runtime holds it) wakes it sooner, but a pane that dies or a `claude`
/// teammate's start-up raises no file event.
const LOOK_EVERY: Duration = Duration::from_millis(50);
/// The least time between two looks, however often the locks are written: in a launch of 200,
/// each look probes every lock still pending.
const LOOK_AT_MOST_EVERY: Duration = Duration::from_millis(5);
/// Between two looks at the panes of the teammates still starting, to find the ones that
/// died on the way.
const PANES_EVERY: Duration = Duration::from_millis(500);

/// A teammate the launch started that did not come up.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct NotUp {
    pub(crate) name: String,
    /// Why, as the end of a sentence: "its process exited with status 3".
    pub(crate) why: String,
    /// The last lines it printed (its pane, or its log when in-process), oldest first.
    pub(crate) output: Vec<String>,
}

/// Where one teammate stands while the launch waits.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Up {
    Yes,
    NotYet,
    /// It will not come up: why.
    Failed(String),
    /// Its process is gone and nobody has said how it ended yet: an in-process teammate that
    /// the supervisor reaped an instant before it records the exit status, or a pane tmux
    /// shows dead before its status is in (tmux 3.3a sometimes never gives one).
    GoneUntold,
}

/// A teammate a launch just started, as the wait sees it.
#[derive(Debug, Clone)]
pub(crate) struct Starting {
    pub(crate) name: String,
    /// A native `claude` teammate (no swarm runtime, no liveness lock).
    pub(crate) claude: bool,
    /// When its launch began: a runtime that took its lock since then came up, even when it
    /// has already ended by the time the wait looks (a quick team's lead stops it once its
    /// tasks are done).
    pub(crate) since: std::time::SystemTime,
}

/// Waits until every teammate in `starting` is up, giving up on the rest once none came up for
/// `bound`; returns the ones that are not up, in launch order.
pub(crate) fn wait_until_up(
    store: &Store,
    team: &TeamName,
    starting: &[Starting],
    bound: Duration,
) -> Vec<NotUp> {
    let start = Instant::now();
    let mut deadline = start + bound;
    let startup = CLAUDE_STARTUP.min(bound);
    let mut pending: Vec<&Starting> = starting.iter().collect();
    let mut failed: Vec<(String, String)> = Vec::new();
    let mut untold: Vec<(String, Instant)> = Vec::new();
    let mut panes_seen = None::<Instant>;
    // Woken by the locks' writes, where inotify sees them. Polled (no inotify instance to be
    // had), a watch of this directory skips lock files, and with no watch at all the looks are
    // every LOOK_EVERY, as they all were before.
    let locks = fsio::ensure_dir(&store.alive_dir(team))
        .and_then(|()| DirWatcher::entries(&store.alive_dir(team)))
        .ok();
    let mut config = None;
    loop {
        let looked = Instant::now();
        let before = pending.len();
        let panes = panes_seen.is_none_or(|at| at.elapsed() >= PANES_EVERY);
        if panes {
            panes_seen = Some(Instant::now());
            // Read with the panes: a lock needs only the member's name, and each read of the
            // roster of 200 parses its 160 KB.
            config = Roster::new(store, team).load().ok();
        }
        pending.retain(|t| {
            let held =
                |name: AgentName| liveness::probe(store, team, &name).ok() == Some(Liveness::Alive);
            if !t.claude && t.name.parse().is_ok_and(held) {
                return false;
            }
            if !panes {
                return true;
            }
            let member = config.as_ref().and_then(|c| c.member(&t.name));
            let started = start.elapsed() >= startup;
            match member.map(|m| state(store, team, m, t, started)) {
                Some(Up::Yes) => false,
                Some(Up::NotYet) => true,
                Some(Up::GoneUntold) => {
                    let since = match untold.iter().find(|(n, _)| *n == t.name) {
                        Some((_, since)) => *since,
                        None => {
                            untold.push((t.name.clone(), Instant::now()));
                            Instant::now()
                        }
                    };
                    if since.elapsed() < STATUS_GRACE {
                        return true;
                    }
                    failed.push((t.name.clone(), "its process exited".into()));
                    false
                }
                Some(Up::Failed(why)) => {
                    failed.push((t.name.clone(), why));
                    false
                }
                None => {
                    failed.push((t.name.clone(), "it is no longer on the roster".into()));
                    false
                }
            }
        });
        if pending.len() < before {
            deadline = deadline.max(Instant::now() + bound);
        }
        if pending.is_empty() || Instant::now() >= deadline {
            break;
        }
        let next = (Instant::now() + LOOK_EVERY).min(deadline);
        match &locks {
            Some(locks) => {
                std::thread::sleep(LOOK_AT_MOST_EVERY.saturating_sub(looked.elapsed()));
                locks.wait(Some(next));
            }
            None => std::thread::sleep(next.saturating_duration_since(Instant::now())),
        }
    }
    let waited = start.elapsed().as_secs_f32();
    for t in pending {
        let why = if t.claude {
            format!("its process could not be seen running after {waited:.1} s")
        } else {
            format!(
                "its runtime had not started after {waited:.1} s (it never took its liveness \
                 lock; `--wait SECONDS` waits longer)"
            )
        };
        failed.push((t.name.clone(), why));
    }
    let names: Vec<&str> = starting.iter().map(|t| t.name.as_str()).collect();
    if let Err(e) = finish_opening(store, team, &names) {
        eprintln!("swarm: warning: could not record that the launch of team {team} is over: {e}");
    }
    let order = |name: &str| starting.iter().position(|t| t.name == name);
    failed.sort_by_key(|(name, _)| order(name));
    let config = Roster::new(store, team).load().ok();
    failed
        .into_iter()
        .map(|(name, why)| {
            let output = config
                .as_ref()
                .and_then(|c| c.member(&name))
                .map(|m| last_output(store, team, m))
                .unwrap_or_default();
            NotUp { name, why, output }
        })
        .collect()
}

/// Whether one teammate is up, by its pane and process, once its lock (looked at first, at
/// every look) did not say so. The one place that judges it, so a shared member state can take
/// its place: a runtime is up once it holds its liveness lock; a `claude` teammate once its
/// process has lived past start-up (`started`); either is failed once its pane or process died
/// with a failure, and up once it finished with status 0. Looked at only every
/// [`PANES_EVERY`]: each look is a tmux call per teammate still starting (with 200 starting,
/// 200 tmux processes every 50 ms on two cores slowed the very start it waited for).
fn state(
    store: &Store,
    team: &TeamName,
    member: &Member,
    starting: &Starting,
    started: bool,
) -> Up {
    let claude = starting.claude;
    let Ok(health) = member_health(store, team, member) else {
        return Up::NotYet;
    };
    if !claude && health.liveness == Liveness::Alive {
        return Up::Yes;
    }
    let pane = match health.pane {
        // An in-process teammate is this launcher's child, not reaped yet: its status is there.
        PaneState::Dead {
            code: None,
            signal: None,
        } => PidRecord::of_member(member)
            .and_then(|r| exit_of_unreaped(r.pid))
            .map_or(health.pane, |(code, signal)| PaneState::Dead {
                code,
                signal,
            }),
        other => other,
    };
    // Gone with no failure on record (its pane closed, or no status): a runtime that took its
    // lock during this launch came up, and was stopped before the wait looked again.
    let untold = matches!(
        pane,
        PaneState::Gone
            | PaneState::Dead {
                code: None,
                signal: None
            }
    );
    if untold && !claude && liveness::taken_since(store, team, &member.name, starting.since) {
        return Up::Yes;
    }
    match pane {
        PaneState::Dead { code: Some(0), .. } => Up::Yes,
        PaneState::Dead { code: Some(c), .. } => {
            Up::Failed(format!("its process exited with status {c}"))
        }
        PaneState::Dead {
            signal: Some(s), ..
        } => Up::Failed(format!("its process was killed by signal {s}")),
        PaneState::Dead { .. } => Up::GoneUntold,
        PaneState::Gone => Up::Failed("its pane is gone".into()),
        PaneState::Alive { .. } if claude && started => Up::Yes,
        _ if health.liveness == Liveness::Dead => {
            Up::Failed("its runtime started and exited".into())
        }
        _ => Up::NotYet,
    }
}

/// The last lines `member` printed: its pane's screen and scrollback (tmux), or its log file
/// (in-process); nothing where swarm cannot read it (iTerm2).
fn last_output(store: &Store, team: &TeamName, member: &Member) -> Vec<String> {
    let text = match for_member(store, team, member) {
        Some(b) if b.kind() == BackendKind::Tmux => b
            .tmux()
            .and_then(|t| t.capture(&PaneId(member.tmux_pane_id.clone())).ok()),
        Some(b) if b.kind() == BackendKind::InProcess => {
            fsio::read_file(&store.log_path(team, &member.name))
                .ok()
                .flatten()
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        }
        _ => None,
    };
    let Some(text) = text else {
        return vec![];
    };
    let lines: Vec<String> = text
        .lines()
        .map(str::trim_end)
        // tmux's own line under a dead pane kept by remain-on-exit.
        .filter(|l| !l.is_empty() && !l.starts_with("Pane is dead ("))
        .map(str::to_string)
        .collect();
    lines[lines.len().saturating_sub(OUTPUT_LINES)..].to_vec()
}

/// The report of teammates that did not come up, for people: one paragraph per teammate and
/// how to try again. `file` is the swarm file the launch read, if any.
pub(crate) fn report(
    team: &TeamName,
    not_up: &[NotUp],
    started: usize,
    file: Option<&str>,
) -> Vec<String> {
    let mut lines = vec![format!(
        "swarm: {} of {started} teammates of team {team} did not come up:",
        not_up.len()
    )];
    for n in not_up {
        if n.output.is_empty() {
            lines.push(format!("  {}: {} (no output to show)", n.name, n.why));
        } else {
            lines.push(format!("  {}: {}; its last output:", n.name, n.why));
        }
        for l in &n.output {
            lines.push(format!("    | {l}"));
        }
    }
    let others = match started - not_up.len() {
        0 => "None of them is running.".to_string(),
        1 => "The other one keeps running.".to_string(),
        n => format!("The other {n} keep running."),
    };
    let restart = format!(
        "`swarm restart --team {team} {}`",
        not_up.first().map_or("NAME", |n| n.name.as_str())
    );
    lines.push(match file {
        Some(f) => format!(
            "{others} To try again: `swarm up --team {team} {f}` (starts every teammate that is \
             not running) or {restart}."
        ),
        None => format!("{others} To try again: {restart}."),
    });
    lines
}
