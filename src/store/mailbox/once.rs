//! Sends that may be retries: a broadcast run again, and a message whose sender chose its
//! `msg_id` (`swarm send --id`) so that it can send it again.
//!
//! A sender that was not told how its send went (it exited 1 or 3, see `fsio::unconfirmed`, or
//! was killed) can only know its message arrived by sending again, and that must not store it
//! twice. So these sends are decided under the inbox lock, on the parsed array, by `msg_id`: a
//! broadcast's copies have ids derived from the broadcast (its words, or the id its sender
//! chose) and each recipient, and a copy or message whose id the inbox holds already is not
//! added again. They give up the group commit's splice for that one parse: a retry is rare, a
//! duplicate in a teammate's inbox is a second turn spent on the same words.

use std::path::Path;

use super::file::last_keys;
use super::{check_room, check_size, InboxMessage, Mailbox, KEEP_DELIVERED};
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::names::AgentName;
use crate::store::roster::{Member, Roster};

impl Mailbox<'_> {
    /// [`Mailbox::send_to`] for a sender that chose the message's `msg_id` (`swarm send --id`)
    /// so that it can send again, after exit 1 or 3, without the message being stored twice:
    /// nothing is added while the inbox holds that id, read or not (the live file, and the last
    /// [`KEEP_DELIVERED`] entries of the archive).
    pub fn send_once_to(&self, to: &Member, message: InboxMessage) -> Result<()> {
        check_size(&message)?;
        self.append_once(&to.name, message, Again::Skip)
    }

    /// Sends a copy to every member but the sender; returns who got it. One bad inbox does not
    /// stop the others: every good inbox gets its copy and the error names the ones that did
    /// not. Each copy's `msg_id` comes from the broadcast and its recipient, so running the same
    /// broadcast again (after a partial failure) skips recipients who have it unread.
    pub fn broadcast(&self, message: InboxMessage) -> Result<Vec<AgentName>> {
        let key = broadcast_key(&[
            self.team.as_str(),
            message.from.as_str(),
            message.summary.as_deref().unwrap_or(""),
            &message.text,
        ]);
        self.broadcast_keyed(message, key, Again::SkipUnread)
    }

    /// [`Mailbox::broadcast`] for a sender that chose the `msg_id`: the copies' ids come from it
    /// (and each recipient), and a copy is skipped where its id is held, read or not, as by
    /// [`Mailbox::send_once_to`].
    pub fn broadcast_once(&self, message: InboxMessage) -> Result<Vec<AgentName>> {
        let id = message.msg_id.clone().unwrap_or_default();
        let key = broadcast_key(&[self.team.as_str(), message.from.as_str(), "msg_id", &id]);
        self.broadcast_keyed(message, key, Again::Skip)
    }

    fn broadcast_keyed(
        &self,
        message: InboxMessage,
        broadcast: u128,
        again: Again,
    ) -> Result<Vec<AgentName>> {
        check_size(&message)?;
        let config = Roster::new(self.store, self.team).load()?;
        let (mut sent, mut failed) = (Vec::new(), Vec::new());
        for to in config.members.iter().map(|m| &m.name) {
            if *to == message.from {
                continue;
            }
            let mut copy = message.clone();
            copy.msg_id = Some(copy_id(broadcast, to));
            match self.append_once(to, copy, again) {
                Ok(()) => sent.push(to.clone()),
                Err(e) => failed.push((to.to_string(), e.to_string())),
            }
        }
        if failed.is_empty() {
            return Ok(sent);
        }
        Err(Error::BroadcastIncomplete {
            delivered: sent.iter().map(|a| a.to_string()).collect(),
            failed,
        })
    }

    /// `append` unless the inbox already holds this `msg_id` (`again` says when it counts; the
    /// caller checked the size). Held already, it is not written again, but the inbox's
    /// directory is synced: the attempt that stored it may have ended "not confirmed durable"
    /// (`fsio::unconfirmed`), and this sync confirms it.
    fn append_once(&self, to: &AgentName, message: InboxMessage, again: Again) -> Result<()> {
        let path = self.prepare(to)?;
        check_room(&path, &message)?;
        let archive = self.store.archive_path(self.team, to);
        let mut message = Some(message);
        let mut held = false;
        self.commit_with_lock(to, &path, &mut |messages| {
            let Some(mut message) = message.take() else {
                return Ok(false);
            };
            let prior = messages.iter().find(|m| m.msg_id == message.msg_id);
            held = match (again, prior) {
                (Again::SkipUnread, Some(prior)) if prior.read => {
                    message.msg_id = Some(uuid::Uuid::new_v4().to_string());
                    false
                }
                (_, Some(_)) => true,
                (Again::Skip, None) => {
                    last_keys(&archive, KEEP_DELIVERED)?.contains(&message.key())
                }
                (Again::SkipUnread, None) => false,
            };
            if held {
                return Ok(false);
            }
            self.sign_if_lead(to, &mut message)?;
            messages.push(message);
            Ok(true)
        })?;
        if held {
            fsio::sync_dir(path.parent().unwrap_or(Path::new(".")));
        }
        Ok(())
    }
}

