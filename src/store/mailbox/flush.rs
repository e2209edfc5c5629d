//! Taking in what waits in an inbox's spool, for a reader about to look at the file.
//!
//! A sender that met a busy lock leaves its entry in the spool (`commit.rs`) for the holder, or
//! the next one, to take in. A sender killed while it waited leaves it there until some swarm
//! process next writes that inbox; a claude teammate never will (it knows nothing of the
//! spool). [`Mailbox::flush`] is that next write, with nothing of its own.

use super::Mailbox;
use crate::error::Result;
use crate::store::names::AgentName;

impl Mailbox<'_> {
    /// Takes every spooled entry of `to`'s inbox into the file.
    pub fn flush(&self, to: &AgentName) -> Result<()> {
        let path = self.prepare(to)?;
        self.commit_with_lock(to, &path, &mut |_| Ok(false))
    }
}
