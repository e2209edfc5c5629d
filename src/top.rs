//! `swarm top`: a live, full-screen view of one team, and `swarm status --watch`, its line
//! printing twin.
//!
//! The dashboard reads the team (`model`), draws it (`view`), turns keys into actions
//! (`input`) and carries them out through the code the rest of swarm uses (`actions`; a
//! request is decided by `store::requests`, as everywhere). This file is its event loop: one
//! `tokio::select!` over keys (read on a thread of their own), file events in the team's
//! directories (`wakes`), the outcome of a shutdown running in the background, and
//! SIGINT/SIGTERM/SIGHUP. There is no timer: with nothing changing on disk and no key pressed the
//! process sleeps, and the team costs it no CPU. The terminal is restored on every way out
//! (`screen`).

mod actions;
mod input;
mod last_line;
mod lines;
mod model;
mod screen;
mod view;
mod wakes;

use std::sync::mpsc as std_mpsc;

use ratatui::crossterm::event::{self, Event};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use crate::error::{Error, Result};
use crate::process::signals::{Caught, Signals};
use crate::store::names::TeamName;
use crate::store::paths::Store;
use actions::Actor;
use input::{Action, Ui};
use model::Model;
use screen::Screen;
use wakes::Wakes;

/// How long signals caught during `swarm attach` take to show up once the loop runs again.
const SIGNAL_SETTLE: std::time::Duration = std::time::Duration::from_millis(100);

/// Runs the dashboard until `q` (0) or a signal (128 + its number).
pub(crate) fn dashboard(store: &Store, team: &TeamName) -> Result<i32> {
    crate::process::block_on(run_dashboard(store, team))
}

/// Prints a line per change until a signal ends it (128 + its number).
pub(crate) fn watch_lines(store: &Store, team: &TeamName, json: bool) -> Result<i32> {
    crate::process::block_on(async {
        let mut signals = Signals::catch()?;
        let mut wakes = Wakes::watch(store, team)?;
        let mut printer = lines::Printer::new(json);
        loop {
            printer.print(&Model::load(store, team, false)?)?;
            tokio::select! {
                () = wakes.next() => {}
                caught = signals.recv() => return Ok(128 + caught.number()),
            }
        }
    })
}

async fn run_dashboard(store: &Store, team: &TeamName) -> Result<i32> {
    let mut signals = Signals::catch()?;
    let mut wakes = Wakes::watch(store, team)?;
    let (finished_tx, mut finished) = unbounded_channel();
    let actor = Actor {
        store,
        team,
        finished: finished_tx,
    };
    let mut model = Model::load(store, team, true)?;
    let mut ui = Ui::default();
    let mut screen = Screen::open()?;
    let (mut keys, more_keys) = key_reader();
    loop {
        ui.clamp(&model);
        screen
            .term
            .draw(|frame| view::draw(frame, &model, &ui))
            .map_err(|e| Error::Io {
                action: "draw",
                path: "the terminal".into(),
                source: e,
            })?;
        tokio::select! {
            Some(ev) = keys.recv() => {
                let Event::Key(key) = ev else {
                    continue; // a resize: drawn again at the top of the loop
                };
                let action = ui.key(key, &model);
                match action {
                    Action::Quit => return Ok(0),
                    Action::Redraw => {}
                    Action::Refresh => model = Model::load(store, team, true)?,
                    Action::Attach(name) => {
                        ui.notice = Some(actor.attach(&mut screen, &name));
                        // A Ctrl-C that ended `swarm attach` (a log follow) reached the whole
                        // foreground group; it was meant for the attach, not the dashboard.
                        if let Some(caught) = caught_meanwhile(&mut signals).await {
                            return Ok(128 + caught.number());
                        }
                        model = Model::load(store, team, true)?;
                    }
                    Action::Send { to, text } => ui.notice = Some(actor.send(&to, &text)),
                    Action::Decide { id, approve, feedback } => {
                        ui.notice = Some(actor.decide(&model, &id, approve, feedback));
                    }
                    Action::Shutdown(name) => ui.notice = Some(actor.shutdown(&name)),
                    Action::Interrupt(name) => ui.notice = Some(actor.interrupt(&name)),
                }
                // Only now may the reader take the next key: while `swarm attach` ran, the
                // terminal's input was the attached client's, not the dashboard's.
                let _ = more_keys.send(());
            }
            () = wakes.next() => model = Model::load(store, team, true)?,
            Some(line) = finished.recv() => ui.notice = Some(line),
            caught = signals.recv() => return Ok(128 + caught.number()),
        }
    }
}

/// The first signal other than SIGINT caught while the terminal was handed over, if any;
/// SIGINTs caught meanwhile are dropped. A signal that arrived while the loop was blocked
/// reaches its listener only once the runtime turns, hence the short wait rather than a peek.
async fn caught_meanwhile(signals: &mut Signals) -> Option<Caught> {
    while let Ok(caught) = tokio::time::timeout(SIGNAL_SETTLE, signals.recv()).await {
        if caught != Caught::Interrupt {
            return Some(caught);
        }
    }
    None
}

/// Terminal events, read on a thread of their own one at a time: the reader waits for a go
/// (sent once the previous key has been acted on) before it reads the next, so it never
/// competes with a program the dashboard handed the terminal to. The thread is left behind
/// when the dashboard returns.
fn key_reader() -> (UnboundedReceiver<Event>, std_mpsc::Sender<()>) {
    let (tx, rx) = unbounded_channel();
    let (go, permits) = std_mpsc::channel::<()>();
    std::thread::spawn(move || loop {
        let Ok(ev) = event::read() else { return };
        let is_key = matches!(ev, Event::Key(_));
        if tx.send(ev).is_err() {
            return;
        }
        if is_key && permits.recv().is_err() {
            return;
        }
    });
    (rx, go)
}
