//! A small builder for running the real `swarm` binary against a temp root, plus a private tmux
//! server per test. Tests read like sentences:
//! `env.swarm(["send", "--to", "coder", "hi"]).ok();`,
//! `env.swarm(["team", "add", "a/b"]).refused("invalid agent name");`.
//!
//! Every command a test starts goes through [`clean_command`], which drops the caller's own
//! session (`SWARM_*`, `TMUX*` and a few more), so a developer running the suite inside tmux or
//! inside a team gets the same results as CI and never has panes placed on their own server.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

mod environment;
pub mod hostile;
mod processes;
pub use environment::*;
pub use processes::*;

pub const BIN: &str = env!("CARGO_BIN_EXE_swarm");

/// Inherited variables starting with these are removed from every command: swarm reads its
/// session from `SWARM_*`, and tmux finds the caller's server through `TMUX*` (`TMUX`,
/// `TMUX_PANE`, `TMUX_TMPDIR`).
const SCRUBBED_PREFIXES: &[&str] = &["SWARM_", "TMUX"];

/// Further variables that would leak the developer's own session into a test: the Claude Code
/// store, the terminal (iTerm2 detection) and the teammate command override.
const SCRUBBED: &[&str] = &[
    "CLAUDE_CONFIG_DIR",
    "TERM_PROGRAM",
    "ITERM_SESSION_ID",
    "CLAUDE_CODE_TEAMMATE_COMMAND",
];

/// How long a command that must be refused may take: a refusal is quick, and one that blocks
/// (on a FIFO, a lock) has to fail the test rather than hang it.
pub const REFUSAL_LIMIT: Duration = Duration::from_secs(30);

/// `program` with the caller's session variables removed (see [`SCRUBBED_PREFIXES`]).
pub fn clean_command(program: impl AsRef<OsStr>) -> Command {
    let mut cmd = Command::new(program);
    for (key, _) in std::env::vars_os() {
        let name = key.to_string_lossy();
        if SCRUBBED_PREFIXES.iter().any(|p| name.starts_with(p)) {
            cmd.env_remove(&key);
        }
    }
    for var in SCRUBBED {
        cmd.env_remove(var);
    }
    cmd
}

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

    /// Team `t`'s `--lead-verify-key` (made if it has none), as the launcher hands it to a
    /// teammate, and as `SWARM_LEAD_VERIFY_KEY` in the teammate's agent's environment.
    pub fn lead_verify_key(&self) -> String {
        self.swarm(["debug", "lead-verify-key"])
            .ok()
            .stdout
            .trim()
            .to_string()
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

    /// `program` (a shell running `swarm` itself, say) with this root, team `t`, and home and
    /// XDG directories inside the root, as [`Env::swarm`] sets them.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = clean_command(program);
        cmd.env("SWARM_ROOT", self.root()).env("SWARM_TEAM", "t");
        home_in(&mut cmd, &self.root().join("state"));
        cmd
    }

    /// `swarm ARGS` with this root and team `t` by default.
    pub fn swarm<I, S>(&self, args: I) -> Swarm
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = self.command(BIN);
        cmd.args(args);
        Swarm {
            cmd,
            stdin: None,
            root: self.root().to_path_buf(),
            context: None,
        }
    }

    /// A `swarm debug hold-lock FILE` process that holds the store lock on `file` once this
    /// returns; SIGKILL it to leave the lock behind as a crash would.
    pub fn hold_lock(&self, file: &Path) -> Child {
        let mut holder = self
            .swarm([OsStr::new("debug"), "hold-lock".as_ref(), file.as_os_str()])
            .spawn();
        let mut line = String::new();
        BufReader::new(holder.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "locked\n");
        holder
    }

    /// Every file under the root with its bytes: compare before and after to prove a command
    /// changed nothing (see [`Swarm::refused`]).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::of(self.root())
    }
}

/// Every path under a directory with its contents (a symlink's target, `<dir>` for a directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot(BTreeMap<PathBuf, Vec<u8>>);

