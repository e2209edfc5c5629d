//! Safe reads and atomic writes (PROTOCOL.md section 4).
//!
//! A reader must never see half a file and a writer must never lose what was there: every write
//! goes to a temp file in the same directory, is fsynced, renamed over the target and the
//! directory fsynced. A file that does not parse is moved aside to `<file>.corrupt-<ms>` (and
//! said on stderr) instead of being read as empty and overwritten, which is how Claude Code loses
//! inboxes. Symlinks, FIFOs and other non-regular files where a store file belongs are refused.
//! A store directory that other users can write to (a permissive umask, a `chmod -R 777`) is
//! set back to 0700 with a warning before swarm writes in it, or refused if that fails.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};

/// `O_NOFOLLOW` for `OpenOptionsExt::custom_flags`: opening a symlink fails instead of following
/// it, so a link planted in the store cannot redirect a read or write.
pub const NOFOLLOW: i32 = rustix::fs::OFlags::NOFOLLOW.bits() as i32;
const O_NONBLOCK: i32 = rustix::fs::OFlags::NONBLOCK.bits() as i32;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

fn kind_of(meta: &fs::Metadata) -> &'static str {
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

/// Creates `dir` and its missing parents with mode 0700. An existing component that is a
/// symlink or not a directory is refused. If `dir` (a store directory) already exists and
/// others can write to it, it is set back to 0700 (see [`secure_dir`]); existing parents are
/// left alone, since they may be the user's own (`--root /tmp/x`).
pub fn ensure_dir(dir: &Path) -> Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => secure_dir(dir, &meta),
        Ok(meta) => Err(Error::NotARegularFile {
            path: dir.to_path_buf(),
            found: kind_of(&meta),
        }),
        Err(e) if e.kind() == ErrorKind::NotFound => create_dir_all(dir),
        Err(e) => Err(Error::io("inspect", dir)(e)),
    }
}

/// Store directories are private. One that other users can write to would let them swap files
/// under swarm (rename an inbox away, plant a symlink), so it is set back to 0700 and said on
/// stderr; if the mode cannot be changed the directory is refused.
fn secure_dir(dir: &Path, meta: &fs::Metadata) -> Result<()> {
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 == 0 {
        return Ok(());
    }
    match fs::set_permissions(dir, fs::Permissions::from_mode(0o700)) {
        Ok(()) => {
            eprintln!(
                "swarm: warning: {} was writable by other users (mode {mode:o}); set it to 0700",
                dir.display()
            );
            Ok(())
        }
        Err(source) => Err(Error::InsecureDir {
            path: dir.to_path_buf(),
            mode,
            source,
        }),
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
pub fn check_regular(path: &Path) -> Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_file() => Ok(true),
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
    let mut file = match OpenOptions::new()
        .read(true)
        .custom_flags(NOFOLLOW | O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("open", path)(e)),
    };
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)
        .map_err(Error::io("read", path))?;
    Ok(Some(buf))
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` atomically with mode 0600. The directory it is written in is set
/// back to 0700 first if other users can write to it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    check_regular(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    if let Ok(meta) = fs::symlink_metadata(dir) {
        if meta.is_dir() {
            secure_dir(dir, &meta)?;
        }
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(Error::io("create", &tmp))?;
        file.write_all(bytes).map_err(Error::io("write", &tmp))?;
        file.sync_all().map_err(Error::io("sync", &tmp))?;
        fs::rename(&tmp, path).map_err(Error::io("replace", path))?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(Error::io("sync directory", dir))
}

pub fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|source| Error::Json {
        path: path.to_path_buf(),
        source,
    })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Creates `path` with `contents` unless it exists (O_EXCL), mode 0600.
pub fn create_if_missing(path: &Path, contents: &[u8]) -> Result<()> {
    check_regular(path)?;
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(mut f) => {
            f.write_all(contents).map_err(Error::io("write", path))?;
            f.sync_all().map_err(Error::io("sync", path))
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::io("create", path)(e)),
    }
}

/// Moves a corrupt file aside to `<file>.corrupt-<unix-ms>` and says so on stderr. Returns the
/// new path.
pub fn quarantine(path: &Path, why: &str) -> Result<PathBuf> {
    let mut target = PathBuf::from(format!("{}.corrupt-{}", path.display(), now_ms()));
    let mut n = 1;
    while target.exists() {
        target = PathBuf::from(format!("{}.corrupt-{}-{n}", path.display(), now_ms()));
        n += 1;
    }
    fs::rename(path, &target).map_err(Error::io("quarantine", path))?;
    eprintln!(
        "swarm: warning: {} could not be read ({why}); moved it to {} and started a fresh file",
        path.display(),
        target.display()
    );
    Ok(target)
}

/// Reads and parses a JSON file. A file that does not parse as `T` is quarantined and `None`
/// returned, as for a missing file. Call this only under the file's lock when you will rewrite it.
pub fn read_json_or_quarantine<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
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
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> std::result::Result<T, String> {
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
        let inboxes = dir.path().join("inboxes");
        ensure_dir(&inboxes).unwrap();
        fs::set_permissions(&inboxes, fs::Permissions::from_mode(0o777)).unwrap();
        ensure_dir(&inboxes).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&inboxes), 0o700);
        fs::set_permissions(&inboxes, fs::Permissions::from_mode(0o757)).unwrap();
        write_atomic(&inboxes.join("coder.json"), b"[]").unwrap();
        assert_eq!(mode(&inboxes), 0o700);
        // An existing parent is not ours to change.
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
        ensure_dir(&dir.path().join("a/b")).unwrap();
        assert_eq!(mode(dir.path()), 0o777);
        assert_eq!(mode(&dir.path().join("a")), 0o700);
    }

    #[test]
    fn bom_and_invalid_utf8_do_not_parse() {
        assert!(parse_json::<serde_json::Value>(b"\xEF\xBB\xBF[]").is_err());
        assert!(parse_json::<serde_json::Value>(b"[\"\xff\"]").is_err());
        assert!(parse_json::<serde_json::Value>(b"[]").is_ok());
    }
}
