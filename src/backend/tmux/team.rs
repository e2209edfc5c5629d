//! A team's panes on one tmux server, found by their marks rather than by the roster.
//!
//! The roster learns a pane's id only after the tmux call that made it returns; a launch
//! killed in between leaves panes no roster names, and a team whose directory was deleted
//! leaves panes nothing names. Every pane swarm opens carries its `@swarm-*` marks from the
//! call that made it (owner.rs), so listing the server's panes with their marks finds all of
//! a team's panes, whichever member they belong to, alive or kept dead by remain-on-exit.
//! Only panes whose marks name this root and team are ever returned, closed or adopted.

use std::sync::Arc;

use tmux_interface::{KillPane, ListPanes};

use super::owner::PaneOwner;
use super::server::{server_missing, Client, TmuxServer};
use super::state::is_pane_id;
use super::TmuxBackend;
use crate::backend::pane::PaneId;
use crate::error::{Error, Result};
use crate::process::exec::Exec;

/// `list-panes -a` format for [`TmuxBackend::team_panes`]: a pane, its three marks, whether it
/// is dead, and its window.
const MARKS_FORMAT: &str =
    "#{pane_id}\t#{@swarm-root}\t#{@swarm-team}\t#{@swarm-member}\t#{pane_dead}\t#{window_id}";

/// One pane on the server whose marks name this backend's root and team.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MarkedPane {
    pub id: PaneId,
    /// The member its marks name.
    pub member: String,
    /// Its process exited (the pane is kept by remain-on-exit).
    pub dead: bool,
    pub window: String,
}

impl TmuxBackend {
    /// A handle on `server` for the panes of `owner`'s team, whichever member they belong to.
    pub(crate) fn for_team(
        exec: Arc<dyn Exec>,
        server: TmuxServer,
        owner: PaneOwner,
    ) -> TmuxBackend {
        TmuxBackend {
            client: Client::new(exec, server),
            owner,
            members: Default::default(),
            layout: Default::default(),
            trampoline: None,
        }
    }

    /// Every pane on the server marked as this backend's team's, in the server's order; no
    /// server means none.
    pub(crate) fn team_panes(&self) -> Result<Vec<MarkedPane>> {
        let team = self.owner.team().to_string();
        Ok(self
            .root_panes()?
            .into_iter()
            .filter(|(t, _)| *t == team)
            .map(|(_, pane)| pane)
            .collect())
    }

    /// Every pane on the server marked as belonging to this backend's root, with the team its
    /// marks name (whatever the backend's own team): how panes of a team whose directory is
    /// gone are found.
    pub(crate) fn root_panes(&self) -> Result<Vec<(String, MarkedPane)>> {
        let listing = match self
            .client
            .run(vec![ListPanes::new().all().format(MARKS_FORMAT).build()])
        {
            Ok(out) => out,
            Err(Error::Command { detail, .. }) if server_missing(&detail) => return Ok(vec![]),
            Err(e) => return Err(e),
        };
        Ok(listing
            .lines()
            .filter_map(|line| {
                let f: Vec<&str> = line.split('\t').collect();
                let [pane, root, team, member, dead, window] = f[..] else {
                    return None;
                };
                let ours = is_pane_id(pane)
                    && !member.is_empty()
                    && !team.is_empty()
                    && self.owner.with_team(team).expected(member)
                        == format!("{root}\n{team}\n{member}\n");
                ours.then(|| {
                    let pane = MarkedPane {
                        id: PaneId(pane.to_string()),
                        member: member.to_string(),
                        dead: dead == "1",
                        window: window.to_string(),
                    };
                    (team.to_string(), pane)
                })
            })
            .collect())
    }

    /// Closes a pane [`Self::team_panes`] just listed; `true` when it went.
    pub(crate) fn close_marked(&self, pane: &MarkedPane) -> bool {
        self.client
            .run(vec![KillPane::new().target_pane(pane.id.as_str()).build()])
            .is_ok()
    }

    /// Kills every pane on the server whose marks name this backend's root and team (the lead
    /// console's, teammates', dead ones kept by remain-on-exit), so the window or session swarm
    /// made closes with its last pane; panes without the marks are never touched. Returns how
    /// many it closed; no server means none.
    pub(crate) fn kill_team_panes(&self) -> Result<usize> {
        Ok(self
            .team_panes()?
            .iter()
            .filter(|p| self.close_marked(p))
            .count())
    }

    /// Which of `members` of this backend's team `pane` is marked as (its `@swarm-*` marks name
    /// this root, this team and that member); `None` for any other pane, or no server. The marks
    /// are on a pane from the tmux call that made it, before the roster records its id.
    pub(crate) fn marked_member<'m>(&self, pane: &PaneId, members: &[&'m str]) -> Option<&'m str> {
        if !is_pane_id(pane.as_str()) {
            return None;
        }
        let marks = self.client.run(PaneOwner::read_marks(pane.as_str())).ok()?;
        members
            .iter()
            .copied()
            .find(|m| self.owner.expected(m) == marks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::exec::testing::Recorder;

    #[test]
    fn only_panes_marked_with_this_root_and_team_are_listed() {
        let rec = Arc::new(Recorder::default());
        let owner = PaneOwner::new(std::path::Path::new("/nonexistent/root"), "t");
        let b = TmuxBackend::for_team(rec.clone(), TmuxServer::Name("s".into()), owner.clone());
        let line = |pane: &str, owner: &PaneOwner, member: &str, dead: &str| {
            let marks = owner.expected(member).replace('\n', "\t");
            format!("{pane}\t{marks}{dead}\t@1\n")
        };
        let other_team = PaneOwner::new(std::path::Path::new("/nonexistent/root"), "u");
        let other_root = PaneOwner::new(std::path::Path::new("/nonexistent/other"), "t");
        rec.answer(&format!(
            "{}{}{}{}%9\t\t\t\t0\t@1\n{}",
            line("%1", &owner, "a", "0"),
            line("%2", &other_team, "a", "0"),
            line("%3", &other_root, "a", "0"),
            line("%4", &owner, "team-lead", "1"),
            line("=x", &owner, "b", "0"),
        ));
        let panes = b.team_panes().unwrap();
        let got: Vec<(&str, &str, bool)> = panes
            .iter()
            .map(|p| (p.id.as_str(), p.member.as_str(), p.dead))
            .collect();
        assert_eq!(got, [("%1", "a", false), ("%4", "team-lead", true)]);
        rec.fail("no server running on /tmp/tmux-0/s");
        assert!(b.team_panes().unwrap().is_empty());
    }
}
