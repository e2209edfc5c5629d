//! The per-recipient spool of the inbox group commit: `teams/<team>/spool/<agent>/`.
//!
//! A sender that finds the inbox lock busy does not queue for it. It drops its entry, already
//! printed the way the inbox array holds it, into the spool as one file, and whoever holds the
//! lock takes in every spooled entry with one rewrite of the inbox (one fsync, one directory
//! fsync) and then removes those files. The sender's acknowledgement is "my file is gone", so an
//! acknowledged message is always durable in the array: an entry leaves the spool only when it
//! is in the inbox, or when it is not a message, and then it is renamed after itself
//! (`.<entry>.corrupt-rejected`) so its sender reports it not delivered. One the holder could
//! not open or read stays. The spool is outside `inboxes/`, where
//! Claude Code never looks, and is hardened like the rest of the store: 0700 directory, 0600
//! files placed by rename from a flocked temp file (so nobody reads half an entry, and the temp
//! sweep knows a dead writer's leftover), never opened through a symlink, refused when not ours
//! or hard-linked. A spool file does not need its own fsync: until it is taken in, nobody was
//! told the message arrived.
//!
//! Names start with the time in nanoseconds, so entries are taken in roughly in the order they
//! were dropped (one sender's are always in order: it drops the next only after the last went).
//!
//! `SWARM_SPOOL_FAULT` is a hook for the fault suite (with the `seams` feature only):
//! `open-eio` makes this process's open of every entry another process dropped fail with EIO,
//! as a committer meeting an I/O error, EMFILE or ENOMEM on that one open would.

use std::fs;
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fs4::fs_std::FileExt;

use super::InboxMessage;
use crate::error::{Error, Result};
use crate::store::fsio;

const ENTRY_SUFFIX: &str = ".entry";
/// Entries that may wait for one inbox. A spool entry names its sender only by a pid anyone
/// can write, so the caps count everything waiting for the recipient: past them a sender is
/// refused with a clear error instead of a committer reading gigabytes.
pub(super) const MAX_ENTRIES: usize = 1000;
/// Bytes that may wait for one inbox.
pub(super) const MAX_BYTES: u64 = 16 * 1024 * 1024;
/// The largest file read as one entry: a message at the size limit, printed with every
/// character escaped (`\u00XX`, six bytes each), and room for the other fields.
const MAX_ENTRY_BYTES: u64 = super::MAX_MESSAGE_BYTES as u64 * 6 + 64 * 1024;

/// One recipient's spool directory.
pub(super) struct Spool {
    dir: PathBuf,
}

/// An entry found in the spool.
pub(super) struct Spooled {
    pub(super) path: PathBuf,
    /// The entry exactly as it goes into the array (see [`print_entry`](super::file::print_entry)).
    pub(super) printed: Vec<u8>,
    pub(super) message: InboxMessage,
}

impl Spool {
    pub(super) fn new(dir: PathBuf) -> Spool {
        Spool { dir }
    }

