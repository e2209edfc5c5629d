//! The usage of `claude -p` turns, `teams/<team>/usage/<name>.jsonl` (swarm-only).
//!
//! With `--output-format json` (or `stream-json`), Claude Code in print mode ends its output
//! with a `result` object carrying the turn's `usage`, the per-model `modelUsage`, its
//! `session_id` and its own `total_cost_usd`. The teammate runtime hands every turn's output to
//! [`record_turn`], which appends one line per result it finds; a turn whose output holds none
//! (another agent, or text output) records nothing. Lines are appended without fsync: a record
//! for estimates, not the truth of anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{json, Value};

use super::{MemberUsage, Source, Tokens};
use crate::error::Result;
use crate::store::fsio;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::timestamp_now;

/// The `result` object at the end of a print-mode run's output: the whole output (`json`), or
/// its last line that is one (`stream-json`).
fn result_of(output: &str) -> Option<Value> {
    let is_result = |v: &Value| v["type"] == "result" && v.get("usage").is_some();
    if let Ok(v) = serde_json::from_str::<Value>(output.trim()) {
        return is_result(&v).then_some(v);
    }
    output
        .lines()
        .rev()
        .map(str::trim)
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(is_result)
}

/// Records the usage in a turn's `output`, if it holds a print-mode result; whether it did.
pub(crate) fn record_turn(
    store: &Store,
    team: &TeamName,
    name: &AgentName,
    output: &str,
) -> Result<bool> {
    let Some(result) = result_of(output) else {
        return Ok(false);
    };
    let path = store.turn_usage_path(team, name);
    if let Some(dir) = path.parent() {
        fsio::ensure_dir(dir)?;
    }
    let line = json!({
        "timestamp": timestamp_now(),
        "sessionId": result["session_id"],
        "usage": result["usage"],
        "modelUsage": result["modelUsage"],
        "totalCostUsd": result["total_cost_usd"],
    });
    let mut bytes = line.to_string().into_bytes();
    bytes.push(b'\n');
    fsio::append_unsynced(&path, &bytes)?;
    Ok(true)
}

/// What the recorded turns of one member add up to; `None` when it has none.
pub(super) fn read(path: &Path) -> Result<Option<MemberUsage>> {
    let Some(bytes) = fsio::read_file(path)? else {
        return Ok(None);
    };
    let mut by_model: BTreeMap<String, Tokens> = BTreeMap::new();
    let mut sessions = BTreeSet::new();
    let (mut reported, mut any_reported, mut turns) = (0.0, false, 0);
    for line in bytes.split(|b| *b == b'\n') {
        let Ok(turn) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        turns += 1;
        sessions.extend(turn["sessionId"].as_str().map(str::to_string));
        if let Some(cost) = turn["totalCostUsd"].as_f64() {
            reported += cost;
            any_reported = true;
        }
        match turn["modelUsage"].as_object().filter(|m| !m.is_empty()) {
            Some(models) => {
                for (model, u) in models {
                    let n = |k: &str| u[k].as_u64().unwrap_or(0);
                    by_model.entry(model.clone()).or_default().add(&Tokens {
                        input: n("inputTokens"),
                        output: n("outputTokens"),
                        cache_creation: n("cacheCreationInputTokens"),
                        cache_creation_1h: 0,
                        cache_read: n("cacheReadInputTokens"),
                    });
                }
            }
            None => {
                let tokens: Tokens =
                    serde_json::from_value(turn["usage"].clone()).unwrap_or_default();
                by_model
                    .entry("unknown model".into())
                    .or_default()
                    .add(&tokens);
            }
        }
    }
    if turns == 0 {
        return Ok(None);
    }
    Ok(Some(MemberUsage {
        source: Source::TurnResults,
        by_model,
        sessions,
        reported_cost: any_reported.then_some(reported),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_result_is_found_in_json_and_stream_json_output_and_nothing_else() {
        let result = r#"{"type":"result","subtype":"success","result":"done","session_id":"s1","total_cost_usd":0.5,"usage":{"input_tokens":3,"output_tokens":4},"modelUsage":{"claude-sonnet-4-5":{"inputTokens":3,"outputTokens":4,"cacheReadInputTokens":5,"cacheCreationInputTokens":6}}}"#;
        assert!(result_of(result).is_some());
        let stream = format!("{{\"type\":\"system\"}}\n{{\"type\":\"assistant\"}}\n{result}\n");
        assert!(result_of(&stream).is_some());
        assert!(result_of("all done, no JSON here").is_none());
        assert!(result_of(r#"{"type":"assistant","usage":{}}"#).is_none());

        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let name: AgentName = "coder".parse().unwrap();
        assert!(record_turn(&store, &team, &name, result).unwrap());
        assert!(record_turn(&store, &team, &name, &stream).unwrap());
        assert!(!record_turn(&store, &team, &name, "text").unwrap());
        let usage = read(&store.turn_usage_path(&team, &name)).unwrap().unwrap();
        let t = usage.by_model["claude-sonnet-4-5"];
        assert_eq!(
            (t.input, t.output, t.cache_read, t.cache_creation),
            (6, 8, 10, 12)
        );
        assert_eq!(usage.reported_cost, Some(1.0));
        assert_eq!(usage.sessions.into_iter().collect::<Vec<_>>(), ["s1"]);
    }
}
