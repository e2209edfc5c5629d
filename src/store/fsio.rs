//! Safe reads and atomic writes (PROTOCOL.md section 4).
//!
//! A reader must never see half a file and a writer must never lose what was there: every write
//! goes to a temp file in the same directory, is fsynced, renamed over the target and the
//! directory fsynced (a rename whose directory sync fails is done, only not confirmed durable:
//! `unconfirmed.rs`; a claim of the next task alone skips the directory sync, PROTOCOL.md 8b).
//! A file that does not parse is moved aside to `<file>.corrupt-<ms>` (and
//! said on stderr) instead of being read as empty and overwritten, which is how Claude Code loses
//! inboxes. Symlinks, FIFOs and other non-regular files where a store file belongs are refused.
//! Every path is first walked from the store root down by [`guard`]: directories and files
//! another user owns or can write to, symlinks in any component and hard-linked files are
//! refused. Every store file, here and elsewhere, is opened by one of the functions of `open.rs`.

mod open;
mod stamp;
pub(crate) mod unconfirmed;

pub(crate) use open::{create_new, open_append, open_or_create, open_read, read_foreign};
pub(crate) use stamp::Stamp;
pub(crate) use unconfirmed::sync_dir;

use std::fs;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use fs4::fs_std::FileExt;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::store::guard::{self, kind_of};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

/// Creates `dir` and its missing parents with mode 0700, after walking the existing part of the
/// path from the store root down (see [`guard`]): a component that is a symlink, not a
/// directory, not ours or open to others is refused (or, if ours and merely too open, set back
/// to 0700).
pub fn ensure_dir(dir: &Path) -> Result<()> {
    guard::check_dirs(dir)?;
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(meta) => Err(Error::NotARegularFile {
            path: dir.to_path_buf(),
            found: kind_of(&meta),
        }),
        Err(e) if e.kind() == ErrorKind::NotFound => create_dir_all(dir),
        Err(e) => Err(Error::io("inspect", dir)(e)),
    }
}

/// `ensure_dir` for a directory known to be missing: creates it and its missing parents 0700.
fn create_dir_all(dir: &Path) -> Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(meta) => {
            return Err(Error::NotARegularFile {
                path: dir.to_path_buf(),
                found: kind_of(&meta),
            })
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("inspect", dir)(e)),
    }
    if let Some(parent) = dir.parent() {
        if !parent.as_os_str().is_empty() {
            create_dir_all(parent)?;
        }
    }
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(Error::io("create directory", dir)(e)),
    }
}

/// Fails unless `path` is absent or a regular file.
pub(crate) fn check_regular(path: &Path) -> Result<bool> {
    guard::check_dirs(path.parent().unwrap_or(Path::new("")))?;
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_file() => guard::check_file(path, &meta).map(|()| true),
        Ok(meta) => Err(Error::NotARegularFile {
            path: path.to_path_buf(),
            found: kind_of(&meta),
        }),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io("inspect", path)(e)),
    }
}

/// Reads a whole regular file; `None` when it does not exist. Never follows a symlink and never
/// blocks on a FIFO.
pub fn read_file(path: &Path) -> Result<Option<Vec<u8>>> {
    if !check_regular(path)? {
        return Ok(None);
    }
    let Some(mut file) = open_read(path)? else {
        return Ok(None);
    };
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)
        .map_err(Error::io("read", path))?;
    Ok(Some(buf))
}

/// Appends `bytes` to `path` (created 0600 if missing) in one `write`, without fsync: for
/// append-only records that are not the truth of anything (the task history, usage records),
/// where a crash may cost the last lines but a writer must not pay an fsync per line. One
/// `O_APPEND` write per record keeps concurrent appenders' lines whole.
pub(crate) fn append_unsynced(path: &Path, bytes: &[u8]) -> Result<()> {
    check_regular(path)?;
    let mut file = open_append(path)?;
    file.write_all(bytes).map_err(Error::io("append to", path))
}

/// Writes `bytes` to `path` atomically with mode 0600.
///
/// The temp file has a random name (so a reused pid never meets a killed writer's leftover) and
/// is flocked while it exists under that name, which is how [`sweep_temp_files`] tells a dead
/// writer's leftover from a live writer's file. Once the rename is done, so is the write: a
/// directory sync that fails after it is noted, not returned (see [`unconfirmed`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    replace(path, bytes, true)?;
    sync_dir(path.parent().unwrap_or(Path::new(".")));
    Ok(())
}