    /// Drops `printed` into the spool; returns the file, whose disappearance is the ack.
    pub(super) fn drop_entry(&self, printed: &[u8], to: &str) -> Result<PathBuf> {
        fsio::ensure_dir(&self.dir)?;
        let (entries, bytes) = self.waiting();
        if entries >= MAX_ENTRIES || bytes + printed.len() as u64 > MAX_BYTES {
            return Err(Error::SpoolFull {
                to: to.to_string(),
                entries,
                bytes,
                max_entries: MAX_ENTRIES,
                max_bytes: MAX_BYTES,
            });
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let unique = uuid::Uuid::new_v4().simple().to_string();
        let pid = std::process::id();
        let name = format!("{nanos:020}-{pid}-{}{ENTRY_SUFFIX}", &unique[..12]);
        let path = self.dir.join(&name);
        let tmp = self
            .dir
            .join(format!(".{name}{}{pid}-{}", fsio::TEMP_MARK, &unique[12..]));
        let placed = (|| {
            let mut file = fsio::create_new(&tmp)?;
            // Held until the rename, so the temp sweep never takes a live sender's file.
            FileExt::lock_exclusive(&file).map_err(Error::io("lock", &tmp))?;
            file.write_all(printed).map_err(Error::io("write", &tmp))?;
            fs::rename(&tmp, &path).map_err(Error::io("place", &path))
        })();
        if placed.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        placed.map(|()| path)
    }

    /// Whether anything waits in the spool (a missing spool is empty).
    pub(super) fn has_entries(&self) -> bool {
        fs::read_dir(&self.dir).is_ok_and(|mut entries| {
            entries.any(|e| e.is_ok_and(|e| is_entry(&e.file_name().to_string_lossy())))
        })
    }

    /// How many entries wait in the spool, and their bytes (from their metadata).
    fn waiting(&self) -> (usize, u64) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return (0, 0);
        };
        entries
            .filter_map(|e| e.ok())
            .filter(|e| is_entry(&e.file_name().to_string_lossy()))
            .fold((0, 0), |(n, bytes), e| {
                (n + 1, bytes + e.metadata().map_or(0, |m| m.len()))
            })
    }

    /// How many entries wait in the spool.
    pub(super) fn count(&self) -> usize {
        fs::read_dir(&self.dir).map_or(0, |entries| {
            entries
                .filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| is_entry(&e.file_name().to_string_lossy()))
                })
                .count()
        })
    }

    /// Every spooled entry, oldest first. A file that is not an entry (not a regular file of
    /// ours, not one message) is rejected: renamed (see [`rejected`]) so it cannot stall the
    /// spool and its sender, if it still waits, reports the message not delivered. A file that
    /// could not be opened or read (EIO, EMFILE, ENOMEM) says nothing about the entry: it stays
    /// for the next commit or its own sender, unacknowledged. Temp files of senders killed
    /// before their rename are swept once per process.
    pub(super) fn list(&self) -> Result<Vec<Spooled>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(Error::io("list", &self.dir)(e)),
        };
        sweep_once(&self.dir);
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| is_entry(n))
            .collect();
        names.sort();
        // At most the caps' worth is read per commit; the rest waits for the next one.
        names.truncate(MAX_ENTRIES);
        let mut out = Vec::with_capacity(names.len());
        let mut read: u64 = 0;
        for name in names {
            if read >= MAX_BYTES {
                break;
            }
            let path = self.dir.join(&name);
            match read_entry(&path) {
                Found::Entry(spooled) => {
                    read += spooled.printed.len() as u64;
                    out.push(*spooled)
                }
                Found::Gone => {}
                Found::Unreadable(why) => eprintln!(
                    "swarm: warning: could not read spool entry {} ({why}); left it for the next \
                     commit or its sender",
                    path.display()
                ),
                Found::NotAnEntry(why) => reject(&path, &why)?,
            }
        }
        Ok(out)
    }

    /// Removes entries that are now in the inbox (or were already).
    pub(super) fn remove(&self, taken: &[Spooled]) {
        for s in taken {
            let _ = fs::remove_file(&s.path);
        }
    }
}

fn is_entry(name: &str) -> bool {
    !name.starts_with('.') && name.ends_with(ENTRY_SUFFIX)
}

/// What reading one spool file found.
enum Found {
    Entry(Box<Spooled>),
    /// It went meanwhile (taken in by another holder, or retracted by its sender).
    Gone,
    /// The open or read failed: nothing is known about the entry.
    Unreadable(String),
    /// It is there and is not one message of ours.
    NotAnEntry(String),
}

fn read_entry(path: &Path) -> Found {
    let opened = match injected_open_error(path) {
        Some(e) => Err(Error::io("open", path)(e)),
        None => fsio::open_read(path),
    };
    let mut file = match opened {
        Ok(Some(file)) => file,
        Ok(None) => return Found::Gone,
        Err(e) if is_io_fault(&e) => return Found::Unreadable(e.to_string()),
        Err(e) => return Found::NotAnEntry(e.to_string()),
    };
    match file.metadata() {
        Ok(meta) if meta.len() > MAX_ENTRY_BYTES => {
            return Found::NotAnEntry(format!(
                "it is {} bytes, more than one message can be",
                meta.len()
            ))
        }
        Ok(_) => {}
        Err(e) => return Found::Unreadable(Error::io("inspect", path)(e).to_string()),
    }
    let mut printed = Vec::new();
    if let Err(e) = (&mut file)
        .take(MAX_ENTRY_BYTES + 1)
        .read_to_end(&mut printed)
    {
        return Found::Unreadable(Error::io("read", path)(e).to_string());
    }
    match fsio::parse_json::<InboxMessage>(&printed) {
        Ok(message) => Found::Entry(Box::new(Spooled {
            path: path.to_path_buf(),
            printed,
            message,
        })),
        Err(why) => Found::NotAnEntry(why),
    }
}