impl Snapshot {
    /// Leaves out `<root>/state`: the tests' `HOME` and XDG directories, standing for the
    /// user's own (the lead keys in `~/.local/state`), which are not the store's; the task
    /// list's cache (`tasks/<team>/.swarm-tasks-cache`, see src/store/tasks/by_stat.rs), which a
    /// listing may rewrite and which holds nothing the files do not; and the `<root>/*.pane`
    /// captures of running teammates' output, which those teammates write while the command
    /// under test runs (swarm itself never writes there).
    pub fn of(root: &Path) -> Snapshot {
        let state = root.join("state");
        let pane_capture =
            |p: &Path| p.parent() == Some(root) && p.extension().is_some_and(|e| e == "pane");
        let mut out = BTreeMap::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let entry = entry.unwrap();
                let ft = entry.file_type().unwrap();
                let path = entry.path();
                let cache = path.file_name().is_some_and(|n| n == ".swarm-tasks-cache");
                if path == state || (ft.is_file() && (pane_capture(&path) || cache)) {
                    continue;
                }
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
        Snapshot(out)
    }

    /// Forgets `path` on this side of a comparison (a file the command was meant to change).
    pub fn without(mut self, path: &Path) -> Snapshot {
        self.0.remove(path);
        self
    }

    /// What differs from `earlier`, one line a path; empty when nothing does.
    pub fn changes_since(&self, earlier: &Snapshot) -> Vec<String> {
        let mut changes = Vec::new();
        for (path, bytes) in &earlier.0 {
            match self.0.get(path) {
                None => changes.push(format!("removed {}", path.display())),
                Some(now) if now != bytes => changes.push(format!("changed {}", path.display())),
                Some(_) => {}
            }
        }
        for path in self.0.keys().filter(|p| !earlier.0.contains_key(*p)) {
            changes.push(format!("added {}", path.display()));
        }
        changes
    }

    /// Asserts nothing differs from `earlier`.
    #[track_caller]
    pub fn assert_unchanged_since(&self, earlier: &Snapshot, what: &str) {
        let changes = self.changes_since(earlier);
        assert!(
            changes.is_empty(),
            "{what} changed the root:\n{}",
            changes.join("\n")
        );
    }

    /// This snapshot without the lock gates that are new since `earlier`: empty hidden files
    /// `.F.gate` beside a file `F`, which a lock on `F` creates once and leaves (src/store/lock.rs).
    /// They hold nothing, so a command that took a lock before refusing has still changed
    /// nothing; any other new file, and any change to an existing gate, still counts.
    fn without_new_lock_gates(mut self, earlier: &Snapshot) -> Snapshot {
        self.0.retain(|path, bytes| {
            let name = path.file_name().unwrap().to_string_lossy();
            let gate = name.starts_with('.') && name.ends_with(".gate") && bytes.is_empty();
            !gate || earlier.0.contains_key(path)
        });
        self
    }
}

pub struct Swarm {
    pub cmd: Command,
    stdin: Option<Vec<u8>>,
    /// The root [`Swarm::refused`] checks.
    root: PathBuf,
    /// Said in failure messages, e.g. which row of a table this is.
    context: Option<String>,
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

    /// Names the case in failure messages (a row of a table of inputs).
    pub fn context(mut self, context: impl Into<String>) -> Swarm {
        self.context = Some(context.into());
        self
    }

    /// The command line and context, for failure messages.
    fn describe(&self) -> String {
        let args: Vec<String> = self
            .cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        match &self.context {
            Some(c) => format!("{c}: swarm {args:?}"),
            None => format!("swarm {args:?}"),
        }
    }

    pub fn run(self) -> Out {
        self.run_within(None)
    }

    /// Runs with a hang guard: a command still running after `limit` fails the test.
    #[track_caller]
    pub fn run_within(mut self, limit: impl Into<Option<Duration>>) -> Out {
        let what = self.describe();
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
        match limit.into() {
            Some(limit) => wait_bounded(child, limit, &what),
            None => Out::from(child.wait_with_output().expect("wait for swarm")),
        }
    }

    /// Runs and asserts exit 0.
    #[track_caller]
    pub fn ok(self) -> Out {
        self.code(0)
    }

    /// Runs and asserts the exit code.
    #[track_caller]
    pub fn code(self, code: i32) -> Out {
        let what = self.describe();
        let out = self.run();
        assert_eq!(
            out.code, code,
            "expected exit {code} from {what}\nstdout: {}\nstderr: {}",
            out.stdout, out.stderr
        );
        out
    }

