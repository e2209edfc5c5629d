//! Task-file writes whose directory fsync is shared (PROTOCOL.md section 4, split in two).
//!
//! An atomic write is: temp file, write, fsync, rename, fsync the directory. The last step makes
//! the rename durable, and it makes every rename done before it in that directory durable too,
//! by anyone. So the claim path renames under the locks and syncs the directory once the list
//! lock is released, and the claim loop's completion rides on the next claim's directory sync
//! (or on [`Unsynced::sync`] when the loop ends): a task is still durable before anyone is
//! told of it, for one fsync fewer per claim and a list lock held over a single fsync.
//!
//! The temp file is named and flocked exactly as `fsio::write_atomic` does it, so the temp sweep
//! treats a killed writer's leftover the same way.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt;

use super::Task;
use crate::error::{Error, Result};
use crate::store::fsio;

/// A directory holding renames that are not durable yet.
#[derive(Debug, Default)]
pub(super) struct Unsynced(Option<PathBuf>);

impl Unsynced {
    /// Makes every rename so far in the directory durable.
    pub(super) fn sync(&mut self) -> Result<()> {
        match self.0.take() {
            Some(dir) => fsio::sync_dir(&dir),
            None => Ok(()),
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
    fsio::check_regular(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(
        ".{name}{}{}-{}",
        fsio::TEMP_MARK,
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(fsio::NOFOLLOW)
            .open(&tmp)
            .map_err(Error::io("create", &tmp))?;
        // Held until the rename: the flock tells a sweeper this temp file's writer is alive.
        FileExt::lock_exclusive(&file).map_err(Error::io("lock", &tmp))?;
        file.write_all(&bytes).map_err(Error::io("write", &tmp))?;
        file.sync_all().map_err(Error::io("sync", &tmp))?;
        std::fs::rename(&tmp, path).map_err(Error::io("replace", path))
    })();
    match result {
        Ok(()) => {
            unsynced.0 = Some(dir.to_path_buf());
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}
