//! A small builder for running the real `swarm` binary against a temp root, plus a private tmux
//! server per test. Tests read like sentences:
//! `env.swarm(["send", "--to", "coder", "hi"]).ok();`

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

pub const BIN: &str = env!("CARGO_BIN_EXE_swarm");

/// Environment variables that would leak the developer's own session into a test.
const SCRUBBED: &[&str] = &[
    "SWARM_ROOT",
    "SWARM_TEAM",
    "SWARM_AGENT_NAME",
    "SWARM_AGENT_ID",
    "CLAUDE_CONFIG_DIR",
    "TMUX",
    "TMUX_PANE",
    "TERM_PROGRAM",
    "ITERM_SESSION_ID",
    "CLAUDE_CODE_TEAMMATE_COMMAND",
];

/// A temp root for one test.
pub struct Env {
    pub dir: TempDir,
}

impl Env {
    pub fn new() -> Env {
        Env {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// A fresh env with team `t`, teammates `names` (added through the real binary).
    pub fn with_team(names: &[&str]) -> Env {
        let env = Env::new();
        env.swarm(["team", "create", "t"]).ok();
        for name in names {
            env.add_member("t", name);
        }
        env
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Registers a member by editing the roster the way the launcher does (a test fixture).
    pub fn add_member(&self, team: &str, name: &str) {
        let path = self.path(&format!("teams/{team}/config.json"));
        let mut config = read_json(&path);
        let members = config["members"].as_array_mut().unwrap();
        members.push(serde_json::json!({
            "agentId": format!("{name}@{team}"), "name": name, "agentType": "general-purpose",
            "color": "blue", "joinedAt": 1, "tmuxPaneId": "", "cwd": "/", "subscriptions": [],
            "backendType": "in-process", "isActive": true
        }));
        std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
        std::fs::write(
            self.path(&format!("teams/{team}/inboxes/{name}.json")),
            "[]",
        )
        .unwrap();
    }

    /// `swarm ARGS` with this root and team `t` by default.
    pub fn swarm<I, S>(&self, args: I) -> Swarm
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new(BIN);
        for var in SCRUBBED {
            cmd.env_remove(var);
        }
        cmd.env("SWARM_ROOT", self.root())
            .env("SWARM_TEAM", "t")
            .args(args);
        Swarm { cmd, stdin: None }
    }

    /// A `swarm debug hold-lock FILE` process that holds the store lock on `file` once this
    /// returns; SIGKILL it to leave the lock behind as a crash would.
    pub fn hold_lock(&self, file: &Path) -> std::process::Child {
        use std::io::BufRead;
        let mut holder = self
            .swarm([OsStr::new("debug"), "hold-lock".as_ref(), file.as_os_str()])
            .spawn();
        let mut line = String::new();
        std::io::BufReader::new(holder.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "locked\n");
        holder
    }

    /// Every file under the root with its bytes: compare before and after to prove a refused
    /// command changed nothing.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![self.root().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let entry = entry.unwrap();
                let ft = entry.file_type().unwrap();
                let path = entry.path();
                if ft.is_dir() {
                    stack.push(path.clone());
                    out.insert(path, b"<dir>".to_vec());
                } else if ft.is_symlink() {
                    out.insert(
                        path.clone(),
                        std::fs::read_link(&path)
                            .unwrap()
                            .into_os_string()
                            .into_encoded_bytes(),
                    );
                } else if ft.is_file() {
                    out.insert(path.clone(), std::fs::read(&path).unwrap_or_default());
                } else {
                    // A FIFO or socket: reading it could block forever.
                    out.insert(path, b"<special file>".to_vec());
                }
            }
        }
        out
    }
}

pub struct Swarm {
    pub cmd: Command,
    stdin: Option<Vec<u8>>,
}

impl Swarm {
    pub fn env(mut self, k: &str, v: impl AsRef<OsStr>) -> Swarm {
        self.cmd.env(k, v);
        self
    }

    pub fn env_remove(mut self, k: &str) -> Swarm {
        self.cmd.env_remove(k);
        self
    }

    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Swarm {
        self.cmd.current_dir(dir);
        self
    }

    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Swarm {
        self.stdin = Some(bytes.into());
        self
    }

    pub fn run(mut self) -> Out {
        self.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        self.cmd.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = self.cmd.spawn().expect("spawn swarm");
        if let Some(bytes) = self.stdin.take() {
            let mut stdin = child.stdin.take().unwrap();
            std::thread::spawn(move || {
                let _ = stdin.write_all(&bytes);
            });
        }
        Out::from(child.wait_with_output().expect("wait for swarm"))
    }

    /// Runs and asserts exit 0.
    #[track_caller]
    pub fn ok(self) -> Out {
        let out = self.run();
        assert_eq!(
            out.code, 0,
            "expected success\nstdout: {}\nstderr: {}",
            out.stdout, out.stderr
        );
        out
    }

    /// Runs and asserts the exit code.
    #[track_caller]
    pub fn code(self, code: i32) -> Out {
        let out = self.run();
        assert_eq!(
            out.code, code,
            "expected exit {code}\nstdout: {}\nstderr: {}",
            out.stdout, out.stderr
        );
        out
    }

    /// Starts in the background with piped stdin and stdout lines readable through [`Live`].
    pub fn live(mut self) -> Live {
        self.cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(Stdio::piped());
        let mut child = self.cmd.spawn().expect("spawn swarm");
        let stdin = child.stdin.take();
        let (tx, lines) = std::sync::mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                use std::io::BufRead;
                for line in std::io::BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Live {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    /// Starts in the background with piped stdout.
    pub fn spawn(mut self) -> std::process::Child {
        self.cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(Stdio::null());
        self.cmd.spawn().expect("spawn swarm")
    }
}

/// A running `swarm` process: type lines into it, wait for lines out of it; killed on drop.
pub struct Live {
    pub child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    pub seen: Vec<String>,
}

impl Live {
    pub fn type_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for an output line (stdout or stderr) containing `needle`; returns it.
    #[track_caller]
    pub fn expect(&mut self, needle: &str) -> String {
        self.expect_within(needle, Duration::from_secs(20))
    }

    #[track_caller]
    pub fn expect_within(&mut self, needle: &str, timeout: Duration) -> String {
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

#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Out {
    fn from(o: Output) -> Out {
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Out {
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }

    #[track_caller]
    pub fn stderr_has(&self, needle: &str) -> &Out {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}: {}",
            self.stderr
        );
        self
    }
}

#[track_caller]
pub fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// Polls `f` until it returns `Some` or `timeout` passes (then panics with `what`).
#[track_caller]
pub fn eventually<T>(timeout: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        if start.elapsed() > timeout {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A tmux server on a private socket, killed on drop.
pub struct Tmux {
    pub socket: String,
}

impl Tmux {
    pub fn new() -> Tmux {
        let socket = format!("swarm-test-{}-{}", std::process::id(), uuid_like());
        Tmux { socket }
    }

    pub fn cmd<I, S>(&self, args: I) -> Out
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("tmux is installed (scripts/test installs it)");
        Out::from(out)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{nanos:x}{}", N.fetch_add(1, Ordering::Relaxed))
}
