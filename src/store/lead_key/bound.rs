//! `swarm_lead_sig`: the lead's signature of an inbox entry bound to the team and the inbox it
//! was written to (PROTOCOL.md section 7b).
//!
//! Claude Code's `lead_sig` covers the entry's own fields only, so a signed `$ ` command or
//! shutdown request copied from one member's inbox into another's still verifies there. This
//! second signature, which Claude Code ignores, covers the same fields plus the team and the
//! recipient; swarm's runtime acts on a lead control message only when it holds for its own
//! team and name, and keeps `lead_sig` as it is for real Claude Code teammates.

use super::{LeadEntry, LeadKey, LeadVerifier};
use crate::store::names::LEAD;

/// The envelope field that carries the bound signature.
pub(crate) const SWARM_SIG_FIELD: &str = "swarm_lead_sig";
/// Names what is signed, so no other signature of this key can pass for one of these.
const DOMAIN: &str = "swarm-team-lead-entry-v1";

/// The UTF-8 of `JSON([domain, team, recipient, msg_id, from, timestamp, text, summary, color,
/// from_plugin])`, compact.
fn bound_bytes(team: &str, recipient: &str, e: &LeadEntry) -> Vec<u8> {
    let opt = |v: Option<&str>| v.map_or(serde_json::Value::Null, serde_json::Value::from);
    let fields = vec![
        DOMAIN.into(),
        team.into(),
        recipient.into(),
        opt(e.msg_id),
        e.from.into(),
        e.timestamp.into(),
        e.text.into(),
        opt(e.summary),
        opt(e.color),
        opt(e.from_plugin),
    ];
    serde_json::to_vec(&serde_json::Value::Array(fields)).expect("strings always serialize")
}

impl LeadKey {
    /// The `swarm_lead_sig` of `entry` written to `recipient`'s inbox in `team`.
    pub(crate) fn bound_signature(&self, team: &str, recipient: &str, entry: &LeadEntry) -> String {
        self.sign_raw(&bound_bytes(team, recipient, entry))
    }
}

impl LeadVerifier {
    /// Whether `entry`, found in `recipient`'s inbox of `team`, is the lead's and was written
    /// there: `sig` is its valid `swarm_lead_sig`.
    pub(crate) fn verifies_bound(
        &self,
        team: &str,
        recipient: &str,
        entry: &LeadEntry,
        sig: Option<&str>,
    ) -> bool {
        entry.from == LEAD && self.verifies_raw(&bound_bytes(team, recipient, entry), sig)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_signature_holds_only_for_its_team_and_recipient() {
        let key = LeadKey::from_seed([5; 32], 1);
        let verifier = LeadVerifier::of(&key);
        let entry = LeadEntry {
            msg_id: Some("m1"),
            from: LEAD,
            timestamp: "2026-01-01T00:00:00.000Z",
            text: "$ make",
            summary: None,
            color: None,
            from_plugin: None,
        };
        let sig = key.bound_signature("t", "a", &entry);
        assert!(verifier.verifies_bound("t", "a", &entry, Some(&sig)));
        assert!(!verifier.verifies_bound("t", "b", &entry, Some(&sig)));
        assert!(!verifier.verifies_bound("u", "a", &entry, Some(&sig)));
        // Claude Code's lead_sig of the same entry is no bound signature.
        assert!(!verifier.verifies_bound("t", "a", &entry, Some(&key.signature(&entry))));
    }
}
