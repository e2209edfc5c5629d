//! `swarm demo`: the whole product in one command.
//!
//! Three built-in shell teammates work through a six-task DAG (three independent fetches, two
//! builds that each join two of them, one report that joins both builds) in the best backend
//! the machine has: a tmux window or session when tmux is there, supervised children when it is
//! not. The demo watches the shared task list, prints each task as it starts and finishes, shuts
//! the team down through the real handshake and then says where the files are, so the next
//! thing the user does is `cat` an inbox. With `--keep` the team stays up when the work is
//! done, for `swarm attach` (the printed command works: it names the root and the team) until
//! `swarm down`. Its files go to a per-user data directory ([`data_dir`]) unless `--root` or
//! `$SWARM_ROOT` is given. It needs no model and no network.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::backend::{BackendChoice, BackendKind};
use crate::error::{Error, Result};
use crate::launch::supervisor::{Event, SuperviseOptions};
use crate::launch::verify::{self, NotUp};
use crate::launch::{self, AgentKind, LaunchOptions, LaunchPlan, TaskPlan, TaskRef, TeammatePlan};
use crate::lifecycle::{self, ShutdownOptions};
use crate::output::terminal::visible;
use crate::store::fsio;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::roster::Roster;
use crate::store::tasks::{Task, TaskList, TaskStatus};
use crate::store::watcher::DirWatcher;

pub(crate) const TEAMMATES: [&str; 3] = ["alice", "bob", "carol"];

/// The demo's DAG: (subject, shell command, indexes of the tasks it waits for).
const TASKS: [(&str, &str, &[usize]); 6] = [
    ("Fetch sources", "sleep 1; printf 'parse\\nrender\\n' > sources.txt", &[]),
    ("Fetch tests", "sleep 1; printf 'test_parse\\ntest_render\\n' > tests.txt", &[]),
    ("Fetch docs", "sleep 1; printf 'How to parse\\n' > docs.txt", &[]),
    ("Build", "sleep 1; cat sources.txt tests.txt | wc -l > build.txt", &[0, 1]),
    ("Lint", "sleep 1; grep -c parse sources.txt docs.txt > lint.txt", &[1, 2]),
    (
        "Report",
        "printf 'lines built: %s\\nlint: %s\\n' \"$(cat build.txt)\" \"$(tr '\\n' ' ' < lint.txt)\" > report.txt; cat report.txt",
        &[3, 4],
    ),
];

#[derive(Debug, Clone)]
pub(crate) struct DemoOptions {
    pub(crate) backend: BackendChoice,
    /// Give up (and shut down) after this long.
    pub(crate) timeout: Duration,
    /// Leave the team running when the work is done (until `swarm down`).
    pub(crate) keep: bool,
    /// How long to wait for the teammates to come up (`None`: do not wait).
    pub(crate) wait: Option<Duration>,
}

/// Where the demo keeps its teams when neither `--root` nor `$SWARM_ROOT` says:
/// `$XDG_DATA_HOME/swarm`, else `~/.local/share/swarm`, so a demo never lands among a real
/// Claude Code's teams in `~/.claude`.
pub(crate) fn data_dir() -> Result<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var("XDG_DATA_HOME").filter(|d| d.is_absolute()) {
        return Ok(dir.join("swarm"));
    }
    match var("HOME") {
        Some(home) => Ok(home.join(".local/share/swarm")),
        None => Err(Error::usage(
            "cannot find a place for the demo's files: HOME is not set; pass --root DIR",
        )),
    }
}

/// Where the demo's teams are, for a command that found no team (or not `team`) under `store`:
/// the demo keeps its teams under [`data_dir`], every other command looks under `~/.claude`, so
/// right after a demo the user's next command looks in the wrong place. `None` when the demo's
/// directory is `store`'s or holds no such team.
pub(crate) fn elsewhere(store: &Store, team: Option<&str>) -> Option<String> {
    let dir = crate::store::paths::resolve(&data_dir().ok()?);
    if dir == crate::store::paths::resolve(store.root()) {
        return None;
    }
    let teams: Vec<String> = crate::store::roster::list_teams(&Store::new(&dir))
        .ok()?
        .iter()
        .map(|t| t.to_string())
        .filter(|t| team.is_none_or(|want| t == want))
        .collect();
    if teams.is_empty() {
        return None;
    }
    let root = crate::backend::shell_quote(&dir.to_string_lossy());
    Some(format!(
        "the demo's {} {} {} under {}: pass `--root {root}`",
        if teams.len() == 1 { "team" } else { "teams" },
        teams.join(", "),
        if teams.len() == 1 { "is" } else { "are" },
        dir.display()
    ))
}

