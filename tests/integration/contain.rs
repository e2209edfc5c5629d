//! Contained teammates (issue 22 item 1, `src/launch/sandbox.rs`): a shell teammate running a
//! hostile task cannot read the lead key, write the team's control records or another member's
//! own records, reach the tmux server or signal a process outside its tree, while it still does
//! its work, talks to the lead and wakes its peers, and the team goes on; `--no-sandbox` and a
//! machine without bwrap run uncontained, and say so.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::support::*;

const LONG: Duration = Duration::from_secs(60);

/// A process outside every teammate's tree, for a teammate to try to kill.
fn victim() -> KillOnDrop {
    let child = Command::new("sleep")
        .arg("300")
        .stdin(Stdio::null())
        .spawn()
        .expect("sleep runs");
    KillOnDrop(child)
}

/// The tmux socket `-L name` makes (the tests scrub `TMUX_TMPDIR`).
fn socket_of(tmux: &Tmux) -> PathBuf {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    PathBuf::from(format!("/tmp/tmux-{uid}/{}", tmux.socket))
}

/// The lead key files the launch made (there must be one to steal).
fn lead_keys(env: &Env) -> PathBuf {
    let dir = env.path("state/swarm/lead-keys");
    let keys = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
    assert!(keys > 0, "the launch made a lead key in {}", dir.display());
    dir
}

