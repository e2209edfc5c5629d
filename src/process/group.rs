//! Signalling process groups: the only way swarm sends a signal to anything.
//!
//! Every teammate runs in its own process group, so a stop reaches the agent's children too.
//! But a pid comes back from a file that may be stale or edited, and `kill(-1)` or a recycled
//! pid would hit the user's other work. So a signal goes only to a group whose leader swarm
//! recorded with its start time, and the start time and leadership are checked again right
//! before the signal is sent. A zombie leader still holds its pid (and so its group id), which
//! is why callers that reap their own children signal the group before reaping.

use std::fmt;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

use super::pid::{start_time, PidRecord};

/// Why a signal was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// pid 0 or 1 (or a negative pid): never a teammate.
    ReservedPid,
    /// The record has no start time, so the pid cannot be told from a recycled one.
    NoStartTime,
    /// No process with that pid and start time exists any more.
    Gone,
    /// The process is not the leader of its own group: not one swarm started.
    NotAGroupLeader,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refusal::ReservedPid => "the recorded pid is reserved (0 or 1)",
            Refusal::NoStartTime => {
                "the record has no start time, so swarm cannot tell it from a recycled pid"
            }
            Refusal::Gone => "the recorded process is gone",
            Refusal::NotAGroupLeader => {
                "the recorded pid does not lead its own process group, so swarm did not start it"
            }
        })
    }
}

/// Sends `signal` to the process group led by the recorded process, after checking it is still
/// that process (same start time) and still leads its group. A zombie leader counts: its group
/// may still have live members.
pub(crate) fn signal_group(record: &PidRecord, signal: Signal) -> Result<(), Refusal> {
    let pid = checked_leader(record)?;
    match rustix::process::kill_process_group(pid, signal) {
        Ok(()) => Ok(()),
        Err(_) => Err(Refusal::Gone),
    }
}

/// Whether [`signal_group`] would signal the recorded group now, without sending anything: lets
/// a caller report a record it must not trust (with what the user can do) before it acts.
pub(crate) fn check_group(record: &PidRecord) -> Result<(), Refusal> {
    checked_leader(record).map(|_| ())
}

fn checked_leader(record: &PidRecord) -> Result<Pid, Refusal> {
    if record.pid <= 1 || record.pid > i32::MAX as u32 {
        return Err(Refusal::ReservedPid);
    }
    let want = record.start.ok_or(Refusal::NoStartTime)?;
    let pid = Pid::from_raw(record.pid as i32).ok_or(Refusal::ReservedPid)?;
    if start_time(record.pid) != Some(want) {
        return Err(Refusal::Gone);
    }
    match rustix::process::getpgid(Some(pid)) {
        Ok(pgid) if pgid == pid => {}
        Ok(_) => return Err(Refusal::NotAGroupLeader),
        Err(_) => return Err(Refusal::Gone),
    }
    // The checks read /proc; the pid could have been recycled in between only if the recorded
    // process was reaped meanwhile, so look once more at the start time.
    if start_time(record.pid) != Some(want) {
        return Err(Refusal::Gone);
    }
    Ok(pid)
}

/// SIGTERM to the group, up to `grace` for the whole group to go, then SIGKILL. `Ok` when the
/// group was signalled. Waiting for the leader alone is not enough: a child that ignores
/// SIGTERM would outlive it. (A group that still holds its leader as an unreaped zombie counts
/// as present, so the caller's own child is killed after the grace period, which is harmless.)
pub(crate) fn terminate_group(record: &PidRecord, grace: Duration) -> Result<(), Refusal> {
    let pid = checked_leader(record)?;
    signal_group(record, Signal::TERM)?;
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        // kill(-pgid, 0): does any process of the group, zombies included, still exist?
        if rustix::process::test_kill_process_group(pid).is_err() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    match signal_group(record, Signal::KILL) {
        Ok(()) | Err(Refusal::Gone) => Ok(()),
        Err(other) => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    use super::*;

    fn running_in_group(pgid: u32) -> usize {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
            .filter(|stat| {
                let rest = &stat[stat.rfind(')').unwrap() + 1..];
                let f: Vec<&str> = rest.split_whitespace().collect();
                f[2] == pgid.to_string() && f[0] != "Z" && f[0] != "X"
            })
            .count()
    }

    #[test]
    fn terminate_group_kills_the_whole_group() {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let record = PidRecord::of(child.id());
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(running_in_group(record.pid), 3, "the group is running");
        terminate_group(&record, Duration::from_secs(2)).unwrap();
        assert!(!child.wait().unwrap().success());
        assert_eq!(running_in_group(record.pid), 0, "the sleeps are gone too");
    }

    /// Regression: terminate_group returned once the leader was gone, so a member that ignores
    /// SIGTERM outlived the stop.
    #[test]
    fn a_member_that_ignores_sigterm_is_killed_after_the_grace_period() {
        let mut child = Command::new("sh")
            .args(["-c", "(trap '' TERM; exec sleep 30) & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let record = PidRecord::of(child.id());
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(running_in_group(record.pid), 2, "the group is running");
        terminate_group(&record, Duration::from_millis(500)).unwrap();
        child.wait().unwrap();
        // SIGKILL is sent, not waited for: on a busy machine the sleep can still be seen for a
        // moment. One that survives the kill is still there when this gives up.
        let until = Instant::now() + Duration::from_secs(10);
        while running_in_group(record.pid) > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            running_in_group(record.pid),
            0,
            "the stubborn sleep is gone too"
        );
    }

    #[test]
    fn unsafe_records_are_refused_and_the_process_survives() {
        // Not a group leader: it shares the test's group.
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let record = PidRecord::of(child.id());
        assert_eq!(
            signal_group(&record, Signal::TERM),
            Err(Refusal::NotAGroupLeader)
        );
        let no_start = PidRecord {
            start: None,
            ..record
        };
        assert_eq!(
            signal_group(&no_start, Signal::TERM),
            Err(Refusal::NoStartTime)
        );
        let wrong_start = PidRecord {
            start: record.start.map(|t| t + 1),
            ..record
        };
        assert_eq!(signal_group(&wrong_start, Signal::TERM), Err(Refusal::Gone));
        for pid in [0, 1] {
            let reserved = PidRecord {
                pid,
                start: Some(1),
            };
            assert_eq!(
                signal_group(&reserved, Signal::TERM),
                Err(Refusal::ReservedPid)
            );
        }
        assert!(record.alive(), "nothing above touched the process");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