/// What the demo did, for `--json` and the closing lines.
#[derive(Debug, Serialize)]
pub(crate) struct DemoReport {
    pub(crate) team: String,
    pub(crate) backend: String,
    pub(crate) completed: bool,
    #[serde(rename = "seconds")]
    pub(crate) elapsed: f64,
    /// Task id -> who did it.
    pub(crate) done_by: HashMap<String, String>,
    pub(crate) files: DemoFiles,
    /// The team was left running (`--keep`).
    pub(crate) kept: bool,
    /// Teammates that did not come up.
    #[serde(rename = "notUp", skip_serializing_if = "Vec::is_empty")]
    pub(crate) not_up: Vec<NotUp>,
}

#[derive(Debug, Serialize)]
pub(crate) struct DemoFiles {
    pub(crate) config: PathBuf,
    pub(crate) lead_inbox: PathBuf,
    pub(crate) tasks: PathBuf,
    pub(crate) report: PathBuf,
}

/// Runs the demo; `say` receives the progress lines.
pub(crate) fn run(
    store: &Store,
    team: &TeamName,
    opts: &DemoOptions,
    say: fn(&str),
) -> Result<DemoReport> {
    clear_previous(store, team)?;
    let workspace = store.team_dir(team).join("workspace");
    let plan = LaunchPlan {
        lead: None,
        remote_swarm: None,
        team: team.clone(),
        description: "swarm demo: three shell teammates over a six-task DAG".into(),
        agent: Some(AgentKind::Shell),
        cwd: Some(workspace.clone()),
        worktree: false,
        teammates: TEAMMATES
            .iter()
            .map(|n| {
                let name = AgentName::teammate(n).expect("demo names are valid");
                TeammatePlan::new(name, "$ echo \"$SWARM_AGENT_NAME is ready in $PWD\"")
            })
            .collect(),
        tasks: TASKS
            .iter()
            .map(|(subject, command, after)| {
                TaskPlan::new(
                    subject,
                    command,
                    after.iter().map(|&i| TaskRef::Index(i)).collect(),
                )
            })
            .collect(),
    };
    // The teammates' cwd must exist before the launch checks it.
    fsio::ensure_dir(&workspace)?;
    let mut launch_opts = LaunchOptions::from_process()?;
    launch_opts.backend = opts.backend;
    launch_opts.lead_pane = false; // the demo itself is the lead
    launch_opts.verify = opts.wait.is_some();
    let prepared = launch::prepare(store, plan, &launch_opts)?;
    say(&format!(
        "backend {}: {}",
        prepared.backend.kind, prepared.backend.why
    ));
    say(&format!("the team's files: {}", store.root().display()));
    let start = Instant::now();
    let mut launched = prepared.execute(store, &mut |line: &str| say(line))?;
    let started = launched.teammates.len();
    let mut not_up = Vec::new();
    if let (Some(bound), false) = (opts.wait, launched.backend == BackendKind::InProcess) {
        not_up = verify::wait_until_up(store, team, &launched.starting(), bound);
        if !not_up.is_empty() {
            // The others work the DAG without them; the demo ends with a non-zero status.
            for line in verify::report(team, &not_up, started, None) {
                say(&line);
            }
        }
    }
    say(&describe_dag());
    if launched.backend == BackendKind::Tmux {
        say(&format!(
            "watch the panes: swarm attach --root {} --team {team}",
            crate::backend::shell_quote(&store.root().display().to_string())
        ));
    }
    let keep = opts.keep;

    let backend = launched.backend;
    let completed = if backend == BackendKind::InProcess {
        // The supervisor owns the children on this thread; the watcher runs beside it and asks
        // the team to stop when the work is done, which ends the supervision.
        let (store2, team2, timeout) = (store.clone(), team.clone(), opts.timeout);
        let watcher = std::thread::spawn(move || {
            let outcome = watch_until_done(&store2, &team2, timeout, say);
            if keep {
                say(&format!(
                    "the team keeps running here; `swarm down --root {} --team {team2}` from another shell, or Ctrl-C, stops it",
                    crate::backend::shell_quote(&store2.root().display().to_string())
                ));
                return outcome;
            }
            let stopped = stop_team(&store2, &team2, say);
            outcome.and_then(|done| stopped.map(|()| done))
        });
        let sup = SuperviseOptions {
            startup: opts.wait,
            ..SuperviseOptions::default()
        };
        launched.supervise(store, &sup, &mut |e| match e {
            Event::NotUp { teammates } => {
                for line in verify::report(team, &teammates, started, None) {
                    say(&line);
                }
                not_up = teammates;
            }
            e => say(&e.line()),
        })?;
        watcher
            .join()
            .map_err(|_| Error::Backend("the demo's task watcher panicked".into()))??
    } else {
        let done = watch_until_done(store, team, opts.timeout, say);
        if !keep {
            stop_team(store, team, say)?;
        }
        done?
    };

    let tasks = TaskList::new(store, team).list()?;
    let done_by = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Completed)
        .map(|t| (t.id.to_string(), t.owner.clone().unwrap_or_default()))
        .collect();
    Ok(DemoReport {
        team: team.to_string(),
        backend: backend.as_str().to_string(),
        completed,
        elapsed: start.elapsed().as_secs_f64(),
        done_by,
        files: DemoFiles {
            config: store.config_path(team),
            lead_inbox: store.inbox_path(team, &AgentName::lead()),
            tasks: store.tasks_dir(team),
            report: workspace.join("report.txt"),
        },
        kept: keep,
        not_up,
    })
}

