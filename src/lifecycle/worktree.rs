//! A git worktree per teammate, so teammates editing one repository do not trip over each other.
//!
//! `worktree: true` gives teammate `coder` of team `t` the directory
//! `<repo>/.swarm/worktrees/coder` on a new branch `swarm/t/coder` from the current HEAD (git2,
//! no `git` binary). The base commit is recorded on the member (`swarmWorktree`), so at shutdown
//! swarm can tell an untouched worktree (removed, branch deleted) from one with uncommitted
//! changes or new commits (kept and reported). `.swarm/` is added to the repository's
//! `info/exclude` so the worktrees never show up as untracked files.

use std::fmt;
use std::path::{Path, PathBuf};

use git2::{BranchType, Repository, StatusOptions, WorktreeAddOptions, WorktreePruneOptions};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::names::{AgentName, TeamName};
use crate::store::roster::Member;

/// Roster field (swarm-only) describing a member's worktree.
pub(crate) const FIELD: &str = "swarmWorktree";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Worktree {
    /// The main repository's working directory.
    pub repo: PathBuf,
    /// `<repo>/.swarm/worktrees/<name>`
    pub path: PathBuf,
    /// `swarm/<team>/<name>`
    pub branch: String,
    /// The commit the branch started at.
    pub base: String,
    /// git's name for the worktree (`.git/worktrees/<admin>`).
    pub admin: String,
    /// Where the teammate starts: the same subdirectory the launch was in, inside the worktree.
    pub cwd: PathBuf,
}

/// What shutdown did with a worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "worktree", rename_all = "snake_case")]
pub(crate) enum Outcome {
    Removed {
        path: PathBuf,
    },
    Kept {
        path: PathBuf,
        branch: String,
        reason: String,
    },
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Removed { path } => {
                write!(f, "worktree {} removed (unchanged)", path.display())
            }
            Outcome::Kept {
                path,
                branch,
                reason,
            } => write!(
                f,
                "worktree {} kept on branch {branch}: {reason}",
                path.display()
            ),
        }
    }
}

fn git(what: &str, e: git2::Error) -> Error {
    Error::Backend(format!("git: failed to {what}: {}", e.message()))
}

impl Worktree {
    /// Works out the worktree for `name` from the repository containing `cwd`, refusing (exit 2)
    /// what would fail later: no repository, no commit yet, a path or branch already there.
    pub(crate) fn plan(cwd: &Path, team: &TeamName, name: &AgentName) -> Result<Worktree> {
        let repo = Repository::discover(cwd).map_err(|_| {
            Error::usage(format!(
                "worktree: true needs a git repository, and {} is not inside one; drop worktree or set cwd to a repository",
                cwd.display()
            ))
        })?;
        let workdir = repo
            .workdir()
            .ok_or_else(|| {
                Error::usage(format!(
                    "worktree: true: the repository at {} is bare; point cwd at a checkout",
                    repo.path().display()
                ))
            })?
            .to_path_buf();
        let base = repo
            .head()
            .and_then(|h| h.peel_to_commit())
            .map_err(|_| {
                Error::usage(format!(
                    "worktree: true: the repository at {} has no commit yet; commit something first",
                    workdir.display()
                ))
            })?
            .id()
            .to_string();
        let branch = format!("swarm/{team}/{name}");
        let path = workdir.join(".swarm").join("worktrees").join(name.as_str());
        let branch_exists = repo.find_branch(&branch, BranchType::Local).is_ok();
        // Paths as a shell reads them, for advice meant to be pasted.
        let quoted = |p: &Path| {
            let text = p.to_string_lossy();
            crate::backend::shell_quote(text.trim_end_matches('/'))
        };
        if path.exists() {
            // Kept from an earlier run (it had changes): git refuses to delete a branch that a
            // worktree has checked out, so the advice removes the worktree first.
            return Err(Error::usage(format!(
                "worktree for {name}: {} is still there from an earlier run{}; to keep that work, \
                 commit or copy it and rename the teammate; to throw it away, run \
                 `git -C {} worktree remove --force {}{}` and launch again",
                path.display(),
                if branch_exists {
                    format!(" (branch {branch})")
                } else {
                    String::new()
                },
                quoted(&workdir),
                quoted(&path),
                if branch_exists {
                    format!(" && git -C {} branch -D {branch}", quoted(&workdir))
                } else {
                    String::new()
                },
            )));
        }
        if branch_exists {
            return Err(Error::usage(format!(
                "worktree for {name}: branch {branch} already exists in {0}; delete it \
                 (`git -C {0} worktree prune && git -C {0} branch -D {branch}`) or rename the teammate",
                quoted(&workdir)
            )));
        }
        let canon_cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        let canon_repo = workdir.canonicalize().unwrap_or_else(|_| workdir.clone());
        let sub = canon_cwd
            .strip_prefix(&canon_repo)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        Ok(Worktree {
            cwd: path.join(sub),
            repo: workdir,
            path,
            branch,
            base,
            admin: format!("swarm-{team}-{name}"),
        })
    }

