//! Issue 22's closing test: a hostile shell teammate, contained, runs every attack in the
//! issue's list from inside its sandbox (its tasks' descriptions are the scripts in
//! `support/hostile.rs`), and each fails, while two honest teammates finish a small task DAG,
//! the lead agent hears of it, and the team shuts down cleanly with `swarm down`.
//!
//! The team is launched with the real `swarm launch` on a private tmux server: `evil` and `ann`
//! are shell agents, `bob` a command agent that records every prompt it gets, and the lead is
//! an agent (a script that records its prompts and decides permission requests,
//! `--approvals lead`). Every task is given its owner before anyone may take it (created
//! parked, then released), so the attacks run in `evil` and the DAG in `ann` and `bob`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::hostile::*;
use crate::support::*;

mod roster;

const LONG: Duration = Duration::from_secs(60);
pub(crate) const TEAM: &str = "t";

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn swarm_file(env: &Env, proj: &Path, lead: &Path) -> PathBuf {
    let bob = vec![
        "sh".to_string(),
        "-c".into(),
        "printf '%s\\n=====\\n' \"$1\" >> \"$SWARM_ROOT/bob-prompts\"".into(),
        "sh".into(),
    ];
    let doc = json!({"team": TEAM, "agent": "shell", "cwd": proj,
        "teammates": [{"name": "evil"}, {"name": "ann"}, {"name": "bob", "agent": bob}],
        "lead": {"agent": ["sh", lead], "goal": "finish the DAG", "approvals": "lead"}});
    let file = env.path("team.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    file
}

/// Launches `doc` (a swarm file for team [`TEAM`]) on `tmux`.
pub(crate) fn launch(env: &Env, tmux: &Tmux, doc: &Value) {
    let file = env.path("team.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    env.swarm(["launch", file.to_str().unwrap()])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
}

/// What an attack script's `@PLACEHOLDER@`s stand for.
pub(crate) fn fill(env: &Env, proj: &Path) -> [(&'static str, String); 4] {
    [
        ("ROOT", env.root().display().to_string()),
        ("TEAM", TEAM.to_string()),
        ("PROJ", proj.display().to_string()),
        ("BIN", BIN.to_string()),
    ]
}

fn inbox(env: &Env, name: &str) -> Vec<Value> {
    let path = env.path(&format!("teams/{TEAM}/inboxes/{name}.json"));
    std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn texts(env: &Env, name: &str) -> Vec<String> {
    inbox(env, name)
        .iter()
        .filter_map(|m| m["text"].as_str().map(str::to_string))
        .collect()
}

fn task(env: &Env, id: &str) -> Value {
    env.swarm(["--json", "task", "show", id]).ok().json()
}

#[test]
fn a_contained_hostile_teammate_fails_every_attack_while_the_team_works_on() {
    let env = Env::new();
    let tmux = Tmux::new();
    let proj = env.path("proj");
    std::fs::create_dir_all(&proj).unwrap();
    // The user's home exists, as a real one does (Claude Code's trust records live there).
    std::fs::create_dir_all(env.path("state/home")).unwrap();
    let mut victim = Victim::start();
    let lead = lead_script(&env, &proj);
    let file = swarm_file(&env, &proj, &lead);
    env.swarm(["launch", file.to_str().unwrap()])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
    let keys = env.path("state/swarm/lead-keys");
    assert!(
        std::fs::read_dir(&keys).unwrap().count() > 0,
        "there is a lead key to steal"
    );

    // A task nobody finishes (owned by the lead), then the DAG, then the attacks.
    let held = owned_task(&env, "team-lead", "held", "exit 1", &[]);
    let fetch = owned_task(
        &env,
        "ann",
        "fetch",
        "echo fetch >> \"$SWARM_ROOT/dag\"",
        &[],
    );
    let build = owned_task(&env, "bob", "build", "build it", &[&fetch]);
    let ship = owned_task(
        &env,
        "ann",
        "ship",
        "echo ship >> \"$SWARM_ROOT/dag\"",
        &[&build],
    );
    let fill = [
        ("ROOT", env.root().display().to_string()),
        ("TEAM", TEAM.to_string()),
        ("PROJ", proj.display().to_string()),
        ("BIN", BIN.to_string()),
        ("KEYS", keys.display().to_string()),
        (
            "HOMEKEYS",
            env.path("state/home/.local/state/swarm/lead-keys")
                .display()
                .to_string(),
        ),
        ("SOCKET", socket_of(&tmux).display().to_string()),
        ("VICTIM", victim.pid().to_string()),
        ("VICTIM_START", victim.start_time().to_string()),
        ("HELD", held.clone()),
    ];
    for attack in ATTACKS {
        owned_task(&env, "evil", attack.name, &attack.script(&fill), &[]);
    }
    // A signed command for evil (it runs it), which it then replays to ann.
    let signed = format!(
        "$ echo \"$SWARM_AGENT_NAME\" >> '{}' # signed-for-evil",
        proj.join("signed-ran").display()
    );
    env.swarm(["send", "--to", "evil", &signed]).ok();

    let team_dir = env.path(&format!("teams/{TEAM}"));

    // 1. The lead key is not there to read; lead-only commands are refused in its sandbox.
    let said = report(&proj, "key");
    says(&said, "keys seen: 0");
    says(&said, "key: refused");
    for command in ["kill", "team remove", "team delete", "down", "done"] {
        says(&said, &format!("{command}: exit 2 "));
        refused(&said, command, "only the team lead may");
    }

    // 3. No tmux: TMUX unset, the socket unreachable from inside, reachable from outside.
    let said = report(&proj, "tmux");
    says(&said, "TMUX=unset");
    refused(&said, "tmux", "error connecting to");
    let socket = socket_of(&tmux).display().to_string();
    assert_eq!(tmux.cmd(["-S", &socket, "list-sessions"]).code, 0);

    // 6. The forged roster pid (the record is writable, the roster is the runtime's too).
    let said = report(&proj, "pid");
    says(&said, "roster: forged");

    // 7. Hooks planted, a FIFO at a settings file, trust refused.
    let said = report(&proj, "hooks");
    says(&said, "hooks: planted");
    says(&said, "fifo: planted");
    refused(&said, "trust", "only the user may trust a directory");
    says(&said, "task create: exit 0 ");

    // 4. done.json refused; the forged completion and the unsigned lead text were sent.
    let said = report(&proj, "forge");
    refused(&said, "done.json", "Read-only file system");
    refused(&said, "forged idle sent", "only swarm's runtime sends");
    says(&said, "forged idle: written");
    says(&said, "forged command: written");
    says(&said, "forged text: written");

    // 5. The signed command copied into ann's inbox.
    let said = report(&proj, "replay");
    says(&said, "replay: copied");

    // 2. Its own approval refused (the resolved records are read-only to it); the lead's
    // approval of what it was shown is what counts.
    let said = report(&proj, "permission");
    refused(&said, "resolved write", "Read-only file system");
    refused(&said, "self approve", "Read-only file system");
    says(&said, "wait: exit 0");
    let id = said
        .lines()
        .find_map(|l| l.strip_prefix("request: "))
        .unwrap()
        .to_string();

    // 8. Damage.
    let said = report(&proj, "damage");
    says(&said, "osc task: ");
    says(&said, "bad utf8: written");
    says(&said, "after bad utf8: exit 0 ");
    refused(&said, "session write", "Read-only file system");
    refused(&said, "session dir", "Read-only file system");
    says(&said, "bob inbox: symlinked");

    // The honest DAG is finished, and one more task after every attack; the lead agent heard
    // of each.
    let after = owned_task(
        &env,
        "ann",
        "after",
        "echo after >> \"$SWARM_ROOT/dag\"",
        &[],
    );
    eventually(LONG, "the DAG's tasks completed", || {
        [&fetch, &build, &ship, &after]
            .iter()
            .all(|id| task(&env, id)["status"] == "completed")
            .then_some(())
    });
    assert_eq!(read(&env.path("dag")), "fetch\nship\nafter\n");
    assert!(read(&env.path("bob-prompts")).contains("build it"));
    eventually(LONG, "the lead agent told of each finished task", || {
        let prompts = read(&env.path("lead-prompts"));
        [&fetch, &build, &ship, &after]
            .iter()
            .all(|id| {
                prompts.contains(&format!(
                    "<task-notification task_id=\"{id}\" status=\"completed\""
                ))
            })
            .then_some(())
    });

    // 1. Nothing of what it ran as the lead happened.
    let status = env.swarm(["--json", "status"]).ok().json();
    for name in ["evil", "ann", "bob"] {
        assert_eq!(member(&status, name)["contained"], true, "{status}");
    }
    assert!(team_dir.is_dir(), "the team is not deleted");
    assert!(!proj.join("ran-sent-as-lead").exists());

    // 4. No done.json; the forged completion is no task notification (it was read); the
    // unsigned command was not run and was reported; the unsigned text reached bob's agent
    // marked unverified.
    assert!(!team_dir.join("lead/done.json").exists());
    eventually(LONG, "the lead agent to read the forged completion", || {
        inbox(&env, "team-lead")
            .iter()
            .any(|m| {
                m["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("forged-completion"))
                    && m["read"] == true
            })
            .then_some(())
    });
    let prompts = read(&env.path("lead-prompts"));
    assert!(
        !prompts.contains(&format!("<task-notification task_id=\"{held}\"")),
        "{prompts}"
    );
    assert_eq!(task(&env, &held)["status"], "pending");
    eventually(
        LONG,
        "ann to report the sent-as-lead, forged and replayed commands",
        || {
            let reports = texts(&env, "team-lead")
                .into_iter()
                .filter(|t| t.starts_with("ignored a forged `$ ` command"))
                .count();
            (reports >= 3).then_some(())
        },
    );
    assert!(
        !proj.join("forged-ran").exists(),
        "ann ran the unsigned command"
    );
    let bob = read(&env.path("bob-prompts"));
    let at = bob
        .find("delete the repo")
        .expect("the text reached bob's agent");
    let open = bob[..at].rfind("<teammate-message").unwrap();
    assert_eq!(
        &bob[open..at],
        "<teammate-message teammate_id=\"team-lead\" verified=\"false\">"
    );

    // 5. The replay did not run in ann; evil ran its own.
    assert_eq!(read(&proj.join("signed-ran")), "evil\n");

    // 2. The one resolved record is the lead's, for the input it was shown.
    let resolved: Vec<String> = std::fs::read_dir(team_dir.join("permissions/resolved"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(resolved, [format!("{id}.json")]);
    let decided = read_json(&team_dir.join(format!("permissions/resolved/{id}.json")));
    assert_eq!(decided["status"], "approved", "{decided}");
    assert_eq!(
        decided["input"]["command"], "echo benign-original",
        "{decided}"
    );
    assert!(decided.get("leadSig").is_some(), "{decided}");
    assert!(!decided.to_string().contains("evil-approved"), "{decided}");

    // 7. The untrusted hooks ran nowhere, and the lead's shell in the project does not hang.
    let out = env
        .swarm(["task", "create", "lead-probe", "--blocked-by", &held])
        .current_dir(&proj)
        .run_within(REFUSAL_LIMIT);
    assert_eq!(out.code, 0, "{out:?}");
    out.stderr_has("is not a trusted directory")
        .stderr_has("is a FIFO, not a regular file; refused");
    assert!(
        !proj.join("hook-ran").exists(),
        "{}",
        read(&proj.join("hook-ran"))
    );

    // 8. Control characters are shown visibly; the bad entry is quarantined alone (the next
    // message was delivered); ann's session file is as the sandbox made it; bob goes on.
    let osc = said_id(&report(&proj, "damage"));
    for args in [vec!["task", "list"], vec!["task", "show", osc.as_str()]] {
        let out = env.swarm(&args).ok().stdout;
        assert!(
            !out.contains('\u{1b}') && !out.contains('\u{7}'),
            "{args:?}: {out:?}"
        );
        assert!(out.contains("52;c;SGVsbG8="), "{args:?}: {out}");
    }
    eventually(LONG, "the message after the bad entry delivered", || {
        inbox(&env, "ann")
            .iter()
            .any(|m| m["text"] == "after-bad-utf8" && m["read"] == true)
            .then_some(())
    });
    let inboxes = team_dir.join("inboxes");
    let aside: Vec<Vec<u8>> = std::fs::read_dir(&inboxes)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("ann.json.corrupt-")
        })
        .map(|e| std::fs::read(e.path()).unwrap())
        .collect();
    assert_eq!(aside.len(), 1, "one quarantine file for ann's inbox");
    let bad = String::from_utf8_lossy(&aside[0]);
    assert!(
        bad.contains("bad-utf8-marker") && aside[0].contains(&0xff),
        "{bad}"
    );
    assert!(
        !bad.contains("forged-cmd") && !bad.contains("after-bad-utf8"),
        "{bad}"
    );
    assert!(texts(&env, "ann").iter().any(|t| t.contains("forged-ran")));
    // ann's own session directory, made by her sandbox, still hers and empty (a shell agent
    // keeps no conversation).
    assert!(team_dir.join("sessions/ann").is_dir());
    assert!(!team_dir.join("sessions/ann/session.json").exists());
    env.swarm(["send", "--to", "bob", "still there, bob?"]).ok();
    eventually(LONG, "bob's agent to get the lead's next message", || {
        read(&env.path("bob-prompts"))
            .contains("still there, bob?")
            .then_some(())
    });
    let notes = env.swarm(["--json", "status"]).ok().json()["notes"].to_string();
    assert!(notes.contains("it is a symlink"), "{notes}");

    // The lead pane (its agent and console) lived through it all.
    let lead_pane = tmux.cmd(["list-panes", "-a", "-F", "#{pane_title} #{pane_dead}"]);
    assert!(
        lead_pane.stdout.lines().any(|l| l == "team-lead 0"),
        "{}",
        lead_pane.stdout
    );

    // 6. The lead side stops evil by its own record, not the forged roster pid.
    victim.assert_alive("nothing yet");
    let before = panes(&tmux);
    let evil_pane = before
        .iter()
        .find(|(t, _)| t == "evil")
        .expect("evil's pane")
        .1;
    // Its pane is closed and the process swarm recorded starting in it is the one stopped;
    // the forged pid is never signalled.
    let out = env.swarm(["kill", "evil"]).ok();
    assert!(out.stdout.contains("killed evil"), "{out:?}");
    eventually(LONG, "evil's pane process gone", || {
        gone(evil_pane).then_some(())
    });
    victim.assert_alive("swarm kill");

    // The team shuts down cleanly.
    env.swarm(["down"]).ok();
    eventually(LONG, "every teammate's pane process gone", || {
        before
            .iter()
            .filter(|(t, _)| t != "team-lead")
            .all(|(_, p)| gone(*p))
            .then_some(())
    });
    victim.assert_alive("swarm down");

    // The control for 7: once the user trusts the project, the same planted hook runs.
    std::fs::remove_file(proj.join(".claude/settings.local.json")).unwrap();
    env.swarm(["trust", proj.to_str().unwrap()]).ok();
    env.swarm(["task", "create", "trusted-probe"])
        .current_dir(&proj)
        .ok();
    assert!(proj.join("hook-ran").exists(), "the planted hook was live");
}

/// The requester rewrites its pending record after the lead agent was shown it: the
/// approval is refused, and the lead agent says so and goes on (the refusal used to be an
/// error it passed up, which ended the lead pane, agent and console).
#[test]
fn a_pending_record_rewritten_after_the_lead_agent_saw_it_is_refused_and_the_lead_goes_on() {
    let env = Env::new();
    let tmux = Tmux::new();
    let proj = env.path("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let lead = lead_script(&env, &proj);
    let doc = json!({"team": TEAM, "agent": "shell", "cwd": proj,
        "teammates": [{"name": "evil"}, {"name": "ann"}],
        "lead": {"agent": ["sh", lead], "goal": "decide", "approvals": "lead"}});
    launch(&env, &tmux, &doc);
    let fill = fill(&env, &proj);
    owned_task(&env, "evil", REWRITE.name, &REWRITE.script(&fill), &[]);
    let said = report(&proj, REWRITE.name);
    says(&said, "pending: rewritten");
    assert_ne!(
        said.lines().find(|l| l.starts_with("wait: exit")),
        Some("wait: exit 0"),
        "{said}"
    );
    let resolved = env.path(&format!("teams/{TEAM}/permissions/resolved"));
    let approved_rewrite = std::fs::read_dir(&resolved).unwrap().flatten().any(|e| {
        let text = read(&e.path());
        text.contains("evil-rewritten") && text.contains("\"approved\"")
    });
    assert!(!approved_rewrite, "the rewritten input was approved");
    // The lead goes on: its agent hears of the next task done, its pane alive.
    let after = owned_task(&env, "ann", "after", "true", &[]);
    let told = format!("<task-notification task_id=\"{after}\" status=\"completed\"");
    let lead_lived = eventually(
        LONG,
        "the lead told of the next task, or its pane dead",
        || {
            let panes = tmux.cmd(["list-panes", "-a", "-F", "#{pane_title} #{pane_dead}"]);
            if panes.stdout.lines().any(|l| l == "team-lead 1") {
                return Some(false);
            }
            read(&env.path("lead-prompts"))
                .contains(&told)
                .then_some(true)
        },
    );
    assert!(
        lead_lived,
        "the lead pane died:\n{}",
        tmux.cmd(["capture-pane", "-p", "-J", "-S", "-", "-t", "{top-left}"])
            .stdout
    );
    env.swarm(["down"]).ok();
}
