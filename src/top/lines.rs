//! `swarm status --watch`, and `swarm top` when stdout is not a terminal: a line per change.
//!
//! A reading of the team ([`Model`]) becomes a set of facts, each under a key (`member coder`,
//! `task 3`, `request perm-...`, `progress`); the first reading prints them all, every later
//! one prints the facts whose text changed and one line for each that went away. With `--json`
//! each line is a JSON object with a `kind` and the fact's fields (`"removed": true` for one
//! that went away). It wakes on the same file events as the dashboard, so it too is idle while
//! nothing happens.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::model::Model;
use crate::output;
use crate::output::terminal::visible;

/// One thing the watcher reports on.
#[derive(Debug, Clone, PartialEq)]
struct Fact {
    text: String,
    json: Value,
}

/// The facts of one reading, by key.
fn facts(model: &Model) -> BTreeMap<String, Fact> {
    let mut out = BTreeMap::new();
    for m in &model.members {
        let task = m.task.as_deref().unwrap_or("-");
        let at = m
            .host
            .as_deref()
            .map(|h| format!("@{}", visible(h)))
            .unwrap_or_default();
        out.insert(
            format!("member {}", m.name),
            Fact {
                text: format!(
                    "{}{at}: {}, task {}, {} unread",
                    visible(&m.name),
                    visible(&m.state.to_string()),
                    visible(task),
                    m.unread
                ),
                json: json!({"kind": "member", "name": m.name, "host": m.host, "state": m.state.word(),
                    "why": m.state.why(), "task": m.task, "unread": m.unread}),
            },
        );
    }
    for t in &model.tasks {
        let owner = t
            .owner
            .as_deref()
            .map(|o| format!(" @{}", visible(o)))
            .unwrap_or_default();
        out.insert(
            format!("task {}", t.id),
            Fact {
                text: format!(
                    "task #{} {}{owner}: {}",
                    visible(&t.id),
                    t.phase.as_str(),
                    visible(&t.subject)
                ),
                json: json!({"kind": "task", "id": t.id, "phase": t.phase.as_str(), "owner": t.owner,
                    "subject": t.subject, "waitingOn": t.waiting_on}),
            },
        );
    }
    out.insert(
        "progress".into(),
        Fact {
            text: format!("tasks: {}", model.progress.text()),
            json: json!({"kind": "progress", "total": model.progress.total,
                "completed": model.progress.completed, "inProgress": model.progress.in_progress,
                "available": model.progress.available, "blocked": model.progress.blocked,
                "failed": model.progress.failed}),
        },
    );
    if let (Some(memory), Some(text)) = (&model.memory, model.memory_text()) {
        let json = match memory {
            Ok(f) => json!({"kind": "memory", "topics": f.topics,
                "lastWriteBy": f.last_write_by, "lastWriteAt": f.last_write_at}),
            Err(e) => json!({"kind": "memory", "error": e}),
        };
        out.insert(
            "memory".into(),
            Fact {
                text: format!("team memory: {}", visible(&text)),
                json,
            },
        );
    }
    // Tokens and estimated cost: a line of its own, printed again only when a figure moves.
    out.insert(
        "usage".into(),
        Fact {
            text: visible(&model.usage).into_owned(),
            json: json!({"kind": "usage", "text": model.usage}),
        },
    );
    for r in &model.requests {
        out.insert(
            format!("request {}", r.id()),
            Fact {
                text: format!(
                    "request {}: {} {}",
                    visible(r.id()),
                    visible(r.from()),
                    visible(&r.what())
                ),
                json: json!({"kind": "request", "id": r.id(), "from": r.from(), "what": r.what()}),
            },
        );
    }
    out
}

/// Prints what changed since the last reading.
#[derive(Default)]
pub(crate) struct Printer {
    shown: BTreeMap<String, Fact>,
    json: bool,
}

impl Printer {
    pub(crate) fn new(json: bool) -> Printer {
        Printer {
            shown: BTreeMap::new(),
            json,
        }
    }

    pub(crate) fn print(&mut self, model: &Model) -> crate::error::Result<()> {
        let now = facts(model);
        for (key, fact) in &now {
            if self.shown.get(key) != Some(fact) {
                self.emit(fact.text.clone(), fact.json.clone())?;
            }
        }
        for (key, gone) in &self.shown {
            if !now.contains_key(key) {
                let mut value = gone.json.clone();
                value["removed"] = Value::Bool(true);
                let text = match key.split_once(' ') {
                    Some(("request", id)) => format!("request {}: decided", visible(id)),
                    Some((kind, name)) => format!("{kind} {}: removed", visible(name)),
                    None => format!("{key}: removed"),
                };
                self.emit(text, value)?;
            }
        }
        self.shown = now;
        Ok(())
    }

    fn emit(&self, text: String, value: Value) -> crate::error::Result<()> {
        if self.json {
            output::json_line(&value)
        } else {
            output::line(text)
        }
    }
}
