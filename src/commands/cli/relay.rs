//! Arguments of `swarm relay`, the hidden commands that carry a team to other hosts: the link
//! and a remote member's pane on the lead's machine, and what the lead's machine runs on a
//! remote host over ssh. Only swarm writes these command lines; none is a stable interface.

use clap::Subcommand;

use crate::remote::Host;
use crate::store::names::AgentName;

#[derive(Debug, Subcommand)]
pub(crate) enum RelayCommand {
    /// On the lead's machine: keep one host's mirror of the team in step (started by launch).
    Link {
        #[arg(long)]
        host: Host,
        /// The swarm to run on the host.
        #[arg(long, value_name = "PATH")]
        remote_swarm: String,
    },
    /// On the lead's machine: a remote member's pane, showing its pane on its host.
    Attach {
        #[arg(long)]
        name: AgentName,
    },
    /// On a remote host: serve a mirror over standard input and output.
    Serve {
        #[arg(long)]
        mirror: String,
        /// The host as the lead's machine calls it.
        #[arg(long)]
        host: Host,
    },
    /// On a remote host: describe it and one teammate's place there (request on stdin).
    Hello,
    /// On a remote host: start a member's pane, contained unless the spec says not (the spec
    /// on stdin); prints where it runs and how it is contained.
    Spawn {
        #[arg(long)]
        mirror: String,
    },
    /// On a remote host: stop a member's pane.
    Kill {
        #[arg(long)]
        mirror: String,
        #[arg(long)]
        name: AgentName,
    },
    /// On a remote host: attach to a member's pane (or, with --follow, print its output) until
    /// it ends; exits with the member's status.
    View {
        #[arg(long)]
        mirror: String,
        #[arg(long)]
        name: AgentName,
        #[arg(long)]
        follow: bool,
    },
    /// On a remote host: finish a member's worktree (its record on stdin): removed if
    /// unchanged, else kept.
    Worktree {
        #[arg(long)]
        mirror: String,
    },
}
