//! A process's identity on this machine: its pid and its start time.
//!
//! A pid alone is not an identity: pids are recycled. So every record swarm keeps of a process
//! (a member's pid record, a liveness lock's holder) keeps its start time too, and the pid is
//! believed only while the process with that pid started at that time. This is the store's
//! part, since store records (the liveness lock's holder) are judged by it; which machine wrote
//! a record is `machine`'s, and the roster fields are `process::pid`'s.

/// A process swarm recorded: its pid and, where the platform tells, its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PidRecord {
    pub pid: u32,
    pub start: Option<u64>,
}

impl PidRecord {
    /// The record of a process swarm just started (its start time read now).
    pub(crate) fn of(pid: u32) -> PidRecord {
        PidRecord {
            pid,
            start: start_time(pid),
        }
    }

    /// Whether the recorded process is alive and is the one that started at `start` (when
    /// known). A zombie is not alive.
    pub(crate) fn alive(&self) -> bool {
        let Some(pid) = rustix::process::Pid::from_raw(self.pid as i32) else {
            return false;
        };
        // Signal 0 only checks for existence; EPERM means it exists but is someone else's.
        let exists = match rustix::process::test_kill_process(pid) {
            Ok(()) => true,
            Err(e) => e == rustix::io::Errno::PERM,
        };
        if !exists || is_zombie(self.pid) {
            return false;
        }
        match (self.start, start_time(self.pid)) {
            (Some(want), Some(got)) => want == got,
            _ => true,
        }
    }
}

/// Fields after the command name in `/proc/<pid>/stat` (the name may contain spaces and `)`).
#[cfg(target_os = "linux")]
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Process start time in clock ticks since boot (`/proc/<pid>/stat` field 22).
#[cfg(target_os = "linux")]
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

/// The BSD process info macOS keeps for `pid` (`proc_pidinfo` with `PROC_PIDTBSDINFO`).
#[cfg(target_os = "macos")]
fn bsd_info(pid: u32) -> Option<libproc::bsd_info::BSDInfo> {
    libproc::proc_pid::pidinfo::<libproc::bsd_info::BSDInfo>(i32::try_from(pid).ok()?, 0).ok()
}

/// Process start time in microseconds since the epoch (`pbi_start_tvsec`/`pbi_start_tvusec`).
/// Not built or run on this project's Linux CI: checked against the struct macOS documents.
#[cfg(target_os = "macos")]
pub fn start_time(pid: u32) -> Option<u64> {
    let info = bsd_info(pid)?;
    Some(info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec)
}

/// Elsewhere there is no start time, so no record is one swarm will signal
/// (`process::group::Refusal::NoStartTime`): safe, but a teammate is then only stopped through
/// its pane or its shutdown handshake.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn start_time(_pid: u32) -> Option<u64> {
    None
}

#[cfg(target_os = "linux")]
fn is_zombie(pid: u32) -> bool {
    stat_fields(pid)
        .and_then(|f| f.first().map(|st| st == "Z" || st == "X"))
        .unwrap_or(false)
}

/// `SZOMB` from macOS's `sys/proc.h`: the process has exited and waits to be reaped.
#[cfg(target_os = "macos")]
fn is_zombie(pid: u32) -> bool {
    const SZOMB: u32 = 5;
    bsd_info(pid).is_some_and(|info| info.pbi_status == SZOMB)
}

/// A zombie still answers signal 0; without a process table it counts as alive until reaped.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn is_zombie(_pid: u32) -> bool {
    false
}
