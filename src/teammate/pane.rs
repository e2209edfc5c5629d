//! What a teammate prints in its pane: one readable line per event, prefixed with its name in
//! its roster colour (when the pane is a terminal and `NO_COLOR` is unset). What others wrote
//! (message previews, the agent's output) has its control characters made visible, so a message
//! cannot drive the pane's terminal.
//!
//! Printing is best effort: a closed pane must not stop the runtime from finishing its protocol
//! work (approving a shutdown, returning a task), so write errors are dropped here.

use std::io::IsTerminal;

use crate::output;
use crate::output::terminal::{visible, visible_lines};
use crate::store::colour::Colour;

#[derive(Debug, Clone)]
pub(crate) struct Pane {
    prefix: String,
}

impl Pane {
    pub(crate) fn new(name: &str, color: &str) -> Pane {
        let name = visible(name);
        let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        let prefix = match Colour::named(color).map(|c| c.ansi).filter(|_| colour) {
            Some(code) => format!("\x1b[1;{code}m[{name}]\x1b[0m"),
            None => format!("[{name}]"),
        };
        Pane { prefix }
    }

    pub(crate) fn say(&self, text: impl AsRef<str>) {
        let text = text.as_ref();
        let text = text.strip_suffix('\n').unwrap_or(text);
        let _ = output::line(format!("{} {}", self.prefix, visible_lines(text)));
    }
}

/// `": text"` to end a pane line with, or nothing when there is no text.
pub(super) fn suffix(text: Option<&str>) -> String {
    text.filter(|t| !t.is_empty())
        .map(|t| format!(": {t}"))
        .unwrap_or_default()
}
