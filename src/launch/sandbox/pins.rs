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
}
