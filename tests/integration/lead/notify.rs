//! When a teammate waits on the person: a permission or plan request left open at the console
//! for `--notify-after` seconds rings the bell, shows a message on the tmux client of the
//! console's own session (and no other), and runs Claude Code's `Notification` hooks with its
//! JSON; one answered in time does none of it. The tmux tests run the console in a pane of a
//! private server and attach a real client to it from a pane of a second private server, whose
//! screen and the first server's message log (`show-messages`) show what the client was shown.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

const LONG: Duration = Duration::from_secs(60);

/// `from` asks the lead for Bash with `command` (filed, not waited on); returns its id.
fn ask(env: &Env, from: &str, command: &str) -> String {
    let input = json!({ "command": command }).to_string();
    let out = env
        .swarm([
            "--json",
            "permission",
            "request",
            "--tool",
            "Bash",
            "--from",
            from,
            "--input",
            &input,
        ])
        .ok();
    out.json()["id"].as_str().unwrap().to_string()
}

/// A console running `swarm lead ARGS` in session `lead` of `inner`, with a client attached to
/// that session from a pane of `outer` (window 1 of `lead` on its screen, so the console's
/// window 0 rings in the background), and a client of session `other` from a second pane.
struct Consoles {
    inner: Tmux,
    outer: Tmux,
}

impl Consoles {
    fn start(env: &Env, args: &[&str]) -> Consoles {
        let (inner, outer) = (Tmux::new(), Tmux::new());
        let mut cmd = vec![
            "new-session",
            "-d",
            "-s",
            "lead",
            "-x",
            "200",
            "-y",
            "20",
            "env",
        ];
        let vars: Vec<String> = env
            .command("true")
            .get_envs()
            .filter_map(|(k, v)| Some(format!("{}={}", k.to_str()?, v?.to_str()?)))
            .collect();
        cmd.extend(vars.iter().map(String::as_str));
        cmd.extend([BIN, "lead"]);
        cmd.extend(args);
        inner.cmd(&cmd);
        inner.cmd(["new-window", "-d", "-t", "lead:1", "sleep", "600"]);
        inner.cmd(["select-window", "-t", "lead:1"]);
        inner.cmd(["new-session", "-d", "-s", "other", "sleep", "600"]);
        let attach = |target: &str| {
            let sh = format!("env -u TMUX tmux -L {} attach -t {target}", inner.socket);
            vec!["-x", "200", "-y", "20", "sh", "-c"]
                .into_iter()
                .map(String::from)
                .chain([sh])
                .collect::<Vec<_>>()
        };
        let mut first = vec![
            "new-session".to_string(),
            "-d".into(),
            "-s".into(),
            "o".into(),
        ];
        first.extend(attach("lead"));
        outer.cmd(&first);
        let mut second = vec![
            "new-window".to_string(),
            "-d".into(),
            "-t".into(),
            "o:1".into(),
        ];
        second.extend(attach("other").into_iter().skip(4));
        outer.cmd(&second);
        let consoles = Consoles { inner, outer };
        eventually(LONG, "both clients attached", || {
            (consoles.clients().len() == 2).then_some(())
        });
        eventually(LONG, "the console to start", || {
            consoles
                .console()
                .contains("lead console for team t")
                .then_some(())
        });
        consoles
    }

    /// `(client name, session name)` of every client attached to `inner`.
    fn clients(&self) -> Vec<(String, String)> {
        let out = self
            .inner
            .cmd(["list-clients", "-F", "#{client_name}\t#{session_name}"]);
        out.stdout
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(c, s)| (c.to_string(), s.to_string()))
            .collect()
    }

    fn client_of(&self, session: &str) -> String {
        let clients = self.clients();
        let found = clients.iter().find(|(_, s)| s == session);
        found.expect("a client of the session").0.clone()
    }

    /// What the console's pane shows.
    fn console(&self) -> String {
        self.inner
            .cmd(["capture-pane", "-p", "-J", "-t", "lead:0"])
            .stdout
    }

    /// The messages `inner` showed on clients: `(client, text)` from its message log.
    fn shown(&self) -> Vec<(String, String)> {
        let log = self.inner.cmd(["show-messages"]).stdout;
        log.lines()
            .filter_map(|l| l.split_once(": ").map(|(_, rest)| rest))
            .filter_map(|rest| rest.split_once(" message: "))
            .map(|(c, t)| (c.to_string(), t.to_string()))
            .collect()
    }

    /// What the client attached to `lead` has on its screen, status line included.
    fn lead_client_screen(&self) -> String {
        self.outer.cmd(["capture-pane", "-p", "-t", "o:0"]).stdout
    }

    fn bell_rang(&self) -> bool {
        let flag = self.inner.cmd([
            "display-message",
            "-p",
            "-t",
            "lead:0",
            "#{window_bell_flag}",
        ]);
        flag.stdout.trim() == "1"
    }
}

#[test]
fn a_request_left_open_rings_and_is_shown_on_the_consoles_own_client_only() {
    let env = Env::with_team(&["coder"]);
    let consoles = Consoles::start(&env, &["--notify-after", "1"]);
    assert!(!consoles.bell_rang(), "no bell before any request");
    let id = ask(&env, "coder", "make test");
    let text = format!("swarm: coder waits for your decision on Bash: make test (request {id})");
    eventually(LONG, "the message on the lead's client", || {
        consoles.lead_client_screen().contains(&text).then_some(())
    });
    let lead_client = consoles.client_of("lead");
    assert_eq!(consoles.shown(), [(lead_client, text.clone())]);
    assert!(consoles.bell_rang(), "the console's window rang");
    assert!(consoles.console().contains(&text["swarm: ".len()..]));
}

