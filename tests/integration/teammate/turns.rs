//! What a turn gets: teammate-message blocks, identity env and a first-turn guide; the prompt
//! in place of a placeholder or on stdin; messages that arrive during a turn delivered together
//! next turn; and plan mode, which waits for the lead's approval and passes rejection feedback on.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use super::{
    inbox, liveness, prompts, q, read, recorder, refs, send, send_protocol, start, task, to_lead,
    LONG,
};
use crate::support::*;

#[test]
fn plan_mode_waits_for_approval_and_rejection_feedback_reaches_the_next_turn() {
    let env = Env::with_team(&["a"]);
    let prompts_file = env.path("prompts");
    // Each turn prints "plan vN", N being the number of prompts recorded so far.
    let agent = recorder(
        &prompts_file,
        &format!("echo \"plan v$(grep -c '^=====$' {})\"", q(&prompts_file)),
    );
    let mut args = vec!["--plan-mode-required"];
    args.extend(refs(&agent));
    let _mate = start(&env, "a", &args);
    env.swarm(["task", "create", "later", "--description", "after the plan"])
        .ok();
    send(&env, "a", "Build the parser");

    let first = eventually(LONG, "the first plan request", || {
        to_lead(&env, "plan_approval_request").into_iter().next()
    });
    assert_eq!(first["from"], "a");
    assert_eq!(first["planContent"].as_str().unwrap().trim(), "plan v1");
    let id1 = first["requestId"].as_str().unwrap().to_string();
    assert!(
        id1.starts_with("plan_approval-") && id1.ends_with("@a@t"),
        "{id1}"
    );
    let plan_file = PathBuf::from(first["planFilePath"].as_str().unwrap());
    assert_eq!(plan_file, env.path("teams/t/plans/a.md"));
    assert_eq!(read(&plan_file).trim(), "plan v1");
    let p = prompts(&prompts_file);
    assert!(p[0].contains("Build the parser") && p[0].contains("plan mode"));
    assert_eq!(
        task(&env, "1")["status"],
        "pending",
        "no task work before approval"
    );

    // A response from a teammate, or for another request, changes nothing.
    send_protocol(
        &env,
        "a",
        json!({"type": "plan_approval_response", "requestId": "plan_approval-1@a@t",
               "approved": true, "timestamp": "t"}),
    );
    send_protocol(
        &env,
        "a",
        json!({"type": "plan_approval_response", "requestId": id1, "approved": false,
               "feedback": "Smaller steps, and tests first", "timestamp": "t"}),
    );
    let second = eventually(LONG, "the revised plan", || {
        to_lead(&env, "plan_approval_request").get(1).cloned()
    });
    assert_eq!(second["planContent"].as_str().unwrap().trim(), "plan v2");
    let p = prompts(&prompts_file);
    assert_eq!(p.len(), 2);
    assert!(p[1].contains("Build the parser"));
    assert!(p[1].contains("Smaller steps, and tests first"), "{}", p[1]);
    assert!(
        p[1].contains("plan v1"),
        "the rejected plan is shown: {}",
        p[1]
    );
    assert!(
        !p[1].contains("swarm task claim"),
        "the appendix is for the first turn only"
    );
    assert_eq!(task(&env, "1")["status"], "pending");

    send_protocol(
        &env,
        "a",
        json!({"type": "plan_approval_response", "requestId": second["requestId"],
               "approved": true, "feedback": "go", "timestamp": "t"}),
    );
    eventually(LONG, "the task to be done after approval", || {
        (task(&env, "1")["status"] == "completed").then_some(())
    });
    let p = prompts(&prompts_file);
    assert_eq!(p.len(), 4, "plan, revised plan, execution, task: {p:#?}");
    assert!(p[2].contains("approved your plan") && p[2].contains("plan v2"));
    assert!(p[2].contains("Build the parser"));
    assert!(p[3].starts_with("Complete task #1: later\n\nafter the plan"));
    assert_eq!(to_lead(&env, "plan_approval_request").len(), 2);
}

