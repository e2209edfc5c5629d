//! What this runtime has acted on, durably: `teams/<team>/members/<name>/acted.json`
//! (PROTOCOL.md section 7b).
//!
//! A lead signature says who wrote an entry, not how often it may be obeyed: anyone can put an
//! entry that was already delivered back into the inbox unread. And a runtime that dies in a
//! turn, or cannot mark its inbox (a full disk), leaves the turn's messages unread, so a restart
//! would act on them again. So the runtime keeps the keys (`msg_id`) of the messages it acted
//! on (the lead's control messages, and every message a turn hands over, `$ ` commands among
//! them, written before the turn starts) in a small file of its own, newest last and at most
//! [`KEEP`] of them, and does nothing with a second delivery but say so once (a turn whose
//! agent never started forgets its messages again, for the turn that gets them). The file
//! outlives the process, so a restarted runtime is not fooled either; a damaged one starts
//! empty, with a note, rather than stopping the runtime.

use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::store::fsio;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;

/// Keys kept: far more than a lead sends while a replay is worth anything.
const KEEP: usize = 1000;

#[derive(Debug, Default, Serialize, Deserialize)]
struct ActedFile {
    acted: VecDeque<String>,
}

#[derive(Debug)]
pub(super) struct Acted {
    path: PathBuf,
    file: ActedFile,
    /// Replays already reported, so each is said once.
    reported: HashSet<String>,
}

impl Acted {
    /// The member's file, as it is on disk.
    pub(super) fn load(
        store: &Store,
        team: &TeamName,
        name: &AgentName,
    ) -> (Acted, Option<String>) {
        let path = store.member_dir(team, name).join("acted.json");
        let (file, note) = match fsio::read_json::<ActedFile>(&path) {
            Ok(file) => (file.unwrap_or_default(), None),
            Err(e) => (
                ActedFile::default(),
                Some(format!(
                    "{} is damaged ({e}); starting it afresh",
                    path.display()
                )),
            ),
        };
        let acted = Acted {
            path,
            file,
            reported: HashSet::new(),
        };
        (acted, note)
    }

    pub(super) fn contains(&self, key: &str) -> bool {
        self.file.acted.iter().any(|k| k == key)
    }

    /// Remembers `keys` as acted on, on disk before anything else happens; when the write
    /// fails (a full disk) nothing is remembered, so the caller acts on nothing and tries again.
    pub(super) fn record<'k>(&mut self, keys: impl IntoIterator<Item = &'k str>) -> Result<()> {
        let mut acted = self.file.acted.clone();
        for key in keys {
            if !acted.iter().any(|k| k == key) {
                acted.push_back(key.to_string());
            }
        }
        if acted.len() == self.file.acted.len() {
            return Ok(());
        }
        while acted.len() > KEEP {
            acted.pop_front();
        }
        self.save(acted)
    }

    /// Forgets `keys`: messages whose turn never reached its agent, to be acted on later.
    pub(super) fn forget(&mut self, keys: &[String]) -> Result<()> {
        let mut acted = self.file.acted.clone();
        acted.retain(|k| !keys.contains(k));
        if acted.len() == self.file.acted.len() {
            return Ok(());
        }
        self.save(acted)
    }

    /// Writes `acted` and, once it is on disk, takes it as what was acted on.
    fn save(&mut self, acted: VecDeque<String>) -> Result<()> {
        let file = ActedFile { acted };
        fsio::ensure_dir(self.path.parent().expect("a member dir"))?;
        fsio::write_json(&self.path, &file)?;
        self.file = file;
        Ok(())
    }

    /// Whether the replay of `key` is seen for the first time (and should be reported).
    pub(super) fn first_report(&mut self, key: &str) -> bool {
        self.reported.insert(key.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::team_with;

    #[test]
    fn acted_keys_survive_a_restart_and_stay_bounded() {
        let (_dir, store, team) = team_with(&["a"]);
        let a: AgentName = "a".parse().unwrap();
        let (mut acted, note) = Acted::load(&store, &team, &a);
        assert!(note.is_none());
        acted.record(["m1"]).unwrap();
        let (mut again, _) = Acted::load(&store, &team, &a);
        assert!(again.contains("m1") && !again.contains("m2"));
        let many: Vec<String> = (0..KEEP + 5).map(|i| format!("k{i}")).collect();
        again.record(many.iter().map(String::as_str)).unwrap();
        let (last, _) = Acted::load(&store, &team, &a);
        assert_eq!(last.file.acted.len(), KEEP);
        assert!(!last.contains("m1") && last.contains(&format!("k{}", KEEP + 4)));
        assert!(again.first_report("k") && !again.first_report("k"));
    }
}
