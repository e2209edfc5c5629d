//! Benchmark 4, claims: claimer processes racing over one task list, with and without the
//! agent-busy check, each case run with the task index (what long-lived claimers use) and with
//! today's claim path (`--baseline`: `TaskList::claim_next_baseline`, then an update), in the same run.
//! Besides claims per second it checks the property that matters: every task claimed exactly
//! once, by the claimer whose id is in its file, and every task not reached still pending.

use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::time::{Duration, Instant};

use swarm::{fsio, Error, Result, Store, Task, TaskId, TaskStatus, TeamName};

use crate::harness::{load_1m, Bench};
use crate::report::{fmt_int, fmt_ratio, Section, Table};
use crate::worker::spawn;

fn seed_tasks(store: &Store, team: &TeamName, n: u64) -> Result<()> {
    let dir = store.tasks_dir(team);
    fsio::ensure_dir(&dir)?;
    for i in 1..=n {
        let task = Task {
            id: TaskId::new(i),
            subject: format!("task {i}"),
            description: "benchmark task".into(),
            active_form: None,
            owner: None,
            status: TaskStatus::Pending,
            blocks: vec![],
            blocked_by: vec![],
            metadata: serde_json::Map::new(),
            extra: serde_json::Map::new(),
        };
        let path = store.task_path(team, &task.id);
        let bytes = serde_json::to_vec_pretty(&task).map_err(|source| Error::Json {
            path: path.clone(),
            source,
        })?;
        std::fs::write(&path, bytes).map_err(Error::io("write", &path))?;
    }
    Ok(())
}

/// One run: claimer processes over a fresh list.
struct Run {
    claimers: u64,
    busy_check: bool,
    baseline: bool,
    claims: u64,
    wall: Duration,
    exactly_once: bool,
    winners: usize,
    load: String,
}

impl Run {
    fn rate(&self) -> f64 {
        self.claims as f64 / self.wall.as_secs_f64()
    }
}

/// `claimers` processes of `swarm-bench worker claim-loop` over `tasks` fresh tasks, each stopping after
/// `claims` in all (only a single claimer is stopped early).
fn run(b: &Bench, name: &str, tasks: u64, case: (u64, bool, bool, u64)) -> Result<Run> {
    let (claimers, busy_check, baseline, claims) = case;
    let (store, team) = b.team(name, &[])?;
    seed_tasks(&store, &team, tasks)?;
    let load_start = load_1m();
    let started = Instant::now();
    let children = (0..claimers)
        .map(|c| {
            let mut cmd = b.worker(&store);
            cmd.args(["worker", "claim-loop", "--agent", &format!("c{c}")])
                .stdout(Stdio::piped());
            if !busy_check {
                cmd.arg("--no-busy-check");
            }
            if baseline {
                cmd.arg("--baseline");
            }
            if claims < tasks {
                cmd.args(["--max", &claims.to_string()]);
            }
            spawn(&mut cmd)
        })
        .collect::<Result<Vec<_>>>()?;
    let mut claimed: HashMap<u64, Vec<String>> = HashMap::new();
    for (c, child) in children.into_iter().enumerate() {
        for line in child.finish(&format!("claimer c{c}"))? {
            let id: u64 = line.trim().parse().map_err(|_| {
                Error::Backend(format!("claimer c{c} printed {line:?}, not a task id"))
            })?;
            claimed.entry(id).or_default().push(format!("c{c}"));
        }
    }
    let wall = started.elapsed();
    // Exactly once: every claimed id claimed by one claimer, and the file agrees on owner and
    // status; the ids claimed are the lowest ones, and every other task is still pending.
    let mut exactly_once = claimed.len() as u64 == claims;
    for id in 1..=tasks {
        let by = claimed.get(&id).map_or(&[][..], Vec::as_slice);
        let file: Option<Task> = fsio::read_json(&store.task_path(&team, &TaskId::new(id)))?;
        let agrees = file.is_some_and(|t| {
            if id <= claims {
                t.status == TaskStatus::Completed && by.len() == 1 && t.owner.as_ref() == by.first()
            } else {
                t.status == TaskStatus::Pending && by.is_empty()
            }
        });
        exactly_once &= agrees;
    }
    Ok(Run {
        claimers,
        busy_check,
        baseline,
        claims,
        wall,
        exactly_once,
        winners: claimed.values().flatten().collect::<HashSet<_>>().len(),
        load: format!("{load_start} -> {}", load_1m()),
    })
}

