//! One conversation per member across turns, for agent CLIs that can keep one.
//!
//! An agent CLI runs once per turn, so without help every turn starts a fresh conversation and
//! a follow-up question finds an agent that remembers nothing. An [`Adapter`] knows how one CLI
//! names a conversation on its command line; the member's conversation id lives in
//! `teams/<team>/sessions/<name>.json`, so a runtime started again carries on the same
//! conversation. The adapters, and what each was checked against:
//! - `claude` in print mode (`-p` / `--print`): the first turn gets `--session-id <uuid>`, later
//!   turns `--resume <uuid>` (both in `claude --help` of Claude Code 2.1.328: "--session-id
//!   <uuid> Use a specific session ID for the conversation (must be a valid UUID)", "-r,
//!   --resume [value] Resume a conversation by session ID"). A command line that already
//!   manages its session (`--session-id`, `--resume`, `--continue`, `--no-session-persistence`)
//!   is left alone.
//! - any command with a `{session}` placeholder: it becomes the member's stable id on every
//!   turn, and the agent keeps its own history under that name.
//!
//! Other CLIs (codex, gemini, aider) keep today's behaviour: their resume flags name sessions
//! the CLI itself creates, which swarm cannot choose in advance, and were not verified here.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::store::fsio;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;

/// An argument containing this gets the member's conversation id in its place.
pub(crate) const SESSION_PLACEHOLDER: &str = "{session}";

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

/// How a CLI is told which conversation a turn continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Adapter {
    /// `claude -p`: `--session-id` on the first turn, `--resume` after.
    Claude,
    /// A `{session}` placeholder in the command line.
    Placeholder,
}

impl Adapter {
    /// The adapter for an agent command line, if one applies.
    pub(crate) fn detect(argv: &[String]) -> Option<Adapter> {
        let (program, rest) = argv.split_first()?;
        if rest.iter().any(|a| a.contains(SESSION_PLACEHOLDER)) {
            return Some(Adapter::Placeholder);
        }
        let is_claude = Path::new(program).file_name().and_then(|n| n.to_str()) == Some("claude");
        let print_mode = rest.iter().any(|a| a == "-p" || a == "--print");
        let manages_own = rest.iter().any(|a| {
            CLAUDE_SESSION_FLAGS
                .iter()
                .any(|f| a == f || a.starts_with(&format!("{f}=")))
        });
        (is_claude && print_mode && !manages_own).then_some(Adapter::Claude)
    }

    /// What `--dry-run` says about it.
    pub(crate) fn describe(adapter: Option<Adapter>) -> &'static str {
        match adapter {
            Some(Adapter::Claude) => {
                "claude: --session-id <uuid> on the first turn, --resume <uuid> after"
            }
            Some(Adapter::Placeholder) => "{session}: the member's stable conversation id",
            None => "none: every turn starts a fresh conversation",
        }
    }

    /// `argv` for one turn of `session`.
    pub(crate) fn apply(self, argv: &[String], session: &Session) -> Vec<String> {
        match self {
            Adapter::Placeholder => argv
                .iter()
                .map(|a| a.replace(SESSION_PLACEHOLDER, &session.id))
                .collect(),
            Adapter::Claude => {
                let flag = if session.turns == 0 {
                    "--session-id"
                } else {
                    "--resume"
                };
                let mut out = vec![argv[0].clone(), flag.to_string(), session.id.clone()];
                out.extend(argv[1..].iter().cloned());
                out
            }
        }
    }
}

/// A member's conversation, as `teams/<team>/sessions/<name>.json` keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Session {
    pub(crate) adapter: String,
    #[serde(rename = "sessionId")]
    pub(crate) id: String,
    /// Turns whose agent got its prompt: 0 means the conversation does not exist yet.
    pub(crate) turns: u64,
}

/// Where a member's conversation is kept.
pub(crate) fn path(store: &Store, team: &TeamName, name: &AgentName) -> PathBuf {
    store.session_path(team, name)
}

impl Session {
    /// The member's conversation: the one on disk, else a new one (written at once, so a
    /// runtime restarted before the first turn ends keeps the same id).
    pub(crate) fn open(
        store: &Store,
        team: &TeamName,
        name: &AgentName,
        adapter: Adapter,
    ) -> Result<Session> {
        let file = path(store, team, name);
        let kind = format!("{adapter:?}").to_lowercase();
        if let Some(bytes) = fsio::read_file(&file)? {
            if let Ok(session) = serde_json::from_slice::<Session>(&bytes) {
                if session.adapter == kind && uuid::Uuid::parse_str(&session.id).is_ok() {
                    return Ok(session);
                }
            }
        }
        let session = Session {
            adapter: kind,
            id: uuid::Uuid::new_v4().to_string(),
            turns: 0,
        };
        session.save(&file)?;
        Ok(session)
    }

    /// Counts a turn whose agent got its prompt, on disk first.
    pub(crate) fn handed_over(
        &mut self,
        store: &Store,
        team: &TeamName,
        name: &AgentName,
    ) -> Result<()> {
        self.turns += 1;
        self.save(&path(store, team, name))
    }

    fn save(&self, file: &Path) -> Result<()> {
        if let Some(dir) = file.parent() {
            fsio::ensure_dir(dir)?;
        }
        fsio::write_json(file, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn claude_in_print_mode_gets_session_id_then_resume() {
        let a = argv(&["/usr/bin/claude", "-p", "--model", "sonnet"]);
        assert_eq!(Adapter::detect(&a), Some(Adapter::Claude));
        let mut s = Session {
            adapter: "claude".into(),
            id: "u".into(),
            turns: 0,
        };
        assert_eq!(
            Adapter::Claude.apply(&a, &s),
            argv(&[
                "/usr/bin/claude",
                "--session-id",
                "u",
                "-p",
                "--model",
                "sonnet"
            ])
        );
        s.turns = 1;
        assert_eq!(
            Adapter::Claude.apply(&a, &s)[1..3],
            argv(&["--resume", "u"])
        );
    }

    #[test]
    fn other_command_lines_keep_todays_behaviour() {
        for a in [
            &["claude"][..],
            &["claude", "-p", "--resume", "x"],
            &["claude", "--print", "--session-id=x"],
            &["codex", "exec"],
            &["my-claude", "-p"],
        ] {
            assert_eq!(Adapter::detect(&argv(a)), None, "{a:?}");
        }
        assert_eq!(
            Adapter::detect(&argv(&["agent", "--conversation={session}"])),
            Some(Adapter::Placeholder)
        );
    }
}
