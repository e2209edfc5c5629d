//! `swarm debug ...`: hidden seams for the fault suite (`tests/integration/faults`), compiled only
//! with the `seams` feature, which the tests turn on; an installed swarm has none of this.
//!
//! The claims the fault suite makes are about separate OS processes (many writers on one inbox,
//! many claimers on one task list, a writer killed between its write and its acknowledgement),
//! so it needs a process that performs one store operation in a loop and says, line by line,
//! what it has finished. These commands are that process. They call the same store functions
//! the normal commands call and change nothing about them; `append --no-lock` and `claim-loop
//! --trust-index` exist only to prove the harness can fail, and `cc-append` is Claude Code's own
//! append (`claude_code.rs`, which the benchmarks in `bench/` race against too). `frame` sends
//! what only swarm itself may (lifecycle frames), for tests that play a teammate's runtime.
//! Not a stable interface.

pub mod claude_code;

use super::Context;
use crate::commands::cli::{DebugAppendArgs, DebugCommand};
use crate::error::{Error, Result};
use crate::output;
use crate::store::fsio;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::tasks::{Task, TaskIndex};

pub(crate) fn run(ctx: &Context, cmd: DebugCommand) -> Result<i32> {
    match cmd {
        DebugCommand::HoldLock { file } => {
            let _lock = crate::store::lock::FileLock::acquire(&file)?;
            output::line("locked")?;
            loop {
                std::thread::park();
            }
        }
        DebugCommand::HoldInotify { count } => {
            let held = hold_inotify(count)?;
            output::line(format!("held {}", held.len()))?;
            loop {
                std::thread::park();
            }
        }
        DebugCommand::LeadVerifyKey => {
            let team = ctx.team()?;
            let key = crate::store::lead_key::LeadKey::for_caller(&ctx.store, &team)?
                .ok_or_else(|| Error::usage("a teammate's shell has no lead key"))?;
            output::line(key.verify_key()).map(|()| 0)
        }
        DebugCommand::Frame { to, from, text } => {
            super::identity::check_acting_as(from.as_str(), "--from")?;
            let team = ctx.existing_team()?;
            let config = crate::store::roster::Roster::new(&ctx.store, &team).load()?;
            let color = config
                .member(from.as_str())
                .map(|m| m.color_or_default().to_string());
            let message = InboxMessage::new(&from, text).with_color(color);
            Mailbox::new(&ctx.store, &team).send(&to, message)?;
            Ok(0)
        }
        DebugCommand::RecordSpawn { name, pid, token } => {
            use crate::process::spawn_record::{self, SpawnToken, TOKEN_VAR};
            let team = ctx.existing_team()?;
            let token = SpawnToken::from_env(&[(TOKEN_VAR.to_string(), token)])
                .expect("the token was just given");
            spawn_record::save(&ctx.store, &team, name.as_str(), pid, &token).map(|()| 0)
        }
        DebugCommand::Append(args) => append(ctx, args).map(|()| 0),
        DebugCommand::CcAppend(args) => cc_append(ctx, args).map(|()| 0),
        DebugCommand::ClaimLoop {
            agent,
            no_busy_check,
            ready,
            step,
            trust_index,
        } => {
            let args = ClaimLoop {
                agent,
                no_busy_check,
                ready,
                step,
                trust_index,
            };
            claim_loop(ctx, &args).map(|()| 0)
        }
    }
}

/// Opens inotify instances until `count` are open or the kernel says no more (the user's
/// `fs.inotify.max_user_instances`, or the system's file table).
#[cfg(target_os = "linux")]
fn hold_inotify(count: Option<u64>) -> Result<Vec<rustix::fd::OwnedFd>> {
    use rustix::fs::inotify::{init, CreateFlags};
    let mut held = Vec::new();
    while count.is_none_or(|c| (held.len() as u64) < c) {
        match init(CreateFlags::CLOEXEC) {
            Ok(fd) => held.push(fd),
            Err(rustix::io::Errno::MFILE | rustix::io::Errno::NFILE) => break,
            Err(e) => {
                return Err(Error::Backend(format!(
                    "failed to open an inotify instance: {e}"
                )))
            }
        }
    }
    Ok(held)
}

#[cfg(not(target_os = "linux"))]
fn hold_inotify(_: Option<u64>) -> Result<Vec<()>> {
    Err(Error::usage(
        "inotify is Linux's: there are no instances to hold here",
    ))
}

/// The text of message `seq` from `writer`: what the fault tests read back.
fn message_text(writer: &str, seq: u64) -> String {
    format!("{writer}:{seq}")
}

fn append(ctx: &Context, args: DebugAppendArgs) -> Result<()> {
    let team = ctx.existing_team()?;
    let to = &args.to;
    let mailbox = Mailbox::new(&ctx.store, &team);
    for seq in args.start..args.start + args.count {
        let message = InboxMessage::new(&AgentName::lead(), message_text(&args.writer, seq));
        if args.no_lock {
            append_without_lock(&ctx.store, &team, to, message)?;
        } else {
            mailbox.send(to, message)?;
        }
        output::line(seq.to_string())?;
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
    let path = ctx.store.inbox_path(&team, &args.to);
    for seq in args.start..args.start + args.count {
        let message = InboxMessage::new(&AgentName::lead(), message_text(&args.writer, seq));
        let delivered = claude_code::append(&path, &message)
            .map_err(Error::io("append (Claude Code's way) to", &path))?;
        match delivered {
            true => output::line(seq.to_string())?,
            false => output::line(format!("fail {seq}"))?,
        }
    }
    Ok(())
}

/// The flags of `swarm debug claim-loop` (see `DebugCommand::ClaimLoop`).
struct ClaimLoop {
    agent: AgentName,
    no_busy_check: bool,
    ready: bool,
    step: bool,
    trust_index: bool,
}

/// Claims the next available task through the task index, prints its id, completes it, and
/// repeats until none is left (with `--step`, one claim per line on stdin).
fn claim_loop(ctx: &Context, args: &ClaimLoop) -> Result<()> {
    let team = ctx.team()?;
    let (who, busy_check) = (&args.agent, !args.no_busy_check);
    let mut index = TaskIndex::open(&ctx.store, &team)?;
    let snapshot = match args.trust_index {
        true => index.available()?,
        false => Vec::new(),
    };
    let mut snapshot = snapshot.into_iter();
    let mut lines = std::io::stdin().lines();
    if args.ready {
        output::line("ready")?;
        lines.next();
    }
    loop {
        if args.step && lines.next().is_none() {
            break;
        }
        let mut report = |task: &Task| output::line(task.id.to_string());
        let task = match args.trust_index {
            true => claim_without_lock(&ctx.store, &team, snapshot.next(), who)?,
            false => index.claim_and_complete(who, busy_check, &mut report)?,
        };
        match task {
            Some(_) => {}
            None if args.step => output::line("none")?,
            None => break,
        }
    }
    Ok(())
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
    task.status = crate::store::tasks::TaskStatus::Completed;
    output::line(task.id.to_string())?;
    fsio::write_json(&store.task_path(team, &task.id), &task)?;
    Ok(Some(task))
}