/// A fresh temp name beside `path`: `.<name>.tmp-<pid>-<random>`.
fn temp_name(dir: &Path, path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    dir.join(format!(
        ".{name}{TEMP_MARK}{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ))
}

/// Creates `tmp` (never an existing file, never through a symlink), flocks it, writes and syncs
/// `bytes`; the returned file keeps the flock until it is dropped.
fn write_temp(tmp: &Path, bytes: &[u8]) -> Result<fs::File> {
    let file = write_temp_unsynced(tmp, bytes)?;
    file.sync_all().map_err(Error::io("sync", tmp))?;
    Ok(file)
}

/// [`write_temp`] without the sync.
fn write_temp_unsynced(tmp: &Path, bytes: &[u8]) -> Result<fs::File> {
    let mut file = create_new(tmp)?;
    FileExt::lock_exclusive(&file).map_err(Error::io("lock", tmp))?;
    file.write_all(bytes).map_err(Error::io("write", tmp))?;
    Ok(file)
}

/// [`write_atomic`] with no sync at all, for a file that means nothing after a crash: a pane's
/// spec, read by `swarm pane-exec` within moments of being written, by a pane that a crash takes
/// down with it. Readers still never see it half written.
pub(crate) fn replace_volatile(path: &Path, bytes: &[u8]) -> Result<()> {
    replace(path, bytes, false)
}

/// Writes `bytes` to a fresh temp file beside `path` (its content synced when `sync`) and
/// renames it over `path`; a temp file left by a failure is removed.
fn replace(path: &Path, bytes: &[u8], sync: bool) -> Result<()> {
    check_regular(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    sweep_once(dir);
    let tmp = temp_name(dir, path);
    let result = (|| {
        // Held until the rename: the flock tells a sweeper this temp file's writer is alive.
        let _file = match sync {
            true => write_temp(&tmp, bytes)?,
            false => write_temp_unsynced(&tmp, bytes)?,
        };
        fs::rename(&tmp, path).map_err(Error::io("replace", path))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Creates `path` with `bytes` unless something is there (the complete, synced temp file is
/// renamed without replacing), and does not sync the directory: a caller creating several
/// files in one directory syncs it once ([`sync_dir`]) after the last. `false` when `path`
/// already existed (nothing was written).
pub(crate) fn create_new_unsynced(path: &Path, bytes: &[u8]) -> Result<bool> {
    check_regular(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = temp_name(dir, path);
    let result = (|| {
        let _file = write_temp(&tmp, bytes)?;
        match place_new(&tmp, path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(Error::io("create", path)(e)),
        }
    })();
    let _ = fs::remove_file(&tmp);
    result
}

/// What marks a temp file of [`write_atomic`]: `.<name>.tmp-<pid>-<random>`.
pub(crate) const TEMP_MARK: &str = ".tmp-";
/// A temp file younger than this is left alone even if unlocked: its writer may have created it
/// and not yet taken the flock.
const TEMP_GRACE: Duration = Duration::from_secs(5);

/// Sweeps each directory once per process: a CLI call writes a few files and exits, and a
/// long-running teammate's directories are swept by the next CLI call.
pub(crate) fn sweep_once(dir: &Path) {
    static SWEPT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let mut swept = SWEPT.lock().unwrap_or_else(|e| e.into_inner());
    if !swept.iter().any(|d| d == dir) {
        swept.push(dir.to_path_buf());
        drop(swept);
        sweep_temp_files(dir);
    }
}

/// A lock directory being built or released (`.F.lock.new.tmp-…`, `.F.lock.released.tmp-…`)
/// whose process is gone: its owner file is missing or unlocked, and it is not fresh.
fn sweep_lock_leftover(dir: &Path) {
    let fresh = fs::symlink_metadata(dir)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_none_or(|age| age <= TEMP_GRACE);
    if fresh {
        return;
    }
    let dead = match open_read(&dir.join("owner")) {
        Ok(Some(owner)) => FileExt::try_lock_exclusive(&owner).unwrap_or(false),
        Ok(None) => true,
        Err(_) => false,
    };
    if dead {
        let _ = fs::remove_dir_all(dir);
    }
}

/// Removes temp files whose writer is gone: unlocked and older than [`TEMP_GRACE`]. A writer
/// killed between creating its temp file and the rename leaves one behind; without this they
/// pile up beside the file forever.
pub(crate) fn sweep_temp_files(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !name.starts_with('.') || !name.contains(TEMP_MARK) {
            continue;
        }
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            sweep_lock_leftover(&path);
            continue;
        }
        // Not a regular file of ours with one link: not a temp file of ours either.
        let Ok(Some(file)) = open_read(&path) else {
            continue;
        };
        let old = file
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > TEMP_GRACE);
        if old && FileExt::try_lock_exclusive(&file).unwrap_or(false) {
            let _ = fs::remove_file(&path);
        }
    }
}

/// `value` as every JSON file is written: pretty, with a final newline.
fn json_bytes<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|source| Error::Json {
        path: path.to_path_buf(),
        source,
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

pub fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    write_atomic(path, &json_bytes(path, value)?)
}

/// [`write_json`] without the final directory sync: the content is durable and the rename
/// atomic, but a crash may undo the rename. Only for a change that a crash makes moot anyway,
/// a claim of the next task (PROTOCOL.md 8b: a claim is a lease).
pub(crate) fn write_json_unsynced<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    replace(path, &json_bytes(path, value)?, true)
}

/// [`write_json`] with no sync at all ([`replace_volatile`]), for a record a crash of the
/// machine makes moot: swarm's record of a process it started, which names the boot it was
/// made in.
pub(crate) fn write_json_volatile<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    replace(path, &json_bytes(path, value)?, false)
}

/// `write_json` for a file that must not exist yet (see [`write_new`]).
pub(crate) fn write_json_new<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let bytes = json_bytes(path, value)?;
    if write_new(path, &bytes)? {
        return Ok(());
    }
    Err(Error::usage(format!(
        "{} already exists; refusing to overwrite it (is the high-water mark behind?)",
        path.display()
    )))
}

/// Writes `bytes` to `path`, which must not exist yet: the complete temp file is renamed to
/// `path` without replacing (`RENAME_NOREPLACE`), so nothing is ever overwritten or seen half
/// written. `false`, with nothing written, when something is already there.
pub(crate) fn write_new(path: &Path, bytes: &[u8]) -> Result<bool> {
    check_regular(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = temp_name(dir, path);
    let result = (|| {
        let _file = write_temp(&tmp, bytes)?;
        match place_new(&tmp, path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(Error::io("create", path)(e)),
        }
        sync_dir(dir);
        Ok(true)
    })();
    let _ = fs::remove_file(&tmp);
    result
}

/// Renames `tmp` to `path` unless something is there. Where the file system cannot do that in
/// one step, a hard link does it (readers may then briefly see two links).
fn place_new(tmp: &Path, path: &Path) -> std::io::Result<()> {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    match renameat_with(CWD, tmp, CWD, path, RenameFlags::NOREPLACE) {
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => fs::hard_link(tmp, path),
        other => other.map_err(Into::into),
    }
}

/// Appends `bytes` to the regular file `path` (created 0600 if missing) and syncs it: for
/// append-only records (a relay's log of keys it has seen). Never follows a symlink.
pub(crate) fn append(path: &Path, bytes: &[u8]) -> Result<()> {
    check_regular(path)?;
    let mut f = open_append(path)?;
    f.write_all(bytes).map_err(Error::io("append to", path))?;
    f.sync_all().map_err(Error::io("sync", path))
}

/// Creates `path` with `contents` unless it exists, mode 0600: written under a temp name and put
/// in place without replacing anything, so nobody ever sees it empty.
pub fn create_if_missing(path: &Path, contents: &[u8]) -> Result<()> {
    check_regular(path)?;
    if fs::symlink_metadata(path).is_ok() {
        return Ok(());
    }
    // Complete before it has its name: a reader racing the creation (a relay scanning every
    // inbox) must never find the file empty and take it for a damaged one.
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = temp_name(dir, path);
    let result = (|| {
        let _file = write_temp(&tmp, contents)?;
        match place_new(&tmp, path) {
            Err(e) if e.kind() != ErrorKind::AlreadyExists => Err(Error::io("create", path)(e)),
            _ => Ok(()),
        }
    })();
    let _ = fs::remove_file(&tmp);
    result
}

/// Moves a corrupt file aside to `<file>.corrupt-<unix-ms>` and says so on stderr. Returns the
/// new path.
pub(crate) fn quarantine(path: &Path, why: &str) -> Result<PathBuf> {
    let target = quarantine_target(path);
    fs::rename(path, &target).map_err(Error::io("quarantine", path))?;
    said_quarantined(path, why, &target);
    Ok(target)
}

/// A free `<file>.corrupt-<ms>` name for `path`.
pub(crate) fn quarantine_target(path: &Path) -> PathBuf {
    let mut target = PathBuf::from(format!("{}.corrupt-{}", path.display(), now_ms()));
    let mut n = 1;
    while target.exists() {
        target = PathBuf::from(format!("{}.corrupt-{}-{n}", path.display(), now_ms()));
        n += 1;
    }
    target
}

pub(crate) fn said_quarantined(path: &Path, why: &str, target: &Path) {
    eprintln!(
        "swarm: warning: {} could not be read ({why}); moved it to {} and started a fresh file",
        path.display(),
        target.display()
    );
}

/// Reads and parses a JSON file. A file that does not parse as `T` is quarantined and `None`
/// returned, as for a missing file. Call this only under the file's lock when you will rewrite it.
pub(crate) fn read_json_or_quarantine<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    let Some(bytes) = read_file(path)? else {
        return Ok(None);
    };
    match parse_json(&bytes) {
        Ok(v) => Ok(Some(v)),
        Err(e) => {
            quarantine(path, &e)?;
            Ok(None)
        }
    }
}

/// Reads and parses a JSON file without touching it; a parse failure is an error.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    let Some(bytes) = read_file(path)? else {
        return Ok(None);
    };
    parse_json(&bytes).map(Some).map_err(|e| {
        Error::Usage(format!(
            "{} is not valid ({e}); repair it or move it aside",
            path.display()
        ))
    })
}

