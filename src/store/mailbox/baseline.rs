//! The append as it was before the group commit, kept runnable so that `swarm bench` measures
//! the group commit against it in the same run (`swarm debug append --baseline`): every sender
//! takes the lock in turn, checks the whole array against the schema, splices its one entry in
//! and pays for its own fsync. Never used outside the benchmarks.

use super::file::{load_locked, splice_append};
use super::{check_size, InboxMessage, Mailbox};
use crate::error::Result;
use crate::store::fsio;
use crate::store::lock::FileLock;
use crate::store::names::AgentName;
use crate::store::roster::Roster;

impl Mailbox<'_> {
    /// `send` the way it worked before the group commit.
    pub(crate) fn send_baseline(&self, to: &AgentName, mut message: InboxMessage) -> Result<()> {
        check_size(&message)?;
        Roster::new(self.store, self.team).require_member(to.as_str())?;
        self.sign_if_lead(&mut message)?;
        let path = self.prepare(to)?;
        {
            let _lock = FileLock::acquire(&path)?;
            let spliced = fsio::read_file(&path)?.and_then(|b| splice_append(&b, &message));
            match spliced {
                Some(bytes) => fsio::write_atomic(&path, &bytes)?,
                None => {
                    let (mut messages, _) = load_locked(&path)?;
                    messages.push(message);
                    self.compact_and_write(to, &path, messages)?;
                }
            }
        }
        // A group-committing sender may have spooled meanwhile; it counts on us to look.
        self.serve_spool(to, &path);
        Ok(())
    }
}