#[test]
fn messages_that_arrive_during_a_turn_are_delivered_next_turn_none_lost() {
    let env = Env::with_team(&["a"]);
    let (prompts_file, gate) = (env.path("prompts"), env.path("gate"));
    // The first turn blocks until the test opens the gate, so the other messages surely
    // arrive while it runs.
    let agent = recorder(
        &prompts_file,
        &format!(
            "if [ $(grep -c '^=====$' {p}) = 1 ]; then while [ ! -e {g} ]; do sleep 0.05; done; fi; echo ok",
            p = q(&prompts_file),
            g = q(&gate)
        ),
    );
    let _mate = start(&env, "a", &refs(&agent));
    send(&env, "a", "m1");
    eventually(LONG, "the first turn", || {
        (prompts(&prompts_file).len() == 1).then_some(())
    });
    for m in ["m2", "m3", "m4"] {
        send(&env, "a", m);
    }
    std::thread::sleep(Duration::from_millis(300));
    let unread: Vec<Value> = inbox(&env, "a")
        .into_iter()
        .filter(|m| m["read"] == false)
        .collect();
    assert_eq!(unread.len(), 3, "not delivered while the turn runs");
    std::fs::write(&gate, "").unwrap();
    eventually(LONG, "the second turn to finish", || {
        (to_lead(&env, "idle_notification").len() == 2).then_some(())
    });
    let p = prompts(&prompts_file);
    assert_eq!(p.len(), 2, "{p:#?}");
    let block = |m: &str| {
        format!("<teammate-message teammate_id=\"team-lead\" color=\"red\">{m}</teammate-message>")
    };
    assert!(p[0].starts_with(&block("m1")));
    assert!(!p[0].contains("m2"));
    assert!(p[1].starts_with(&format!(
        "{}\n\n{}\n\n{}",
        block("m2"),
        block("m3"),
        block("m4")
    )));
    let all = read(&prompts_file);
    for m in ["m1", "m2", "m3", "m4"] {
        assert_eq!(
            all.matches(&format!(">{m}<")).count(),
            1,
            "{m} delivered once"
        );
    }
    assert!(inbox(&env, "a").iter().all(|m| m["read"] == true));
    let idle = to_lead(&env, "idle_notification");
    assert_eq!(idle[1]["idleReason"], "available");
    assert_eq!(idle[1]["result"], "ok\n");
}

#[test]
fn turns_get_teammate_message_blocks_identity_env_and_a_first_turn_guide() {
    let env = Env::with_team(&["a", "b"]);
    let (prompts_file, env_file) = (env.path("prompts"), env.path("env"));
    let agent = recorder(
        &prompts_file,
        &format!(
            "echo \"$SWARM_ROOT|$SWARM_TEAM|$SWARM_AGENT_NAME|$SWARM_AGENT_ID|$(pwd)\" >> {}",
            q(&env_file)
        ),
    );
    let work = env.path("work");
    std::fs::create_dir(&work).unwrap();
    let mut args = vec!["--cwd", work.to_str().unwrap()];
    args.extend(refs(&agent));
    let _mate = start(&env, "a", &args);
    env.swarm([
        "send",
        "--to",
        "a",
        "--summary",
        "parser \"review\"",
        "Review the parser",
    ])
    .ok();
    eventually(LONG, "the first turn", || {
        (prompts(&prompts_file).len() == 1).then_some(())
    });
    env.swarm([
        "send",
        "--to",
        "a",
        "--from",
        "b",
        "I am done with the lexer",
    ])
    .ok();
    eventually(LONG, "the second turn", || {
        (prompts(&prompts_file).len() == 2).then_some(())
    });
    let p = prompts(&prompts_file);
    assert!(p[0].starts_with(
        "<teammate-message teammate_id=\"team-lead\" color=\"red\" summary=\"parser &quot;review&quot;\">Review the parser</teammate-message>\n\n---\nYou are \"a\", a teammate in the swarm team \"t\""
    ), "{}", p[0]);
    assert!(p[0].contains("swarm send --to team-lead"));
    assert!(p[0].contains("swarm task claim ID"));
    assert_eq!(
        p[1],
        "<teammate-message teammate_id=\"b\" color=\"blue\">I am done with the lexer</teammate-message>"
    );
    let first_env = read(&env_file).lines().next().unwrap().to_string();
    assert_eq!(
        first_env,
        format!("{}|t|a|a@t|{}", env.root().display(), work.display())
    );
}

