//! Text from a team's files reaches people's terminals with its control characters made
//! visible: any member can write a description, a task subject or a log line that would erase,
//! hide or rewrite what the person reads. `--json` keeps the real bytes.

use serde_json::Value;

use crate::support::*;

/// Erases the line, then writes something harmless over it, then hides the rest.
const FORGED: &str = "rm -rf ~/work\r\x1b[2K? nothing to see\x1b[8m";
const SHOWN: &str = "rm -rf ~/work\\r\\e[2K? nothing to see\\e[8m";

#[track_caller]
fn assert_no_controls(what: &str, text: &str) {
    let raw: Vec<char> = text
        .chars()
        .filter(|c| c.is_control() && *c != '\n')
        .collect();
    assert!(raw.is_empty(), "{what} printed raw {raw:?}:\n{text}");
}

/// A team whose description, task subject and pending permission request carry escapes.
fn forged_team() -> Env {
    let env = Env::new();
    env.swarm(["team", "create", "t", "--description", FORGED])
        .ok();
    env.add_member("t", "coder");
    env.swarm(["task", "create", FORGED]).ok();
    env.swarm(["task", "claim", "1", "--agent", "coder"]).ok();
    env.swarm([
        "permission",
        "request",
        "--tool",
        "Bash",
        "--input",
        "{\"command\":\"rm -rf ~/work\"}",
        "--description",
        FORGED,
    ])
    .env("SWARM_AGENT_NAME", "coder")
    .ok();
    env
}

#[test]
fn team_list_status_and_permission_list_show_escapes_visibly() {
    let env = forged_team();
    for args in [
        &["team", "list"][..],
        &["team", "show", "t"],
        &["status"],
        &["permission", "list"],
    ] {
        let out = env.swarm(args).ok();
        let what = format!("swarm {}", args.join(" "));
        assert_no_controls(&what, &out.stdout);
        assert!(out.stdout.contains(SHOWN), "{what}:\n{}", out.stdout);
    }
    let status = env.swarm(["status"]).ok().stdout;
    assert!(
        status.contains("coder"),
        "the member row is there: {status}"
    );
    let list = env.swarm(["permission", "list"]).ok().stdout;
    assert!(
        list.contains("Bash") && list.contains("{\"command\":\"rm -rf ~/work\"}"),
        "{list}"
    );
}

#[test]
fn json_output_keeps_the_real_text() {
    let env = forged_team();
    let teams = env.swarm(["--json", "team", "list"]).ok().json();
    assert_eq!(teams[0]["description"], FORGED);
    let status = env.swarm(["--json", "status"]).ok().json();
    assert_eq!(status["description"], FORGED);
    assert_eq!(status["pendingPermissions"][0]["description"], FORGED);
    let list: Value = env.swarm(["--json", "permission", "list"]).ok().json();
    assert_eq!(list[0]["description"], FORGED);
}

#[test]
fn logs_show_escapes_visibly_and_keep_lines() {
    let env = Env::with_team(&["coder"]);
    let logs = env.path("teams/t/logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(
        logs.join("coder.log"),
        format!("[coder] started\n[coder] {FORGED}\n"),
    )
    .unwrap();
    let out = env.swarm(["logs", "coder"]).ok();
    assert_no_controls("swarm logs", &out.stdout);
    assert_eq!(out.stdout, format!("[coder] started\n[coder] {SHOWN}\n"));
}

/// `swarm inbox` shows a message's text, summary and sender with escapes visible.
#[test]
fn inbox_shows_escapes_visibly() {
    let env = forged_team();
    env.swarm(["send", "--to", "coder", "--summary", FORGED, FORGED])
        .ok();
    let out = env.swarm(["inbox", "coder"]).ok();
    assert_no_controls("swarm inbox", &out.stdout);
    assert_eq!(
        out.stdout.matches(SHOWN).count(),
        2,
        "text and summary:\n{}",
        out.stdout
    );
}

/// Issue 22 item 7: a teammate edits a task file so its owner and description carry an OSC 52
/// clipboard write, a retitle and a bell; `task show` and `task list` print them as escapes,
/// `--json` keeps the real bytes.
#[test]
fn task_show_and_task_list_show_a_hostile_owner_and_description_visibly() {
    const OSC52: &str = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07\r\x1b[2Kok";
    let env = Env::with_team(&["coder"]);
    env.swarm(["task", "create", "one", "--description", "plain"])
        .ok();
    let file = env.path("tasks/t/1.json");
    let mut task = read_json(&file);
    task["owner"] = Value::from(OSC52);
    task["description"] = Value::from(format!("line one\n{OSC52}"));
    task["subject"] = Value::from(format!("s{OSC52}"));
    std::fs::write(&file, serde_json::to_vec_pretty(&task).unwrap()).unwrap();
    let shown = "\\e]52;c;cm0gLXJmIH4=\\x07\\e]0;pwned\\x07\\r\\e[2Kok";
    for args in [&["task", "show", "1"][..], &["task", "list"]] {
        let out = env.swarm(args).ok();
        let what = format!("swarm {}", args.join(" "));
        assert_no_controls(&what, &out.stdout);
        assert!(
            out.stdout.contains(&format!("@{shown}")),
            "{what}: {}",
            out.stdout
        );
        assert!(
            out.stdout.contains(&format!("s{shown}")),
            "{what}: {}",
            out.stdout
        );
    }
    let show = env.swarm(["task", "show", "1"]).ok().stdout;
    assert!(show.contains(&format!("line one\n{shown}")), "{show}");
    let json = env.swarm(["--json", "task", "show", "1"]).ok().json();
    assert_eq!(json["owner"], OSC52);
}