    /// Runs a command that must be refused: exit 2 (a usage error) within [`REFUSAL_LIMIT`],
    /// `message` on stderr, and every file under the root exactly as it was (a new empty lock
    /// gate aside, see [`Snapshot::without_new_lock_gates`]). Returns the output, so a test can
    /// also pin the whole message with [`Out::stderr_is`].
    #[track_caller]
    pub fn refused(self, message: &str) -> Out {
        self.fails_cleanly(2, message)
    }

    /// Like [`Swarm::refused`] for what names a team, member, task or request that is not
    /// there: exit 1 (a runtime failure, as gh and kubectl exit), nothing changed.
    #[track_caller]
    pub fn not_found(self, message: &str) -> Out {
        self.fails_cleanly(1, message)
    }

    #[track_caller]
    fn fails_cleanly(self, code: i32, message: &str) -> Out {
        let what = self.describe();
        let root = self.root.clone();
        let before = Snapshot::of(&root);
        let out = self.run_within(REFUSAL_LIMIT);
        assert_eq!(
            out.code, code,
            "expected {what} to fail with exit {code}\nstdout: {}\nstderr: {}",
            out.stdout, out.stderr
        );
        assert!(
            out.stderr.contains(message),
            "{what}: stderr lacks {message:?}: {}",
            out.stderr
        );
        Snapshot::of(&root)
            .without_new_lock_gates(&before)
            .assert_unchanged_since(&before, &format!("the refused {what}"));
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
        let (tx, lines) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
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
    pub fn spawn(mut self) -> Child {
        self.cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(Stdio::null());
        self.cmd.spawn().expect("spawn swarm")
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

    /// Asserts the whole of stderr, to the last newline.
    #[track_caller]
    pub fn stderr_is(&self, expected: &str) -> &Out {
        assert_eq!(self.stderr, expected, "stderr");
        self
    }
}

#[track_caller]
pub fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// `swarm ARGS` under strace (children followed, signals not shown), tracing only the system
/// calls `calls` names (`fsync,fdatasync`): its output, and strace's lines, one call each.
pub fn strace_swarm(env: &Env, calls: &str, args: &[&str]) -> (Out, String) {
    let trace = env.path("strace.txt");
    let out: Out = env
        .command("strace")
        .args(["-f", "-qq", "-e", "signal=none", "-e"])
        .arg(format!("trace={calls}"))
        .arg("-o")
        .arg(&trace)
        .arg(BIN)
        .args(args)
        .output()
        .expect("strace runs (scripts/test installs it)")
        .into();
    let lines = std::fs::read_to_string(&trace).unwrap_or_default();
    (out, lines)
}

/// A file Claude Code rewrites in place (a task, the roster: open, write, truncate; PROTOCOL.md
/// section 5), read until it parses: between its write and its truncate it is the new text
/// followed by the old tail ("trailing characters", which a full run once read).
#[track_caller]
pub fn read_json_in_place(path: &Path) -> Value {
    eventually(
        Duration::from_secs(5),
        &format!("{} to parse", path.display()),
        || serde_json::from_slice(&std::fs::read(path).ok()?).ok(),
    )
}

/// The member called `name` in a roster or a `swarm status --json` document.
#[track_caller]
pub fn member<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in roster: {doc}"))
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

/// A tmux server on a private socket, killed on drop. Its panes (a launch's lead console, its
/// teammates) inherit the server's environment, so the server gets a home and XDG directories
/// of its own, never the user's.
pub struct Tmux {
    pub socket: String,
    home: TempDir,
}

impl Tmux {
    pub fn new() -> Tmux {
        let socket = format!("swarm-test-{}-{}", std::process::id(), uuid_like());
        let home = tempfile::tempdir().expect("temp dir");
        Tmux { socket, home }
    }

    /// Where the server's `HOME` and XDG directories point (see [`home_in`]).
    pub fn state(&self) -> &Path {
        self.home.path()
    }

    pub fn cmd<I, S>(&self, args: I) -> Out
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = clean_command("tmux");
        home_in(&mut cmd, self.home.path());
        let out = cmd
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux is installed (scripts/test installs it)");
        Out::from(out)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = clean_command("tmux")
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
