//! `swarm top` for real: the dashboard runs in a pane of a private tmux server, the test reads
//! its screen with `capture-pane -p` and types with `send-keys`, against a team launched into
//! the same server (shell agents, the real teammate runtime). Also `swarm status --watch`,
//! the line printer `top` falls back to without a terminal.

mod lines;

use std::time::Duration;

use serde_json::Value;

use crate::support::*;

/// Generous: the machine running the suite may be loaded (nothing is timed, only waited for).
const WAIT: Duration = Duration::from_secs(120);

/// A `swarm top` running in a session of its own on a private tmux server. The pane's shell prints
/// `BEFORE-TOP`, runs the dashboard, then prints `TOP-EXIT <code>` and the terminal modes
/// (`stty -a`), so a test can see what the dashboard left behind.
pub(crate) struct Dashboard<'a> {
    tmux: &'a Tmux,
    /// The dashboard's pane (`%N`): a name like `top` could be read by tmux as a position.
    pane: String,
}

fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl<'a> Dashboard<'a> {
    pub(crate) fn start(env: &Env, tmux: &'a Tmux, extra_env: &[(&str, &str)]) -> Dashboard<'a> {
        let root = env.root().to_str().unwrap();
        let mut vars = format!(
            "SWARM_ROOT={} SWARM_TEAM=t XDG_STATE_HOME={}",
            quoted(root),
            quoted(&format!("{root}/state"))
        );
        for (k, v) in extra_env {
            vars.push_str(&format!(" {k}={}", quoted(v)));
        }
        // TMUX unset: the dashboard is a program on a terminal, as when run outside tmux.
        let script = format!(
            "echo BEFORE-TOP; env -u TMUX -u TMUX_PANE {vars} {} top; echo TOP-EXIT $?; stty -a; \
             sleep 600",
            quoted(BIN)
        );
        let out = tmux.cmd([
            "new-session",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-x",
            "160",
            "-y",
            "50",
            &script,
        ]);
        assert_eq!(out.code, 0, "new-session: {}", out.stderr);
        let dash = Dashboard {
            tmux,
            pane: out.stdout.trim().to_string(),
        };
        dash.wait_for("the first frame", |s| s.contains("swarm top: team "));
        dash
    }

    fn screen(&self) -> String {
        self.tmux
            .cmd(["capture-pane", "-p", "-t", &self.pane])
            .stdout
    }

    #[track_caller]
    pub(crate) fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        let found = eventually_or(WAIT, || {
            last = self.screen();
            ok(&last).then(|| last.clone())
        });
        found.unwrap_or_else(|| panic!("the dashboard never showed {what}; it shows:\n{last}"))
    }

    /// Keys by tmux name (`j`, `Enter`, `Tab`).
    pub(crate) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.pane];
        args.extend_from_slice(keys);
        assert_eq!(self.tmux.cmd(args).code, 0);
    }

    /// Text typed as it is.
    fn type_text(&self, text: &str) {
        assert_eq!(
            self.tmux
                .cmd(["send-keys", "-t", &self.pane, "-l", text])
                .code,
            0
        );
    }

    /// The dashboard's pid: the child of the pane's shell (`env` became `swarm`).
    fn pid(&self) -> u32 {
        let shell = self
            .tmux
            .cmd(["display-message", "-p", "-t", &self.pane, "#{pane_pid}"])
            .stdout
            .trim()
            .to_string();
        let children =
            std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
        let pid: u32 = children.split_whitespace().next().unwrap().parse().unwrap();
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
        assert_eq!(comm.trim(), "swarm", "the pane's child is the dashboard");
        pid
    }

    /// After the dashboard exited: its code, and whether the terminal is back in cooked mode
    /// (`icanon` and `echo` on) with the screen from before it started.
    fn exit(&self) -> (i32, String) {
        let screen = self.wait_for("the shell after the dashboard", |s| {
            s.contains("TOP-EXIT") && s.contains("icanon")
        });
        let code = screen
            .lines()
            // A Ctrl-C typed earlier may be echoed in front (`^CTOP-EXIT 0`).
            .find_map(|l| l.split("TOP-EXIT ").nth(1))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        (code, screen)
    }
}

