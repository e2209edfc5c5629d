//! What a running process swarm did not start says about itself: its argv, one variable of its
//! environment, and its children, read from `/proc`.
//!
//! A teammate a Claude Code lead started carries no swarm records (no pane marks, no pid), so
//! the only positive way to know which pane runs it is the command line Claude gave it
//! (`--agent-id NAME@TEAM --team-name TEAM`) and the config directory it runs against
//! (`CLAUDE_CONFIG_DIR`, else `$HOME/.claude`). These are read here and only here, and only
//! compared, never acted on: the caller decides. Linux only; elsewhere nothing is found, so such
//! a teammate stays "unknown", as it was.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

/// The argv of `pid` (`/proc/<pid>/cmdline`); `None` when it is gone or unreadable, or a
/// kernel thread (empty).
pub(crate) fn argv(pid: u32) -> Option<Vec<OsString>> {
    let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let bytes = bytes.strip_suffix(&[0]).unwrap_or(&bytes);
    if bytes.is_empty() {
        return None;
    }
    Some(
        bytes
            .split(|b| *b == 0)
            .map(|w| OsString::from_vec(w.to_vec()))
            .collect(),
    )
}

/// The value of `name` in the environment `pid` started with (`/proc/<pid>/environ`, readable
/// only for our own processes); `None` when unset or unreadable.
pub(crate) fn env_var(pid: u32, name: &str) -> Option<OsString> {
    let bytes = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{name}=");
    bytes
        .split(|b| *b == 0)
        .find_map(|entry| entry.strip_prefix(prefix.as_bytes()))
        .map(|value| OsString::from_vec(value.to_vec()))
}

/// Every process's parent, from one pass over `/proc/<pid>/stat`.
fn parents() -> HashMap<u32, u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The name in parentheses may hold spaces and `)`: fields start after the last `)`.
            let ppid = stat[stat.rfind(')')? + 1..].split_whitespace().nth(1)?;
            Some((pid, ppid.parse().ok()?))
        })
        .collect()
}

/// `pid` and its descendants down to `depth` generations (a shell's child, a wrapper's
/// grandchild), `pid` first.
pub(crate) fn with_descendants(pid: u32, depth: usize) -> Vec<u32> {
    let parents = parents();
    let mut found = vec![pid];
    let mut generation = vec![pid];
    for _ in 0..depth {
        generation = parents
            .iter()
            .filter(|(_, parent)| generation.contains(parent))
            .map(|(child, _)| *child)
            .collect();
        generation.sort_unstable();
        found.extend(&generation);
        if generation.is_empty() {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_environment_and_children_of_a_live_process() {
        let mut shell = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait", "sh", "--agent-id", "a@t"])
            .env("SWARM_PROCFS_PROBE", "found")
            .spawn()
            .unwrap();
        let pid = shell.id();
        // Until the exec, the child still shows the parent's argv (or none).
        let words = (0..500)
            .find_map(|_| {
                let words = argv(pid).filter(|w| w[0] == "sh");
                if words.is_none() {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                words
            })
            .expect("the shell's argv");
        assert_eq!(words[0], "sh");
        assert_eq!(words[words.len() - 2..], ["--agent-id", "a@t"]);
        assert_eq!(env_var(pid, "SWARM_PROCFS_PROBE").unwrap(), "found");
        assert_eq!(env_var(pid, "SWARM_PROCFS_ABSENT"), None);
        let sleep = (0..500)
            .find_map(|_| {
                let tree = with_descendants(pid, 2);
                let child = tree
                    .into_iter()
                    .skip(1)
                    .find(|p| argv(*p).is_some_and(|a| a[0] == "sleep"));
                if child.is_none() {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                child
            })
            .expect("the shell's sleep is its child");
        assert_eq!(with_descendants(pid, 0), [pid]);
        unsafe { libc::kill(sleep as i32, libc::SIGKILL) };
        shell.kill().unwrap();
        shell.wait().unwrap();
        assert_eq!(argv(pid), None, "a reaped process has no argv");
    }
}
