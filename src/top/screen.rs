//! The terminal while the dashboard owns it: raw mode and the alternate screen on, and off
//! again on every way out.
//!
//! [`Screen`] turns both on when made and off when dropped, so a return, an error and `q`
//! restore the terminal; a panic hook restores it before the panic message is printed (a
//! message drawn on the alternate screen in raw mode would vanish or smear), and SIGINT,
//! SIGTERM and SIGHUP end the event loop normally (`top.rs`), which drops the screen.
//! [`Screen::suspend`] hands the terminal back for a while (to `swarm attach`).

use std::io::{Stdout, Write};
use std::sync::Once;

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::Terminal;

use crate::error::{Error, Result};

pub(crate) type Term = Terminal<CrosstermBackend<Stdout>>;

pub(crate) struct Screen {
    pub(crate) term: Term,
}

fn failed(what: &'static str) -> impl Fn(std::io::Error) -> Error {
    move |e| Error::Io {
        action: what,
        path: "the terminal".into(),
        source: e,
    }
}

/// Raw mode and the alternate screen on, cursor hidden.
fn enter() -> std::io::Result<()> {
    terminal::enable_raw_mode()?;
    execute!(
        std::io::stdout(),
        terminal::EnterAlternateScreen,
        cursor::Hide
    )
}

/// Everything [`enter`] did, undone; safe to call when it was not done.
fn leave() {
    let mut out = std::io::stdout();
    let _ = execute!(out, terminal::LeaveAlternateScreen, cursor::Show);
    let _ = terminal::disable_raw_mode();
    let _ = out.flush();
}

impl Screen {
    pub(crate) fn open() -> Result<Screen> {
        install_panic_hook();
        if let Err(e) = enter() {
            leave();
            return Err(failed("set up")(e));
        }
        let term = Terminal::new(CrosstermBackend::new(std::io::stdout())).map_err(|e| {
            leave();
            failed("set up")(e)
        })?;
        Ok(Screen { term })
    }

    /// Gives the terminal back as it was, runs `f`, then takes it again and clears it so the
    /// next draw repaints everything.
    pub(crate) fn suspend<T>(&mut self, f: impl FnOnce() -> T) -> Result<T> {
        leave();
        let out = f();
        enter().map_err(failed("set up"))?;
        self.term.clear().map_err(failed("clear"))?;
        Ok(out)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        leave();
    }
}

/// Restores the terminal before the default hook prints the panic.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            leave();
            previous(info);
        }));
    });
}