/// Like `eventually`, but gives up with `None` so the caller can say what it saw.
fn eventually_or<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = std::time::Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() > timeout {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The row of `name` in the members table.
fn row<'s>(screen: &'s str, name: &str) -> &'s str {
    screen
        .lines()
        .find(|l| {
            l.trim_start_matches(['│', '>', ' '])
                .starts_with(&format!("{name} "))
        })
        .unwrap_or("")
}

#[track_caller]
fn assert_restored(screen: &str) {
    assert!(
        screen.contains("BEFORE-TOP"),
        "the screen from before is back:\n{screen}"
    );
    let modes: Vec<&str> = screen.split_whitespace().collect();
    assert!(
        modes.contains(&"icanon") && modes.contains(&"echo"),
        "raw mode is off again:\n{screen}"
    );
}

fn launch_shell_team(env: &Env, tmux: &Tmux) {
    env.swarm([
        "launch",
        "--agent",
        "shell",
        "--no-lead-pane",
        "--teammate",
        "coder=go",
        "--teammate",
        "tester=go",
    ])
    .env("SWARM_TMUX_SOCKET", &tmux.socket)
    .ok();
}

#[test]
fn the_dashboard_shows_the_team_and_approves_messages_attaches_and_shuts_down() {
    let env = Env::new();
    let tmux = Tmux::new();
    launch_shell_team(&env, &tmux);
    env.swarm(["task", "create", "build", "--description", "sleep 300"])
        .ok();
    env.swarm(["task", "create", "ship", "--blocked-by", "1"])
        .ok();
    let dash = Dashboard::start(&env, &tmux, &[]);

    // Members with their state (whoever took the build is busy, the other idle), the task DAG
    // with its progress.
    let screen = dash.wait_for("one teammate busy on the build, one idle", |s| {
        let rows = [row(s, "coder"), row(s, "tester")];
        rows.iter()
            .any(|r| r.contains(" busy ") && r.contains("#1 build"))
            && rows.iter().any(|r| r.contains(" idle "))
            && s.contains("0/2 done, 1 in progress, 0 available, 1 blocked")
    });
    assert!(
        row(&screen, "team-lead").contains("unknown (no pane)"),
        "a lead without a pane of its own:\n{screen}"
    );
    assert!(
        screen.contains("after #1"),
        "ship waits on build:\n{screen}"
    );

    // A permission request shows up, and `y` approves it: the requester gets the decision.
    let requester = env
        .swarm([
            "permission",
            "request",
            "--from",
            "coder",
            "--tool",
            "Bash",
            "--input",
            r#"{"command":"make"}"#,
            "--description",
            "run make",
            "--wait",
            "--timeout",
            "120",
        ])
        .spawn();
    dash.wait_for("the request", |s| s.contains("wants Bash: run make"));
    dash.keys(&["y"]);
    let out = wait_bounded(requester, WAIT, "the requester");
    assert_eq!(out.code, 0, "approved: {} {}", out.stdout, out.stderr);
    assert!(out.stdout.contains("approved"), "{}", out.stdout);
    dash.wait_for("the request gone", |s| {
        s.contains("approved coder's use of Bash")
            && s.contains("requests waiting for the lead (0)")
    });

    // `m` messages the selected member (rows: team-lead, coder, tester), signed as the lead.
    dash.keys(&["j", "m"]);
    dash.wait_for("the prompt", |s| s.contains("message to coder"));
    dash.type_text("hello from the dashboard");
    dash.keys(&["Enter"]);
    dash.wait_for("the message sent", |s| s.contains("sent to coder"));
    let inbox = read_json(&env.path("teams/t/inboxes/coder.json"));
    let sent = inbox
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["text"] == "hello from the dashboard")
        .unwrap_or_else(|| panic!("not in coder's inbox: {inbox}"));
    assert_eq!(sent["from"], "team-lead");
    assert!(sent["lead_sig"].is_string(), "signed as the lead: {sent}");

    // `a` attaches to coder's pane (a tmux client in the dashboard's pane, the only client of
    // this server), and detaching it brings the dashboard back.
    dash.keys(&["a"]);
    dash.wait_for("coder's pane", |s| {
        s.contains("coder of team t is up") && !s.contains("swarm top: team t")
    });
    let clients = tmux.cmd(["list-clients", "-F", "#{client_name}"]).stdout;
    let client = clients.lines().next().expect("the attached client");
    assert_eq!(tmux.cmd(["detach-client", "-t", client]).code, 0);
    dash.wait_for("the dashboard again", |s| {
        s.contains("swarm top: team t") && s.contains("back from coder")
    });

    // `s` then `y` shuts tester down through the handshake; its pane goes.
    dash.keys(&["j", "s"]);
    dash.wait_for("the question", |s| s.contains("shut tester down? y/n"));
    dash.keys(&["y"]);
    dash.wait_for("tester stopped", |s| {
        s.contains("tester: approved the shutdown; stopped")
            && row(s, "tester").contains(" stopped")
    });
    let config = read_json(&env.path("teams/t/config.json"));
    assert_eq!(member(&config, "tester")["isActive"], false);

    dash.keys(&["q"]);
    let (code, screen) = dash.exit();
    assert_eq!(code, 0, "{screen}");
    assert_restored(&screen);
}