#[test]
fn the_prompt_can_replace_a_placeholder_or_go_to_stdin() {
    let env = Env::with_team(&["a", "b", "c"]);
    let (argv_file, stdin_file, epipe) = (env.path("argv"), env.path("stdin"), env.path("epipe"));
    let _a = start(
        &env,
        "a",
        &[
            "--",
            "sh",
            "-c",
            &format!(
                "printf '%s|%s|%s|%s' \"$#\" \"$1\" \"$2\" \"$3\" > {}",
                q(&argv_file)
            ),
            "sh",
            "--prompt",
            "{prompt}",
            "--flag",
        ],
    );
    let _b = start(
        &env,
        "b",
        &[
            "--prompt-via",
            "stdin",
            "--",
            "sh",
            "-c",
            &format!("cat > {}; echo \" args=$#\" >> {0}", q(&stdin_file)),
            "sh",
        ],
    );
    // An agent that never reads its stdin: the prompt write fails with EPIPE, harmlessly.
    let _c = start(
        &env,
        "c",
        &[
            "--prompt-via",
            "stdin",
            "--",
            "sh",
            "-c",
            &format!("echo ran >> {}", q(&epipe)),
            "sh",
        ],
    );
    send(&env, "a", "hello a");
    send(&env, "b", "hello b");
    let big = "x".repeat(900_000);
    env.swarm(["send", "--to", "c", "-"]).stdin(big).ok();
    eventually(LONG, "c's first turn", || {
        (read(&epipe) == "ran\n").then_some(())
    });
    // c survived the EPIPE and takes the next turn.
    send(&env, "c", "small");
    eventually(LONG, "a's and b's turns and c's two", || {
        let idle = to_lead(&env, "idle_notification");
        let from = |n: &str| idle.iter().filter(|i| i["from"] == n).count();
        (from("a") == 1 && from("b") == 1 && from("c") == 2).then_some(())
    });
    assert_eq!(read(&epipe), "ran\nran\n");
    let argv = read(&argv_file);
    let (count, rest) = argv.split_once('|').unwrap();
    assert_eq!(
        count, "3",
        "the placeholder replaces an argument, nothing is appended"
    );
    assert!(rest.starts_with("--prompt|<teammate-message teammate_id=\"team-lead\" color=\"red\">hello a</teammate-message>"));
    assert!(rest.ends_with("|--flag"));
    let stdin = read(&stdin_file);
    assert!(stdin.starts_with(
        "<teammate-message teammate_id=\"team-lead\" color=\"red\">hello b</teammate-message>"
    ));
    assert!(stdin.ends_with(" args=0\n"));
    assert_eq!(liveness(&env, "c"), "alive");
}

