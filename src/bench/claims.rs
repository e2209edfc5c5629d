//! Benchmark 4, claims: claimer processes racing over one task list, with and without the
//! agent-busy check, against a single claimer on the same list. Besides claims per second it
//! checks the property that matters: every task claimed exactly once, by the claimer whose id
//! is in its file, and every task not reached still pending.

use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::harness::{load_1m, Bench};
use super::report::{fmt_int, fmt_ratio, Section, Table};
use super::worker::spawn;
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::names::{TaskId, TeamName};
use crate::store::paths::Store;
use crate::store::tasks::{Task, TaskStatus};

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

/// Claimer processes over one task list: claims/s, and each task claimed exactly once.
pub(crate) fn claims(b: &Bench) -> Result<Section> {
    let tasks = b.size(2000, 40);
    let many = b.size(16, 4);
    // The single claimer stops after a tenth of the list: with the busy check every claim reads
    // the whole list, so its rate depends on the list's size, not on how far it got.
    let single = tasks / 10;
    let cases = [(1, true, single), (many, true, tasks), (many, false, tasks)];
    let mut results = Vec::new();
    for (i, (claimers, busy_check, claims)) in cases.into_iter().enumerate() {
        let (store, team) = b.team(&format!("claims-{i}"), &[])?;
        seed_tasks(&store, &team, tasks)?;
        let load_start = load_1m();
        let started = Instant::now();
        let children = (0..claimers)
            .map(|c| {
                let mut cmd = b.swarm(&store);
                cmd.args(["debug", "claim-loop", "--agent", &format!("c{c}")])
                    .stdout(Stdio::piped());
                if !busy_check {
                    cmd.arg("--no-busy-check");
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
                    t.status == TaskStatus::Completed
                        && by.len() == 1
                        && t.owner.as_ref() == by.first()
                } else {
                    t.status == TaskStatus::Pending && by.is_empty()
                }
            });
            exactly_once &= agrees;
        }
        let winners = claimed.values().flatten().collect::<HashSet<_>>().len();
        let load = format!("{load_start} -> {}", load_1m());
        results.push((
            claimers,
            busy_check,
            claims,
            wall,
            exactly_once,
            winners,
            load,
        ));
    }
    let rate = |claims: u64, wall: &Duration| claims as f64 / wall.as_secs_f64();
    let baseline = rate(results[0].2, &results[0].3);
    let mut table = Table::new(&[
        "claimer processes",
        "busy check",
        "claims",
        "wall s",
        "claims/s",
        "exactly once",
        "claimers that won",
        "vs 1 claimer",
        "load 1m",
    ]);
    for (claimers, busy, claims, wall, once, winners, load) in &results {
        table.row(vec![
            claimers.to_string(),
            if *busy { "yes" } else { "no" }.into(),
            fmt_int(*claims),
            format!("{:.1}", wall.as_secs_f64()),
            format!("{:.0}", rate(*claims, wall)),
            if *once { "yes" } else { "NO" }.into(),
            winners.to_string(),
            fmt_ratio(rate(*claims, wall) / baseline),
            load.clone(),
        ]);
    }
    Ok(Section {
        name: "claims",
        title: format!("4. Claims: claimer processes over {} tasks", fmt_int(tasks)),
        table,
        notes: vec![
            "Each claimer is `swarm debug claim-loop`: `TaskList::claim_next` (what `swarm task next --claim` does), print the id, mark it completed, repeat until nothing is available. With the busy check (the default, as in Claude Code) every claim also takes the list lock. Exactly once: every task id printed by exactly one claimer, and its file completed and owned by that claimer.".into(),
            format!("The baseline is one claimer process on the same {}-task list in the same run, stopped after {} claims: with the busy check each claim reads every task file, so the rate depends on the list's size, not on progress.", fmt_int(tasks), fmt_int(single)),
            "With the busy check, claims serialize on the list lock and each one reads the whole list under it, so 16 claimers go no faster than one (Claude Code has the same design). Without it, claimers only contend per task and the scan stops at the first claimable task.".into(),
        ],
    })
}
