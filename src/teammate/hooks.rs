//! Claude Code's team hooks (`TaskCreated`, `TaskCompleted`, `TeammateIdle`) for members that
//! Claude Code does not run itself: swarm's runtime teammates (shell agents and other CLIs) and
//! `swarm task create`; and its `Notification` hook for the lead console, when a teammate's
//! request has waited on the person (`notify`).
//!
//! The hooks come from the files Claude Code reads, in its order: the user's
//! `settings.json` (under `$CLAUDE_CONFIG_DIR`, else `~/.claude`), then the project's
//! `.claude/settings.json` and `.claude/settings.local.json`, with every source's hooks run
//! (identical commands once). The project's files count only in a directory the user trusted
//! (`trust`): a teammate's cwd or worktree may hold settings nobody chose, and their hooks are
//! then skipped with one note saying which and how to trust the directory. Settings files are
//! read without blocking and must be regular files (a FIFO there is refused, not waited on). The format is Claude Code's:
//! `{"hooks": {"TaskCompleted": [{"hooks": [{"type": "command", "command": "...", "timeout": 60}]}]}}`.
//! These three events take no matcher in Claude Code (2.1.328 gives them no matcher values), so
//! a `matcher` is accepted and ignored, as there; a `Notification` group's matcher selects by
//! `notification_type` (`settings`). Each command gets the event's JSON on stdin
//! (the fields Claude Code 2.1.328 sends: `hook_event_name`, `session_id`, `transcript_path`,
//! `cwd`, and `task_id`, `task_subject`, `task_description`, `teammate_name`, `team_name`, or
//! for `TeammateIdle` just the last two) and `CLAUDE_PROJECT_DIR` in its environment, and runs
//! in a process group of its own, stopped after its timeout (600 s unless the hook sets one).
//! Exit 0 lets the action go on; exit 2 blocks it, and its stderr is the reason given to the
//! agent or the user; any other exit, or a timeout, is reported and does not block, as in
//! Claude Code.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::process::child::{spawn_in_group, wait_exit_keep_zombie};
use crate::process::group::terminate_group;
use crate::store::names::TeamName;
use crate::store::tasks::{Task, TaskList};
use settings::{configured, skipped_note, HookCommand};

mod settings;

/// How long a timed-out hook's group gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

/// The team events swarm runs hooks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HookEvent {
    TaskCreated,
    TaskCompleted,
    TeammateIdle,
    /// Claude Code's, for "someone waits on you"; swarm's lead console runs it.
    Notification,
}

impl HookEvent {
    pub(crate) const ALL: [HookEvent; 4] = [
        HookEvent::TaskCreated,
        HookEvent::TaskCompleted,
        HookEvent::TeammateIdle,
        HookEvent::Notification,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            HookEvent::TaskCreated => "TaskCreated",
            HookEvent::TaskCompleted => "TaskCompleted",
            HookEvent::TeammateIdle => "TeammateIdle",
            HookEvent::Notification => "Notification",
        }
    }
}

/// Who and where an event happens: the fields every hook input shares.
#[derive(Debug, Clone)]
pub(crate) struct HookContext {
    /// The project directory: where `.claude/settings*.json` are looked for, and the hook's cwd.
    pub(crate) project_dir: PathBuf,
    pub(crate) team: String,
    /// The teammate the event is about; `None` outside a teammate (the user's shell).
    pub(crate) teammate: Option<String>,
    /// The member's conversation id, when its agent keeps one.
    pub(crate) session_id: Option<String>,
}

/// What the hooks decided.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    Proceed,
    /// A hook exited 2: its command and its stderr (the reason).
    Blocked {
        command: String,
        reason: String,
    },
}

impl HookContext {
    /// The input JSON Claude Code documents for `event`.
    fn input(&self, event: HookEvent, task: Option<&Task>) -> Value {
        let mut input = Map::new();
        input.insert(
            "session_id".into(),
            Value::from(self.session_id.clone().unwrap_or_default()),
        );
        input.insert("transcript_path".into(), Value::from(""));
        input.insert(
            "cwd".into(),
            Value::from(self.project_dir.display().to_string()),
        );
        input.insert("hook_event_name".into(), Value::from(event.name()));
        if let Some(task) = task {
            input.insert("task_id".into(), Value::from(task.id.to_string()));
            input.insert("task_subject".into(), Value::from(task.subject.clone()));
            input.insert(
                "task_description".into(),
                Value::from(task.description.clone()),
            );
        }
        if let Some(name) = &self.teammate {
            input.insert("teammate_name".into(), Value::from(name.clone()));
        }
        input.insert("team_name".into(), Value::from(self.team.clone()));
        Value::Object(input)
    }

    /// Runs every hook for `event` (about `task`, for the task events) in order; the first that
    /// blocks decides. `say` gets one line per hook that failed without blocking.
    pub(crate) fn run(&self, event: HookEvent, task: Option<&Task>, say: &dyn Fn(&str)) -> Verdict {
        let input = self.input(event, task);
        run_all(event, None, &input, &self.project_dir, say)
    }
}

