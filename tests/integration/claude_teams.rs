//! Teams a Claude Code lead made (issue 15 items 7 and 8), from a fixture of the files exactly as
//! Claude Code 2.1.328 writes them (`claude_teams/session-1a2b3c4d/`): a `session-<8 hex>` name,
//! a lead entry with `tmuxPaneId: "leader"` and `backendType: "in-process"`, a top-level
//! `leadProcess`, teammates without `mode`, task files without `metadata`, mode 0644, written
//! with `JSON.stringify(value, null, 2)` (no trailing newline), and an emptied lead inbox.
//!
//! `swarm status` must get such a team right, swarm must say plainly that it cannot speak as its
//! lead, never act on a pane whose tmux server the roster does not name, and rewrite the roster
//! without adding fields or reordering keys.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::support::*;

mod looking_back;
pub(crate) mod torn_roster;

pub(crate) const TEAM: &str = "session-1a2b3c4d";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration/claude_teams/session-1a2b3c4d")
}

/// Copies the fixture into the env's root, byte for byte and with its modes.
fn claude_team(env: &Env) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), &target).unwrap();
            }
        }
    }
    copy(&fixture(), env.root());
}

fn config_path(env: &Env) -> PathBuf {
    env.path(&format!("teams/{TEAM}/config.json"))
}

/// `JSON.stringify(value, null, 2)`, which is what serde_json's pretty printer writes too.
fn stringify(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

/// Edits the roster the way Claude Code would write it.
fn patch_roster(env: &Env, f: impl FnOnce(&mut Value)) {
    let mut config = read_json(&config_path(env));
    f(&mut config);
    std::fs::write(config_path(env), stringify(&config)).unwrap();
}

fn swarm(env: &Env, args: &[&str]) -> Swarm {
    env.swarm(args).env("SWARM_TEAM", TEAM)
}

/// The pid space Claude Code records: the host name, `#`, the pid namespace link.
fn our_pid_space() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let ns = std::fs::read_link("/proc/self/ns/pid").unwrap();
    format!("{}#{}", host.trim(), ns.display())
}

/// `/proc/<pid>/stat` field 22, as Claude Code records it in `procStart`.
fn proc_start(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split(' ').nth(19).unwrap().to_string()
}

fn state_of<'a>(status: &'a Value, name: &str) -> &'a Value {
    member(status, name)
}

#[test]
fn the_fixture_is_in_claudes_own_format() {
    // A negative control for the byte-for-byte test below: the fixture really is what
    // `stringify` writes, so comparing through it can only hide nothing.
    let config =
        std::fs::read_to_string(fixture().join(format!("teams/{TEAM}/config.json"))).unwrap();
    assert_eq!(stringify(&serde_json::from_str(&config).unwrap()), config);
    assert!(!config.ends_with('\n'));
}

