//! The first messages of a launch: every new teammate's inbox and prompt, written in one pass
//! with one directory sync for the whole inbox directory.
//!
//! A launch of N teammates used to pay for N group commits (an empty inbox created and synced,
//! then a temp file, its sync and a directory sync each). A new teammate's inbox does not exist
//! yet, so its first message needs no lock and no merge: the complete array goes to a synced
//! temp file that is renamed into place without replacing anything, and one directory sync
//! after the last makes every rename durable. An inbox that is already there (someone wrote to
//! it first, or a launch that was killed left it) takes the message by the ordinary group
//! commit, unless it holds the very same words from the same sender unread already: running a
//! killed launch again does not hand a teammate its prompt twice.

use super::{check_size, move_aside_if_special, InboxMessage, Mailbox};
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::names::AgentName;

impl Mailbox<'_> {
    /// Creates each named inbox holding its first message (`None`: an empty inbox), with one
    /// directory sync for all of them. No roster check: the launcher writes these before the
    /// roster names the teammates, so a teammate never exists without its prompt.
    pub fn first_messages(&self, firsts: Vec<(AgentName, Option<InboxMessage>)>) -> Result<()> {
        if firsts.is_empty() {
            return Ok(());
        }
        let dir = self.store.inboxes_dir(self.team);
        fsio::ensure_dir(&dir)?;
        let mut created = false;
        for (to, mut message) in firsts {
            let path = self.store.inbox_path(self.team, &to);
            move_aside_if_special(&path)?;
            if let Some(m) = &mut message {
                check_size(m)?;
                self.sign_if_lead(&to, m)?;
            }
            let mut bytes =
                serde_json::to_vec_pretty(message.as_slice()).map_err(|source| Error::Json {
                    path: path.clone(),
                    source,
                })?;
            bytes.push(b'\n');
            if fsio::create_new_unsynced(&path, &bytes)? {
                created = true;
            } else if let Some(message) = message {
                self.append_unless_waiting(&to, &path, message)?;
            }
        }
        if created {
            fsio::sync_dir(&dir);
        }
        Ok(())
    }

    /// Appends `message` by group commit unless the inbox already holds the same words from
    /// the same sender, not yet delivered.
    fn append_unless_waiting(
        &self,
        to: &AgentName,
        path: &std::path::Path,
        message: InboxMessage,
    ) -> Result<()> {
        let mut message = Some(message);
        self.commit_with_lock(to, path, &mut |messages| {
            let Some(new) = message.take() else {
                return Ok(false);
            };
            let waiting = messages
                .iter()
                .any(|m| !m.read && m.from == new.from && m.text == new.text);
            if !waiting {
                messages.push(new);
            }
            Ok(!waiting)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::names::TeamName;
    use crate::store::paths::Store;

    #[test]
    fn new_inboxes_get_their_prompt_and_a_prompt_already_waiting_is_not_doubled() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let mb = Mailbox::new(&store, &team);
        let (a, b): (AgentName, AgentName) = ("a".parse().unwrap(), "b".parse().unwrap());
        let prompt = || Some(InboxMessage::new(&AgentName::lead(), "go"));
        mb.first_messages(vec![(a.clone(), prompt()), (b.clone(), None)])
            .unwrap();
        let texts = |who: &AgentName| -> Vec<String> {
            mb.read(who, false)
                .unwrap()
                .into_iter()
                .map(|m| m.text)
                .collect()
        };
        assert_eq!(texts(&a), ["go"]);
        assert!(texts(&b).is_empty());
        // Again (a killed launch run a second time): the waiting prompt is not added twice,
        // and an inbox that exists takes a new one by the ordinary commit.
        mb.first_messages(vec![(a.clone(), prompt()), (b.clone(), prompt())])
            .unwrap();
        assert_eq!(texts(&a), ["go"]);
        assert_eq!(texts(&b), ["go"]);
        // Once delivered, the same words are a new message.
        let keys: Vec<String> = mb
            .read(&a, false)
            .unwrap()
            .iter()
            .map(|m| m.key())
            .collect();
        mb.mark_delivered(&a, &keys).unwrap();
        mb.first_messages(vec![(a.clone(), prompt())]).unwrap();
        assert_eq!(texts(&a), ["go", "go"]);
    }
}
