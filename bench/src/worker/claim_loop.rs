//! `swarm-bench worker claim-loop`: one claimer process of the claims benchmark. It claims the
//! next available task, prints its id once the claim is durable, marks it completed and repeats
//! until nothing is left (or `--max` were claimed): through the task index that long-lived
//! claimers keep, or with `--baseline` the path from before it (`TaskList::claim_next_baseline`, then an
//! update).

use swarm::{output, Result, Task, TaskIndex, TaskList, TaskPatch, TaskStatus};

use crate::cli::ClaimLoopArgs;
use crate::Target;

pub(super) fn run(target: &Target, args: &ClaimLoopArgs) -> Result<()> {
    let (store, team) = (&target.store, &target.team);
    let (who, busy_check) = (&args.agent, !args.no_busy_check);
    let tasks = TaskList::new(store, team);
    let mut index = match args.baseline {
        true => None,
        false => Some(TaskIndex::open(store, team)?),
    };
    let mut claimed = 0;
    while args.max.is_none_or(|m| claimed < m) {
        let mut report = |task: &Task| output::line(task.id.to_string());
        let task = match &mut index {
            Some(index) => index.claim_and_complete(who, busy_check, &mut report)?,
            None => {
                let task = tasks.claim_next_baseline(who, busy_check)?;
                if let Some(task) = &task {
                    report(task)?;
                    tasks.update(&task.id, completed())?;
                }
                task
            }
        };
        match task {
            Some(_) => claimed += 1,
            None => break,
        }
    }
    Ok(())
}

fn completed() -> TaskPatch {
    TaskPatch {
        status: Some(TaskStatus::Completed),
        ..TaskPatch::default()
    }
}
