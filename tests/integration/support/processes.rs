//! The processes a test starts and watches: pipes drained on threads, children killed on drop,
//! a live `swarm` to type into, and what /proc says of a pid.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Out, Swarm};

/// Reads a pipe to the end on its own thread.
pub fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_string(&mut s);
        }
        s
    })
}

/// Waits for `child` (stdout and stderr piped, or already taken), failing the test if it runs
/// longer than `limit`: a command that blocks on a FIFO must show up as a failure, not a hang.
#[track_caller]
pub fn wait_bounded(mut child: Child, limit: Duration, what: &str) -> Out {
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {limit:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Out {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Kills (SIGKILL, which also ends a stopped process) and reaps the child on drop.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `follow`, a `swarm --json inbox NAME --follow ...` command, and returns it with a
/// channel of the texts it prints.
pub fn follower(follow: Swarm) -> (KillOnDrop, mpsc::Receiver<String>) {
    let mut child = follow.spawn();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            let m: Value = serde_json::from_str(&line).unwrap();
            let _ = tx.send(m["text"].as_str().unwrap().to_string());
        }
    });
    (KillOnDrop(child), rx)
}

#[track_caller]
pub fn expect_text(rx: &mpsc::Receiver<String>, text: &str, within: Duration) {
    let until = Instant::now() + within;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(t) if t == text => return,
            Ok(_) => continue,
            Err(_) => panic!("{text:?} was not delivered within {within:?}"),
        }
    }
}

/// A running `swarm` process: type lines into it, wait for lines out of it; killed on drop.
pub struct Live {
    pub child: Child,
    pub(super) stdin: Option<std::process::ChildStdin>,
    pub(super) lines: mpsc::Receiver<String>,
    pub seen: Vec<String>,
}

impl Live {
    pub fn type_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// Waits for an output line (stdout or stderr) containing `needle`; returns it.
    #[track_caller]
    pub fn expect(&mut self, needle: &str) -> String {
        let timeout = Duration::from_secs(20);
        if let Some(line) = self.seen.iter().find(|l| l.contains(needle)) {
            return line.clone();
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no line containing {needle:?} within {timeout:?}; saw:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// Waits for the process to exit; returns its code.
    pub fn wait(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status.code().unwrap_or(-1));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU time (user + system, in clock ticks of 1/100 s) a process has used so far.
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Whether some running process's command line holds every one of `words`.
pub fn cmdlines_contain(words: &[&str]) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        !cmdline.is_empty() && words.iter().all(|w| cmdline.contains(w))
    })
}

/// The pids of live processes running `program` (as their program or, for a `#!` script, its
/// first argument) with every one of `words` in their argv. A contained teammate has a pid
/// namespace of its own, so its `$$` is not its pid on the machine: a test finds it from here.
pub fn pids_running(program: &std::path::Path, words: &[&str]) -> Vec<i32> {
    let program = program.to_string_lossy();
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let argv: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        let runs = argv.iter().take(2).any(|w| *w == program);
        if runs && words.iter().all(|w| argv.iter().any(|a| a == w)) && !gone(pid) {
            pids.push(pid);
        }
    }
    pids
}

/// True once `pid` is gone (or a zombie nobody reaped yet).
pub fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .unwrap()
            .trim_start()
            .starts_with('Z'),
    }
}
