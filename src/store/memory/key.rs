//! The project key: the folder name under `<root>/projects/` that Claude Code gives a project
//! directory (PROTOCOL.md, "Team memory").
//!
//! Claude Code 2.1.328 keys a project's memory by the project's canonical git root: the real
//! path of the directory, then the nearest ancestor holding `.git`, and for a linked worktree
//! the main repository that `.git` points back to, so every worktree of one repository shares
//! one memory. The key is that path with every UTF-16 code unit outside `[A-Za-z0-9]` turned
//! into `-`; a key longer than 200 characters is cut to 200 and given `-` plus the base-36
//! absolute value of the path's Java-style string hash, so long paths stay unique. Both rules
//! are copied from the binary (its `rL` and the memory resolver's `defaultKey`) and checked
//! against directories it created (`tests/integration/interop/memory.rs`); a mismatch would put
//! swarm's memory where no `claude` teammate looks.

use std::fs;
use std::path::{Component, Path, PathBuf};

/// Longest key Claude Code keeps without a hash suffix.
const KEY_LIMIT: usize = 200;

/// The directory Claude Code keys `dir`'s memory by: its real path's canonical git root, else
/// its real path (else `dir` itself, when it cannot be resolved).
pub(crate) fn project_base(dir: &Path) -> PathBuf {
    let real = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    match git_root(&real) {
        Some(root) => canonical_git_root(&root),
        None => real,
    }
}

/// `base` as a folder name under `projects/`.
pub(crate) fn project_key(base: &Path) -> String {
    let text = base.to_string_lossy();
    let mut key = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            key.push(c);
        } else {
            // JavaScript's regex replace works on UTF-16 code units: a character outside the
            // Basic Multilingual Plane becomes two dashes.
            key.extend(std::iter::repeat_n('-', c.len_utf16()));
        }
    }
    if key.len() <= KEY_LIMIT {
        return key;
    }
    format!(
        "{}-{}",
        &key[..KEY_LIMIT],
        base36(java_hash(&text).unsigned_abs())
    )
}

/// `h = (h << 5) - h + unit`, wrapping at 32 bits, over the UTF-16 code units.
fn java_hash(text: &str) -> i32 {
    text.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_shl(5)
            .wrapping_sub(h)
            .wrapping_add(i32::from(unit))
    })
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ASCII digits")
}

/// The nearest of `dir` and its ancestors holding a `.git` directory or file.
fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| fs::metadata(d.join(".git")).is_ok_and(|m| m.is_dir() || m.is_file()))
        .map(Path::to_path_buf)
}

/// For a linked worktree (`.git` is a file `gitdir: <repo>/.git/worktrees/<name>` whose
/// `commondir` and `gitdir` point back consistently), the main repository's work tree (or the
/// bare repository); for anything else `root` itself, as Claude Code does.
fn canonical_git_root(root: &Path) -> PathBuf {
    linked_main(root).unwrap_or_else(|| root.to_path_buf())
}

fn linked_main(root: &Path) -> Option<PathBuf> {
    let dot_git = fs::read_to_string(root.join(".git")).ok()?;
    let gitdir = dot_git.trim().strip_prefix("gitdir:")?.trim();
    let worktree_dir = resolve(root, gitdir);
    let common = fs::read_to_string(worktree_dir.join("commondir")).ok()?;
    let common = resolve(&worktree_dir, common.trim());
    if resolve(worktree_dir.parent()?, ".") != common.join("worktrees") {
        return None;
    }
    let back = fs::read_to_string(worktree_dir.join("gitdir")).ok()?;
    let back = fs::canonicalize(resolve(&worktree_dir, back.trim())).ok()?;
    if back != fs::canonicalize(root).ok()?.join(".git") {
        return None;
    }
    if common.file_name().is_some_and(|n| n != ".git") {
        // A bare repository: its own directory, unless it has a `.git` of its own.
        return (!common.join(".git").exists()).then_some(common);
    }
    common.parent().map(Path::to_path_buf)
}

/// Node's `path.resolve(base, p)`: `p` against `base`, with `.` and `..` folded lexically.
pub(crate) fn resolve(base: &Path, p: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for part in base.join(p).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_unit_outside_ascii_letters_and_digits_becomes_a_dash() {
        // Seen in Claude Code 2.1.328: `cd '/tmp/memory-cc/proj/my repo.ü_x'` made this folder.
        assert_eq!(
            project_key(Path::new("/tmp/memory-cc/proj/my repo.ü_x")),
            "-tmp-memory-cc-proj-my-repo---x"
        );
        assert_eq!(project_key(Path::new("/a/😀")), "-a---");
    }

    #[test]
    fn long_keys_are_cut_and_hashed_as_claude_code_does() {
        // The folder Claude Code 2.1.328 made for this directory (PROTOCOL.md, "Team memory").
        let dir = format!(
            "/tmp/memory-cc/long/{}/{}-é😀",
            "a".repeat(120),
            "b".repeat(100)
        );
        let expected = format!(
            "-tmp-memory-cc-long-{}-{}-f3cqkb",
            "a".repeat(120),
            "b".repeat(59)
        );
        assert_eq!(project_key(Path::new(&dir)), expected);
    }

    #[test]
    fn a_linked_worktree_is_keyed_by_its_main_repository() {
        let tmp = tempfile::tempdir().unwrap();
        let main = fs::canonicalize(tmp.path()).unwrap().join("main");
        let admin = main.join(".git/worktrees/wt");
        fs::create_dir_all(&admin).unwrap();
        let wt = main.parent().unwrap().join("wt");
        fs::create_dir_all(wt.join("sub")).unwrap();
        fs::write(wt.join(".git"), format!("gitdir: {}\n", admin.display())).unwrap();
        fs::write(admin.join("commondir"), "../..\n").unwrap();
        fs::write(
            admin.join("gitdir"),
            format!("{}\n", wt.join(".git").display()),
        )
        .unwrap();
        assert_eq!(project_base(&wt.join("sub")), main);
        assert_eq!(project_base(&main), main);
        // A `.git` file whose admin directory does not point back is not trusted.
        fs::write(admin.join("gitdir"), "/elsewhere/.git\n").unwrap();
        assert_eq!(project_base(&wt), wt);
        // No repository at all: the directory itself.
        let plain = main.parent().unwrap().join("plain");
        fs::create_dir_all(&plain).unwrap();
        assert_eq!(project_base(&plain), plain);
    }
}
