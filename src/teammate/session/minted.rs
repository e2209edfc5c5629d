//! Which conversation ids swarm itself gave a member: only those are resumed.
//!
//! `teams/<team>/sessions/<name>.json` is in the team directory, which every teammate can
//! write, so a teammate could put a conversation id of its choosing into the lead's or a
//! peer's file, and the next turn there would resume a conversation the teammate prepared.
//! So every id swarm mints (or reads back from the CLI's own output, for a CLI that names its
//! conversation) is also recorded in swarm's private state,
//! `$XDG_STATE_HOME/swarm/sessions/<hash of root, team and member>.json`, and an id in the
//! team's file is resumed only when that record names it. Where the private state cannot be
//! reached at all (a contained teammate, whose sandbox hides it and makes other members'
//! session files read-only instead), the team's file is taken as it is, and that is said.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::{fsio, private_state};

/// What the private record says about an id found in the team's file.
#[derive(Debug, PartialEq)]
pub(super) enum Bound {
    /// swarm gave this member this id.
    Yes,
    /// swarm did not: someone else wrote it.
    No,
    /// The private state cannot be read here: why.
    Unknown(String),
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    adapter: String,
    session_id: String,
}

fn record_path(store: &Store, team: &TeamName, name: &AgentName) -> Result<PathBuf> {
    let file = private_state::team_key(store, team, &[name.as_str()]);
    let dir = private_state::dir()?.join("sessions");
    fsio::ensure_dir(&dir)?;
    Ok(dir.join(format!("{file}.json")))
}

/// Whether swarm gave `name` the conversation `id` of `adapter`.
pub(super) fn bound(
    store: &Store,
    team: &TeamName,
    name: &AgentName,
    adapter: &str,
    id: &str,
) -> Bound {
    let record = record_path(store, team, name).and_then(|path| fsio::read_json::<Record>(&path));
    match record {
        Ok(Some(r)) if r.adapter == adapter && r.session_id == id => Bound::Yes,
        Ok(_) => Bound::No,
        Err(e) => Bound::Unknown(e.to_string()),
    }
}

/// Records that swarm gave `name` the conversation `id`. A private state that cannot be
/// written is no reason to stop a turn: the id is then just not resumed by a later runtime.
pub(super) fn record(store: &Store, team: &TeamName, name: &AgentName, adapter: &str, id: &str) {
    let written = record_path(store, team, name).and_then(|path| {
        fsio::write_json(
            &path,
            &Record {
                adapter: adapter.to_string(),
                session_id: id.to_string(),
            },
        )
    });
    if let Err(e) = written {
        eprintln!("swarm: warning: could not record conversation {id} for {name}: {e}");
    }
}
