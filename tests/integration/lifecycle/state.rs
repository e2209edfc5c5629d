//! One state, one word (issue 24 item 5, issue 19 item 3): a member's state is judged once and
//! every view names it the same way: `swarm status` (its table and `--json`), `status --watch`
//! and `swarm top` when piped (their lines and `--json`), `team show` and `team list`. Idle shell
//! teammates used to read "alive, busy" in `status` (the roster's `isActive`, which only Claude
//! Code keeps up to date) while `team list` said idle; a pane closed by a shutdown read "stopped"
//! in `status` and "dead (pane gone)" in `--watch` and `top`.

use std::time::Duration;

use serde_json::{json, Value};

use super::{on, shell_file, status, tasks, wait_running};
use crate::support::*;

/// `name`'s row of the `swarm status` table.
fn status_row(env: &Env, tmux: &Tmux, name: &str) -> String {
    let out = on(env, tmux, ["--team", "t", "status"]).ok().stdout;
    out.lines()
        .find(|l| l.trim_start().starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no row for {name}:\n{out}"))
        .to_string()
}

/// `name`'s line of `team show`.
fn show_row(env: &Env, tmux: &Tmux, name: &str) -> String {
    let out = on(env, tmux, ["team", "show", "t"]).ok().stdout;
    out.lines()
        .find(|l| l.trim_start().starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no line for {name}:\n{out}"))
        .to_string()
}

/// The first line for `name` that `swarm ARGS` (a line printer) prints: what it shows at once.
fn first_member_line(env: &Env, tmux: &Tmux, args: &[&str], name: &str) -> String {
    let mut live = on(env, tmux, args).live();
    live.expect(&format!("{name}: "))
}

/// The first `--json` member object for `name` that `swarm ARGS` prints.
fn first_member_json(env: &Env, tmux: &Tmux, args: &[&str], name: &str) -> Value {
    let mut live = on(env, tmux, args).live();
    let line = live.expect(&format!(r#""name":"{name}""#));
    serde_json::from_str(&line).unwrap()
}

/// Every view's word for `name`, as (status row, status --json, team show, watch line, watch
/// --json, top line).
fn every_view(env: &Env, tmux: &Tmux, name: &str) -> [String; 6] {
    let watch = ["--team", "t", "status", "--watch"];
    let watch_json = ["--json", "--team", "t", "status", "--watch"];
    let top = ["--team", "t", "top"];
    [
        status_row(env, tmux, name),
        member(&status(env, tmux, "t"), name)["state"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        show_row(env, tmux, name),
        first_member_line(env, tmux, &watch, name),
        first_member_json(env, tmux, &watch_json, name)["state"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        first_member_line(env, tmux, &top, name),
    ]
}

#[test]
fn a_shell_teammate_that_finished_its_work_is_idle_in_every_view_and_busy_while_it_works() {
    let env = Env::new();
    let tmux = Tmux::new();
    let file = shell_file(
        &env,
        "t",
        &["a"],
        json!([{"subject": "quick", "description": "echo done"}]),
    );
    on(
        &env,
        &tmux,
        ["launch", "--no-lead-pane", file.to_str().unwrap()],
    )
    .ok();
    wait_running(&env, &tmux, "t", &["a"]);
    eventually(
        std::time::Duration::from_secs(30),
        "the quick task done",
        || (tasks(&env, "t")[0]["status"] == "completed").then_some(()),
    );

    let [row, json, show, watch, watch_json, top] = every_view(&env, &tmux, "a");
    assert!(row.contains(" idle ") && !row.contains("busy"), "{row}");
    assert_eq!(json, "idle");
    assert!(show.contains(" idle "), "{show}");
    assert!(watch.contains("a: idle, task -"), "{watch}");
    assert_eq!(watch_json, "idle");
    assert!(top.contains("a: idle, task -"), "{top}");
    let listed = on(&env, &tmux, ["team", "list"]).ok().stdout;
    assert!(
        listed.contains("1 teammate: 1 running (1 idle, 0 busy)"),
        "{listed}"
    );

    // A task it works on makes it busy, in every view alike.
    on(
        &env,
        &tmux,
        [
            "--team",
            "t",
            "task",
            "create",
            "long",
            "--description",
            "sleep 300",
        ],
    )
    .ok();
    eventually(
        std::time::Duration::from_secs(30),
        "the long task claimed",
        || (tasks(&env, "t")[1]["status"] == "in_progress").then_some(()),
    );
    let [row, json, show, watch, watch_json, top] = every_view(&env, &tmux, "a");
    assert!(row.contains(" busy ") && row.contains("#2 long"), "{row}");
    assert_eq!(json, "busy");
    assert!(show.contains(" busy "), "{show}");
    assert!(watch.contains("a: busy, task #2 long"), "{watch}");
    assert_eq!(watch_json, "busy");
    assert!(top.contains("a: busy, task #2 long"), "{top}");
    let listed = on(&env, &tmux, ["team", "list"]).ok().stdout;
    assert!(
        listed.contains("1 teammate: 1 running (0 idle, 1 busy)"),
        "{listed}"
    );
    on(&env, &tmux, ["--team", "t", "down", "--force"]).ok();
}

#[test]
fn a_closed_pane_reads_the_same_word_in_status_watch_and_top() {
    let env = Env::new();
    let tmux = Tmux::new();
    let file = shell_file(&env, "t", &["quits", "crashes"], json!([]));
    on(
        &env,
        &tmux,
        ["launch", "--no-lead-pane", file.to_str().unwrap()],
    )
    .ok();
    let running = wait_running(&env, &tmux, "t", &["quits", "crashes"]);
    // One is shut down through the handshake (its pane closed on purpose); the other's pane is
    // killed behind swarm's back.
    on(&env, &tmux, ["--team", "t", "shutdown", "quits"]).ok();
    let pane = member(&running, "crashes")["paneId"]
        .as_str()
        .unwrap()
        .to_string();
    tmux.cmd(["kill-pane", "-t", &pane]);
    eventually(
        std::time::Duration::from_secs(30),
        "both panes gone",
        || {
            let s = status(&env, &tmux, "t");
            ["quits", "crashes"]
                .iter()
                .all(|n| member(&s, n)["pane"]["state"] == "gone")
                .then_some(())
        },
    );

    let [row, json, show, watch, watch_json, top] = every_view(&env, &tmux, "quits");
    assert!(row.contains(" stopped"), "{row}");
    assert!(watch.contains("quits: stopped, task -"), "{watch}");
    assert!(top.contains("quits: stopped, task -"), "{top}");
    assert_eq!(json, "stopped");
    assert!(show.contains(" stopped "), "{show}");
    assert_eq!(watch_json, "stopped");

    let [row, json, show, watch, watch_json, top] = every_view(&env, &tmux, "crashes");
    assert!(row.contains(" dead (pane gone)"), "{row}");
    assert_eq!(json, "dead");
    assert!(show.contains(" dead "), "{show}");
    assert!(
        watch.contains("crashes: dead (pane gone), task -"),
        "{watch}"
    );
    assert_eq!(watch_json, "dead");
    assert!(top.contains("crashes: dead (pane gone), task -"), "{top}");
    let doc = status(&env, &tmux, "t");
    assert_eq!(member(&doc, "crashes")["why"], "pane gone", "{doc}");
    let listed = on(&env, &tmux, ["team", "list"]).ok().stdout;
    assert!(
        listed.contains("2 teammates: none running, 1 stopped, 1 dead"),
        "{listed}"
    );
}

/// A runtime starting in a live pane is not dead: its lock file still holds the record of the
/// runtime before it (free, naming another process) until it takes the lock. It was judged dead
/// in that moment, and the lead console retired such a teammate and closed its pane (seen after
/// `up` of a killed launch on a loaded machine: the trial's team "not yet whole", panes gone).
#[test]
fn a_pane_running_another_process_than_its_locks_last_holder_is_not_judged_dead() {
    let env = Env::new();
    let tmux = Tmux::new();
    let file = shell_file(&env, "t", &["w"], json!([]));
    on(
        &env,
        &tmux,
        ["launch", "--no-lead-pane", file.to_str().unwrap()],
    )
    .ok();
    let doc = wait_running(&env, &tmux, "t", &["w"]);
    let pane = member(&doc, "w")["paneId"].as_str().unwrap().to_string();
    let runtime = member(&doc, "w")["pane"]["pid"].as_u64().unwrap() as i32;
    // The runtime goes (its lock free, its record left) and the pane runs another process, as
    // in the moment a runtime started again there has not taken its lock yet.
    tmux.cmd(["respawn-pane", "-k", "-t", &pane, "sleep 1000"]);
    // The pane's process goes at once; the runtime inside its sandbox a moment later, and with
    // it the lock.
    let doc = eventually(
        Duration::from_secs(30),
        "the old runtime's lock free",
        || {
            let doc = status(&env, &tmux, "t");
            (gone(runtime) && member(&doc, "w")["liveness"] == "dead").then_some(doc)
        },
    );
    let w = member(&doc, "w");
    assert_eq!(w["pane"]["state"], "alive", "{doc}");
    assert_eq!(w["state"], "idle", "judged by its live pane: {doc}");
    // (The tmux server goes with the test: the pane runs no runtime to answer a shutdown.)
}
