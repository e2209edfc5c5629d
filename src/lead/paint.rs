//! How the lead console renders what it prints: names in their roster colour, text with its
//! control characters made visible (lifecycle frames are sentences from
//! `Protocol::describe`).

use std::io::IsTerminal;

use crate::output::terminal::{visible, visible_lines};
use crate::store::colour::Colour;

/// ANSI colours for names, only on a terminal and without NO_COLOR.
pub(super) struct Paint {
    on: bool,
}

impl Paint {
    pub(super) fn detect() -> Paint {
        Paint {
            on: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    /// `name` (control characters made visible) in its roster colour.
    pub(super) fn name(&self, name: &str, color: &str) -> String {
        let name = visible(name);
        if !self.on {
            return name.into_owned();
        }
        let code = Colour::named(color).map_or("1", |c| c.ansi);
        format!("\x1b[{code}m{name}\x1b[0m")
    }
}

/// `text` as the console prints it: control characters made visible, and the lines after the
/// first indented, so no line of a teammate's text passes for a line of the console's own.
pub(super) fn shown(text: &str) -> String {
    visible_lines(text).replace('\n', "\n  ")
}
