//! swarm against the real Claude Code binary: `claude` teammates launched by `swarm launch` in
//! panes of a private tmux server, talking to a scripted Messages API on loopback
//! ([`fake_api`]), driven through swarm's own commands.
//!
//! The versions proven are those of `versions.txt` ([`versions`]): `scripts/test` installs each
//! from npm and every scenario runs against each ([`versions::each_claude`]). Nothing is
//! skipped. Each scenario waits at most [`WAIT`] for each step (no timing asserts), and on drop
//! kills its panes' processes by pid and its tmux server by socket; a failing scenario prints
//! the pane and what the binary sent to the API.

mod claude_config;
mod claude_led;
mod contained;
mod dispatch;
pub(crate) mod fake_api;
mod memory;
mod messages;
pub(crate) mod other_clis;
mod permissions;
mod plans;
mod restart;
mod resume;
mod tasks;
mod usage;
pub(crate) mod versions;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;
use fake_api::{FakeApi, Reply, Turn};
use versions::Installed;

/// The longest any one step may take: a real binary on a loaded 2-core machine can be slow to
/// start and polls its inbox once a second.
const WAIT: Duration = Duration::from_secs(120);

/// The dummy key the teammate uses against the fake API; its last 20 characters are marked
/// approved in the seeded config, so Claude does not ask whether to use it.
const API_KEY: &str = "sk-ant-api03-swarm-interop-0123456789";

/// How to launch the one teammate, `coder`.
struct Launch<'a> {
    prompt: &'a str,
    mode: &'a str,
    plan_mode_required: bool,
    /// Subjects of tasks the swarm file creates.
    tasks: &'a [&'a str],
    /// Signed in with this OAuth token in the teammate's `~/.claude/.credentials.json`
    /// instead of the API key.
    oauth: Option<&'a str>,
}

impl Launch<'_> {
    fn new(prompt: &str) -> Launch<'_> {
        Launch {
            prompt,
            mode: "default",
            plan_mode_required: false,
            tasks: &[],
            oauth: None,
        }
    }
}

/// A team `t` with one real claude teammate `coder` in a tmux pane, working in `work/`.
struct Team {
    /// The Claude Code release this team runs.
    version: &'static str,
    api: FakeApi,
    tmux: Tmux,
    env: Env,
    work: PathBuf,
    /// What `swarm launch` said on stderr.
    launch_stderr: String,
}

impl Team {
    /// Starts the fake API with `script` and launches `coder` against it.
    fn launch(
        claude: &Installed,
        launch: Launch,
        script: impl Fn(&Turn) -> Reply + Send + Sync + 'static,
    ) -> Team {
        Team::launch_in(claude, launch, "work", |_, _| {}, script)
    }

    /// [`Team::launch`] with the work directory named `work` under the root, and `setup` run
    /// on it before anything starts.
    fn launch_in(
        claude: &Installed,
        launch: Launch,
        work: &str,
        setup: impl FnOnce(&Env, &Path),
        script: impl Fn(&Turn) -> Reply + Send + Sync + 'static,
    ) -> Team {
        let api = FakeApi::start(script);
        let env = Env::new();
        let tmux = Tmux::new();
        std::fs::create_dir_all(env.root().join(work)).unwrap();
        let work = env.root().join(work).canonicalize().unwrap();
        seed_claude_config(env.root(), &work);
        let mut teammate_env = teammate_env(&api);
        if let Some(token) = launch.oauth {
            teammate_env
                .as_object_mut()
                .unwrap()
                .remove("ANTHROPIC_API_KEY");
            // The launcher's home, which the tmux server it starts passes on to the teammate.
            let dir = env.path("state/home/.claude");
            std::fs::create_dir_all(&dir).unwrap();
            let far = 4_102_444_800_000u64; // 2100
            let login = json!({"claudeAiOauth": {"accessToken": token,
                "refreshToken": "sk-ant-ort01-interop", "expiresAt": far,
                "scopes": ["user:inference", "user:profile"], "subscriptionType": "max"}});
            std::fs::write(dir.join(".credentials.json"), login.to_string()).unwrap();
        }
        setup(&env, &work);
        let file = env.path("team.json");
        std::fs::write(
            &file,
            json!({"team": "t", "cwd": work, "teammates": [{
                "name": "coder", "prompt": launch.prompt, "permissionMode": launch.mode,
                "planModeRequired": launch.plan_mode_required, "env": teammate_env}],
                "tasks": launch.tasks.iter().map(|s| json!({"subject": s})).collect::<Vec<_>>()})
            .to_string(),
        )
        .unwrap();
        let args = vec![
            "launch".to_string(),
            file.display().to_string(),
            "--agent".into(),
            "claude".into(),
            "--backend".into(),
            "tmux".into(),
            "--no-lead-pane".into(),
        ];
        let mut cmd = env
            .swarm(&args)
            .env("SWARM_TMUX_SOCKET", &tmux.socket)
            .env("CLAUDE_CODE_TEAMMATE_COMMAND", &claude.bin);
        for (k, v) in teammate_env.as_object().unwrap() {
            cmd = cmd.env(k, v.as_str().unwrap());
        }
        let out = cmd.ok();
        Team {
            version: claude.version,
            api,
            tmux,
            env,
            work,
            launch_stderr: out.stderr,
        }
    }

