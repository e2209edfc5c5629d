//! `swarm-bench runtime ...`: the seams of the runtime benchmarks (`scripts/bench-runtime`).
//!
//! The benchmarks time things that happen between separate processes: a `swarm send` process
//! and the teammate runtime (or a poll loop) that notices the message, a `swarm launch` and the
//! moment every teammate it started holds its liveness lock. A shell script cannot watch an
//! inbox for a change with millisecond resolution, so these commands do the watching, with the
//! same store functions the runtime uses, and print what they measured. `poll-inbox` is the
//! baseline: Claude Code's fixed-interval inbox poll. Not a stable interface.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use swarm::liveness::{self, Liveness};
use swarm::{
    fsio, output, AgentName, DirWatcher, Error, InboxMessage, Mailbox, Payload, Protocol, Result,
    Roster, Store, TeamName,
};

use crate::cli::RuntimeCommand;
use crate::rng::Jitter;
use crate::stats::{self, quantile, sorted};
use crate::Target;

/// How long one message may take before the measurement gives up.
const MESSAGE_TIMEOUT: Duration = Duration::from_secs(30);

/// What a runtime seam acts on: the team, and the `swarm` binary whose `send` it times.
struct Ctx<'a> {
    store: &'a Store,
    team: &'a TeamName,
    swarm: &'a Path,
}

pub(crate) fn run(target: &Target, swarm: &Path, cmd: RuntimeCommand) -> Result<i32> {
    let ctx = &Ctx {
        store: &target.store,
        team: &target.team,
        swarm,
    };
    match cmd {
        RuntimeCommand::Latency {
            to,
            count,
            stream,
            min_gap_ms,
            max_gap_ms,
        } => {
            if min_gap_ms > max_gap_ms {
                return Err(Error::usage("--min-gap-ms must not exceed --max-gap-ms"));
            }
            let gaps = (min_gap_ms, max_gap_ms);
            latency(ctx, &to, count, stream.then_some(gaps)).map(|()| 0)
        }
        RuntimeCommand::PollInbox { agent, interval_ms } => {
            poll_inbox(ctx, &agent, Duration::from_millis(interval_ms))
        }
        RuntimeCommand::WaitAlive {
            count,
            since_ms,
            timeout,
        } => wait_alive(ctx, count, since_ms, Duration::from_secs(timeout)).map(|()| 0),
    }
}

/// Milliseconds, summarised; zero, not NaN, when there are no samples (JSON has no NaN).
#[derive(Debug, Serialize)]
struct Stats {
    n: usize,
    p50_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    mean_ms: f64,
}

impl Stats {
    fn of(samples: &[Duration]) -> Stats {
        let ms = sorted(samples.iter().map(|d| stats::ms(*d)).collect());
        let pick = |q: f64| -> f64 {
            if ms.is_empty() {
                0.0
            } else {
                quantile(&ms, q)
            }
        };
        Stats {
            n: ms.len(),
            p50_ms: pick(0.50),
            p90_ms: pick(0.90),
            p99_ms: pick(0.99),
            max_ms: ms.last().copied().unwrap_or(0.0),
            mean_ms: if ms.is_empty() {
                0.0
            } else {
                ms.iter().sum::<f64>() / ms.len() as f64
            },
        }
    }
}

#[derive(Debug, Serialize)]
struct LatencyReport {
    to: String,
    mode: &'static str,
    count: usize,
    /// From starting `swarm send` to the message marked read in the inbox.
    delivered: Stats,
    /// From starting `swarm send` to the reader's `idle_notification` in the lead's inbox
    /// (sequential mode only: a runtime's whole turn).
    #[serde(skip_serializing_if = "Option::is_none")]
    idle: Option<Stats>,
    /// The `swarm send` process alone, start to exit.
    send_process: Stats,
}

