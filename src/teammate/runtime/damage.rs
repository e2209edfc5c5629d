//! Damage the runtime goes on past: one bad file must never stop a teammate.
//!
//! Any member can write the team's files, so any of them can plant a symlink or a hard link
//! where this member's inbox belongs, a symlink for a task file, a directory where its session
//! record belongs, or keep a lock fresh that the runtime waits for. Each of those used to end
//! the runtime with its error. Now a pass of the loop that fails is repaired where a repair
//! keeps every byte (a file of the wrong kind at a record's place is renamed aside, as corrupt
//! files are, where `swarm status` lists it) and otherwise waited out: the runtime says what it
//! met once in its log and in `swarm status` (`store::notes`), waits a moment and tries again.
//! Only the loss of its own event channel, which no retry can mend, still ends it.

use std::time::Duration;

use super::Runtime;
use crate::error::Error;
use crate::process::signals::Signals;
use crate::store::notes;

/// How long a failed pass waits before the next.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Whether `e` ends the runtime: only a fault of the runtime itself, not of a file.
pub(super) fn fatal(e: &Error) -> bool {
    matches!(e, Error::Backend(_))
}

impl Runtime {
    /// After a pass failed with `error`: repairs what it can, says it once, waits, and lets
    /// the loop go on. `Some(code)` when a signal came meanwhile and the runtime stopped.
    pub(super) async fn survive(&mut self, error: Error, signals: &mut Signals) -> Option<i32> {
        let repaired = self.move_aside(&error);
        let text = match &repaired {
            Some(moved) => format!("{error}; moved it to {} and went on", moved.display()),
            None => format!("{error}; going on, and trying again"),
        };
        if self.last_damage.as_deref() != Some(text.as_str()) {
            self.pane.say(format!("⚠ {text}"));
            if let Err(e) = notes::record(&self.cfg.store, &self.cfg.team, &self.cfg.name, &text) {
                self.pane
                    .say(format!("(could not note it for swarm status: {e})"));
            }
            self.last_damage = Some(text);
        }
        tokio::select! {
            caught = signals.recv() => self.interrupted(caught).await.ok(),
            () = tokio::time::sleep(RETRY_AFTER) => None,
        }
    }

    /// Moves aside a file of the wrong kind at one of the records this runtime reads: its
    /// inbox, a task, its session (see `notes::move_aside_misplaced`).
    fn move_aside(&self, error: &Error) -> Option<std::path::PathBuf> {
        let (store, team) = (&self.cfg.store, &self.cfg.team);
        let records = [
            store.inboxes_dir(team),
            store.tasks_dir(team),
            store
                .session_path(team, &self.cfg.name)
                .parent()?
                .to_path_buf(),
        ];
        notes::move_aside_misplaced(error, &records)
    }
}