#[test]
fn status_of_a_claude_made_team_shows_its_members_their_tasks_and_its_lead_process() {
    let env = Env::new();
    claude_team(&env);
    // The lead process: a live process in this pid space, recorded as Claude records itself.
    let lead = KillOnDrop(Command::new("sleep").arg("300").spawn().unwrap());
    let pid = lead.0.id();
    patch_roster(&env, |c| {
        c["leadProcess"] = json!({"pid": pid, "pidSpace": our_pid_space(),
            "claimedAt": 1767225600123u64, "procStart": proc_start(pid)});
    });
    let status = swarm(&env, &["--json", "status"]).ok().json();
    assert_eq!(status["team"], TEAM);
    let names: Vec<&str> = status["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["team-lead", "researcher", "coder"]);
    assert_eq!(status["ledByClaude"], true);
    assert_eq!(status["leadProcess"]["pid"], pid);
    assert_eq!(status["leadProcess"]["why"], "its start time matches");
    // The lead runs (its recorded process) and owns no task.
    assert_eq!(state_of(&status, "team-lead")["state"], "idle", "{status}");
    // No tmux server is recorded for the panes: unknown, never dead, whatever `isActive` says.
    for name in ["researcher", "coder"] {
        let m = state_of(&status, name);
        assert_eq!(m["state"], "unknown", "{m}");
        assert_eq!(m["why"], "no tmux server recorded", "{m}");
        assert_eq!(m["retired"], false, "{m}");
    }
    assert_eq!(state_of(&status, "coder")["task"]["id"], "2");

    let out = swarm(&env, &["status"]).ok().stdout;
    let line = |name: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no line for {name}: {out}"))
            .to_string()
    };
    assert!(line("team-lead").contains(" idle "), "{out}");
    assert!(
        out.contains(&format!("lead process: pid {pid} (its start time matches)")),
        "{out}"
    );
    assert!(
        line("researcher").contains("unknown (no tmux server recorded)"),
        "{out}"
    );
    assert!(
        line("coder").contains("unknown (no tmux server recorded)")
            && line("coder").contains("#2 Stop copying lines"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "team {TEAM} is led by Claude Code: swarm has no lead key for it"
        )),
        "{out}"
    );
    assert!(out.contains("`swarm send`, `swarm task`"), "{out}");

    // The same pid with another start time is another process: the lead is gone.
    patch_roster(&env, |c| c["leadProcess"]["procStart"] = json!("1"));
    let status = swarm(&env, &["--json", "status"]).ok().json();
    let lead_state = |s: &Value| {
        (
            state_of(s, "team-lead")["state"].clone(),
            state_of(s, "team-lead")["why"].clone(),
        )
    };
    assert_eq!(
        lead_state(&status),
        (json!("dead"), json!("process gone")),
        "{status}"
    );
    // Recorded on another machine or pid namespace: swarm cannot tell.
    patch_roster(&env, |c| {
        c["leadProcess"]["procStart"] = json!(proc_start(pid));
        c["leadProcess"]["pidSpace"] = json!("elsewhere#pid:[1]");
    });
    let status = swarm(&env, &["--json", "status"]).ok().json();
    assert_eq!(
        lead_state(&status),
        (
            json!("unknown"),
            json!("recorded in another pid space (elsewhere#pid:[1])")
        ),
        "{status}"
    );
    // And the fixture's own record names a process of another host.
    drop(lead);
}

/// The lead process record of the fixture, untouched: another host's pid space.
#[test]
fn the_fixtures_lead_process_is_not_judged_here() {
    let env = Env::new();
    claude_team(&env);
    let status = swarm(&env, &["--json", "status"]).ok().json();
    assert_eq!(
        state_of(&status, "team-lead")["state"],
        "unknown",
        "{status}"
    );
    assert_eq!(status["leadProcess"]["pid"], 4242);
}