    fn swarm<I, S>(&self, args: I) -> Swarm
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.env
            .swarm(args)
            .env("SWARM_TEAM", "t")
            .env("SWARM_TMUX_SOCKET", &self.tmux.socket)
    }

    /// Every entry of `name`'s inbox.
    fn inbox(&self, name: &str) -> Vec<Value> {
        match std::fs::read(self.env.path(&format!("teams/t/inboxes/{name}.json"))) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
            Err(_) => vec![],
        }
    }

    /// Protocol messages of `kind` in `name`'s inbox, each with its envelope as `_envelope`.
    fn protocol(&self, name: &str, kind: &str) -> Vec<Value> {
        self.inbox(name)
            .into_iter()
            .filter_map(|m| {
                let mut p: Value = serde_json::from_str(m["text"].as_str()?).ok()?;
                (p["type"] == kind).then(|| {
                    p["_envelope"] = m;
                    p
                })
            })
            .collect()
    }

    /// Waits for the first `kind` message in the lead's inbox.
    #[track_caller]
    fn await_lead(&self, kind: &str) -> Value {
        self.await_lead_nth(kind, 0)
    }

    #[track_caller]
    fn await_lead_nth(&self, kind: &str, n: usize) -> Value {
        self.eventually(&format!("{kind} #{n} in team-lead's inbox"), || {
            self.protocol("team-lead", kind).into_iter().nth(n)
        })
    }

    /// [`eventually`] with [`WAIT`], showing the pane and the API log if it times out.
    #[track_caller]
    fn eventually<T>(&self, what: &str, f: impl FnMut() -> Option<T>) -> T {
        eventually(WAIT, what, f)
    }

    fn task(&self, id: &str) -> Value {
        read_json_in_place(&self.env.path(&format!("tasks/t/{id}.json")))
    }

    fn roster_member(&self, name: &str) -> Value {
        member(
            &read_json_in_place(&self.env.path("teams/t/config.json")),
            name,
        )
        .clone()
    }

    /// What the pane shows now.
    fn pane(&self) -> String {
        self.tmux
            .cmd(["capture-pane", "-p", "-t", &self.pane_id()])
            .stdout
    }

    fn pane_id(&self) -> String {
        self.roster_member("coder")["tmuxPaneId"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The pids of the processes in this team's panes, as tmux reports them.
    fn pane_pids(&self) -> Vec<i32> {
        self.tmux
            .cmd(["list-panes", "-a", "-F", "#{pane_pid}"])
            .stdout
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- coder's pane (Claude Code {}) ---\n{}",
                self.version,
                self.pane()
            );
            for (i, body) in self.api.turns().iter().enumerate() {
                let new = fake_api::Turn { body }.last_user_text();
                let cut: String = new.chars().take(1500).collect();
                eprintln!("--- API turn {i}: new input ---\n{cut}");
            }
            eprintln!("--- team-lead's inbox ---\n{:#?}", self.inbox("team-lead"));
            eprintln!("--- coder's inbox ---\n{:#?}", self.inbox("coder"));
            eprintln!(
                "--- roster ---\n{}",
                read_json(&self.env.path("teams/t/config.json"))
            );
        }
        // By pid first (the processes tmux started for this team), then the server by socket.
        for pid in self.pane_pids() {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The environment a claude teammate gets: the fake API, no telemetry, error reports, update
/// checks or other traffic, and the task tools on whatever model family is reported
/// (`CLAUDE_CODE_ENABLE_TODO_TOOLS`, issue 15 item 5: swarm itself sets it once that lands).
pub(crate) fn teammate_env(api: &FakeApi) -> Value {
    json!({
        "ANTHROPIC_BASE_URL": api.base_url(),
        "ANTHROPIC_API_KEY": API_KEY,
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1",
    })
}

/// The config a first start would ask about, answered: onboarding done, the API key approved,
/// the work directory trusted. `swarm launch` points `CLAUDE_CONFIG_DIR` at the store root.
pub(crate) fn seed_claude_config(root: &Path, work: &Path) {
    let key_tail = &API_KEY[API_KEY.len() - 20..];
    let config = json!({
        "hasCompletedOnboarding": true,
        "theme": "dark",
        "numStartups": 1,
        "customApiKeyResponses": {"approved": [key_tail], "rejected": []},
        "projects": {work.display().to_string(): {
            "hasTrustDialogAccepted": true,
            "hasCompletedProjectOnboarding": true,
            "allowedTools": []}}
    });
    std::fs::write(root.join(".claude.json"), config.to_string()).unwrap();
}

/// Every id starting with `prefix` in `text` (request ids in messages the model is shown).
pub(crate) fn find_ids<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.match_indices(prefix)
        .map(|(start, _)| {
            let rest = &text[start..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || "-_@.".contains(c)))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}