/// Runs `swarm send --to NAME TEXT` as its own process, as a user or an agent would.
fn send(ctx: &Ctx, team: &TeamName, to: &AgentName, text: &str) -> Result<()> {
    let exe = ctx.swarm;
    let status = Command::new(exe)
        .arg("--root")
        .arg(ctx.store.root())
        .args([
            "--team",
            team.as_str(),
            "send",
            "--to",
            to.as_str(),
            "--",
            text,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .map_err(Error::io("run", exe))?;
    if !status.success() {
        return Err(Error::Backend(format!("swarm send exited with {status}")));
    }
    Ok(())
}

/// Texts of NAME's inbox entries that are marked read.
fn read_texts(mailbox: &Mailbox<'_>, agent: &AgentName) -> Result<Vec<String>> {
    Ok(mailbox
        .read(agent, false)?
        .into_iter()
        .filter(|m| m.read)
        .map(|m| m.text)
        .collect())
}

fn latency(ctx: &Ctx, to: &AgentName, count: usize, stream: Option<(u64, u64)>) -> Result<()> {
    let team = ctx.team;
    Roster::new(ctx.store, team).require_member(to.as_str())?;
    let dir = ctx.store.inboxes_dir(team);
    fsio::ensure_dir(&dir)?;
    // A `$ ` command, so a shell-agent teammate runs it; the comment makes each one unique.
    let tag = fsio::now_ms();
    let text = |i: usize| format!("$ true # latency {tag} {i}");
    let report = match stream {
        None => sequential(ctx, team, to, count, &text)?,
        Some(gaps) => streamed(ctx, team, to, count, gaps, &text)?,
    };
    output::json(&report)
}

/// One message at a time; the next goes after the runtime reported the previous turn done.
fn sequential(
    ctx: &Ctx,
    team: &TeamName,
    to: &AgentName,
    count: usize,
    text: &dyn Fn(usize) -> String,
) -> Result<LatencyReport> {
    let mailbox = Mailbox::new(ctx.store, team);
    let lead = AgentName::lead();
    let watcher = DirWatcher::new(&ctx.store.inboxes_dir(team))?;
    let (mut delivered, mut idle, mut sends) = (vec![], vec![], vec![]);
    // Idle notifications from earlier turns are not this run's.
    mark_idle_seen(&mailbox, &lead, to)?;
    for i in 0..count {
        let text = text(i);
        let start = Instant::now();
        send(ctx, team, to, &text)?;
        sends.push(start.elapsed());
        let deadline = start + MESSAGE_TIMEOUT;
        let mut read_at = None;
        loop {
            if read_at.is_none() && read_texts(&mailbox, to)?.contains(&text) {
                read_at = Some(start.elapsed());
            }
            if read_at.is_some() && mark_idle_seen(&mailbox, &lead, to)? > 0 {
                idle.push(start.elapsed());
                break;
            }
            if Instant::now() >= deadline {
                return Err(Error::Backend(format!(
                    "message {i} to {to} was not {} within {MESSAGE_TIMEOUT:?}",
                    if read_at.is_none() {
                        "read"
                    } else {
                        "answered with an idle_notification"
                    }
                )));
            }
            watcher.wait(Some(deadline));
        }
        delivered.extend(read_at);
    }
    Ok(LatencyReport {
        to: to.to_string(),
        mode: "sequential",
        count,
        delivered: Stats::of(&delivered),
        idle: Some(Stats::of(&idle)),
        send_process: Stats::of(&sends),
    })
}

/// Marks `from`'s unread idle notifications in the lead's inbox delivered, as a lead console
/// would (so the inbox stays small); returns how many there were.
fn mark_idle_seen(mailbox: &Mailbox<'_>, lead: &AgentName, from: &AgentName) -> Result<usize> {
    let keys: Vec<String> = mailbox
        .read(lead, true)?
        .into_iter()
        .filter(|m| m.from == from.as_str())
        .filter(|m| {
            matches!(m.payload(), Payload::Protocol(p)
                if matches!(*p, Protocol::IdleNotification(_)))
        })
        .map(|m| m.key())
        .collect();
    mailbox.mark_delivered(lead, &keys)?;
    Ok(keys.len())
}

/// Messages at random gaps without waiting for answers; a watcher thread notes when each is read.
fn streamed(
    ctx: &Ctx,
    team: &TeamName,
    to: &AgentName,
    count: usize,
    (min_gap, max_gap): (u64, u64),
    text: &dyn Fn(usize) -> String,
) -> Result<LatencyReport> {
    let pending: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let seen: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let sending = Arc::new(AtomicBool::new(true));
    let watcher = DirWatcher::new(&ctx.store.inboxes_dir(team))?;
    let observer = {
        let (pending, seen, sending) = (pending.clone(), seen.clone(), sending.clone());
        let (store, team, to) = (Store::new(ctx.store.root()), team.clone(), to.clone());
        std::thread::spawn(move || -> Result<()> {
            let mailbox = Mailbox::new(&store, &team);
            let mut last_progress = Instant::now();
            loop {
                let read = read_texts(&mailbox, &to)?;
                {
                    let mut pending = pending.lock().unwrap_or_else(|e| e.into_inner());
                    for t in read {
                        if let Some(start) = pending.remove(&t) {
                            seen.lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(start.elapsed());
                            last_progress = Instant::now();
                        }
                    }
                    if pending.is_empty() && !sending.load(Ordering::SeqCst) {
                        return Ok(());
                    }
                    if !pending.is_empty() && last_progress.elapsed() > MESSAGE_TIMEOUT {
                        return Err(Error::Backend(format!(
                            "{} messages to {to} were not read within {MESSAGE_TIMEOUT:?}",
                            pending.len()
                        )));
                    }
                }
                watcher.wait(Some(Instant::now() + Duration::from_millis(100)));
            }
        })
    };
    let jitter = Jitter::seeded();
    let mut sends = Vec::new();
    for i in 0..count {
        let text = text(i);
        let start = Instant::now();
        pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(text.clone(), start);
        send(ctx, team, to, &text)?;
        sends.push(start.elapsed());
        let gap = jitter.between(min_gap, max_gap + 1);
        std::thread::sleep(Duration::from_millis(gap));
    }
    sending.store(false, Ordering::SeqCst);
    observer
        .join()
        .map_err(|_| Error::Backend("the latency observer panicked".into()))??;
    let delivered = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(LatencyReport {
        to: to.to_string(),
        mode: "stream",
        count,
        delivered: Stats::of(&delivered),
        idle: None,
        send_process: Stats::of(&sends),
    })
}

/// Claude Code's loop: sleep, read the whole inbox, take what is unread (here: mark it read).
fn poll_inbox(ctx: &Ctx, agent: &AgentName, interval: Duration) -> Result<i32> {
    let mailbox = Mailbox::new(ctx.store, ctx.team);
    loop {
        std::thread::sleep(interval);
        let unread: Vec<String> = mailbox
            .read(agent, true)?
            .iter()
            .map(InboxMessage::key)
            .collect();
        mailbox.mark_delivered(agent, &unread)?;
    }
}

fn wait_alive(ctx: &Ctx, count: usize, since_ms: u64, timeout: Duration) -> Result<()> {
    let (store, team) = (ctx.store, ctx.team);
    let roster = Roster::new(store, team);
    let deadline = Instant::now() + timeout;
    loop {
        let config = roster.load()?;
        let mut alive = 0;
        for m in config.teammates() {
            if liveness::probe(store, team, &m.name)? == Liveness::Alive {
                alive += 1;
            }
        }
        if alive >= count {
            return output::line(format!("{}", fsio::now_ms().saturating_sub(since_ms)));
        }
        if Instant::now() >= deadline {
            return Err(Error::Backend(format!(
                "only {alive} of {count} teammates alive after {timeout:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let s = Stats::of(&samples);
        assert_eq!((s.n, s.p50_ms, s.p90_ms, s.p99_ms), (100, 50.0, 90.0, 99.0));
        assert_eq!((s.max_ms, s.mean_ms), (100.0, 50.5));
        assert_eq!(Stats::of(&[]).p99_ms, 0.0);
        assert_eq!(Stats::of(&[Duration::from_millis(7)]).p50_ms, 7.0);
    }
}
