//! Starting a teammate as a child of the launcher, its output appended to a log file.
//!
//! A teammate that runs as a child of the launcher leads its own group, so the terminal's
//! Ctrl-C reaches only the launcher and a stop reaches everything the teammate started. Its
//! stdin is /dev/null and its stdout and stderr go to a 0600 log that is never followed through
//! a symlink. Waiting is split in two so the owner can signal the group between the child's exit
//! and its reaping: [`LoggedChild::wait_exited`] returns once the leader has exited but leaves it a
//! zombie, and while it is a zombie its pid (and so its group id) cannot be handed to another
//! process; [`LoggedChild::reap`] then collects the status.
//!
//! The one child without a log is an agent lead's runtime ([`LoggedChild::spawn_console`]):
//! its console belongs on the launcher's terminal. It leads its own group like the others (so
//! Ctrl-C reaches the launcher, which stops it with the team), writes to the launcher's stderr
//! (stdout carries the launcher's own report, JSON lines with `--json`), and reads the lines
//! the launcher forwards from its stdin: a process outside the terminal's foreground group
//! cannot read the terminal itself.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

use rustix::process::Signal;

use super::child::{spawn_in_group, wait_exited};
use super::group::signal_group;
use super::pid::PidRecord;
use crate::error::{Error, Result};
use crate::store::fsio;

/// A teammate child: the leader of its own process group, with its log (none for a console on
/// the launcher's terminal).
#[derive(Debug)]
pub(crate) struct LoggedChild {
    child: Child,
    record: PidRecord,
    log: Option<PathBuf>,
}

impl LoggedChild {
    /// Starts `argv` in `cwd` with `env` added, in a new process group, output appended to `log`.
    pub(crate) fn spawn_logged(
        argv: &[String],
        env: &[(String, String)],
        cwd: &Path,
        log: &Path,
    ) -> Result<LoggedChild> {
        if let Some(dir) = log.parent() {
            fsio::ensure_dir(dir)?;
        }
        fsio::check_regular(log)?;
        let file = fsio::open_append(log)?;
        let err = file.try_clone().map_err(Error::io("open", log))?;
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| Error::Backend("empty argv".into()))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err);
        let spawned = spawn_in_group(&mut cmd, None).map_err(|e| Error::Command {
            program: program.clone(),
            detail: format!("could not start it: {e}"),
        })?;
        let (child, record) = (spawned.child, spawned.record);
        Ok(LoggedChild {
            child,
            record,
            log: Some(log.to_path_buf()),
        })
    }

    /// Starts `argv` in a new process group with its output on this process's stderr and its
    /// stdin fed, line by line as they come, from this process's stdin (see the module doc).
    pub(crate) fn spawn_console(
        argv: &[String],
        env: &[(String, String)],
        cwd: &Path,
    ) -> Result<LoggedChild> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| Error::Backend("empty argv".into()))?;
        let err = |e: std::io::Error| Error::Backend(format!("cannot hand over stderr: {e}"));
        let out = std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .map_err(err)?;
        let err_out = out.try_clone().map_err(err)?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err_out));
        let spawned = spawn_in_group(&mut cmd, None).map_err(|e| Error::Command {
            program: program.clone(),
            detail: format!("could not start it: {e}"),
        })?;
        let (mut child, record) = (spawned.child, spawned.record);
        if let Some(mut stdin) = child.stdin.take() {
            // Left behind at exit, like the console's own reader: a blocked read of the terminal
            // cannot be cancelled. A child that is gone ends it with EPIPE.
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut std::io::stdin().lock(), &mut stdin);
            });
        }
        Ok(LoggedChild {
            child,
            record,
            log: None,
        })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The pid and start time, for signalling the group safely.
    pub(crate) fn record(&self) -> PidRecord {
        self.record
    }

    /// The log file; `None` for a console on the launcher's terminal.
    pub(crate) fn log(&self) -> Option<&Path> {
        self.log.as_deref()
    }

    /// Blocks until the leader has exited, without reaping it (`waitid(WEXITED | WNOWAIT)`).
    /// Safe on another thread while the owner keeps the child: nothing else reaps it, and
    /// [`LoggedChild::reap`] afterwards returns at once.
    pub(crate) fn wait_exited(pid: u32) {
        // Exited, or nothing to wait for (ECHILD): either way it is over.
        let _ = wait_exited(pid);
    }

    /// Collects the exit status (blocks if the child is still running).
    pub(crate) fn reap(&mut self) -> Result<ExitStatus> {
        self.child
            .wait()
            .map_err(|e| Error::Backend(format!("failed to wait for pid {}: {e}", self.pid())))
    }

    /// SIGKILL to the whole group, then reaps the leader.
    pub(crate) fn kill(mut self) {
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
        let mut child = LoggedChild::spawn_logged(&argv, &[], dir.path(), &log).unwrap();
        LoggedChild::wait_exited(child.pid());
        // The leader is a zombie: its group (with the sleep in it) can still be signalled.
        assert_eq!(signal_group(&child.record(), Signal::KILL), Ok(()));
        assert_eq!(child.reap().unwrap().code(), Some(3));
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "hi\n");
    }
}
