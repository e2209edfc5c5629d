//! Starting a child in its own process group, its output appended to a log file.
//!
//! A teammate that runs as a child of the launcher leads its own group, so the terminal's
//! Ctrl-C reaches only the launcher and a stop reaches everything the teammate started. Its
//! stdin is /dev/null and its stdout and stderr go to a 0600 log that is never followed through
//! a symlink. Waiting is split in two so the owner can signal the group between the child's exit
//! and its reaping: [`GroupChild::wait_exited`] returns once the leader has exited but leaves it a
//! zombie, and while it is a zombie its pid (and so its group id) cannot be handed to another
//! process; [`GroupChild::reap`] then collects the status.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

use super::group::signal_group;
use super::pid::PidRecord;
use crate::error::{Error, Result};
use crate::store::fsio;

/// A child swarm started as the leader of its own process group.
#[derive(Debug)]
pub struct GroupChild {
    child: Child,
    record: PidRecord,
    log: PathBuf,
}

impl GroupChild {
    /// Starts `argv` in `cwd` with `env` added, in a new process group, output appended to `log`.
    pub fn spawn_logged(
        argv: &[String],
        env: &[(String, String)],
        cwd: &Path,
        log: &Path,
    ) -> Result<GroupChild> {
        if let Some(dir) = log.parent() {
            fsio::ensure_dir(dir)?;
        }
        fsio::check_regular(log)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(log)
            .map_err(Error::io("open", log))?;
        let err = file.try_clone().map_err(Error::io("open", log))?;
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| Error::Backend("empty argv".into()))?;
        let child = Command::new(program)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| Error::Command {
                program: program.clone(),
                detail: format!("could not start it: {e}"),
            })?;
        let record = PidRecord::of(child.id());
        Ok(GroupChild {
            child,
            record,
            log: log.to_path_buf(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The pid and start time, for signalling the group safely.
    pub fn record(&self) -> PidRecord {
        self.record
    }

    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Blocks until the leader has exited, without reaping it (`waitid(WEXITED | WNOWAIT)`).
    /// Safe on another thread while the owner keeps the child: nothing else reaps it, and
    /// [`GroupChild::reap`] afterwards returns at once.
    pub fn wait_exited(pid: u32) {
        let Some(pid) = Pid::from_raw(pid as i32) else {
            return;
        };
        loop {
            match rustix::process::waitid(
                WaitId::Pid(pid),
                WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
            ) {
                Err(rustix::io::Errno::INTR) => continue,
                // Exited, or there is nothing to wait for (ECHILD): either way it is over.
                _ => return,
            }
        }
    }

    /// Collects the exit status (blocks if the child is still running).
    pub fn reap(&mut self) -> Result<ExitStatus> {
        self.child
            .wait()
            .map_err(|e| Error::Backend(format!("failed to wait for pid {}: {e}", self.pid())))
    }

    /// SIGKILL to the whole group, then reaps the leader.
    pub fn kill(mut self) {
        let _ = signal_group(&self.record, Signal::KILL);
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_seen_exited_before_it_is_reaped_and_its_group_is_still_signallable() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("logs/x.log");
        let argv: Vec<String> = ["sh", "-c", "echo hi; sleep 30 & exit 3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut child = GroupChild::spawn_logged(&argv, &[], dir.path(), &log).unwrap();
        GroupChild::wait_exited(child.pid());
        // The leader is a zombie: its group (with the sleep in it) can still be signalled.
        assert_eq!(signal_group(&child.record(), Signal::KILL), Ok(()));
        assert_eq!(child.reap().unwrap().code(), Some(3));
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "hi\n");
    }
}
