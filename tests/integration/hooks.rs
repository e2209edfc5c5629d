//! Claude Code's team hooks in swarm: `TaskCompleted` and `TeammateIdle` in the teammate
//! runtime (a shell agent and a fake agent CLI), `TaskCreated` in `swarm task create`, read
//! from a project's `.claude/settings.json` with the user's settings dir pointed at an empty
//! directory, so the machine's own hooks stay out of it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

const LONG: Duration = Duration::from_secs(60);

/// A project directory whose `.claude/settings.json` runs `command` on `event`.
fn project(env: &Env, event: &str, command: &str) -> PathBuf {
    let dir = env.path("proj");
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    let settings = json!({"hooks": {event: [{"hooks": [
        {"type": "command", "command": command, "timeout": 30}]}]}});
    std::fs::write(
        dir.join(".claude/settings.json"),
        serde_json::to_vec_pretty(&settings).unwrap(),
    )
    .unwrap();
    std::fs::create_dir_all(env.path("user-claude")).unwrap();
    env.swarm(["trust".as_ref(), dir.as_os_str()]).ok();
    dir
}

fn with_settings(env: &Env, s: Swarm) -> Swarm {
    s.env("CLAUDE_CONFIG_DIR", env.path("user-claude"))
}

/// A `swarm teammate` for member `name` of team `t`, killed on drop.
struct Mate(Child, PathBuf);

impl Drop for Mate {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Mate {
    fn pane(&self) -> String {
        std::fs::read_to_string(&self.1).unwrap_or_default()
    }
}

fn start(env: &Env, name: &str, cwd: &Path, agent: &[&str]) -> Mate {
    let id = format!("{name}@t");
    let cwd = cwd.display().to_string();
    let mut args = vec![
        "teammate",
        "--agent-id",
        &id,
        "--agent-name",
        name,
        "--team-name",
        "t",
        "--cwd",
        &cwd,
    ];
    args.extend(agent);
    let mut s = with_settings(env, env.swarm(args));
    let log = env.path(&format!("{name}.pane"));
    let file = File::create(&log).unwrap();
    s.cmd
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file);
    let mate = Mate(s.cmd.spawn().expect("spawn swarm teammate"), log);
    eventually(LONG, "the teammate to start", || {
        mate.pane().contains("is up").then_some(())
    });
    mate
}

fn idle_notifications(env: &Env) -> Vec<Value> {
    let inbox = read_json(&env.path("teams/t/inboxes/team-lead.json"));
    inbox
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| serde_json::from_str::<Value>(m["text"].as_str()?).ok())
        .filter(|p| p["type"] == "idle_notification")
        .collect()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_task_completed_hook_keeps_the_task_in_progress_once_and_the_teammate_gets_the_feedback() {
    let env = Env::with_team(&["a"]);
    // Fails until `fixed` exists; records every input it gets.
    let proj = project(
        &env,
        "TaskCompleted",
        "cat >> \"$CLAUDE_PROJECT_DIR/inputs\"; echo >> \"$CLAUDE_PROJECT_DIR/inputs\"; \
         test -f \"$CLAUDE_PROJECT_DIR/fixed\" || { echo 'fixed is missing: create it' >&2; exit 2; }",
    );
    // The first run leaves a marker, the second (the feedback turn) creates `fixed`.
    with_settings(
        &env,
        env.swarm([
            "task",
            "create",
            "Build",
            "--description",
            "echo run >> runs; if [ -f marker ]; then touch fixed; else touch marker; fi",
        ]),
    )
    .ok();
    let mate = start(&env, "a", &proj, &["--agent", "shell"]);
    eventually(LONG, "task 1 to be completed", || {
        let t = env.swarm(["--json", "task", "show", "1"]).ok().json();
        (t["status"] == "completed").then_some(())
    });
    assert_eq!(
        lines(&proj.join("runs")),
        ["run", "run"],
        "the task ran, was blocked, and ran once more"
    );
    let inputs: Vec<Value> = lines(&proj.join("inputs"))
        .iter()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(inputs.len(), 2, "{inputs:?}");
    for input in &inputs {
        assert_eq!(input["hook_event_name"], "TaskCompleted");
        assert_eq!(input["task_id"], "1");
        assert_eq!(input["task_subject"], "Build");
        assert_eq!(input["teammate_name"], "a");
        assert_eq!(input["team_name"], "t");
        assert_eq!(input["cwd"], proj.display().to_string());
    }
    let pane = mate.pane();
    assert!(
        pane.contains("TaskCompleted hook")
            && pane.contains("blocked completing task #1 (exit 2): fixed is missing: create it"),
        "{pane}"
    );
    assert!(
        pane.contains("feedback from the TaskCompleted hook on task #1"),
        "{pane}"
    );
    eventually(LONG, "the completion's idle notification", || {
        let done: Vec<Value> = idle_notifications(&env)
            .into_iter()
            .filter(|n| n["completedTaskId"] == "1")
            .collect();
        (!done.is_empty()).then_some(done)
    });
    let done: Vec<Value> = idle_notifications(&env)
        .into_iter()
        .filter(|n| n["completedTaskId"] == "1")
        .collect();
    assert_eq!(done.len(), 1, "one notification for the one completion");
    assert_eq!(done[0]["completedStatus"], "resolved");
}

