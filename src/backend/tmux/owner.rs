//! Whose a pane is: the root, team and member swarm writes on every pane it opens.
//!
//! tmux numbers panes from `%0` again after its server restarts, so a pane id in a roster can
//! name another team's pane (or another root's: two roots may both have a team `t`). Every pane
//! swarm opens carries the user options `@swarm-root`, `@swarm-team` and `@swarm-member`, and
//! swarm reads them back before it kills, respawns, captures or attaches to a pane; a pane whose
//! options differ is gone as far as swarm is concerned. The session or window a team gets is
//! named after the team and a short hash of the root, for the same reason.

use std::path::Path;

use tmux_interface::{SetOption, ShowOptions, TmuxCommand};

pub(super) const ROOT_OPTION: &str = "@swarm-root";
pub(super) const TEAM_OPTION: &str = "@swarm-team";
pub(super) const MEMBER_OPTION: &str = "@swarm-member";

/// The root and team a backend opens or operates panes for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PaneOwner {
    /// The store root, resolved (`paths::resolve`) so any spelling of it (a symlink, `..`, a
    /// directory not made yet) names the same owner.
    root: String,
    team: String,
}

impl PaneOwner {
    pub(crate) fn new(root: &Path, team: &str) -> PaneOwner {
        let root = crate::store::paths::resolve(root);
        PaneOwner {
            root: root.to_string_lossy().into_owned(),
            team: team.to_string(),
        }
    }

    pub(super) fn team(&self) -> &str {
        &self.team
    }

    /// The owner of `team` under the same root.
    pub(super) fn with_team(&self, team: &str) -> PaneOwner {
        PaneOwner {
            root: self.root.clone(),
            team: team.to_string(),
        }
    }

    /// The team's tmux session (outside tmux) or window (inside): `swarm-<team>-<hash>`, where
    /// `<hash>` is six hex digits of a hash of the root, so two roots with a team of one name
    /// never share a session, and the name stays short enough to read in a status line.
    pub(crate) fn session_name(&self) -> String {
        format!(
            "swarm-{}-{:06x}",
            self.team,
            fnv1a(self.root.as_bytes()) & 0xff_ffff
        )
    }

    /// `--root DIR --team T` for a hint (`argv::team_flags`).
    pub(super) fn team_flags(&self) -> String {
        crate::backend::argv::team_flags(std::path::Path::new(&self.root), &self.team)
    }

    /// The three marks of a pane of `member`: option and value.
    pub(super) fn marks(&self, member: &str) -> [(&'static str, String); 3] {
        [
            (ROOT_OPTION, self.root.clone()),
            (TEAM_OPTION, self.team.clone()),
            (MEMBER_OPTION, member.to_string()),
        ]
    }

    /// `set-option` commands that mark `pane` as `member`'s.
    pub(super) fn mark(&self, pane: &str, member: &str) -> Vec<TmuxCommand<'static>> {
        self.marks(member)
            .into_iter()
            .map(|(option, value)| {
                SetOption::new()
                    .pane()
                    .target_pane(pane.to_string())
                    .option(option)
                    .value(value)
                    .build()
            })
            .collect()
    }

    /// `show-options` commands printing `pane`'s three marks, one a line ([`Self::expected`]);
    /// an unset one prints nothing.
    pub(super) fn read_marks(pane: &str) -> Vec<TmuxCommand<'static>> {
        [ROOT_OPTION, TEAM_OPTION, MEMBER_OPTION]
            .into_iter()
            .map(|option| {
                ShowOptions::new()
                    .pane()
                    .quiet()
                    .value()
                    .target(pane.to_string())
                    .option(option)
                    .build()
            })
            .collect()
    }

    /// What [`Self::read_marks`] prints for a pane of `member`. Team and member names hold no
    /// newline, so a root with one cannot make another owner's marks look like these.
    pub(super) fn expected(&self, member: &str) -> String {
        format!("{}\n{}\n{member}\n", self.root, self.team)
    }
}

/// 32-bit FNV-1a: stable across builds and platforms, unlike std's hasher, so a session name
/// stays the same from one swarm version to the next.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_are_readable_and_differ_by_root() {
        let a = PaneOwner::new(Path::new("/nonexistent/a"), "t");
        let b = PaneOwner::new(Path::new("/nonexistent/b"), "t");
        let name = a.session_name();
        assert!(name.starts_with("swarm-t-"), "{name}");
        assert_eq!(name.len(), "swarm-t-".len() + 6);
        assert_ne!(name, b.session_name());
        assert_eq!(
            name,
            PaneOwner::new(Path::new("/nonexistent/a"), "t").session_name()
        );
        assert_eq!(fnv1a(b""), 0x811c_9dc5);
        assert_eq!(fnv1a(b"a"), 0xe40c_292c);
    }
}
