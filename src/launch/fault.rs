//! `SWARM_LAUNCH_FAULT=kill-at:STEP`, a hook for the fault tests (with the `seams` feature
//! only): the launcher SIGKILLs itself at that step of a launch, as a user's `kill -9` or a
//! crash would land there. The steps, in order: `created` (the new team's roster written),
//! `prompted` (the first messages written), `reserved` (the roster holds the launch's intent),
//! `opened` (tmux made the panes, the roster does not name them yet).

/// Dies here when the fault names `step`.
pub(super) fn kill_at(step: &str) {
    let wanted = std::env::var("SWARM_LAUNCH_FAULT").ok();
    if wanted.as_deref().and_then(|f| f.strip_prefix("kill-at:")) == Some(step) {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    }
}
