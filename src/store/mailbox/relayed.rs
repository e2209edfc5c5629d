//! Entries that another host's store already holds, copied into this one: the relay's way into
//! an inbox (`remote/`).
//!
//! A message written on one host reaches the other as an ordinary delivery, through the same
//! lock and group commit as every other append, and keyed by its `msg_id` (Claude Code's
//! `from|timestamp|text` when it has none): an entry whose key the inbox holds already, read or
//! not, is not added again, so replaying a batch after a lost acknowledgement changes nothing.
//! The entries go in verbatim and unsigned by this side: a lead entry copied to a remote host
//! keeps the lead's own `lead_sig` (the key never leaves the lead's machine), and the caller
//! decides which entries may travel at all.

use std::collections::HashSet;

use super::{check_size, InboxMessage, Mailbox};
use crate::error::Result;
use crate::store::names::AgentName;

impl Mailbox<'_> {
    /// Appends every entry of `messages` whose key `to`'s inbox does not hold yet, as it is
    /// (its `read` flag cleared); returns the keys it added.
    pub fn relay_in(&self, to: &AgentName, messages: Vec<InboxMessage>) -> Result<Vec<String>> {
        for m in &messages {
            check_size(m)?;
        }
        let path = self.prepare(to)?;
        let mut added = Vec::new();
        let mut batch = Some(messages);
        self.commit_with_lock(to, &path, &mut |inbox| {
            let Some(batch) = batch.take() else {
                return Ok(false);
            };
            let mut present: HashSet<String> = inbox.iter().map(InboxMessage::key).collect();
            for mut m in batch {
                if present.insert(m.key()) {
                    m.read = false;
                    added.push(m.key());
                    inbox.push(m);
                }
            }
            Ok(!added.is_empty())
        })?;
        Ok(added)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::{agent, team_with};

    #[test]
    fn a_replayed_entry_is_not_delivered_twice_even_once_read() {
        let (_dir, store, team) = team_with(&["coder"]);
        let mb = Mailbox::new(&store, &team);
        let coder = agent("coder");
        let m = InboxMessage::new(&agent("tester"), "hi");
        assert_eq!(mb.relay_in(&coder, vec![m.clone()]).unwrap(), vec![m.key()]);
        mb.mark_delivered(&coder, &[m.key()]).unwrap();
        assert!(mb.relay_in(&coder, vec![m.clone()]).unwrap().is_empty());
        let inbox = mb.read(&coder, false).unwrap();
        assert_eq!(inbox.len(), 1);
        assert!(inbox[0].read, "the replay did not mark it unread again");
    }
}
