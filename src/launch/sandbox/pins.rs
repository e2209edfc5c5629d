//! The directories a contained teammate could move away to make its own in their place, each
//! pinned: bound over itself (writable as before), so it is a mount point, which `rename(2)`
//! refuses to move (`EBUSY`).
//!
//! A mount covers one path in the sandbox, not the directories above it: a teammate that may
//! write `~` could `mv ~/.claude ~/.old` (the read-only `settings.json` goes with it) and make a
//! new `~/.claude/settings.json` that swarm reads outside; or move the state directory above
//! swarm's hidden private state and write a trust list of its own where swarm looks for it. So
//! every directory above a hidden, read-only or copied path whose parent this process may write
//! (which a rename needs) is pinned, before those mounts are made (a later mount covers an
//! earlier one). Pinning costs a rename between a pinned directory and another (`EXDEV`, which
//! `mv` and most tools answer by copying).

use std::path::{Path, PathBuf};

/// The directories above `paths` (as given and resolved) whose parent may be written here,
/// outermost first, each once; never `/`.
pub(super) fn pins<'a>(paths: impl IntoIterator<Item = &'a PathBuf>) -> Vec<PathBuf> {
    let mut pinned: Vec<PathBuf> = Vec::new();
    for path in paths {
        let real = std::fs::canonicalize(path).ok();
        for start in std::iter::once(path.as_path()).chain(real.as_deref()) {
            for dir in start.ancestors().skip(1) {
                let movable = dir.parent().is_some_and(writable);
                if movable && dir.is_dir() && !pinned.iter().any(|p| p == dir) {
                    pinned.push(dir.to_path_buf());
                }
            }
        }
    }
    pinned.sort_by_key(|p| p.components().count());
    pinned
}

/// The first symlink on the way to one of `paths` (the path itself or a directory above it, as
/// given) that sits in a directory this process may write, with what it names. A mount cannot
/// cover a symlink (it lands on what the link names) and pinning cannot keep one in place, so a
/// teammate could remove such a link and put its own file or directory there: nothing
/// protected behind it is protected.
pub(super) fn replaceable_link<'a>(
    paths: impl IntoIterator<Item = &'a PathBuf>,
) -> Option<(PathBuf, PathBuf)> {
    paths.into_iter().find_map(|path| {
        path.ancestors().find_map(|at| {
            let parent = at.parent().filter(|p| !p.as_os_str().is_empty())?;
            let link = std::fs::symlink_metadata(at).ok()?.file_type().is_symlink();
            (link && writable(parent))
                .then(|| (at.to_path_buf(), std::fs::read_link(at).unwrap_or_default()))
        })
    })
}

fn writable(dir: &Path) -> bool {
    rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_directory_above_a_path_whose_parent_is_writable_is_pinned_outermost_first() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("home/.claude")).unwrap();
        std::fs::create_dir_all(base.join("state/swarm")).unwrap();
        let got = pins(&[
            base.join("home/.claude/settings.json"),
            base.join("state/swarm"),
            base.join("home/.claude.json"),
        ]);
        let ours: Vec<&PathBuf> = got.iter().filter(|p| p.starts_with(&base)).collect();
        assert_eq!(
            ours,
            [
                &base,
                &base.join("home"),
                &base.join("state"),
                &base.join("home/.claude")
            ]
        );
        assert!(!got.contains(&PathBuf::from("/")));
        let depths: Vec<usize> = got.iter().map(|p| p.components().count()).collect();
        assert!(depths.windows(2).all(|w| w[0] <= w[1]), "{got:?}");
    }

    #[test]
    fn a_symlink_in_a_writable_directory_on_the_way_to_a_protected_path_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("home/.claude")).unwrap();
        std::fs::create_dir_all(base.join("dotfiles/state")).unwrap();
        std::fs::write(base.join("home/.claude/settings.json"), "{}").unwrap();
        let plain = [base.join("home/.claude/settings.json")];
        assert_eq!(replaceable_link(&plain), None, "no link, nothing found");
        std::fs::write(base.join("dotfiles/s.json"), "{}").unwrap();
        std::os::unix::fs::symlink("../../dotfiles/s.json", base.join("home/.claude/c.json"))
            .unwrap();
        std::os::unix::fs::symlink(base.join("dotfiles/state"), base.join("home/.state")).unwrap();
        let file = [base.join("home/.claude/c.json")];
        assert_eq!(
            replaceable_link(&file),
            Some((file[0].clone(), "../../dotfiles/s.json".into()))
        );
        let under = [base.join("home/.state/swarm")];
        assert_eq!(
            replaceable_link(&under),
            Some((base.join("home/.state"), base.join("dotfiles/state"))),
            "a link above the path counts too"
        );
    }
}
