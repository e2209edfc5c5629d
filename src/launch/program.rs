//! Finding the programs a teammate's command line names (PROTOCOL.md section 10).
//!
//! Panes may start with another PATH than the launcher's, so every program is made absolute
//! here, at launch, and only an executable regular file counts: a directory or a file without
//! an execute bit would only fail later, in a pane the user may never look at. Errors say
//! where swarm looked and what the user can do, and exit 2 before anything is written.

use std::path::{Path, PathBuf};

use super::LaunchOptions;
use crate::backend::absolute;
use crate::error::{Error, Result};

/// The `claude` binary: `$CLAUDE_CODE_TEAMMATE_COMMAND`, else `claude` on PATH, else the
/// installer's usual places. The error says everywhere it looked.
pub(crate) fn resolve_claude(opts: &LaunchOptions) -> Result<PathBuf> {
    if let Some(cmd) = opts.env_var("CLAUDE_CODE_TEAMMATE_COMMAND") {
        return resolve_program(cmd, "CLAUDE_CODE_TEAMMATE_COMMAND", opts);
    }
    let path = search_path(opts);
    if let Some(found) = on_path("claude", path) {
        return Ok(found);
    }
    let mut looked = vec![format!("PATH ({path})")];
    if let Some(home) = opts.env_var("HOME").map(PathBuf::from) {
        for rel in [".claude/local/claude", ".local/bin/claude"] {
            let candidate = home.join(rel);
            if is_executable(&candidate) {
                return Ok(candidate);
            }
            looked.push(candidate.display().to_string());
        }
    }
    Err(Error::usage(format!(
        "claude was not found: looked in {}; install Claude Code or set CLAUDE_CODE_TEAMMATE_COMMAND to its path",
        looked.join(", ")
    )))
}

/// A program named on the command line or in a swarm file, made absolute; `what` names it in
/// the error.
pub(super) fn resolve_program(program: &str, what: &str, opts: &LaunchOptions) -> Result<PathBuf> {
    if program.contains('/') {
        let path = absolute(Path::new(program));
        if is_executable(&path) {
            return Ok(path);
        }
        return Err(Error::usage(format!(
            "{what}: {} is not an executable file",
            path.display()
        )));
    }
    let path = search_path(opts);
    on_path(program, path).ok_or_else(|| {
        Error::usage(format!(
            "{what}: {program} was not found on PATH ({path}); install it or give its full path"
        ))
    })
}

/// The launcher's PATH, which the lookup searches instead of this process's.
fn search_path(opts: &LaunchOptions) -> &str {
    opts.env_var("PATH").unwrap_or_default()
}

/// The first executable regular file called `program` on `path`.
fn on_path(program: &str, path: &str) -> Option<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_default();
    which::which_in_all(program, Some(path), cwd)
        .ok()?
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn opts_with_path(dir: &Path) -> LaunchOptions {
        LaunchOptions::for_test(vec![("PATH".into(), dir.display().to_string())])
    }

    #[test]
    fn only_an_executable_regular_file_is_a_program() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, mode: u32| {
            let p = dir.path().join(name);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            p
        };
        let good = write("good", 0o755);
        let plain = write("plain", 0o644);
        std::fs::create_dir(dir.path().join("dir")).unwrap();
        let opts = opts_with_path(dir.path());
        assert_eq!(resolve_program("good", "x", &opts).unwrap(), good);
        assert_eq!(
            resolve_program(&good.display().to_string(), "x", &opts).unwrap(),
            good
        );
        for bad in ["plain", "dir", "missing"] {
            let e = resolve_program(bad, "x", &opts).unwrap_err();
            assert!(e.to_string().contains("not found on PATH"), "{bad}: {e}");
        }
        let e = resolve_program(&plain.display().to_string(), "x", &opts).unwrap_err();
        assert!(e.to_string().contains("is not an executable file"), "{e}");
        let dir_path = dir.path().join("dir").display().to_string();
        assert!(resolve_program(&dir_path, "x", &opts).is_err());
    }
}
