//! One conversation per member across turns, for agent CLIs that can keep one.
//!
//! An agent CLI runs once per turn, so without help every turn starts a fresh conversation and
//! a follow-up question finds an agent that remembers nothing. An [`Adapter`] knows how one CLI
//! names a conversation on its command line (`claude -p`, `gemini -p`, `codex exec`, or a
//! `{session}` placeholder: `adapter.rs`, with what each was checked against); the member's
//! conversation id lives in `teams/<team>/sessions/<name>/session.json`, so a runtime started
//! again carries on the same conversation. Where swarm names the conversation the id is made before
//! the first turn; where the CLI names it (codex) the id is empty until a turn's output says it
//! ([`Session::after_turn`]), and until then every turn starts afresh. Only an id swarm gave
//! the member is resumed (`minted`): any teammate can write the session files. A session file
//! that is not a regular file is moved aside and a new conversation begun.

mod adapter;
mod minted;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub(crate) use adapter::Adapter;

use crate::error::{Error, Result};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::{fsio, notes};

/// An argument containing this gets the member's conversation id in its place.
pub(crate) const SESSION_PLACEHOLDER: &str = "{session}";

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

impl Session {
    /// After a turn: keeps the id the CLI said it used, if it names its own conversation and
    /// said one (`adapter.rs`).
    pub(crate) fn after_turn(
        &mut self,
        adapter: Adapter,
        stdout: &str,
        stderr: &str,
        store: &Store,
        team: &TeamName,
        name: &AgentName,
    ) -> Result<()> {
        match adapter.read_back(stdout, stderr) {
            Some(id) if id != self.id => {
                self.id = id;
                minted::record(store, team, name, &self.adapter, &self.id);
                self.save(&path(store, team, name))
            }
            _ => Ok(()),
        }
    }
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
        let bytes = match fsio::read_file(&file) {
            Ok(bytes) => bytes,
            // A directory, a FIFO, a link there: moved aside, a new conversation begun.
            Err(e @ (Error::NotARegularFile { .. } | Error::HardLinked { .. })) => {
                let found = e.to_string();
                fsio::quarantine(&file, &found)?;
                let _ = notes::record(
                    store,
                    team,
                    name,
                    &format!("{found}; moved it aside and began a new conversation"),
                );
                None
            }
            Err(e) => return Err(e),
        };
        // A member from before sessions had a directory each: its conversation goes on, and is
        // saved at the new place from its next turn.
        let bytes = match bytes {
            None => fsio::read_file(&store.earlier_session_path(team, name))
                .ok()
                .flatten(),
            read => read,
        };
        if let Some(bytes) = bytes {
            if let Ok(session) = serde_json::from_slice::<Session>(&bytes) {
                let known = uuid::Uuid::parse_str(&session.id).is_ok();
                let usable = session.adapter == kind && (known || !adapter.names_it());
                let bound = || minted::bound(store, team, name, &kind, &session.id);
                match usable.then(bound) {
                    // Not named yet (codex before its first turn): nothing to resume.
                    Some(_) if session.id.is_empty() => return Ok(session),
                    Some(minted::Bound::Yes) => return Ok(session),
                    Some(minted::Bound::Unknown(why)) => {
                        eprintln!(
                            "swarm: warning: cannot check that swarm gave {name} conversation {} \
                             ({why}); resuming it as the session file says",
                            session.id
                        );
                        return Ok(session);
                    }
                    Some(minted::Bound::No) => {
                        let text = format!(
                            "{} names conversation {}, which swarm did not give {name}; not \
                             resuming it, a new conversation begins",
                            file.display(),
                            session.id
                        );
                        eprintln!("swarm: warning: {text}");
                        let _ = notes::record(store, team, name, &text);
                    }
                    None => {}
                }
            }
        }
        let session = Session {
            adapter: kind,
            id: if adapter.names_it() {
                uuid::Uuid::new_v4().to_string()
            } else {
                String::new()
            },
            turns: 0,
        };
        if !session.id.is_empty() {
            minted::record(store, team, name, &session.adapter, &session.id);
        }
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
    use crate::store::fixture::team_with;

    #[test]
    fn a_conversation_kept_where_swarm_kept_it_before_goes_on() {
        let (_dir, store, team) = team_with(&["a"]);
        let a: AgentName = "a".parse().unwrap();
        let claude = Session::open(&store, &team, &a, Adapter::Claude).unwrap();
        let earlier = store.earlier_session_path(&team, &a);
        std::fs::rename(store.session_path(&team, &a), &earlier).unwrap();
        assert_eq!(
            Session::open(&store, &team, &a, Adapter::Claude).unwrap(),
            claude
        );
    }

    #[test]
    fn swarm_names_a_conversation_up_front_and_learns_the_one_codex_names() {
        let (_dir, store, team) = team_with(&["a"]);
        let a: AgentName = "a".parse().unwrap();
        let claude = Session::open(&store, &team, &a, Adapter::Claude).unwrap();
        assert!(uuid::Uuid::parse_str(&claude.id).is_ok());
        assert_eq!(
            Session::open(&store, &team, &a, Adapter::Claude).unwrap(),
            claude
        );

        // Another adapter for the member: a conversation of its own; codex's is unnamed yet.
        let mut codex = Session::open(&store, &team, &a, Adapter::Codex).unwrap();
        assert_eq!(codex.id, "");
        codex
            .after_turn(Adapter::Codex, "no id here", "", &store, &team, &a)
            .unwrap();
        assert_eq!(
            Session::open(&store, &team, &a, Adapter::Codex).unwrap().id,
            ""
        );
        let id = "01a23261-7ca9-7e03-9d11-231b5ae53418";
        codex
            .after_turn(
                Adapter::Codex,
                "",
                &format!("session id: {id}\n"),
                &store,
                &team,
                &a,
            )
            .unwrap();
        assert_eq!(
            Session::open(&store, &team, &a, Adapter::Codex).unwrap().id,
            id
        );
    }
}
