//! A test fixture for unit tests anywhere in the crate: a temp store with one team whose
//! teammates are registered and active, the way a launch leaves them.

use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::roster::{Member, Roster};

/// A temp store with team `t` and the teammates `names`, all active. Keep the `TempDir`.
pub(crate) fn team_with(names: &[&str]) -> (tempfile::TempDir, Store, TeamName) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    let team: TeamName = "t".parse().unwrap();
    let roster = Roster::new(&store, &team);
    roster.create("", "/", "s").unwrap();
    for n in names {
        let name: AgentName = n.parse().unwrap();
        let mut m = Member::teammate(&team, &name, "blue", "/");
        m.is_active = Some(true);
        roster.add_member(m).unwrap();
    }
    (dir, store, team)
}

/// `name` as an agent name, for tests that write messages from literal senders.
pub(crate) fn agent(name: &str) -> AgentName {
    name.parse().unwrap()
}
