//! The agent behind a teammate, and what it makes of a turn.
//!
//! A teammate runs either the built-in shell agent or an agent CLI. The runtime does not care
//! which: it hands either one a [`Turn`] and gets back the [`Work`] to do. For an agent CLI that
//! is one run of its command line with the turn's prompt as the last argument, in place of a
//! `{prompt}` placeholder, or on its stdin (`--prompt-via`), because agent CLIs differ in how
//! they take a prompt and a long one may not fit in an argument.

use std::ffi::OsString;

use super::args::PromptVia;
use super::session::{Adapter, Session};
use super::shell_agent;
use super::turn::Turn;
use super::work::{Step, Work};

/// An argument that is exactly this gets the prompt in its place.
const PROMPT_PLACEHOLDER: &str = "{prompt}";
/// Linux's limit on one argument (`MAX_ARG_STRLEN`, 32 pages of 4 KiB, counting the NUL).
/// A longer prompt fails `exec` with E2BIG, so it goes on stdin instead.
const MAX_ARG_BYTES: usize = 32 * 4096 - 1;

/// The agent behind the teammate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Agent {
    /// The built-in shell agent (`shell_agent.rs`).
    Shell,
    /// An agent CLI, run once per turn with the prompt.
    Command {
        argv: Vec<String>,
        prompt_via: PromptVia,
    },
}

/// Refuses an agent command that embeds `{prompt}` inside a larger word: the placeholder must be
/// a whole argument. Inside a word such as `sh -c "echo {prompt}"` or `--msg={prompt}`, a
/// message's text would become part of a shell script or flag, so any sender could inject
/// commands; as a whole argument it reaches the agent as one verbatim word.
pub(crate) fn check_placeholder(argv: &[String]) -> crate::error::Result<()> {
    match argv
        .iter()
        .find(|w| w.contains(PROMPT_PLACEHOLDER) && w.as_str() != PROMPT_PLACEHOLDER)
    {
        Some(word) => Err(crate::error::Error::usage(format!(
            "the agent word {word:?} embeds {PROMPT_PLACEHOLDER} in a larger word; the placeholder \
             must be a whole argument (e.g. `--msg {PROMPT_PLACEHOLDER}`), or a message could \
             inject into it"
        ))),
        None => Ok(()),
    }
}

impl Agent {
    /// What the agent does with `turn`; `session` is the member's conversation, for a CLI
    /// that keeps one (`session.rs`).
    pub(crate) fn work(&self, turn: &Turn, session: Option<&Session>) -> Work {
        match self {
            Agent::Shell => shell_agent::work(turn),
            Agent::Command { .. } => self.prompt_work(&turn.prompt(), session),
        }
    }

    /// One run of an agent CLI with `prompt` (the lead agent's turns, whose prompts are not a
    /// teammate's [`Turn`]).
    pub(crate) fn prompt_work(&self, prompt: &str, session: Option<&Session>) -> Work {
        match self {
            Agent::Shell => Work::Reply {
                text: "the shell agent takes no prompts".into(),
                success: false,
            },
            Agent::Command { argv, prompt_via } => {
                let adapter = self.adapter();
                let argv = match (adapter, session) {
                    (Some(adapter), Some(session)) => adapter.apply(argv, session),
                    _ => argv.clone(),
                };
                let mut work = command_work(&argv, *prompt_via, prompt);
                if let Work::Run { steps, .. } = &mut work {
                    for step in steps {
                        step.keep_stderr = adapter.is_some_and(Adapter::reads_stderr);
                    }
                }
                work
            }
        }
    }

    /// How this agent keeps one conversation across turns, if it can.
    pub(crate) fn adapter(&self) -> Option<Adapter> {
        match self {
            Agent::Shell => None,
            Agent::Command { argv, .. } => Adapter::detect(argv),
        }
    }

    /// How the pane names the agent when the runtime starts.
    pub(crate) fn describe(&self) -> String {
        match self {
            Agent::Shell => "the shell agent".to_string(),
            Agent::Command { argv, .. } => format!("`{}`", argv.join(" ")),
        }
    }
}

