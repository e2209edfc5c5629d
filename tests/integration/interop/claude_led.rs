//! Teammates a Claude Code lead started (issue 25 item 1): real claude teammates in panes of a
//! tmux server, started with the very commands Claude Code's lead sends (`respawn-pane -k -t P
//! -- "cd W && env ... claude --agent-id NAME@TEAM ... --team-name TEAM ..."` through the
//! default shell, and from 2.1.329 `-- /bin/sh -c "cd W && exec env ..."`), under a roster in
//! the lead's own shape: pane ids, no tmux server, no `@swarm-*` marks, no pids. swarm finds
//! each by the argv and config directory of its pane's process (or that process's child), so
//! `swarm status` says alive and idle, and `shutdown --force` and `kill` close that pane and
//! nothing else; outside tmux it looks at nothing and says unknown.

use serde_json::{json, Value};

use super::fake_api::{FakeApi, Reply};
use super::versions::{each_claude, Installed};
use super::{seed_claude_config, teammate_env, WAIT};
use crate::support::*;

const TEAM: &str = "session-5e6f7a8b";
const LEAD_SESSION: &str = "5e6f7a8b-1c2d-4e3f-8a9b-0c1d2e3f4a5b";

/// `word` quoted for `sh`, as Claude Code quotes the words of a teammate's command.
fn quoted(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// A roster as Claude Code's lead writes it: the lead in-process as `leader`, each teammate with
/// the pane id tmux gave it and nothing of swarm's.
fn roster(work: &str, panes: &[(&str, &str)]) -> Value {
    let mut members = vec![json!({
        "agentId": format!("team-lead@{TEAM}"), "name": "team-lead", "agentType": "team-lead",
        "joinedAt": 1767225600000u64, "tmuxPaneId": "leader", "cwd": work,
        "subscriptions": [], "backendType": "in-process"})];
    for (name, pane) in panes {
        members.push(json!({
            "agentId": format!("{name}@{TEAM}"), "name": name, "color": "blue",
            "joinedAt": 1767225700000u64, "tmuxPaneId": pane, "subscriptions": [],
            "agentType": "general-purpose", "prompt": "wait", "planModeRequired": false,
            "cwd": work, "backendType": "tmux", "isActive": false}));
    }
    json!({"name": TEAM, "createdAt": 1767225600000u64,
           "leadAgentId": format!("team-lead@{TEAM}"), "leadSessionId": LEAD_SESSION,
           "members": members})
}

/// The argv of `pid`, word by word, or empty.
fn argv(pid: &str) -> Vec<String> {
    std::fs::read(format!("/proc/{}/cmdline", pid.trim()))
        .map(|b| {
            b.split(|c| *c == 0)
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `argv` has `--agent-id ID` as two words.
fn names(argv: &[String], id: &str) -> bool {
    argv.windows(2).any(|w| w[0] == "--agent-id" && w[1] == id)
}

struct Panes<'a> {
    tmux: &'a Tmux,
}

impl Panes<'_> {
    /// Every pane on the server: id, pid, dead.
    fn list(&self) -> Vec<(String, String, bool)> {
        self.tmux
            .cmd([
                "list-panes",
                "-a",
                "-F",
                "#{pane_id} #{pane_pid} #{pane_dead}",
            ])
            .stdout
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (f.len() == 3).then(|| (f[0].into(), f[1].into(), f[2] == "1"))
            })
            .collect()
    }

    fn alive(&self, pane: &str) -> bool {
        self.list().iter().any(|(id, _, dead)| id == pane && !dead)
    }

    fn pid(&self, pane: &str) -> String {
        self.list()
            .into_iter()
            .find(|(id, _, _)| id == pane)
            .map(|(_, pid, _)| pid)
            .unwrap_or_default()
    }

    /// A new pane showing a placeholder, as the lead opens one before it starts the teammate.
    fn open(&self) -> String {
        let out = self.tmux.cmd([
            "split-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            "lead",
            "sleep 600",
        ]);
        assert_eq!(out.code, 0, "{out:?}");
        self.tmux.cmd(["select-layout", "-t", "lead", "tiled"]);
        out.stdout.trim().to_string()
    }
}

