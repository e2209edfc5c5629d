//! How each agent CLI is told which conversation a turn continues, read from its own `--help`.
//!
//! The flags are the installed versions' own (the interop suite installs them and checks the
//! fakes it runs against their `--help`, `tests/integration/interop/other_clis.rs`):
//! - `claude -p` (Claude Code 2.1.328): "--session-id <uuid> Use a specific session ID for the
//!   conversation (must be a valid UUID)", "-r, --resume [value] Resume a conversation by
//!   session ID". swarm names the conversation: `--session-id` on the first turn, `--resume`
//!   after.
//! - `gemini -p` (@google/gemini-cli 0.61.0): "--session-id Start a new session with a manually
//!   provided UUID", "-r, --resume Resume a previous session. Use "latest" for most recent or
//!   index number" (its code also takes the session's UUID there). The same two flags, so the
//!   same two steps.
//! - `codex exec` (codex-cli 0.171.0): "codex exec resume [SESSION_ID] [PROMPT] ... Resume a
//!   previous session by id". Codex picks the id itself and prints it (`session id: <uuid>` on
//!   stderr, or a `thread.started` event's `thread_id` with `--json`), so it is read back after
//!   the first turn; later turns insert `resume <id>` just before the prompt (exec's own options
//!   stay before it, where `codex exec [OPTIONS] <COMMAND>` takes them).
//! - any command with a `{session}` placeholder: the member's stable id on every turn.
//!
//! A command line that already manages its session (a resume or session flag, claude's
//! `--no-session-persistence`, codex's `--ephemeral` or `--last`) is left alone.

use std::path::Path;

use super::{Session, SESSION_PLACEHOLDER};

/// Flags with which a `claude` command line already decides its own session.
const CLAUDE_SESSION_FLAGS: &[&str] = &[
    "--session-id",
    "--resume",
    "-r",
    "--continue",
    "-c",
    "--no-session-persistence",
    "--fork-session",
];

/// Flags with which a `gemini` command line already decides its own session (or runs the
/// interactive UI, which keeps its own).
const GEMINI_SESSION_FLAGS: &[&str] = &[
    "--session-id",
    "--resume",
    "-r",
    "--session-file",
    "--list-sessions",
    "--delete-session",
    "--prompt-interactive",
    "-i",
];

/// `codex` options before the subcommand that take a value (codex-cli 0.171.0 `--help`): the
/// word after one is its value, never the subcommand.
const CODEX_VALUE_OPTIONS: &[&str] = &[
    "-c",
    "--config",
    "--enable",
    "--disable",
    "--remote",
    "--remote-auth-token-env",
    "-i",
    "--image",
    "-m",
    "--model",
    "--local-provider",
    "-p",
    "--profile",
    "-s",
    "--sandbox",
    "-C",
    "--cd",
    "--add-dir",
    "-a",
    "--ask-for-approval",
];

/// Words after `codex exec` with which the command line picks its own conversation (or none).
const CODEX_OWN_SESSION: &[&str] = &["resume", "fork", "review", "--ephemeral", "--last"];

/// The prompt placeholder (`agent.rs`), before which codex's `resume <id>` goes.
const PROMPT_PLACEHOLDER: &str = "{prompt}";

/// How a CLI is told which conversation a turn continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Adapter {
    /// `claude -p`: `--session-id` on the first turn, `--resume` after.
    Claude,
    /// `gemini -p`: `--session-id` on the first turn, `--resume` after.
    Gemini,
    /// `codex exec`: the id codex printed, resumed with `resume <id>`.
    Codex,
    /// A `{session}` placeholder in the command line.
    Placeholder,
}

fn has_flag(words: &[String], flags: &[&str]) -> bool {
    words.iter().any(|a| {
        flags
            .iter()
            .any(|f| a == f || a.starts_with(&format!("{f}=")))
    })
}

/// The index of `exec` (or its alias `e`) in a `codex` argv: the first word that is not an
/// option or an option's value.
fn codex_exec(argv: &[String]) -> Option<usize> {
    let mut i = 1;
    while i < argv.len() {
        let word = argv[i].as_str();
        if CODEX_VALUE_OPTIONS.contains(&word) {
            i += 2;
        } else if word.starts_with('-') {
            i += 1;
        } else {
            return (word == "exec" || word == "e").then_some(i);
        }
    }
    None
}