#[test]
fn a_teammate_idle_hook_that_exits_2_causes_exactly_one_extra_turn() {
    let env = Env::with_team(&["a"]);
    let proj = project(
        &env,
        "TeammateIdle",
        "cat > \"$CLAUDE_PROJECT_DIR/idle-input\"; \
         if [ -f \"$CLAUDE_PROJECT_DIR/once\" ]; then exit 0; fi; \
         touch \"$CLAUDE_PROJECT_DIR/once\"; echo 'write the summary too' >&2; exit 2",
    );
    let prompts = env.path("prompts");
    let script = format!(
        "printf '%s\\n=====\\n' \"$1\" >> '{}'; echo answered",
        prompts.display()
    );
    let mate = start(&env, "a", &proj, &["--", "sh", "-c", &script, "sh"]);
    env.swarm(["send", "--to", "a", "hello"]).ok();
    eventually(LONG, "the first idle notification", || {
        (!idle_notifications(&env).is_empty()).then_some(())
    });
    let recorded = std::fs::read_to_string(&prompts).unwrap();
    let turns: Vec<&str> = recorded
        .split("\n=====\n")
        .filter(|p| !p.is_empty())
        .collect();
    assert_eq!(turns.len(), 2, "{recorded}");
    assert!(turns[0].contains("hello"));
    assert!(
        turns[1].starts_with(
            "<hook-feedback event=\"TeammateIdle\">write the summary too</hook-feedback>"
        ),
        "{}",
        turns[1]
    );
    let input = read_json(&proj.join("idle-input"));
    assert_eq!(input["hook_event_name"], "TeammateIdle");
    assert_eq!(input["teammate_name"], "a");
    assert_eq!(input["team_name"], "t");
    assert!(mate.pane().contains("blocked going idle (exit 2)"));

    // The hook lets it go idle now: the next message is one turn, not two.
    env.swarm(["send", "--to", "a", "again"]).ok();
    eventually(LONG, "the second idle notification", || {
        (idle_notifications(&env).len() == 2).then_some(())
    });
    let recorded = std::fs::read_to_string(&prompts).unwrap();
    assert_eq!(recorded.matches("\n=====\n").count(), 3, "{recorded}");
}

#[test]
fn a_task_created_hook_that_exits_2_refuses_the_task_with_its_stderr() {
    let env = Env::with_team(&[]);
    let proj = project(
        &env,
        "TaskCreated",
        "cat > \"$CLAUDE_PROJECT_DIR/created-input\"; \
         echo 'every task needs an owner in its subject' >&2; exit 2",
    );
    let out = with_settings(&env, env.swarm(["task", "create", "Refactor"]))
        .current_dir(&proj)
        .code(2);
    out.stderr_has(
        "the TaskCreated hook refused task \"Refactor\": every task needs an owner in its subject",
    );
    let input = read_json(&proj.join("created-input"));
    assert_eq!(input["hook_event_name"], "TaskCreated");
    assert_eq!(input["task_id"], "1");
    assert_eq!(input["task_subject"], "Refactor");
    assert_eq!(input["team_name"], "t");
    assert!(
        input.get("teammate_name").is_none(),
        "the user's shell is no teammate"
    );
    let list = env.swarm(["--json", "task", "list"]).ok().json();
    assert_eq!(list, json!([]), "the refused task is gone");

    // Elsewhere (no project hooks) creation works, and the refused id is not reused.
    let task = with_settings(&env, env.swarm(["--json", "task", "create", "Refactor"]))
        .ok()
        .json();
    assert_eq!(task["id"], "2");
}