/// A task description that tries every attack and writes one line per attempt to
/// `$SWARM_ROOT/attack` (written aside and renamed, so a reader sees it whole), then tells the
/// lead it is done through its own outbox, the lead's inbox.
fn attack(env: &Env, team: &str, keys: &Path, socket: &Path, victim: u32) -> String {
    let team_dir = env.path(&format!("teams/{team}"));
    format!(
        r#"out="$SWARM_ROOT/attack"; {{
echo "TMUX=${{TMUX-unset}}"
cat '{keys}'/*.key >/dev/null && echo 'key: read' || echo 'key: refused'
echo forged > '{team_dir}/permissions/resolved/forged.json' && echo 'resolved: written' || echo 'resolved: refused'
echo forged > '{team_dir}/lead/done.json' && echo 'lead: written' || echo 'lead: refused'
tmux -S '{socket}' list-sessions >/dev/null && echo 'tmux: reached' || echo 'tmux: refused'
kill -TERM {victim} && echo 'kill: sent' || echo 'kill: refused'
other=a; [ "$SWARM_AGENT_NAME" = a ] && other=b
mkdir -p '{team_dir}'/members/"$other"
echo forged > '{team_dir}'/members/"$other"/acted.json && echo 'acted: written' || echo 'acted: refused'
echo mine > '{team_dir}'/members/"$SWARM_AGENT_NAME"/mine && echo 'own: written' || echo 'own: refused'
'{bin}' send --to team-lead 'attack over' && echo 'send: sent'
}} > "$out.tmp" 2>&1; mv "$out.tmp" "$out""#,
        keys = keys.display(),
        team_dir = team_dir.display(),
        socket = socket.display(),
        bin = BIN,
    )
}

/// The attack's report, once it is written.
fn report(env: &Env) -> String {
    eventually(LONG, "the hostile task's report", || {
        std::fs::read_to_string(env.path("attack")).ok()
    })
}

/// A swarm file: shell teammates `a` and `b`, the hostile task, and a task blocked by it that
/// proves the team keeps working.
fn team_file(env: &Env, team: &str, attack: &str) -> PathBuf {
    let doc = json!({"team": team, "agent": "shell",
        "teammates": [{"name": "a"}, {"name": "b"}],
        "tasks": [{"subject": "attack", "description": attack},
                  {"subject": "after", "description": "echo after > \"$SWARM_ROOT/after\"",
                   "blockedBy": [0]}]});
    let file = env.path("team.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    file
}

/// Every attack failed, from inside (the report) and outside (the files, the victim, the
/// server), and the team worked on: both tasks completed, the lead heard from the attacker.
fn assert_contained(env: &Env, team: &str, tmux: &Tmux, victim: &mut KillOnDrop) {
    let said = report(env);
    for line in [
        "TMUX=unset",
        "key: refused",
        "resolved: refused",
        "lead: refused",
        "tmux: refused",
        "kill: refused",
        "acted: refused",
        "own: written",
        "send: sent",
    ] {
        assert!(said.contains(line), "{line:?} in the report:\n{said}");
    }
    let team_dir = env.path(&format!("teams/{team}"));
    assert!(!team_dir.join("permissions/resolved/forged.json").exists());
    assert!(!team_dir.join("lead/done.json").exists());
    // Another member's record of the lead messages it acted on (a replay's first step).
    for name in ["a", "b"] {
        let acted = std::fs::read_to_string(team_dir.join(format!("members/{name}/acted.json")));
        assert!(!acted.unwrap_or_default().contains("forged"), "{name}");
    }
    assert!(
        victim.0.try_wait().unwrap().is_none(),
        "the process outside the teammate's tree is alive"
    );
    let socket = socket_of(tmux).display().to_string();
    assert_eq!(tmux.cmd(["-S", &socket, "list-sessions"]).code, 0);
    eventually(
        LONG,
        "both tasks, the one after the attack too, completed",
        || {
            let tasks = env
                .swarm(["--json", "--team", team, "task", "list"])
                .ok()
                .json();
            let done = tasks
                .as_array()?
                .iter()
                .filter(|t| t["status"] == "completed");
            (done.count() == 2).then_some(())
        },
    );
    assert_eq!(
        std::fs::read_to_string(env.path("after")).unwrap(),
        "after\n"
    );
    let inbox = std::fs::read_to_string(team_dir.join("inboxes/team-lead.json")).unwrap();
    assert!(inbox.contains("attack over"), "{inbox}");
    let status = env.swarm(["--json", "--team", team, "status"]).ok().json();
    for name in ["a", "b"] {
        assert_eq!(member(&status, name)["contained"], true, "{status}");
        assert_eq!(member(&status, name)["containment"], "bwrap", "{status}");
    }
}

#[test]
fn a_contained_in_process_teammate_cannot_steal_forge_reach_tmux_or_kill_yet_works() {
    let env = Env::new();
    // A tmux server the teammate could type into, were it reachable.
    let tmux = Tmux::new();
    tmux.cmd(["new-session", "-d", "-s", "user"]);
    let mut victim = victim();
    assert!(!gone(victim.0.id() as i32), "the victim is alive before");
    // The key is made by the launch; its directory is known before.
    let keys = env.path("state/swarm/lead-keys");
    let text = attack(&env, "cin", &keys, &socket_of(&tmux), victim.0.id());
    let file = team_file(&env, "cin", &text);
    let mut launcher = env
        .swarm(["launch", "--backend", "in-process", file.to_str().unwrap()])
        .spawn();
    report(&env);
    lead_keys(&env);
    assert_contained(&env, "cin", &tmux, &mut victim);
    // The supervisor still stops its contained teammates gracefully.
    // SAFETY: a signal to the launcher this test started.
    unsafe { libc::kill(launcher.id() as i32, libc::SIGINT) };
    let deadline = std::time::Instant::now() + LONG;
    while launcher.try_wait().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the launcher did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = std::fs::read_to_string(env.path("teams/cin/logs/a.log")).unwrap();
    assert!(log.contains("shutdown approved"), "{log}");
}

#[test]
fn a_contained_tmux_teammate_cannot_reach_the_teams_own_server_and_kill_and_down_still_work() {
    let env = Env::new();
    let tmux = Tmux::new();
    let mut victim = victim();
    assert!(!gone(victim.0.id() as i32), "the victim is alive before");
    // The team's own server: the one the lead console's pane is on.
    let text = attack(
        &env,
        "ctm",
        &env.path("state/swarm/lead-keys"),
        &socket_of(&tmux),
        victim.0.id(),
    );
    let file = team_file(&env, "ctm", &text);
    env.swarm(["launch", file.to_str().unwrap()])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
    lead_keys(&env);
    assert_contained(&env, "ctm", &tmux, &mut victim);
    let panes = tmux.cmd(["list-panes", "-a", "-F", "#{pane_title} #{pane_pid}"]);
    let pids: Vec<(String, i32)> = panes
        .stdout
        .lines()
        .filter_map(|l| {
            let (title, pid) = l.split_once(' ')?;
            Some((title.to_string(), pid.parse().ok()?))
        })
        .collect();
    assert_eq!(
        pids.len(),
        3,
        "the lead console and two teammates: {pids:?}"
    );
    let b_pid = pids.iter().find(|(t, _)| t == "b").expect("b's pane").1;
    let status = env.swarm(["--json", "--team", "ctm", "status"]).ok().json();
    assert_eq!(member(&status, "b")["state"], "idle", "{status}");
    let runtime = ["teammate", "--agent-id", "b@ctm"];
    assert!(
        cmdlines_contain(&runtime),
        "b's runtime runs inside its sandbox"
    );
    env.swarm(["--team", "ctm", "kill", "b"]).ok();
    eventually(LONG, "b's whole tree to be gone after swarm kill", || {
        (gone(b_pid) && !cmdlines_contain(&runtime)).then_some(())
    });
    env.swarm(["--team", "ctm", "down"]).ok();
    eventually(
        LONG,
        "every pane's process to be gone after swarm down",
        || pids.iter().all(|(_, p)| gone(*p)).then_some(()),
    );
}

#[test]
fn no_sandbox_runs_teammates_uncontained_and_status_says_so() {
    let env = Env::new();
    let tmux = Tmux::new();
    let keys = env.path("state/swarm/lead-keys");
    let steal = format!("cat '{}'/*.key > \"$SWARM_ROOT/stolen\"", keys.display());
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "cno", "agent": "shell", "teammates": [{"name": "a"}],
               "tasks": [{"subject": "steal", "description": steal}]})
        .to_string(),
    )
    .unwrap();
    env.swarm(["launch", "--no-sandbox", file.to_str().unwrap()])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
    let stolen = eventually(LONG, "the key to be copied", || {
        std::fs::read_to_string(env.path("stolen"))
            .ok()
            .filter(|s| !s.is_empty())
    });
    assert!(stolen.starts_with("swarm-lead-key"), "{stolen}");
    let status = env.swarm(["--json", "--team", "cno", "status"]).ok().json();
    assert_eq!(member(&status, "a")["contained"], false, "{status}");
    assert_eq!(member(&status, "a")["containment"], "--no-sandbox");
    let text = env.swarm(["--team", "cno", "status"]).ok().stdout;
    assert!(text.contains("CONTAINED"), "{text}");
    assert!(text.contains("uncontained: a (--no-sandbox)"), "{text}");
    // Started again, it keeps the choice it was launched with.
    env.swarm(["--team", "cno", "kill", "a"]).ok();
    env.swarm(["--team", "cno", "restart", "a"])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
    let status = env.swarm(["--json", "--team", "cno", "status"]).ok().json();
    assert_eq!(member(&status, "a")["containment"], "--no-sandbox");
    env.swarm(["--team", "cno", "down"]).ok();
}

#[test]
fn a_launch_without_bwrap_says_teammates_run_uncontained_and_status_shows_it() {
    let env = Env::new();
    let tmux = Tmux::new();
    // A PATH with tmux and a shell but no bwrap.
    let bin = env.path("bin");
    std::fs::create_dir(&bin).unwrap();
    for tool in ["tmux", "sh"] {
        let found = String::from_utf8(
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        std::os::unix::fs::symlink(found.trim(), bin.join(tool)).unwrap();
    }
    let out = env
        .swarm([
            "launch",
            "--agent",
            "shell",
            "--team",
            "cbw",
            "--teammate",
            "a=go",
            "--teammate",
            "b=go",
        ])
        .env("PATH", &bin)
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
    out.stderr_has(
        "teammates run uncontained: bwrap not found; install bubblewrap or pass --no-sandbox to silence this",
    );
    assert_eq!(
        out.stderr.matches("teammates run uncontained").count(),
        1,
        "one line per launch: {}",
        out.stderr
    );
    let status = env.swarm(["--json", "--team", "cbw", "status"]).ok().json();
    assert_eq!(member(&status, "a")["contained"], false, "{status}");
    assert_eq!(member(&status, "a")["containment"], "bwrap not found");
    env.swarm(["--team", "cbw", "down"]).ok();
}

/// A contained teammate starts through swarm's own steps without executing the binary again
/// where it need not (`process::successor`): its runtime runs in the process of the sandbox's
/// inner step, whose command line it keeps, and its task's shell is that process's child.
#[test]
fn a_contained_runtime_runs_in_the_process_of_the_sandboxs_inner_step() {
    let env = Env::new();
    let tmux = Tmux::new();
    let look = "tr '\\0' ' ' < /proc/$PPID/cmdline > \"$SWARM_ROOT/parent.tmp\" && \
                mv \"$SWARM_ROOT/parent.tmp\" \"$SWARM_ROOT/parent\"";
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "cx", "agent": "shell", "teammates": [{"name": "a"}],
               "tasks": [{"subject": "look", "description": look}]})
        .to_string(),
    )
    .unwrap();
    env.swarm(["launch", file.to_str().unwrap()])
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
    let parent = eventually(LONG, "the task's report of its parent", || {
        std::fs::read_to_string(env.path("parent")).ok()
    });
    assert!(
        parent.contains(" sandbox-exec --inner -- ") && parent.contains(" teammate "),
        "the runtime is the inner step's process: {parent}"
    );
    env.swarm(["--team", "cx", "down"]).ok();
}

/// A contained teammate's message to a peer wakes the peer through its bell: `members/` is
/// read-only in a sandbox but for the member's own directory, and the bells, which every
/// sender rings, live apart from it. The periodic re-scan is out of reach, and the sender's
/// task does not end (no task file changes, which would wake the peer too) until the peer has
/// read the message.
#[test]
fn a_contained_teammates_message_wakes_its_peer_through_the_peers_bell() {
    let env = Env::new();
    let ping = format!(
        r#"other=a; [ "$SWARM_AGENT_NAME" = a ] && other=b
'{bin}' send --to "$other" "ping from $SWARM_AGENT_NAME"
until '{bin}' inbox "$other" | grep -q 'ping from' && ! '{bin}' inbox --unread "$other" | grep -q 'ping from'; do sleep 0.2; done
echo "$other" > "$SWARM_ROOT/woken.tmp"; mv "$SWARM_ROOT/woken.tmp" "$SWARM_ROOT/woken""#,
        bin = BIN
    );
    let doc = json!({"team": "bell", "agent": "shell",
        "teammates": [{"name": "a"}, {"name": "b"}]});
    let file = env.path("team.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let mut launcher = env
        .swarm(["launch", "--backend", "in-process", file.to_str().unwrap()])
        .env("SWARM_RESCAN_MS", "600000")
        .spawn();
    eventually(LONG, "both teammates up", || {
        let out = env.swarm(["--json", "--team", "bell", "status"]).run();
        // Not JSON until the launch has made the team.
        let status: serde_json::Value = serde_json::from_str(&out.stdout).ok()?;
        // The roster names the teammates only once the launch has reserved them; a runtime's
        // events record comes after its watches (its bell's among them).
        let members = status["members"].as_array()?;
        let alive = |n: &str| {
            members
                .iter()
                .any(|m| m["name"] == n && m["liveness"] == "alive" && m["events"].is_string())
        };
        (alive("a") && alive("b")).then_some(())
    });
    env.swarm([
        "--team",
        "bell",
        "task",
        "create",
        "ping",
        "--description",
        &ping,
    ])
    .ok();
    let woken = eventually(LONG, "the peer to read the message", || {
        std::fs::read_to_string(env.path("woken")).ok()
    });
    let woken = woken.trim();
    let inbox = read_json(&env.path(&format!("teams/bell/inboxes/{woken}.json")));
    let ping = inbox
        .as_array()
        .unwrap()
        .iter()
        .find(|m| {
            m["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("ping from"))
        })
        .unwrap_or_else(|| panic!("{inbox}"));
    assert_eq!(ping["read"], true, "{inbox}");
    // SAFETY: a signal to the launcher this test started.
    unsafe { libc::kill(launcher.id() as i32, libc::SIGINT) };
    let _ = launcher.wait();
}
