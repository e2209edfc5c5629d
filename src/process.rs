//! The process wing: the one seam between swarm and the operating system's processes.
//!
//! Running an external command, spawning a child in its own process group, recording a pid
//! with its start time, signalling a group, and catching the signals sent to swarm itself all
//! happen here and nowhere else, so every way swarm can touch a process it did not start is in
//! one place to audit and test.

pub(crate) mod child;
pub(crate) mod exec;
pub(crate) mod fd_limit;
pub(crate) mod group;
pub(crate) mod last_words;
pub(crate) mod pid;
pub(crate) mod procfs;
pub(crate) mod signals;
pub(crate) mod spawn;
pub(crate) mod spawn_record;
pub(crate) mod successor;

/// This very binary, for the commands that run swarm again (a pane's trampoline, `swarm up`
/// from the lead console, `swarm attach` from `top`, completion scripts).
pub(crate) fn swarm_exe() -> crate::error::Result<std::path::PathBuf> {
    std::env::current_exe().map_err(crate::error::Error::io("find", "the swarm executable"))
}

/// Runs `future` to completion on a single-threaded tokio runtime: the event loop of a
/// long-lived swarm process (teammate runtime, lead console, in-process supervisor), which waits
/// on child exits, file events, signals, stdin and timers at once with `tokio::select!`.
/// One-shot commands never start a runtime, so they stay quick to start.
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    runtime().block_on(future)
}

/// A current-thread tokio runtime with its I/O, time and signal drivers.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread tokio runtime can always be built")
}