/// A previous demo team is replaced, unless one of its teammates still runs.
fn clear_previous(store: &Store, team: &TeamName) -> Result<()> {
    let roster = Roster::new(store, team);
    if !roster.exists() {
        return Ok(());
    }
    let config = roster.load()?;
    for m in config.teammates().filter(|m| !m.retired()) {
        if !lifecycle::member_health(store, team, m)?.runs.ended() {
            return Err(Error::usage(format!(
                "team {team} is still running ({} is alive); stop it with `swarm down --root {} --team {team}` or pick another --team",
                m.name,
                crate::backend::shell_quote(&store.root().display().to_string())
            )));
        }
    }
    roster.delete(true)
}

fn describe_dag() -> String {
    let mut out = String::from("the task DAG (each runs as `sh -c` in the workspace):");
    for (i, (subject, _, after)) in TASKS.iter().enumerate() {
        let after = if after.is_empty() {
            String::new()
        } else {
            let ids: Vec<String> = after.iter().map(|a| format!("#{}", a + 1)).collect();
            format!("  after {}", ids.join(", "))
        };
        out.push_str(&format!("\n  #{} {subject}{after}", i + 1));
    }
    out
}

/// Prints task transitions until every task is completed (true), one fails or time runs out
/// (false).
fn watch_until_done(
    store: &Store,
    team: &TeamName,
    timeout: Duration,
    say: fn(&str),
) -> Result<bool> {
    let list = TaskList::new(store, team);
    let watcher = DirWatcher::new(&store.tasks_dir(team))?;
    let deadline = Instant::now() + timeout;
    let mut seen: HashMap<String, (TaskStatus, Option<String>)> = HashMap::new();
    loop {
        let tasks = list.list()?;
        for t in &tasks {
            let now = (t.status, t.owner.clone());
            if seen.get(&t.id.to_string()) != Some(&now) {
                if let Some(line) = transition(t) {
                    say(&line);
                }
                seen.insert(t.id.to_string(), now);
            }
        }
        if let Some(failed) = tasks
            .iter()
            .find(|t| t.metadata.get("swarmFailed") == Some(&Value::Bool(true)))
        {
            say(&format!(
                "task #{} {} failed; stopping the demo",
                failed.id, failed.subject
            ));
            return Ok(false);
        }
        if !tasks.is_empty() && tasks.iter().all(|t| t.status == TaskStatus::Completed) {
            say(&format!("all {} tasks completed", tasks.len()));
            return Ok(true);
        }
        if Instant::now() >= deadline {
            say(&format!(
                "gave up after {} s; stopping the demo",
                timeout.as_secs()
            ));
            return Ok(false);
        }
        watcher.wait(Some(deadline));
    }
}

fn transition(t: &Task) -> Option<String> {
    let owner = visible(t.owner.as_deref().unwrap_or("?"));
    let subject = visible(&t.subject);
    match t.status {
        TaskStatus::InProgress => Some(format!("  #{} {subject:<14} started by {owner}", t.id)),
        TaskStatus::Completed => Some(format!("  #{} {subject:<14} done ({owner})", t.id)),
        TaskStatus::Pending => None,
    }
}

/// Shuts every teammate down through the handshake.
fn stop_team(store: &Store, team: &TeamName, say: fn(&str)) -> Result<()> {
    let config = Roster::new(store, team).load()?;
    let names: Vec<AgentName> = config
        .teammates()
        .filter(|m| !m.retired())
        .map(|m| m.name.clone())
        .collect();
    let opts = ShutdownOptions {
        timeout: Duration::from_secs(15),
        force: true,
        reason: Some("the demo is finished".into()),
        grace: None,
    };
    for outcome in lifecycle::shutdown(store, team, &names, &opts)? {
        say(&format!(
            "  {} shut down ({})",
            outcome.name, outcome.outcome
        ));
    }
    Ok(())
}
