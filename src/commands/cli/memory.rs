//! Arguments of `swarm memory`, the team memory every member of a team shares (PROTOCOL.md,
//! "Team memory").
//!
//! Topic names stay strings here: whether one is safe depends on the files already in the team
//! directory (symlinks), so `store::memory` checks them where it resolves them.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::store::names::AgentName;

#[derive(Debug, Subcommand)]
pub(crate) enum MemoryCommand {
    /// The topics: name, the index's one line, who wrote it and when.
    ///
    /// Example: swarm memory list --json
    List(MemoryAt),
    /// Print one topic's text.
    ///
    /// Example: swarm memory show build
    Show {
        /// The topic: a path inside the team memory directory, `.md` optional.
        name: String,
        #[command(flatten)]
        at: MemoryAt,
    },
    /// Add or replace a topic, then its line in MEMORY.md (both under the index's lock).
    ///
    /// Example: swarm memory write build "cargo build --release; tests need tmux" --description "how to build and test"
    Write(MemoryWriteArgs),
    /// Delete a topic and its index line.
    ///
    /// Example: swarm memory delete build
    Delete {
        name: String,
        #[command(flatten)]
        at: MemoryAt,
    },
}

/// Whose team memory: the project of the member acting (`$SWARM_AGENT_NAME`, else the lead).
#[derive(Debug, Args)]
pub(crate) struct MemoryAt {
    /// The member whose project it is (default: $SWARM_AGENT_NAME, else team-lead); writes
    /// are recorded in its name.
    #[arg(
        long,
        env = "SWARM_AGENT_NAME",
        default_value = "team-lead",
        value_name = "NAME"
    )]
    pub(crate) from: AgentName,
    /// The project directory instead of the member's (its git repository's main work tree,
    /// else the directory itself, keys the memory, as in Claude Code).
    #[arg(long, value_name = "DIR")]
    pub(crate) project: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct MemoryWriteArgs {
    /// The topic: a path inside the team memory directory, `.md` optional.
    pub(crate) name: String,
    /// The text; '-' reads it from standard input.
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    pub(crate) text: Option<String>,
    /// Read the text from this file.
    #[arg(long, value_name = "F")]
    pub(crate) file: Option<PathBuf>,
    /// The one line MEMORY.md shows for the topic.
    #[arg(long, value_name = "LINE")]
    pub(crate) description: String,
    #[command(flatten)]
    pub(crate) at: MemoryAt,
}
