//! Reading a directory of request records (`permissions/pending/`, `permissions/resolved/`):
//! every `<id>.json` a filter accepts, oldest first, a damaged one skipped with a warning. The
//! pending listing and the signed reader of decisions both read this way; neither owns it.

use std::fs;
use std::path::Path;

use serde::de::DeserializeOwned;

use crate::error::{Error, Result};
use crate::store::fsio;

/// The records in `dir` whose file names `keep` accepts, oldest first; a damaged one is skipped
/// with a warning (one bad file must not hide the others).
pub(crate) fn read_records<T: DeserializeOwned>(
    dir: &Path,
    keep: impl Fn(&str) -> bool,
    created_at: impl Fn(&T) -> (u64, String),
) -> Result<Vec<T>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(Error::io("list", dir)(e)),
    };
    let mut records = Vec::new();
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        if name.starts_with('.') || !keep(stem) {
            continue;
        }
        match fsio::read_json::<T>(&path) {
            Ok(Some(r)) => records.push(r),
            Ok(None) => {}
            Err(e) => eprintln!("swarm: warning: skipping {}: {e}", path.display()),
        }
    }
    records.sort_by_key(|r| created_at(r));
    Ok(records)
}
