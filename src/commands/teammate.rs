//! `swarm teammate` (the runtime inside a pane) and `swarm hook pre-tool-use` (the permission
//! hook a Claude Code teammate runs before each tool).
//!
//! Both validate everything before touching the store: a wrong identity, a member that is not
//! on the roster or a command that does not exist exits 2 and writes nothing.

use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{agent, Context};
use crate::commands::cli::{BuiltinAgent, HookCommand, TeammateArgs};
use crate::error::{Error, Result};
use crate::output;
use crate::store::names::{AgentName, TeamName};
use crate::store::requests::{self, Ask, Permissions, Request};
use crate::teammate::{self, Agent, Config};

pub(crate) fn run(ctx: &Context, args: TeammateArgs) -> Result<i32> {
    let config = config(ctx, args)?;
    teammate::run(config)
}

fn config(ctx: &Context, args: TeammateArgs) -> Result<Config> {
    let team: TeamName = args.team_name.parse()?;
    let name = AgentName::teammate(&args.agent_name)?;
    let expected = name.agent_id(&team);
    if args.agent_id != expected {
        return Err(Error::usage(format!(
            "--agent-id {} does not match --agent-name {name} and --team-name {team}; it should be {expected}",
            args.agent_id
        )));
    }
    let agent =
        match (args.agent, args.command.is_empty()) {
            (Some(BuiltinAgent::Shell), true) => Agent::Shell,
            (None, false) => {
                check_program(&args.command[0])?;
                crate::teammate::agent::check_placeholder(&args.command)?;
                Agent::Command {
                    argv: args.command,
                    prompt_via: args.prompt_via,
                }
            }
            _ => return Err(Error::usage(
                "say what runs the turns: `--agent shell`, or `-- CMD [ARGS...]` after the flags",
            )),
        };
    let here = std::env::current_dir().map_err(Error::io("read", "the current directory"))?;
    let cwd = match args.cwd {
        Some(dir) => here.join(dir),
        None => here.clone(),
    };
    if !cwd.is_dir() {
        return Err(Error::usage(format!(
            "--cwd {} is not a directory",
            cwd.display()
        )));
    }
    // The agent may run elsewhere, so it gets an absolute root.
    let store = crate::store::paths::Store::new(here.join(ctx.store.root()));
    let backend = std::env::var("SWARM_BACKEND")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| "in-process".into());
    // A contained teammate has no `$TMUX_PANE`; its sandbox passes the pane on
    // (`launch::sandbox`).
    let pane_id = ["TMUX_PANE", "SWARM_TMUX_PANE"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|p| !p.is_empty()))
        .unwrap_or_else(|| "in-process".into());
    Ok(Config {
        store,
        team,
        name,
        color: args.agent_color,
        plan_mode_required: args.plan_mode_required,
        limits: args.limits,
        lead_key: args
            .lead_verify_key
            .as_deref()
            .map(crate::store::lead_key::LeadVerifier::parse)
            .transpose()?,
        cwd,
        agent,
        backend,
        pane_id,
    })
}

/// The agent command must exist now, not fail at every turn (and park every task) later.
fn check_program(program: &str) -> Result<()> {
    let found = if program.contains('/') {
        PathBuf::from(program).is_file()
    } else {
        which::which(program).is_ok()
    };
    if found {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "agent command {program:?} not found; give a path or put it on PATH"
        )))
    }
}

pub(crate) fn hook(ctx: &Context, cmd: HookCommand) -> Result<i32> {
    match cmd {
        HookCommand::PreToolUse { from, timeout } => pre_tool_use(ctx, from, timeout),
    }
}

/// Most bytes of hook input read from stdin.
const HOOK_INPUT_LIMIT: u64 = 4 << 20;