/// A turn of an agent CLI: one run of `argv` with the prompt as its last argument, in place of
/// a `{prompt}` placeholder, or on its stdin.
fn command_work(argv: &[String], via: PromptVia, prompt: &str) -> Work {
    let (program, rest) = argv.split_first().expect("validated: a command is given");
    let mut args: Vec<OsString> = Vec::with_capacity(rest.len() + 1);
    let mut stdin = None;
    let mut note = None;
    // A prompt that cannot be an argument (too long for exec, or holding a NUL byte) goes on
    // stdin rather than failing the turn; a whole `{prompt}` argument is then left out.
    let via = if via == PromptVia::Arg && (prompt.len() > MAX_ARG_BYTES || prompt.contains('\0')) {
        note = Some(format!(
            "the prompt ({} bytes) cannot be an argument; it goes on stdin",
            prompt.len()
        ));
        PromptVia::Stdin
    } else {
        via
    };
    match via {
        PromptVia::Stdin => {
            args.extend(
                rest.iter()
                    .filter(|a| a.as_str() != PROMPT_PLACEHOLDER)
                    .map(OsString::from),
            );
            stdin = Some(prompt.as_bytes().to_vec());
        }
        PromptVia::Arg => {
            let placeholder = rest.iter().any(|a| a == PROMPT_PLACEHOLDER);
            args.extend(rest.iter().map(|a| {
                if a == PROMPT_PLACEHOLDER {
                    OsString::from(prompt)
                } else {
                    OsString::from(a)
                }
            }));
            if !placeholder {
                args.push(prompt.into());
            }
        }
    }
    Work::Run {
        steps: vec![Step {
            program: program.into(),
            args,
            stdin,
            echo: note,
            keep_stderr: false,
        }],
        preface: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn step(work: Work) -> Step {
        match work {
            Work::Run { mut steps, .. } => steps.remove(0),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_prompt_goes_last_in_place_of_the_placeholder_or_on_stdin() {
        let s = step(command_work(&argv(&["agent", "-p"]), PromptVia::Arg, "hi"));
        assert_eq!(s.args, vec![OsString::from("-p"), "hi".into()]);
        assert_eq!(s.stdin, None);
        let s = step(command_work(
            &argv(&["agent", "--msg", "{prompt}", "-v"]),
            PromptVia::Arg,
            "hi; rm -rf ~",
        ));
        assert_eq!(
            s.args,
            vec![OsString::from("--msg"), "hi; rm -rf ~".into(), "-v".into()]
        );
        let s = step(command_work(&argv(&["agent", "-"]), PromptVia::Stdin, "hi"));
        assert_eq!(s.args, vec![OsString::from("-")]);
        assert_eq!(s.stdin.as_deref(), Some(&b"hi"[..]));
    }

    #[test]
    fn the_placeholder_must_be_a_whole_argument() {
        assert!(check_placeholder(&argv(&["agent", "-p", "{prompt}"])).is_ok());
        assert!(check_placeholder(&argv(&["agent", "-p"])).is_ok());
        for bad in [
            &["sh", "-c", "echo {prompt}"][..],
            &["agent", "--msg={prompt}"][..],
        ] {
            let err = check_placeholder(&argv(bad)).unwrap_err().to_string();
            assert!(err.contains("must be a whole argument"), "{err}");
        }
    }

    #[test]
    fn a_prompt_that_cannot_be_an_argument_goes_on_stdin() {
        let big = "x".repeat(MAX_ARG_BYTES + 1);
        for prompt in [big.as_str(), "nul\0byte"] {
            let s = step(command_work(
                &argv(&["agent", "-p", "{prompt}"]),
                PromptVia::Arg,
                prompt,
            ));
            assert_eq!(s.args, vec![OsString::from("-p")]);
            assert_eq!(s.stdin.as_deref(), Some(prompt.as_bytes()));
        }
    }
}
