//! argv shown to people: shell quoting for display (dry runs, hints), never for running.
//!
//! swarm never hands a shell string to anything; these helpers only render argv so a person
//! can read or copy it, and make paths absolute before they are recorded or displayed.

use std::path::{Path, PathBuf};

/// A POSIX shell word for display (dry-run, hints): never used to run anything.
pub(crate) fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Renders argv as one display line.
pub(crate) fn display_argv(argv: &[String]) -> String {
    argv.iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The flags that name `team` of the store at `root` in a hint meant to be pasted:
/// `--team T`, with `--root DIR` before it unless `root` is the one a plain `swarm` finds here.
pub(crate) fn team_flags(root: &Path, team: &str) -> String {
    let team = format!("--team {}", shell_quote(team));
    if crate::store::paths::Store::is_default_root(root) {
        team
    } else {
        format!("--root {} {team}", shell_quote(&root.to_string_lossy()))
    }
}

/// `path` made absolute against the current directory (not resolving symlinks).
pub(crate) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_is_for_display_and_round_trips_quotes() {
        assert_eq!(shell_quote("abc"), "abc");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$(id)"), "'$(id)'");
    }
}
