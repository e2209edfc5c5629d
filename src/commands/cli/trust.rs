//! Arguments of `swarm trust`: which directories' project hooks may run.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub(crate) struct TrustArgs {
    /// The directory to trust (default: the current one).
    #[arg(conflicts_with_all = ["list", "remove"])]
    pub(crate) dir: Option<PathBuf>,
    /// List the directories trusted with `swarm trust`.
    #[arg(long, conflicts_with = "remove")]
    pub(crate) list: bool,
    /// Stop trusting DIR.
    #[arg(long, value_name = "DIR")]
    pub(crate) remove: Option<PathBuf>,
}