impl Drop for Panes<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for (pane, pid, dead) in self.list() {
                // The screen's last lines with text: a log cut to its tail keeps the failure.
                let screen = self.tmux.cmd(["capture-pane", "-p", "-t", &pane]).stdout;
                let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
                let screen = lines[lines.len().saturating_sub(8)..].join("\n");
                eprintln!(
                    "--- pane {pane} (pid {pid}, dead {dead}): {:?}\n{screen}",
                    argv(&pid)
                );
            }
        }
        for (_, pid, _) in self.list() {
            if let Ok(pid) = pid.parse::<i32>() {
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

#[test]
fn claude_made_teammates_are_found_by_their_process_and_only_their_panes_are_closed() {
    each_claude(scenario);
}

fn scenario(claude: &Installed) {
    let api = FakeApi::start(|_| Reply::text("ready"));
    let env = Env::new();
    let tmux = Tmux::new();
    let work = env.root().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let work = work.canonicalize().unwrap();
    seed_claude_config(env.root(), &work);
    let root = env.root().canonicalize().unwrap();

    // A shell that forks its command rather than exec it (as fish does): started through it,
    // claude is the pane process's child, not the pane process.
    let forking = env.path("forking-sh");
    std::fs::write(&forking, "#!/bin/sh\n/bin/sh \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&forking, std::fs::Permissions::from_mode(0o755)).unwrap();
    let new = tmux.cmd([
        "new-session",
        "-d",
        "-s",
        "lead",
        "-x",
        "200",
        "-y",
        "50",
        "sleep 600",
    ]);
    assert_eq!(new.code, 0, "{new:?}");
    tmux.cmd([
        "set-option",
        "-g",
        "default-shell",
        forking.to_str().unwrap(),
    ]);
    let panes = Panes { tmux: &tmux };

    // The teammate command the lead builds (`cd <cwd> && env <vars> <claude> <flags>`).
    let mut vars = vec![
        "CLAUDECODE=1".to_string(),
        "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1".into(),
        format!("CLAUDE_CONFIG_DIR={}", quoted(root.to_str().unwrap())),
        format!("HOME={}", quoted(root.to_str().unwrap())),
    ];
    for (k, v) in teammate_env(&api).as_object().unwrap() {
        vars.push(format!("{k}={}", quoted(v.as_str().unwrap())));
    }
    let command = |name: &str, exec: &str| {
        format!(
            "cd {} && {exec}env {} {} --agent-id {name}@{TEAM} --agent-name {name} --team-name \
             {TEAM} --agent-color blue --parent-session-id {LEAD_SESSION} --permission-mode \
             default",
            quoted(work.to_str().unwrap()),
            vars.join(" "),
            quoted(claude.bin.to_str().unwrap()),
        )
    };
    let coder = panes.open();
    let researcher = panes.open();
    // A process that names coder of this team but runs against another config directory.
    let decoy = panes.open();
    let work_s = work.to_str().unwrap();
    std::fs::create_dir_all(env.path(&format!("teams/{TEAM}/inboxes"))).unwrap();
    std::fs::write(
        env.path(&format!("teams/{TEAM}/config.json")),
        roster(work_s, &[("coder", &coder), ("researcher", &researcher)]).to_string(),
    )
    .unwrap();
    let inbox = |name: &str| env.path(&format!("teams/{TEAM}/inboxes/{name}.json"));
    for name in ["coder", "researcher"] {
        let prompt = json!([{"from": "team-lead", "text": format!("{name}: wait for work"),
                             "timestamp": "2026-01-01T00:00:00.000Z", "read": false}]);
        std::fs::write(inbox(name), prompt.to_string()).unwrap();
    }
    std::fs::write(inbox("team-lead"), "[]").unwrap();
    for pane in [&coder, &researcher, &decoy] {
        tmux.cmd(["set-option", "-p", "-t", pane, "remain-on-exit", "failed"]);
    }
    // 2.1.328's way, through the default shell; 2.1.329's for a command with `$`, `!` or `\`.
    tmux.cmd([
        "respawn-pane",
        "-k",
        "-t",
        &coder,
        "--",
        &command("coder", ""),
    ]);
    tmux.cmd([
        "respawn-pane",
        "-k",
        "-t",
        &researcher,
        "--",
        "/bin/sh",
        "-c",
        &command("researcher", "exec "),
    ]);
    let elsewhere = env.path("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    tmux.cmd([
        "respawn-pane",
        "-k",
        "-t",
        &decoy,
        "--",
        "env",
        &format!("CLAUDE_CONFIG_DIR={}", elsewhere.display()),
        "/bin/sh",
        "-c",
        "sleep 600; :",
        "sh",
        "--agent-id",
        &format!("coder@{TEAM}"),
        "--team-name",
        TEAM,
    ]);

    let idle = |name: &str| {
        let lead: Vec<Value> =
            serde_json::from_slice(&std::fs::read(inbox("team-lead")).unwrap()).unwrap_or_default();
        lead.iter().any(|m| {
            m["from"] == name
                && m["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("idle_notification"))
        })
    };
    // Claude Code rewrites its roster in place, so a read can meet it half written: such a read
    // says nothing yet, and the next look reads it whole.
    let roster = || -> Option<Value> {
        let bytes = std::fs::read(env.path(&format!("teams/{TEAM}/config.json"))).ok()?;
        serde_json::from_slice(&bytes).ok()
    };
    let roster_idle = |name: &str| roster().is_some_and(|c| member(&c, name)["isActive"] == false);
    eventually(
        WAIT,
        "both teammates idle, in the lead's inbox and the roster",
        || {
            ["coder", "researcher"]
                .iter()
                .all(|n| idle(n) && roster_idle(n))
                .then_some(())
        },
    );
    // The watched things run, each the way it was started: coder under a shell that forked,
    // researcher exec'd by /bin/sh, the decoy with coder's flags.
    let coder_argv = argv(&panes.pid(&coder));
    assert!(
        coder_argv[0] == "/bin/sh" && !names(&coder_argv, &format!("coder@{TEAM}")),
        "coder's pane process is the forking shell: {coder_argv:?}"
    );
    assert!(names(
        &argv(&panes.pid(&researcher)),
        &format!("researcher@{TEAM}")
    ));
    assert!(names(&argv(&panes.pid(&decoy)), &format!("coder@{TEAM}")));

    let swarm = |args: &[&str]| {
        env.swarm(args)
            .env("SWARM_TEAM", TEAM)
            .env("SWARM_TMUX_SOCKET", &tmux.socket)
    };
    let socket = tmux
        .cmd(["display", "-p", "#{socket_path},#{pid},0"])
        .stdout;
    let status = env
        .swarm(["--json", "status"])
        .env("SWARM_TEAM", TEAM)
        .env("TMUX", socket.trim())
        .ok()
        .json();
    for name in ["coder", "researcher"] {
        let m = member(&status, name);
        // Found running, owning no task: idle (the one member state, issue 19 item 3).
        assert_eq!(m["state"], "idle", "{status}");
    }
    let text = swarm(&["status"]).ok().stdout;
    let line = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(
        line("coder").split_whitespace().nth(4),
        Some("idle"),
        "{text}"
    );
    // Outside tmux, swarm looks at no server: unknown, as before.
    let outside = env
        .swarm(["--json", "status"])
        .env("SWARM_TEAM", TEAM)
        .ok()
        .json();
    assert_eq!(member(&outside, "coder")["state"], "unknown", "{outside}");

    // --force closes coder's pane, and only that pane.
    let out = swarm(&["shutdown", "--force", "coder", "--timeout", "1"]).run_within(WAIT);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!panes.alive(&coder), "coder's pane still runs: {out:?}");
    for pane in [&researcher, &decoy] {
        assert!(panes.alive(pane), "{pane} was closed too");
    }
    let config = eventually(WAIT, "the roster read whole", roster);
    assert_eq!(member(&config, "coder")["isActive"], false);
    // `swarm kill` finds researcher the same way; the decoy survives both.
    swarm(&["kill", "researcher"]).ok();
    assert!(!panes.alive(&researcher));
    assert!(panes.alive(&decoy), "the decoy was closed");
    assert!(panes.alive("%0"), "the lead's pane was closed");
}
