//! Which Claude Code config a claude teammate uses, said before it starts and true once it runs
//! (issue 28 item 9). The store here is not the user's config dir (`~/.claude`, which has a
//! `CLAUDE.md` and an `agents/` folder), so the teammate is given the store as
//! `CLAUDE_CONFIG_DIR` (the only place Claude Code looks for a team) and the user's login
//! through `CLAUDE_SECURESTORAGE_CONFIG_DIR`. The dry run (text and `--json`) and the launch's
//! warning say so and name what it does not see; the model's request then holds the project's
//! `CLAUDE.md` (memory files are sent) but not the user's, as said. And signed in only through
//! the user's `~/.claude/.credentials.json`, the teammate's requests carry that login (without
//! the variable it says "Not logged in").

use std::cell::RefCell;

use serde_json::{json, Value};

use super::fake_api::Reply;
use super::versions::each_claude;
use super::{Launch, Team, WAIT};

const PROMPT: &str = "Say hello (interop config)";

#[test]
fn the_dry_run_says_which_config_a_claude_teammate_uses_and_what_it_does_not_see() {
    each_claude(|claude| {
        let said: RefCell<Option<(Value, String)>> = RefCell::new(None);
        let setup = |env: &crate::support::Env, work: &std::path::Path| {
            let user = env.path("state/home/.claude");
            std::fs::create_dir_all(user.join("agents")).unwrap();
            std::fs::write(
                user.join("agents/reviewer.md"),
                "---\nname: reviewer\n---\n",
            )
            .unwrap();
            std::fs::write(user.join("CLAUDE.md"), "USER-MEMORY-7731").unwrap();
            std::fs::write(work.join("CLAUDE.md"), "PROJECT-MEMORY-4410").unwrap();
            let file = env.path("dry.json");
            std::fs::write(
                &file,
                json!({"team": "t", "cwd": work,
                       "teammates": [{"name": "coder", "prompt": PROMPT}]})
                .to_string(),
            )
            .unwrap();
            let dry = |json: bool| {
                let mut args = vec!["launch", file.to_str().unwrap(), "--agent", "claude"];
                args.extend(["--backend", "tmux", "--no-lead-pane", "--dry-run"]);
                if json {
                    args.insert(0, "--json");
                }
                let out = env
                    .swarm(args)
                    .env("CLAUDE_CODE_TEAMMATE_COMMAND", &claude.bin)
                    .run_within(WAIT);
                assert_eq!(out.code, 0, "{out:?}");
                out.stdout
            };
            let doc: Value = serde_json::from_str(&dry(true)).unwrap();
            *said.borrow_mut() = Some((doc["teammates"][0].clone(), dry(false)));
        };
        let team = Team::launch_in(claude, Launch::new(PROMPT), "work", setup, |_| {
            Reply::text("hello")
        });
        let (planned, text) = said.take().unwrap();
        let root = team.env.root().display().to_string();
        let user = team.env.path("state/home/.claude").display().to_string();
        let config = &planned["claudeConfig"];
        assert_eq!(config["dir"], root.as_str(), "{planned}");
        assert_eq!(config["userDir"], user.as_str(), "{planned}");
        assert_eq!(config["own"], false, "{planned}");
        assert_eq!(config["login"], user.as_str(), "{planned}");
        assert_eq!(
            config["loses"],
            json!(["CLAUDE.md", "agents/"]),
            "{planned}"
        );
        assert_eq!(planned["env"]["CLAUDE_CONFIG_DIR"], root.as_str());
        assert_eq!(planned["env"]["CLAUDE_SECURESTORAGE_CONFIG_DIR"], "");
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("config "))
            .unwrap_or_else(|| panic!("no config line in:\n{text}"));
        for part in [
            root.as_str(),
            &format!("not {user}"),
            "keeps your login",
            "not your CLAUDE.md, agents/",
        ] {
            assert!(line.contains(part), "{part:?} not in {line:?}");
        }
        // The launch itself says it too, before the teammate starts.
        assert!(
            team.launch_stderr.contains("claude teammate coder uses")
                && team.launch_stderr.contains("not your CLAUDE.md, agents/"),
            "{}",
            team.launch_stderr
        );

        // As said: the model is sent the project's memory, not the user's.
        let body = team.eventually("coder's first turn", || team.api.turns().first().cloned());
        let all = body.to_string();
        assert!(all.contains("PROJECT-MEMORY-4410"), "memory files are sent");
        assert!(
            !all.contains("USER-MEMORY-7731"),
            "the user's CLAUDE.md was read"
        );
    });
}

/// The login Claude Code keeps in the user's `~/.claude/.credentials.json` is the one a
/// teammate of another store signs in with: its requests carry the user's OAuth token.
#[test]
fn a_claude_teammate_of_another_store_signs_in_with_the_users_login() {
    const TOKEN: &str = "sk-ant-oat01-swarm-interop-login";
    each_claude(|claude| {
        let launch = Launch {
            oauth: Some(TOKEN),
            ..Launch::new(PROMPT)
        };
        let team = Team::launch(claude, launch, |_| Reply::text("hello"));
        team.eventually("coder's first turn", || team.api.turns().first().cloned());
        let credentials = team.api.credentials();
        assert!(
            credentials
                .iter()
                .any(|c| c == &format!("authorization: Bearer {TOKEN}")),
            "{credentials:?}"
        );
    });
}
