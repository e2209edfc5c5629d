//! `swarm trust`: the user's answer to "may this directory's project hooks run?", kept in
//! swarm's private state (see `teammate::trust`).

use crate::commands::cli::TrustArgs;
use crate::commands::Context;
use crate::error::{Error, Result};
use crate::output;
use crate::output::terminal::visible;
use crate::store::lead_key::caller_is_lead_side;
use crate::teammate::trust::TrustList;

pub(crate) fn run(ctx: &Context, args: TrustArgs) -> Result<()> {
    if args.list {
        let list = TrustList::load()?;
        if ctx.json {
            return output::json(&list.dirs);
        }
        if list.dirs.is_empty() {
            return output::line("no directories trusted with `swarm trust`");
        }
        for dir in &list.dirs {
            output::line(visible(&dir.display().to_string()))?;
        }
        return Ok(());
    }
    // Trust is the user's choice: a teammate's shell must not grant it to itself.
    if !caller_is_lead_side() {
        return Err(Error::usage(
            "only the user may trust a directory; a teammate's shell (SWARM_AGENT_NAME is set) is refused",
        ));
    }
    if let Some(dir) = args.remove {
        let removed = TrustList::remove(&dir)?;
        if ctx.json {
            return output::json(&serde_json::json!({"dir": dir, "removed": removed}));
        }
        return output::line(if removed {
            format!(
                "{} is no longer trusted",
                visible(&dir.display().to_string())
            )
        } else {
            format!(
                "{} was not trusted with `swarm trust` (see `swarm trust --list`)",
                visible(&dir.display().to_string())
            )
        });
    }
    let dir = match args.dir {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(Error::io("find", "the current directory"))?,
    };
    let (dir, added) = TrustList::add(&dir)?;
    if ctx.json {
        return output::json(&serde_json::json!({"dir": dir, "added": added}));
    }
    output::line(format!(
        "{} {}: its project hooks (.claude/settings*.json) will run",
        visible(&dir.display().to_string()),
        if added { "trusted" } else { "already trusted" }
    ))
}
