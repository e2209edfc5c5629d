//! A pane's last lines, kept before swarm closes it.
//!
//! A tmux pane's text lives only as long as the pane: a teammate that crashes at start (its
//! agent's network error, say) leaves the reason on a pane that the lead console then closes.
//! So before swarm closes a member's pane (the console retiring a dead teammate, `swarm
//! shutdown`, `down`, `kill`, `prune`) it copies the pane's last [`KEPT_LINES`] lines to
//! `teams/<t>/logs/<name>.log`, the file an in-process teammate writes its output to, where
//! `swarm logs` and the console read them once the pane is gone.

use crate::backend::{MemberBackend, PaneBackend as _, PaneState};
use crate::error::Result;
use crate::store::fsio;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::roster::Member;

/// How many of a pane's last lines are kept: enough for a stack trace or an error and the
/// commands before it.
pub(crate) const KEPT_LINES: usize = 200;

/// Copies the last lines of `member`'s tmux pane into its log; `false` when there is no pane to
/// read (not tmux, already gone, or not marked as this member's), and then the log is left as
/// it was (a pane closed earlier already left its lines there).
pub(crate) fn keep_pane_output(
    store: &Store,
    team: &TeamName,
    member: &Member,
    backend: &MemberBackend<'_>,
) -> Result<bool> {
    let (Some(tmux), Some(pane)) = (backend.tmux(), backend.pane()) else {
        return Ok(false);
    };
    if tmux.state(&pane)? == PaneState::Gone {
        return Ok(false);
    }
    let lines = trimmed_lines(&tmux.capture(&pane)?);
    let start = lines.len().saturating_sub(KEPT_LINES);
    let mut text = lines[start..].join("\n");
    text.push('\n');
    fsio::ensure_dir(&store.logs_dir(team))?;
    fsio::write_atomic(&store.log_path(team, &member.name), text.as_bytes())?;
    Ok(true)
}

/// The last `n` lines of `name`'s log with text on them (its kept pane lines, or an in-process
/// teammate's output); empty when it has none.
pub(crate) fn last_lines(
    store: &Store,
    team: &TeamName,
    name: &AgentName,
    n: usize,
) -> Vec<String> {
    let Ok(Some(bytes)) = fsio::read_file(&store.log_path(team, name)) else {
        return Vec::new();
    };
    let lines: Vec<String> = String::from_utf8_lossy(&bytes)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

/// `text`'s lines without the blank ones a pane's screen ends with.
pub(crate) fn trimmed_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    lines
}
