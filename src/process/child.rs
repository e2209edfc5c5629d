//! Spawning a child that leads a process group of its own.
//!
//! A child in its own group can be stopped as a whole: [`super::group::signal_group`] reaches
//! everything it started, and nothing of swarm's or the user's. The group is only safe to signal
//! while its leader's pid is ours, so the record is taken right after the spawn and the owner
//! waits for the exit with `wait_exit_keep_zombie` (the leader stays a zombie, its pid
//! reserved) before it stops signalling and reaps. On Linux a child can also get a signal when
//! its parent dies, so an agent does not keep working for a runtime that was killed outright.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

use super::pid::PidRecord;

/// A spawned child that leads its own process group, with the record that lets swarm signal it.
#[derive(Debug)]
pub(crate) struct GroupChild {
    pub(crate) child: Child,
    pub(crate) record: PidRecord,
}

/// Spawns `cmd` as the leader of a new process group. With `parent_death`, the child gets that
/// signal when the thread that spawned it ends (Linux `PR_SET_PDEATHSIG`; ignored elsewhere),
/// and does not start at all if that parent is already gone.
pub(crate) fn spawn_in_group(
    cmd: &mut Command,
    parent_death: Option<Signal>,
) -> io::Result<GroupChild> {
    cmd.process_group(0);
    if let Some(signal) = parent_death {
        die_with_parent(cmd, signal);
    }
    let child = cmd.spawn()?;
    let record = PidRecord::of(child.id());
    Ok(GroupChild { child, record })
}

/// Makes the child `cmd` spawns get `signal` when the thread that spawned it ends (Linux
/// `PR_SET_PDEATHSIG`; nothing elsewhere), and not start at all if that parent is already gone.
pub(crate) fn die_with_parent(cmd: &mut Command, signal: Signal) {
    #[cfg(target_os = "linux")]
    {
        let parent = rustix::process::getpid();
        // SAFETY: the closure only makes the prctl and getppid system calls, both
        // async-signal-safe, and touches no memory but its own stack.
        unsafe {
            cmd.pre_exec(move || {
                rustix::process::set_parent_process_death_signal(Some(signal))?;
                // The parent died between the fork and the prctl: the signal will never come.
                if rustix::process::getppid() != Some(parent) {
                    return Err(Errno::SRCH.into());
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (cmd, signal);
}

/// Blocks until `child` has exited, leaving it waitable: as a zombie it keeps its pid, and so
/// its group id, until it is reaped.
pub(crate) fn wait_exit_keep_zombie(child: &Child) -> io::Result<()> {
    wait_exited(child.id())
}

/// [`wait_exit_keep_zombie`] by pid, for a waiter thread while the owner keeps the `Child`:
/// nothing else reaps it, so the later `wait` returns at once.
pub(crate) fn wait_exited(pid: u32) -> io::Result<()> {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| io::Error::from(Errno::SRCH))?;
    loop {
        match rustix::process::waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Ok(_) => return Ok(()),
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// How child `pid` ended, `(code, signal)`, if it has exited and not been reaped yet; it stays
/// a zombie for whoever reaps it (`waitid(WEXITED | WNOHANG | WNOWAIT)`). `None` while it runs
/// or when it is no child of this process.
pub(crate) fn exit_of_unreaped(pid: u32) -> Option<(Option<i32>, Option<i32>)> {
    let pid = i32::try_from(pid).ok().and_then(Pid::from_raw)?;
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    let status = loop {
        match rustix::process::waitid(WaitId::Pid(pid), options) {
            Err(Errno::INTR) => {}
            other => break other.ok()??,
        }
    };
    Some((status.exit_status(), status.terminating_signal()))
}

/// Whether a spawn failed because the argument list (and environment) is too long.
pub(crate) fn too_long(e: &io::Error) -> bool {
    e.raw_os_error() == Some(Errno::TOOBIG.raw_os_error())
}

#[cfg(test)]
mod tests {
    use std::process::Stdio;

    use super::*;
    use crate::process::group::signal_group;

    #[test]
    fn a_child_leads_its_group_and_stays_signallable_until_reaped() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "exit 3"]).stdin(Stdio::null());
        let mut spawned = spawn_in_group(&mut cmd, Some(Signal::KILL)).unwrap();
        assert_eq!(
            rustix::process::getpgid(Pid::from_raw(spawned.record.pid as i32)),
            Ok(Pid::from_raw(spawned.record.pid as i32).unwrap())
        );
        wait_exit_keep_zombie(&spawned.child).unwrap();
        assert!(!spawned.record.alive(), "a zombie is not alive");
        assert_eq!(
            signal_group(&spawned.record, Signal::TERM),
            Ok(()),
            "a zombie leader still names its group"
        );
        assert_eq!(spawned.child.wait().unwrap().code(), Some(3));
    }
}