fn pre_tool_use(ctx: &Context, from: Option<String>, timeout: u64) -> Result<i32> {
    let mut raw = Vec::new();
    std::io::stdin()
        .take(HOOK_INPUT_LIMIT)
        .read_to_end(&mut raw)
        .map_err(Error::io("read", "standard input"))?;
    let (Some(team), Some(from)) = (ctx.team.as_ref(), from.as_deref()) else {
        // Not a swarm teammate: no opinion, Claude Code decides as usual.
        return Ok(0);
    };
    let input: Value = serde_json::from_slice(&raw).map_err(|e| {
        Error::usage(format!(
            "the hook input on stdin is not JSON ({e}); Claude Code sends {{\"tool_name\": ..., \"tool_input\": ...}}"
        ))
    })?;
    let tool = input["tool_name"].as_str().unwrap_or_default().to_string();
    let tool_input = input.get("tool_input").cloned().unwrap_or(json!({}));
    let ask = Ask {
        description: describe_tool(&tool, &tool_input),
        tool_name: tool,
        tool_use_id: input["tool_use_id"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        input: tool_input,
    };
    // From here on, anything that goes wrong denies the tool: failing open would let a
    // teammate skip the lead just by breaking the store.
    match ask_lead(ctx, team, from, ask, timeout) {
        Ok(decision) => output::json_line(&decision)?,
        Err(e) => output::json_line(&decision(
            "deny",
            format!("swarm could not ask the team lead: {e}"),
            None,
        ))?,
    }
    Ok(0)
}

fn ask_lead(ctx: &Context, team: &TeamName, from: &str, ask: Ask, timeout: u64) -> Result<Value> {
    let perms = Permissions::new(&ctx.store, team);
    let original = ask.input.clone();
    let record = perms.request(&agent(from)?, ask)?;
    eprintln!(
        "swarm: asked team-lead for permission to use {} ({})",
        record.tool_name, record.id
    );
    let deadline = (timeout > 0).then(|| Instant::now() + Duration::from_secs(timeout));
    let Some(done) = requests::wait(&ctx.store, team, &record.id, deadline)? else {
        return Ok(decision(
            "deny",
            format!(
                "the team lead did not decide within {timeout} s ({})",
                record.id
            ),
            None,
        ));
    };
    let feedback = done
        .request()
        .resolution()
        .feedback
        .as_deref()
        .map(|f| format!(": {f}"))
        .unwrap_or_default();
    let reason = format!("{} by {}{feedback}", done.word(), done.by());
    Ok(match done.request() {
        // The decision is the lead's (`requests::wait` returns only signed ones), but it must
        // also be about this very call: the input the lead was shown is this call's input.
        Request::Permission(r) if done.approved() => {
            match r.mismatch(from, &record.tool_name, &original) {
                Some(why) => decision(
                    "deny",
                    format!("swarm refused the approval of {}: {why}", record.id),
                    None,
                ),
                None => {
                    let updated = r.updated_input.clone().filter(|u| *u != original);
                    decision("allow", reason, updated)
                }
            }
        }
        _ => decision("deny", reason, None),
    })
}

/// Claude Code's PreToolUse decision document.
fn decision(verdict: &str, reason: String, updated_input: Option<Value>) -> Value {
    let mut out = json!({
        "hookEventName": "PreToolUse",
        "permissionDecision": verdict,
        "permissionDecisionReason": reason,
    });
    if let Some(updated) = updated_input {
        out["updatedInput"] = updated;
    }
    json!({ "hookSpecificOutput": out })
}

/// A one-line description for the lead: the command, the file, or the input itself.
fn describe_tool(tool: &str, input: &Value) -> String {
    for key in [
        "command",
        "file_path",
        "notebook_path",
        "url",
        "pattern",
        "path",
    ] {
        if let Some(s) = input.get(key).and_then(Value::as_str) {
            return s.to_string();
        }
    }
    let text = input.to_string();
    match text.char_indices().nth(200) {
        Some((i, _)) => format!("{tool} {}…", &text[..i]),
        None => format!("{tool} {text}"),
    }
}
