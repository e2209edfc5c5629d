//! Arguments of the commands that describe swarm itself to a shell and to `man`:
//! `swarm completions` and `swarm man`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// The shells `swarm completions` writes a script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CompletionShell {
    Bash,
    Zsh,
    Fish,
    Powershell,
    Elvish,
}

impl CompletionShell {
    /// The name clap_complete knows the shell by.
    pub(crate) fn name(self) -> &'static str {
        match self {
            CompletionShell::Bash => "bash",
            CompletionShell::Zsh => "zsh",
            CompletionShell::Fish => "fish",
            CompletionShell::Powershell => "powershell",
            CompletionShell::Elvish => "elvish",
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to write the script for.
    pub(crate) shell: CompletionShell,
}

#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// Write swarm.1 and one page per subcommand (swarm-team-create.1, ...) into DIR, made if
    /// missing, instead of printing swarm.1.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
}
