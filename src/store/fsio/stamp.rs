//! What a file looked like when it was read, to know without reading it again whether anyone
//! has written it since.
//!
//! Every writer changes the stamp (device, inode, size, modification and change times): a
//! rename brings a new inode, an in-place write a new change time, which no one can set by
//! hand. Two in-place writes of one size within one tick of the file-system clock can share
//! their times, so, as git does with its index, a stamp taken while the file was that fresh
//! ([`Stamp::settled`]) is not trusted to stand for what was read.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// How long a file must have been left alone before its stamp stands for its contents: well
/// past the coarsest file-system clock tick in use (a few ms on Linux).
const SETTLED: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    pub(crate) fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// The file's stamp now (not following a symlink); `None` when it is gone.
    pub(crate) fn read(path: &Path) -> Result<Option<Stamp>> {
        match fs::symlink_metadata(path) {
            Ok(meta) => Ok(Some(Stamp::of(&meta))),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("inspect", path)(e)),
        }
    }

    /// Whether the file had been left alone for [`SETTLED`] at `now`: only then does an equal
    /// stamp later prove an unchanged file.
    pub(crate) fn settled(&self, now: SystemTime) -> bool {
        let at = |(s, ns): (i64, i64)| {
            UNIX_EPOCH + Duration::new(s.max(0) as u64, ns.clamp(0, 999_999_999) as u32)
        };
        let last = at(self.mtime).max(at(self.ctime));
        now.duration_since(last).is_ok_and(|age| age >= SETTLED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrite_changes_the_stamp_and_a_fresh_file_is_not_settled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        assert_eq!(Stamp::read(&path).unwrap(), None);
        crate::store::fsio::write_atomic(&path, b"{}").unwrap();
        let first = Stamp::read(&path).unwrap().unwrap();
        assert!(!first.settled(SystemTime::now()));
        assert!(first.settled(SystemTime::now() + SETTLED));
        crate::store::fsio::write_atomic(&path, b"{}").unwrap();
        assert_ne!(Stamp::read(&path).unwrap().unwrap(), first);
    }
}
