//! Where a teammate starts: its directory (which must exist), and, in a worktree, the one to
//! make for it or the one it kept from an earlier run; used by `prepare` for every local
//! teammate.

use std::path::{Path, PathBuf};

use super::prepare::Shared;
use super::TeammatePlan;
use crate::backend::absolute;
use crate::error::{Error, Result};
use crate::lifecycle::worktree::Worktree;
use crate::store::names::AgentName;
use crate::store::roster::Member;

impl Shared<'_> {
    /// The teammate's directory before any worktree (which must exist), where it starts, the
    /// worktree to create, and the one it keeps from an earlier run (started again).
    pub(super) fn teammate_cwd(
        &self,
        t: &TeammatePlan,
        previous: Option<&Member>,
    ) -> Result<(PathBuf, PathBuf, Option<Worktree>, Option<Worktree>)> {
        let cwd = match &t.cwd {
            Some(dir) => absolute(&self.base_cwd.join(dir)),
            None => self.base_cwd.clone(),
        };
        if !t.worktree.unwrap_or(self.default_worktree) {
            check_dir(&t.name, &cwd)?;
            return Ok((cwd.clone(), cwd, None, None));
        }
        // A worktree kept at its last shutdown (it had changes) is where it carries on.
        if let Some(kept) = previous
            .and_then(Worktree::of_member)
            .filter(|wt| wt.path.is_dir())
        {
            check_dir(&t.name, &kept.cwd)?;
            return Ok((cwd, kept.cwd.clone(), None, Some(kept)));
        }
        check_dir(&t.name, &cwd)?;
        let wt = Worktree::plan(&cwd, self.team, &t.name)?;
        Ok((cwd, wt.cwd.clone(), Some(wt), None))
    }
}

/// A teammate's directory must exist before anything runs in it.
fn check_dir(name: &AgentName, dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    Err(Error::usage(format!(
        "teammate {name}: working directory {} does not exist",
        dir.display()
    )))
}