#[test]
fn attaching_to_an_in_process_teammate_follows_its_log_until_ctrl_c() {
    let env = Env::new();
    let tmux = Tmux::new();
    let _supervisor = KillOnDrop(
        env.swarm([
            "launch",
            "--backend",
            "in-process",
            "--agent",
            "shell",
            "--teammate",
            "coder=go",
        ])
        .spawn(),
    );
    // The dashboard of a team that does not exist yet refuses to start: wait for the launch to
    // have written its roster with the teammate in it.
    eventually(Duration::from_secs(30), "the launch's roster", || {
        let config = std::fs::read(env.path("teams/t/config.json")).ok()?;
        let config: Value = serde_json::from_slice(&config).ok()?;
        config["members"]
            .as_array()?
            .iter()
            .any(|m| m["name"] == "coder")
            .then_some(())
    });
    let dash = Dashboard::start(&env, &tmux, &[]);
    dash.wait_for("coder idle", |s| row(s, "coder").contains(" idle "));
    dash.keys(&["j", "a"]);
    dash.wait_for("coder's log", |s| {
        s.contains("coder of team t is up") && !s.contains("swarm top: team t")
    });
    // Ctrl-C reaches the whole foreground group: it ends the follow, not the dashboard.
    dash.keys(&["C-c"]);
    dash.wait_for("the dashboard again", |s| s.contains("back from coder"));
    dash.keys(&["q"]);
    let (code, screen) = dash.exit();
    assert_eq!(code, 0, "{screen}");
}

/// The `text` of the first protocol message from the lead in `name`'s inbox, parsed.
fn answer_in_inbox(env: &Env, name: &str) -> Value {
    let inbox = read_json(&env.path(&format!("teams/t/inboxes/{name}.json")));
    inbox
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["from"] == "team-lead")
        .find_map(|m| serde_json::from_str(m["text"].as_str()?).ok())
        .unwrap_or_else(|| panic!("no answer in {name}'s inbox: {inbox}"))
}

