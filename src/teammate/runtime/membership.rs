//! Whether this runtime still belongs to a team: its team and its own roster entry.
//!
//! A runtime serves one member of one team. If the team is deleted (even `team delete --force`
//! while it runs) or its member is removed, whatever later appears under the same names is
//! someone else's: a new team `t` or a re-added `coder` must not be served by a runtime left
//! over from before, which would run the new team's messages. So the runtime remembers which
//! team (`createdAt`) and which member (`agentId`, `joinedAt`) it started for, looks again every
//! time it wakes (a watch on the team directory wakes it when `config.json` changes or goes),
//! and leaves when either is gone or replaced.
//!
//! But every member can write `config.json`, so a missing or replaced entry alone would let a
//! teammate remove a peer, which `swarm team remove` refuses it (issue 22). In a team whose
//! lead is swarm's (its published key is the one this runtime checks lead records with), the
//! runtime leaves its entry's loss only when the lead's signed removal record of its own
//! membership is there (`store::roster::removal`); otherwise it stays, puts its entry back as
//! it last saw it (so `swarm down`, `kill` and `status` still find it) and notes the edit for
//! `swarm status`. A runtime that knows no such key (a Claude Code lead's team, one started
//! without `--lead-verify-key`) cannot tell the lead's removal from an edit and leaves as
//! before.

use super::Runtime;
use crate::error::{Error, Result};
use crate::store::authority;
use crate::store::fsio::Stamp;
use crate::store::notes;
use crate::store::roster::removal;
use crate::store::roster::{Member, Roster, TeamConfig};

/// The team and member a runtime started for.
#[derive(Debug, Clone)]
pub(super) struct Membership {
    team_created_at: u64,
    agent_id: String,
    joined_at: u64,
    /// Its roster entry as last seen, put back when an edit no lead signed takes it out.
    entry: Member,
    /// Whether such an edit was noted for `swarm status` already.
    edit_noted: bool,
    /// The roster file as last read: unchanged, it says nothing new and is not parsed again.
    seen: Option<Stamp>,
}

impl Membership {
    /// The membership in `config` of `name`, if it is on the roster.
    pub(super) fn of(config: &TeamConfig, name: &str) -> Option<Membership> {
        let member = config.member(name)?;
        Some(Membership {
            team_created_at: config.created_at,
            agent_id: member.agent_id.clone(),
            joined_at: member.joined_at,
            entry: member.clone(),
            edit_noted: false,
            seen: None,
        })
    }

    /// This membership as found in the roster file whose stamp was `seen`
    /// (`Roster::load_if_changed`): the first look of the loop need not parse it again.
    pub(super) fn read_at(mut self, seen: Option<Stamp>) -> Membership {
        self.seen = seen;
        self
    }

    /// Whether `other` is this very membership (its entry's other fields may change).
    fn same(&self, other: &Membership) -> bool {
        self.team_created_at == other.team_created_at
            && self.agent_id == other.agent_id
            && self.joined_at == other.joined_at
    }
}

impl Runtime {
    /// Why this runtime no longer belongs to its team, if it does not.
    pub(super) fn left_team(&mut self) -> Result<Option<String>> {
        let (team, name) = (&self.cfg.team, &self.cfg.name);
        // Trusted only while the last look found this very membership: any other outcome is
        // looked at again (a removal record may come after the roster's edit).
        let mut seen = self.membership.seen.take();
        let config = match Roster::new(&self.cfg.store, team).load_if_changed(&mut seen) {
            Ok(Some(config)) => config,
            // The file as last read, when this runtime was still a member.
            Ok(None) => {
                self.membership.seen = seen;
                return Ok(None);
            }
            Err(Error::NoSuchTeam { .. }) => return Ok(Some(format!("team {team} was deleted"))),
            // A roster that does not parse says nothing about membership: stay, and look again
            // on the next wake (a torn read must not end a teammate).
            Err(Error::InvalidRoster { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let why = match Membership::of(&config, name.as_str()) {
            Some(now) if now.same(&self.membership) => {
                self.membership.entry = now.entry;
                self.membership.seen = seen;
                return Ok(None);
            }
            Some(now) if now.team_created_at != self.membership.team_created_at => {
                return Ok(Some(format!("team {team} was deleted and created again")));
            }
            None => format!("{name} was removed from team {team}"),
            Some(_) => format!("{name} was removed from team {team} and added again"),
        };
        if self.removed_by_the_lead() {
            return Ok(Some(why));
        }
        self.restore_entry()?;
        Ok(None)
    }

    /// Whether the lead removed this very membership, as far as this runtime can tell: its
    /// signed removal record is there, or the runtime knows no key of a swarm lead to check one
    /// with (then a missing entry is all it has, as before removal records).
    fn removed_by_the_lead(&self) -> bool {
        let (store, team) = (&self.cfg.store, &self.cfg.team);
        let Some(verifier) = self
            .cfg
            .lead_key
            .as_ref()
            .filter(|v| authority::publishes(store, team, v))
        else {
            return true;
        };
        let m = &self.membership;
        removal::signed(store, team, verifier, &self.cfg.name, m.joined_at)
            .is_some_and(|r| r.ends(m.team_created_at, &m.agent_id, m.joined_at))
    }

    /// Puts this member's entry back as last seen, unless the lead removed it meanwhile (the
    /// next look then leaves), and says so: in the pane each time, for `swarm status` once.
    fn restore_entry(&mut self) -> Result<()> {
        let roster = Roster::new(&self.cfg.store, &self.cfg.team);
        let entry = self.membership.entry.clone();
        let restored = roster.update(|config| {
            if self.removed_by_the_lead() {
                return Ok(false);
            }
            match config.member_mut(entry.name.as_str()) {
                Some(m) => *m = entry.clone(),
                None => config.members.push(entry.clone()),
            }
            Ok(true)
        })?;
        if !restored {
            return Ok(());
        }
        let text = format!(
            "my roster entry in {} was removed or replaced without the lead's signed removal \
             record (a teammate's edit?); staying, and put it back (only `swarm team remove {}` \
             from the lead's shell removes a member)",
            self.cfg.store.config_path(&self.cfg.team).display(),
            self.cfg.name
        );
        self.pane.say(&text);
        if !self.membership.edit_noted {
            self.membership.edit_noted = true;
            if let Err(e) = notes::record(&self.cfg.store, &self.cfg.team, &self.cfg.name, &text) {
                self.pane
                    .say(format!("(could not note it for swarm status: {e})"));
            }
        }
        Ok(())
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
        let mut busy = roster.load().unwrap();
        busy.member_mut("coder").unwrap().is_active = Some(false);
        assert!(Membership::of(&busy, "coder").unwrap().same(&before));
        let mut again = roster.load().unwrap();
        again.member_mut("coder").unwrap().joined_at += 1;
        assert!(!Membership::of(&again, "coder").unwrap().same(&before));
        assert!(Membership::of(&again, "nobody").is_none());
    }
}
