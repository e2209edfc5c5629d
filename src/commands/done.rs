//! `swarm done`: the lead agent says the team's work is over.
//!
//! It writes `teams/<team>/lead/done.json`, which the lead agent's runtime (`lead::agent`)
//! watches: a command the agent runs, not words in its output, ends the team. Only the lead
//! side may run it; a teammate's shell is refused, since teammates do not end teams. The record
//! carries the lead's signature (`leadSig`): a `done.json` anyone else writes ends nothing.

use serde_json::json;

use super::Context;
use crate::commands::cli::DoneArgs;
use crate::error::{Error, Result};
use crate::output;
use crate::store::fsio;
use crate::store::lead_key::{LeadKey, DONE_RECORD};

pub(crate) fn run(ctx: &Context, args: DoneArgs) -> Result<()> {
    let team = ctx.existing_team()?;
    crate::store::authority::require_lead(&ctx.store, &team, "end the team")?;
    let path = crate::lead::agent::done_path(&ctx.store, &team);
    fsio::ensure_dir(path.parent().expect("under the team dir"))?;
    let mut record = json!({
        "summary": args.summary,
        "timestamp": crate::store::protocol::timestamp_now(),
    });
    // Signed, or the lead agent's runtime takes it for a teammate's forgery and goes on.
    let key = LeadKey::for_caller(&ctx.store, &team)?.ok_or_else(|| {
        Error::usage("refusing to end the team: this process cannot use the team lead's key")
    })?;
    key.sign_record(team.as_str(), DONE_RECORD, &mut record);
    fsio::write_json(&path, &record)?;
    if ctx.json {
        return output::json(&record);
    }
    output::line(format!(
        "team {team} is done; its lead agent now shuts the teammates down"
    ))
}
