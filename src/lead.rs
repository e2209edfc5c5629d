//! The lead console: `swarm lead --team T`.
//!
//! It is the lead's side of the protocol for a person at a terminal (the first pane of a launch)
//! or for a script (`--auto-approve`). It follows `team-lead.json` live, prints what teammates
//! say as readable coloured lines, answers the protocol (`console`), notices teammates that
//! died, and runs what the person types (`typed`). This file is its event loop: one
//! `tokio::select!` over typed lines, file events in the inboxes and `alive/` directories,
//! SIGINT/SIGTERM/SIGHUP and the fallback re-scan timer. A signal is only acted on between
//! passes, so a pass that handled messages always marks them delivered before the console exits.

pub(crate) mod agent;
mod console;
pub(crate) mod dispatch;
pub(crate) mod nudge;
mod paint;
mod questions;
mod typed;

use std::io::BufRead;
use std::time::Duration;

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::error::{Error, Result};
use crate::process::signals::Signals;
use crate::store::names::{AgentName, TeamName};
use crate::store::notes;
use crate::store::paths::Store;
use crate::store::roster::Roster;
use crate::store::watcher::{rescan_interval, Subscription};
use console::Console;
pub(crate) use console::LeadOptions;

/// After a runtime's exit is seen, one more look this soon: the kernel reports the close of its
/// lock file as it tears the descriptor down, possibly a moment before the lock is free.
const SECOND_LOOK: Duration = Duration::from_millis(150);

/// What woke the loop from the file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wake {
    /// Something was written in `inboxes/`.
    Changed,
    /// Something in `alive/` was closed after writing: a runtime may have died.
    Exited,
}

/// Runs the console until `/quit` (0), with `exit_when_done` until every teammate is inactive
/// (0), or until a signal stops it (128 + signal).
pub(crate) fn run(store: &Store, team: &TeamName, opts: LeadOptions) -> Result<i32> {
    // Its teammates would refuse every answer the console signs, and its own lead reads (and
    // empties) the same inbox.
    if Roster::new(store, team).load()?.led_by_claude() {
        return Err(Error::usage(crate::lifecycle::claude_led_notice(team)));
    }
    crate::store::authority::require_lead(store, team, "run the lead console")?;
    crate::process::block_on(follow(Console::new(store, team, opts)))
}

async fn follow(mut console: Console<'_>) -> Result<i32> {
    let mut signals = Signals::catch()?;
    let (wake, mut wakes) = unbounded_channel();
    let _inbox = watch_lead_inbox(console.store, console.team, &wake)?;
    // A dead runtime's lock release is no file event, so without this the lead would only
    // notice on its slow re-scan; the close of the lock file is one.
    let _alive = watch(&console.store.alive_dir(console.team), &wake, Wake::Exited)?;
    // A new or finished task may be one to hand out (`dispatch`). A claude teammate going idle
    // shows in its inbox (`idle_notification`) and on the re-scan; the roster itself is not
    // watched: Claude rewrites it in place, and a pass woken by that write would read it torn.
    let _tasks = watch(&console.store.tasks_dir(console.team), &wake, Wake::Changed)?;
    // `wake` itself stays alive here, so with file events off (`SWARM_NO_FS_EVENTS=1`) the
    // channel stays open and only the timer wakes the loop.
    let mut lines = typed_lines();
    console.say(&format!(
        "lead console for team {} - @name text, @* text, /status, /tasks, /shutdown [name], /help",
        console.team
    ));
    let mut look_again = false;
    let mut said = None;
    loop {
        let done = match console.pass() {
            // A roster damaged (or caught mid-write by a writer that does not lock), a link
            // or a directory planted at the lead's inbox, a lock kept fresh: looked at again
            // on the next pass (a misplaced file moved aside first, its bytes kept), said once
            // here and in `swarm status`; it never ends the console.
            Err(e @ Error::NoSuchTeam { .. }) => return Err(e),
            Err(e) => {
                let records = [console.store.inboxes_dir(console.team)];
                let text = match notes::move_aside_misplaced(&e, &records) {
                    Some(moved) => format!("{e}; moved it to {} and went on", moved.display()),
                    None => format!("{e}; looking again"),
                };
                if said.as_ref() != Some(&text) {
                    console.say(&format!("! {text}"));
                    let _ = notes::record(console.store, console.team, &AgentName::lead(), &text);
                    said = Some(text);
                }
                false
            }
            Ok(done) => done,
        };
        if done {
            console.drain_inbox()?; // the retirement notices just written
            console.say("every teammate has stopped");
            return Ok(0);
        }
        let mut wait = if look_again {
            SECOND_LOOK
        } else {
            rescan_interval()
        };
        // A question that comes due wakes the loop for its notice (`nudge`).
        if let Some(due) = console.nudge.next_due() {
            wait = wait.min(due.max(SECOND_LOOK));
        }
        look_again = false;
        tokio::select! {
            // Without input (a script, `< /dev/null`) the console keeps following.
            Some(line) = lines.recv() => {
                if !console.command(line.trim())? {
                    return Ok(0);
                }
            }
            Some(first) = wakes.recv() => {
                // One pass covers every event that piled up meanwhile.
                look_again = first == Wake::Exited;
                while let Ok(more) = wakes.try_recv() {
                    look_again |= more == Wake::Exited;
                }
            }
            caught = signals.recv() => return Ok(128 + caught.number()),
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Sends [`Wake::Changed`] into the loop's channel when the lead's own inbox changes: the
/// other inboxes are the teammates', and with 200 teammates marking and receiving messages
/// they woke the console for nothing most of the time.
fn watch_lead_inbox(
    store: &Store,
    team: &TeamName,
    wake: &UnboundedSender<Wake>,
) -> Result<Subscription> {
    let dir = store.inboxes_dir(team);
    crate::store::fsio::ensure_dir(&dir)?;
    let wake = wake.clone();
    let inbox = format!("{}.json", AgentName::lead());
    Subscription::changes_to(&dir, &inbox, move || {
        let _ = wake.send(Wake::Changed);
    })
}

/// Sends `what` into the loop's channel on every relevant change in `dir`.
fn watch(dir: &std::path::Path, wake: &UnboundedSender<Wake>, what: Wake) -> Result<Subscription> {
    crate::store::fsio::ensure_dir(dir)?;
    let wake = wake.clone();
    let send = move || {
        let _ = wake.send(what);
    };
    match what {
        Wake::Changed => Subscription::changes(dir, send),
        Wake::Exited => Subscription::exits(dir, send),
    }
}

/// The lines typed on stdin; the channel closes at end of input.
///
/// A plain thread reads them rather than `tokio::io::stdin`: tokio reads stdin with a blocking
/// read it cannot cancel, and dropping the runtime waits for that read, so the console could not
/// exit on `--exit-when-done` or a signal while its stdin stays open (a pane, a test's pipe).
/// This thread is simply left behind when the process exits.
fn typed_lines() -> UnboundedReceiver<String> {
    let (tx, rx) = unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}