/// Claimer processes over one task list: claims/s with the index and with today's path, and
/// each task claimed exactly once.
pub(crate) fn claims(b: &Bench) -> Result<Section> {
    let tasks = b.size(2000, 40);
    let many = b.size(16, 4);
    // Today's single claimer stops after a tenth of the list: with the busy check every claim
    // reads the whole list, so its rate depends on the list's size, not on how far it got. The
    // indexed claimers go through the whole list, their start-up load included.
    let single = tasks / 10;
    let mut table = Table::new(&[
        "claimer processes",
        "busy check",
        "claim path",
        "claims",
        "wall s",
        "claims/s",
        "exactly once",
        "claimers that won",
        "index vs today",
        "load 1m",
    ]);
    for (i, (claimers, busy_check)) in [(1, true), (many, true), (many, false)]
        .into_iter()
        .enumerate()
    {
        let today_claims = if claimers == 1 { single } else { tasks };
        let today = run(
            b,
            &format!("claims-{i}-today"),
            tasks,
            (claimers, busy_check, true, today_claims),
        )?;
        let indexed = run(
            b,
            &format!("claims-{i}-index"),
            tasks,
            (claimers, busy_check, false, tasks),
        )?;
        let ratio = indexed.rate() / today.rate();
        for r in [&indexed, &today] {
            table.row(vec![
                r.claimers.to_string(),
                if r.busy_check { "yes" } else { "no" }.into(),
                if r.baseline {
                    "today (--baseline)"
                } else {
                    "index"
                }
                .into(),
                fmt_int(r.claims),
                format!("{:.2}", r.wall.as_secs_f64()),
                format!("{:.0}", r.rate()),
                if r.exactly_once { "yes" } else { "NO" }.into(),
                r.winners.to_string(),
                if r.baseline {
                    String::new()
                } else {
                    fmt_ratio(ratio)
                },
                r.load.clone(),
            ]);
        }
    }
    Ok(Section {
        name: "claims",
        title: format!("4. Claims: claimer processes over {} tasks", fmt_int(tasks)),
        table,
        notes: vec![
            "Each claimer is `swarm-bench worker claim-loop`: claim the next available task, print its id, mark it completed, repeat until nothing is available. `index` is the task index of long-lived claimers (store/tasks/index.rs): tasks kept in memory, only files named by file events re-read, candidates tried with a hint try-lock, every claim decided on the file under the task's lock, the completion written under the claim's locks. `today (--baseline)` is `TaskList::claim_next_baseline` followed by `swarm task update`, the path before the index, measured in the same run. Exactly once: every task id printed by exactly one claimer, and its file completed and owned by that claimer.".into(),
            format!("Today's single claimer stops after {} claims: with the busy check each claim reads every task file, so its rate depends on the list's size, not on progress. The indexed runs claim all {} tasks, loading the list included.", fmt_int(single), fmt_int(tasks)),
            "With the busy check (the default, as in Claude Code) every claim holds the list lock, so claims serialize whatever the number of claimers: today over a read of every task file and two fsyncs, with the index over the drained events, the task lock and one fsync (the claim is a lease, PROTOCOL.md 8b: its directory is not synced; the completion comes after the lock is released and syncs its file and the directory). Without it, claimers contend only per task. Per claim and completion the index takes two lock cycles (one without the busy check) and three fsyncs, one of them on the claim's path; today's path three (two) lock cycles and four fsyncs.".into(),
        ],
    })
}