/// What a send that may be a retry does when the inbox already holds its `msg_id`.
#[derive(Debug, Clone, Copy)]
enum Again {
    /// A broadcast run again: skipped while unread; a copy already read gives way to a fresh
    /// id, since the same words broadcast again later are a new message.
    SkipUnread,
    /// An id the sender chose: skipped, read or not, since it is the same message again.
    Skip,
}

/// 128 bits identifying one broadcast from `parts` (the team, the sender and the words, or the
/// id the sender chose). FNV-1a, twice with different offsets, because it must be the same in
/// every process and every build.
fn broadcast_key(parts: &[&str]) -> u128 {
    let mut halves = [0xcbf2_9ce4_8422_2325_u64, 0x6c62_272e_07bb_0142];
    for h in &mut halves {
        for part in parts {
            for b in part.bytes().chain([0xff]) {
                *h = (*h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    (u128::from(halves[0]) << 64) | u128::from(halves[1])
}

/// The `msg_id` of one recipient's copy of a broadcast, shaped like the UUIDs of other messages.
fn copy_id(broadcast: u128, to: &AgentName) -> String {
    let mut h = broadcast;
    for b in to.as_str().to_ascii_lowercase().bytes() {
        h = (h ^ u128::from(b)).wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    uuid::Uuid::from_u128(h).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::agent;
    use crate::store::names::TeamName;
    use crate::store::paths::Store;

    /// A message sent again with its id is stored once: unread, read, and after it moved to
    /// the archive; another id with the same words is another message.
    #[test]
    fn a_message_sent_again_with_its_id_is_stored_once_even_once_archived() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let coder = agent("coder");
        Roster::new(&store, &team).create("", "/", "").unwrap();
        let member = Member::teammate(&team, &coder, "blue", "/");
        Roster::new(&store, &team)
            .add_member(member.clone())
            .unwrap();
        let mb = Mailbox::new(&store, &team);
        let with_id = |id: &str| {
            let mut m = InboxMessage::new(&AgentName::lead(), "report");
            m.msg_id = Some(id.into());
            m
        };
        let count = |id: &str| {
            mb.history(&coder)
                .unwrap()
                .iter()
                .filter(|m| m.msg_id.as_deref() == Some(id))
                .count()
        };
        mb.send_once_to(&member, with_id("r1")).unwrap();
        mb.send_once_to(&member, with_id("r1")).unwrap();
        assert_eq!(mb.read(&coder, false).unwrap().len(), 1);
        mb.mark_delivered(&coder, &["r1".into()]).unwrap();
        mb.send_once_to(&member, with_id("r1")).unwrap();
        assert_eq!(mb.read(&coder, false).unwrap().len(), 1, "read, still held");
        // Past the newest 100 delivered, r1 moves to the archive.
        let mut keys = Vec::new();
        for i in 0..KEEP_DELIVERED {
            let m = InboxMessage::new(&AgentName::lead(), format!("m{i}"));
            keys.push(m.key());
            mb.send_to(&member, m).unwrap();
        }
        mb.mark_delivered(&coder, &keys).unwrap();
        assert!(mb
            .read(&coder, false)
            .unwrap()
            .iter()
            .all(|m| m.msg_id.as_deref() != Some("r1")));
        assert_eq!(count("r1"), 1, "archived");
        mb.send_once_to(&member, with_id("r1")).unwrap();
        assert_eq!(count("r1"), 1, "not stored again from the archive");
        mb.send_once_to(&member, with_id("r2")).unwrap();
        assert_eq!(count("r2"), 1);
    }
}
