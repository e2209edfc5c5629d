//! `swarm top` and `swarm status --watch`: the team, live.
//!
//! `top` draws the dashboard when stdout is a terminal; otherwise (a pipe, a file, `--json`) it
//! prints what `status --watch` prints, a line per change, so `swarm top | tee log` still says
//! something useful.

use std::io::IsTerminal;

use super::Context;
use crate::error::Result;

pub(crate) fn run(ctx: &Context) -> Result<i32> {
    let team = ctx.existing_team()?;
    if ctx.json || !std::io::stdout().is_terminal() {
        return crate::top::watch_lines(&ctx.store, &team, ctx.json);
    }
    crate::top::dashboard(&ctx.store, &team)
}

pub(crate) fn watch(ctx: &Context) -> Result<i32> {
    let team = ctx.existing_team()?;
    crate::top::watch_lines(&ctx.store, &team, ctx.json)
}
