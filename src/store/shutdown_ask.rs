//! A shutdown request waiting on a busy teammate's turn, and its agent's refusal: the two
//! files through which a runtime and the agent it runs talk about it (PROTOCOL.md section 7d).
//!
//! A teammate asked to shut down while a turn runs lets the turn finish (up to the request's
//! grace) and then approves, or its agent refuses and says why, as the design's teammates do.
//! The agent is a process of its own (a shell command, a `claude -p`), started before the
//! request came, so it cannot be told in its prompt: the runtime writes the waiting request to
//! `teams/<team>/members/<name>/shutdown-asked.json` (the lead's reason, when the grace ends)
//! for `swarm shutdown-request show`, and the agent's `swarm shutdown-request reject REASON`
//! writes `shutdown-refused.json` beside it, which the runtime watches. A refusal counts for the
//! turn that wrote it only: it carries the turn's token (`SWARM_TURN_TOKEN`, fresh in each
//! turn's environment and nowhere else), so neither another teammate, which can write this
//! directory, nor a stale file from an earlier turn keeps the teammate from stopping; and the
//! runtime removes it when the turn ends and when the next one starts.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;

/// The file the runtime watches for a refusal, in [`Store::member_dir`].
pub(crate) const REFUSED_FILE: &str = "shutdown-refused.json";
const ASKED_FILE: &str = "shutdown-asked.json";

/// The variable that gives a turn's processes the token their refusal must carry.
pub(crate) const TURN_TOKEN_VAR: &str = "SWARM_TURN_TOKEN";

/// A fresh token for one turn.
pub(crate) fn turn_token() -> Result<String> {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    let mut bytes = [0u8; 18];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::Backend(format!("cannot make a turn token: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// A shutdown request the runtime is holding until the running turn ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Asked {
    pub request_id: String,
    pub from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When the grace ends and the turn is stopped (ms since the epoch).
    pub grace_ends_at: u64,
}

/// The agent's refusal, for the turn running when it was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Refusal {
    pub reason: String,
    /// The refusing turn's [`TURN_TOKEN_VAR`].
    pub turn: String,
    /// ms since the epoch.
    pub at: u64,
}

/// The two files of one member.
pub(crate) struct ShutdownAsk {
    dir: PathBuf,
}

impl ShutdownAsk {
    pub(crate) fn new(store: &Store, team: &TeamName, name: &AgentName) -> ShutdownAsk {
        ShutdownAsk {
            dir: store.member_dir(team, name),
        }
    }

    /// The directory the runtime watches ([`REFUSED_FILE`] in it).
    pub(crate) fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// The waiting request; a damaged file is moved aside (`fsio`) and read as none.
    pub(crate) fn asked(&self) -> Result<Option<Asked>> {
        fsio::read_json_or_quarantine(&self.dir.join(ASKED_FILE))
    }

    pub(crate) fn set_asked(&self, asked: &Asked) -> Result<()> {
        fsio::ensure_dir(&self.dir)?;
        fsio::write_json(&self.dir.join(ASKED_FILE), asked)
    }

    /// The reason of the refusal on file, if the turn with `token` wrote it; a damaged file is
    /// moved aside (`fsio`) and read as none.
    pub(crate) fn refusal(&self, token: &str) -> Result<Option<String>> {
        let refusal: Option<Refusal> = fsio::read_json_or_quarantine(&self.dir.join(REFUSED_FILE))?;
        Ok(refusal.filter(|r| r.turn == token).map(|r| r.reason))
    }

    /// Records the refusal of the turn with `token` (replacing an earlier one).
    pub(crate) fn refuse(&self, reason: &str, token: &str) -> Result<()> {
        if reason.trim().is_empty() {
            return Err(Error::usage(
                "say why the shutdown is refused: `swarm shutdown-request reject \"REASON\"`",
            ));
        }
        fsio::ensure_dir(&self.dir)?;
        let refusal = Refusal {
            reason: reason.trim().to_string(),
            turn: token.to_string(),
            at: fsio::now_ms(),
        };
        fsio::write_json(&self.dir.join(REFUSED_FILE), &refusal)
    }

    /// Removes the waiting request (it was answered).
    pub(crate) fn clear_asked(&self) {
        remove(self.dir.join(ASKED_FILE));
    }

    /// Removes the refusal (its turn is over).
    pub(crate) fn clear_refusal(&self) {
        remove(self.dir.join(REFUSED_FILE));
    }
}

fn remove(path: PathBuf) {
    if let Err(e) = std::fs::remove_file(&path) {
        if e.kind() != std::io::ErrorKind::NotFound {
            eprintln!("swarm: warning: could not remove {}: {e}", path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::team_with;

    #[test]
    fn a_refusal_needs_a_reason_and_counts_for_its_own_turn_only() {
        let (_dir, store, team) = team_with(&["a"]);
        let a: AgentName = "a".parse().unwrap();
        let ask = ShutdownAsk::new(&store, &team, &a);
        let turn = turn_token().unwrap();
        assert_ne!(turn, turn_token().unwrap());
        assert_eq!(ask.refusal(&turn).unwrap(), None);
        assert!(ask.refuse("  ", &turn).is_err());
        ask.refuse(" migrating the database ", &turn).unwrap();
        assert_eq!(
            ask.refusal(&turn).unwrap().as_deref(),
            Some("migrating the database")
        );
        // Another turn's refusal, or a forged one, is none of this turn's.
        assert_eq!(ask.refusal("another turn").unwrap(), None);
        ask.clear_refusal();
        assert_eq!(ask.refusal(&turn).unwrap(), None);
        ask.clear_refusal();

        let asked = Asked {
            request_id: "shutdown-1@a".into(),
            from: "team-lead".into(),
            reason: Some("new branch".into()),
            grace_ends_at: 5,
        };
        ask.set_asked(&asked).unwrap();
        assert_eq!(ask.asked().unwrap(), Some(asked));
        ask.clear_asked();
        assert_eq!(ask.asked().unwrap(), None);
    }
}
