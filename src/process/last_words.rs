//! A teammate's last words stay on its pane.
//!
//! tmux (3.3a here) closes a pane's terminal the moment the pane's process exits, and drops
//! what it had not read from it yet: a teammate that prints why it failed and exits at once (an
//! agent's error at start, a sandbox step that refuses) can leave a pane, kept by
//! `remain-on-exit`, that says only "Pane is dead", and then the launch's report and `swarm
//! logs` have no reason to show either. On a busy machine a raw tmux loop lost the one line of
//! `sh -c 'echo ...; exit 3'` on about one pane in six. So swarm's last process in a pane waits
//! a moment after a failure before it exits ([`GRACE`]): a hidden step or teammate runtime that
//! ends in an error, and the sandbox's inner step, which stays the parent of the agent it
//! starts ([`parent_of`]) rather than becoming it. That step runs inside the sandbox's pid
//! namespace, so no pid swarm records or signals changes. An agent run uncontained in a pane is
//! the pane's process itself, with nothing of swarm's left to wait, so its last line can still
//! be lost there.

use std::io::IsTerminal;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::successor::Successor;
use crate::error::Result;

/// How long the last process waits after a failure: tmux reads a pane's output on its next
/// turn of its event loop, which a loaded machine can hold back for a while.
const GRACE: Duration = Duration::from_millis(500);

/// The signals a stop or a closed pane sends the whole group: the waiting step ignores them
/// (its child's exit ends it) and its child gets them with their default actions.
const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

static IN_PANE: AtomicBool = AtomicBool::new(false);

/// Marks this process as a pane's (the trampoline and the sandbox steps are only ever that, or
/// a launcher's child writing to a log file, where nothing is lost).
pub(crate) fn in_pane() {
    IN_PANE.store(true, Ordering::Relaxed);
}

/// Waits [`GRACE`] when this process is a pane's and its error went to the pane's terminal.
pub(crate) fn after_failure() {
    if IN_PANE.load(Ordering::Relaxed) && std::io::stderr().is_terminal() {
        std::thread::sleep(GRACE);
    }
}

/// Runs `next` as this process's child and waits for it; its exit code is this one's (128 + N
/// for signal N, as a shell reports it). After a failure other than a stop, the wait of
/// [`after_failure`] lets the pane read the child's last words.
pub(crate) fn parent_of(next: Successor) -> Result<i32> {
    let mut cmd = next.command()?;
    set_dispositions(libc::SIG_IGN);
    // SAFETY: the closure only sets signal dispositions to SIG_DFL, which is async-signal-safe
    // and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            set_dispositions(libc::SIG_DFL);
            Ok(())
        });
    }
    let status = cmd.status().map_err(|e| next.failed(e))?;
    let stopped = status
        .signal()
        .is_some_and(|s| STOP_SIGNALS.contains(&s) || s == libc::SIGKILL);
    if !status.success() && !stopped {
        after_failure();
    }
    Ok(status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1))
}

fn set_dispositions(disposition: libc::sighandler_t) {
    for signal in STOP_SIGNALS {
        // SAFETY: SIG_IGN and SIG_DFL install no handler code.
        unsafe { libc::signal(signal, disposition) };
    }
}