#[test]
fn a_task_completed_hook_that_exits_2_refuses_swarm_task_update() {
    let env = Env::with_team(&[]);
    let proj = project(
        &env,
        "TaskCompleted",
        "test -f \"$CLAUDE_PROJECT_DIR/tested\" || { echo 'run the tests first' >&2; exit 2; }",
    );
    with_settings(&env, env.swarm(["task", "create", "Ship"])).ok();
    let update = || {
        with_settings(
            &env,
            env.swarm(["task", "update", "1", "--status", "completed"]),
        )
        .current_dir(&proj)
    };
    update().refused("the TaskCompleted hook refused completing task #1: run the tests first");
    std::fs::write(proj.join("tested"), "").unwrap();
    update().ok();
    let task = env.swarm(["--json", "task", "show", "1"]).ok().json();
    assert_eq!(task["status"], "completed");
}

/// An untrusted project whose `TaskCreated` hook would leave a mark.
fn untrusted_project(env: &Env) -> PathBuf {
    let dir = env.path("untrusted");
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    let settings = json!({"hooks": {"TaskCreated": [{"hooks": [
        {"type": "command", "command": "touch \"$CLAUDE_PROJECT_DIR/ran\""}]}]}});
    std::fs::write(
        dir.join(".claude/settings.json"),
        serde_json::to_vec_pretty(&settings).unwrap(),
    )
    .unwrap();
    std::fs::create_dir_all(env.path("user-claude")).unwrap();
    dir
}

/// Issue 22 item 6: a project's hooks run only where the user trusted the directory, through
/// `swarm trust` (listed, removable) or Claude Code's own trust record; elsewhere they are
/// skipped with a note naming them and the command that trusts the directory. The user's own
/// settings stay trusted everywhere.
#[test]
fn project_hooks_run_only_in_a_trusted_directory() {
    let env = Env::with_team(&[]);
    let proj = untrusted_project(&env);
    let real = proj.canonicalize().unwrap();
    let create = |subject: &str| {
        with_settings(&env, env.swarm(["task", "create", subject])).current_dir(&proj)
    };
    let out = create("one").ok();
    assert!(
        !proj.join("ran").exists(),
        "an untrusted project's hook ran"
    );
    out.stderr_has(&format!(
        "project hooks not run, because {} is not a trusted directory: {} (TaskCreated `touch",
        proj.display(),
        proj.join(".claude/settings.json").display()
    ));
    out.stderr_has(&format!("run `swarm trust {}`", real.display()));

    // The user's own hooks are trusted anywhere.
    std::fs::write(
        env.path("user-claude/settings.json"),
        json!({"hooks": {"TaskCreated": [{"hooks": [{"type": "command",
            "command": "touch \"$CLAUDE_PROJECT_DIR/user-ran\""}]}]}})
        .to_string(),
    )
    .unwrap();
    create("two").ok();
    assert!(proj.join("user-ran").exists(), "the user's own hook ran");
    assert!(!proj.join("ran").exists());
    std::fs::remove_file(env.path("user-claude/settings.json")).unwrap();

    // swarm trust: the hook runs; listed; a teammate's shell cannot trust.
    env.swarm(["trust".as_ref(), proj.as_os_str()])
        .env("SWARM_AGENT_NAME", "coder")
        .refused("only the user may trust a directory");
    env.swarm(["trust".as_ref(), proj.as_os_str()])
        .ok()
        .stdout
        .contains("trusted");
    let list = env.swarm(["--json", "trust", "--list"]).ok().json();
    assert_eq!(list, json!([real.display().to_string()]));
    let trusted_file = env.path("state/swarm/trusted-dirs.json");
    assert!(trusted_file.is_file(), "kept in swarm's private state");
    assert!(!env.path("teams/t").join("trusted-dirs.json").exists());
    let out = create("three").ok();
    assert!(proj.join("ran").exists(), "the trusted project's hook ran");
    assert!(!out.stderr.contains("not a trusted directory"), "{out:?}");

    // --remove: skipped again.
    std::fs::remove_file(proj.join("ran")).unwrap();
    env.swarm(["trust".as_ref(), "--remove".as_ref(), proj.as_os_str()])
        .ok();
    assert_eq!(
        env.swarm(["--json", "trust", "--list"]).ok().json(),
        json!([])
    );
    create("four").ok().stderr_has("not a trusted directory");
    assert!(!proj.join("ran").exists());

    // Claude Code's own trust record, for a folder above the project, counts too.
    let parent = real.parent().unwrap().display().to_string();
    std::fs::write(
        env.path("user-claude/.claude.json"),
        json!({"projects": {parent: {"hasTrustDialogAccepted": true}}}).to_string(),
    )
    .unwrap();
    create("five").ok();
    assert!(proj.join("ran").exists(), "trusted by Claude Code's record");
}

