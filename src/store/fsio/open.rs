//! Opening a store file: the one place where `OpenOptions` is built for the store.
//!
//! Every store file is opened by one of four functions, named for what the caller does with
//! it, and each open refuses to follow a symlink (`O_NOFOLLOW`: a link planted in the store
//! cannot redirect a read or a write) and never blocks on a FIFO (`O_NONBLOCK`, which changes
//! nothing for a regular file, a read or a `flock`). A file that was already there is checked
//! once it is open, on the descriptor, not the path, so nothing can be swapped in between: a
//! regular file, ours, with one link (see [`guard`]), so writing it cannot change a file
//! elsewhere. A file [`create_new`] makes needs no check: `O_EXCL` means it is a new file of
//! ours. Nothing else in the store builds an `OpenOptions`, so no open can forget a flag or the
//! check. Files that are not the store's (settings, Claude Code's config) are read by
//! [`read_foreign`], which follows symlinks but never blocks and reads regular files only.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::{Error, Result};
use crate::store::guard::{self, kind_of};

const NOFOLLOW: i32 = rustix::fs::OFlags::NOFOLLOW.bits() as i32;
const NONBLOCK: i32 = rustix::fs::OFlags::NONBLOCK.bits() as i32;
/// A store file swarm creates is readable and writable by its owner alone.
const MODE: u32 = 0o600;

fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(MODE).custom_flags(NOFOLLOW | NONBLOCK);
    options
}

/// Checks a store file swarm has opened (race-free, unlike checking the path): a regular file,
/// ours, with one link.
fn check_opened(file: &File, path: &Path) -> Result<()> {
    let meta = file.metadata().map_err(Error::io("inspect", path))?;
    if !meta.is_file() {
        return Err(Error::NotARegularFile {
            path: path.to_path_buf(),
            found: kind_of(&meta),
        });
    }
    guard::check_file(path, &meta)
}

/// Opens `path` to read, checked; `None` when it does not exist.
pub(crate) fn open_read(path: &Path) -> Result<Option<File>> {
    let file = match options().read(true).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("open", path)(e)),
    };
    check_opened(&file, path)?;
    Ok(Some(file))
}

/// Creates `path` to write, mode 0600; fails if anything is there (`O_EXCL`), so the file is
/// new and ours: a temp file about to be renamed into place, or a file that must not be
/// overwritten.
pub(crate) fn create_new(path: &Path) -> Result<File> {
    options()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(Error::io("create", path))
}

/// Opens `path` to read and write, checked, creating it 0600 if it is missing; it is never
/// truncated, since a lock file's content belongs to its holder. The open is tried without
/// `O_CREAT` first: a file that exists (every lock after the first) then costs no lock on its
/// directory.
pub(crate) fn open_or_create(path: &Path) -> Result<File> {
    let open = |create: bool| options().read(true).write(true).create(create).open(path);
    let file = match open(false) {
        Err(e) if e.kind() == ErrorKind::NotFound => open(true),
        other => other,
    }
    .map_err(Error::io("open", path))?;
    check_opened(&file, path)?;
    Ok(file)
}

/// Opens `path` to append, checked, creating it 0600 if it is missing: a log or an archive.
pub(crate) fn open_append(path: &Path) -> Result<File> {
    let file = options()
        .append(true)
        .create(true)
        .open(path)
        .map_err(Error::io("open", path))?;
    check_opened(&file, path)?;
    Ok(file)
}

/// Reads a file that is not the store's (a settings file, Claude Code's own config) without
/// ever blocking: symlinks are followed, as their owner meant, but the open is `O_NONBLOCK` and
/// what it reached must be a regular file (a FIFO, a directory or a device is refused, so a
/// FIFO planted at `.claude/settings.json` cannot hang the reader). At most `limit` bytes are
/// read; a larger file is refused. `None` when it does not exist.
pub(crate) fn read_foreign(
    path: &Path,
    limit: u64,
) -> std::result::Result<Option<Vec<u8>>, String> {
    use std::io::Read;
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open {}: {e}", path.display())),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot inspect {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!(
            "{} is a {}, not a regular file; refused",
            path.display(),
            kind_of(&meta)
        ));
    }
    if meta.len() > limit {
        return Err(format!(
            "{} is {} bytes, more than the {limit} read; refused",
            path.display(),
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "{} grew past {limit} bytes; refused",
            path.display()
        ));
    }
    Ok(Some(bytes))
}