/// Strict JSON: no byte-order mark, valid UTF-8, the shape of `T`.
///
/// A key that appears twice in one object keeps its last value, as JavaScript's `JSON.parse`
/// does: Claude Code reads and writes these same files, and two programs that read one file
/// differently are worse than either rule. (serde's derive refuses a repeated field, so that
/// case is parsed again through `serde_json::Value`, which keeps the last.)
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> std::result::Result<T, String> {
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Err("it starts with a byte-order mark".into());
    }
    let text = std::str::from_utf8(bytes).map_err(|e| format!("invalid UTF-8: {e}"))?;
    match serde_json::from_str(text) {
        Ok(v) => Ok(v),
        Err(e) if e.to_string().starts_with("duplicate field") => {
            serde_json::from_str::<serde_json::Value>(text)
                .and_then(serde_json::from_value)
                .map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn symlinks_are_refused_for_reads_and_writes() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        fs::write(&target, "[]").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(
            read_file(&link),
            Err(Error::NotARegularFile { .. })
        ));
        assert!(matches!(
            write_atomic(&link, b"x"),
            Err(Error::NotARegularFile { .. })
        ));
        assert_eq!(fs::read(&target).unwrap(), b"[]");
    }

    #[test]
    fn corrupt_json_is_quarantined_not_lost() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inbox.json");
        fs::write(&path, "[{\"from\": ").unwrap();
        let got: Option<Vec<serde_json::Value>> = read_json_or_quarantine(&path).unwrap();
        assert!(got.is_none());
        assert!(!path.exists());
        let moved: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(moved.len(), 1);
        assert!(moved[0]
            .to_string_lossy()
            .starts_with("inbox.json.corrupt-"));
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value_like_json_parse() {
        #[derive(Debug, serde::Deserialize)]
        struct Entry {
            from: String,
            #[serde(flatten)]
            extra: serde_json::Map<String, serde_json::Value>,
        }
        let e: Entry = parse_json(br#"{"from": "a", "from": "b", "x": 1, "x": 2}"#).unwrap();
        assert_eq!(e.from, "b");
        assert_eq!(e.extra["x"], 2);
        let err = parse_json::<Entry>(br#"{"from": 1, "from": 2}"#).unwrap_err();
        assert!(err.contains("invalid type"), "{err}");
    }

    #[test]
    fn world_writable_store_directories_are_set_back_to_0700() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        crate::store::paths::Store::new(&root);
        let inboxes = root.join("inboxes");
        ensure_dir(&inboxes).unwrap();
        fs::set_permissions(&inboxes, fs::Permissions::from_mode(0o777)).unwrap();
        ensure_dir(&inboxes).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&inboxes), 0o700);
        fs::set_permissions(&inboxes, fs::Permissions::from_mode(0o757)).unwrap();
        write_atomic(&inboxes.join("coder.json"), b"[]").unwrap();
        assert_eq!(mode(&inboxes), 0o700);
        // Above the root is not ours to change; a shared (sticky) root is refused, not closed.
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
        ensure_dir(&root.join("a/b")).unwrap();
        assert_eq!(mode(dir.path()), 0o777);
        assert_eq!(mode(&root.join("a")), 0o700);
        fs::set_permissions(&root, fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(matches!(
            ensure_dir(&root.join("a")),
            Err(Error::InsecureDir { mode: 0o1777, .. })
        ));
        assert_eq!(mode(&root), 0o1777);
    }

    #[test]
    fn a_killed_writers_temp_file_is_swept_and_a_live_ones_kept() {
        use std::time::SystemTime;
        let dir = tempfile::tempdir().unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        let dead = dir.path().join(".a.json.tmp-4242-0");
        let live = dir.path().join(".b.json.tmp-4243-0");
        for p in [&dead, &live] {
            File::create(p).unwrap().set_modified(old).unwrap();
        }
        let holder = File::open(&live).unwrap();
        FileExt::lock_exclusive(&holder).unwrap();
        write_atomic(&dir.path().join("a.json"), b"x").unwrap();
        assert!(!dead.exists());
        assert!(live.exists());
    }

    #[test]
    fn bom_and_invalid_utf8_do_not_parse() {
        assert!(parse_json::<serde_json::Value>(b"\xEF\xBB\xBF[]").is_err());
        assert!(parse_json::<serde_json::Value>(b"[\"\xff\"]").is_err());
        assert!(parse_json::<serde_json::Value>(b"[]").is_ok());
    }
}
