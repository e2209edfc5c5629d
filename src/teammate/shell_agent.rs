//! The built-in shell agent (`swarm teammate --agent shell`): a teammate that needs no model.
//!
//! A turn's work is a shell command: a task's description, or a message whose text starts with
//! `$ `, run with `sh -c` in the teammate's directory. Output streams to the pane and becomes
//! the result; the exit status is the success. Other messages are acknowledged, not executed.
//! With the runtime's task loop this makes a visible, dependency-ordered, parallel task runner,
//! and it drives the demo and the tests.
//!
//! The command text goes to `sh -c` as one argument, never pasted into a larger shell string:
//! running it is the point, and nothing else is added to it.

use super::turn::{Turn, TurnKind};
use super::work::{Step, Work};

/// The command in a message's text, if it is one: `$ make test` -> `make test`.
fn command_of(text: &str) -> Option<&str> {
    let cmd = text.trim_start().strip_prefix("$ ")?.trim();
    (!cmd.is_empty()).then_some(cmd)
}

fn sh(command: &str) -> Step {
    Step {
        program: "sh".into(),
        args: vec!["-c".into(), command.into()],
        stdin: None,
        echo: Some(format!("$ {command}")),
        keep_stderr: false,
    }
}

const ACK: &str = "I am a shell agent: I run task descriptions and messages that start with \
`$ ` (e.g. `$ make test`), nothing else.";

/// What the shell agent does with a turn.
pub(crate) fn work(turn: &Turn) -> Work {
    let commands: Vec<&str> = turn
        .messages
        .iter()
        .filter_map(|m| command_of(&m.text))
        .collect();
    let skipped: Vec<String> = turn
        .messages
        .iter()
        .filter(|m| command_of(&m.text).is_none())
        .map(|m| format!("(not a command, from {}: {})", m.from, first_line(&m.text)))
        .collect();
    match &turn.kind {
        TurnKind::Feedback {
            task: None,
            feedback,
            ..
        } => match command_of(feedback) {
            Some(command) => Work::Run {
                steps: vec![sh(command)],
                preface: String::new(),
            },
            None => Work::Reply {
                text: format!("(hook feedback, not a command: {})", first_line(feedback)),
                success: true,
            },
        },
        // A task the hook kept in progress is run again: its command is the work.
        TurnKind::Task(task)
        | TurnKind::Feedback {
            task: Some(task), ..
        } => {
            let command = task.description.trim();
            if command.is_empty() {
                Work::Reply {
                    text: format!(
                        "task #{} has no description, so there is no command to run",
                        task.id
                    ),
                    success: false,
                }
            } else {
                Work::Run {
                    steps: vec![sh(command)],
                    preface: String::new(),
                }
            }
        }
        TurnKind::Messages | TurnKind::Execute { .. } => {
            if commands.is_empty() {
                let mut text = ACK.to_string();
                for s in &skipped {
                    text.push('\n');
                    text.push_str(s);
                }
                return Work::Reply {
                    text,
                    success: true,
                };
            }
            let mut preface = skipped.join("\n");
            if !preface.is_empty() {
                preface.push('\n');
            }
            Work::Run {
                steps: commands.into_iter().map(sh).collect(),
                preface,
            }
        }
        TurnKind::Plan { .. } => {
            let text = if commands.is_empty() {
                format!("Plan: nothing to run. {ACK}")
            } else {
                let mut text = String::from("Plan: run these commands with sh -c, in order:");
                for c in commands {
                    text.push_str(&format!("\n- `{c}`"));
                }
                text
            };
            Work::Reply {
                text,
                success: true,
            }
        }
    }
}

fn first_line(text: &str) -> &str {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(80) {
        Some((i, _)) => &line[..i],
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::mailbox::InboxMessage;
    use crate::store::names::AgentName;

    fn turn(kind: TurnKind, texts: &[&str]) -> Turn {
        Turn {
            kind,
            messages: texts
                .iter()
                .map(|t| InboxMessage::new(&AgentName::lead(), *t))
                .collect(),
            appendix: None,
        }
    }

    #[test]
    fn only_dollar_messages_are_commands() {
        assert_eq!(command_of("$ make test"), Some("make test"));
        assert_eq!(command_of("  $ ls\n"), Some("ls"));
        assert_eq!(command_of("$make"), None);
        assert_eq!(command_of("$ "), None);
        assert_eq!(command_of("please run $ ls"), None);
    }

    #[test]
    fn messages_run_commands_and_acknowledge_the_rest() {
        match work(&turn(TurnKind::Messages, &["hello", "$ echo hi"])) {
            Work::Run { steps, preface } => {
                assert_eq!(steps, vec![sh("echo hi")]);
                assert!(preface.contains("not a command, from team-lead: hello"));
            }
            other => panic!("{other:?}"),
        }
        match work(&turn(TurnKind::Messages, &["hello"])) {
            Work::Reply { text, success } => {
                assert!(success);
                assert!(text.contains("shell agent"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_plan_lists_the_commands_without_running_them() {
        let plan = TurnKind::Plan {
            previous: None,
            feedback: None,
        };
        match work(&turn(plan, &["$ make"])) {
            Work::Reply { text, success } => {
                assert!(success);
                assert!(text.contains("- `make`"));
            }
            other => panic!("{other:?}"),
        }
    }
}
