//! The team memory in a runtime teammate's prompts.
//!
//! A shell or codex teammate has no memory of its own between turns and Claude Code's loader
//! does not run in it, so the runtime hands it the team memory (`store::memory`): its first
//! turn carries a two-line guide (`swarm memory show`, `swarm memory write`) and the current
//! `MEMORY.md`, and a later turn carries the index again when it changed since the agent last
//! saw it. The index is cut where Claude Code cuts it (200 lines, 25,000 bytes). An index that
//! cannot be read safely (a link, not ours) is left out and said in the pane; the runtime never
//! writes the memory.

use super::Runtime;
use crate::store::memory::TeamMemory;
use crate::store::protocol::truncate;

/// Claude Code's limits for a loaded `MEMORY.md`.
const MAX_LINES: usize = 200;
const MAX_BYTES: usize = 25_000;

const GUIDE: &str = "\
Team memory, shared by every teammate working on this project; its index (MEMORY.md) follows.
Read a topic with `swarm memory show NAME`; add or replace one with `swarm memory write NAME \"text\" --description \"one line\"`.";

/// What the agent was last shown of the team memory.
pub(super) struct MemoryNotes {
    memory: TeamMemory,
    /// The index text last put in a prompt; `None` before the first turn.
    shown: Option<String>,
}

impl MemoryNotes {
    pub(super) fn new(memory: TeamMemory) -> MemoryNotes {
        MemoryNotes {
            memory,
            shown: None,
        }
    }
}

impl Runtime {
    /// The team memory part of the next prompt: the guide and the index on the first turn,
    /// the index on a later turn whose index differs from the one last shown, else nothing.
    pub(super) fn memory_note(&mut self, first: bool) -> Option<String> {
        let index = match self.memory.memory.index() {
            Ok(index) => index.unwrap_or_default(),
            Err(e) => {
                self.pane
                    .say(format!("team memory left out of the prompt: {e}"));
                return first.then(|| GUIDE.to_string());
            }
        };
        let changed = self.memory.shown.as_deref() != Some(index.as_str());
        self.memory.shown = Some(index.clone());
        let shown = shown_index(&index);
        if first {
            Some(format!("{GUIDE}\n{shown}"))
        } else if changed {
            Some(format!(
                "The team memory changed since your last turn; its index (MEMORY.md) now reads:\n{shown}"
            ))
        } else {
            None
        }
    }
}

/// The index as the prompt shows it: cut to Claude Code's limits, `(empty)` when there is none.
fn shown_index(index: &str) -> String {
    if index.trim().is_empty() {
        return "(empty: no topics yet)".to_string();
    }
    let lines: Vec<&str> = index.trim_end().lines().collect();
    let mut text = truncate(&lines[..lines.len().min(MAX_LINES)].join("\n"), MAX_BYTES);
    if lines.len() > MAX_LINES || text.len() < index.trim_end().len() {
        text.push_str("\n[index truncated: `swarm memory list` shows every topic]");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_is_cut_where_claude_code_cuts_it() {
        assert_eq!(shown_index(""), "(empty: no topics yet)");
        assert_eq!(shown_index("- [a](a.md) — x\n"), "- [a](a.md) — x");
        let long: String = (0..300)
            .map(|i| format!("- [t{i}](t{i}.md) — d\n"))
            .collect();
        let shown = shown_index(&long);
        assert_eq!(shown.lines().count(), MAX_LINES + 1);
        assert!(shown.ends_with("shows every topic]"));
    }
}
