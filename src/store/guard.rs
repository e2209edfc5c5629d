//! Who may have prepared the directories swarm writes in (OpenSSH's StrictModes, for the store).
//!
//! A teammate runs whatever arrives in its inbox, so a store directory that another local user
//! created or can write to lets that user run code as the victim: plant an inbox, swap a task
//! file, point `teams/` at another place with a symlink. Before swarm reads or writes a store
//! file it walks the path from the root down: the root and every directory below it must be
//! owned by the current user and not writable by group or others, and no component below the
//! root may be a symlink (the root itself may be one: that is the user's own choice, like a
//! symlinked `~/.claude`). A directory we own that is merely too open is set back to 0700 with
//! a warning; anything else is refused with the path and what to run.
//!
//! The roots come from every [`Store`](crate::store::paths::Store) made in this process, so the
//! file helpers in `fsio` and `lock`, which are handed full paths, know where a store begins;
//! paths outside every store (a worktree, a file given on the command line) are not walked.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, Result};

static ROOTS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Makes `root` a store root: paths under it are walked by [`check_dirs`].
pub(crate) fn register_root(root: &Path) {
    let mut roots = ROOTS.lock().unwrap_or_else(|e| e.into_inner());
    if !roots.iter().any(|r| r == root) {
        roots.push(root.to_path_buf());
    }
}

/// The longest registered root that `path` lies under.
fn root_of(path: &Path) -> Option<PathBuf> {
    let roots = ROOTS.lock().unwrap_or_else(|e| e.into_inner());
    roots
        .iter()
        .filter(|r| path.starts_with(r))
        .max_by_key(|r| r.components().count())
        .cloned()
}

pub(crate) fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// What a directory entry is, in words for an error message.
pub(crate) fn kind_of(meta: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_symlink() {
        "symlink"
    } else if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_block_device() || t.is_char_device() {
        "device"
    } else {
        "special file"
    }
}

/// Checks the root and every existing directory from it down to `dir` (inclusive). Components
/// that do not exist yet end the walk: swarm creates them itself, 0700.
pub(crate) fn check_dirs(dir: &Path) -> Result<()> {
    let Some(root) = root_of(dir) else {
        return Ok(());
    };
    match fs::metadata(&root) {
        Ok(meta) if meta.is_dir() => check_dir(&root, &meta, true)?,
        Ok(meta) => {
            return Err(Error::NotARegularFile {
                path: root,
                found: kind_of(&meta),
            })
        }
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("inspect", &root)(e)),
    }
    let below = dir.strip_prefix(&root).unwrap_or(Path::new(""));
    let mut path = root;
    for component in below.components() {
        path.push(component);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => check_dir(&path, &meta, false)?,
            Ok(meta) => {
                return Err(Error::NotARegularFile {
                    path,
                    found: kind_of(&meta),
                })
            }
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io("inspect", &path)(e)),
        }
    }
    Ok(())
}

/// A store directory must be ours and closed to others. One we own that others can write to is
/// set back to 0700, unless it is the root and has the sticky bit: that is a shared directory
/// such as `/tmp` given as `--root`, and closing it would break everyone else.
fn check_dir(dir: &Path, meta: &fs::Metadata, is_root: bool) -> Result<()> {
    if meta.uid() != euid() {
        return Err(Error::NotOwned {
            path: dir.to_path_buf(),
            owner: meta.uid(),
            me: euid(),
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 == 0 {
        return Ok(());
    }
    let shared = is_root && mode & 0o1000 != 0;
    let repaired = !shared && fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).is_ok();
    if repaired {
        eprintln!(
            "swarm: warning: {} was writable by other users (mode {mode:o}); set it to 0700",
            dir.display()
        );
        return Ok(());
    }
    Err(Error::InsecureDir {
        path: dir.to_path_buf(),
        mode,
    })
}

/// A store file swarm is about to read or write (already opened or just inspected): it must be
/// ours, and have one link, so writing it cannot change a file elsewhere.
pub(crate) fn check_file(path: &Path, meta: &fs::Metadata) -> Result<()> {
    if meta.uid() != euid() {
        return Err(Error::NotOwned {
            path: path.to_path_buf(),
            owner: meta.uid(),
            me: euid(),
        });
    }
    if meta.nlink() > 1 {
        return Err(Error::HardLinked {
            path: path.to_path_buf(),
            links: meta.nlink(),
        });
    }
    Ok(())
}
