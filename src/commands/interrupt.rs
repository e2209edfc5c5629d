//! `swarm interrupt NAME`: stop a teammate's running turn, keep the teammate
//! (`lifecycle::interrupt`).

use std::time::Duration;

use serde_json::json;

use super::Context;
use crate::commands::cli::InterruptArgs;
use crate::error::Result;
use crate::lifecycle::{self, InterruptOptions};
use crate::output;
use crate::store::protocol::AfterInterrupt;
use crate::store::roster::Roster;

pub(crate) fn run(ctx: &Context, args: InterruptArgs) -> Result<i32> {
    let team = ctx.existing_team()?;
    let member = Roster::new(&ctx.store, &team).require_member(args.name.as_str())?;
    crate::store::authority::require_lead(&ctx.store, &team, "interrupt a teammate's turn")?;
    let opts = InterruptOptions {
        task: args.task,
        then: match args.fail {
            Some(_) => AfterInterrupt::Fail,
            None => AfterInterrupt::Release,
        },
        reason: args.fail,
        wait: Some(Duration::from_secs(args.timeout)),
    };
    let done = lifecycle::interrupt(&ctx.store, &team, &member, &opts)?;
    if ctx.json {
        output::json(&json!(done))?;
    } else {
        match &done.answer {
            Some(answer) => output::line(format!("{}: {answer}", done.name))?,
            None => output::line(format!(
                "{} did not answer the interrupt request {} within {} s; it acts on it when it \
                 reads its inbox (`swarm status` shows whether it runs)",
                done.name, done.request_id, args.timeout
            ))?,
        }
    }
    Ok(if done.answer.is_some() { 0 } else { 1 })
}
