//! Which command hooks the settings files configure for an event: the files Claude Code reads,
//! in its order (the user's `settings.json`, then the project's `.claude/settings.json` and
//! `.claude/settings.local.json`, the project's only in a trusted directory), each command once,
//! and the group `matcher`s Claude Code applies.
//!
//! The team events (`TaskCreated`, `TaskCompleted`, `TeammateIdle`) take no matcher in Claude
//! Code 2.1.328, so there a `matcher` is accepted and ignored. `Notification` matches its
//! `notification_type`, the way Claude Code matches every event's query: an empty or missing
//! matcher or `*` matches everything, one made only of letters, digits, `_` and `|` is a list of
//! exact names (`worker_permission_prompt|idle_prompt`), anything else is a regular expression
//! searched in the query (an invalid one matches nothing).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::HookEvent;
use crate::store::fsio;
use crate::teammate::trust;

/// Claude Code's default timeout for a command hook.
pub(super) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// One command hook from a settings file.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct HookCommand {
    pub(super) command: String,
    pub(super) timeout: Duration,
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
pub(super) struct Configured {
    pub(super) hooks: Vec<HookCommand>,
    /// Untrusted project settings files and the commands they hold (for any event), or why
    /// they could not be read.
    pub(super) skipped: Vec<(PathBuf, Result<Vec<String>, String>)>,
}

/// The command hooks configured for `event`, in settings order, each command once: the user's
/// settings always, the project's only in a trusted directory (see `trust`); with a `query`
/// (the `notification_type` of a `Notification`) only the groups whose matcher matches it. A
/// `disableAllHooks: true` in any file read turns them all off, as in Claude Code.
pub(super) fn configured(
    event: HookEvent,
    query: Option<&str>,
    project_dir: &Path,
) -> Result<Configured, String> {
    let mut out = Configured::default();
    let trusted = trust::trusted(project_dir).is_some();
    let mut files: Vec<PathBuf> = user_settings().into_iter().collect();
    if trusted {
        files.extend(project_settings(project_dir));
    } else {
        for file in project_settings(project_dir) {
            let commands = read_settings(&file).map(|settings| {
                settings
                    .iter()
                    .flat_map(|s| HookEvent::ALL.map(|e| (e, parse(s, e, None))))
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
        for hook in parse(&settings, event, query) {
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
pub(super) fn skipped_note(
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

/// The command hooks for `event` in one settings document, of the groups whose matcher matches
/// `query` (all of them without one); other hook types (prompt, agent, http) need Claude Code
/// and are skipped.
fn parse(settings: &Value, event: HookEvent, query: Option<&str>) -> Vec<HookCommand> {
    let groups = settings["hooks"][event.name()].as_array();
    groups
        .into_iter()
        .flatten()
        .filter(|group| query.is_none_or(|q| matches(group["matcher"].as_str(), q)))
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

/// Whether a group's `matcher` selects `query`, as Claude Code decides it (see the module doc).
fn matches(matcher: Option<&str>, query: &str) -> bool {
    let matcher = matcher.unwrap_or("");
    if matcher.is_empty() || matcher == "*" {
        return true;
    }
    let names = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '|';
    if matcher.chars().all(names) {
        return matcher.split('|').map(str::trim).any(|name| name == query);
    }
    regex::Regex::new(matcher).is_ok_and(|re| re.is_match(query))
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
            parse(&settings, HookEvent::TaskCompleted, None),
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
        assert!(parse(&settings, HookEvent::TaskCreated, None).is_empty());
    }

    #[test]
    fn a_notification_matcher_selects_by_notification_type_as_in_claude_code() {
        for (matcher, query, hit) in [
            (None, "worker_permission_prompt", true),
            (Some(""), "idle_prompt", true),
            (Some("*"), "idle_prompt", true),
            (
                Some("worker_permission_prompt"),
                "worker_permission_prompt",
                true,
            ),
            (Some("permission_prompt"), "worker_permission_prompt", false),
            (
                Some("idle_prompt|agent_needs_input"),
                "agent_needs_input",
                true,
            ),
            (
                Some("idle_prompt|agent_needs_input"),
                "worker_permission_prompt",
                false,
            ),
            (Some(".*permission.*"), "worker_permission_prompt", true),
            (Some("^permission"), "worker_permission_prompt", false),
            (Some("(unclosed"), "worker_permission_prompt", false),
        ] {
            assert_eq!(matches(matcher, query), hit, "{matcher:?} on {query}");
        }
        let settings = json!({"hooks": {"Notification": [
            {"matcher": "idle_prompt", "hooks": [{"command": "idle"}]},
            {"matcher": "worker_permission_prompt", "hooks": [{"command": "ask"}]}]}});
        let commands = |q| {
            parse(&settings, HookEvent::Notification, Some(q))
                .into_iter()
                .map(|h| h.command)
                .collect::<Vec<_>>()
        };
        assert_eq!(commands("worker_permission_prompt"), ["ask"]);
        assert_eq!(commands("agent_needs_input"), Vec::<String>::new());
    }
}