#[test]
fn swarm_does_not_speak_as_a_claude_lead_nor_touch_a_pane_on_a_guessed_server() {
    let env = Env::new();
    claude_team(&env);
    // A tmux server that a `tmux` without -L/-S would reach (through $TMUX), with a live pane
    // where the roster says researcher is; coder's %99 is no pane there at all.
    let tmux = Tmux::new();
    tmux.cmd(["new-session", "-d", "-s", "other", "sleep 300"]);
    let pane = tmux
        .cmd(["display", "-p", "-t", "other", "#{pane_id}"])
        .stdout;
    let pane = pane.trim().to_string();
    let socket = tmux.cmd(["display", "-p", "#{socket_path}"]).stdout;
    let server_pid = tmux.cmd(["display", "-p", "#{pid}"]).stdout;
    let tmux_var = format!("{},{},0", socket.trim(), server_pid.trim());
    patch_roster(&env, |c| {
        c["members"][1]["tmuxPaneId"] = json!(pane);
        c["members"][2]["tmuxPaneId"] = json!("%99");
    });
    let pane_alive = || {
        let panes = tmux.cmd(["list-panes", "-a", "-F", "#{pane_id} #{pane_dead}"]);
        panes.stdout.lines().any(|l| l == format!("{pane} 0"))
    };
    assert!(pane_alive(), "the pane a guess would hit runs");
    let in_tmux = |args: &[&str]| swarm(&env, args).env("TMUX", &tmux_var);

    let status = in_tmux(&["--json", "status"]).ok().json();
    for name in ["researcher", "coder"] {
        assert_eq!(state_of(&status, name)["state"], "unknown", "{status}");
    }

    // Asking would be refused by Claude's teammates: swarm says so and sends nothing.
    let refused = in_tmux(&["shutdown", "researcher"]).refused("is led by Claude Code");
    refused.stderr_has("swarm has no lead key for it");
    refused.stderr_has("--force");
    in_tmux(&["shutdown", "--all"]).refused("is led by Claude Code");
    // Nor does it run a lead console there: its answers would be refused, and Claude's lead
    // reads the same inbox.
    in_tmux(&["lead"]).refused("is led by Claude Code");

    // --force stops only what swarm can identify: nothing here.
    let before = std::fs::read(config_path(&env)).unwrap();
    let out = in_tmux(&["shutdown", "--force", "researcher", "--timeout", "1"]).code(1);
    assert!(
        out.stdout
            .contains("researcher: not asked (swarm cannot speak as this team's lead); not stopped: swarm cannot identify its pane"),
        "{}",
        out.stdout
    );
    assert!(pane_alive(), "swarm killed a pane on a server it guessed");
    assert_eq!(
        std::fs::read(config_path(&env)).unwrap(),
        before,
        "retired anyway"
    );
    assert_eq!(
        std::fs::read_to_string(env.path(&format!("teams/{TEAM}/inboxes/researcher.json")))
            .unwrap(),
        "[]",
        "a shutdown request was sent"
    );
    let task = read_json(&env.path(&format!("tasks/{TEAM}/2.json")));
    assert_eq!(task["owner"], "coder");
    assert_eq!(task["status"], "in_progress");

    // `swarm kill` neither signals a pane it cannot identify nor marks the member stopped.
    in_tmux(&["kill", "researcher"]).refused("swarm cannot identify researcher's pane or process");
    assert!(pane_alive(), "swarm kill hit a pane on a server it guessed");
    // A permission answer swarm signs would be refused by the teammate that asked.
    in_tmux(&["permission", "approve", "perm-1-abcdefg"]).refused("is led by Claude Code");
    in_tmux(&["permission", "deny", "perm-1-abcdefg"]).refused("is led by Claude Code");

    // What works: messages and tasks.
    in_tmux(&["send", "--to", "researcher", "look at the lexer too"]).ok();
    let inbox = read_json(&env.path(&format!("teams/{TEAM}/inboxes/researcher.json")));
    assert_eq!(inbox[0]["text"], "look at the lexer too");
    let tasks = in_tmux(&["--json", "task", "list"]).ok().json();
    assert_eq!(tasks.as_array().unwrap().len(), 2, "{tasks}");
}

/// A teammate Claude Code runs inside its own process (roster pane `in-process`, issue 25 item
/// 1) has nothing swarm can look at: it stays unknown, said so, and is never stopped.
#[test]
fn a_teammate_inside_the_claude_lead_is_unknown_inside_the_lead_and_never_stopped() {
    let env = Env::new();
    claude_team(&env);
    patch_roster(&env, |c| {
        let mut helper = c["members"][1].clone();
        helper["agentId"] = json!(format!("helper@{TEAM}"));
        helper["name"] = json!("helper");
        helper["tmuxPaneId"] = json!("in-process");
        helper["backendType"] = json!("in-process");
        c["members"].as_array_mut().unwrap().push(helper);
    });
    let status = swarm(&env, &["--json", "status"]).ok().json();
    let helper = state_of(&status, "helper");
    assert_eq!(helper["state"], "unknown", "{helper}");
    assert_eq!(helper["pane"]["state"], "inside_lead", "{helper}");
    let out = swarm(&env, &["status"]).ok().stdout;
    let line = out.lines().find(|l| l.trim_start().starts_with("helper"));
    assert!(
        line.is_some_and(|l| l.contains("unknown (inside the lead)")),
        "{out}"
    );
    // The fixture's own pane teammates stay plain unknown: no server, nothing found.
    assert_eq!(state_of(&status, "researcher")["pane"]["state"], "unknown");

    let before = std::fs::read(config_path(&env)).unwrap();
    let out = swarm(&env, &["shutdown", "--force", "helper", "--timeout", "1"]).code(1);
    assert!(
        out.stdout.contains("not stopped: swarm cannot identify"),
        "{}",
        out.stdout
    );
    swarm(&env, &["kill", "helper"]).refused("swarm cannot identify helper's pane or process");
    assert_eq!(
        std::fs::read(config_path(&env)).unwrap(),
        before,
        "retired anyway"
    );
}