    /// Creates the branch and the worktree.
    pub(crate) fn create(&self) -> Result<()> {
        let repo = Repository::open(&self.repo).map_err(|e| git("open the repository", e))?;
        let oid = git2::Oid::from_str(&self.base).map_err(|e| git("read the base commit", e))?;
        let commit = repo
            .find_commit(oid)
            .map_err(|e| git("find the base commit", e))?;
        let branch = repo
            .branch(&self.branch, &commit, false)
            .map_err(|e| git(&format!("create branch {}", self.branch), e))?;
        let result = (|| {
            if let Some(parent) = self.path.parent() {
                std::fs::create_dir_all(parent).map_err(Error::io("create directory", parent))?;
            }
            let mut opts = WorktreeAddOptions::new();
            opts.reference(Some(branch.get()));
            repo.worktree(&self.admin, &self.path, Some(&opts))
                .map_err(|e| git(&format!("add worktree {}", self.path.display()), e))?;
            exclude_swarm_dir(&repo)
        })();
        if result.is_err() {
            if let Ok(mut b) = repo.find_branch(&self.branch, BranchType::Local) {
                let _ = b.delete();
            }
        }
        result
    }

    /// Removes the worktree if nothing changed in it; otherwise keeps it and says why.
    pub(crate) fn finish(&self) -> Result<Outcome> {
        if let Some(reason) = self.changes()? {
            return Ok(Outcome::Kept {
                path: self.path.clone(),
                branch: self.branch.clone(),
                reason,
            });
        }
        self.remove()?;
        Ok(Outcome::Removed {
            path: self.path.clone(),
        })
    }

    /// What changed: uncommitted files or commits beyond the base; `None` when untouched.
    pub(crate) fn changes(&self) -> Result<Option<String>> {
        let repo = Repository::open(&self.repo).map_err(|e| git("open the repository", e))?;
        let mut reasons = Vec::new();
        if let Ok(branch) = repo.find_branch(&self.branch, BranchType::Local) {
            if let Some(tip) = branch.get().target() {
                if tip.to_string() != self.base {
                    let mut walk = repo.revwalk().map_err(|e| git("walk history", e))?;
                    walk.push(tip).map_err(|e| git("walk history", e))?;
                    if let Ok(base) = git2::Oid::from_str(&self.base) {
                        let _ = walk.hide(base);
                    }
                    let n = walk.count();
                    reasons.push(format!("{n} new commit{}", if n == 1 { "" } else { "s" }));
                }
            }
        }
        if self.path.exists() {
            let wt = Repository::open(&self.path)
                .map_err(|e| git(&format!("open worktree {}", self.path.display()), e))?;
            let mut opts = StatusOptions::new();
            opts.include_untracked(true)
                .recurse_untracked_dirs(true)
                .include_ignored(false);
            let statuses = wt
                .statuses(Some(&mut opts))
                .map_err(|e| git("read the worktree status", e))?;
            if !statuses.is_empty() {
                let n = statuses.len();
                reasons.push(format!(
                    "{n} uncommitted change{}",
                    if n == 1 { "" } else { "s" }
                ));
            }
        }
        Ok((!reasons.is_empty()).then(|| reasons.join(", ")))
    }

