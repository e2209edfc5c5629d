//! `SWARM_LAUNCH_FAULT=kill-at:STEP`, `interrupt-at:STEP` and `stop-at:STEP`, hooks for the fault
//! tests (with the `seams` feature only): the launcher SIGKILLs itself at that step of a launch,
//! as a user's `kill -9` or a crash would land there, sends itself SIGINT, as a Ctrl-C would, or
//! SIGSTOPs itself, so a test can act while the launch is alive and half way. The steps,
//! in order: `created` (the new team's roster written), `prompted` (the first messages written),
//! `reserved` (the roster holds the launch's intent), `opened` (the panes or children exist, the
//! roster does not name them yet).

use rustix::process::{getpid, kill_process, Signal};

/// Signals the launcher itself here when the fault names `step`.
pub(super) fn at(step: &str) {
    let wanted = std::env::var("SWARM_LAUNCH_FAULT").unwrap_or_default();
    let signal = match wanted.split_once(':') {
        Some(("kill-at", at)) if at == step => Signal::KILL,
        Some(("interrupt-at", at)) if at == step => Signal::INT,
        Some(("stop-at", at)) if at == step => Signal::STOP,
        _ => return,
    };
    let _ = kill_process(getpid(), signal);
}
