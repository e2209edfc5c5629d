//! The store: the on-disk protocol shared with Claude Code's agent teams (PROTOCOL.md
//! sections 1-9).
//!
//! Everything swarm knows about a team lives in files under one root: the roster, one JSON
//! inbox per agent, one JSON file per task, requests to the lead and their decisions, liveness
//! locks. This wing owns reading and writing them safely (atomic replaces, the Claude Code lock
//! protocol, quarantine of damaged files) and nothing else: it starts no process and knows no
//! backend, so every other wing can depend on it.

pub mod authority;
pub mod colour;
#[cfg(test)]
pub mod fixture;
pub mod fsio;
pub mod guard;
pub mod lead_key;
pub mod liveness;
pub mod lock;
pub mod machine;
pub mod mailbox;
pub mod memory;
pub mod names;
pub mod notes;
pub mod paths;
pub mod private_state;
pub mod process_id;
pub mod protocol;
pub(crate) mod requests;
pub mod roster;
pub mod tasks;
pub(crate) mod usage;
pub mod watcher;
