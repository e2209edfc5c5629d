//! Team memory against the real binary: the project key swarm computes is the folder Claude
//! Code itself uses (its system prompt names the memory directory, and it writes its transcript
//! under the same key), and what a native claude teammate loads of it: its private `MEMORY.md`
//! yes, the team directory `memory/team/` no. Claude Code 2.1.328 puts team memory in the
//! prompt only for a team-scoped store in `CLAUDE_MEMORY_STORES` (a server-synced memory store)
//! or with its server-side org-memory switches, so a `claude` teammate does not read swarm's
//! team memory by itself (README, "Team memory").

use std::path::PathBuf;

use super::fake_api::{Reply, Turn};
use super::versions::each_claude;
use super::{Launch, Team};

const PROMPT: &str = "Check the memory (interop check 41d2)";
const PRIVATE: &str = "PRIVATE-MEMORY-MARKER-9b3e";
const TEAM_INDEX: &str = "TEAM-MEMORY-MARKER-5a7c";
const TEAM_TOPIC: &str = "TEAM-TOPIC-MARKER-2f8d";

#[test]
fn claude_code_keys_memory_as_swarm_does_and_loads_the_private_index_but_not_the_team_one() {
    each_claude(|claude| {
        let mut team_dir = PathBuf::new();
        let team = Team::launch_in(
            claude,
            Launch::new(PROMPT),
            "work dir.é_1",
            |env, work| {
                let work = work.display().to_string();
                env.swarm([
                    "memory",
                    "write",
                    "build",
                    TEAM_TOPIC,
                    "--description",
                    TEAM_INDEX,
                    "--project",
                    &work,
                ])
                .ok();
                let list = env
                    .swarm(["--json", "memory", "list", "--project", &work])
                    .ok()
                    .json();
                team_dir = PathBuf::from(list["dir"].as_str().unwrap());
                // The private index, which Claude Code loads into every session of the project.
                let private = team_dir.parent().unwrap().join("MEMORY.md");
                std::fs::write(private, format!("- [Private](private.md) — {PRIVATE}\n")).unwrap();
            },
            |turn: &Turn| {
                if turn.last_user_text().contains(PROMPT) {
                    Reply::text("checked")
                } else {
                    Reply::text("done")
                }
            },
        );
        let body = team.eventually("coder's first turn", || {
            team.api.turns().into_iter().next().map(|b| b.to_string())
        });
        let memory_dir = team_dir.parent().unwrap();
        assert_eq!(
            team_dir,
            team.env.path(&format!(
                "projects/{}/memory/team",
                team.work
                    .display()
                    .to_string()
                    .replace(|c: char| !c.is_ascii_alphanumeric(), "-")
            ))
        );
        // Claude Code names the same memory directory swarm wrote to, and loads its private index.
        assert!(
            body.contains(&format!(
                "persistent file-based memory at `{}/`",
                memory_dir.display()
            )),
            "Claude Code's memory directory differs from swarm's {}",
            memory_dir.display()
        );
        assert!(
            body.contains(PRIVATE),
            "the private MEMORY.md was not loaded"
        );
        // The team directory is not read: neither its index nor its topic reaches the model.
        assert!(!body.contains(TEAM_INDEX) && !body.contains(TEAM_TOPIC));
        // And the folder it writes its transcript to, keyed by the same (non-git) directory.
        let project = memory_dir.parent().unwrap().to_path_buf();
        team.eventually("Claude Code's transcript under the same key", || {
            std::fs::read_dir(&project)
                .ok()?
                .filter_map(Result::ok)
                .find(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        });
    });
}
