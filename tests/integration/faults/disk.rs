//! A full disk: a send that runs out of space (a filled tmpfs where the test may mount one, and
//! always the kernel's file-size limit) fails with a clear error and leaves the inbox byte for
//! byte as it was, with no temp file or lock behind.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use super::{files_named, read_json_array};
use crate::support::*;

/// Asserts a send that ran out of space: a clear error, the inbox byte for byte as it was, and
/// no temp file or lock directory left behind.
#[track_caller]
fn assert_failed_cleanly(out: &Out, errno_text: &str, inbox: &Path, before: &[u8]) {
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.starts_with("swarm: error: failed to ") && out.stderr.contains(errno_text),
        "unclear error: {}",
        out.stderr
    );
    assert_eq!(std::fs::read(inbox).unwrap(), before, "the inbox changed");
    let dir = inbox.parent().unwrap();
    assert_eq!(files_named(dir, ".tmp-"), Vec::<PathBuf>::new());
    assert_eq!(files_named(dir, ".lock"), Vec::<PathBuf>::new());
}

/// A tmpfs mounted for the test, lazily unmounted on drop.
pub(super) struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path) -> Result<Tmpfs, String> {
        Tmpfs::mount_sized(dir, "64k")
    }

    /// A tmpfs of `size` (as mount's `size=` option reads it) at `dir`.
    pub(super) fn mount_sized(dir: &Path, size: &str) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(dir).unwrap();
        let out = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir)
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(Tmpfs(dir.to_path_buf()))
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// A 64 KiB tmpfs filled to the last page: every send fails cleanly; then pages are freed one
/// at a time, each send failing cleanly (wherever it ran out: the lock owner file or the new
/// inbox) until one fits.
fn full_tmpfs(env: &Env) -> Result<(), String> {
    let small = env.path("small");
    let _mounted = Tmpfs::mount(&small)?;
    let swarm = |args: &[&str]| env.swarm(args).env("SWARM_ROOT", &small);
    swarm(&["team", "create", "t"]).ok();
    swarm(&["team", "add", "coder"]).ok();
    for i in 0..12 {
        swarm(&[
            "send",
            "--to",
            "coder",
            &format!("message {i} before the disk filled"),
        ])
        .ok();
    }
    let inbox = small.join("teams/t/inboxes/coder.json");
    let before = std::fs::read(&inbox).unwrap();
    let filler_path = small.join("filler");
    let mut filler = std::fs::File::create(&filler_path).unwrap();
    let mut size = 0u64;
    loop {
        match std::io::Write::write(&mut filler, &[0u8; 4096]) {
            Ok(n) => size += n as u64,
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
                break;
            }
        }
    }
    let mut failures = 0;
    loop {
        let out = swarm(&["send", "--to", "coder", "after the disk filled"]).run();
        if out.code == 0 {
            break;
        }
        assert_failed_cleanly(&out, "No space left on device", &inbox, &before);
        failures += 1;
        assert!(failures < 32, "still failing with 32 pages freed");
        size = size.saturating_sub(4096);
        filler.set_len(size).unwrap();
    }
    eprintln!("disk full (tmpfs): {failures} clean failures before the send fit");
    assert!(failures >= 2, "the full disk made the send fail");
    let after = read_json_array(&inbox);
    assert_eq!(after.len(), 13);
    assert_eq!(after[12]["text"], "after the disk filled");
    Ok(())
}

/// The same refusal through the kernel's file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored, so
/// writes past the limit fail with EFBIG): works without mount rights.
fn file_size_limit(env: &Env) {
    for i in 0..12 {
        env.swarm(["send", "--to", "coder", &format!("message {i}")])
            .ok();
    }
    let inbox = env.path("teams/t/inboxes/coder.json");
    let before = std::fs::read(&inbox).unwrap();
    let limit = before.len() as libc::rlim_t;
    let mut send = env.swarm(["send", "--to", "coder", "one too many"]);
    unsafe {
        send.cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let rl = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &rl) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = send.run();
    assert_failed_cleanly(&out, "File too large", &inbox, &before);
    env.swarm(["send", "--to", "coder", "after"]).ok();
    assert_eq!(read_json_array(&inbox).len(), 13);
}

/// Issue 5: a send on a full disk reports an error and the existing inbox is intact. Both
/// methods run when the tmpfs can be mounted (root); the file-size limit always runs, so this
/// test never passes without having filled something.
#[test]
fn a_full_disk_fails_the_send_and_leaves_the_inbox_intact() {
    let env = Env::with_team(&["coder"]);
    if let Err(why) = full_tmpfs(&env) {
        eprintln!("disk full: no tmpfs ({why}); the RLIMIT_FSIZE case alone runs");
    }
    file_size_limit(&env);
}
