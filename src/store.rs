//! The store: the on-disk protocol shared with Claude Code's agent teams (PROTOCOL.md
//! sections 1-9).
//!
//! Everything swarm knows about a team lives in files under one root: the roster, one JSON
//! inbox per agent, one JSON file per task, requests to the lead and their decisions, liveness
//! locks. This wing owns reading and writing them safely (atomic replaces, the Claude Code lock
//! protocol, quarantine of damaged files) and nothing else: it starts no process and knows no
//! backend, so every other wing can depend on it.

pub(crate) mod authority;
pub(crate) mod colour;
#[cfg(test)]
pub(crate) mod fixture;
pub(crate) mod fsio;
pub(crate) mod guard;
pub(crate) mod lead_key;
pub(crate) mod liveness;
pub(crate) mod lock;
pub(crate) mod machine;
pub(crate) mod mailbox;
pub(crate) mod memory;
pub(crate) mod names;
pub(crate) mod notes;
pub(crate) mod paths;
pub(crate) mod private_state;
pub(crate) mod process_id;
pub(crate) mod protocol;
pub(crate) mod requests;
pub(crate) mod roster;
pub(crate) mod shutdown_ask;
pub(crate) mod tasks;
pub(crate) mod usage;
pub(crate) mod watcher;