/// An error of the open itself, which says nothing about what is there; not the ELOOP that
/// `O_NOFOLLOW` gives for a symlink planted in the spool, nor a refusal of what was opened.
fn is_io_fault(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.raw_os_error() != Some(libc::ELOOP))
}

/// Where a rejected entry goes: hidden (not an entry any more) and named after the entry, so
/// its sender finds it with one look. `.corrupt-` makes `swarm status` list it.
fn rejected_path(entry: &Path) -> PathBuf {
    let name = entry.file_name().unwrap_or_default().to_string_lossy();
    entry.with_file_name(format!(".{name}.corrupt-rejected"))
}

/// Where the sender of `entry`, whose file is gone, finds it if a committer rejected it
/// rather than took it in.
pub(super) fn rejected(entry: &Path) -> Option<PathBuf> {
    let aside = rejected_path(entry);
    fs::symlink_metadata(&aside).is_ok().then_some(aside)
}

fn reject(path: &Path, why: &str) -> Result<()> {
    let aside = rejected_path(path);
    match fs::rename(path, &aside) {
        Ok(()) => {
            eprintln!(
                "swarm: warning: spool entry {} is not a message ({why}); moved it to {}, and its \
                 sender, if it still waits, reports it not delivered",
                path.display(),
                aside.display()
            );
            Ok(())
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("move aside", path)(e)),
    }
}

/// The error `SWARM_SPOOL_FAULT` injects into the open of `path`, if any. Only with the `seams`
/// feature (the tests'): an installed swarm ignores the variable.
fn injected_open_error(path: &Path) -> Option<std::io::Error> {
    if !cfg!(feature = "seams") || std::env::var("SWARM_SPOOL_FAULT").as_deref() != Ok("open-eio") {
        return None;
    }
    // Entry names are `<nanos>-<pid>-<unique>.entry`: this process's own entries open normally.
    let name = path.file_name()?.to_string_lossy();
    let pid = name.split('-').nth(1)?;
    (pid != std::process::id().to_string()).then(|| std::io::Error::from_raw_os_error(libc::EIO))
}

fn sweep_once(dir: &Path) {
    static SWEPT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let mut swept = SWEPT.lock().unwrap_or_else(|e| e.into_inner());
    if !swept.iter().any(|d| d == dir) {
        swept.push(dir.to_path_buf());
        drop(swept);
        fsio::sweep_temp_files(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::agent;
    use crate::store::mailbox::file::print_entry;
    use crate::store::names::AgentName;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn entries_are_listed_oldest_first_and_bad_files_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("spool/coder"));
        assert!(spool.list().unwrap().is_empty(), "a missing spool is empty");
        assert!(!spool.has_entries());
        let first = InboxMessage::new(&AgentName::lead(), "one");
        let second = InboxMessage::new(&agent("coder"), "two");
        let p1 = spool
            .drop_entry(&print_entry(&first).unwrap(), "coder")
            .unwrap();
        spool
            .drop_entry(&print_entry(&second).unwrap(), "coder")
            .unwrap();
        assert_eq!(
            fs::metadata(&p1).unwrap().permissions().mode() & 0o777,
            0o600
        );
        fs::write(dir.path().join("spool/coder/0-bad.entry"), "{\"from\": ").unwrap();
        assert!(spool.has_entries());
        let listed = spool.list().unwrap();
        let texts: Vec<&str> = listed.iter().map(|s| s.message.text.as_str()).collect();
        assert_eq!(texts, ["one", "two"]);
        assert_eq!(listed[0].message, first);
        spool.remove(&listed);
        assert!(!spool.has_entries(), "the bad file was set aside");
        let bad = dir.path().join("spool/coder/0-bad.entry");
        assert!(rejected(&bad).is_some(), "its sender would see it rejected");
    }
}
