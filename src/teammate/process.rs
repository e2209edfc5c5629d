//! Running one turn's processes, each in a process group of its own.
//!
//! A turn is a short list of steps (one agent invocation, or the shell agent's commands), run
//! one after another on a worker thread so the runtime's main loop stays free to read the inbox
//! while the agent works. Each step's stdout is streamed to the pane (our stdout) and kept as
//! the turn's result; stderr goes straight to the pane. Because every step leads its own process
//! group, the runtime can stop a turn the way nextest stops a test: SIGTERM to the whole group,
//! a grace period, then SIGKILL. A runtime that is itself killed outright cannot do that, so each
//! step also gets a parent-death signal (Linux): the agent dies with its runtime rather than
//! keep working on a task the lead is about to hand to someone else.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::pane::Pane;
use super::work::{Launch, Outcome, Step, MAX_CAPTURE};

/// How long to keep reading a step's stdout after the step itself exited: a background process
/// it started may hold the pipe open, and must not hold the turn hostage.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Shared {
    /// The process group of the step now running, if any.
    pgid: Mutex<Option<libc::pid_t>>,
    cancelled: AtomicBool,
}

/// A turn running on its worker thread.
pub(crate) struct TurnHandle {
    shared: Arc<Shared>,
}

impl TurnHandle {
    /// Starts the steps; `done(outcome)` is called on the worker thread when they finish.
    pub(crate) fn start(
        steps: Vec<Step>,
        preface: String,
        launch: Launch,
        pane: Pane,
        done: impl FnOnce(Outcome) + Send + 'static,
    ) -> TurnHandle {
        let shared = Arc::new(Shared::default());
        let worker = Arc::clone(&shared);
        std::thread::spawn(move || {
            let outcome = run_steps(&steps, preface, &launch, &pane, &worker);
            done(outcome);
        });
        TurnHandle { shared }
    }

    /// Stops the turn: no further steps start, and `signal` goes to the running step's group.
    pub(crate) fn stop(&self, signal: libc::c_int) {
        self.shared.cancelled.store(true, Ordering::SeqCst);
        let pgid = self.shared.pgid.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pgid) = *pgid {
            // SAFETY: kill has no memory-safety preconditions. The group id is that of our own
            // unreaped child, so it cannot name a stranger's group (see `run_step`).
            unsafe { libc::kill(-pgid, signal) };
        }
    }
}

fn run_steps(
    steps: &[Step],
    preface: String,
    launch: &Launch,
    pane: &Pane,
    shared: &Shared,
) -> Outcome {
    let mut output = preface;
    let mut failure = None;
    for step in steps {
        if shared.cancelled.load(Ordering::SeqCst) {
            failure.get_or_insert_with(|| "stopped".to_string());
            break;
        }
        if let Some(echo) = &step.echo {
            pane.say(echo);
        }
        let (out, result) = run_step(step, launch, shared);
        if !output.is_empty() && !out.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&out);
        if let Err(why) = result {
            failure.get_or_insert(why);
        }
    }
    Outcome {
        success: failure.is_none(),
        output,
        failure,
    }
}

/// Runs one step to its end; returns its output and `Err(why)` if it failed.
fn run_step(step: &Step, launch: &Launch, shared: &Shared) -> (String, Result<(), String>) {
    let mut cmd = Command::new(&step.program);
    cmd.args(&step.args)
        .current_dir(&launch.cwd)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .process_group(0)
        .stdin(if step.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // The parent-death signal goes to the step when the thread that spawned it (this worker,
    // which outlives the step) ends, i.e. when the runtime dies, however it dies. It reaches the
    // step's own process only; the rest of its group is on its own, as with any SIGKILL.
    // The runtime's signal mask is left alone (tokio catches signals with handlers, which exec
    // resets to the default), and std restores SIGPIPE's default disposition itself.
    let runtime = std::process::id() as libc::pid_t;
    // SAFETY: the closure only calls prctl and getppid, both async-signal-safe, and touches no
    // memory but its own stack.
    unsafe {
        cmd.pre_exec(move || {
            #[cfg(target_os = "linux")]
            {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The runtime died between the fork and the prctl: do not start at all.
                if libc::getppid() != runtime {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
            }
            #[cfg(not(target_os = "linux"))]
            let _ = runtime;
            Ok(())
        });
    }
    let program = step.program.to_string_lossy().into_owned();

    // Spawn under the lock so `stop` either sees the group or finds `cancelled` checked here.
    let mut child = {
        let mut pgid = shared.pgid.lock().unwrap_or_else(|e| e.into_inner());
        let child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                let hint = if e.raw_os_error() == Some(libc::E2BIG) {
                    "; the prompt is too long for an argument, use --prompt-via stdin"
                } else {
                    ""
                };
                return (
                    String::new(),
                    Err(format!("could not start {program}: {e}{hint}")),
                );
            }
        };
        let id = child.id() as libc::pid_t;
        *pgid = Some(id);
        if shared.cancelled.load(Ordering::SeqCst) {
            // SAFETY: our own child's group, not yet reaped.
            unsafe { libc::kill(-id, libc::SIGTERM) };
        }
        child
    };
    let pid = child.id() as libc::pid_t;

    if let (Some(bytes), Some(mut stdin)) = (step.stdin.clone(), child.stdin.take()) {
        // A thread, so a child that writes a lot before reading cannot deadlock us. A child that
        // exits without reading closes the pipe: EPIPE (SIGPIPE stays ignored) is not an error.
        std::thread::spawn(move || match stdin.write_all(&bytes) {
            Err(e) if e.kind() != ErrorKind::BrokenPipe => {
                eprintln!("swarm: warning: could not write the prompt to the agent's stdin: {e}");
            }
            _ => {}
        });
    }

    let captured = Arc::new(Mutex::new(Vec::new()));
    // Whether the pane is mid-line after the agent's output, so our next line starts fresh.
    let mid_line = Arc::new(AtomicBool::new(false));
    let (drained_tx, drained) = mpsc::channel::<()>();
    if let Some(mut stdout) = child.stdout.take() {
        let captured = Arc::clone(&captured);
        let mid_line = Arc::clone(&mid_line);
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match stdout.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let mut pane = std::io::stdout().lock();
                        let _ = pane.write_all(&buf[..n]).and_then(|()| pane.flush());
                        mid_line.store(buf[n - 1] != b'\n', Ordering::SeqCst);
                        let mut kept = captured.lock().unwrap_or_else(|e| e.into_inner());
                        let room = MAX_CAPTURE.saturating_sub(kept.len());
                        kept.extend_from_slice(&buf[..n.min(room)]);
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = drained_tx.send(());
        });
    }

    // Wait for the exit without reaping, forget the group under the lock, then reap: `stop`
    // never signals a group id the kernel could have handed to someone else.
    wait_exit_keep_zombie(pid);
    *shared.pgid.lock().unwrap_or_else(|e| e.into_inner()) = None;
    let status = child.wait();
    let _ = drained.recv_timeout(DRAIN_AFTER_EXIT);
    if mid_line.swap(false, Ordering::SeqCst) {
        let _ = crate::output::line("");
    }
    let out = {
        let kept = captured.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&kept).into_owned()
    };
    let result = match status {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(describe(status)),
        Err(e) => Err(format!("could not wait for {program}: {e}")),
    };
    (out, result)
}

pub(crate) fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => status.to_string(),
    }
}

/// Blocks until `pid` has exited, leaving it waitable.
fn wait_exit_keep_zombie(pid: libc::pid_t) {
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable siginfo_t.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 || std::io::Error::last_os_error().kind() != ErrorKind::Interrupted {
            return;
        }
    }
}
