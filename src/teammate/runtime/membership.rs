//! Whether this runtime still belongs to a team: its team and its own roster entry.
//!
//! A runtime serves one member of one team. If the team is deleted (even `team delete --force`
//! while it runs) or its member is removed, whatever later appears under the same names is
//! someone else's: a new team `t` or a re-added `coder` must not be served by a runtime left
//! over from before, which would run the new team's messages. So the runtime remembers which
//! team (`createdAt`) and which member (`agentId`, `joinedAt`) it started for, looks again every
//! time it wakes (a watch on the team directory wakes it when `config.json` changes or goes),
//! and leaves when either is gone or replaced.

use super::Runtime;
use crate::error::{Error, Result};
use crate::store::roster::{Roster, TeamConfig};

/// The team and member a runtime started for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Membership {
    team_created_at: u64,
    agent_id: String,
    joined_at: u64,
}

impl Membership {
    /// The membership in `config` of `name`, if it is on the roster.
    pub(super) fn of(config: &TeamConfig, name: &str) -> Option<Membership> {
        let member = config.member(name)?;
        Some(Membership {
            team_created_at: config.created_at,
            agent_id: member.agent_id.clone(),
            joined_at: member.joined_at,
        })
    }
}

impl Runtime {
    /// Why this runtime no longer belongs to its team, if it does not.
    pub(super) fn left_team(&self) -> Result<Option<String>> {
        let (team, name) = (&self.cfg.team, &self.cfg.name);
        let config = match Roster::new(&self.cfg.store, team).load() {
            Ok(config) => config,
            Err(Error::NoSuchTeam { .. }) => return Ok(Some(format!("team {team} was deleted"))),
            // A roster that does not parse says nothing about membership: stay, and look again
            // on the next wake (a torn read must not end a teammate).
            Err(Error::InvalidRoster { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let now = Membership::of(&config, name.as_str());
        Ok(match now {
            None => Some(format!("{name} was removed from team {team}")),
            Some(now) if now.team_created_at != self.membership.team_created_at => {
                Some(format!("team {team} was deleted and created again"))
            }
            Some(now) if now != self.membership => Some(format!(
                "{name} was removed from team {team} and added again"
            )),
            Some(_) => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::team_with;

    #[test]
    fn a_member_removed_and_added_again_is_another_membership() {
        let (_dir, store, team) = team_with(&["coder"]);
        let roster = Roster::new(&store, &team);
        let before = Membership::of(&roster.load().unwrap(), "coder").unwrap();
        assert_eq!(
            Membership::of(&roster.load().unwrap(), "coder"),
            Some(before.clone())
        );
        let mut again = roster.load().unwrap();
        again.member_mut("coder").unwrap().joined_at += 1;
        assert_ne!(Membership::of(&again, "coder"), Some(before));
        assert_eq!(Membership::of(&again, "nobody"), None);
    }
}
