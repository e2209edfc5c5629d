//! The lead's signed record that it removed a member (PROTOCOL.md section 9a): what tells a
//! runtime that `swarm team remove` took it off the roster, not a teammate's edit.
//!
//! Every member can write `config.json` (a runtime writes its own fields there), so a roster
//! without a member's entry, or with another entry under its name, proves nothing: believed, a
//! teammate that drops a peer from the file does what `swarm team remove` refuses it (issue
//! 22). So `team remove` first writes `lead/removed/<name>.<joinedAt>.json`, naming the
//! membership it ends (the team's `createdAt`, the member's `agentId` and `joinedAt`) and when,
//! signed with the lead key (`leadSig`, kind `removal`), and only then takes the entry out. A
//! runtime leaves a missing or replaced entry only when such a record verifies and names its
//! own membership. One file per membership, so a member removed, added again and removed again
//! before its first runtime looked still has the record that ends that runtime; `lead/` is
//! read-only inside a teammate's sandbox, so a teammate can neither plant nor delete one.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Member, TeamConfig};
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::lead_key::{LeadKey, LeadVerifier, REMOVAL_RECORD};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;

/// One membership the lead ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Removal {
    pub name: AgentName,
    pub team_created_at: u64,
    pub agent_id: String,
    pub joined_at: u64,
    pub removed_at: u64,
}

impl Removal {
    /// The removal of `member` from the team `config` describes, now.
    pub(crate) fn of(config: &TeamConfig, member: &Member) -> Removal {
        Removal {
            name: member.name.clone(),
            team_created_at: config.created_at,
            agent_id: member.agent_id.clone(),
            joined_at: member.joined_at,
            removed_at: fsio::now_ms(),
        }
    }

    /// Whether this removal ends the membership `(team_created_at, agent_id, joined_at)`.
    pub(crate) fn ends(&self, team_created_at: u64, agent_id: &str, joined_at: u64) -> bool {
        self.team_created_at == team_created_at
            && self.agent_id == agent_id
            && self.joined_at == joined_at
    }
}

/// Writes `key`'s signed record of `removal` from `team` (`key` is the lead's, which only a
/// process on the lead's side can load).
pub(crate) fn record(
    store: &Store,
    team: &TeamName,
    key: &LeadKey,
    removal: &Removal,
) -> Result<()> {
    let path = store.removal_path(team, &removal.name, removal.joined_at);
    fsio::ensure_dir(path.parent().expect("a removal record has a directory"))?;
    let mut value = serde_json::to_value(removal).map_err(|source| Error::Json {
        path: path.clone(),
        source,
    })?;
    key.sign_record(team.as_str(), REMOVAL_RECORD, &mut value);
    fsio::write_json(&path, &value)
}

/// The lead's removal of `name`'s membership that began at `joined_at`, if a record of it is
/// there and `verifier` says the lead signed it. A record that is unreadable or does not
/// verify is none: the membership stands.
pub(crate) fn signed(
    store: &Store,
    team: &TeamName,
    verifier: &LeadVerifier,
    name: &AgentName,
    joined_at: u64,
) -> Option<Removal> {
    let path = store.removal_path(team, name, joined_at);
    let value: Value = fsio::read_json(&path).ok().flatten()?;
    if !verifier.verifies_record(team.as_str(), REMOVAL_RECORD, &value) {
        return None;
    }
    let removal: Removal = serde_json::from_value(value).ok()?;
    (removal.name == *name).then_some(removal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::team_with;
    use crate::store::roster::Roster;

    #[test]
    fn only_the_leads_record_of_that_very_membership_counts() {
        let (_dir, store, team) = team_with(&["coder"]);
        let config = Roster::new(&store, &team).load().unwrap();
        let member = config.member("coder").unwrap().clone();
        let coder = member.name.clone();
        let key = LeadKey::from_seed([9; 32], 1);
        let verifier = LeadVerifier::of(&key);
        assert_eq!(
            signed(&store, &team, &verifier, &coder, member.joined_at),
            None
        );
        let removal = Removal::of(&config, &member);
        record(&store, &team, &key, &removal).unwrap();
        let found = signed(&store, &team, &verifier, &coder, member.joined_at).unwrap();
        assert!(found.ends(config.created_at, &member.agent_id, member.joined_at));
        assert!(!found.ends(config.created_at + 1, &member.agent_id, member.joined_at));
        // Another key's signature (a teammate's own), or any edit, is no removal.
        let other = LeadVerifier::of(&LeadKey::from_seed([3; 32], 1));
        assert_eq!(
            signed(&store, &team, &other, &coder, member.joined_at),
            None
        );
        let path = store.removal_path(&team, &coder, member.joined_at);
        let mut edited: Value = fsio::read_json(&path).unwrap().unwrap();
        edited["joinedAt"] = (member.joined_at + 1).into();
        let later = store.removal_path(&team, &coder, member.joined_at + 1);
        fsio::write_json(&later, &edited).unwrap();
        assert_eq!(
            signed(&store, &team, &verifier, &coder, member.joined_at + 1),
            None
        );
    }
}
