//! `swarm permission request|list|approve|deny|wait`: requests waiting on the lead, permission
//! or plan, from a shell.
//!
//! It presents what `store::requests` lists and decides nothing itself: `approve` and `deny`
//! hand the verdict to `requests::decide`, as the console and the dashboard do. `request --wait`
//! and `wait` exit 0 when approved, 1 when rejected and 2 on timeout, so a hook script can branch
//! on the code alone. Requests are printed with their control characters made visible: the
//! requester wrote every field.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{json_arg, Context};
use crate::commands::cli::PermissionCommand;
use crate::error::{Error, Result};
use crate::output;
use crate::output::terminal::visible;
use crate::store::names::{AgentName, TeamName};
use crate::store::requests::{self, Ask, Decider, PermissionRecord, Permissions, Request, Verdict};
use crate::store::roster::Roster;

pub(crate) fn run(ctx: &Context, cmd: PermissionCommand) -> Result<i32> {
    let team = ctx.existing_team()?;
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
            let record = Permissions::new(&ctx.store, &team).request(
                &from,
                Ask {
                    tool_name: tool,
                    tool_use_id,
                    description,
                    input,
                },
            )?;
            let asked = record.clone();
            let record = Request::Permission(Box::new(record));
            if !wait {
                print_request(ctx, &record)?;
                return Ok(0);
            }
            if !ctx.json {
                eprintln!("swarm: waiting for the lead to decide {}", record.id());
            }
            wait_and_report(ctx, &team, record.id(), timeout, Some(&asked))
        }
        PermissionCommand::List { all } => {
            let mut shown = requests::pending(&ctx.store, &team)?;
            if all {
                shown.extend(
                    requests::resolved(&ctx.store, &team)?
                        .into_iter()
                        .map(|d| d.request().clone()),
                );
            }
            if ctx.json {
                output::json(&shown)?;
            } else if shown.is_empty() {
                output::line("no permission or plan requests waiting for the lead")?;
            } else {
                for r in &shown {
                    print_request(ctx, r)?;
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
            let updated_input = updated_input
                .map(|u| json_arg("--updated-input", &u))
                .transpose()?;
            let verdict = Verdict {
                approve: true,
                feedback,
                updated_input,
                accept_suggestions,
            };
            decide(ctx, &team, &id, verdict, by)
        }
        PermissionCommand::Deny { id, feedback, by } => {
            decide(ctx, &team, &id, Verdict::new(false, feedback), by)
        }
        PermissionCommand::Wait { id, timeout } => wait_and_report(ctx, &team, &id, timeout, None),
    }
}

fn decide(
    ctx: &Context,
    team: &TeamName,
    id: &str,
    verdict: Verdict,
    by: AgentName,
) -> Result<i32> {
    refuse_if_led_by_claude(ctx, team)?;
    crate::store::authority::require_lead(&ctx.store, team, "decide permission and plan requests")?;
    let request = requests::lookup(&ctx.store, team, id)?;
    let decided = requests::decide(&ctx.store, team, &request, verdict, &Decider::named(by))?;
    print_request(ctx, decided.request()).map(|()| 0)
}

/// A team a Claude Code lead made trusts only that lead's key, so an answer swarm signs would be
/// refused by the teammate that asked: say so instead of sending it.
fn refuse_if_led_by_claude(ctx: &Context, team: &TeamName) -> Result<()> {
    if Roster::new(&ctx.store, team).load()?.led_by_claude() {
        return Err(Error::usage(crate::lifecycle::claude_led_notice(team)));
    }
    Ok(())
}

/// Waits for the lead's decision on `id`; when this process `asked` it, an approval counts
/// only if it is about what was asked (the lead saw this input, for this requester).
fn wait_and_report(
    ctx: &Context,
    team: &TeamName,
    id: &str,
    timeout: u64,
    asked: Option<&PermissionRecord>,
) -> Result<i32> {
    let deadline = (timeout > 0).then(|| Instant::now() + Duration::from_secs(timeout));
    match requests::wait(&ctx.store, team, id, deadline)? {
        Some(decided) => {
            print_request(ctx, decided.request())?;
            let mismatch = match (decided.request(), asked) {
                (Request::Permission(r), Some(a)) if decided.approved() => {
                    r.mismatch(&a.worker_name, &a.tool_name, &a.input)
                }
                _ => None,
            };
            if let Some(why) = &mismatch {
                eprintln!("swarm: refusing the approval of {id}: {why}");
            }
            Ok(if decided.approved() && mismatch.is_none() {
                0
            } else {
                1
            })
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

/// One line a request: `ID  STATUS  NAME wants TOOL: DESCRIPTION INPUT - FEEDBACK`, or
/// `... NAME submitted a plan (PATH): FIRST LINE`; with `--json`, its record.
fn print_request(ctx: &Context, r: &Request) -> Result<()> {
    if ctx.json {
        return output::json(r);
    }
    let feedback = r
        .resolution()
        .feedback
        .as_deref()
        .map(|f| format!(" - {}", visible(f)))
        .unwrap_or_default();
    let what = match r {
        Request::Permission(p) => format!(
            "wants {}: {} {}",
            visible(&p.tool_name),
            visible(&p.description),
            visible(&p.input.to_string())
        ),
        Request::Plan(p) => format!(
            "submitted a plan ({}): {}",
            visible(&p.plan_file_path),
            visible(p.first_line())
        ),
    };
    output::line(format!(
        "{}  {:<8} {} {what}{feedback}",
        visible(r.id()),
        visible(&r.resolution().status),
        visible(r.from()),
    ))
}
