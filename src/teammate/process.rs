//! Running one turn's processes, each in a process group of its own.
//!
//! A turn is a short list of steps (one agent invocation, or the shell agent's commands), run
//! one after another on a worker thread so the runtime's main loop stays free to read the inbox
//! while the agent works. Each step's stdout is streamed to the pane (our stdout) and kept as
//! the turn's result; stderr is copied to the pane, keeping its last lines, which a failed
//! step's reason ends with (`exit status 3; its stderr ended with: ...`), and, for a step that
//! asks (`keep_stderr`: an agent CLI that names its conversation there), its start. Because every step leads its own process
//! group, the runtime can stop a turn the way nextest stops a test: SIGTERM to the whole group,
//! a grace period, then SIGKILL. A runtime that is itself killed outright cannot do that, so each
//! step also gets a parent-death signal (Linux): the agent dies with its runtime rather than
//! keep working on a task the lead is about to hand to someone else.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::process::Signal;

use super::pane::Pane;
use super::work::{Launch, Outcome, Step, MAX_CAPTURE, MAX_STDERR_CAPTURE};
use crate::process::child::{spawn_in_group, too_long, wait_exit_keep_zombie};
use crate::process::group::signal_group;
use crate::process::pid::PidRecord;

/// The most of a step's stderr kept for a failure's reason: its last lines, in at most this
/// many bytes.
const STDERR_TAIL_BYTES: usize = 2048;
const STDERR_TAIL_LINES: usize = 5;

/// How long to keep reading a step's stdout after the step itself exited: a background process
/// it started may hold the pipe open, and must not hold the turn hostage.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Shared {
    /// The leader of the process group of the step now running, if any.
    leader: Mutex<Option<PidRecord>>,
    cancelled: AtomicBool,
    /// Called once, when the first step's process has started: the agent has the prompt.
    handed_over: Mutex<Option<HandedOver>>,
}

type HandedOver = Box<dyn FnOnce() + Send>;

/// A turn running on its worker thread.
pub(crate) struct TurnHandle {
    shared: Arc<Shared>,
}

impl TurnHandle {
    /// Starts the steps; `handed_over()` is called on the worker thread once the first step's
    /// process has started (not at all if none could start), `done(outcome)` when they finish.
    pub(crate) fn start(
        steps: Vec<Step>,
        preface: String,
        launch: Launch,
        pane: Pane,
        handed_over: impl FnOnce() + Send + 'static,
        done: impl FnOnce(Outcome) + Send + 'static,
    ) -> TurnHandle {
        let shared = Arc::new(Shared {
            handed_over: Mutex::new(Some(Box::new(handed_over))),
            ..Shared::default()
        });
        let worker = Arc::clone(&shared);
        std::thread::spawn(move || {
            let outcome = run_steps(&steps, preface, &launch, &pane, &worker);
            done(outcome);
        });
        TurnHandle { shared }
    }