#[test]
fn rewriting_a_claude_roster_changes_only_what_changed() {
    let env = Env::new();
    claude_team(&env);
    let original = std::fs::read_to_string(config_path(&env)).unwrap();
    swarm(&env, &["team", "add", "helper"]).ok();
    let added = std::fs::read_to_string(config_path(&env)).unwrap();
    let mut doc: Value = serde_json::from_str(&added).unwrap();
    // Still Claude's format, byte for byte (no trailing newline either)...
    assert_eq!(stringify(&doc), added);
    // ...and apart from the new member, the very bytes Claude wrote: no `description`, no
    // `mode`, `leadProcess` where it was.
    let helper = doc["members"].as_array_mut().unwrap().remove(3);
    assert_eq!(helper["name"], "helper");
    assert_eq!(stringify(&doc), original);

    // A member removed: the others keep their bytes too.
    swarm(&env, &["team", "remove", "researcher"]).ok();
    let removed = std::fs::read_to_string(config_path(&env)).unwrap();
    let mut want: Value = serde_json::from_str(&original).unwrap();
    want["members"].as_array_mut().unwrap().remove(1);
    want["members"].as_array_mut().unwrap().push(helper);
    assert_eq!(removed, stringify(&want));
}

#[test]
fn a_swarm_file_task_keeps_its_active_form() {
    let env = Env::new();
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "t", "cwd": ".", "teammates": [{"name": "coder", "prompt": "p"}],
               "tasks": [{"subject": "Add tests", "activeForm": "Adding tests"},
                         {"subject": "Ship"}]})
        .to_string(),
    )
    .unwrap();
    let out = env
        .swarm(["launch", file.to_str().unwrap(), "--backend", "in-process"])
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", "/bin/true")
        .stdin(Vec::new())
        .run_within(std::time::Duration::from_secs(60));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let task = read_json(&env.path("tasks/t/1.json"));
    assert_eq!(task["activeForm"], "Adding tests", "{task}");
    assert!(read_json(&env.path("tasks/t/2.json"))
        .get("activeForm")
        .is_none());
}

/// Issue 25 item 3: a team Claude Code 2.1.328 made may carry `teamAllowedPaths`, which it
/// turned into allow rules for its teammates and which 2.1.329 and later ignore with a warning.
/// swarm applies none of it either, and says so where the team is looked at (`swarm status`,
/// text and `--json`) and where it is launched into (`swarm up`); a roster rewrite keeps it.
#[test]
fn team_allowed_paths_are_kept_said_to_be_ignored_and_never_applied() {
    let env = Env::new();
    claude_team(&env);
    let allowed = serde_json::json!([{"path": "/srv/shared", "addedBy": "team-lead"}]);
    patch_roster(&env, |c| c["teamAllowedPaths"] = allowed.clone());
    let status = swarm(&env, &["status"]).ok();
    let said = "config.json's teamAllowedPaths: Claude Code 2.1.329 and later ignore it";
    assert!(
        status.stdout.contains(&format!("ignored: {said}")),
        "{status:?}"
    );
    let json = swarm(&env, &["--json", "status"]).ok().json();
    assert_eq!(
        json["ignoredFields"][0]["field"], "teamAllowedPaths",
        "{json}"
    );
    swarm(&env, &["team", "add", "helper"]).ok();
    assert_eq!(read_json(&config_path(&env))["teamAllowedPaths"], allowed);

    // Without the field, nothing is said.
    patch_roster(&env, |c| {
        c.as_object_mut().unwrap().remove("teamAllowedPaths");
    });
    let plain = swarm(&env, &["--json", "status"]).ok().json();
    assert_eq!(plain["ignoredFields"], serde_json::json!([]), "{plain}");

    // A launch into a team of swarm's own that carries it warns the same way.
    let own = Env::with_team(&[]);
    let config = own.path("teams/t/config.json");
    let mut doc = read_json(&config);
    doc["teamAllowedPaths"] = allowed;
    std::fs::write(&config, doc.to_string()).unwrap();
    let file = own.path("team.json");
    let plan = serde_json::json!({"team": "t", "agent": "shell", "teammates": [{"name": "a"}]});
    std::fs::write(&file, plan.to_string()).unwrap();
    own.swarm([
        "launch",
        file.to_str().unwrap(),
        "--backend",
        "in-process",
        "--dry-run",
    ])
    .ok()
    .stderr_has("swarm: warning: team t: config.json's teamAllowedPaths is ignored");
}
