//! `swarm task create|list|show|update|dep|claim|release|delete|next`: the shared task list
//! from the command line.
//!
//! Every subcommand is one store operation on `tasks/<team>/`, printed as a row for people or
//! as the task's JSON with `--json`, so scripts and teammates' shells can drive the list.

use serde_json::{json, Map, Value};

use super::{json_arg, Context};
use crate::commands::cli::{DepAction, TaskCommand};
use crate::error::{Error, Result};
use crate::output;
use crate::output::terminal::{visible, visible_lines};
use crate::store::names::{AgentName, TaskId, TeamName};
use crate::store::roster::Roster;
use crate::store::tasks::{NewTask, Task, TaskIndex, TaskList, TaskPatch, TaskStatus};

pub(crate) fn run(ctx: &Context, cmd: TaskCommand) -> Result<()> {
    let team = ctx.team()?;
    let tasks = TaskList::by_stat(&ctx.store, &team);
    match cmd {
        TaskCommand::Create {
            subject,
            description,
            active_form,
            blocked_by,
            metadata,
        } => {
            ctx.existing_team()?;
            let metadata = object_arg("--metadata", metadata.as_deref())?;
            let task = tasks.create(NewTask {
                subject,
                description,
                active_form,
                blocked_by,
                metadata,
            })?;
            crate::teammate::hooks::gate_created(&tasks, &team, &task)?;
            print_task(ctx, &task, "created")
        }
        TaskCommand::List {
            status,
            owner,
            available,
        } => {
            let list = if available {
                tasks.available()?
            } else {
                tasks.list()?
            };
            let list: Vec<Task> = list
                .into_iter()
                .filter(|t| status.is_none_or(|s| t.status == s.0))
                .filter(|t| {
                    owner
                        .as_ref()
                        .is_none_or(|o| t.owner.as_deref() == Some(o.as_str()))
                })
                .collect();
            if ctx.json {
                return output::json(&list);
            }
            if list.is_empty() {
                return output::line("no tasks");
            }
            for t in &list {
                output::line(row(t))?;
            }
            Ok(())
        }
        TaskCommand::Show { id } => {
            let task = tasks.get(&id)?;
            if ctx.json {
                return output::json(&task);
            }
            output::line(row(&task))?;
            if !task.description.is_empty() {
                output::line(format!("\n{}\n", visible_lines(&task.description)))?;
            }
            if !task.blocks.is_empty() {
                output::line(format!("blocks: {}", ids(&task.blocks)))?;
            }
            if !task.metadata.is_empty() {
                output::line(format!(
                    "metadata: {}",
                    Value::Object(task.metadata.clone())
                ))?;
            }
            Ok(())
        }
        TaskCommand::Update {
            id,
            subject,
            description,
            active_form,
            status,
            owner,
            no_owner,
            metadata,
        } => {
            let owner = match (owner, no_owner) {
                (Some(o), _) => Some(Some(o.to_string())),
                (None, true) => Some(None),
                (None, false) => None,
            };
            // A task that cannot be read is left to `update`, which reports it under its lock.
            if let (Some(TaskStatus::Completed), Ok(before)) = (status.map(|s| s.0), tasks.get(&id))
            {
                if before.status != TaskStatus::Completed {
                    crate::teammate::hooks::gate_completed(&team, &before)?;
                }
            }
            let patch = TaskPatch {
                subject,
                description,
                active_form,
                status: status.map(|s| s.0),
                owner,
                metadata: object_arg("--metadata", metadata.as_deref())?,
            };
            let task = tasks.update(&id, patch)?;
            print_task(ctx, &task, "updated")
        }
        TaskCommand::Dep { action, id, on } => {
            match action {
                DepAction::Add => tasks.add_dependency(&id, &on)?,
                DepAction::Remove => tasks.remove_dependency(&id, &on)?,
            }
            print_task(ctx, &tasks.get(&id)?, "updated")
        }
        TaskCommand::Claim {
            id,
            agent: name,
            no_busy_check,
        } => {
            super::identity::check_acting_as(name.as_str(), "--agent")?;
            require_member(ctx, &team, &name)?;
            let task = tasks.claim(&id, &name, !no_busy_check)?;
            print_task(ctx, &task, "claimed")
        }
        TaskCommand::Release { agent: name } => {
            super::identity::check_acting_as(name.as_str(), "--agent")?;
            require_member(ctx, &team, &name)?;
            let released = tasks.release_agent(name.as_str())?;
            if ctx.json {
                return output::json(&json!({ "released": released }));
            }
            output::line(if released.is_empty() {
                format!("{name} owned no unfinished tasks")
            } else {
                format!("returned to pending: {}", ids(&released))
            })
        }
        TaskCommand::Delete { id } => {
            let task = tasks.delete(&id)?;
            print_task(ctx, &task, "deleted")
        }
        TaskCommand::Next { agent: name, claim } => {
            if let Some(n) = name.as_ref().filter(|_| claim) {
                super::identity::check_acting_as(n.as_str(), "--agent")?;
                require_member(ctx, &team, n)?;
            }
            let next = match (claim, name) {
                (true, Some(n)) => {
                    TaskIndex::open_by_stat(&ctx.store, &team)?.claim_next_or_owned(&n)?
                }
                _ => tasks.available()?.into_iter().next(),
            };
            match next {
                Some(t) => print_task(ctx, &t, if claim { "claimed" } else { "next" }),
                None if ctx.json => output::json(&Value::Null),
                None => output::line("no task is available"),
            }
        }
    }
}

/// Refuses a name that is not on the team's roster, as every command that names a member does.
fn require_member(ctx: &Context, team: &TeamName, name: &AgentName) -> Result<()> {
    Roster::new(&ctx.store, team).require_member(name.as_str())?;
    Ok(())
}

fn object_arg(flag: &str, text: Option<&str>) -> Result<Map<String, Value>> {
    match text.map(|t| json_arg(flag, t)).transpose()? {
        None => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m),
        Some(_) => Err(Error::usage(format!(
            "{flag} must be a JSON object such as '{{\"key\": 1}}'"
        ))),
    }
}

fn ids(list: &[TaskId]) -> String {
    list.iter()
        .map(|i| format!("#{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn row(t: &Task) -> String {
    let owner = t
        .owner
        .as_deref()
        .map(|o| format!(" @{}", visible(o)))
        .unwrap_or_default();
    let blocked = if t.blocked_by.is_empty() {
        String::new()
    } else {
        format!("  (after {})", ids(&t.blocked_by))
    };
    // A parked task is pending on disk but failed as far as anyone reading the list cares.
    let (status, failure) = if t.parked() {
        let reason = t
            .metadata
            .get("failureReason")
            .and_then(Value::as_str)
            .map(|r| format!("  failed: {}", visible(r)))
            .unwrap_or_default();
        ("failed", reason)
    } else {
        (t.status.as_str(), String::new())
    };
    format!(
        "#{:<4} {:<11} {}{owner}{blocked}{failure}",
        t.id,
        status,
        visible(&t.subject)
    )
}

fn print_task(ctx: &Context, task: &Task, verb: &str) -> Result<()> {
    if ctx.json {
        output::json(task)
    } else {
        output::line(format!("{verb} {}", row(task)))
    }
}