    /// Stops the turn: no further steps start, and `signal` goes to the running step's group.
    pub(crate) fn stop(&self, signal: Signal) {
        self.shared.cancelled.store(true, Ordering::SeqCst);
        let leader = self.shared.leader.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(record) = *leader {
            // The leader is our own unreaped child (see `run_step`), so the group is its; a
            // refusal means the group is already gone, which is what stopping wants.
            let _ = signal_group(&record, signal);
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
    let mut stderr = String::new();
    let mut failure = None;
    for step in steps {
        if shared.cancelled.load(Ordering::SeqCst) {
            failure.get_or_insert_with(|| "stopped".to_string());
            break;
        }
        if let Some(echo) = &step.echo {
            pane.say(echo);
        }
        let (out, err, result) = run_step(step, launch, shared);
        if !output.is_empty() && !out.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&out);
        stderr.push_str(&err);
        if let Err(why) = result {
            failure.get_or_insert(why);
        }
    }
    Outcome {
        success: failure.is_none(),
        output,
        stderr,
        failure,
    }
}

/// What one step left: its stdout, the start of its stderr (if kept), and `Err(why)` if it
/// failed.
type StepEnd = (String, String, Result<(), String>);

/// Runs one step to its end.
fn run_step(step: &Step, launch: &Launch, shared: &Shared) -> StepEnd {
    let mut cmd = Command::new(&step.program);
    cmd.args(&step.args)
        .current_dir(&launch.cwd)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdin(if step.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        // Always through a copy to the pane, which keeps its last lines for a failure's reason.
        .stderr(Stdio::piped());
    // The step leads its own group, so a stop reaches whatever it started. The parent-death
    // signal goes to the step when the thread that spawned it (this worker, which outlives the
    // step) ends, i.e. when the runtime dies, however it dies. It reaches the step's own process
    // only; the rest of its group is on its own, as with any SIGKILL. The runtime's signal mask
    // is left alone (tokio catches signals with handlers, which exec resets to the default), and
    // std restores SIGPIPE's default disposition itself.
    let program = step.program.to_string_lossy().into_owned();

    // Spawn under the lock so `stop` either sees the group or finds `cancelled` checked here.
    let mut child = {
        let mut leader = shared.leader.lock().unwrap_or_else(|e| e.into_inner());
        let spawned = match spawn_in_group(&mut cmd, Some(Signal::KILL)) {
            Ok(spawned) => spawned,
            Err(e) => {
                let hint = if too_long(&e) {
                    "; the prompt is too long for an argument, use --prompt-via stdin"
                } else {
                    ""
                };
                return (
                    String::new(),
                    String::new(),
                    Err(format!("could not start {program}: {e}{hint}")),
                );
            }
        };
        *leader = Some(spawned.record);
        let handed_over = shared
            .handed_over
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(handed_over) = handed_over {
            handed_over();
        }
        if shared.cancelled.load(Ordering::SeqCst) {
            // Our own child's group, not yet reaped.
            let _ = signal_group(&spawned.record, Signal::TERM);
        }
        spawned.child
    };

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

    let kept_stderr = Arc::new(Mutex::new(Vec::new()));
    let stderr_tail = Arc::new(Mutex::new(Vec::new()));
    let keep_head = if step.keep_stderr {
        MAX_STDERR_CAPTURE
    } else {
        0
    };
    let stderr_drained = child.stderr.take().map(|mut err| {
        let (stderr_tx, stderr_drained) = mpsc::channel::<()>();
        let (kept, tail) = (Arc::clone(&kept_stderr), Arc::clone(&stderr_tail));
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match err.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let mut pane = std::io::stderr().lock();
                        let _ = pane.write_all(&buf[..n]).and_then(|()| pane.flush());
                        let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                        let room = keep_head.saturating_sub(kept.len());
                        kept.extend_from_slice(&buf[..n.min(room)]);
                        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                        tail.extend_from_slice(&buf[..n]);
                        let over = tail.len().saturating_sub(STDERR_TAIL_BYTES);
                        tail.drain(..over);
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = stderr_tx.send(());
        });
        stderr_drained
    });
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
    let _ = wait_exit_keep_zombie(&child);
    *shared.leader.lock().unwrap_or_else(|e| e.into_inner()) = None;
    let status = child.wait();
    let _ = drained.recv_timeout(DRAIN_AFTER_EXIT);
    if mid_line.swap(false, Ordering::SeqCst) {
        let _ = crate::output::line("");
    }
    let out = {
        let kept = captured.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&kept).into_owned()
    };
    // Like stdout: a background process holding the pipe must not hold the turn; what came
    // meanwhile is kept (the id codex prints comes first). Without a pipe this returns at once.
    if let Some(drained) = stderr_drained {
        let _ = drained.recv_timeout(DRAIN_AFTER_EXIT);
    }
    let err = {
        let kept = kept_stderr.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&kept).into_owned()
    };
    let tail = {
        let tail = stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&tail).into_owned()
    };
    let result = match status {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(with_stderr_tail(describe(status), &tail)),
        Err(e) => Err(format!("could not wait for {program}: {e}")),
    };
    (out, err, result)
}

/// `why` a step failed, with the last lines it wrote on stderr (the error a lead wants to read,
/// not only "exit status 3"), if it wrote any.
fn with_stderr_tail(why: String, stderr_tail: &str) -> String {
    let lines: Vec<&str> = stderr_tail
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    if lines.is_empty() {
        return why;
    }
    let last = &lines[lines.len().saturating_sub(STDERR_TAIL_LINES)..];
    format!("{why}; its stderr ended with:\n{}", last.join("\n"))
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => status.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_ends_with_the_last_lines_of_stderr() {
        assert_eq!(
            with_stderr_tail("exit status 3".into(), ""),
            "exit status 3"
        );
        assert_eq!(
            with_stderr_tail("exit status 3".into(), "\n  \n"),
            "exit status 3"
        );
        let stderr = "one\ntwo\n\nthree\nfour\nfive\nsix  \n";
        assert_eq!(
            with_stderr_tail("exit status 3".into(), stderr),
            "exit status 3; its stderr ended with:\ntwo\nthree\nfour\nfive\nsix"
        );
    }
}
