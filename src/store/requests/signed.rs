//! Decided records carry the lead's signature (`leadSig`, PROTOCOL.md section 9a), and only
//! signed ones count as decided.
//!
//! Anyone on the team can write `permissions/resolved/`: a teammate that copies its own pending
//! request there with `status: approved` must not get its tool run. So `decide` signs each
//! record it writes with the lead key, over the team, the kind of record and every field (the
//! request id, the requester, the verdict, the input the lead was shown and its digest, the
//! input the lead put in its place), and every read of a decision checks it: a record that does
//! not verify is ignored, noted once on stderr, and the request still waits for the lead. A
//! process that knows no lead key (neither the lead's own nor `SWARM_LEAD_VERIFY_KEY`) cannot
//! tell a decision from a forgery, so for it nothing is decided.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::records::read_records;
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::lead_key::{self, note_ignored, LeadKey};
use crate::store::names::TeamName;
use crate::store::paths::Store;

/// The kind a permission decision is signed as.
pub(super) const PERMISSION: &str = "permission-resolution";
/// The kind a plan decision is signed as.
pub(super) const PLAN: &str = "plan-resolution";

/// Writes `record` to `path` signed as the lead's `kind` record of `team`; refused to a process
/// that cannot use the lead key.
pub(super) fn write<T: Serialize>(
    store: &Store,
    team: &TeamName,
    kind: &str,
    path: &Path,
    record: &T,
) -> Result<()> {
    let key = LeadKey::for_caller(store, team)?.ok_or_else(|| {
        Error::usage(
            "refusing to decide: this process cannot use the team lead's key (it runs as a \
             teammate, or on a host the lead's key never leaves); decide from the lead's shell",
        )
    })?;
    let mut value = serde_json::to_value(record).map_err(|source| Error::Json {
        path: path.to_path_buf(),
        source,
    })?;
    key.sign_record(team.as_str(), kind, &mut value);
    fsio::write_json(path, &value)
}

/// The record at `path` if it is there and the lead signed it as `kind`.
pub(super) fn read<T: DeserializeOwned>(
    store: &Store,
    team: &TeamName,
    kind: &str,
    path: &Path,
) -> Result<Option<T>> {
    let Some(value) = fsio::read_json::<Value>(path)? else {
        return Ok(None);
    };
    admit(store, team, kind, path, value)
}

/// The records in `dir` whose names `keep` accepts and that the lead signed as `kind`, oldest
/// first.
pub(super) fn read_all<T: DeserializeOwned>(
    store: &Store,
    team: &TeamName,
    kind: &str,
    dir: &Path,
    keep: impl Fn(&str) -> bool,
    order: impl Fn(&T) -> (u64, String),
) -> Result<Vec<T>> {
    let found: Vec<Value> = read_records(dir, keep, |v: &Value| {
        let at = v["createdAt"].as_u64().unwrap_or(0);
        (at, v["id"].as_str().unwrap_or_default().to_string())
    })?;
    let mut records = Vec::new();
    for value in found {
        let name = format!("{}.json", value["id"].as_str().unwrap_or_default());
        if let Some(record) = admit(store, team, kind, &dir.join(name), value)? {
            records.push(record);
        }
    }
    records.sort_by_key(|r| order(r));
    Ok(records)
}

/// `value` as a record if the lead's signature holds; else `None`, noted once.
fn admit<T: DeserializeOwned>(
    store: &Store,
    team: &TeamName,
    kind: &str,
    path: &Path,
    value: Value,
) -> Result<Option<T>> {
    let Some(verifier) = lead_key::verifier(store, team)? else {
        note_ignored(
            path,
            "this process knows no team lead key to check its signature with (SWARM_LEAD_VERIFY_KEY is unset)",
        );
        return Ok(None);
    };
    let named = path.file_stem().and_then(|s| s.to_str());
    if value["id"].as_str() != named {
        note_ignored(
            path,
            "its id is not its file's name (a decision copied from another request)",
        );
        return Ok(None);
    }
    if !verifier.verifies_record(team.as_str(), kind, &value) {
        note_ignored(
            path,
            "it does not carry the team lead's signature (leadSig); only the lead decides, and \
             a record a teammate wrote is not a decision",
        );
        return Ok(None);
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|source| Error::Json {
            path: path.to_path_buf(),
            source,
        })
}
