//! Which topic names may become paths in the team memory directory.
//!
//! A topic name comes from a teammate, and teammates are agents that can be talked into
//! anything, so a name must never reach a file outside `memory/team/`. These are Claude Code
//! 2.1.328's rules for team memory keys, in its order (its `Var` and `Wqa`): no NUL byte; no
//! URL-encoded traversal (a name that `decodeURIComponent` changes into one holding `..` or
//! `/`); no Unicode look-alike traversal (a name that NFKC changes into one holding `..`, `/`,
//! `\` or NUL, e.g. full-width `．．／`); no backslash; not absolute; inside the directory once
//! `.` and `..` are folded; and inside it still after the deepest existing ancestor is resolved
//! through its symlinks, where a symlink loop, a dangling link or an ancestor that cannot be
//! checked is refused rather than guessed about. swarm adds: no empty component, no component
//! starting with `.` (its locks and temp files live there), and not the index itself.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

use super::key::resolve;
use crate::error::{Error, Result};

/// The index file; no topic may be named after it.
pub(crate) const INDEX: &str = "MEMORY.md";

fn refuse(name: &str, reason: impl Into<String>) -> Error {
    Error::UnsafeMemoryName {
        name: name.to_string(),
        reason: reason.into(),
    }
}

/// The checks that need no file system.
pub(crate) fn check_name(name: &str) -> Result<()> {
    if name.contains('\0') {
        return Err(refuse(name, "it holds a NUL byte"));
    }
    if let Some(decoded) = decode_uri_component(name) {
        if decoded != name && (decoded.contains("..") || decoded.contains('/')) {
            return Err(refuse(
                name,
                format!("it is URL-encoded path traversal (it decodes to {decoded:?})"),
            ));
        }
    }
    let nfkc: String = name.nfkc().collect();
    if nfkc != name && ["..", "/", "\\", "\0"].iter().any(|s| nfkc.contains(s)) {
        return Err(refuse(
            name,
            format!("it is a Unicode look-alike of path traversal (NFKC makes it {nfkc:?})"),
        ));
    }
    if name.contains('\\') {
        return Err(refuse(name, "it holds a backslash"));
    }
    if name.starts_with('/') {
        return Err(refuse(name, "it is an absolute path"));
    }
    for part in name.split('/') {
        if part.is_empty() {
            return Err(refuse(name, "it has an empty path component"));
        }
        if part.starts_with('.') && part != ".." {
            return Err(refuse(
                name,
                format!("its component {part:?} starts with a dot"),
            ));
        }
    }
    if name.eq_ignore_ascii_case(INDEX) || name.eq_ignore_ascii_case("MEMORY") {
        return Err(refuse(
            name,
            "that is the index, which swarm keeps itself; pick a topic name",
        ));
    }
    Ok(())
}

/// The path topic file `file` (a checked name plus `.md`) has in `team_dir`, after every check;
/// nothing is created.
pub(crate) fn resolve_in(team_dir: &Path, name: &str, file: &str) -> Result<PathBuf> {
    check_name(name)?;
    let path = resolve(team_dir, file);
    if path == team_dir || !path.starts_with(team_dir) {
        return Err(refuse(name, "it escapes the team memory directory"));
    }
    let real = real_deepest(&path).map_err(|reason| refuse(name, reason))?;
    let team_real = match fs::canonicalize(team_dir) {
        Ok(p) => p,
        // No team directory yet: nothing in it can be a link.
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(path)
        }
        Err(e) => {
            return Err(refuse(
                name,
                format!("cannot resolve {} ({e})", team_dir.display()),
            ))
        }
    };
    if !real.starts_with(&team_real) {
        return Err(refuse(
            name,
            format!(
                "it escapes the team memory directory through a symlink (it resolves to {})",
                real.display()
            ),
        ));
    }
    Ok(path)
}

/// `path` with its deepest existing ancestor resolved through symlinks and the missing rest
/// appended; why not, for a loop, a dangling link or an ancestor that cannot be checked.
fn real_deepest(path: &Path) -> std::result::Result<PathBuf, String> {
    let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
    let mut current = path;
    loop {
        match fs::canonicalize(current) {
            Ok(real) => return Ok(missing.iter().rev().fold(real, |p, part| p.join(part))),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                if fs::symlink_metadata(current).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(format!(
                        "{} is a dangling symlink (its target does not exist)",
                        current.display()
                    ));
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Err(format!("{} is a symlink loop", current.display()));
            }
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOTDIR) | Some(libc::ENAMETOOLONG)
                ) => {}
            Err(e) => {
                return Err(format!(
                    "cannot check that {} stays inside ({e})",
                    current.display()
                ))
            }
        }
        let (Some(parent), Some(part)) = (current.parent(), current.file_name()) else {
            return Ok(path.to_path_buf());
        };
        missing.push(part);
        current = parent;
    }
}

/// JavaScript's `decodeURIComponent`: `None` where it would throw (a `%` not followed by two
/// hex digits, or bytes that are not UTF-8).
fn decode_uri_component(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(name: &str) -> String {
        match check_name(name) {
            Err(Error::UnsafeMemoryName { reason, .. }) => reason,
            other => panic!("{name:?} was not refused: {other:?}"),
        }
    }

    #[test]
    fn a_nul_byte_is_refused() {
        // argv cannot carry a NUL, so this case is proven here rather than through the binary.
        assert!(reason("a\0b").contains("NUL"));
    }

    #[test]
    fn the_string_rules_refuse_what_claude_code_refuses() {
        assert!(reason("%2e%2e%2fx").contains("URL-encoded"));
        assert!(reason("a%2Fb").contains("URL-encoded"));
        assert!(reason("．．／x").contains("look-alike"));
        assert!(reason("a\\b").contains("backslash"));
        assert!(reason("/etc/passwd").contains("absolute"));
        assert!(reason("a//b").contains("empty"));
        assert!(reason(".hidden").contains("dot"));
        assert!(reason("memory.md").contains("index"));
        for fine in ["build", "notes/ci", "a%20b", "100%", "ünïcode", "x/../y"] {
            assert!(check_name(fine).is_ok(), "{fine:?}");
        }
    }

    #[test]
    fn decoding_is_javascripts() {
        assert_eq!(decode_uri_component("%2e%2E%2f").as_deref(), Some("../"));
        assert_eq!(decode_uri_component("100%"), None);
        assert_eq!(decode_uri_component("%ff"), None);
        assert_eq!(decode_uri_component("%C3%BC").as_deref(), Some("ü"));
    }
}
