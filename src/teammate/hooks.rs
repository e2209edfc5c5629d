//! Claude Code's team hooks (`TaskCreated`, `TaskCompleted`, `TeammateIdle`) for members that
//! Claude Code does not run itself: swarm's runtime teammates (shell agents and other CLIs) and
//! `swarm task create`.
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
//! a `matcher` is accepted and ignored, as there. Each command gets the event's JSON on stdin
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
use crate::store::fsio;
use crate::store::names::TeamName;
use crate::store::tasks::{Task, TaskList};
use crate::teammate::trust;

/// Claude Code's default timeout for a command hook.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a timed-out hook's group gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

/// The team events swarm runs hooks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HookEvent {
    TaskCreated,
    TaskCompleted,
    TeammateIdle,
}

impl HookEvent {
    pub(crate) fn name(self) -> &'static str {
        match self {
            HookEvent::TaskCreated => "TaskCreated",
            HookEvent::TaskCompleted => "TaskCompleted",
            HookEvent::TeammateIdle => "TeammateIdle",
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

/// One command hook from a settings file.
#[derive(Debug, Clone, PartialEq)]
struct HookCommand {
    command: String,
    timeout: Duration,
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
        let hooks = match configured(event, &self.project_dir) {
            Ok(configured) => {
                if let Some(note) = skipped_note(&self.project_dir, &configured.skipped) {
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
        let input = self.input(event, task).to_string();
        for hook in hooks {
            match run_one(&hook, &input, &self.project_dir) {
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
}

/// The largest settings file read.
const SETTINGS_LIMIT: u64 = 4 * 1024 * 1024;

/// The user's settings file (under `$CLAUDE_CONFIG_DIR`, else `~/.claude`): always trusted, as
/// no contained teammate can write it (its sandbox binds it read-only, and no teammate is
/// contained where it is a symlink it could replace: `launch::sandbox`).
fn user_settings() -> Option<PathBuf> {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
        .map(|d| d.join("settings.json"))
}

/// The project's settings files, in Claude Code's order.
fn project_settings(project_dir: &Path) -> [PathBuf; 2] {
    let project = project_dir.join(".claude");
    [
        project.join("settings.json"),
        project.join("settings.local.json"),
    ]
}

/// A settings document, read without blocking (a FIFO or a device there is refused, never
/// waited on); `None` when the file does not exist.
fn read_settings(file: &Path) -> Result<Option<Value>, String> {
    let Some(bytes) = fsio::read_foreign(file, SETTINGS_LIMIT)? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| format!("{} is not valid JSON: {e}", file.display()))
}

/// The hooks configured for `event`, and the project hooks that were not run because their
/// directory is not trusted.
#[derive(Debug, Default)]
struct Configured {
    hooks: Vec<HookCommand>,
    /// Untrusted project settings files and the commands they hold (for any event), or why
    /// they could not be read.
    skipped: Vec<(PathBuf, Result<Vec<String>, String>)>,
}

/// The command hooks configured for `event`, in settings order, each command once: the user's
/// settings always, the project's only in a trusted directory (see `trust`). A
/// `disableAllHooks: true` in any file read turns them all off, as in Claude Code.
fn configured(event: HookEvent, project_dir: &Path) -> Result<Configured, String> {
    let mut out = Configured::default();
    let trusted = trust::trusted(project_dir).is_some();
    let mut files: Vec<PathBuf> = user_settings().into_iter().collect();
    if trusted {
        files.extend(project_settings(project_dir));
    } else {
        for file in project_settings(project_dir) {
            let commands = read_settings(&file).map(|settings| {
                let all = [
                    HookEvent::TaskCreated,
                    HookEvent::TaskCompleted,
                    HookEvent::TeammateIdle,
                ];
                settings
                    .iter()
                    .flat_map(|s| all.map(|e| (e, parse(s, e))))
                    .flat_map(|(e, hooks)| {
                        hooks
                            .into_iter()
                            .map(move |h| format!("{} `{}`", e.name(), h.command))
                    })
                    .collect::<Vec<_>>()
            });
            if commands.as_ref().is_ok_and(Vec::is_empty) {
                continue;
            }
            out.skipped.push((file, commands));
        }
    }
    for file in files {
        let Some(settings) = read_settings(&file)? else {
            continue;
        };
        if settings.get("disableAllHooks") == Some(&Value::Bool(true)) {
            out.hooks.clear();
            return Ok(out);
        }
        for hook in parse(&settings, event) {
            if !out.hooks.contains(&hook) {
                out.hooks.push(hook);
            }
        }
    }
    Ok(out)
}

/// The one line that says which project hooks were skipped in `project_dir` and how to trust
/// it, or `None` when this process said it already (once per directory: a runtime would
/// otherwise repeat it at every turn).
fn skipped_note(
    project_dir: &Path,
    skipped: &[(PathBuf, Result<Vec<String>, String>)],
) -> Option<String> {
    static SAID: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    if skipped.is_empty() {
        return None;
    }
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if said.iter().any(|d| d == project_dir) {
        return None;
    }
    said.push(project_dir.to_path_buf());
    let files: Vec<String> = skipped
        .iter()
        .map(|(file, commands)| match commands {
            Ok(commands) => format!("{} ({})", file.display(), commands.join(", ")),
            Err(why) => format!("{} ({why})", file.display()),
        })
        .collect();
    Some(format!(
        "project hooks not run, because {} is not a trusted directory: {}; {}",
        project_dir.display(),
        files.join("; "),
        trust::how_to_trust(project_dir)
    ))
}

/// The command hooks for `event` in one settings document; other hook types (prompt, agent,
/// http) need Claude Code and are skipped.
fn parse(settings: &Value, event: HookEvent) -> Vec<HookCommand> {
    let groups = settings["hooks"][event.name()].as_array();
    groups
        .into_iter()
        .flatten()
        .flat_map(|group| group["hooks"].as_array().into_iter().flatten())
        .filter(|h| h["type"].as_str().unwrap_or("command") == "command")
        .filter_map(|h| {
            let command = h["command"].as_str()?.to_string();
            let timeout = h["timeout"]
                .as_f64()
                .filter(|s| *s > 0.0)
                .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64);
            Some(HookCommand { command, timeout })
        })
        .collect()
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
    fn command_hooks_are_read_in_claude_codes_format() {
        let settings = json!({"hooks": {
            "TaskCompleted": [
                {"matcher": "", "hooks": [{"type": "command", "command": "make test", "timeout": 5}]},
                {"hooks": [{"type": "prompt", "prompt": "x"}, {"command": "true"}]}],
            "TeammateIdle": [{"hooks": [{"type": "command", "command": "idle"}]}]}});
        assert_eq!(
            parse(&settings, HookEvent::TaskCompleted),
            vec![
                HookCommand {
                    command: "make test".into(),
                    timeout: Duration::from_secs(5)
                },
                HookCommand {
                    command: "true".into(),
                    timeout: DEFAULT_TIMEOUT
                }
            ]
        );
        assert!(parse(&settings, HookEvent::TaskCreated).is_empty());
    }

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