/// Runs every hook configured for `event` (of the groups whose matcher takes `query`) with
/// `input` on stdin, in order; the first that blocks decides. `say` gets the note about skipped
/// project hooks and one line per hook that failed without blocking.
fn run_all(
    event: HookEvent,
    query: Option<&str>,
    input: &Value,
    project_dir: &Path,
    say: &dyn Fn(&str),
) -> Verdict {
    let hooks = match configured(event, query, project_dir) {
        Ok(configured) => {
            if let Some(note) = skipped_note(project_dir, &configured.skipped) {
                say(&note);
            }
            configured.hooks
        }
        Err(why) => {
            say(&format!("{} hooks not run: {why}", event.name()));
            return Verdict::Proceed;
        }
    };
    if hooks.is_empty() {
        return Verdict::Proceed;
    }
    let input = input.to_string();
    for hook in hooks {
        match run_one(&hook, &input, project_dir) {
            Ran::Exit(0, _) => {}
            Ran::Exit(2, stderr) => {
                return Verdict::Blocked {
                    command: hook.command,
                    reason: stderr.trim().to_string(),
                }
            }
            Ran::Exit(code, stderr) => say(&format!(
                "{} hook `{}` failed with exit status {code} (not blocking): {}",
                event.name(),
                hook.command,
                stderr.trim()
            )),
            Ran::Failed(why) => say(&format!(
                "{} hook `{}` {why} (not blocking)",
                event.name(),
                hook.command
            )),
        }
    }
    Verdict::Proceed
}

enum Ran {
    Exit(i32, String),
    Failed(String),
}

