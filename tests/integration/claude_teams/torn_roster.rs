//! Issue 15 item 2: Claude Code rewrites `config.json` in place under `config.json.lock/`
//! (open, write, truncate), so a reader that does not lock can see the new text followed by the
//! old tail. [`InPlaceWriter`] is such a writer, an OS process rewriting the roster between a
//! long and a short version for as long as it runs; the tests prove first that a plain reader
//! really sees torn rosters, then that swarm never does.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::*;

/// Rewrites in place like Claude Code: take `config.json.lock/` with `mkdir` (when `locking`),
/// write the new bytes over the old without truncating, truncate to the new length, release.
const WRITER: &str = r#"cd "$1" || exit 1
while :; do
  for f in "$2" "$3"; do
    if [ "$4" = 1 ]; then
      until mkdir config.json.lock 2>/dev/null; do sleep 0.001; done
    fi
    dd if="$f" of=config.json conv=notrunc status=none
    truncate -s "$(wc -c < "$f")" config.json
    if [ "$4" = 1 ]; then rmdir config.json.lock; fi
  done
done
"#;

/// A running in-place writer of one team's roster; killed (and the roster left whole) on drop.
pub(crate) struct InPlaceWriter {
    child: Child,
    config: PathBuf,
    whole: PathBuf,
}

impl InPlaceWriter {
    /// Starts rewriting `teams/<team>/config.json` between two versions of the roster as it is
    /// now, which differ only in the length of their description (so membership, creation time
    /// and every member stay the same).
    pub(crate) fn start(env: &Env, team: &str, locking: bool) -> InPlaceWriter {
        let dir = env.path(&format!("teams/{team}"));
        let config = read_json(&dir.join("config.json"));
        let version = |name: &str, description: String| {
            let mut v = config.clone();
            v["description"] = Value::from(description);
            let path = env.path(name);
            std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
            path
        };
        let long = version("roster-long.json", "a long description ".repeat(400));
        let short = version("roster-short.json", "short".into());
        let child = Command::new("sh")
            .arg("-c")
            .arg(WRITER)
            .arg("writer")
            .args([dir.as_path(), long.as_path(), short.as_path()])
            .arg(if locking { "1" } else { "0" })
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("sh, dd and truncate are installed");
        InPlaceWriter {
            child,
            config: dir.join("config.json"),
            whole: short,
        }
    }

    /// Stops the writer and leaves the roster whole (a writer killed between its write and its
    /// truncate leaves it torn).
    fn halt(&mut self) {
        // The whole group: a `dd` or `truncate` left running would write after the repair.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
        let _ = std::fs::copy(&self.whole, &self.config);
        let _ = std::fs::remove_dir(self.config.with_extension("json.lock"));
    }
}

impl Drop for InPlaceWriter {
    fn drop(&mut self) {
        self.halt();
    }
}

/// How many of `reads` plain reads of `path` (no lock) do not parse.
fn torn_plain_reads(path: &Path, reads: usize) -> usize {
    (0..reads)
        .filter(|_| {
            let bytes = std::fs::read(path).unwrap_or_default();
            serde_json::from_slice::<Value>(&bytes).is_err()
        })
        .count()
}

#[test]
fn team_show_never_sees_a_roster_torn_by_an_in_place_rewrite() {
    let env = Env::with_team(&["coder", "tester"]);
    let config = env.path("teams/t/config.json");
    let writer = InPlaceWriter::start(&env, "t", true);
    // The harness can fail: a reader that does not lock sees torn rosters.
    let torn = eventually(Duration::from_secs(60), "a torn plain read", || {
        Some(torn_plain_reads(&config, 2000)).filter(|&n| n > 0)
    });
    let mut failures = Vec::new();
    let start = Instant::now();
    let runs = 300;
    for _ in 0..runs {
        let out = env.swarm(["--json", "team", "show"]).run();
        if out.code != 0 {
            failures.push(out.stderr);
        } else {
            let doc = out.json();
            assert_eq!(doc["members"].as_array().unwrap().len(), 3, "{doc}");
        }
    }
    let took = start.elapsed();
    drop(writer);
    assert!(
        failures.is_empty(),
        "{} of {runs} `swarm team show` runs failed ({torn} of 2000 plain reads were torn; \
         {took:?}): {:?}",
        failures.len(),
        &failures[..failures.len().min(3)]
    );
}
