//! `swarm status --watch`: everything once, then a line for each change and nothing for what
//! stayed the same; `--json` gives the same as JSON objects.

use serde_json::Value;

use crate::support::*;

#[test]
fn status_watch_prints_a_line_per_change() {
    let env = Env::with_team(&["coder"]);
    env.swarm(["task", "create", "build"]).ok();
    env.swarm(["task", "create", "ship", "--blocked-by", "1"])
        .ok();
    let mut watch = env.swarm(["status", "--watch"]).live();
    watch.expect("team-lead: unknown (no pane), task -, 0 unread");
    watch.expect("coder: unknown (no pid recorded), task -, 0 unread");
    watch.expect("task #1 available: build");
    watch.expect("task #2 blocked: ship");
    watch.expect("tasks: 0/2 done, 0 in progress, 1 available, 1 blocked");

    env.swarm(["task", "claim", "1", "--agent", "coder"]).ok();
    watch.expect("task #1 in_progress @coder: build");
    watch.expect("coder: unknown (no pid recorded), task #1 build, 0 unread");
    watch.expect("tasks: 0/2 done, 1 in progress, 0 available, 1 blocked");

    let request = env
        .swarm([
            "--json",
            "permission",
            "request",
            "--from",
            "coder",
            "--tool",
            "Bash",
            "--description",
            "run make",
        ])
        .ok()
        .json();
    let id = request["id"].as_str().unwrap();
    watch.expect(&format!("request {id}: coder wants Bash: run make"));
    env.swarm(["permission", "approve", id]).ok();
    watch.expect(&format!("request {id}: decided"));

    // Each fact was printed when it changed, never again while it stayed the same.
    let times = |needle: &str| watch.seen.iter().filter(|l| l.contains(needle)).count();
    assert_eq!(
        times("team-lead: unknown (no pane), task -, 0 unread"),
        1,
        "{:#?}",
        watch.seen
    );
    assert_eq!(times("task #2 blocked: ship"), 1, "{:#?}", watch.seen);
}

#[test]
fn status_watch_json_is_one_object_a_change() {
    let env = Env::with_team(&["coder"]);
    let mut watch = env.swarm(["--json", "status", "--watch"]).live();
    let line = watch.expect(r#""kind":"member""#);
    let first: Value = serde_json::from_str(&line).unwrap();
    assert!(first["name"].is_string(), "{first}");
    env.swarm(["task", "create", "build"]).ok();
    let task: Value = serde_json::from_str(&watch.expect(r#""kind":"task""#)).unwrap();
    assert_eq!(task["id"], "1");
    assert_eq!(task["phase"], "available");
    assert_eq!(task["subject"], "build");
    env.swarm(["task", "delete", "1"]).ok();
    let gone: Value = serde_json::from_str(&watch.expect(r#""removed":true"#)).unwrap();
    assert_eq!(gone["kind"], "task");
    assert_eq!(gone["id"], "1");
}

#[test]
fn status_watch_on_a_missing_team_is_refused() {
    let env = Env::new();
    env.swarm(["--team", "nope", "status", "--watch"])
        .not_found("team \"nope\" does not exist");
}
