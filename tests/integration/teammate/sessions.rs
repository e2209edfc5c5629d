//! codex and gemini teammates keep one conversation across turns and restarts (issue 25 item
//! 5), against fakes that take exactly the installed CLIs' options and refuse a resume of a
//! conversation that does not exist (`interop/other_clis.rs`). gemini gets the id swarm names
//! (`--session-id`, then `--resume`); codex names its own, printed on its first turn, which
//! swarm reads back and resumes with `exec ... resume <id>`.

use serde_json::Value;

use super::{read, start, to_lead, LONG};
use crate::interop::other_clis::{fake_codex, fake_gemini};
use crate::support::*;

/// Sends `text` to `a` and waits for its `n`th idle notification.
fn turn(env: &Env, n: usize, text: &str) {
    env.swarm(["send", "--to", "a", text]).ok();
    eventually(LONG, &format!("turn {n}"), || {
        (to_lead(env, "idle_notification").len() == n).then_some(())
    });
}

fn session(env: &Env) -> Value {
    read_json(&env.path("teams/t/sessions/a/session.json"))
}

#[test]
fn a_codex_teammate_resumes_the_conversation_codex_named_across_turns_and_restarts() {
    let env = Env::with_team(&["a"]);
    let codex = fake_codex(&env);
    let codex = codex.to_str().unwrap();
    let args = [
        "--",
        codex,
        "exec",
        "--skip-git-repo-check",
        "-s",
        "read-only",
    ];
    let mut mate = Some(start(&env, "a", &args));
    turn(&env, 1, "first");
    let id = session(&env)["sessionId"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 36, "{}", session(&env));
    assert_eq!(session(&env)["adapter"], "codex");
    turn(&env, 2, "second");
    turn(&env, 3, "third");
    let log = env.path("codex-state/argv.log");
    assert_eq!(
        read(&log),
        format!("exec {id}\nresume {id}\nresume {id}\n"),
        "codex named the conversation on the first turn; the next ones resumed it"
    );
    assert_eq!(
        read(&env.path(&format!("codex-state/{id}")))
            .lines()
            .count(),
        3
    );
    // A runtime started again (after a crash) carries on the same conversation.
    drop(mate.take());
    let _mate = start(&env, "a", &args);
    turn(&env, 4, "fourth");
    assert!(
        read(&log).ends_with(&format!("resume {id}\nresume {id}\n")),
        "{}",
        read(&log)
    );
    assert_eq!(
        read(&env.path(&format!("codex-state/{id}")))
            .lines()
            .count(),
        4
    );
}

#[test]
fn a_gemini_teammate_names_its_conversation_then_resumes_it_across_turns_and_restarts() {
    let env = Env::with_team(&["a"]);
    let gemini = fake_gemini(&env);
    let gemini = gemini.to_str().unwrap();
    let args = ["--", gemini, "-m", "gemini-2.5-flash", "-p"];
    let mut mate = Some(start(&env, "a", &args));
    turn(&env, 1, "first");
    turn(&env, 2, "second");
    let id = session(&env)["sessionId"].as_str().unwrap().to_string();
    assert_eq!(session(&env)["adapter"], "gemini");
    let log = env.path("gemini-state/argv.log");
    assert_eq!(read(&log), format!("new {id}\nresume {id}\n"));
    drop(mate.take());
    let _mate = start(&env, "a", &args);
    turn(&env, 3, "third");
    assert_eq!(read(&log), format!("new {id}\nresume {id}\nresume {id}\n"));
    assert_eq!(
        read(&env.path(&format!("gemini-state/{id}")))
            .lines()
            .count(),
        3
    );
}

#[test]
fn the_dry_run_names_the_codex_and_gemini_adapters() {
    let env = Env::new();
    let codex = fake_codex(&env);
    let gemini = fake_gemini(&env);
    for (agent, says) in [
        (
            format!("{} exec --json", codex.display()),
            "codex: the session id codex prints",
        ),
        (
            format!("{} -p", gemini.display()),
            "gemini: --session-id <uuid> on the first turn",
        ),
        (format!("{} exec --ephemeral", codex.display()), "none"),
    ] {
        let doc = env
            .swarm([
                "--json",
                "launch",
                "--dry-run",
                "--backend",
                "in-process",
                "--agent",
                &agent,
                "--teammate",
                "a=go",
            ])
            .ok()
            .json();
        let conversation = doc["teammates"][0]["conversation"].as_str().unwrap();
        assert!(conversation.starts_with(says), "{agent}: {conversation}");
    }
}

/// Issue 22 item 7: a conversation id someone else wrote into a member's session file (any
/// teammate can) is not resumed: only an id swarm gave the member, as its private state
/// records, is. A directory at the session file is moved aside and a new conversation begun.
#[test]
fn only_a_conversation_swarm_gave_the_member_is_resumed() {
    let env = Env::with_team(&["a"]);
    let gemini = fake_gemini(&env);
    let gemini = gemini.to_str().unwrap();
    let args = ["--", gemini, "-m", "gemini-2.5-flash", "-p"];
    let mut mate = Some(start(&env, "a", &args));
    turn(&env, 1, "first");
    let minted = session(&env)["sessionId"].as_str().unwrap().to_string();
    drop(mate.take());
    let forged = "11111111-2222-4333-8444-555555555555";
    std::fs::write(
        env.path("teams/t/sessions/a/session.json"),
        serde_json::json!({"adapter": "gemini", "sessionId": forged, "turns": 4}).to_string(),
    )
    .unwrap();
    mate = Some(start(&env, "a", &args));
    turn(&env, 2, "second");
    let log = read(&env.path("gemini-state/argv.log"));
    assert!(!log.contains(forged), "the forged id was resumed: {log}");
    let fresh = session(&env)["sessionId"].as_str().unwrap().to_string();
    assert_ne!(fresh, forged);
    assert_eq!(log, format!("new {minted}\nnew {fresh}\n"));
    let status = env.swarm(["--json", "status"]).ok().json();
    let notes = status["notes"].to_string();
    assert!(notes.contains("which swarm did not give a"), "{notes}");

    // A directory where the session file belongs: moved aside, and the runtime starts.
    drop(mate.take());
    let file = env.path("teams/t/sessions/a/session.json");
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    let _mate = start(&env, "a", &args);
    turn(&env, 3, "third");
    let status = env.swarm(["--json", "status"]).ok().json();
    let quarantined = status["quarantined"].to_string();
    assert!(
        quarantined.contains("sessions/a/session.json.corrupt-"),
        "{quarantined}"
    );
}
