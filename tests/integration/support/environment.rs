//! What a test's processes see of the machine: a home and XDG directories of their own (never
//! the user's), another uid, open-file limits, and whether they got the inotify instance a test
//! about file events needs.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::{eventually, Env, Swarm};

/// Points `cmd`'s home and XDG directories into `state` (the team lead's key goes to
/// `state/swarm/lead-keys`), so nothing a test starts reads or writes the user's own
/// (`~/.local/state/swarm`, `~/.claude` settings and hooks).
pub fn home_in(cmd: &mut Command, state: &Path) {
    cmd.env("HOME", state.join("home"))
        .env("XDG_STATE_HOME", state)
        .env("XDG_CONFIG_HOME", state.join("config"))
        .env("XDG_DATA_HOME", state.join("data"))
        .env("XDG_CACHE_HOME", state.join("cache"));
}

impl Swarm {
    /// Runs as `uid` (group `uid`, no supplementary groups); the test must run as root.
    pub fn run_as(mut self, uid: u32) -> Swarm {
        use std::os::unix::process::CommandExt;
        self.cmd.uid(uid).gid(uid);
        self
    }

    /// Runs with at most `files` open files (soft and hard limit), as after `ulimit -n FILES`.
    pub fn limit_files(self, files: u64) -> Swarm {
        self.rlimit_files(files, files)
    }

    /// Runs with open-file limits `soft` and `hard` (`ulimit -Sn SOFT -Hn HARD`).
    pub fn rlimit_files(mut self, soft: u64, hard: u64) -> Swarm {
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure makes one system call and touches only its own stack.
        unsafe {
            self.cmd.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: soft as libc::rlim_t,
                    rlim_max: hard as libc::rlim_t,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        self
    }
}

/// What a test about file events says when the process it watches has none: it fell back to
/// polling because another program holds the user's inotify instances.
const NO_INOTIFY: &str = "has no inotify instance, and this test is about file events: the \
    user's inotify instances (fs.inotify.max_user_instances) are all in use; stop some of the \
    programs holding them (or raise the limit) and run it again";

/// Fails the test, saying what it lacked, unless process `pid` holds an inotify instance.
#[track_caller]
pub fn needs_inotify(pid: u32, who: &str) {
    assert!(holds_inotify(pid), "{who} (pid {pid}) {NO_INOTIFY}");
}

/// Whether process `pid` holds an inotify instance.
pub fn holds_inotify(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .any(|target| target.to_string_lossy().contains("inotify"))
}

/// Fails the test, saying what it lacked, unless teammate `name`'s runtime watches with
/// inotify: once its waits are in place it records which (`events` in `swarm status`).
#[track_caller]
pub fn needs_events(env: &Env, name: &str) {
    let events = eventually(
        Duration::from_secs(60),
        "the runtime's events record",
        || events_record(env, name),
    );
    assert_eq!(events, "inotify", "{name}'s runtime {NO_INOTIFY}");
}

/// How teammate `name`'s runtime waits (`inotify` or `polling`), from its liveness lock file:
/// the last thing a runtime writes as it starts, so `None` until its start is done.
pub fn events_record(env: &Env, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(env.path(&format!("teams/t/alive/{name}.lock"))).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("events "))
        .map(str::to_string)
}
