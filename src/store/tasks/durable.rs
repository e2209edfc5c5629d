//! Task-file writes whose directory fsync is shared (PROTOCOL.md section 4, split in two).
//!
//! An atomic write is: temp file, write, fsync, rename, fsync the directory. The last step makes
//! the rename durable, and it makes every rename done before it in that directory durable too,
//! by anyone. So the claim path renames under the locks and syncs the directory once the list
//! lock is released, and the claim loop's completion rides on the next claim's directory sync
//! (or on [`Unsynced::sync`] when the loop ends): a task is still durable before anyone is
//! told of it, for one fsync fewer per claim and a list lock held over a single fsync.
//!
//! The write itself is `fsio::replace_unsynced`, `write_atomic` without its directory sync, so
//! the temp file is named, flocked and swept exactly as every other atomic write's.

use std::path::{Path, PathBuf};

use super::Task;
use crate::error::{Error, Result};
use crate::store::fsio;

/// A directory holding renames that are not durable yet.
#[derive(Debug, Default)]
pub(super) struct Unsynced(Option<PathBuf>);

impl Unsynced {
    /// Makes every rename so far in the directory durable (a failed sync is noted as "done,
    /// not confirmed durable": the renames are done, see `fsio::unconfirmed`).
    pub(super) fn sync(&mut self) {
        if let Some(dir) = self.0.take() {
            fsio::sync_dir(&dir);
        }
    }
}

/// Writes `task` to `path` (temp file, fsync, rename) and leaves the directory sync to
/// `unsynced`.
pub(super) fn replace(path: &Path, task: &Task, unsynced: &mut Unsynced) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(task).map_err(|source| Error::Json {
        path: path.to_path_buf(),
        source,
    })?;
    bytes.push(b'\n');
    fsio::replace_unsynced(path, &bytes)?;
    unsynced.0 = path.parent().map(Path::to_path_buf);
    Ok(())
}
