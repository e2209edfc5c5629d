//! `swarm completions SHELL`, and the completion requests those scripts send back to swarm.
//!
//! The scripts are clap_complete's dynamic ones (`unstable-dynamic`): on every TAB the shell
//! runs `COMPLETE=<shell> swarm -- <words>`, and [`complete_if_asked`], the first thing the
//! binary does, answers from the command line definition plus the store, so team names and
//! member names complete from what is on disk now, not from a list frozen into the script. A
//! static script could not know them. Which arguments are teams and which are members is read
//! off their value parsers (`TeamName`, `AgentName`, `Recipient`), so a new command gets name
//! completion without being listed here. The root and the team are taken from the words typed
//! so far (`--root DIR`, `--team T`), else from the environment, as the command itself would.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use clap::builder::ValueParser;
use clap::CommandFactory;
use clap_complete::engine::{ArgValueCompleter, CompletionCandidate};
use clap_complete::env::Shells;

use crate::commands::cli::{Cli, CompletionsArgs, Recipient};
use crate::error::{Error, Result};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::roster::{list_teams, Roster};

/// The variable the scripts set to ask for completions (clap_complete's convention).
const COMPLETE_VAR: &str = "COMPLETE";

/// Answers a completion request and exits when the shell sent one (`COMPLETE` is set);
/// returns at once otherwise.
pub(crate) fn complete_if_asked() {
    clap_complete::CompleteEnv::with_factory(command)
        .var(COMPLETE_VAR)
        .complete();
}

/// Prints the script that registers swarm's completions with `args.shell`.
pub(crate) fn run(args: &CompletionsArgs) -> Result<()> {
    let shells = Shells::builtins();
    let shell = shells
        .completer(args.shell.name())
        .ok_or_else(|| Error::usage(format!("no completions for {}", args.shell.name())))?;
    // The script calls this very binary back, wherever it was run from.
    let exe = crate::process::swarm_exe()?;
    let mut script = Vec::new();
    shell
        .write_registration(
            COMPLETE_VAR,
            "swarm",
            "swarm",
            &exe.to_string_lossy(),
            &mut script,
        )
        .map_err(Error::io("write", "the completion script"))?;
    crate::output::line(String::from_utf8_lossy(&script).trim_end())
}

/// The command line definition with name completers on every team and member argument.
fn command() -> clap::Command {
    with_name_completers(Cli::command())
}

fn with_name_completers(cmd: clap::Command) -> clap::Command {
    let team = ValueParser::from(clap::value_parser!(TeamName)).type_id();
    let agent = ValueParser::from(clap::value_parser!(AgentName)).type_id();
    let recipient = ValueParser::from(clap::value_parser!(Recipient)).type_id();
    let ids: Vec<_> = cmd
        .get_arguments()
        .map(|a| (a.get_id().clone(), a.get_value_parser().type_id()))
        .collect();
    let mut cmd = cmd;
    for (id, parser) in ids {
        let completer = if parser == team {
            ArgValueCompleter::new(teams)
        } else if parser == agent || parser == recipient {
            ArgValueCompleter::new(members)
        } else {
            continue;
        };
        cmd = cmd.mut_arg(id, |a| a.add(completer));
    }
    let subcommands: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in subcommands {
        cmd = cmd.mut_subcommand(name, with_name_completers);
    }
    cmd
}

/// The team names under the root, those starting with what was typed.
fn teams(current: &OsStr) -> Vec<CompletionCandidate> {
    let typed = current.to_string_lossy();
    let Ok(store) = Store::discover(typed_flag("--root").map(PathBuf::from).as_deref()) else {
        return vec![];
    };
    list_teams(&store)
        .unwrap_or_default()
        .into_iter()
        .map(|t| t.to_string())
        .filter(|t| t.starts_with(typed.as_ref()))
        .map(CompletionCandidate::new)
        .collect()
}

/// The members of the team given so far (`--team`, `$SWARM_TEAM`), else of every team.
fn members(current: &OsStr) -> Vec<CompletionCandidate> {
    let typed = current.to_string_lossy();
    let Ok(store) = Store::discover(typed_flag("--root").map(PathBuf::from).as_deref()) else {
        return vec![];
    };
    let team = typed_flag("--team")
        .or_else(|| std::env::var_os("SWARM_TEAM"))
        .and_then(|t| t.to_str()?.parse::<TeamName>().ok());
    let teams = match team {
        Some(t) => vec![t],
        None => list_teams(&store).unwrap_or_default(),
    };
    let mut names: Vec<String> = teams
        .iter()
        .filter_map(|t| Roster::new(&store, t).load().ok())
        .flat_map(|c| c.members.into_iter().map(|m| m.name.to_string()))
        .filter(|n| n.starts_with(typed.as_ref()))
        .collect();
    names.sort();
    names.dedup();
    names.into_iter().map(CompletionCandidate::new).collect()
}

/// The value of `flag` among the words being completed (`--root DIR` or `--root=DIR`).
fn typed_flag(flag: &str) -> Option<OsString> {
    flag_in(std::env::args_os().skip_while(|a| a != "--"), flag)
}

fn flag_in(words: impl Iterator<Item = OsString>, flag: &str) -> Option<OsString> {
    let prefix = format!("{flag}=");
    let mut found = None;
    let mut words = words.peekable();
    while let Some(word) = words.next() {
        let text = word.to_string_lossy();
        if text == flag {
            found = words.next();
        } else if let Some(value) = text.strip_prefix(&prefix) {
            found = Some(value.into());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_value_of_a_flag_counts_in_either_spelling() {
        let words = |s: &str| {
            s.split(' ')
                .map(OsString::from)
                .collect::<Vec<_>>()
                .into_iter()
        };
        assert_eq!(
            flag_in(words("swarm --root /a attach --root=/b x"), "--root"),
            Some("/b".into())
        );
        assert_eq!(
            flag_in(words("swarm --team t attach"), "--team"),
            Some("t".into())
        );
        assert_eq!(flag_in(words("swarm attach"), "--team"), None);
    }

    #[test]
    fn team_and_member_arguments_get_completers() {
        let mut cmd = command();
        cmd.build();
        let has = |a: &clap::Arg| a.get::<ArgValueCompleter>().is_some();
        assert!(cmd.get_arguments().any(|a| a.get_id() == "team" && has(a)));
        let attach = cmd.find_subcommand("attach").unwrap();
        assert!(attach
            .get_arguments()
            .any(|a| a.get_id() == "name" && has(a)));
        let send = cmd.find_subcommand("send").unwrap();
        assert!(send.get_arguments().any(|a| a.get_id() == "to" && has(a)));
        let status = cmd.find_subcommand("status").unwrap();
        assert!(!status
            .get_arguments()
            .any(|a| a.get_id() == "watch" && has(a)));
    }
}
