//! A real claude teammate in its sandbox works on its own copy of the user's Claude Code
//! config: Claude Code writes its state (its start count, the project's record) to the copy
//! swarm bound over the config, and the user's file, which swarm reads outside for trust, stays
//! as it was.

use serde_json::{json, Value};

use super::fake_api::{Reply, Turn};
use super::versions::each_claude;
use super::{Launch, Team};
use crate::support::read_json;

const PROMPT: &str = "Say hello to the lead (contained check 51c2)";

fn script(turn: &Turn) -> Reply {
    if turn.last_user_text().contains(PROMPT) && !turn.called("toolu_hello") {
        return Reply::tool(
            "toolu_hello",
            "SendMessage",
            json!({"to": "team-lead", "message": "hello from coder", "summary": "greeting"}),
        );
    }
    Reply::text("done")
}

/// Every private copy of a Claude Code config in swarm's state (one directory a member).
fn copies(team: &Team) -> Vec<Value> {
    let dir = team.env.path("state/swarm/sandbox-configs");
    let mut out = Vec::new();
    for member in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(member.path()).unwrap().flatten() {
            out.push(read_json(&file.path()));
        }
    }
    out
}

#[test]
fn a_contained_claude_teammate_writes_its_own_copy_of_the_config_not_the_users() {
    each_claude(|claude| {
        let team = Team::launch(claude, Launch::new(PROMPT), script);
        let config = team.env.path(".claude.json");
        let seeded = std::fs::read(&config).unwrap();
        let seeded_starts = read_json(&config)["numStartups"].clone();
        team.eventually("coder's reply in team-lead's inbox", || {
            team.inbox("team-lead")
                .into_iter()
                .find(|m| m["from"] == "coder" && m["text"] == "hello from coder")
        });
        let work = team.work.display().to_string();
        let written = team.eventually("Claude Code to write its copy of the config", || {
            copies(&team)
                .into_iter()
                .find(|c| c["numStartups"] != seeded_starts && c["projects"][&work].is_object())
        });
        assert_eq!(
            written["projects"][&work]["hasTrustDialogAccepted"], true,
            "the copy starts from the user's config: {written}"
        );
        assert_eq!(
            std::fs::read(&config).unwrap(),
            seeded,
            "the user's config was written"
        );
        let pane = team.pane();
        assert!(!pane.contains("EBUSY") && !pane.contains("EROFS"), "{pane}");
    });
}
