//! `swarm done`: the lead agent says the team's work is over.
//!
//! It writes `teams/<team>/lead/done.json`, which the lead agent's runtime (`lead::agent`)
//! watches: a command the agent runs, not words in its output, ends the team. Only the lead
//! side may run it; a teammate's shell is refused, since teammates do not end teams.

use serde_json::json;

use super::Context;
use crate::commands::cli::DoneArgs;
use crate::error::Result;
use crate::output;
use crate::store::fsio;

pub(crate) fn run(ctx: &Context, args: DoneArgs) -> Result<()> {
    let team = ctx.existing_team()?;
    crate::store::authority::require_lead(&ctx.store, &team, "end the team")?;
    let path = crate::lead::agent::done_path(&ctx.store, &team);
    fsio::ensure_dir(path.parent().expect("under the team dir"))?;
    let record = json!({
        "summary": args.summary,
        "timestamp": crate::store::protocol::timestamp_now(),
    });
    fsio::write_json(&path, &record)?;
    if ctx.json {
        return output::json(&record);
    }
    output::line(format!(
        "team {team} is done; its lead agent now shuts the teammates down"
    ))
}