impl Adapter {
    /// The adapter for an agent command line, if one applies.
    pub(crate) fn detect(argv: &[String]) -> Option<Adapter> {
        let (program, rest) = argv.split_first()?;
        if rest.iter().any(|a| a.contains(SESSION_PLACEHOLDER)) {
            return Some(Adapter::Placeholder);
        }
        let name = Path::new(program).file_name().and_then(|n| n.to_str());
        let print_mode = |flags: &[&str]| rest.iter().any(|a| flags.contains(&a.as_str()));
        match name {
            Some("claude") => (print_mode(&["-p", "--print"])
                && !has_flag(rest, CLAUDE_SESSION_FLAGS))
            .then_some(Adapter::Claude),
            Some("gemini") => (print_mode(&["-p", "--prompt"])
                && !has_flag(rest, GEMINI_SESSION_FLAGS))
            .then_some(Adapter::Gemini),
            Some("codex") => {
                let exec = codex_exec(argv)?;
                let after = &argv[exec + 1..];
                (!after
                    .iter()
                    .any(|a| CODEX_OWN_SESSION.contains(&a.as_str())))
                .then_some(Adapter::Codex)
            }
            _ => None,
        }
    }

    /// What `--dry-run` says about it.
    pub(crate) fn describe(adapter: Option<Adapter>) -> &'static str {
        match adapter {
            Some(Adapter::Claude) => {
                "claude: --session-id <uuid> on the first turn, --resume <uuid> after"
            }
            Some(Adapter::Gemini) => {
                "gemini: --session-id <uuid> on the first turn, --resume <uuid> after"
            }
            Some(Adapter::Codex) => {
                "codex: the session id codex prints on its first turn, then `exec ... resume <id>`"
            }
            Some(Adapter::Placeholder) => "{session}: the member's stable conversation id",
            None => "none: every turn starts a fresh conversation",
        }
    }

    /// Whether swarm names the conversation before its first turn (a fresh uuid); codex names
    /// its own, read back after the turn ([`Adapter::read_back`]).
    pub(crate) fn names_it(self) -> bool {
        self != Adapter::Codex
    }

    /// `argv` for one turn of `session`.
    pub(crate) fn apply(self, argv: &[String], session: &Session) -> Vec<String> {
        match self {
            Adapter::Placeholder => argv
                .iter()
                .map(|a| a.replace(SESSION_PLACEHOLDER, &session.id))
                .collect(),
            Adapter::Claude | Adapter::Gemini => {
                let flag = if session.turns == 0 {
                    "--session-id"
                } else {
                    "--resume"
                };
                let mut out = vec![argv[0].clone(), flag.to_string(), session.id.clone()];
                out.extend(argv[1..].iter().cloned());
                out
            }
            Adapter::Codex if session.id.is_empty() => argv.to_vec(),
            Adapter::Codex => {
                // Just before the prompt: its placeholder, a final `-` (stdin), or the end,
                // where the prompt is appended.
                let exec = codex_exec(argv).unwrap_or(argv.len() - 1);
                let at = argv
                    .iter()
                    .skip(exec + 1)
                    .position(|a| a == PROMPT_PLACEHOLDER)
                    .map(|i| exec + 1 + i)
                    .or_else(|| {
                        (argv.len() > exec + 1 && argv[argv.len() - 1] == "-")
                            .then(|| argv.len() - 1)
                    })
                    .unwrap_or(argv.len());
                let mut out = argv[..at].to_vec();
                out.extend(["resume".to_string(), session.id.clone()]);
                out.extend(argv[at..].iter().cloned());
                out
            }
        }
    }

    /// Whether a turn's stderr must be kept (and still shown) to read the id back.
    pub(crate) fn reads_stderr(self) -> bool {
        self == Adapter::Codex
    }

    /// The conversation id the CLI says it used, from the turn's stdout and stderr: codex's
    /// `session id: <uuid>` line, or the `thread_id` of its `thread.started` event (`--json`).
    pub(crate) fn read_back(self, stdout: &str, stderr: &str) -> Option<String> {
        if self != Adapter::Codex {
            return None;
        }
        let said = stderr.lines().chain(stdout.lines()).find_map(|line| {
            if let Some(id) = line.trim().strip_prefix("session id: ") {
                return Some(id.trim().to_string());
            }
            let event: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
            (event["type"] == "thread.started")
                .then(|| event["thread_id"].as_str().map(str::to_string))
                .flatten()
        })?;
        uuid::Uuid::parse_str(&said).is_ok().then_some(said)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn session(id: &str, turns: u64) -> Session {
        Session {
            adapter: String::new(),
            id: id.into(),
            turns,
        }
    }

    #[test]
    fn claude_and_gemini_in_print_mode_get_session_id_then_resume() {
        for (a, adapter) in [
            (
                argv(&["/usr/bin/claude", "-p", "--model", "sonnet"]),
                Adapter::Claude,
            ),
            (
                argv(&["/usr/bin/gemini", "-m", "flash", "-p"]),
                Adapter::Gemini,
            ),
        ] {
            assert_eq!(Adapter::detect(&a), Some(adapter), "{a:?}");
            let mut want = vec![a[0].clone(), "--session-id".into(), "u".into()];
            want.extend(a[1..].iter().cloned());
            assert_eq!(adapter.apply(&a, &session("u", 0)), want);
            assert_eq!(
                adapter.apply(&a, &session("u", 1))[1..3],
                argv(&["--resume", "u"])
            );
            assert!(adapter.names_it() && !adapter.reads_stderr());
        }
    }

    #[test]
    fn codex_exec_resumes_the_id_it_printed_just_before_the_prompt() {
        let id = "01a23261-7ca9-7e03-9d11-231b5ae53418";
        for (a, second) in [
            (
                &["codex", "exec", "--skip-git-repo-check"][..],
                &["codex", "exec", "--skip-git-repo-check", "resume", id][..],
            ),
            (
                &[
                    "codex",
                    "-c",
                    "model=\"o3\"",
                    "e",
                    "-s",
                    "read-only",
                    "{prompt}",
                ],
                &[
                    "codex",
                    "-c",
                    "model=\"o3\"",
                    "e",
                    "-s",
                    "read-only",
                    "resume",
                    id,
                    "{prompt}",
                ],
            ),
            (
                &["codex", "exec", "-"],
                &["codex", "exec", "resume", id, "-"],
            ),
        ] {
            let a = argv(a);
            assert_eq!(Adapter::detect(&a), Some(Adapter::Codex), "{a:?}");
            assert_eq!(
                Adapter::Codex.apply(&a, &session("", 0)),
                a,
                "first turn as it is"
            );
            assert_eq!(Adapter::Codex.apply(&a, &session(id, 1)), argv(second));
        }
        assert!(!Adapter::Codex.names_it() && Adapter::Codex.reads_stderr());
        let header = format!("OpenAI Codex v0.171.0\n--------\nworkdir: /w\nsession id: {id}\n");
        assert_eq!(
            Adapter::Codex.read_back("answer", &header).as_deref(),
            Some(id)
        );
        let json = format!("{{\"type\":\"thread.started\",\"thread_id\":\"{id}\"}}\n");
        assert_eq!(Adapter::Codex.read_back(&json, "").as_deref(), Some(id));
        assert_eq!(Adapter::Codex.read_back("session id: not-a-uuid", ""), None);
        assert_eq!(Adapter::Claude.read_back("", &header), None);
    }

    #[test]
    fn command_lines_that_manage_their_own_session_keep_todays_behaviour() {
        for a in [
            &["claude"][..],
            &["claude", "-p", "--resume", "x"],
            &["claude", "--print", "--session-id=x"],
            &["my-claude", "-p"],
            &["gemini"],
            &["gemini", "-p", "--resume", "latest"],
            &["gemini", "-i", "hi"],
            &["codex"],
            &["codex", "--full-auto"],
            &["codex", "-m", "exec"],
            &["codex", "exec", "resume", "--last"],
            &["codex", "exec", "--ephemeral"],
            &["codex", "review"],
        ] {
            assert_eq!(Adapter::detect(&argv(a)), None, "{a:?}");
        }
        assert_eq!(
            Adapter::detect(&argv(&["agent", "--conversation={session}"])),
            Some(Adapter::Placeholder)
        );
    }
}
