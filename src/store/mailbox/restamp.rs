//! Lead entries waiting for a teammate that starts again, signed afresh.
//!
//! Claude Code believes a signed lead entry only if its timestamp is at most 120 s older than
//! the teammate process's start (PROTOCOL.md section 11); an older one is shown to its model
//! as unverified and its control messages are not obeyed. A teammate started again (`swarm
//! restart`, `swarm up`) finds what the lead sent while it was down, or before it stopped and
//! never read: each unread entry the lead signed is stamped now and signed again, so the new
//! process believes it. Only entries whose bound signature (`swarm_lead_sig`) checks with the
//! team's key for this very inbox are touched, so neither a forgery in the lead's name nor a
//! signed entry copied here from another member's inbox is ever made genuine. A shutdown request is the exception:
//! it was for the process that is gone, and a fresh signature would stop the new one, so it is
//! marked read instead.

use super::{InboxMessage, Mailbox};
use crate::error::Result;
use crate::store::fsio;
use crate::store::lead_key::{LeadKey, LeadVerifier};
use crate::store::names::AgentName;
use crate::store::protocol::{timestamp_now, Payload, Protocol};

/// What [`Mailbox::restamp_for_restart`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Restamped {
    /// Unread lead entries stamped now and signed again.
    pub resigned: usize,
    /// Unread shutdown requests marked read.
    pub retired_shutdowns: usize,
}

impl Mailbox<'_> {
    /// Before `name` starts again: signs every unread entry the lead signed afresh, now, and
    /// marks its unread shutdown requests read (see the module doc).
    pub fn restamp_for_restart(&self, name: &AgentName, key: &LeadKey) -> Result<Restamped> {
        let path = self.store.inbox_path(self.team, name);
        if !fsio::check_regular(&path)? {
            return Ok(Restamped::default());
        }
        let verifier = LeadVerifier::of(key);
        let mut done = Restamped::default();
        self.commit_with_lock(name, &path, &mut |messages| {
            done = Restamped::default();
            for m in messages
                .iter_mut()
                .filter(|m| !m.read && m.signed_for(&verifier, self.team, name))
            {
                if is_shutdown_request(m) {
                    m.read = true;
                    done.retired_shutdowns += 1;
                } else {
                    m.timestamp = timestamp_now();
                    m.sign_as_lead(key, self.team, name);
                    done.resigned += 1;
                }
            }
            Ok(done != Restamped::default())
        })?;
        Ok(done)
    }
}

fn is_shutdown_request(m: &InboxMessage) -> bool {
    matches!(m.payload(), Payload::Protocol(p) if matches!(*p, Protocol::ShutdownRequest(_)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::team_with;

    #[test]
    fn only_signed_lead_entries_are_signed_again_and_shutdown_requests_are_retired() {
        let (_dir, store, team) = team_with(&["coder"]);
        let coder: AgentName = "coder".parse().unwrap();
        let key = LeadKey::from_seed([3; 32], 1);
        let mailbox = Mailbox::new(&store, &team);
        let signed = |text: &str, read: bool| {
            let mut m = InboxMessage::new(&AgentName::lead(), text);
            m.timestamp = "2026-01-01T00:00:00.000Z".into();
            m.read = read;
            m.sign_as_lead(&key, &team, &coder);
            m
        };
        let stop = Protocol::ShutdownRequest(crate::store::protocol::ShutdownRequest {
            request_id: "shutdown-1@coder".into(),
            from: crate::store::names::LEAD.into(),
            reason: None,
            timestamp: "2026-01-01T00:00:00.000Z".into(),
            extra: Default::default(),
        });
        let mut forged = InboxMessage::new(&AgentName::lead(), "forged");
        forged.timestamp = "2026-01-01T00:00:00.000Z".into();
        // Signed for another member and copied here: its lead_sig holds, its bound one does not.
        let mut copied = InboxMessage::new(&AgentName::lead(), "$ for someone else");
        copied.timestamp = "2026-01-01T00:00:00.000Z".into();
        copied.sign_as_lead(&key, &team, &crate::store::fixture::agent("other"));
        let entries = vec![
            signed("waiting", false),
            signed("seen", true),
            signed(&stop.to_text(), false),
            forged,
            InboxMessage::new(&crate::store::fixture::agent("mallory"), "hi"),
            copied,
        ];
        let path = store.inbox_path(&team, &coder);
        fsio::write_json(&path, &entries).unwrap();

        let done = mailbox.restamp_for_restart(&coder, &key).unwrap();
        assert_eq!(
            done,
            Restamped {
                resigned: 1,
                retired_shutdowns: 1
            }
        );
        let after = mailbox.read(&coder, false).unwrap();
        let verifier = LeadVerifier::of(&key);
        assert_ne!(after[0].timestamp, entries[0].timestamp, "stamped now");
        assert!(after[0].signed_by(&verifier) && !after[0].read);
        assert_eq!(after[1], entries[1], "a delivered entry is left alone");
        assert!(after[2].read, "the old shutdown request is retired");
        assert_eq!(after[2].timestamp, entries[2].timestamp);
        assert_eq!(after[3], entries[3], "a forgery stays a forgery");
        assert!(!after[3].signed_by(&verifier));
        assert_eq!(after[4], entries[4]);
        assert_eq!(
            after[5], entries[5],
            "a copy from another inbox is not signed for this one"
        );
        assert!(after[0].signed_for(&verifier, &team, &coder));
        assert_eq!(
            mailbox.restamp_for_restart(&coder, &key).unwrap(),
            Restamped {
                resigned: 1,
                retired_shutdowns: 0
            }
        );
    }
}
