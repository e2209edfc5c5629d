//! Who may act as a team's lead: the process that can use the team's lead key, and no other.
//!
//! Killing a member, removing or adding one, deleting, pruning or taking a team down, deciding
//! a permission or plan request, shutting teammates down and ending the team are the lead's to
//! do (issue 22, item 3; issue 28, item 11: the roster stays flat). Every teammate runs as the
//! user's uid with `SWARM_AGENT_NAME` in its environment, and it can set that variable to
//! anything, so an environment variable grants nothing here: it can only take rights away (a
//! process in a teammate's environment is refused outright). What counts is being able to load
//! the team's lead key from this process's state directory (`store::lead_key`), which a
//! contained teammate cannot read. And because a process can point `XDG_STATE_HOME` anywhere
//! and make a key of its own there, the lead side also publishes the public half of the team's
//! key in the team's `lead/` directory (read-only to a contained teammate): a process whose key
//! is not that one is refused too.
//!
//! A team with no published key (one a Claude Code lead made, or one from before swarm
//! published keys) is adopted by the first lead-only command run outside any teammate's
//! environment: it makes (or loads) the key and publishes it, after which the rule above holds.
//! A process that cannot write `lead/` (a contained teammate) cannot adopt a team.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::lead_key::{LeadKey, LeadVerifier};
use crate::store::names::{TeamName, LEAD};
use crate::store::paths::Store;
use crate::store::roster::Roster;

/// The published public half of the team's lead key (`lead/verify-key.json`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Published {
    /// `--lead-verify-key` form, `<ms>.<base64url SPKI DER>`; only the key part is compared.
    lead_verify_key: String,
}

/// Refuses `what` (said as "refusing to {what}") unless this process is team `team`'s lead:
/// not in a teammate's environment, not on a remote host's mirror, and able to load the lead
/// key the team published (or, for a team that published none yet, to adopt it).
pub(crate) fn require_lead(store: &Store, team: &TeamName, what: &str) -> Result<()> {
    let refuse = |why: String| Error::NotTheLead {
        what: what.to_string(),
        team: team.to_string(),
        why,
    };
    if let Some(me) = teammate_environment() {
        return Err(refuse(format!(
            "runs in teammate {me:?}'s environment (SWARM_AGENT_NAME={me})"
        )));
    }
    if store.mirror_marker_path(team).exists() {
        return Err(refuse(
            "works on a remote host's copy of the team, and the lead key never leaves the \
             lead's machine"
                .into(),
        ));
    }
    // No team, nothing to protect: the command itself says the team does not exist (or, for a
    // launch, makes it and then publishes its key).
    if !Roster::new(store, team).exists() {
        return Ok(());
    }
    let published = published_key(store, team)?;
    if published.is_some() && !LeadKey::exists(store, team)? {
        return Err(refuse(format!(
            "has no copy of the team's lead key in its state directory \
             ($XDG_STATE_HOME/swarm/lead-keys, else ~/.local/state/swarm/lead-keys); if the \
             lead's key itself was lost, remove {} from the lead's shell and run the command \
             again to make a new one",
            store.lead_verify_key_path(team).display()
        )));
    }
    let key = match LeadKey::for_caller(store, team) {
        Ok(Some(key)) => key,
        Ok(None) => return Err(refuse("may not load the team's lead key".into())),
        Err(e) => return Err(refuse(format!("cannot use the team's lead key ({e})"))),
    };
    match published {
        Some(p) if key_part(&p) == key_part(&key.verify_key_at(0)) => Ok(()),
        Some(_) => Err(refuse(
            "holds a lead key, but not the one the team published (lead/verify-key.json)".into(),
        )),
        None => publish(store, team, &key).map_err(|e| {
            refuse(format!(
                "cannot publish the team's lead key, which a team without one needs first ({e})"
            ))
        }),
    }
}

/// Publishes `key` as team `team`'s lead key unless one is published already (never replaced:
/// a published key is changed only by removing the file from the lead's shell). Called where
/// the lead side makes the key: `team create` and a launch.
pub(crate) fn publish(store: &Store, team: &TeamName, key: &LeadKey) -> Result<()> {
    let path = store.lead_verify_key_path(team);
    fsio::ensure_dir(path.parent().expect("under the team dir"))?;
    let body = Published {
        lead_verify_key: key.verify_key(),
    };
    let mut bytes = serde_json::to_vec_pretty(&body).expect("a string serializes");
    bytes.push(b'\n');
    fsio::write_new(&path, &bytes).map(drop)
}

/// Whether `verifier` checks the key team `team` published: then the team's lead is swarm's
/// lead side, which signs the records `verifier` checks (a Claude Code lead's own key, or a
/// team that published none, is not).
pub(crate) fn publishes(store: &Store, team: &TeamName, verifier: &LeadVerifier) -> bool {
    published_key(store, team)
        .ok()
        .flatten()
        .is_some_and(|p| key_part(&p) == key_part(&verifier.value()))
}

/// The published key, if any; a damaged file counts as a published key no one holds.
fn published_key(store: &Store, team: &TeamName) -> Result<Option<String>> {
    let path = store.lead_verify_key_path(team);
    let Some(bytes) = fsio::read_file(&path)? else {
        return Ok(None);
    };
    Ok(Some(
        serde_json::from_slice::<Published>(&bytes)
            .map(|p| p.lead_verify_key)
            .unwrap_or_default(),
    ))
}

/// The SPKI part of a `<ms>.<spki>` verify key (the time differs between two writes of it).
fn key_part(verify_key: &str) -> &str {
    verify_key.split_once('.').map_or("", |(_, k)| k)
}

/// The teammate whose environment this process runs in, if `SWARM_AGENT_NAME` names one.
fn teammate_environment() -> Option<String> {
    std::env::var("SWARM_AGENT_NAME")
        .ok()
        .filter(|name| !name.is_empty() && name != LEAD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_or_foreign_published_key_matches_no_key() {
        let key = LeadKey::from_seed([7; 32], 1);
        let other = LeadKey::from_seed([8; 32], 1);
        assert_eq!(
            key_part(&key.verify_key_at(5)),
            key_part(&key.verify_key_at(9))
        );
        assert_ne!(
            key_part(&key.verify_key_at(5)),
            key_part(&other.verify_key_at(5))
        );
        assert_ne!(key_part(""), key_part(&key.verify_key_at(0)));
    }
}