#[test]
fn what_a_request_says_reaches_tmux_as_text_never_as_a_format_or_a_command() {
    let env = Env::with_team(&["coder"]);
    let marker = env.path("ran");
    let consoles = Consoles::start(&env, &["--notify-after", "1"]);
    let hostile = format!(
        "#(touch {}) #{{pane_id}} #[fg=red]\x1b[2J\x07;",
        marker.display()
    );
    let id = ask(&env, "coder", &hostile);
    // On the screen as it was written; in the log as tmux keeps it for drawing (`##[` is how
    // tmux itself writes a `#[` that is no style).
    let shown = format!(
        "swarm: coder waits for your decision on Bash: #(touch {}) #{{pane_id}} #[fg=red]\\e[2J\\x07; (request {id})",
        marker.display()
    );
    eventually(LONG, "the message on the lead's client", || {
        consoles.lead_client_screen().contains(&shown).then_some(())
    });
    let logged = shown.replace("#[", "##[");
    assert_eq!(consoles.shown(), [(consoles.client_of("lead"), logged)]);
    assert!(!marker.exists(), "tmux ran the #(...) in a request");
}

/// The user's Claude Code settings with a `Notification` hook that appends its stdin to
/// `notified.jsonl`, and one for `idle_prompt` only, which must not run.
fn notification_hook(env: &Env) -> std::path::PathBuf {
    let dir = env.path("user-claude");
    std::fs::create_dir_all(&dir).unwrap();
    let log = env.path("notified.jsonl");
    let append = format!("cat >> '{}'; echo >> '{}'", log.display(), log.display());
    let settings = json!({"hooks": {"Notification": [
        {"hooks": [{"type": "command", "command": append, "timeout": 30}]},
        {"matcher": "idle_prompt", "hooks": [{"type": "command", "command": "touch idle-ran"}]}]}});
    std::fs::write(
        dir.join("settings.json"),
        serde_json::to_vec_pretty(&settings).unwrap(),
    )
    .unwrap();
    log
}

fn notified(log: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_notification_hook_gets_claude_codes_json_for_a_permission_and_a_plan() {
    let env = Env::with_team(&["coder"]);
    let log = notification_hook(&env);
    let cwd = env.path("proj");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut lead = env
        .swarm(["lead", "--notify-after", "0.5"])
        .env("CLAUDE_CONFIG_DIR", env.path("user-claude"))
        .current_dir(&cwd)
        .live();
    lead.expect("lead console for team t");
    let id = ask(&env, "coder", "make test");
    let line = lead.expect("waits for your decision");
    assert_eq!(
        line,
        format!("\x07🔔 coder waits for your decision on Bash: make test (request {id})")
    );
    eventually(LONG, "the hook's input", || {
        (notified(&log).len() == 1).then_some(())
    });
    let session = read_json(&env.path("teams/t/config.json"))["leadSessionId"].clone();
    let cwd = cwd.canonicalize().unwrap().display().to_string();
    assert_eq!(
        notified(&log),
        [
            json!({"session_id": session, "transcript_path": "", "cwd": cwd,
            "hook_event_name": "Notification", "message": "coder needs permission for Bash",
            "notification_type": "worker_permission_prompt"})
        ]
    );

    lead.type_line("y");
    lead.expect("approved coder's use of Bash");
    let plan = json!({"type": "plan_approval_request", "from": "coder",
        "timestamp": "2026-01-01T00:00:01.000Z", "planFilePath": "/tmp/plan.md",
        "planContent": "1. parse\n2. test", "requestId": "plan_approval-1@coder@t"});
    env.swarm([
        "send",
        "--from",
        "coder",
        "--to",
        "team-lead",
        &plan.to_string(),
    ])
    .ok();
    lead.expect("coder waits for your decision on its plan: 1. parse");
    eventually(LONG, "the plan's hook input", || {
        (notified(&log).len() == 2).then_some(())
    });
    assert_eq!(
        notified(&log)[1],
        json!({"session_id": session, "transcript_path": "", "cwd": cwd,
            "hook_event_name": "Notification",
            "message": "coder needs your input: approve or reject its plan",
            "notification_type": "agent_needs_input"})
    );
    assert!(
        !env.path("proj/idle-ran").exists(),
        "the idle_prompt hook ran"
    );
}

#[test]
fn a_request_answered_within_the_delay_is_never_told() {
    let env = Env::with_team(&["coder"]);
    let log = notification_hook(&env);
    let mut lead = env
        .swarm(["lead", "--notify-after", "10"])
        .env("CLAUDE_CONFIG_DIR", env.path("user-claude"))
        .live();
    lead.expect("lead console for team t");
    let answered = ask(&env, "coder", "make answered");
    lead.expect(&format!("answer y to approve {answered}"));
    lead.type_line("y");
    lead.expect("approved coder's use of Bash");
    // The console goes on, and would have told: the next request, left open, is.
    let left = ask(&env, "coder", "make left");
    let told = lead.expect("waits for your decision");
    assert!(told.contains(&left), "{told}");
    eventually(LONG, "the hook's input", || {
        (!notified(&log).is_empty()).then_some(())
    });
    lead.type_line("/status");
    lead.expect("coder");
    assert!(
        !lead
            .seen
            .iter()
            .any(|l| l.contains("make answered") && l.contains("waits")),
        "the answered request was told: {:?}",
        lead.seen
    );
    assert_eq!(notified(&log).len(), 1, "{:?}", notified(&log));
}
