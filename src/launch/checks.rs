//! The refusals of [`prepare`](super::prepare): input that would fail later, or half-way
//! through spawning, is turned away here with exit 2 and a message that says how to fix it.
//!
//! Teammate names are unique ignoring case; a prompt fits in one inbox message; environment
//! variable names are letters, digits and `_` with values free of NUL; model and agent-type
//! words are non-empty with no control characters; permission modes are single alphanumeric
//! words, as claude's are; a task depends only on an earlier task of the plan or on a task
//! already in the list. What is not wrong but would do nothing (a model for a shell teammate)
//! is warned about.

use std::collections::HashSet;

use super::{AgentKind, Inherited, LaunchPlan, TaskRef, TeammatePlan};
use crate::error::{Error, Result};
use crate::store::mailbox;
use crate::store::names::AgentName;
use crate::store::paths::Store;
use crate::store::tasks::TaskList;

/// At least one teammate; names unique ignoring case. (A name already on the roster is that
/// teammate started again, or left alone while it runs: see `prepare`.)
pub(super) fn check_names(plan: &LaunchPlan) -> Result<()> {
    if plan.teammates.is_empty() {
        return Err(Error::usage(
            "no teammates to launch: give a swarm file with teammates[] or --teammate NAME=PROMPT",
        ));
    }
    let mut seen: HashSet<String> = HashSet::new();
    for t in &plan.teammates {
        if !seen.insert(t.name.as_str().to_ascii_lowercase()) {
            return Err(Error::usage(format!(
                "duplicate teammate name {:?} (names are unique ignoring case); rename one",
                t.name.as_str()
            )));
        }
    }
    Ok(())
}

pub(super) fn check_inherited(inh: &Inherited) -> Result<()> {
    if let Some(m) = &inh.permission_mode {
        check_permission_mode(m)?;
    }
    if let Some(m) = &inh.model {
        check_word("--model", m)?;
    }
    if let Some(t) = &inh.agent_type {
        check_word("--agent-type", t)?;
    }
    Ok(())
}

/// The teammate's own settings: environment names and values, permission mode, model.
pub(super) fn check_teammate(t: &TeammatePlan, agent: &AgentKind) -> Result<()> {
    if *agent == AgentKind::Claude && !t.limits.is_none() {
        return Err(Error::usage(format!(
            "teammate {} runs Claude Code itself, which swarm cannot hold to maxTurns or \
             turnTimeout; give them to a teammate under swarm's runtime (an agent command such \
             as \"claude -p\")",
            t.name
        )));
    }
    // The prompt is the teammate's first inbox message: refused now, not half-way through the
    // spawn.
    mailbox::check_message_size(&t.prompt, None)
        .map_err(|e| Error::usage(format!("teammate {}: its prompt is a message: {e}", t.name)))?;
    for (k, v) in &t.env {
        check_env_key(&t.name, k, v)?;
    }
    if let Some(m) = &t.permission_mode {
        check_permission_mode(m)?;
    }
    if let Some(m) = &t.model {
        check_word(&format!("teammate {}: model", t.name), m)?;
    }
    Ok(())
}

fn check_env_key(who: &AgentName, key: &str, value: &str) -> Result<()> {
    let mut chars = key.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(Error::usage(format!(
            "teammate {who}: environment variable name {key:?} is invalid; use letters, digits and '_', not starting with a digit"
        )));
    }
    if value.contains('\0') {
        return Err(Error::usage(format!(
            "teammate {who}: the value of {key} contains a NUL byte"
        )));
    }
    Ok(())
}

fn check_word(what: &str, value: &str) -> Result<()> {
    if value.is_empty() || value.chars().any(char::is_control) {
        return Err(Error::usage(format!(
            "{what} {value:?} is empty or contains control characters"
        )));
    }
    Ok(())
}

fn check_permission_mode(value: &str) -> Result<()> {
    if value.is_empty() || !value.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(Error::usage(format!(
            "permission mode {value:?} is invalid; use one of claude's modes such as default, acceptEdits, plan or bypassPermissions"
        )));
    }
    Ok(())
}

/// Each dependency is an earlier task of the plan or a task already in the team's list.
pub(super) fn check_tasks(store: &Store, plan: &LaunchPlan, team_exists: bool) -> Result<()> {
    let list = TaskList::new(store, &plan.team);
    for (i, task) in plan.tasks.iter().enumerate() {
        if task.subject.trim().is_empty() {
            return Err(Error::usage(format!("task {i} has no subject")));
        }
        for dep in &task.blocked_by {
            match dep {
                TaskRef::Index(j) if *j < i => {}
                TaskRef::Index(j) => {
                    return Err(Error::usage(format!(
                        "task {i} ({:?}) is blocked by task {j}, which is not an earlier task of the file; list blockers first (indexes are 0-based)",
                        task.subject
                    )))
                }
                TaskRef::Id(id) => {
                    if !team_exists || list.get(id).is_err() {
                        return Err(Error::usage(format!(
                            "task {i} ({:?}) is blocked by #{id}, which is not in team {}'s task list",
                            task.subject, plan.team
                        )));
                    }
                }
            }
        }
    }
    Ok(())
}

/// A shell teammate runs commands, not a model: the model and permission flags it was given
/// (its own or the launch's) would be dropped without a word otherwise.
pub(super) fn warn_model_flags_dropped(t: &TeammatePlan, inherited: &Inherited) {
    let given: Vec<&str> = [
        (t.model.is_some() || inherited.model.is_some(), "--model"),
        (
            t.permission_mode.is_some() || inherited.permission_mode.is_some(),
            "--permission-mode",
        ),
    ]
    .into_iter()
    .filter_map(|(given, flag)| given.then_some(flag))
    .collect();
    if !given.is_empty() {
        eprintln!(
            "swarm: warning: teammate {}: a shell teammate runs no model, so {} {} nothing for it",
            t.name,
            given.join(" and "),
            if given.len() == 1 { "does" } else { "do" }
        );
    }
}