/// Issue 22 item 6: a FIFO (or a symlink to one, or a directory) where a settings file belongs
/// used to hang `swarm task create` in the read; it is refused at once, with a warning, and the
/// task is created.
#[test]
fn a_fifo_or_directory_at_a_settings_file_is_refused_without_blocking() {
    let env = Env::with_team(&[]);
    let proj = project(&env, "TaskCreated", "true");
    let settings = proj.join(".claude/settings.json");
    let fifo = env.path("a-fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let rows: [(&str, &dyn Fn()); 3] = [
        ("FIFO", &|| std::fs::rename(&fifo, &settings).unwrap()),
        ("FIFO", &|| {
            let linked = env.path("linked-fifo");
            assert_eq!(
                unsafe {
                    libc::mkfifo(
                        std::ffi::CString::new(linked.as_os_str().as_encoded_bytes())
                            .unwrap()
                            .as_ptr(),
                        0o600,
                    )
                },
                0
            );
            std::os::unix::fs::symlink(&linked, &settings).unwrap();
        }),
        ("directory", &|| std::fs::create_dir(&settings).unwrap()),
    ];
    for (i, (kind, plant)) in rows.iter().enumerate() {
        let _ = std::fs::remove_file(&settings);
        plant();
        let out = with_settings(&env, env.swarm(["task", "create", &format!("t{i}")]))
            .current_dir(&proj)
            .run_within(REFUSAL_LIMIT);
        assert_eq!(out.code, 0, "{kind}: {out:?}");
        out.stderr_has(&format!(
            "{} is a {kind}, not a regular file; refused",
            settings.display()
        ));
        if settings.is_dir() {
            std::fs::remove_dir(&settings).unwrap();
        }
    }
    let list = env.swarm(["--json", "task", "list"]).ok().json();
    assert_eq!(list.as_array().unwrap().len(), 3);
}

/// Issue 22 item 6, in the runtime: a teammate whose cwd holds an untrusted project's hooks
/// runs none of them (a `TaskCompleted` hook that would block, a `TeammateIdle` hook that would
/// leave a mark) and says so once in its log, however many tasks it completes.
#[test]
fn a_teammate_in_an_untrusted_directory_skips_its_hooks_and_says_so_once() {
    let env = Env::with_team(&["a"]);
    let dir = env.path("untrusted");
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    let settings = json!({"hooks": {
        "TaskCompleted": [{"hooks": [{"type": "command", "command": "echo no >&2; exit 2"}]}],
        "TeammateIdle": [{"hooks": [{"type": "command",
            "command": "touch \"$CLAUDE_PROJECT_DIR/idle-ran\""}]}]}});
    std::fs::write(dir.join(".claude/settings.json"), settings.to_string()).unwrap();
    std::fs::create_dir_all(env.path("user-claude")).unwrap();
    for n in 1..=2 {
        with_settings(
            &env,
            env.swarm([
                "task",
                "create",
                &format!("t{n}"),
                "--description",
                &format!("touch done{n}"),
            ]),
        )
        .current_dir(env.root())
        .ok();
    }
    let mate = start(&env, "a", &dir, &["--agent", "shell"]);
    eventually(LONG, "both tasks completed", || {
        let list = env.swarm(["--json", "task", "list"]).ok().json();
        list.as_array()?
            .iter()
            .all(|t| t["status"] == "completed")
            .then_some(())
    });
    assert!(dir.join("done1").exists() && dir.join("done2").exists());
    assert!(
        !dir.join("idle-ran").exists(),
        "an untrusted TeammateIdle hook ran"
    );
    let pane = mate.pane();
    assert_eq!(
        pane.matches("project hooks not run, because").count(),
        1,
        "said once:\n{pane}"
    );
    assert!(
        pane.contains("TaskCompleted `echo no >&2; exit 2`"),
        "{pane}"
    );
    assert!(pane.contains("TeammateIdle `touch"), "{pane}");
}