/// Runs one hook command with `input` on stdin; its stdout is not shown (exit 0 shows
/// nothing in Claude Code either).
fn run_one(hook: &HookCommand, input: &str, project_dir: &Path) -> Ran {
    let shell = which::which("bash").unwrap_or_else(|_| PathBuf::from("sh"));
    let mut cmd = Command::new(shell);
    cmd.arg("-c")
        .arg(&hook.command)
        .current_dir(project_dir)
        .env("CLAUDE_PROJECT_DIR", project_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut spawned = match spawn_in_group(&mut cmd, Some(rustix::process::Signal::KILL)) {
        Ok(spawned) => spawned,
        Err(e) => return Ran::Failed(format!("could not start: {e}")),
    };
    if let Some(mut stdin) = spawned.child.stdin.take() {
        let bytes = input.as_bytes().to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
    }
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let out = reader(
        spawned
            .child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = reader(
        spawned
            .child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let (tx, exited) = mpsc::channel();
    let pid = spawned.child.id();
    std::thread::spawn(move || {
        let _ = crate::process::child::wait_exited(pid);
        let _ = tx.send(());
    });
    let timed_out = exited.recv_timeout(hook.timeout).is_err();
    if timed_out {
        // Our own unreaped child's group: terminate it, then wait for the leader.
        let _ = terminate_group(&spawned.record, GRACE);
        let _ = wait_exit_keep_zombie(&spawned.child);
    }
    let status = spawned.child.wait();
    drop(out.join());
    let stderr = err.join().unwrap_or_default();
    if timed_out {
        return Ran::Failed(format!("timed out after {} s", hook.timeout.as_secs_f64()));
    }
    match status.map(|s| s.code()) {
        Ok(Some(code)) => Ran::Exit(code, stderr),
        Ok(None) => Ran::Failed("was killed by a signal".into()),
        Err(e) => Ran::Failed(format!("could not be waited for: {e}")),
    }
}

/// The `TaskCreated` input for a task made outside any teammate runtime (`swarm task create`,
/// a swarm file): the caller's directory, and the caller's name when it is a teammate's shell.
fn caller_context(team: &str) -> HookContext {
    HookContext {
        project_dir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        team: team.to_string(),
        teammate: std::env::var("SWARM_AGENT_NAME")
            .ok()
            .filter(|n| !n.is_empty()),
        session_id: None,
    }
}

/// Runs the `TaskCreated` hooks for a task just written, as Claude Code does: a hook that
/// blocks deletes the task again (its id is not reused) and the creation fails with its reason.
pub(crate) fn gate_created(tasks: &TaskList, team: &TeamName, task: &Task) -> Result<()> {
    let ctx = caller_context(team.as_str());
    let verdict = ctx.run(HookEvent::TaskCreated, Some(task), &|line: &str| {
        eprintln!("swarm: warning: {line}");
    });
    let Verdict::Blocked { command, reason } = verdict else {
        return Ok(());
    };
    let what = format!("creating task #{} ({})", task.id, task.subject);
    eprintln!(
        "swarm: {}",
        blocked_line(HookEvent::TaskCreated, &what, &command, &reason)
    );
    tasks.delete(&task.id)?;
    Err(Error::HookBlocked {
        event: HookEvent::TaskCreated.name(),
        what: format!("task {:?}", task.subject),
        reason: if reason.is_empty() {
            "(no reason on stderr)".into()
        } else {
            reason
        },
    })
}

/// Runs the `TaskCompleted` hooks before `swarm task update ID --status completed` writes:
/// a hook that blocks refuses the update with its reason.
pub(crate) fn gate_completed(team: &TeamName, task: &Task) -> Result<()> {
    let ctx = caller_context(team.as_str());
    let verdict = ctx.run(HookEvent::TaskCompleted, Some(task), &|line: &str| {
        eprintln!("swarm: warning: {line}");
    });
    match verdict {
        Verdict::Proceed => Ok(()),
        Verdict::Blocked { reason, .. } => Err(Error::HookBlocked {
            event: HookEvent::TaskCompleted.name(),
            what: format!("completing task #{}", task.id),
            reason: if reason.is_empty() {
                "(no reason on stderr)".into()
            } else {
                reason
            },
        }),
    }
}

/// A `Notification` hook's event: what Claude Code 2.1.328 sends its own `Notification` hooks
/// when a teammate's permission request reaches its lead (`notification_type`
/// `worker_permission_prompt`, message `coder needs permission for Bash`).
#[derive(Debug, Clone)]
pub(crate) struct Notification {
    /// Where the settings are looked for and the hook runs: the console's directory.
    pub(crate) project_dir: PathBuf,
    /// The lead's conversation id, when it has one (else empty, as for the other hooks).
    pub(crate) session_id: String,
    pub(crate) message: String,
    /// What a group's `matcher` is matched against.
    pub(crate) notification_type: &'static str,
}

impl Notification {
    /// The input JSON: Claude Code's shared fields, then `hook_event_name`, `message` and
    /// `notification_type` (its `title` is unset for these, so absent).
    fn input(&self) -> Value {
        serde_json::json!({
            "session_id": self.session_id,
            "transcript_path": "",
            "cwd": self.project_dir.display().to_string(),
            "hook_event_name": HookEvent::Notification.name(),
            "message": self.message,
            "notification_type": self.notification_type,
        })
    }

    /// Runs the `Notification` hooks whose matcher takes this type. Nothing waits on them, so
    /// exit 2 blocks nothing: it is reported with its stderr, like any other failure.
    pub(crate) fn run(&self, say: &dyn Fn(&str)) {
        let event = HookEvent::Notification;
        let verdict = run_all(
            event,
            Some(self.notification_type),
            &self.input(),
            &self.project_dir,
            say,
        );
        if let Verdict::Blocked { command, reason } = verdict {
            say(&format!(
                "{} hook `{command}` exited with status 2: {reason}",
                event.name()
            ));
        }
    }
}

/// The line the pane or the log shows when a hook blocks.
pub(crate) fn blocked_line(event: HookEvent, what: &str, command: &str, reason: &str) -> String {
    format!(
        "✋ {} hook `{command}` blocked {what} (exit 2): {}",
        event.name(),
        if reason.is_empty() {
            "(no reason on stderr)"
        } else {
            reason
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_input_has_the_fields_claude_code_sends() {
        let ctx = HookContext {
            project_dir: "/p".into(),
            team: "t".into(),
            teammate: Some("coder".into()),
            session_id: None,
        };
        assert_eq!(
            ctx.input(HookEvent::TeammateIdle, None),
            json!({"session_id": "", "transcript_path": "", "cwd": "/p",
                   "hook_event_name": "TeammateIdle", "teammate_name": "coder", "team_name": "t"})
        );
    }

    #[test]
    fn a_notification_input_has_the_fields_claude_code_sends() {
        let n = Notification {
            project_dir: "/p".into(),
            session_id: "s".into(),
            message: "coder needs permission for Bash".into(),
            notification_type: "worker_permission_prompt",
        };
        assert_eq!(
            n.input(),
            json!({"session_id": "s", "transcript_path": "", "cwd": "/p",
                   "hook_event_name": "Notification", "message": "coder needs permission for Bash",
                   "notification_type": "worker_permission_prompt"})
        );
    }

    #[test]
    fn exit_2_blocks_with_stderr_and_other_failures_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let hook = |command: &str, timeout: u64| HookCommand {
            command: command.into(),
            timeout: Duration::from_secs(timeout),
        };
        match run_one(
            &hook("cat > input.json; echo no >&2; exit 2", 30),
            "{\"a\":1}",
            dir.path(),
        ) {
            Ran::Exit(2, stderr) => assert_eq!(stderr, "no\n"),
            _ => panic!("not exit 2"),
        }
        assert_eq!(
            std::fs::read_to_string(dir.path().join("input.json")).unwrap(),
            "{\"a\":1}"
        );
        assert!(matches!(
            run_one(&hook("sleep 30", 1), "", dir.path()),
            Ran::Failed(why) if why.contains("timed out")
        ));
    }
}
