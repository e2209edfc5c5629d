//! What `swarm relay spawn` does on a remote host for the lead's machine: starts one member
//! there as a launch starts a local one.
//!
//! It makes the member's worktree (planned by `hello`), contains the member exactly as a local
//! teammate is contained (the same [`Sandbox`], built from this host's own surroundings: its
//! `bwrap`, its private state, its tmux socket directories, among them the private tmux server
//! every remote member gets here, and the mirror's control records read-only), opens its pane
//! (`remote::local::open`, the one place a remote teammate's process starts) and answers where
//! it runs and how it is contained ([`Spawned`]). Home records that answer in the member's
//! roster field (`sandbox::FIELD`), so `swarm status` shows what the host did, never a guess.

use serde::{Deserialize, Serialize};

use super::sandbox::{Containment, Sandbox};
use crate::backend::{absolute, Launch};
use crate::error::{Error, Result};
use crate::lifecycle::worktree::Worktree;
use crate::remote::local::{self, LocalPane, SpawnSpec};
use crate::store::paths::Store;

/// `swarm relay spawn`'s answer: the member's pane here and how it is contained.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Spawned {
    #[serde(flatten)]
    pub(crate) pane: LocalPane,
    pub(crate) containment: Containment,
}

/// Starts the member `spec` names in mirror `store`.
pub(crate) fn spawn(store: &Store, spec: SpawnSpec) -> Result<Spawned> {
    if let Some(wt) = &spec.worktree {
        let wt: Worktree = serde_json::from_value(wt.clone())
            .map_err(|e| Error::usage(format!("the worktree record is invalid: {e}")))?;
        if !wt.path.is_dir() {
            wt.create()?;
        }
    }
    let mut launch = Launch {
        argv: spec.exec.argv,
        env: spec.exec.env,
        cwd: spec.exec.cwd,
        log: None,
    };
    let root = absolute(store.root());
    let containment =
        Sandbox::of_process()?.contain(&mut launch, &root, &spec.team, &spec.name, spec.sandbox)?;
    let pane = local::open(store, &spec.team, &spec.name, &spec.color, &launch)?;
    Ok(Spawned { pane, containment })
}
