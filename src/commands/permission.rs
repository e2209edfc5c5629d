//! `swarm permission request|list|approve|deny|wait`
//!
//! `request --wait` and `wait` exit 0 when approved, 1 when denied and 2 on timeout, so a hook
//! script can branch on the code alone. Requests are printed with their control characters
//! made visible: the requester wrote every field.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{json_arg, Context};
use crate::commands::cli::PermissionCommand;
use crate::error::{Error, Result};
use crate::output;
use crate::output::terminal::visible;
use crate::store::names::TeamName;
use crate::store::permissions::{Ask, Decision, PermissionRecord, Permissions};
use crate::store::roster::Roster;

pub(crate) fn run(ctx: &Context, cmd: PermissionCommand) -> Result<i32> {
    let team = ctx.existing_team()?;
    let perms = Permissions::new(&ctx.store, &team);
    match cmd {
        PermissionCommand::Request {
            tool,
            input,
            description,
            tool_use_id,
            from,
            wait,
            timeout,
        } => {
            super::identity::check_acting_as(from.as_str(), "--from")?;
            let input = json_arg("--input", &input)?;
            let record = perms.request(
                &from,
                Ask {
                    tool_name: tool,
                    tool_use_id,
                    description,
                    input,
                },
            )?;
            if !wait {
                print_record(ctx, &record)?;
                return Ok(0);
            }
            if !ctx.json {
                eprintln!("swarm: waiting for the lead to decide {}", record.id);
            }
            wait_and_report(ctx, &perms, &record.id, timeout)
        }
        PermissionCommand::List { all } => {
            let mut records = perms.pending()?;
            if all {
                records.extend(perms.resolved()?);
            }
            if ctx.json {
                output::json(&records)?;
            } else if records.is_empty() {
                output::line("no pending permission requests")?;
            } else {
                for r in &records {
                    print_record(ctx, r)?;
                }
            }
            Ok(0)
        }
        PermissionCommand::Approve {
            id,
            feedback,
            updated_input,
            accept_suggestions,
            by,
        } => {
            super::identity::require_lead("approve permission requests")?;
            refuse_if_led_by_claude(ctx, &team)?;
            let updated_input = updated_input
                .map(|u| json_arg("--updated-input", &u))
                .transpose()?;
            let record = perms.resolve(
                &id,
                Decision {
                    approve: true,
                    feedback,
                    updated_input,
                    accept_suggestions,
                    resolved_by: by.to_string(),
                },
            )?;
            print_record(ctx, &record).map(|()| 0)
        }
        PermissionCommand::Deny { id, feedback, by } => {
            super::identity::require_lead("deny permission requests")?;
            refuse_if_led_by_claude(ctx, &team)?;
            let record = perms.resolve(
                &id,
                Decision {
                    approve: false,
                    feedback,
                    updated_input: None,
                    accept_suggestions: false,
                    resolved_by: by.to_string(),
                },
            )?;
            print_record(ctx, &record).map(|()| 0)
        }
        PermissionCommand::Wait { id, timeout } => wait_and_report(ctx, &perms, &id, timeout),
    }
}

/// A team a Claude Code lead made trusts only that lead's key, so an answer swarm signs would be
/// refused by the teammate that asked: say so instead of sending it.
fn refuse_if_led_by_claude(ctx: &Context, team: &TeamName) -> Result<()> {
    if Roster::new(&ctx.store, team).load()?.led_by_claude() {
        return Err(Error::usage(crate::lifecycle::claude_led_notice(team)));
    }
    Ok(())
}

fn wait_and_report(ctx: &Context, perms: &Permissions, id: &str, timeout: u64) -> Result<i32> {
    let deadline = (timeout > 0).then(|| Instant::now() + Duration::from_secs(timeout));
    match perms.wait(id, deadline)? {
        Some(record) => {
            print_record(ctx, &record)?;
            Ok(if record.approved() { 0 } else { 1 })
        }
        None => {
            if ctx.json {
                output::json(&json!({"id": id, "status": "timeout"}))?;
            } else {
                eprintln!("swarm: no decision on {id} after {timeout} s");
            }
            Ok(2)
        }
    }
}

fn print_record(ctx: &Context, r: &PermissionRecord) -> Result<()> {
    if ctx.json {
        return output::json(r);
    }
    let feedback = r
        .feedback
        .as_deref()
        .map(|f| format!(" - {}", visible(f)))
        .unwrap_or_default();
    output::line(format!(
        "{}  {:<8} {} wants {}: {} {}{feedback}",
        visible(&r.id),
        visible(&r.status),
        visible(&r.worker_name),
        visible(&r.tool_name),
        visible(&r.description),
        visible(&r.input.to_string())
    ))
}
