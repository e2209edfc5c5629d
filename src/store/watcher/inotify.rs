//! The system calls behind the hub: one inotify instance, its watches and its events, in the
//! few shapes the hub needs. Elsewhere than Linux there is no instance to be had, and the hub
//! polls every directory (see `polling`).

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

/// The `IN_*` bits swarm uses, with the values of the kernel's ABI (checked against rustix's in
/// a test), so the hub reads the same on every platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mask(pub(super) u32);

impl Mask {
    pub(super) const MODIFY: Mask = Mask(0x2);
    pub(super) const ATTRIB: Mask = Mask(0x4);
    pub(super) const CLOSE_WRITE: Mask = Mask(0x8);
    pub(super) const MOVED_FROM: Mask = Mask(0x40);
    pub(super) const MOVED_TO: Mask = Mask(0x80);
    pub(super) const CREATE: Mask = Mask(0x100);
    pub(super) const DELETE: Mask = Mask(0x200);
    pub(super) const DELETE_SELF: Mask = Mask(0x400);
    pub(super) const MOVE_SELF: Mask = Mask(0x800);
    pub(super) const UNMOUNT: Mask = Mask(0x2000);
    pub(super) const OVERFLOW: Mask = Mask(0x4000);
    pub(super) const IGNORED: Mask = Mask(0x8000);
    pub(super) const ISDIR: Mask = Mask(0x4000_0000);

    pub(super) const fn or(self, other: Mask) -> Mask {
        Mask(self.0 | other.0)
    }

    pub(super) fn any(self, of: Mask) -> bool {
        self.0 & of.0 != 0
    }
}

/// One event as read: the watch it came from, what happened, and to which entry (none for an
/// event about the directory itself or the queue).
#[derive(Debug)]
pub(super) struct Event {
    pub(super) wd: i32,
    pub(super) mask: Mask,
    pub(super) name: Option<OsString>,
}

/// Why a watch could not be added.
#[derive(Debug)]
pub(super) enum WatchError {
    /// The user's watches are all in use (`ENOSPC`, `fs.inotify.max_user_watches`).
    NoRoom(std::io::Error),
    /// Anything else: the directory is missing, not a directory, not ours to read.
    Other(std::io::Error),
}

#[cfg(target_os = "linux")]
pub(super) use linux::Instance;

#[cfg(not(target_os = "linux"))]
pub(super) use elsewhere::Instance;

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::OsStr;
    use std::mem::MaybeUninit;
    use std::os::unix::ffi::OsStrExt;

    use rustix::fd::OwnedFd;
    use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
    use rustix::io::Errno;

    use super::*;

    /// An inotify instance, non-blocking and closed on exec.
    pub(in crate::store::watcher) struct Instance {
        fd: OwnedFd,
    }

    impl Instance {
        /// A new instance; the error is what `inotify_init1` said (`EMFILE` when the user's
        /// instances are all in use).
        pub(in crate::store::watcher) fn open() -> std::io::Result<Instance> {
            let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)?;
            Ok(Instance { fd })
        }

        /// Watches `path` (a directory when `dir`; never through a symlink) for `mask`, added
        /// to whatever this instance already watches there: the same path always gives the same
        /// watch.
        pub(in crate::store::watcher) fn add(
            &self,
            path: &Path,
            mask: Mask,
            dir: bool,
        ) -> Result<i32, WatchError> {
            let mut flags = WatchFlags::from_bits_retain(mask.0)
                | WatchFlags::DONT_FOLLOW
                | WatchFlags::MASK_ADD;
            if dir {
                flags |= WatchFlags::ONLYDIR;
            }
            inotify::add_watch(&self.fd, path, flags).map_err(|e| match e {
                Errno::NOSPC => WatchError::NoRoom(e.into()),
                e => WatchError::Other(e.into()),
            })
        }

        /// Ends a watch (a watch the kernel already ended is no error worth reporting).
        pub(in crate::store::watcher) fn remove(&self, wd: i32) {
            let _ = inotify::remove_watch(&self.fd, wd);
        }

        /// Reads every queued event, without blocking.
        pub(in crate::store::watcher) fn read(&self, mut each: impl FnMut(Event)) {
            let mut buf = [MaybeUninit::<u8>::uninit(); 16 * 1024];
            let mut reader = inotify::Reader::new(&self.fd, &mut buf);
            loop {
                match reader.next() {
                    Ok(event) => each(Event {
                        wd: event.wd(),
                        mask: Mask(event.events().bits()),
                        name: event
                            .file_name()
                            .map(|n| OsStr::from_bytes(n.to_bytes()).to_os_string()),
                    }),
                    Err(Errno::INTR) => continue,
                    // Empty (`EAGAIN`) or unreadable: either way nothing more to hand out now.
                    Err(_) => return,
                }
            }
        }

        /// Sleeps until events are queued or `timeout` (if any) passed, in the calling thread.
        pub(in crate::store::watcher) fn wait_readable(&self, timeout: Option<Duration>) {
            use rustix::event::{poll, PollFd, PollFlags, Timespec};
            let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
            let timeout =
                timeout.and_then(|t| Timespec::try_from(t.max(Duration::from_millis(1))).ok());
            // An interrupted or failed poll just means "look again", which every caller does.
            let _ = poll(&mut fds, timeout.as_ref());
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use rustix::fs::inotify::ReadFlags;

        #[test]
        fn the_masks_are_the_kernels() {
            for (ours, theirs) in [
                (Mask::MODIFY, WatchFlags::MODIFY.bits()),
                (Mask::ATTRIB, WatchFlags::ATTRIB.bits()),
                (Mask::CLOSE_WRITE, WatchFlags::CLOSE_WRITE.bits()),
                (Mask::MOVED_FROM, WatchFlags::MOVED_FROM.bits()),
                (Mask::MOVED_TO, WatchFlags::MOVED_TO.bits()),
                (Mask::CREATE, WatchFlags::CREATE.bits()),
                (Mask::DELETE, WatchFlags::DELETE.bits()),
                (Mask::DELETE_SELF, WatchFlags::DELETE_SELF.bits()),
                (Mask::MOVE_SELF, WatchFlags::MOVE_SELF.bits()),
                (Mask::UNMOUNT, ReadFlags::UNMOUNT.bits()),
                (Mask::OVERFLOW, ReadFlags::QUEUE_OVERFLOW.bits()),
                (Mask::IGNORED, ReadFlags::IGNORED.bits()),
                (Mask::ISDIR, ReadFlags::ISDIR.bits()),
            ] {
                assert_eq!(ours.0, theirs);
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod elsewhere {
    use super::*;

    /// No inotify here: [`Instance::open`] always fails, so no instance ever exists.
    pub(in crate::store::watcher) enum Instance {}

    impl Instance {
        pub(in crate::store::watcher) fn open() -> std::io::Result<Instance> {
            Err(std::io::ErrorKind::Unsupported.into())
        }
        pub(in crate::store::watcher) fn add(
            &self,
            _: &Path,
            _: Mask,
            _: bool,
        ) -> Result<i32, WatchError> {
            match *self {}
        }
        pub(in crate::store::watcher) fn remove(&self, _: i32) {
            match *self {}
        }
        pub(in crate::store::watcher) fn read(&self, _: impl FnMut(Event)) {
            match *self {}
        }
        pub(in crate::store::watcher) fn wait_readable(&self, _: Option<Duration>) {
            match *self {}
        }
    }
}
