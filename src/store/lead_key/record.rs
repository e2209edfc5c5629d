//! `leadSig`: the lead's signature of a record it writes into the team directory (PROTOCOL.md
//! section 9a), and the digest that binds a decision to what the lead was shown.
//!
//! Every member can write every file of the team, so a record's presence proves nothing: a
//! teammate could copy its own pending permission request into `resolved/` with `status:
//! approved`, or write `lead/done.json` to end the team. The lead side signs each such record
//! over its whole canonical JSON (keys sorted at every level, compact), the team and what kind
//! of record it is, and every reader ignores, with a note, a record that does not verify.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::{LeadKey, LeadVerifier};

/// The field that carries a record's signature.
pub(crate) const RECORD_SIG_FIELD: &str = "leadSig";
/// The kind `lead/done.json` is signed as.
pub(crate) const DONE_RECORD: &str = "done";
/// The kind `lead/removed/<name>.<joinedAt>.json` (`swarm team remove`) is signed as.
pub(crate) const REMOVAL_RECORD: &str = "removal";
/// The kind each line of `lead/decisions.jsonl` is signed as.
pub(crate) const DECISION_RECORD: &str = "decision";

/// Names what is signed, so an entry signature can never pass for a record's or back.
const DOMAIN: &str = "swarm-team-lead-record-v1";

/// `value` with every object's keys sorted, recursively: one byte string per JSON value, the
/// same whichever order a writer used.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), sorted(&map[k]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The compact JSON of `value` with its keys sorted.
pub(crate) fn canonical(value: &Value) -> Vec<u8> {
    serde_json::to_vec(&sorted(value)).expect("a JSON value always serializes")
}

/// `sha256:<hex>` of the canonical JSON of `value`: what a permission decision names as the
/// input the lead was shown.
pub(crate) fn digest(value: &Value) -> String {
    let hash = Sha256::digest(canonical(value));
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// What is signed: `JSON([domain, team, kind, record without leadSig])`, canonical.
fn record_bytes(team: &str, kind: &str, record: &Value) -> Vec<u8> {
    let mut body = record.clone();
    if let Value::Object(map) = &mut body {
        map.remove(RECORD_SIG_FIELD);
    }
    canonical(&Value::Array(vec![
        DOMAIN.into(),
        team.into(),
        kind.into(),
        body,
    ]))
}

impl LeadKey {
    /// Signs `record` (a JSON object) as the lead's `kind` record of `team`: sets its
    /// `leadSig`, replacing any there was.
    pub(crate) fn sign_record(&self, team: &str, kind: &str, record: &mut Value) {
        let sig = self.sign_raw(&record_bytes(team, kind, record));
        if let Value::Object(map) = record {
            map.insert(RECORD_SIG_FIELD.into(), sig.into());
        }
    }
}

impl LeadVerifier {
    /// Whether `record` carries a valid `leadSig` as the lead's `kind` record of `team`.
    pub(crate) fn verifies_record(&self, team: &str, kind: &str, record: &Value) -> bool {
        let sig = record.get(RECORD_SIG_FIELD).and_then(Value::as_str);
        self.verifies_raw(&record_bytes(team, kind, record), sig)
    }
}

/// Says once per process, on stderr, that the record at `path` was ignored and why: a reader
/// that polls must not repeat it on every look.
pub(crate) fn note_ignored(path: &Path, why: &str) {
    static NOTED: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
    let mut noted = NOTED.lock().unwrap_or_else(|e| e.into_inner());
    if noted
        .get_or_insert_with(HashSet::new)
        .insert(path.to_path_buf())
    {
        eprintln!("swarm: ignoring {}: {why}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_signature_covers_every_field_whatever_the_key_order() {
        let key = LeadKey::from_seed([9; 32], 1);
        let verifier = LeadVerifier::of(&key);
        let mut record = serde_json::json!({"id": "perm-1-a", "status": "approved",
                                            "input": {"b": 1, "a": [true, null]}});
        key.sign_record("t", "permission", &mut record);
        assert!(verifier.verifies_record("t", "permission", &record));
        let reordered: Value = serde_json::from_str(&format!(
            r#"{{"leadSig": {}, "input": {{"a": [true, null], "b": 1}}, "status": "approved", "id": "perm-1-a"}}"#,
            record["leadSig"]
        ))
        .unwrap();
        assert!(verifier.verifies_record("t", "permission", &reordered));
        assert!(!verifier.verifies_record("u", "permission", &record));
        assert!(!verifier.verifies_record("t", "done", &record));
        let mut changed = record.clone();
        changed["input"]["b"] = 2.into();
        assert!(!verifier.verifies_record("t", "permission", &changed));
        let mut unsigned = record.clone();
        unsigned.as_object_mut().unwrap().remove(RECORD_SIG_FIELD);
        assert!(!verifier.verifies_record("t", "permission", &unsigned));
        assert_eq!(
            digest(&serde_json::json!({"b": 1, "a": 2})),
            digest(&serde_json::json!({"a": 2, "b": 1}))
        );
    }
}