    /// Removes the worktree and its branch whatever is in them (for rolling back a spawn, and
    /// for an unchanged worktree at shutdown).
    pub(crate) fn remove(&self) -> Result<()> {
        let repo = Repository::open(&self.repo).map_err(|e| git("open the repository", e))?;
        if let Ok(wt) = repo.find_worktree(&self.admin) {
            let mut opts = WorktreePruneOptions::new();
            opts.valid(true).locked(true).working_tree(true);
            wt.prune(Some(&mut opts))
                .map_err(|e| git(&format!("remove worktree {}", self.path.display()), e))?;
        }
        match std::fs::remove_dir_all(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("remove", &self.path)(e)),
        }
        if let Ok(mut branch) = repo.find_branch(&self.branch, BranchType::Local) {
            branch
                .delete()
                .map_err(|e| git(&format!("delete branch {}", self.branch), e))?;
        }
        Ok(())
    }

    /// The worktree recorded on a member, if any.
    pub(crate) fn of_member(member: &Member) -> Option<Worktree> {
        serde_json::from_value(member.extra.get(FIELD)?.clone()).ok()
    }

    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("serializable")
    }
}

/// Adds `.swarm/` to `<gitdir>/info/exclude` once.
fn exclude_swarm_dir(repo: &Repository) -> Result<()> {
    let dir = repo.commondir().join("info");
    let path = dir.join("exclude");
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current
        .lines()
        .any(|l| l.trim() == "/.swarm/" || l.trim() == ".swarm/")
    {
        return Ok(());
    }
    std::fs::create_dir_all(&dir).map_err(Error::io("create directory", &dir))?;
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("/.swarm/\n");
    std::fs::write(&path, text).map_err(Error::io("write", &path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_with_commit() -> (tempfile::TempDir, Repository) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        std::fs::write(dir.path().join("README"), "hi\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("README")).unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
            .unwrap();
        drop(tree);
        (dir, repo)
    }

    #[test]
    fn an_untouched_worktree_is_removed_and_a_changed_one_kept() {
        let (dir, repo) = repo_with_commit();
        let team: TeamName = "t".parse().unwrap();
        let a: AgentName = "a".parse().unwrap();
        let b: AgentName = "b".parse().unwrap();
        let wa = Worktree::plan(dir.path(), &team, &a).unwrap();
        let wb = Worktree::plan(dir.path(), &team, &b).unwrap();
        wa.create().unwrap();
        wb.create().unwrap();
        assert!(wa.path.join("README").is_file());
        assert!(repo.find_branch("swarm/t/a", BranchType::Local).is_ok());
        // The main checkout does not see the worktrees as untracked files.
        let mut opts = StatusOptions::new();
        opts.include_untracked(true);
        assert_eq!(repo.statuses(Some(&mut opts)).unwrap().len(), 0);

        std::fs::write(wb.path.join("new.txt"), "x").unwrap();
        assert_eq!(
            wa.finish().unwrap(),
            Outcome::Removed {
                path: wa.path.clone()
            }
        );
        assert!(!wa.path.exists());
        assert!(repo.find_branch("swarm/t/a", BranchType::Local).is_err());
        let kept = wb.finish().unwrap();
        assert!(
            matches!(&kept, Outcome::Kept { reason, .. } if reason.contains("1 uncommitted change")),
            "{kept:?}"
        );
        assert!(wb.path.join("new.txt").is_file());
        assert!(matches!(
            Worktree::plan(dir.path(), &team, &b),
            Err(Error::Usage(_))
        ));
    }

    #[test]
    fn outside_a_repository_is_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        let e =
            Worktree::plan(dir.path(), &"t".parse().unwrap(), &"a".parse().unwrap()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("not inside one"), "{e}");
    }
}
