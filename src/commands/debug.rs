//! `swarm debug ...`: hidden seams for the fault suite and the benchmarks.
//!
//! The claims those two make are about separate OS processes (many writers on one inbox, many
//! claimers on one task list, a writer killed between its write and its acknowledgement), so
//! they need a process that performs one store operation in a loop and says, line by line, what
//! it has finished. These commands are that process. They call the same store functions the
//! normal commands call and change nothing about them; `--no-lock` and `cc-append` exist only
//! to prove the harness can fail, and `cc-append` and `append --baseline` to measure the Claude
//! Code and pre-group-commit baselines. Not a stable interface.

use std::time::Instant;

use super::Context;
use crate::bench::claude_code;
use crate::bench::worker::message_text;
use crate::commands::cli::{DebugAppendArgs, DebugCommand};
use crate::error::{Error, Result};
use crate::output;
use crate::store::fsio;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::tasks::{Task, TaskIndex, TaskList, TaskPatch, TaskStatus};

pub(crate) fn run(ctx: &Context, cmd: DebugCommand) -> Result<i32> {
    match cmd {
        DebugCommand::HoldLock { file } => {
            let _lock = crate::store::lock::FileLock::acquire(&file)?;
            output::line("locked")?;
            loop {
                std::thread::park();
            }
        }
        DebugCommand::Runtime(cmd) => super::debug_runtime::run(ctx, cmd),
        DebugCommand::LeadVerifyKey => {
            let team = ctx.team()?;
            let key = crate::store::lead_key::LeadKey::for_caller(&ctx.store, &team)?
                .ok_or_else(|| Error::usage("a teammate's shell has no lead key"))?;
            output::line(key.verify_key()).map(|()| 0)
        }
        DebugCommand::Append(args) => append(ctx, args).map(|()| 0),
        DebugCommand::CcAppend(args) => cc_append(ctx, args).map(|()| 0),
        DebugCommand::ClaimLoop {
            agent,
            no_busy_check,
            max,
            baseline,
            ready,
            step,
            trust_index,
        } => {
            let args = ClaimLoop {
                agent,
                no_busy_check,
                max,
                baseline,
                ready,
                step,
                trust_index,
            };
            claim_loop(ctx, &args).map(|()| 0)
        }
    }
}

fn ack(seq: u64, started: Instant, timings: bool) -> Result<()> {
    if timings {
        output::line(format!("{seq} {}", started.elapsed().as_micros()))
    } else {
        output::line(seq.to_string())
    }
}

fn append(ctx: &Context, args: DebugAppendArgs) -> Result<()> {
    let team = ctx.existing_team()?;
    let to = &args.to;
    let mailbox = Mailbox::new(&ctx.store, &team);
    for seq in args.start..args.start + args.count {
        let message = InboxMessage::new(&AgentName::lead(), message_text(&args.writer, seq));
        let started = Instant::now();
        if args.no_lock {
            append_without_lock(&ctx.store, &team, to, message)?;
        } else if args.baseline {
            mailbox.send_baseline(to, message)?;
        } else {
            mailbox.send(to, message)?;
        }
        ack(seq, started, args.timings)?;
    }
    Ok(())
}

/// `Mailbox::append` minus the lock: read, push, atomic write. Every write is whole, so readers
/// still never see a torn file, but concurrent writers overwrite each other's messages.
fn append_without_lock(
    store: &Store,
    team: &TeamName,
    to: &AgentName,
    message: InboxMessage,
) -> Result<()> {
    let path = store.inbox_path(team, to);
    fsio::ensure_dir(&store.inboxes_dir(team))?;
    fsio::create_if_missing(&path, b"[]\n")?;
    let mut messages: Vec<InboxMessage> = fsio::read_json(&path)?.unwrap_or_default();
    messages.push(message);
    fsio::write_json(&path, &messages)
}

fn cc_append(ctx: &Context, args: DebugAppendArgs) -> Result<()> {
    let team = ctx.existing_team()?;
    let to = &args.to;
    let path = ctx.store.inbox_path(&team, to);
    for seq in args.start..args.start + args.count {
        let message = InboxMessage::new(&AgentName::lead(), message_text(&args.writer, seq));
        let started = Instant::now();
        let delivered = claude_code::append(&path, &message)
            .map_err(Error::io("append (Claude Code baseline) to", &path))?;
        if delivered {
            ack(seq, started, args.timings)?;
        } else {
            output::line(format!("fail {seq}"))?;
        }
    }
    Ok(())
}

/// The flags of `swarm debug claim-loop` (see `DebugCommand::ClaimLoop`).
struct ClaimLoop {
    agent: AgentName,
    no_busy_check: bool,
    max: Option<u64>,
    baseline: bool,
    ready: bool,
    step: bool,
    trust_index: bool,
}

/// Claims the next available task, prints its id, completes it, and repeats until none is left
/// (or `max` were claimed): through the task index, or today's path with `--baseline`.
fn claim_loop(ctx: &Context, args: &ClaimLoop) -> Result<()> {
    let team = ctx.team()?;
    let (who, busy_check) = (&args.agent, !args.no_busy_check);
    let tasks = TaskList::new(&ctx.store, &team);
    let mut index = match args.baseline {
        true => None,
        false => Some(TaskIndex::open(&ctx.store, &team)?),
    };
    let snapshot: Vec<Task> = match (&mut index, args.trust_index) {
        (Some(index), true) => index.available()?,
        _ => Vec::new(),
    };
    let mut snapshot = snapshot.into_iter();
    let mut lines = std::io::stdin().lines();
    if args.ready {
        output::line("ready")?;
        lines.next();
    }
    let mut claimed = 0;
    while args.max.is_none_or(|m| claimed < m) {
        if args.step && lines.next().is_none() {
            break;
        }
        let mut report = |task: &Task| output::line(task.id.to_string());
        let task = match &mut index {
            _ if args.trust_index => claim_without_lock(&ctx.store, &team, snapshot.next(), who)?,
            Some(index) => index.claim_and_complete(who, busy_check, &mut report)?,
            None => {
                let task = tasks.claim_next(who, busy_check)?;
                if let Some(task) = &task {
                    report(task)?;
                    tasks.update(&task.id, completed())?;
                }
                task
            }
        };
        match task {
            Some(_) => claimed += 1,
            None if args.step => output::line("none")?,
            None => break,
        }
    }
    Ok(())
}

fn completed() -> TaskPatch {
    TaskPatch {
        status: Some(TaskStatus::Completed),
        ..TaskPatch::default()
    }
}

/// The negative control: `task` as the index saw it at the start, written claimed and completed
/// with no lock and no second look.
fn claim_without_lock(
    store: &Store,
    team: &TeamName,
    task: Option<Task>,
    who: &AgentName,
) -> Result<Option<Task>> {
    let Some(mut task) = task else {
        return Ok(None);
    };
    task.owner = Some(who.to_string());
    task.status = TaskStatus::Completed;
    output::line(task.id.to_string())?;
    fsio::write_json(&store.task_path(team, &task.id), &task)?;
    Ok(Some(task))
}