/// A fake `claude` (the file name is what the adapter looks at) that records its first three
/// arguments, one turn per line.
fn fake_claude(env: &Env, argv_file: &std::path::Path) -> PathBuf {
    let dir = env.path("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let claude = dir.join("claude");
    std::fs::write(
        &claude,
        format!(
            "#!/bin/sh\nprintf '%s %s %s\\n' \"$1\" \"$2\" \"$3\" >> {}\necho answered\n",
            q(argv_file)
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    claude
}

#[test]
fn claude_in_print_mode_keeps_one_conversation_across_turns_and_restarts() {
    let env = Env::with_team(&["a"]);
    let argv_file = env.path("argv");
    let claude = fake_claude(&env, &argv_file);
    let claude = claude.display().to_string();
    let mut mate = Some(start(&env, "a", &["--", &claude, "-p"]));
    let turn = |n: usize, text: &str| {
        send(&env, "a", text);
        eventually(LONG, &format!("turn {n}"), || {
            (to_lead(&env, "idle_notification").len() == n).then_some(())
        });
    };
    turn(1, "first");
    turn(2, "second");
    turn(3, "third");
    let session = crate::support::read_json(&env.path("teams/t/sessions/a/session.json"));
    let id = session["sessionId"].as_str().unwrap().to_string();
    assert!(uuid_like(&id), "{session}");
    assert_eq!(
        read(&argv_file),
        format!("--session-id {id} -p\n--resume {id} -p\n--resume {id} -p\n"),
        "the first turn names the conversation, the next ones resume it"
    );
    // A runtime started again (after a crash) carries on the same conversation.
    drop(mate.take());
    let _mate = start(&env, "a", &["--", &claude, "-p"]);
    turn(4, "fourth");
    assert!(
        read(&argv_file).ends_with(&format!("--resume {id} -p\n--resume {id} -p\n")),
        "{}",
        read(&argv_file)
    );
    assert_eq!(read(&argv_file).lines().count(), 4);
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4
}

/// A runtime reads its inbox once per wake: a message that arrives while the runtime is still
/// acting on that read waits for the next one, and so is announced in the pane before the turn
/// that carries it. The runtime used to read its inbox a second time to pick the turn's
/// messages, and a message that came in between (here, while it waited for the inbox lock to
/// mark a protocol message delivered) started a turn without ever being announced.
#[test]
fn a_message_that_arrives_mid_wake_is_announced_before_its_turn() {
    let env = Env::with_team(&["a"]);
    let prompts_file = env.path("prompts");
    let agent = recorder(&prompts_file, "true");
    let mate = start(&env, "a", &refs(&agent));
    let inbox = env.path("teams/t/inboxes/a.json");
    let entry = |from: &str, text: &str, id: &str| {
        json!({"from": from, "text": text, "timestamp": "2026-01-01T00:00:00.000Z",
               "msg_id": id})
    };
    let idle = json!({"type": "idle_notification", "from": "b", "timestamp": "t"}).to_string();
    let first = json!([entry("b", &idle, "m1")]);
    let then = json!([entry("b", &idle, "m1"), entry("team-lead", "late", "m2")]);
    // Written by hand while holding the inbox lock, as a lock holder may; replaced whole, so a
    // reader never catches it half written (a torn read is re-read under the lock, which this
    // holder keeps until the runtime acted: a 30 s wait, not the race under test).
    let holder = KillOnDrop(env.hold_lock(&inbox));
    let replace = |doc: &serde_json::Value| {
        let tmp = env.path("teams/t/inboxes/.a.json.by-hand");
        std::fs::write(&tmp, doc.to_string()).unwrap();
        std::fs::rename(&tmp, &inbox).unwrap();
    };
    replace(&first);
    let acted = std::time::Instant::now();
    while !mate.output().contains("ignored idle_notification from b") {
        assert!(
            acted.elapsed() < LONG,
            "the runtime did not act on the protocol message; its pane:\n{}",
            mate.output()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // It now waits for the lock to mark that message delivered.
    replace(&then);
    drop(holder);
    eventually(LONG, "the turn that carries the late message", || {
        prompts(&prompts_file)
            .iter()
            .any(|p| p.contains("late"))
            .then_some(())
    });
    let output = mate.output();
    let lines: Vec<&str> = output.lines().collect();
    let announced = lines
        .iter()
        .position(|l| l.ends_with("message from team-lead: late"));
    let turn = lines.iter().position(|l| l.contains("▶ turn"));
    assert!(
        announced.is_some() && announced < turn,
        "the late message was not announced before its turn:\n{output}"
    );
}

/// The first turn lists the team (names, roles, who leads) and, for a teammate whose roster
/// entry has a worktree it runs in, the worktree's path and branch, with the paths the turn
/// names in the main checkout flagged beside their copies (issue 28).
#[test]
fn the_first_turn_lists_the_team_and_says_which_worktree_it_is_in() {
    let env = Env::with_team(&["a", "reviewer"]);
    let (repo, prompts_file) = (env.path("repo"), env.path("prompts"));
    let wt = repo.join(".swarm/worktrees/a");
    std::fs::create_dir_all(&wt).unwrap();
    let config_path = env.path("teams/t/config.json");
    let mut config = read_json(&config_path);
    for m in config["members"].as_array_mut().unwrap() {
        if m["name"] == "a" {
            m["swarmWorktree"] = json!({"repo": repo, "path": wt, "branch": "swarm/t/a",
                                        "base": "0", "admin": "a", "cwd": wt});
        }
        if m["name"] == "reviewer" {
            m["agentType"] = json!("code-reviewer");
        }
    }
    std::fs::write(&config_path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    let agent = recorder(&prompts_file, "echo ok");
    let mut args = vec!["--cwd", wt.to_str().unwrap()];
    args.extend(refs(&agent));
    let _mate = start(&env, "a", &args);
    send(
        &env,
        "a",
        &format!("Fix {}/src/lib.rs please", repo.display()),
    );
    let first = eventually(LONG, "the first turn", || {
        prompts(&prompts_file).into_iter().next()
    });
    assert!(
        first.contains(
            "Your team (name, role):\n  team-lead  team-lead (leads the team)\n  \
             a          general-purpose (you)\n  reviewer   code-reviewer\n"
        ),
        "{first}"
    );
    assert!(
        first.contains(&format!("{} on branch swarm/t/a", wt.display())),
        "{first}"
    );
    assert!(
        first.contains(&format!(
            "  {}/src/lib.rs is, in your worktree, {}/src/lib.rs",
            repo.display(),
            wt.display()
        )),
        "{first}"
    );
}
