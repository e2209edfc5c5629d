//! How the lead console renders what it prints: names in their roster colour, text with its
//! control characters made visible, and teammates' idle notifications as sentences a person
//! reads at a glance.

use std::io::IsTerminal;

use crate::output::terminal::{visible, visible_lines};
use crate::store::colour::Colour;
use crate::store::protocol::IdleNotification;

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

/// `finished task #3 (resolved)`, `failed task #4: exit 1`, `is idle after a failed turn: exit
/// 2`, `is idle - waiting for review`.
pub(super) fn describe_idle(n: &IdleNotification) -> String {
    let mut s = match (&n.completed_task_id, n.completed_status.as_deref()) {
        (Some(id), Some("failed")) => format!(
            "failed task #{id}{}",
            n.failure_reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ),
        (Some(id), Some(status)) => format!("finished task #{id} ({status})"),
        (Some(id), None) => format!("finished task #{id}"),
        // A turn that was not a task's: say whether it worked, not just that it ended.
        _ => match n.idle_reason.as_deref() {
            Some("failed") => format!(
                "is idle after a failed turn{}",
                n.failure_reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
            Some("available") => "is idle after a successful turn".to_string(),
            _ => "is idle".to_string(),
        },
    };
    // A finished task's summary only repeats what the line already says.
    if let Some(summary) = n
        .summary
        .as_deref()
        .filter(|s| !s.is_empty() && n.completed_task_id.is_none())
    {
        s.push_str(&format!(" - {summary}"));
    }
    s
}