#[test]
fn requests_sent_only_as_messages_are_answered_from_the_dashboard() {
    let env = Env::with_team(&["planner", "editor"]);
    let tmux = Tmux::new();
    // A plan (plan mode), and a Claude Code teammate's permission request, which comes as a
    // message with no pending file.
    let plan = r#"{"type":"plan_approval_request","from":"planner","timestamp":"2026-01-01T00:00:00.000Z","planFilePath":"/tmp/plan.md","planContent":"1. read\n2. write","requestId":"plan_approval-1@planner@t"}"#;
    env.swarm(["send", "--from", "planner", "--to", "team-lead", plan])
        .ok();
    let permission = r#"{"type":"permission_request","request_id":"perm-1-claude","agent_id":"editor","tool_name":"Edit","tool_use_id":"toolu_1","description":"edit main.rs","input":{"file_path":"main.rs"},"permission_suggestions":[]}"#;
    env.swarm(["send", "--from", "editor", "--to", "team-lead", permission])
        .ok();
    let dash = Dashboard::start(&env, &tmux, &[]);
    dash.wait_for("both requests", |s| {
        s.contains("submitted a plan: 1. read") && s.contains("wants Edit: edit main.rs")
    });
    // Permissions come first: `y` approves the edit.
    dash.keys(&["y"]);
    dash.wait_for("the edit approved", |s| {
        s.contains("approved editor's use of Edit")
            && s.contains("requests waiting for the lead (1)")
    });
    let answer = answer_in_inbox(&env, "editor");
    assert_eq!(answer["type"], "permission_response");
    assert_eq!(answer["request_id"], "perm-1-claude");
    assert_eq!(answer["subtype"], "success");
    dash.keys(&["n"]);
    dash.type_text("write tests first");
    dash.keys(&["Enter"]);
    dash.wait_for("the plan answered", |s| {
        s.contains("rejected planner's plan") && s.contains("requests waiting for the lead (0)")
    });
    let answer = answer_in_inbox(&env, "planner");
    assert_eq!(answer["type"], "plan_approval_response");
    assert_eq!(answer["requestId"], "plan_approval-1@planner@t");
    assert_eq!(answer["approved"], false);
    assert_eq!(answer["feedback"], "write tests first");
    dash.keys(&["q"]);
    assert_eq!(dash.exit().0, 0);
}

/// CPU ticks the dashboard uses over a quiet spell, with the team's files untouched.
fn quiet_ticks(dash: &Dashboard) -> u64 {
    let pid = dash.pid();
    // Let the first frames settle.
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(3));
    cpu_ticks(pid) - before
}

#[test]
fn an_idle_dashboard_uses_no_cpu_and_still_redraws_on_a_change() {
    // Negative control: with file events off and a 1 ms re-scan the same measurement does see
    // the dashboard working, so a zero below means something.
    {
        let env = Env::with_team(&["coder"]);
        let tmux = Tmux::new();
        let busy = Dashboard::start(
            &env,
            &tmux,
            &[("SWARM_NO_FS_EVENTS", "1"), ("SWARM_RESCAN_MS", "1")],
        );
        let ticks = quiet_ticks(&busy);
        assert!(
            ticks > 5,
            "a dashboard re-reading every 1 ms used {ticks} ticks"
        );
    }
    let env = Env::with_team(&["coder"]);
    let tmux = Tmux::new();
    let dash = Dashboard::start(&env, &tmux, &[]);
    let ticks = quiet_ticks(&dash);
    assert!(
        ticks <= 1,
        "an idle dashboard used {ticks} CPU ticks in 3 s"
    );
    // Alive and watching: a task created now is on screen.
    env.swarm(["task", "create", "after the quiet"]).ok();
    dash.wait_for("the new task", |s| s.contains("after the quiet"));
    dash.keys(&["q"]);
    assert_eq!(dash.exit().0, 0);
}

#[test]
fn a_signal_ends_the_dashboard_with_the_terminal_restored() {
    for (signal, number) in [(libc::SIGTERM, 15), (libc::SIGINT, 2), (libc::SIGHUP, 1)] {
        let env = Env::with_team(&["coder"]);
        let tmux = Tmux::new();
        let dash = Dashboard::start(&env, &tmux, &[]);
        let pid = dash.pid();
        // SAFETY: signalling the dashboard this test started.
        unsafe {
            libc::kill(pid as i32, signal);
        }
        let (code, screen) = dash.exit();
        assert_eq!(code, 128 + number, "signal {number}:\n{screen}");
        assert_restored(&screen);
    }
}

#[test]
fn top_without_a_terminal_prints_lines_and_needs_an_existing_team() {
    let env = Env::with_team(&["coder"]);
    env.swarm(["task", "create", "build"]).ok();
    let mut top = env.swarm(["top"]).live();
    top.expect("coder: unknown (no pid recorded), task -, 0 unread");
    top.expect("task #1 available: build");
    env.swarm(["--team", "nope", "top"])
        .not_found("team \"nope\" does not exist");
}
