//! The open-file limit (`RLIMIT_NOFILE`): raised once at start, checked before a launch.
//!
//! Shells usually start with a soft limit of 1024 under a much higher hard one. Every swarm
//! process raises its soft limit to the hard limit first thing ([`raise`]), so it and everything
//! it starts (runtimes, the in-process supervisor's children, agents) may open as many files as
//! the user is allowed. A launch whose processes would still run out (a shell that ran
//! `ulimit -n 20`, which lowers both limits) is refused before anything starts, with the number
//! needed ([`check_launch`]), instead of reporting teammates started that then die on their
//! first lock or watch.

use crate::error::{Error, Result};

/// Descriptors a teammate runtime may hold at once, with room to spare: stdio, its tokio
/// loop's poller and signal pipe, its one inotify instance, its liveness lock, a turn's pipes,
/// and the few locks, temp files and directories a store operation holds open. A shell
/// teammate's runtime peaked at 19 running 30 tasks that each sent a message (29 before it had
/// one inotify instance); an agent CLI it starts inherits the limit and needs its own.
pub(crate) const RUNTIME_NEEDS: u64 = 64;

/// Raises the soft limit to the hard limit. Best effort: where that is refused (macOS reports
/// an unlimited hard limit the kernel does not honour), the limit stays as it was and
/// [`check_launch`] still says when it is too low.
pub(crate) fn raise() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if let (Some(current), Some(maximum)) = (limit.current, limit.maximum) {
        if current >= maximum {
            return;
        }
    }
    let raised = Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    let _ = setrlimit(Resource::Nofile, raised);
}

/// The soft limit now (`None`: unlimited).
fn soft() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

/// Refuses a launch whose teammates' runtimes would run out of file descriptors: each one
/// inherits this process's limit.
pub(crate) fn check_launch() -> Result<()> {
    match soft() {
        Some(soft) if soft < RUNTIME_NEEDS => Err(Error::usage(format!(
            "each teammate may need up to {RUNTIME_NEEDS} open files, but processes started here \
             may open only {soft} (`ulimit -n`, and the hard limit is no higher); raise it with \
             `ulimit -n {RUNTIME_NEEDS}` or more and launch again"
        ))),
        _ => Ok(()),
    }
}
